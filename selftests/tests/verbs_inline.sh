#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 180
# description: Sends with IBV_SEND_INLINE of 1 to 64 bytes (max_inline_data asked for: 64), bursts of 16 posted without polling, the source buffer overwritten the moment ibv_post_send returns, 512 from a registered buffer and 512 from unregistered memory with a bogus lkey: every message received with the bytes the buffer held at post time
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

U=$(need_prog xiw_usage)
xiw_loopback

rc=0
run_timeout 120 "$U" inline 192.0.2.1 7626 512 >u.log 2>&1 || rc=$?
sed 's/^/# /' u.log
[ "$rc" = 0 ] || fail "$(grep -m1 -E '^FAIL|^[a-z_]+: ' u.log || echo "xiw_usage exit $rc")"
expect_eq "$(grep -c '^ok ' u.log)" 5 "checks passed (every one ran)"
