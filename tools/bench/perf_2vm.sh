#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 2vm
# timeout: 1800
# description: make bench's two-host rows: RDMA Write bandwidth (64 KiB) and RDMA Read latency (8 B) between two VMs on xiw, then on siw, and TCP (iperf3) between the same VMs; perf-2vm-table.md
. "$(dirname "${BASH_SOURCE[0]}")/../../selftests/lib.sh"
. "$XIW_SELFTESTS/perftest_lib.sh"
#
# Server on b, client on a, over the bench's virtual link. Devices take
# turns (xiw first, then siw on both VMs). XIW_BENCH_ITERS (default 2000)
# iterations per run. A figure a run could not produce is n/a.
# The VMs have one vCPU each unless XIW_VM_SMP_2VM says otherwise
# (Documentation/testing.md, "Two VMs": with two each on a 2-core host
# the spinning perftest client takes CPU from the other "host").

need_cmd ib_write_bw ib_read_lat iperf3 ss
N=${XIW_BENCH_ITERS:-2000}
declare -A val

# measure DEV: both figures on DEV (both VMs call it alike)
measure() {
	local dev=$1 r
	r=$(perftest_2vm b "$dev" ib_write_bw -s 65536 -n "$N") || r=
	[ "$XIW_ROLE" = b ] || val[$dev,bw]=$(awk '{ print $4 }' <<<"$r")
	r=$(perftest_2vm b "$dev" ib_read_lat -s 8 -n "$N") || r=
	[ "$XIW_ROLE" = b ] || val[$dev,lat]=$(awk '{ print $5 }' <<<"$r")
	log "$dev: write BW ${val[$dev,bw]:-n/a} MB/s, read latency ${val[$dev,lat]:-n/a} us"
}

xiw_load
xiw_need_provider
xiw_link_add xiw0 "$XIW_NETDEV"
wait_port_state xiw0 PORT_ACTIVE 5
measure xiw0
rdma link delete xiw0
xiw_barrier xiw-down 60

siw_load
rdma_link_add siw0 siw "$XIW_NETDEV"
defer eval 'kill -KILL $(jobs -p) 2>/dev/null; wait 2>/dev/null || true'
wait_port_state siw0 PORT_ACTIVE 5
measure siw0
xiw_barrier siw-done 60

# TCP between the same VMs
tcp=n/a
if [ "$XIW_ROLE" = b ]; then
	iperf3 -s -B "$XIW_LOCAL_IP" -1 >/dev/null 2>&1 &
	wait_listen 5201 10 $!
	xiw_barrier iperf-listen 30
	xiw_barrier iperf-done 120
else
	xiw_barrier iperf-listen 30
	tcp=$(run_timeout 60 iperf3 -c "$XIW_PEER_IP" -t 5 -l 65536 -J 2>/dev/null |
	      awk -F'[:,]' '/"bits_per_second"/ { b = $2 } END { if (b) printf "%.0f", b / 8e6 }') || true
	[ -n "$tcp" ] || tcp=n/a
	xiw_barrier iperf-done 120
fi
[ "$XIW_ROLE" = a ] || exit 0

ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN {
		if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "-" }'
}
x=${val[xiw0,bw]:-n/a} s=${val[siw0,bw]:-n/a}
xl=${val[xiw0,lat]:-n/a} sl=${val[siw0,lat]:-n/a}
{
	echo "| two VMs ($(nproc) vCPU each) | TCP (iperf3) | xiw | siw | xiw/siw | xiw/TCP | goal |"
	echo "|---|---|---|---|---|---|---|"
	echo "| write BW, 64 KiB, MB/s | $tcp | $x | $s | $(ratio "$x" "$s") | $(ratio "$x" "$tcp") | xiw/siw >= 1.00, xiw/TCP >= 0.90 |"
	echo "| read latency, 8 B, typical us | - | $xl | $sl | $(ratio "$xl" "$sl") | - | xiw/siw <= 1.00 |"
} | tee perf-2vm-table.md | sed 's/^/BENCH /'
cp perf-2vm-table.md "$XIW_TEST_OUT/perf-2vm-table.md"
[ "$x" != n/a ] || fail "no two-VM bandwidth figure for xiw"
