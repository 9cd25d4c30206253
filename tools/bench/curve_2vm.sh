#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 2vm
# timeout: 5400
# description: make bench's two-host curves: single-QP RDMA Write bandwidth from 4 KiB to 4 MiB per message on xiw and siw against TCP with writes of the same size between the same VMs (iperf3, and xiw_tcp_pingpong's busy-polled stream), then Write, Read and Send at 64 KiB and 1 MiB with netem (delay 1ms loss 0.1%) on each VM's egress, against the same TCP runs on that link; devices and TCP taking turns in XIW_CURVE_ROUNDS rounds (default 3; medians and spread), goals met or missed; curve-2vm-table.md, curve-2vm.dat
. "$(dirname "${BASH_SOURCE[0]}")/../../selftests/lib.sh"
. "$XIW_ROOT/tools/bench/bench_lib.sh"
. "$XIW_SELFTESTS/perftest_lib.sh"
#
# Servers on b, clients on a, over the bench's virtual link (one vCPU per
# VM). Two parts (XIW_CURVE_PARTS, default "curve lossy"):
# - curve: ib_write_bw at each size of XIW_CURVE_SIZES (default 4 KiB to
#   4 MiB by factors of 4) on xiw0 and siw0 (XIW_CURVE_DEVS), about
#   XIW_CURVE_MIB (default 64) MiB per run (20 to 8000 messages), and TCP
#   with writes of each size: iperf3 (-l SIZE, 5 s) and the busy-polled
#   stream (xiw_tcp_pingpong --stream, as many bytes as the RDMA runs:
#   perftest busy-polls its CQ, so this is TCP with the same CPU habits).
# - lossy: netem "delay 1ms loss 0.1%" (XIW_CURVE_NETEM) on the link's
#   egress of both VMs, so both directions are delayed and lose; Write,
#   Read and Send at 64 KiB and 1 MiB on each device, iperf3 and the
#   stream at 64 KiB and 1 MiB.
# In every round the devices and TCP take turns, the first rotating; each
# cell is the median of its rounds with the lowest and highest, every run
# is listed under the tables. Goals (issue "Bulk data at TCP's speed"):
# Write and Read >= 1.0x iperf3 and >= 2x siw at 64 KiB and 1 MiB, on
# the clean link and on the lossy one. curve-2vm.dat holds one line per
# curve point ("NAME SIZE MEDIAN LOW HIGH", MB/s) for plotting.

need_cmd ib_write_bw ib_read_bw ib_send_bw iperf3 tc
need_prog xiw_tcp_pingpong >/dev/null
R=${XIW_CURVE_ROUNDS:-3}
MIB=${XIW_CURVE_MIB:-64}
read -ra sizes <<<"${XIW_CURVE_SIZES:-4096 16384 65536 262144 1048576 4194304}"
parts=" ${XIW_CURVE_PARTS:-curve lossy} "
NETEM=${XIW_CURVE_NETEM:-delay 1ms loss 0.1%}
declare -A runs

bench_2vm_devs siw
bench_2vm_keep_devs "${XIW_CURVE_DEVS:-xiw0 siw0}"
log "devices on both VMs: ${devs[*]}"

# iters SIZE: messages of SIZE for about MIB MiB, 20 to 8000
iters() {
	local n=$((MIB * 1048576 / $1))
	[ $n -ge 20 ] || n=20
	[ $n -le 8000 ] || n=8000
	echo $n
}

# note NAME KEY V: a run's figure (or n/a) to runs[NAME,KEY], on a
note() {
	[ "$XIW_ROLE" = a ] || return 0
	runs[$1,$2]="${runs[$1,$2]:-}${runs[$1,$2]:+ }$3"
	log "$part round $round, $1 $2: $3"
}

# cell DEV KEY TOOL ARGS...: one perftest run (server on b), its BW
# average (MB/s) to runs[DEV,KEY]
cell() {
	local dev=$1 key=$2
	shift 2
	bench_perftest_2vm "$dev" 4 "$@"
	note "$dev" "$key" "$BENCH_FIG"
}

# stream SIZE N KEY: xiw_tcp_pingpong's busy-polled stream of N writes of
# SIZE from a to b, MB/s to runs[stream,KEY]
pp_port=7890
stream() {
	pp_port=$((pp_port + 1))
	bench_pp_2vm "$pp_port" 190 rate --stream -n "$2" -l "$1"
	xiw_barrier "pp$pp_port-done" 240
	note stream "$3" "$BENCH_FIG"
}

# iperf SIZE KEY: iperf3 from a to b with writes of SIZE, MB/s to
# runs[iperf3,KEY]
ip_port=5401
iperf() {
	local v
	ip_port=$((ip_port + 1))
	v=$(bench_iperf_2vm "$ip_port" "$1")
	xiw_barrier "iperf$ip_port-done" 120
	note iperf3 "$2" "${v:-n/a}"
}

# netem_on: the lossy link on this VM's egress (until the test ends),
# both VMs set before either goes on
netem_on() {
	modprobe sch_netem 2>/dev/null || true
	# shellcheck disable=SC2086 # (netem's words)
	tc qdisc add dev "$XIW_NETDEV" root netem $NETEM ||
		fail "cannot add netem $NETEM on $XIW_NETDEV"
	defer eval "tc qdisc del dev $XIW_NETDEV root 2>/dev/null || true"
	log "netem on $XIW_NETDEV: $(tc qdisc show dev "$XIW_NETDEV" root)"
	xiw_barrier netem-on 60
}

