#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 240
# description: TX under TCP memory pressure: tcp_mem squeezed to one page (over a few MiB of TCP ballast) for 4 s during ib_read_lat, ib_read_bw and ib_write_bw runs and a verified Write+Read stream (xiw_cm_tool), and shown to bite in each (TCP under pressure; for the streams, xiw's TX parked on a full socket or the traffic stalled; parked at least once in all); no CPU spends the squeeze in the kernel (90%) (a TX that retried sendmsg would spin there), every run completes after the restore, the stream's blocks are intact and every WR completes
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$XIW_SELFTESTS/perftest_lib.sh"
. "$XIW_SELFTESTS/fault_lib.sh"

need_cmd ib_read_lat ib_read_bw ib_write_bw ss
CM=$(need_prog xiw_cm_tool)
xiw_loopback
fault_tcp_mem_ballast

# cpu_kernel: "cpuN TICKS" per CPU, TICKS = system + irq + softirq
cpu_kernel() { awk '$1 ~ /^cpu[0-9]/ { print $1, $4 + $7 + $8 }' /proc/stat; }

# squeeze LABEL PORT STREAM: squeeze tcp_mem while traffic flows on
# PORT, 4 s; over the last 3 s no CPU may spend more than 90% in the
# kernel while the traffic stands still (under 64 KiB acked): a TX that
# retries sendmsg spins there, one parked on TCP waits in no CPU.
# Traffic that goes on through the squeeze (a ping-pong's doorbells and
# RX took up to 81% of a CPU) or ends in it is not judged; the pollers
# spin in user space.
#
# The squeeze must bite: TCP is under memory pressure (else it tested
# nothing; fault_tcp_mem_squeeze() makes sure it is), and, for a stream
# (STREAM=1) whose traffic outlives the squeeze, either xiw's TX parked
# on a full socket or the traffic stood still (under 64 KiB acked in
# 3 s). A ping-pong of 2-byte Reads is judged on the pressure alone: its
# sockets may live on what each has reserved and never ask TCP for more
# (then it goes on at full speed), or stall on a receiver's drop; both
# are right. Over the whole test the TX must have parked (the bandwidth
# runs fill their sockets).
squeeze() {
	local label=$1 port=$2 stream=$3 n0 t0 t1 hot acked press full0 full
	full0=$(xiw_counter tx_socket_full)
	fault_tcp_mem_squeeze 1
	sleep 1
	cpu_kernel >a.st
	n0=$(tcp_bytes_acked "$port") t0=$(now_us)
	sleep 3
	cpu_kernel >b.st
	t1=$(now_us)
	press=$(fault_tcp_mem_pressure)
	acked=$(( $(tcp_bytes_acked "$port") - n0 ))
	full=$(( $(xiw_counter tx_socket_full) - full0 ))
	log "$label: squeezed (pressure $press), $acked bytes acked in 3 s (< 0: the run ended), TX parked on TCP $full times; kernel time per CPU: $(paste -d' ' a.st b.st |
		awk -v us=$((t1 - t0)) '{ printf "%s %d%% ", $1, ($4 - $2) * 1000000 / us }')"
	fault_tcp_mem_restore
	expect_eq "$press" 1 "$label: TCP under memory pressure while squeezed"
	[ "$stream" = 0 ] || [ "$full" -gt 0 ] || [ "$acked" -lt 65536 ] ||
		fail "$label: the squeeze did not bite: $acked bytes acked in 3 s, xiw's TX never found the socket full"
	hot=$(paste -d' ' a.st b.st | awk -v us=$((t1 - t0)) \
		'($4 - $2) * 1000000 / us > 90 { printf "%s ", $1 }')
	[ -z "$hot" ] || [ "$acked" -lt 0 ] || [ "$acked" -ge 65536 ] || fail "$label: CPU $hot in the kernel for most of the squeeze"
}

# pt LABEL PORT STREAM TOOL ARGS...: TOOL's server and client, squeezed
# once traffic flows; both must complete and report sanely afterwards
pt() {
	local label=$1 port=$2 stream=$3 srv cli rc=0
	shift 3
	run_timeout 90 "$@" -R -d xiw0 -p "$port" >"$label.srv" 2>&1 &
	srv=$!
	wait_listen "$port" 30 "$srv" "$label.srv"
	run_timeout 90 "$@" -R -d xiw0 -p "$port" 192.0.2.1 >"$label.cli" 2>&1 &
	cli=$!
	wait_for 30 eval "[ \$(tcp_bytes_acked $port) -gt 200000 ]" ||
		fail "$label: no traffic"
	squeeze "$label" "$port" "$stream"
	wait "$cli" || rc=$?
	wait "$srv" || rc=$((rc ? rc : $?))
	if [ $rc != 0 ]; then
		sed 's/^/#   /' "$label.cli" "$label.srv"
		fail "$label: $* failed ($rc)"
	fi
	log "$label: $(perftest_result "$label.cli" "$*")"
}

nospace=$(xiw_counter tx_socket_full)
pt readlat 18641 0 ib_read_lat -s 2 -n 40000
pt readbw 18642 1 ib_read_bw -s 65536 -n 8000
pt writebw 18643 1 ib_write_bw -s 4096 -n 10000

# the stream checks its data: 4 KiB Writes each read back and compared,
# both ways; 6000 blocks verified, then the client disconnects
run_timeout 90 "$CM" stream-server 192.0.2.1 18644 0 80 >s.log 2>&1 &
sp=$!
wait_listen 18644 20 "$sp" s.log
run_timeout 90 "$CM" stream-client 192.0.2.1 18644 192.0.2.1 6000 80 >c.log 2>&1 &
cp=$!
wait_for 30 grep -q TRAFFIC c.log || fail "stream: no traffic: $(cat c.log)"
squeeze stream 18644 1
rc=0
wait "$cp" || rc=$?
wait "$sp" || rc=$((rc ? rc : $?))
sed 's/^/# stream client: /' c.log
[ $rc = 0 ] || { sed 's/^/# stream server: /' s.log; fail "stream failed ($rc)"; }
expect_match "$(cat c.log)" '^ok [0-9]+ blocks verified, then disconnected' "stream client"
expect_match "$(cat c.log)" '^ok [0-9]+ blocks read back intact, 0 corrupt' "stream data"
expect_match "$(cat s.log)" '^ok [0-9]+ blocks read back intact, 0 corrupt' "stream data (server)"
full=$(( $(xiw_counter tx_socket_full) - nospace ))
log "TX parked on TCP $full times in all"
[ "$full" -gt 0 ] || fail "xiw's TX never parked on a full socket in any squeeze"
expect_eq "$(xiw_counter terminates_sent)" 0 "no Terminate"
