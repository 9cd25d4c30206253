#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 2400
# description: make bench: perftest (-R) on xiw, siw and rxe side by side in one VM, the devices taking turns in XIW_BENCH_ROUNDS rounds (default 3; each cell the median) (XIW_BENCH_ITERS iterations, default 2000; the FetchAdd rate XIW_BENCH_RATE_ITERS, default 50 times that), plus raw TCP (iperf3, and a busy-polled ping-pong, xiw_tcp_pingpong, for the latency floor); prints design brief section 5's table with ratios
. "$(dirname "${BASH_SOURCE[0]}")/../../selftests/lib.sh"
. "$XIW_SELFTESTS/perftest_lib.sh"

need_cmd ib_write_bw ib_read_bw ib_send_bw ib_write_lat ib_send_lat \
	ib_read_lat ib_atomic_bw ib_atomic_lat ip ss
N=${XIW_BENCH_ITERS:-2000}
# the FetchAdd rate row: 2000 FetchAdds last 10-30 ms, mostly the ramp-up
# of the pipeline (the first doorbells, the first work items), not a rate
NR=${XIW_BENCH_RATE_ITERS:-$((N * 50))}
. "$XIW_ROOT/tools/bench/bench_devs.sh"

# rounds: every device runs every row once per round, the devices taking
# turns, and a cell is the median of its rounds, so that a drift of the
# host (seen: a device's latency doubling from one run to the next) moves
# every column alike instead of one
R=${XIW_BENCH_ROUNDS:-3}

# cell DEV KEY TOOL ARGS...: append the figure of one perftest run, or
# "n/a", to val[DEV,KEY]
declare -A val runs
cell() {
	local dev=$1 key=$2 col r v
	shift 2
	case $1 in
	*_lat) col=5 ;;		# t_typical
	ib_atomic_bw) col=5 ;;	# MsgRate [Mpps]
	*) col=4 ;;		# BW average [MB/s]
	esac
	if r=$(perftest_local "$dev" "${addr[$dev]}" "$@" 2>perf.err); then
		v=$(awk -v c=$col '{ print $c }' <<<"$r")
	else
		v=n/a
		[ -z "$r" ] || sed "s/^/#   /" <<<"$r"
		sed 's/^/#   /' perf.err |
			{ grep -v "^#   #   \( [A-Z]\|---\|\*\)" || true; } |
			tail -25
	fi
	runs[$dev,$key]="${runs[$dev,$key]:-}${runs[$dev,$key]:+ }$v"
	log "$dev $key: $v"
	# perftest_local ran in a subshell: its port count is lost here, and
	# a failed run may have left a server behind on one of those ports
	PERFTEST_PORT=$((PERFTEST_PORT + 8))
	pkill -f "^$1 .*-p [0-9]" 2>/dev/null || true
}

rows=(write_bw read_bw send_bw write_lat send_lat read_lat atomic_rate
      atomic_lat)
declare -A what=(
	[write_bw]="write BW, 64 KiB, MB/s" [read_bw]="read BW, 64 KiB, MB/s"
	[send_bw]="send BW, 64 KiB, MB/s"
	[write_lat]="write latency, 8 B, typical us"
	[send_lat]="send latency, 8 B, typical us"
	[read_lat]="read latency, 8 B, typical us"
	[atomic_rate]="atomic rate (FetchAdd), Mpps"
	[atomic_lat]="atomic latency, typical us")
for ((round = 1; round <= R; round++)); do
	log "round $round of $R"
	for dev in ${XIW_BENCH_DEVS:-${devs[@]}}; do
		dev_up "$dev"
		cell "$dev" write_bw ib_write_bw -s 65536 -n "$N"
		cell "$dev" read_bw ib_read_bw -s 65536 -n "$N"
		cell "$dev" send_bw ib_send_bw -s 65536 -n "$N"
		cell "$dev" write_lat ib_write_lat -s 8 -n "$N"
		cell "$dev" send_lat ib_send_lat -s 8 -n "$N"
		cell "$dev" read_lat ib_read_lat -s 8 -n "$N"
		# siw has no atomics (atomic_cap NONE): its cells stay n/a
		if [ "$dev" != siw0 ]; then
			cell "$dev" atomic_rate ib_atomic_bw -A FETCH_AND_ADD -n "$NR"
			cell "$dev" atomic_lat ib_atomic_lat -A FETCH_AND_ADD -n "$N"
		fi
		dev_down "$dev"
	done
