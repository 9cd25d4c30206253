#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make bench: the performance table of design brief section 5 - perftest
# (-R) on xiw, siw (built from linux-source-6.12) and rxe side by side in
# one VM, plus raw TCP (iperf3), with the ratios the goals are stated in.
# XIW_BENCH_ITERS (default 2000) iterations per perftest run. Not part of
# make check: it takes several minutes and its figures are not pass/fail.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${XIW_BUILD:-$PWD/build}
export XIW_BUILD=$BUILD

bash selftests/build-siw.sh >/dev/null ||
	echo "bench: cannot build siw.ko, its column stays empty" >&2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
bash selftests/run.sh selftests/bench/perf_table.sh >"$out" 2>&1 || {
	cat "$out"
	exit 1
}
run=$(sed -n 's/^# results in \([^ ]*\) .*/\1/p' "$out" | tail -1)
table=$run/1vm/tests/bench-table.md
[ -f "$table" ] || { cat "$out"; echo "bench: no table" >&2; exit 1; }
echo "xiw bench, $(date -u +%Y-%m-%d), ${XIW_BENCH_ITERS:-2000} iterations" \
     "per run, one TCG VM with 2 vCPUs (figures move from run to run)"
cat "$table"
cp "$table" "$BUILD/bench-table.md"
echo "(also in $BUILD/bench-table.md; logs in $run)"
