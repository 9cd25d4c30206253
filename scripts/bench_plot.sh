#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# bench_plot.sh DATA_DIR OUT_DIR: make bench's pictures, drawn with gnuplot
# from what tools/bench/perf_sweep.sh measured in the VM:
#   OUT_DIR/bench-bw.png    RDMA Write bandwidth vs message size (2 B to
#                           8 MiB), xiw, siw, rxe, TCP (qperf) and the TCP
#                           floor (perf_table's busy-polled stream)
#   OUT_DIR/bench-lat.png   RDMA Write latency vs message size, the same
#                           (the floor: half the busy-polled round trip)
#   OUT_DIR/bench-lat-dist.png
#                           distribution (CDF) of every 8-byte RDMA Read
#                           and FetchAdd latency sample, per device, with
#                           the 8-byte TCP round trip (the floor) marked
# Prints the Markdown lines that link them. A curve with no data is left
# out; no data at all is an error.
set -euo pipefail
data=$1 out=$2
sweep=$data/sweep.dat
[ -s "$sweep" ] || { echo "bench_plot: no $sweep" >&2; exit 1; }
command -v gnuplot >/dev/null || {
	echo "bench_plot: gnuplot missing (make deps installs gnuplot-nox)" >&2
	exit 1
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

label() {
	case $1 in
	xiw0) echo xiw ;; siw0) echo siw ;; rxe0) echo rxe ;;
	tcp) echo "TCP (qperf)" ;;
	tcpfloor) echo "TCP floor (busy-polled)" ;;
	*) echo "$1" ;;
	esac
}

# one colour per device in every picture
colour() {
	case $1 in
	xiw0) echo '#9400d3' ;; siw0) echo '#009e73' ;; rxe0) echo '#56b4e9' ;;
	tcpfloor) echo '#d55e00' ;; *) echo '#e69f00' ;;
	esac
}

# curve FIGURE: a gnuplot "plot" argument list, one data file per device
curve() {
	local fig=$1 dev sep="" plot=""
	for dev in xiw0 siw0 rxe0 tcp tcpfloor; do
		awk -v d="$dev" -v f="$fig" '$1 == d && $2 == f { print $3, $4 }' \
			"$sweep" >"$tmp/$fig-$dev"
		[ -s "$tmp/$fig-$dev" ] || continue
		plot+="$sep'$tmp/$fig-$dev' using 1:2 with linespoints lc rgb '$(colour "$dev")'"
		[ "$dev" != tcpfloor ] || plot+=" dt 2 lw 2"
		plot+=" title '$(label "$dev")'"
		sep=", "
	done
	echo "$plot"
}

# cdf DEV NAME: sorted samples with their percentile
cdf() {
	local f=$data/hist-$1-$2.dat
	[ -s "$f" ] || return 1
	sort -g "$f" | awk '{ v[NR] = $1 } END { for (i = 1; i <= NR; i++) print v[i], 100 * i / NR }' \
		>"$tmp/cdf-$1-$2"
}

common="set terminal pngcairo size 900,560 font 'sans,10'
set grid
set key top left
set logscale x 2
set xtics ('2 B' 2, '64 B' 64, '1 KiB' 1024, '32 KiB' 32768, '1 MiB' 1048576, '8 MiB' 8388608)
set xlabel 'message size'
set termoption noenhanced"

bw=$(curve bw)
lat=$(curve lat)
[ -n "$bw" ] || { echo "bench_plot: no bandwidth curve" >&2; exit 1; }
gnuplot <<EOF
$common
set output '$out/bench-bw.png'
set title 'RDMA Write bandwidth (perftest -a), TCP (qperf tcp_bw) and the TCP floor (busy-polled stream), one TCG VM'
set ylabel 'MB/s'
set logscale y 10
plot $bw
EOF
if [ -n "$lat" ]; then
	gnuplot <<EOF
$common
set output '$out/bench-lat.png'
set title 'RDMA Write latency, typical (perftest -a), TCP (qperf tcp_lat) and the TCP floor (half the busy-polled round trip), one TCG VM'
set ylabel 'us'
set logscale y 10
plot $lat
EOF
fi

# the floor under both: the busy-polled 8-byte TCP round trip, a vertical
# line: perf_table's median of its rounds (bench-table.md, same directory)
# or else twice the half that perf_sweep recorded
rtt8=$(awk -F' *[|] *' '$2 ~ /^TCP round trip, 8 B/ && $3 + 0 > 0 { print $3 }' \
	"$data/bench-table.md" 2>/dev/null || true)
[ -n "$rtt8" ] ||
	rtt8=$(awk '$1 == "tcpfloor" && $2 == "lat" && $3 == 8 { printf "%.2f", 2 * $4 }' "$sweep")
floorline=
[ -z "$rtt8" ] || floorline="set arrow 1 from $rtt8, graph 0 to $rtt8, graph 1 nohead dt 2 lw 2 lc rgb '$(colour tcpfloor)'
set label 1 'TCP round trip, 8 B ($rtt8 us)' at $rtt8, graph 0.95 offset 0.5, 0 tc rgb '$(colour tcpfloor)'"
plots=""
for name in read fadd; do
	p="" sep=""
	for dev in xiw0 siw0 rxe0; do
		cdf "$dev" "$name" || continue
		p+="$sep'$tmp/cdf-$dev-$name' using 1:2 with lines lw 2 lc rgb '$(colour "$dev")' title '$(label "$dev")'"
		sep=", "
	done
	[ -z "$p" ] || plots+="set title '8-byte $( [ $name = read ] && echo 'RDMA Read' || echo 'FetchAdd') latency, every sample (perftest -H)'
plot $p
"
done
if [ -n "$plots" ]; then
	gnuplot <<EOF
set terminal pngcairo size 900,900 font 'sans,10' noenhanced
set output '$out/bench-lat-dist.png'
set grid
set key bottom right
set logscale x 10
set xlabel 'latency, us'
set ylabel 'samples at or below, %'
$floorline
set multiplot layout 2,1
$plots
unset multiplot
EOF
fi

echo
echo "Pictures (in $(basename "$out")/):"
echo "- [bandwidth vs message size](bench-bw.png)"
[ -z "$lat" ] || echo "- [latency vs message size](bench-lat.png)"
[ -z "$plots" ] || echo "- [8-byte Read and FetchAdd latency distribution](bench-lat-dist.png)"
