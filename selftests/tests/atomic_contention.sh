#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 150
# description: RFC 7306 atomics under contention, with bursts answered from the other CPU (resp_handoff_min=2) (2 processes x 2 QPs + a local CPU thread: exact FetchAdd counter and CmpSwap spinlock; one process keeps 48 FetchAdds posted on ORD 2, so WRs wait for ORD and must complete in order), Write with Immediate ordering, section 8 errors; perftest ib_atomic_bw/lat -R FetchAdd and CmpSwap
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$XIW_SELFTESTS/perftest_lib.sh"

need_cmd ib_atomic_bw ib_atomic_lat ip ss dmesg
A=$(need_prog xiw_atomic)
xiw_loopback 192.0.2.1

PROCS=2 THREADS=2 ITERS=${XIW_ATOMIC_ITERS:-200} LOCKS=${XIW_ATOMIC_LOCKS:-25} IMM=32
# Responses of RX passes with two or more requests come from the TX work
# on the other CPU, those of a lone request from RX itself: the contention
# checks below run through both paths (xiw_sched_answer())
hand=/sys/module/xiw/parameters/resp_handoff_min
defer sh -c "echo $(cat $hand) >$hand"
echo 2 >"$hand"
hw=/sys/class/infiniband/xiw0/ports/1/hw_counters
conns=$((PROCS * THREADS))
dmesg_from=$(dmesg | wc -l)

# Server (with its local CPU thread), the section 8 error client and the
# worker clients all at once: the error connections go down while the
# workers' QPs run on.
t0=$(now_us)
"$A" server 192.0.2.1 7480 --conns $conns --errconns 2 --imm $IMM \
	--expect-a $((conns * ITERS)) --expect-b $((conns * LOCKS)) \
	--local-min 20 --timeout 80 --dump srv.orig >srv.log 2>&1 &
srv=$!
wait_for 10 grep -q listening srv.log || fail "no listener: $(cat srv.log)"
run_timeout 60 "$A" errors 192.0.2.1 7480 >err.log 2>&1 &
errc=$!
pids=()
for p in $(seq $PROCS); do
	# the last process keeps 48 FetchAdds posted on an ORD of 2: the WRs
	# beyond ORD wait in TX and each Response must kick it again
	win=()
	[ "$p" = "$PROCS" ] && win=(--ord 2 --window 48)
	run_timeout 80 "$A" client 192.0.2.1 7480 --threads $THREADS \
		--iters "$ITERS" --locks "$LOCKS" --imm $IMM "${win[@]}" \
		--dump "cli$p.orig" >"cli$p.log" 2>&1 &
	pids+=($!)
done
rc=0
for p in "${pids[@]}"; do
	wait "$p" || rc=$?
done
erc=0
wait "$errc" || erc=$?
src=0
run_timeout 90 tail --pid=$srv -f /dev/null || true
wait $srv || src=$?
t1=$(now_us)
grep -h -v '^ok ' srv.log err.log cli*.log | sed 's/^/# /' >&2 || true
[ $rc = 0 ] || fail "client: $(grep -h -m1 FAIL cli*.log)"
[ $erc = 0 ] || fail "errors: $(grep -m1 FAIL err.log)"
[ $src = 0 ] || fail "server: $(grep -m1 FAIL srv.log)"

# every check ran: per worker 5; server 6, 2 per worker, 1 per error case
n=$(cat cli*.log | grep -c '^ok ')
expect_eq "$n" $((conns * 5)) "client checks passed"
n=$(grep -c '^ok ' err.log)
expect_eq "$n" 16 "error-case checks passed"
n=$(grep -c '^ok ' srv.log)
expect_eq "$n" $((6 + 2 * conns + 2)) "server checks passed"

# The FetchAdd originals of all QPs and of the local CPU are exactly
# 0 .. A-1, each once: no two FetchAdds saw the same value, none was lost.
final_a=$(sed -n 's/^ok counter A = \([0-9]*\) .*/\1/p' srv.log)
[ -n "$final_a" ] || fail "no final A"
sort -n cli*.orig srv.orig >all.orig
expect_eq "$(wc -l <all.orig)" "$final_a" "FetchAdd originals"
awk 'NR - 1 != $1 { print "gap/duplicate at line " NR ": " $1; exit 1 }' \
	all.orig || fail "FetchAdd originals are not 0..$((final_a - 1))"

# Section 8 Terminates: misaligned target = RDMAP Remote Operation Error,
# "catastrophic error, localized to RDMAP stream" (layer 0 type 2 code 7);
# no remote-atomic right = RDMAP Remote Protection Error, access rights
# violation (layer 0 type 1 code 2). Sent by the responder, received by
# the requester.
msgs=$(dmesg | tail -n +"$((dmesg_from + 1))")
expect_match "$msgs" 'QP[0-9]+: Terminate layer 0 type 2 code 0x7' "misaligned Terminate sent"
expect_match "$msgs" 'QP[0-9]+: Terminate received: layer 0 type 2 code 0x7' "misaligned Terminate received"
expect_match "$msgs" 'QP[0-9]+: Terminate layer 0 type 1 code 0x2' "protection Terminate sent"
expect_match "$msgs" 'QP[0-9]+: Terminate received: layer 0 type 1 code 0x2' "protection Terminate received"
n=$(echo "$msgs" | grep -c 'Terminate layer' || true)
expect_eq "$n" 2 "Terminates sent (workers unaffected)"

# the local CPU thread really competed with the remote lock holders
spins=$(sed -n 's/.*local lock spins \([0-9]*\)).*/\1/p' srv.log)
[ "${spins:-0}" -gt 0 ] || fail "the local thread never met a remote lock holder"

grep -h -E 'us each|per critical|counter' cli1.log srv.log | sed 's/^ok /# /'
log "stress: $(((t1 - t0) / 1000)) ms"
log "stress: bursts answered from the other CPU $(cat "$hw/resp_handoffs"), responses RX sent itself $(cat "$hw/tx_fpdus_from_rx")"

# perftest: FetchAdd and CmpSwap rate and latency through rdma_cm.
pt() {
	local r
	r=$(perftest_local xiw0 192.0.2.1 "$@")
	log "$*: $r"
}
for op in FETCH_AND_ADD CMP_AND_SWAP; do
	pt ib_atomic_bw -A $op -n 500
	pt ib_atomic_lat -A $op -n 300
done
# ib_atomic_bw keeps 128 FetchAdds in flight: its bursts must have been
# answered from the other CPU (both vCPUs online)
ho=$(cat "$hw/resp_handoffs")
[ "$(nproc)" -lt 2 ] || [ "$ho" -gt 0 ] ||
	fail "no burst of requests was answered from the other CPU"
log "bursts answered from the other CPU: $ho, responses RX sent itself: $(cat "$hw/tx_fpdus_from_rx")"
