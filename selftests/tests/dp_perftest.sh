#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 400
# description: data path: perftest send/write/read bandwidth and latency over rdma_cm (-R), large messages, 1448-byte MSS FPDUs and tiny messages
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$XIW_ROOT/selftests/perftest_lib.sh"

need_cmd ib_send_bw ib_write_bw ib_read_bw ib_send_lat ib_write_lat \
	ib_read_lat ip ss
lomtu=$(cat /sys/class/net/lo/mtu)
defer ip link set lo mtu "$lomtu"
xiw_loopback

pt() {
	local r
	r=$(perftest_local xiw0 192.0.2.1 "$@")
	log "$label: $*: $r"
}

# Loopback over a dummy netdev: TCP's MSS follows lo's MTU (64 KiB).
label="mss 64K"
for t in ib_send_bw ib_write_bw ib_read_bw; do
	pt "$t" -s 65536 -n 200
	pt "$t" -s 1048576 -n 16
done
pt ib_read_bw -s 65536 -n 200 -o 4
for t in ib_send_lat ib_write_lat ib_read_lat; do
	pt "$t" -s 2 -n 200
done
# Ethernet-sized FPDUs: big messages are segmented into many DDP segments.
label="mss 1448"
ip link set lo mtu 1500
for t in ib_send_bw ib_write_bw ib_read_bw; do
	pt "$t" -s 65536 -n 50
	pt "$t" -s 3 -n 200
done
