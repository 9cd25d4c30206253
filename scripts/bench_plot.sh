#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# bench_plot.sh DATA_DIR OUT_DIR: make bench's pictures, drawn with gnuplot
# from what tools/bench/perf_sweep.sh measured in the VM:
#   OUT_DIR/bench-bw.png    RDMA Write bandwidth vs message size (2 B to
#                           8 MiB), xiw, siw, rxe and TCP
#   OUT_DIR/bench-lat.png   RDMA Write latency vs message size, the same
#   OUT_DIR/bench-lat-dist.png
#                           distribution (CDF) of every 8-byte RDMA Read
#                           and FetchAdd latency sample, per device
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
	tcp) echo "TCP (qperf)" ;; *) echo "$1" ;;
	esac
}

# one colour per device in every picture
colour() {
	case $1 in
	xiw0) echo '#9400d3' ;; siw0) echo '#009e73' ;; rxe0) echo '#56b4e9' ;;
	*) echo '#e69f00' ;;
	esac
}

# curve FIGURE: a gnuplot "plot" argument list, one data file per device
curve() {
	local fig=$1 dev sep="" plot=""
	for dev in xiw0 siw0 rxe0 tcp; do
		awk -v d="$dev" -v f="$fig" '$1 == d && $2 == f { print $3, $4 }' \
			"$sweep" >"$tmp/$fig-$dev"
		[ -s "$tmp/$fig-$dev" ] || continue
		plot+="$sep'$tmp/$fig-$dev' using 1:2 with linespoints lc rgb '$(colour "$dev")' title '$(label "$dev")'"
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
set title 'RDMA Write bandwidth (perftest -a) and TCP (qperf tcp_bw), one TCG VM'
set ylabel 'MB/s'
set logscale y 10
plot $bw
EOF
if [ -n "$lat" ]; then
	gnuplot <<EOF
$common
set output '$out/bench-lat.png'
set title 'RDMA Write latency, typical (perftest -a), and TCP (qperf tcp_lat), one TCG VM'
set ylabel 'us'
set logscale y 10
plot $lat
EOF
fi

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
