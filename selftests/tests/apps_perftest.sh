#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 400
# description: data path: perftest send/write/read bandwidth and latency over rdma_cm (-R), large messages, 1448-byte MSS FPDUs (the MSS seen with ss) and tiny messages; every report row checked, every figure a positive number
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$XIW_SELFTESTS/perftest_lib.sh"

need_cmd ib_send_bw ib_write_bw ib_read_bw ib_send_lat ib_write_lat \
	ib_read_lat ip ss
lomtu=$(cat /sys/class/net/lo/mtu)
defer ip link set lo mtu "$lomtu"
xiw_loopback

# pt TOOL ARGS...: one perftest run, its report checked row by row
# (perftest_check: sizes, iterations, every figure a positive number).
pt() {
	perftest_local_rows xiw0 192.0.2.1 "$@"
	log "$label: $*: $PERFTEST_ROWS"
}

# mss_watch / mss_check MIN MAX: sample (every ~0.2 s) the MSS of every
# established TCP connection on perftest's ports while a section runs (the
# sockets xiw's connections use); then every sample must be in [MIN, MAX].
mss_watch() {
	( while :; do
		ss -Htin state established "( sport >= :18600 and sport <= :19999 ) or ( dport >= :18600 and dport <= :19999 )"
		sleep 0.2
	done ) >mss.log 2>&1 &
	mss_pid=$!
}
mss_check() {
	local got
	kill "$mss_pid"
	wait "$mss_pid" 2>/dev/null || true
	got=$(grep -oE '(^|[[:space:]])mss:[0-9]+' mss.log | sed 's/.*mss://' | sort -n | uniq -c |
		awk '{ printf "%s%s x%s", s, $2, $1; s = ", " }')
	[ -n "$got" ] || fail "$label: no established connection seen on perftest's ports"
	grep -oE '(^|[[:space:]])mss:[0-9]+' mss.log | sed 's/.*mss://' |
		awk -v lo="$1" -v hi="$2" '$1 < lo || $1 > hi { bad = 1 } END { exit bad }' ||
		fail "$label: TCP MSS seen: $got; expected $1..$2"
	log "$label: TCP MSS of the connections (samples): $got"
}

# Loopback over a dummy netdev: TCP's MSS follows lo's MTU (64 KiB).
label="mss 64K"
mss_watch
# 1 MiB: a Read of one MiB is answered in the longest run of Read
# Response segments (Send and Write of 1 MiB run in the sweep of make
# check-long, apps_perftest_sweep)
for t in ib_send_bw ib_write_bw ib_read_bw; do
	pt "$t" -s 65536 -n 200
done
pt ib_read_bw -s 1048576 -n 16
pt ib_read_bw -s 65536 -n 200 -o 4
for t in ib_send_lat ib_write_lat ib_read_lat; do
	pt "$t" -s 2 -n 200
done
mss_check 16384 65535
# Ethernet-sized FPDUs: big messages are segmented into many DDP segments.
# lo's MTU 1500 - 40 (IPv4 + TCP) - 12 (timestamps) = an MSS of 1448.
label="mss 1448"
ip link set lo mtu 1500
mss_watch
for t in ib_send_bw ib_write_bw ib_read_bw; do
	pt "$t" -s 65536 -n 50
	pt "$t" -s 3 -n 200
done
mss_check 1448 1448
