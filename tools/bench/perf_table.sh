#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 2400
# description: make bench: perftest (-R) on xiw, siw and rxe side by side in one VM and the TCP floors on the same path (xiw_tcp_pingpong: busy-polled 8-byte round trip, pipelined echo of FetchAdd-sized FPDUs, busy-polled 64 KiB stream; iperf3), devices and floors taking turns in XIW_BENCH_ROUNDS rounds (default 3; each cell the median) (XIW_BENCH_ITERS iterations, default 2000; the FetchAdd rate and the echo XIW_BENCH_RATE_ITERS, default 50 times that); prints the figures, the floors and the goals with their ratios against the floors of the same run (bench-table.md, bench-goals.md)
. "$(dirname "${BASH_SOURCE[0]}")/../../selftests/lib.sh"
. "$XIW_ROOT/tools/bench/bench_lib.sh"
. "$XIW_SELFTESTS/perftest_lib.sh"

need_cmd ib_write_bw ib_read_bw ib_send_bw ib_write_lat ib_send_lat \
	ib_read_lat ib_atomic_bw ib_atomic_lat ip ss
need_prog xiw_tcp_pingpong >/dev/null
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
# The TCP floors, on the path the devices use (192.0.2.1 on d0, through
# lo), by two processes on plain TCP sockets (xiw_tcp_pingpong):
#   tcp_rtt     busy-polled 8-byte ping-pong, the median round trip (us):
#               the floor under Read and FetchAdd latency (perftest reports
#               a round trip) and, halved, under Write and Send latency
#               (perftest reports half the round trip)
#   tcp_echo    pipelined echo, requests of a FetchAdd request FPDU's wire
#               size, answers of an Atomic Response's, as many outstanding
#               as ib_atomic_bw keeps (echo_window), batched and busy-polled
#               on both sides (Mpps): the floor under the FetchAdd rate
#   tcp_stream  busy-polled stream of 64 KiB non-blocking writes, as many
#               as the bandwidth rows' iterations (MB/s, MiB/s as
#               perftest's): the floor under the 64 KiB bandwidth rows
#   iperf3      iperf3's 64 KiB writes for 5 s (MB/s, converted to MiB/s)
floors=(tcp_rtt tcp_echo tcp_stream iperf3)
what+=(
	[tcp_rtt]="TCP round trip, 8 B, busy-polled, typical us"
	[tcp_echo]="TCP pipelined echo, FetchAdd-sized, Mpps"
	[tcp_stream]="TCP stream, 64 KiB writes, busy-polled, MB/s"
	[iperf3]="iperf3, 64 KiB writes, MB/s")
# ib_atomic_bw's window on xiw0: the lesser of its TX depth and its
# outstanding reads (the QP's ORD: max_qp_rd_atom, which perftest asks
# for and xiw grants), read from its header after xiw0's rate run; 128
# (both of them on xiw) until then
echo_window=128
FLOOR_PORT=7790
# min_pos A B: the lesser of two positive numbers, 0 if either is not
min_pos() { awk -v a="$1" -v b="$2" 'BEGIN { print (a > 0 && b > 0) ? (a < b ? a : b) : 0 }'; }

# floor KEY ARGS...: one xiw_tcp_pingpong client run with ARGS against a
# fresh server; its figure, or "n/a", appended to runs[tcp,KEY]
floor() {
	local key=$1 r v=
	shift
	FLOOR_PORT=$((FLOOR_PORT + 1))
	if r=$(bench_pingpong "$FLOOR_PORT" 300 "$@"); then
		v=$(sed -n 's/.* \(typical\|rate\)=\([0-9.]*\) .*/\2/p' <<<"$r")
		log "$key: $r"
	else
		sed 's/^/#   /' floor.err floor-srv.log | tail -10
	fi
	[ -n "$v" ] || v=n/a
	runs[tcp,$key]="${runs[tcp,$key]:-}${runs[tcp,$key]:+ }$v"
}

