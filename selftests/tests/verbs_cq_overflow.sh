#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 240
# description: a CQ too small for its completions (4 entries, 16 signaled Writes on the requester's CQ, 16 Sends on the responder's receive CQ, nobody polling): one IBV_EVENT_CQ_ERR per lost completion and no other async event, every message placed, exactly the CQ's size of the oldest completions left in order, nothing written in the ring's mapping past its last slot, the lost ones counted in the ring header, both QPs still RTS and the connection working after the drain; the requester case compared with rdma_rxe running the same program
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

U=$(need_prog xiw_usage)
xiw_loopback

# usage TAG ARGS...: one run of xiw_usage, its lines in the log; a failed
# check fails the test with that check's line
usage() {
	local tag=$1 rc=0
	shift
	run_timeout 120 "$U" "$@" >"u-$tag.log" 2>&1 || rc=$?
	sed 's/^/# /' "u-$tag.log"
	[ "$rc" = 0 ] || fail "$tag: $(grep -m1 -E '^FAIL|^[a-z_]+: ' "u-$tag.log" || echo "exit $rc")"
}

usage xiw-send overflow 192.0.2.1 7620 send
expect_eq "$(grep -c '^ok ' u-xiw-send.log)" 12 "xiw, requester CQ: checks passed"
usage xiw-recv overflow 192.0.2.1 7621 recv
expect_eq "$(grep -c '^ok ' u-xiw-recv.log)" 13 "xiw, receive CQ: checks passed"
log "xiw: CQ_ERR per lost completion, the ring untouched past its end, QPs RTS"

# the same requester program on rxe
rxe_loopback 10.77.6.1
usage rxe-send overflow 10.77.6.1 7622 send
expect_eq "$(grep -c '^ok ' u-rxe-send.log)" 8 "rxe, requester CQ: checks passed"
log "rxe: the same events, completions and QP states for the requester's CQ"
