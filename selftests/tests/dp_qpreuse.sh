#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 240
# description: QP numbers and reuse: a QP moved to RESET while connected stays in RESET after its old connection's teardown and connects again (Write and Read checked); QP numbers are not reused at once; connects naming QPs that another thread creates and destroys are refused (EINVAL) or go out, and every destroy returns
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

LC=$(need_prog xiw_lifecycle)
xiw_loopback

# lc TAG ARGS...: one run, its lines in the log, a failure ends the test
lc() {
	local tag=$1 rc=0
	shift
	run_timeout 180 "$LC" "$@" >"lc-$tag.log" 2>&1 || rc=$?
	sed 's/^/# /' "lc-$tag.log"
	[ "$rc" = 0 ] || fail "$tag: $(grep -m1 -E '^FAIL|xiw_lifecycle|rdma|die' "lc-$tag.log")"
	expect_nomatch "$(cat "lc-$tag.log")" '^FAIL' "$tag"
}

lc reuse reuse 192.0.2.1 7481
[ "$(grep -c '^ok' lc-reuse.log)" = 7 ] || fail "reuse: not every check ran"
log "a QP reset while connected stays in RESET and connects again"

lc qpnum qpnum 192.0.2.1 7482 300
[ "$(grep -c '^ok' lc-qpnum.log)" = 2 ] || fail "qpnum: not every check ran"
log "QP numbers not reused at once; connects racing QP destroys refused or sent"
