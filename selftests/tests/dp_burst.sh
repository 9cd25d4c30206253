#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 240
# description: bursts of small mixed WRs (Write, Read of an earlier Write, Send, FetchAdd, CmpSwap; a third signaled) posted one by one without polling (xiw_burst): signaled completions exactly in posting order with their opcodes and lengths, atomics executed once and in order, Reads see the burst's Writes, Sends received in order, memory as written; on ORD 4, 1 and 16, on an SQ of 8 (WQEs wait in the ring for completion slots), with the burst doorbell and with plain doorbells (XIW_NO_BATCH_DOORBELL); the burst runs must really batch (more FPDUs than sendmsg calls, fewer doorbells than WRs)
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

B=$(need_prog xiw_burst)
need_cmd rdma
xiw_loopback

# burst NAME ARGS...: one xiw_burst run, which must pass every check
burst() {
	local name=$1 rc=0
	shift
	run_timeout 150 "$B" 192.0.2.1 7490 "$@" >"$name.log" 2>&1 || rc=$?
	grep -v '^ok ' "$name.log" | sed "s/^/# $name: /"
	[ $rc = 0 ] || fail "$name: $(grep -m1 -E '^FAIL|^#|xiw_burst' "$name.log" ||
		tail -n1 "$name.log")"
	expect_eq "$(grep -c '^ok ' "$name.log")" 2 "$name: checks passed"
}

f0=$(xiw_counter tx_fpdus) s0=$(xiw_counter tx_sendmsg_calls) d0=$(xiw_counter doorbells)
burst ord4 --ord 4 --rounds 40 --burst 100 --seed 1
f1=$(xiw_counter tx_fpdus) s1=$(xiw_counter tx_sendmsg_calls) d1=$(xiw_counter doorbells)
fpdus=$((f1 - f0)) calls=$((s1 - s0)) bells=$((d1 - d0))
log "ord4: $fpdus FPDUs, $calls sendmsg calls, $bells doorbells for 4000 WRs"
# Unbatched, every FPDU costs at least one sendmsg call of its own.
[ $((fpdus * 10)) -ge $((calls * 13)) ] ||
	fail "no batching: $fpdus FPDUs in $calls sendmsg calls"
# The burst doorbell leaves XIW_SQ_KERNEL_ACTIVE set: most posts ring none.
[ "$bells" -lt 2000 ] || fail "$bells doorbells for 4000 WRs"

burst ord1 --ord 1 --rounds 15 --burst 120 --seed 2
burst ord16 --ord 16 --rounds 15 --burst 120 --seed 3
# An SQ of 8 under bursts of 120: the kernel takes a WQE only when a
# completion slot is free, so WQEs wait in the ring, and the completion
# that frees a slot must wake TX (XIW_DP_CMPL_WAIT)
burst depth8 --ord 16 --depth 8 --rounds 15 --burst 120 --seed 5
XIW_NO_BATCH_DOORBELL=1 burst plain --ord 4 --rounds 15 --burst 100 --seed 4
expect_eq "$(xiw_counter terminates_sent)" 0 "no Terminate"