done
# median of the rounds that produced a figure; n/a if none did
for k in "${!runs[@]}"; do
	val[$k]=$(tr ' ' '\n' <<<"${runs[$k]}" | grep -v '^n/a$' | sort -g |
		awk '{ v[NR] = $1 } END { if (!NR) print "n/a"
			else if (NR % 2) print v[(NR + 1) / 2]
			else printf "%g\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
done

tcp=n/a
if command -v iperf3 >/dev/null; then
	iperf3 -s -B 192.0.2.1 -1 -D >/dev/null 2>&1
	sleep 1
	tcp=$(iperf3 -c 192.0.2.1 -t 5 -l 65536 -J 2>/dev/null |
	      awk -F'[:,]' '/"bits_per_second"/ { b = $2 } END { if (b) printf "%.0f", b / 8e6 }')
	[ -n "$tcp" ] || tcp=n/a
fi

# TCP's own latency over the same path: xiw_tcp_pingpong's busy-polled
# round trip of 8 B (perftest's latency tools busy-poll too), what two
# processes on plain TCP sockets take for the exchange a stack over
# kernel TCP does. Write and Send latency are one way (perftest reports
# half the round trip), Read and FetchAdd latency a whole round trip. A
# failure leaves its cells n/a (wait_listen in a subshell: its fail would
# end the table).
tcp_rtt=n/a
pp=$(need_prog xiw_tcp_pingpong)
"$pp" -s 192.0.2.1 7790 &
pps=$!
if (wait_listen 7790 10 "$pps") &&
	r=$(run_timeout 120 "$pp" -c 192.0.2.1 7790 -n "$N"); then
	log "TCP ping-pong: $r"
	tcp_rtt=$(sed -n 's/.* typical=\([0-9.]*\) .*/\1/p' <<<"$r")
fi
kill_bg "$pps"
wait "$pps" 2>/dev/null || true
[ -n "$tcp_rtt" ] || tcp_rtt=n/a
tcp_half=$(awk -v r="$tcp_rtt" 'BEGIN { if (r + 0 > 0) printf "%.2f", r / 2; else print "n/a" }')

# ratio A B: A/B to two decimals, or "-"
ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN {
		if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "-" }'
}
{
	echo "| test | TCP | xiw | siw | rxe | xiw/siw | xiw/TCP | xiw/rxe | goal | goal/TCP |"
	echo "|---|---|---|---|---|---|---|---|---|---|"
	for k in "${rows[@]}"; do
		x=${val[xiw0,$k]:-n/a} s=${val[siw0,$k]:-n/a} r=${val[rxe0,$k]:-n/a}
		# t: TCP's figure; gref x gf: the goal as a figure (latency
		# rows), set beside TCP's
		goal= t=- gref= gf=
		case $k in
		*_bw) goal="xiw/siw >= 1.10, xiw/TCP >= 0.97" t=$tcp ;;
		write_lat|send_lat)
			goal="xiw/siw <= 0.80" t=$tcp_half gref=$s gf=0.8 ;;
		read_lat) goal="xiw/siw <= 0.50" t=$tcp_rtt gref=$s gf=0.5 ;;
		atomic_rate) goal="xiw/rxe >= 10" ;;
		atomic_lat) goal="xiw/rxe <= 0.50" t=$tcp_rtt gref=$r gf=0.5 ;;
		esac
		g=-
		[ -z "$gf" ] || g=$(awk -v f="$gf" -v a="$gref" -v b="$t" 'BEGIN {
			if (a + 0 > 0 && b + 0 > 0) printf "%.2f", f * a / b; else print "-" }')
		echo "| ${what[$k]} | $t | $x | $s | $r | $(ratio "$x" "$s") |" \
		     "$([ "$t" != - ] && ratio "$x" "$t" || echo -) |" \
		     "$(ratio "$x" "$r") | $goal | $g |"
	done
	echo
	echo "TCP: iperf3 (64 KiB writes) for bandwidth; for latency xiw_tcp_pingpong's"
	echo "busy-polled 8-byte round trip (Read, FetchAdd) or half of it (Write, Send,"
	echo "which perftest reports one way). goal/TCP: the latency the goal asks for"
	echo "over that of two processes doing the same exchange on TCP sockets; below"
	echo "1.00 a stack on kernel TCP must beat plain TCP sockets at it."
	echo "Each cell is the median of $R rounds, the devices taking turns in each"
	echo "round (XIW_BENCH_ROUNDS); every run, in order:"
	echo
	for k in "${rows[@]}"; do
		for dev in xiw0 siw0 rxe0; do
			[ -z "${runs[$dev,$k]:-}" ] ||
				echo "- ${what[$k]}, $dev: ${runs[$dev,$k]}"
		done
	done
} | tee table.md | sed 's/^/BENCH /'
cp table.md "$XIW_TEST_OUT/bench-table.md" 2>/dev/null || true
