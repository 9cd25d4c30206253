#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 200
# description: async events users wait for: an SRQ limit armed by ibv_modify_srq raises one IBV_EVENT_SRQ_LIMIT_REACHED naming the SRQ when the posted receives drop below it, none before, and disarms (ibv_query_srq 0, no second event); a QP on the SRQ moved to ERROR raises one IBV_EVENT_QP_LAST_WQE_REACHED naming it and the SRQ keeps its receives; the netdev going down raises IBV_EVENT_PORT_ERR and up IBV_EVENT_PORT_ACTIVE with ibv_query_port following; data of every receive checked; the same program on rdma_rxe
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

U=$(need_prog xiw_usage)
xiw_loopback

# usage TAG CASE ARGS...: xiw_usage CASE ARGS..., every check passed and
# WANT of them ran
usage() {
	local tag=$1 want=$2 rc=0
	shift 2
	run_timeout 60 "$U" "$@" >"u-$tag.log" 2>&1 || rc=$?
	sed 's/^/# /' "u-$tag.log"
	[ "$rc" = 0 ] || fail "$tag: $(grep -m1 -E '^FAIL|^[a-z_]+: ' "u-$tag.log" || echo "xiw_usage exit $rc")"
	expect_eq "$(grep -c '^ok ' "u-$tag.log")" "$want" "$tag: checks passed (every one ran)"
}

usage xiw-events 15 events 192.0.2.1 7640
usage xiw-port 5 port 192.0.2.1 7641 d0
wait_port_state xiw0 PORT_ACTIVE 5

rxe_loopback 10.77.6.1
usage rxe-events 15 events 10.77.6.1 7642
usage rxe-port 5 port 10.77.6.1 7643 d2
log "rxe: the same events"
