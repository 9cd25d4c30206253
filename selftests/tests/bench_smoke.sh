#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 120
# description: bench stand-in: rdma_rxe device on a dummy netdev, seen by libibverbs; the TCP floors' program (xiw_tcp_pingpong) in its three modes, every answer checked: ping-pong rounds, the pipelined echo's FetchAdd-sized FPDUs (76-byte requests, 36-byte answers, each answer's request id and original value) and the stream's byte count
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

need_cmd rdma ibv_devinfo ibv_devices ip modprobe
modprobe rdma_rxe
defer modprobe -r rdma_rxe
dummy_add d0
rdma_link_add rxe0 rxe d0
wait_for 5 ib_dev_exists rxe0 || fail "rxe0 not in /sys/class/infiniband"
rdma_link_has rxe0 d0 || fail "rdma link show does not list rxe0 on d0: $(rdma link show)"
out=$(ibv_devices)
expect_match "$out" '^[[:space:]]+rxe0[[:space:]]' "ibv_devices"
info=$(ibv_devinfo -d rxe0)
echo "$info"
expect_match "$info" 'transport:[[:space:]]+InfiniBand \(0\)' "ibv_devinfo"
expect_match "$info" 'link_layer:[[:space:]]+Ethernet' "ibv_devinfo"
wait_port_state rxe0 PORT_ACTIVE 5
rdma link delete rxe0
wait_for 5 eval '! ib_dev_exists rxe0' || fail "rxe0 still registered after delete"
no_stray_devices rxe
modprobe -r rdma_rxe
[ ! -d /sys/module/rdma_rxe ] || fail "rdma_rxe still loaded"
log "rxe stand-in ok"

# The TCP floors of perf_table (xiw_tcp_pingpong), on the guest's lo. The
# client checks every answer (the round's tag; the echo's request id and
# FetchAdd original value; the stream's count, which the server sends
# back) and fails on a wrong one; here the counts both ends report.
pp=$(need_prog xiw_tcp_pingpong)
port=7701
# floor_pair NAME ARGS...: server and client, the client's line in $cli,
# the server's in $srvline
floor_pair() {
	local name=$1
	shift
	port=$((port + 1))
	server_bg "$name" 60 "$pp" -s 127.0.0.1 "$port"
	cli=$(run_timeout 60 "$pp" -c 127.0.0.1 "$port" "$@") ||
		{ cat "$name-srv.log"; fail "$name: client failed: $cli"; }
	server_done "$name"
	srvline=$(cat "$name-srv.log")
	log "$name: $cli | $srvline"
}
floor_pair pingpong -n 200 --warmup 10
expect_match "$cli" '^rtt_us typical=[0-9.]+ min=[0-9.]+ p99=[0-9.]+ half=[0-9.]+ n=200 bytes=8$' "ping-pong"
expect_eq "$srvline" "served pingpong rounds=210" "ping-pong server"
# RFC 7306 FPDUs as xiw sends them: MPA length 2 + DDP untagged 18 +
# Atomic Request 52 (+ pad 0) + CRC 4; answer 2 + 18 + 12 + CRC 4
floor_pair echo --echo -n 5000 -w 16
expect_match "$cli" '^echo_mpps rate=[0-9.]+ msgs=5000 window=16 req_bytes=76 resp_bytes=36 checked=5000 seconds=' "echo"
# 4 windows of warm-up before the 5000 timed ones
expect_eq "$srvline" "served echo requests=5064" "echo server"
floor_pair stream --stream -n 100 -l 65536
expect_match "$cli" '^stream_mbs rate=[0-9.]+ bytes=6553600 writes=100 size=65536 seconds=' "stream"
expect_eq "$srvline" "served stream bytes=6553600" "stream server"
log "TCP floors ok"
