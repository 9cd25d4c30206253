#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# pmem: 512M
# timeout: 600
# description: make bench: xiw_commitlog per-commit latency and rate between two xiw devices of one VM, push (Write + Flush + Atomic Write + Flush) against Send/Recv with a target thread, on DRAM and on emulated persistent memory (device-dax)
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

CL=$(need_prog xiw_commitlog)
N=${XIW_BENCH_COMMITS:-2000}
xiw_two_devices
dax=$(pmem_devdax 256M)

# one MEM MODE SIZE: the figures of one run into val[MEM,MODE,SIZE], or n/a
declare -A val
port=7500
one() {
	local mem=$1 mode=$2 size=$3 d=() rc=0 line
	port=$((port + 1))
	[ "$mem" = pmem ] && d=(--dax "$dax")
	run_timeout 300 "$CL" run --addr 192.0.2.1 --src 192.0.2.2 --port $port \
		--mode "$mode" "${d[@]}" -n "$N" --size "$size" --seed $port >cl.log 2>&1 || rc=$?
	line=$(grep '^commitlog ' cl.log || true)
	if [ $rc = 0 ] && [ -n "$line" ]; then
		val[$mem,$mode,$size]=$(awk '{ for (i = 2; i <= NF; i++) { split($i, kv, "=");
			f[kv[1]] = kv[2] } printf "%s | %s | %s", f["median_us"], f["p99_us"], f["rate"] }' <<<"$line")
	else
		val[$mem,$mode,$size]="n/a | n/a | n/a"
		sed 's/^/#   /' cl.log | tail -n 5
	fi
	log "$mem $mode $size: ${val[$mem,$mode,$size]}"
}

declare -A how=(
	[push]="Write + Flush + Atomic Write (tail) + Flush, no target CPU"
	[send]="Send, target thread copies + writes back + answers"
	[write]="reference: Write + Write (tail) + Read, nothing flushed")
for mem in dram pmem; do
	for size in 64 4096; do
		for mode in push send write; do
			one $mem $mode $size
		done
	done
done
{
	echo "| log memory | record | mode | median us | p99 us | commits/s |"
	echo "|---|---|---|---|---|---|"
	for mem in dram pmem; do
		for size in 64 4096; do
			for mode in push send write; do
				echo "| $mem | $size B | $mode: ${how[$mode]} | ${val[$mem,$mode,$size]} |"
			done
		done
	done
} | tee commitlog.md | sed 's/^/BENCH /'
cp commitlog.md "$XIW_TEST_OUT/commitlog-table.md" 2>/dev/null || true
