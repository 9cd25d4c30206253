#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# pmem: 512M
# timeout: 600
# description: make bench: xiw_commitlog per-commit latency and rate between two xiw devices of one VM, push (Write + Flush + Atomic Write + Flush) against Send/Recv with a target thread, on DRAM and on emulated persistent memory (device-dax)
. "$(dirname "${BASH_SOURCE[0]}")/../../selftests/lib.sh"

CL=$(need_prog xiw_commitlog)
N=${XIW_BENCH_COMMITS:-2000}
xiw_two_devices
dax=$(pmem_devdax 256M)

# one MEM MODE SIZE DEPTH FIELDS: the figures of one run (FIELDS of its
# "commitlog" line, e.g. "median_us p99_us rate") into
# val[MEM,MODE,SIZE,DEPTH] as table cells, or n/a
declare -A val
port=7500
one() {
	local mem=$1 mode=$2 size=$3 depth=$4 fields=$5 d=() rc=0 line k=$1,$2,$3,$4
	port=$((port + 1))
	[ "$mem" = pmem ] && d=(--dax "$dax")
	run_timeout 300 "$CL" run --addr 192.0.2.1 --src 192.0.2.2 --port $port \
		--mode "$mode" "${d[@]}" -n "$N" --size "$size" --depth "$depth" \
		--seed $port >cl.log 2>&1 || rc=$?
	line=$(grep '^commitlog ' cl.log || true)
	if [ $rc = 0 ] && [ -n "$line" ]; then
		val[$k]=$(awk -v want="$fields" '{ for (i = 2; i <= NF; i++) { split($i, kv, "=");
			f[kv[1]] = kv[2] } n = split(want, w, " ")
			for (i = 1; i <= n; i++) printf "%s%s", (i > 1 ? " | " : ""), f[w[i]] }' <<<"$line")
	else
		val[$k]=$(awk -v want="$fields" 'BEGIN { n = split(want, w, " ")
			for (i = 1; i <= n; i++) printf "%s%s", (i > 1 ? " | " : ""), "n/a" }')
		sed 's/^/#   /' cl.log | tail -n 5
	fi
	log "$mem $mode $size depth $depth: ${val[$k]}"
}

declare -A how=(
	[push]="Write + Flush + Atomic Write (tail) + Flush, no target CPU"
	[send]="Send, target thread copies + writes back + answers"
	[write]="reference: Write + Write (tail) + Read, nothing flushed")
for mem in dram pmem; do
	for size in 64 4096; do
		for mode in push send write; do
			one $mem $mode $size 1 "median_us p99_us rate"
			one $mem $mode $size 8 "rate"
		done
	done
done
{
	echo "| log memory | record | mode | median us | p99 us | commits/s | commits/s, 8 in flight |"
	echo "|---|---|---|---|---|---|---|"
	for mem in dram pmem; do
		for size in 64 4096; do
			for mode in push send write; do
				echo "| $mem | $size B | $mode: ${how[$mode]} | ${val[$mem,$mode,$size,1]} | ${val[$mem,$mode,$size,8]} |"
			done
		done
	done
} | tee commitlog.md | sed 's/^/BENCH /'
cp commitlog.md "$XIW_TEST_OUT/commitlog-table.md" 2>/dev/null || true
