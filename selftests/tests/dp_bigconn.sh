#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 240
# description: one connection that carries more than 4 GiB, so that TCP's 32-bit sequence numbers wrap under it: xiw_usage bigconn writes 4 GiB + 64 MiB in rounds of 16 MiB (RDMA Writes of up to 1 MiB from a fixed pattern, each round at its own rotation into the peer's 16 MiB, a Read behind every 24 Writes), and after each round compares every word with where the rotation puts it
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

U=$(need_prog xiw_usage)
xiw_loopback

rc=0
run_timeout 220 "$U" bigconn 192.0.2.1 7650 >u.log 2>&1 || rc=$?
sed 's/^/# /' u.log
[ "$rc" = 0 ] || fail "$(grep -m1 -E '^FAIL|^[a-z_]+: ' u.log || echo "xiw_usage exit $rc")"
expect_eq "$(grep -c '^ok ' u.log)" 2 "checks passed (every one ran)"
