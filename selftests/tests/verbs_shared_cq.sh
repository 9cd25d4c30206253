#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 180
# description: four connections whose QPs share one send CQ and one receive CQ per side, 200 Sends of varying length each way on each, up to 16 in flight per QP: every completion successful, naming the QP its wr_id belongs to (qp_num), in posting order per QP, every receive holding that QP's next message byte for byte
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

U=$(need_prog xiw_usage)
xiw_loopback

rc=0
run_timeout 120 "$U" sharedcq 192.0.2.1 7625 4 200 >u.log 2>&1 || rc=$?
sed 's/^/# /' u.log
[ "$rc" = 0 ] || fail "$(grep -m1 -E '^FAIL|^[a-z_]+: ' u.log || echo "xiw_usage exit $rc")"
expect_eq "$(grep -c '^ok ' u.log)" 5 "checks passed (every one ran)"
