#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 3000
# description: make bench's curves: RDMA Write bandwidth and latency from 2 B to 8 MiB (perftest -a) on xiw, siw and rxe, TCP's (qperf) at the same sizes, the TCP floors at the same sizes (xiw_tcp_pingpong: busy-polled stream and half the busy-polled round trip), and every sample of 8-byte RDMA Read and FetchAdd latency (perftest -H); data files for scripts/bench_plot.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../selftests/lib.sh"
. "$XIW_ROOT/tools/bench/bench_lib.sh"
. "$XIW_SELFTESTS/perftest_lib.sh"
#
# Writes into the test's output directory:
#   sweep.dat   DEVICE FIGURE SIZE VALUE, FIGURE bw (MB/s) or lat (typical
#               us); DEVICE tcp for qperf's tcp_bw / tcp_lat, tcpfloor for
#               the floors of perf_table at every size (xiw_tcp_pingpong:
#               the busy-polled stream's MB/s, half the busy-polled round
#               trip, the floor under the one-way Write latency)
#   hist-DEVICE-read.dat, hist-DEVICE-fadd.dat   one latency sample (us)
#               per line
# A figure a tool could not produce is left out (and said in the log): the
# plots show what was measured, nothing else. XIW_SWEEP_ITERS (default
# 100) iterations per size, XIW_HIST_ITERS (default 2000) samples.

need_cmd ib_write_bw ib_write_lat ib_read_lat ib_atomic_lat qperf ip ss
need_prog xiw_tcp_pingpong >/dev/null
N=${XIW_SWEEP_ITERS:-100}
H=${XIW_HIST_ITERS:-2000}
. "$XIW_ROOT/tools/bench/bench_devs.sh"
out=${XIW_TEST_OUT:-.}
: >"$out/sweep.dat"

# sweep DEV TOOL FIGURE COLUMN: every row of TOOL -a into sweep.dat
sweep() {
	local dev=$1 t=$2 fig=$3 col=$4 rows
	if rows=$(perftest_local_rows "$dev" "${addr[$dev]}" "$t" -a -n "$N" \
		  2>perf.err && echo "$PERFTEST_ROWS"); then
		awk -v d="$dev" -v f="$fig" -v c="$col" \
			'{ print d, f, $1, $c }' <<<"$rows" >>"$out/sweep.dat"
		log "$dev $t -a: $(wc -l <<<"$rows") sizes"
	else
		log "$dev $t -a: no report ($(grep -m1 FAIL perf.err || true))"
	fi
	PERFTEST_PORT=$((PERFTEST_PORT + 8))
	pkill -f "^$t .*-p [0-9]" 2>/dev/null || true
}

# hist DEV NAME TOOL ARGS...: every latency sample of one run (-H)
hist() {
	local dev=$1 name=$2 t=$3
	shift 3
	if (perftest_local "$dev" "${addr[$dev]}" "$t" -H -n "$H" "$@" \
	    >/dev/null 2>perf.err); then
		# perftest -H: "#, usec" then "N, sample" per iteration
		awk -F', *' '$1 ~ /^[0-9]+$/ && NF == 2 && $2 + 0 > 0 { print $2 }' \
			cli.log >"$out/hist-$dev-$name.dat"
		log "$dev $name: $(wc -l <"$out/hist-$dev-$name.dat") samples"
	else
		log "$dev $name: no samples ($(grep -m1 FAIL perf.err || true))"
	fi
	PERFTEST_PORT=$((PERFTEST_PORT + 8))
	pkill -f "^$t .*-p [0-9]" 2>/dev/null || true
}

for dev in ${XIW_BENCH_DEVS:-${devs[@]}}; do
	dev_up "$dev"
	sweep "$dev" ib_write_bw bw 4
	sweep "$dev" ib_write_lat lat 5
	hist "$dev" read ib_read_lat -s 8
	[ "$dev" = siw0 ] || hist "$dev" fadd ib_atomic_lat -A FETCH_AND_ADD
	dev_down "$dev"
done

# TCP over the same path, the sizes perftest -a uses (qperf's figures, in
# its own units, converted to MB/s and us)
qperf >/dev/null 2>&1 &
qpid=$!
defer kill "$qpid"
wait_listen 19765 10 "$qpid"
for ((s = 2; s <= 8388608; s *= 2)); do
	for fig in bw lat; do
		qperf -t 2 -m "$s" 192.0.2.1 "tcp_$fig" 2>/dev/null | awk -v s="$s" -v f="$fig" '
			$1 == "bw" || $1 == "latency" {
				v = $3; u = $4
				if (u ~ /^GB/) v *= 1000; else if (u ~ /^KB/) v /= 1000
				else if (u ~ /^bytes/) v /= 1e6
				if (u == "ms") v *= 1000; else if (u == "sec") v *= 1e6
				else if (u == "ns") v /= 1000
				printf "tcp %s %d %.3f\n", f, s, v }' >>"$out/sweep.dat"
	done
done
log "tcp: $(grep -c '^tcp ' "$out/sweep.dat") figures"

# the floors at every size (xiw_tcp_pingpong, busy-polled as perf_table's):
# a stream of 64 MiB in writes of SIZE (at least 8 writes, at most 20000)
# and a ping-pong of SIZE (N rounds, fewer above 1 MiB: at least 10 and
# 32 MiB), after as many warm-up rounds, at most 10
fport=7890
# floor_at FIGURE SIZE ARGS...: one client run; "tcpfloor FIGURE SIZE V"
floor_at() {
	local fig=$1 s=$2 r v=
	shift 2
	fport=$((fport + 1))
	if r=$(bench_pingpong "$fport" 120 "$@"); then
		v=$(sed -n 's/.* \(half\|rate\)=\([0-9.]*\) .*/\2/p' <<<"$r")
	fi
	if [ -n "$v" ]; then
		echo "tcpfloor $fig $s $v" >>"$out/sweep.dat"
	else
		log "tcpfloor $fig $s: no figure ($(head -c 200 floor.err 2>/dev/null))"
	fi
}
for ((s = 2; s <= 8388608; s *= 2)); do
	w=$((67108864 / s))
	((w >= 8)) || w=8
	((w <= 20000)) || w=20000
	floor_at bw "$s" --stream -n "$w" -l "$s"
	n=$((33554432 / s))
	((n >= 10)) || n=10
	((n <= N)) || n=$N
	floor_at lat "$s" -n "$n" -l "$s" --warmup "$((n < 10 ? n : 10))"
done
log "tcpfloor: $(grep -c '^tcpfloor ' "$out/sweep.dat") figures"
for d in xiw0 tcp tcpfloor; do
	grep -q "^$d bw " "$out/sweep.dat" || fail "no $d bandwidth curve"
done
log "data: $(wc -l <"$out/sweep.dat") figures in sweep.dat"
