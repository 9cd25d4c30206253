#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 180
# description: a QP whose create fails in its response copy is never found: rdma_connect and rdma_accept naming it while the copy is stalled (userfaultfd) get EINVAL, then EFAULT; creates into a PROT_NONE response raced by connects naming them and counter reads; QP numbers go on; no QP left
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

P=$(need_prog xiw_qprace)
xiw_loopback 192.0.2.1
log "KFENCE sample interval: $(cat /sys/module/kfence/parameters/sample_interval 2>/dev/null || echo off) ms"

# `rdma res show` and `rdma statistic` walk the device's QPs too (restrack,
# the counters): a reader in the background while the creates fail.
reader() {
	while :; do
		rdma res show qp >/dev/null 2>&1 || true
		rdma statistic show link xiw0/1 >/dev/null 2>&1 || true
	done
}
reader &
rpid=$!
defer kill_bg "$rpid"

rounds=${XIW_QPRACE_ROUNDS:-300}
rc=0
run_timeout 150 "$P" xiw0 192.0.2.1 7841 "$rounds" >qprace.log 2>&1 || rc=$?
kill_bg "$rpid"
wait "$rpid" 2>/dev/null || true
log "$(grep -vE '^(ok|FAIL): ' qprace.log || true)"
[ "$rc" = 0 ] || fail "xiw_qprace exit $rc: $(grep -m3 -E '^FAIL ' qprace.log | tr '\n' ' ')"
expect_nomatch "$(cat qprace.log)" '^FAIL' "xiw_qprace"
expect_match "$(cat qprace.log)" '^ok stall: rdma_connect naming QP [0-9]+ of the unfinished create: -1 Invalid argument' "connect refused"
expect_match "$(cat qprace.log)" '^ok stall: rdma_accept naming QP [0-9]+ of the unfinished create: -1 Invalid argument' "accept refused"
expect_match "$(cat qprace.log)" "^ok race: $rounds of $rounds creates with a PROT_NONE response failed with EFAULT" "EFAULT"

# Nothing left: neither a failed create nor the good ones, nor their
# rdma_cm ids.
wait_for 10 eval "[ -z \"\$(rdma res show qp 2>/dev/null | grep xiw0)\" ]" ||
	fail "QPs left: $(rdma res show qp)"
summary=$(rdma res show | grep ' xiw0: ' || true)
expect_match "$summary" 'pd 0 cq 0 qp 0 cm_id 0 mr 0 ctx 0' "resources after the creates"
log ok
