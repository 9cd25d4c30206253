#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 2vm
# timeout: 150
# description: RFC 7306 atomics between two VMs: server + local CPU thread + 1 client process on a, 2 client processes and the section 8 error cases on b, all on the same words; exact FetchAdd counter and CmpSwap spinlock, Write with Immediate ordering
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
#
# The FetchAdd originals of both VMs must be exactly 0 .. A-1: each side
# checks its own for duplicates, and count, sum and sum of squares of the
# union (swapped over xiw_sync) must be those of 0 .. A-1.
# XIW_ATOMIC_ERRS=0 leaves out the error cases; XIW_ATOMIC_DIAG=1 logs the
# server's TCP queues and busy tasks every 2 s to $XIW_TEST_OUT/atomic_2vm.diag
# (for a stuck operation: are its bytes in a socket, or in xiw?).

need_cmd dmesg
A=$(need_prog xiw_atomic)
xiw_load
xiw_need_provider
xiw_link_add xiw0 "$XIW_NETDEV"
wait_port_state xiw0 PORT_ACTIVE 5

THREADS=2 ITERS=${XIW_ATOMIC_ITERS:-150} LOCKS=${XIW_ATOMIC_LOCKS:-20} IMM=32
PROCS_A=1 PROCS_B=2
conns=$(((PROCS_A + PROCS_B) * THREADS))
SRV=10.77.0.1
ERRS=${XIW_ATOMIC_ERRS:-1}	# 0: leave out the section 8 error cases
dmesg_from=$(dmesg | wc -l)

# clients P...: run P client processes towards the server, wait for them
clients() {
	local p pids=() rc=0
	for p in $(seq "$1"); do
		run_timeout 90 "$A" client $SRV 7490 --threads $THREADS \
			--iters "$ITERS" --locks "$LOCKS" --imm $IMM \
			--dump "cli$p.orig" >"cli$p.log" 2>&1 &
		pids+=($!)
	done
	for p in "${pids[@]}"; do
		wait "$p" || rc=$?
	done
	grep -h -v '^ok ' cli*.log | sed 's/^/# /' >&2 || true
	[ $rc = 0 ] || fail "client: $(grep -h -m1 FAIL cli*.log)"
	expect_eq "$(cat cli*.log | grep -c '^ok ')" $(($1 * THREADS * 5)) \
		"client checks passed"
	# this side's FetchAdd originals: no value twice
	sort -n cli*.orig >mine.orig
	expect_eq "$(uniq -d mine.orig | wc -l)" 0 "duplicate FetchAdd originals"
}

# count:sum:sum of squares of a file of numbers
moments() {
	awk '{ n++; s += $1; q += $1 * $1 } END { printf "%d:%.0f:%.0f\n", n, s, q }' "$1"
}

if [ "$XIW_ROLE" = a ]; then
	"$A" server $SRV 7490 --conns $conns --errconns $((2 * ERRS)) --imm $IMM \
		--expect-a $((conns * ITERS)) --expect-b $((conns * LOCKS)) \
		--local-min 20 --timeout 110 --dump srv.orig >srv.log 2>&1 &
	srv=$!
	wait_for 10 grep -q listening srv.log || fail "no listener: $(cat srv.log)"
	xiw_barrier listening
	if [ -n "${XIW_ATOMIC_DIAG:-}" ]; then
		# TCP queues of the server's connections every 2 s: a stuck
		# operation shows whether its bytes wait in a socket
		( while sleep 2; do
			{ date +%T; ss -tinoH state established; ss -tnoH
			  ps -eo pid,stat,pcpu,wchan:20,comm | awk '$2 ~ /R|D/ || $3 > 5'
			} >>"$XIW_TEST_OUT/atomic_2vm.diag" 2>&1; done ) &
		diag=$!
		defer eval "kill $diag 2>/dev/null || true"
	fi
	clients $PROCS_A
	src=0
	run_timeout 120 tail --pid=$srv -f /dev/null || true
	wait $srv || src=$?
	grep -v '^ok ' srv.log | sed 's/^/# /' >&2 || true
	if [ $src != 0 ]; then
		fail "server: $(grep -m1 FAIL srv.log)"
	fi
	expect_eq "$(grep -c '^ok ' srv.log)" $((6 + 2 * conns + 2 * ERRS)) \
		"server checks passed"
	grep -h -E 'counter' srv.log | sed 's/^ok /# /'
	# all FetchAdd originals of both VMs and the local CPU: 0 .. A-1
	final_a=$(sed -n 's/^ok counter A = \([0-9]*\) .*/\1/p' srv.log)
	sort -n mine.orig srv.orig >here.orig
	expect_eq "$(uniq -d here.orig | wc -l)" 0 "duplicate originals on a"
	peer=$(xiw_sync originals "$(moments here.orig)")
	IFS=: read -r n1 s1 q1 <<<"$(moments here.orig)"
	IFS=: read -r n2 s2 q2 <<<"$peer"
	n=$((n1 + n2)) s=$((s1 + s2)) q=$((q1 + q2))
	expect_eq "$n" "$final_a" "FetchAdd originals"
	expect_eq "$s" $((final_a * (final_a - 1) / 2)) "sum of the originals"
	expect_eq "$q" $(((final_a - 1) * final_a * (2 * final_a - 1) / 6)) \
		"sum of squares of the originals"
	msgs=$(dmesg | tail -n +"$((dmesg_from + 1))")
	expect_eq "$(echo "$msgs" | grep -c 'Terminate' || true)" $((2 * ERRS)) \
		"Terminates (workers unaffected)"
	if [ "$ERRS" = 1 ]; then
		expect_match "$msgs" 'QP[0-9]+: Terminate layer 0 type 2 code 0x7' "misaligned Terminate sent"
		expect_match "$msgs" 'QP[0-9]+: Terminate layer 0 type 1 code 0x2' "protection Terminate sent"
	fi
else
	xiw_barrier listening
	if [ "$ERRS" = 1 ]; then
		run_timeout 60 "$A" errors $SRV 7490 >err.log 2>&1 &
		errc=$!
	fi
	clients $PROCS_B
	if [ "$ERRS" = 1 ]; then
		erc=0
		wait "$errc" || erc=$?
		grep -v '^ok ' err.log | sed 's/^/# /' >&2 || true
		[ $erc = 0 ] || fail "errors: $(grep -m1 FAIL err.log)"
		expect_eq "$(grep -c '^ok ' err.log)" 16 "error-case checks passed"
	fi
	grep -h -E 'us each|per critical' cli1.log | sed 's/^ok /# /'
	xiw_sync originals "$(moments mine.orig)" 150 >/dev/null ||
		fail "sync originals"
	msgs=$(dmesg | tail -n +"$((dmesg_from + 1))")
	if [ "$ERRS" = 1 ]; then
		expect_match "$msgs" 'QP[0-9]+: Terminate received: layer 0 type 2 code 0x7' "misaligned Terminate received"
		expect_match "$msgs" 'QP[0-9]+: Terminate received: layer 0 type 1 code 0x2' "protection Terminate received"
	fi
fi