# one_turn TURN: one device's runs or TCP's, of the current part
one_turn() {
	local t=$1 s k
	if [ "$t" = tcp ]; then
		if [ "$part" = curve ]; then
			for s in "${sizes[@]}"; do
				iperf "$s" "w$s"
				stream "$s" "$(iters "$s")" "w$s"
			done
		else
			for s in 65536 1048576; do
				iperf "$s" "lossy$s"
				stream "$s" "$(iters "$s")" "lossy$s"
			done
		fi
		return 0
	fi
	bench_2vm_dev_up "$t"
	if [ "$part" = curve ]; then
		for s in "${sizes[@]}"; do
			cell "$t" "w$s" ib_write_bw -s "$s" -n "$(iters "$s")"
		done
	else
		for s in 65536 1048576; do
			for k in write read send; do
				cell "$t" "lossy-$k$s" "ib_${k}_bw" -s "$s" -n "$(iters "$s")"
			done
		done
	fi
	bench_2vm_dev_down "$t" "$t-down-$part-$round"
}

turns=("${devs[@]}" tcp)
for part in curve lossy; do
	[[ $parts == *" $part "* ]] || continue
	[ "$part" != lossy ] || netem_on
	for ((round = 1; round <= R; round++)); do
		log "$part: round $round of $R"
		for ((i = 0; i < ${#turns[@]}; i++)); do
			one_turn "${turns[(i + round - 1) % ${#turns[@]}]}"
		done
	done
done
[ "$XIW_ROLE" = a ] || exit 0

# fig NAME KEY: the median of runs[NAME,KEY] with its spread, "M (L-H)"
fig() {
	local r=${runs[$1,$2]:-}
	[ -n "$r" ] || { echo "-"; return; }
	echo "$(bench_median "$r") ($(bench_best "$r" low)-$(bench_best "$r" high))"
}
med() { bench_median "${runs[$1,$2]:-}"; }
# goal KEY TCPKEY: "xiw/iperf3, xiw/siw: met or missed" for a goal row
goal() {
	local ri rs x
	x=$(med xiw0 "$1")
	ri=$(bench_ratio "$x" "$(med iperf3 "$2")")
	rs=$(bench_ratio "$x" "$(med siw0 "$1")")
	echo "$ri | $rs | $(bench_judge "$ri" ">=" 1.0), $(bench_judge "$rs" ">=" 2.0)"
}

{
	if [[ $parts == *" curve "* ]]; then
		echo "| two VMs ($(nproc) vCPU each), RDMA Write against TCP writes of the size, MB/s | xiw | siw | iperf3 | busy-polled stream | xiw/iperf3 | xiw/siw | goal (>= 1.0x iperf3, >= 2x siw) |"
		echo "|---|---|---|---|---|---|---|---|"
		for s in "${sizes[@]}"; do
			g="$(bench_ratio "$(med xiw0 "w$s")" "$(med iperf3 "w$s")") | $(bench_ratio "$(med xiw0 "w$s")" "$(med siw0 "w$s")") | -"
			case $s in 65536 | 1048576) g=$(goal "w$s" "w$s") ;; esac
			echo "| $((s / 1024)) KiB | $(fig xiw0 "w$s") | $(fig siw0 "w$s") | $(fig iperf3 "w$s") | $(fig stream "w$s") | $g |"
		done
		echo
	fi
	if [[ $parts == *" lossy "* ]]; then
		echo "| two VMs, netem \"$NETEM\" on both egresses, MB/s | xiw | siw | iperf3 (writes of the size) | busy-polled stream | xiw/iperf3 | xiw/siw | goal (Write and Read: >= 1.0x iperf3, >= 2x siw) |"
		echo "|---|---|---|---|---|---|---|---|"
		for s in 65536 1048576; do
			for k in write read send; do
				g="$(bench_ratio "$(med xiw0 "lossy-$k$s")" "$(med iperf3 "lossy$s")") | $(bench_ratio "$(med xiw0 "lossy-$k$s")" "$(med siw0 "lossy-$k$s")") | -"
				[ $k = send ] || g=$(goal "lossy-$k$s" "lossy$s")
				echo "| $k $((s / 1024)) KiB | $(fig xiw0 "lossy-$k$s") | $(fig siw0 "lossy-$k$s") | $(fig iperf3 "lossy$s") | $(fig stream "lossy$s") | $g |"
			done
		done
		echo
	fi
	echo "Medians of $R rounds (lowest-highest), the devices and TCP taking turns;"
	echo "about $MIB MiB per RDMA and stream run, iperf3 5 s. Every run, in order:"
	echo
	for k in "${!runs[@]}"; do echo "- $k: ${runs[$k]}"; done | sort -V
} | tee curve-2vm-table.md | sed 's/^/BENCH /'
for d in "${devs[@]}" iperf3 stream; do
	for s in "${sizes[@]}"; do
		r=${runs[$d,w$s]:-}
		[ -z "$r" ] || echo "$d $s $(bench_median "$r") $(bench_best "$r" low) $(bench_best "$r" high)"
	done
done >curve-2vm.dat
cp curve-2vm-table.md curve-2vm.dat "$XIW_TEST_OUT/" 2>/dev/null || true
log ok
