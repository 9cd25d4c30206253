#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 180
# description: data path: rping (Send, RDMA Read, RDMA Write) with data verification, without and with MPA CRC
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

need_cmd rping ip ss
xiw_loopback
crc0=$(cat /sys/module/xiw/parameters/mpa_crc)
defer eval "echo $crc0 >/sys/module/xiw/parameters/mpa_crc"

# -v prints every received ping; -V: the client checks the data it reads
# back and exits non-zero on a mismatch.
run_timeout 60 rping -s -a 192.0.2.1 -v -C 10 -S 100 >srv.log 2>&1 &
srv=$!
wait_listen 7174 20 $srv	# rping's default port
run_timeout 60 rping -c -a 192.0.2.1 -v -V -C 10 -S 100 >cli.log 2>&1 || rping_race cli.log || {
	cat cli.log srv.log
	fail "rping client failed"
}
wait $srv || rping_race srv.log || { cat srv.log; fail "rping server failed"; }
cat cli.log
expect_eq "$(grep -c 'ping data: rdma-ping-' cli.log)" 10 "pings seen by the client"
expect_eq "$(grep -c 'ping data: rdma-ping-' srv.log)" 10 "pings seen by the server"

# Bigger buffers: every Read/Write spans several FPDUs (MSS-sized); -V
# verifies the data. Without CRC, then with CRC required by both sides.
port=7300
for crc in 0 2; do
	echo $crc >/sys/module/xiw/parameters/mpa_crc
	port=$((port + 1))
	run_timeout 60 rping -s -a 192.0.2.1 -p $port -C 20 -S 65000 \
		>srv2.log 2>&1 &
	srv=$!
	wait_listen $port 20 $srv
	run_timeout 60 rping -c -a 192.0.2.1 -p $port -C 20 -S 65000 -V \
		>cli2.log 2>&1 || rping_race cli2.log || {
		cat cli2.log srv2.log
		fail "rping client (65000 bytes, verify, mpa_crc=$crc) failed"
	}
	wait $srv || rping_race srv2.log || { cat srv2.log; fail "rping server (mpa_crc=$crc) failed"; }
done