# iperf_run: one iperf3 run, its MB/s or "n/a" appended to runs[tcp,iperf3]
iperf_run() {
	local v=n/a
	command -v iperf3 >/dev/null || {
		runs[tcp,iperf3]="${runs[tcp,iperf3]:-}${runs[tcp,iperf3]:+ }n/a"
		log "iperf3: not installed"
		return 0
	}
	iperf3 -s -B 192.0.2.1 -p 5201 -1 -D >/dev/null 2>&1
	wait_for 10 xiw_port_listening 5201 || true
	v=$(iperf3 -c 192.0.2.1 -p 5201 -t 5 -l 65536 -J 2>/dev/null |
	    awk -F'[:,]' '/"bits_per_second"/ { b = $2 } END { if (b) printf "%.0f", b / 8 / 1048576 }')
	[ -n "$v" ] || v=n/a
	log "iperf3: $v MB/s"
	runs[tcp,iperf3]="${runs[tcp,iperf3]:-}${runs[tcp,iperf3]:+ }$v"
}

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
			if [ "$dev" = xiw0 ]; then
				w=$(awk -F: '/TX depth/ { t = $2 + 0 }
					/Outstand reads/ { o = $2 + 0 }
					END { print t + 0, o + 0 }' \
					cli.log 2>/dev/null || echo 0 0)
				log "ib_atomic_bw on xiw0: TX depth ${w% *}, outstanding reads ${w#* }"
				w=$(min_pos "${w% *}" "${w#* }")
				[ "$w" = 0 ] || echo_window=$w
			fi
			cell "$dev" atomic_lat ib_atomic_lat -A FETCH_AND_ADD -n "$N"
		fi
		dev_down "$dev"
	done
	# the floors take their turn: no RDMA device exists meanwhile
	floor tcp_rtt -n "$N"
	floor tcp_echo --echo -n "$NR" -w "$echo_window"
	floor tcp_stream --stream -n "$N" -l 65536
	iperf_run
done
# median of the rounds that produced a figure; n/a if none did
for k in "${!runs[@]}"; do
	val[$k]=$(bench_median "${runs[$k]}")
done
# the floors: their best round (bench_best())
val[tcp,tcp_rtt]=$(bench_best "${runs[tcp,tcp_rtt]:-}" low)
for k in tcp_echo tcp_stream iperf3; do
	val[tcp,$k]=$(bench_best "${runs[tcp,$k]:-}" high)
done
rtt=${val[tcp,tcp_rtt]:-n/a}
half=$(awk -v r="$rtt" 'BEGIN { if (r + 0 > 0) printf "%.2f", r / 2; else print "n/a" }')
echo_rate=${val[tcp,tcp_echo]:-n/a} stream=${val[tcp,tcp_stream]:-n/a}
iperf=${val[tcp,iperf3]:-n/a}

ratio() { bench_ratio "$@"; }
# floor_of ROW: the TCP floor a row stands against
floor_of() {
	case $1 in
	*_bw) echo "$stream" ;;
	write_lat|send_lat) echo "$half" ;;
	read_lat|atomic_lat) echo "$rtt" ;;
	atomic_rate) echo "$echo_rate" ;;
	esac
}
goal() { bench_goal_row "$@"; }
{
	echo "| test | xiw | siw | rxe | TCP floor | xiw/floor | xiw/siw | xiw/rxe |"
	echo "|---|---|---|---|---|---|---|---|"
	for k in "${rows[@]}"; do
		x=${val[xiw0,$k]:-n/a} s=${val[siw0,$k]:-n/a} r=${val[rxe0,$k]:-n/a}
		f=$(floor_of "$k")
		echo "| ${what[$k]} | $x | $s | $r | $f | $(ratio "$x" "$f") |" \
		     "$(ratio "$x" "$s") | $(ratio "$x" "$r") |"
	done
	echo
	echo "| TCP floor (same VM, same path) | best round |"
	echo "|---|---|"
	for k in "${floors[@]}"; do
		echo "| ${what[$k]} | ${val[tcp,$k]:-n/a} |"
	done
	echo
	echo "TCP floor: what two processes on plain TCP sockets (xiw_tcp_pingpong),"
	echo "busy-polling as perftest does, take on the path the devices use: the"
	echo "8-byte round trip under Read and FetchAdd latency, half of it under"
	echo "Write and Send latency (perftest reports them one way); a pipelined echo"
	echo "of FetchAdd request FPDUs ($echo_window outstanding, as ib_atomic_bw keeps, answered"
	echo "with Atomic Response FPDUs, wire sizes) under the FetchAdd rate; a stream"
	echo "of 64 KiB writes under the bandwidth rows. MB/s are MiB/s (perftest's)."
	echo "Each device's cell is the median of $R rounds, the devices and the floors"
	echo "taking turns in each round (XIW_BENCH_ROUNDS); a floor is its best round"
	echo "(the lowest round trip, the highest rate): a disturbed round only makes"
	echo "TCP look slower. Every run, in order:"
	echo
	for k in "${rows[@]}"; do
		for dev in xiw0 siw0 rxe0; do
			[ -z "${runs[$dev,$k]:-}" ] ||
				echo "- ${what[$k]}, $dev: ${runs[$dev,$k]}"
		done
	done
	for k in "${floors[@]}"; do
		[ -z "${runs[tcp,$k]:-}" ] || echo "- ${what[$k]}: ${runs[tcp,$k]}"
	done
} >table.md
# the goals (Documentation/performance.md, "The goals"), each against
# the floor of this run; make bench appends the instruction budgets
# (insn_profile) to this table
xv() { echo "${val[xiw0,$1]:-n/a}"; }
{
	echo "| goal | xiw | against | ratio | result |"
	echo "|---|---|---|---|---|"
	goal "Read latency, 8 B, us: <= 1.10x the TCP round trip" "$(xv read_lat)" "$rtt" "<=" 1.10
	goal "FetchAdd latency, us: <= 1.10x the TCP round trip" "$(xv atomic_lat)" "$rtt" "<=" 1.10
	goal "Write latency, 8 B, us: <= 0.95x half the TCP round trip" "$(xv write_lat)" "$half" "<=" 0.95
	goal "Send latency, 8 B, us: <= 1.00x half the TCP round trip" "$(xv send_lat)" "$half" "<=" 1.00
	goal "FetchAdd rate, Mpps: >= 10x rxe" "$(xv atomic_rate)" "${val[rxe0,atomic_rate]:-n/a}" ">=" 10
	goal "FetchAdd rate, Mpps: >= 1.0x the pipelined TCP echo" "$(xv atomic_rate)" "$echo_rate" ">=" 1.0
	for k in write_bw read_bw send_bw; do
		t=${what[$k]%%, 64 KiB*}
		goal "${t^}, 64 KiB, MB/s: >= 1.0x the busy-polled TCP stream" "$(xv $k)" "$stream" ">=" 1.0
		goal "${t^}, 64 KiB, MB/s: >= 2x iperf3" "$(xv $k)" "$iperf" ">=" 2
	done
} >goals.md
{ cat table.md; echo; cat goals.md; } | sed 's/^/BENCH /'
cp table.md "$XIW_TEST_OUT/bench-table.md" 2>/dev/null || true
cp goals.md "$XIW_TEST_OUT/bench-goals.md" 2>/dev/null || true
