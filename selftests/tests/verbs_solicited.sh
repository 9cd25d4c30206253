#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 150
# description: solicited-only notification: a receive CQ with a completion channel armed by ibv_req_notify_cq(cq, 1) is woken by a Send with IBV_SEND_SOLICITED and not by unsolicited ones (channel fd polled), one event per arming; armed for any completion an unsolicited Send wakes it; armed solicited-only, receives flushed with IBV_WC_WR_FLUSH_ERR (the QP moved to ERROR) wake it, as ibv_req_notify_cq(3) counts unsuccessful completions as solicited; data of every receive checked
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

U=$(need_prog xiw_usage)
xiw_loopback

rc=0
run_timeout 90 "$U" solicited 192.0.2.1 7627 >u.log 2>&1 || rc=$?
sed 's/^/# /' u.log
[ "$rc" = 0 ] || fail "$(grep -m1 -E '^FAIL|^[a-z_]+: ' u.log || echo "xiw_usage exit $rc")"
expect_eq "$(grep -c '^ok ' u.log)" 14 "checks passed (every one ran)"
