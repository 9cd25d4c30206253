#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 240
# description: fork() beside a live connection, fork safety from the kernel (IBV_FORK_UNNEEDED, no ibv_fork_init): a child that reads the registered buffers sees the bytes of the fork, overwrites them and maps no ring, and none of its bytes reach the parent or the peer; a child that posts on the parent's QP faults (SIGSEGV) and nothing of it reaches either CQ or the peer; a child that execs true; rounds of Write, Send and Write back before, during and after each child with every completion SUCCESS and every byte checked
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

F=$(need_prog xiw_fork)
xiw_loopback

rc=0
run_timeout 180 "$F" 192.0.2.1 7631 >f.log 2>&1 || rc=$?
sed 's/^/# /' f.log
[ "$rc" = 0 ] || fail "$(grep -m1 -E '^FAIL|^[a-z_]+: ' f.log || echo "xiw_fork exit $rc")"
expect_eq "$(grep -c '^ok ' f.log)" 17 "checks passed (every one ran)"
