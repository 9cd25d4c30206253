#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 200
# description: process death: kill -9 of either side in the middle of a transfer; the peer sees the disconnect and exits by itself (not by a signal), the dead process's QPs, MRs (pinned memory), CQs and cm_ids are released
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

need_cmd rping ib_write_bw rdma ip ss
xiw_loopback
A=192.0.2.1
port=7700
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
echo "module $XIW_MOD +p" >/sys/kernel/debug/dynamic_debug/control
defer eval "echo 'module $XIW_MOD -p' >/sys/kernel/debug/dynamic_debug/control"

res_count() { rdma res show "$1" 2>/dev/null | grep -cE "(dev|link) xiw0[/ ]" || true; }
no_resources() {
	local r
	for r in qp mr cq pd cm_id; do
		[ "$(res_count $r)" = 0 ] || return 1
	done
}

# kill_mid VICTIM: rping with 64 KiB messages forever; once data flows,
# kill -9 VICTIM (client|server); the survivor must notice and exit.
kill_mid() {
	local victim=$1 srv cli dead alive
	port=$((port + 1))
	# no timeout wrapper: kill -9 must hit rping itself
	rping -s -a $A -p $port -S 65535 >srv.log 2>&1 &
	srv=$!
	defer eval "kill -9 $srv 2>/dev/null || true"
	wait_for 10 eval "ss -Htln | grep -q ':$port '" || fail "no rping server"
	rping -c -a $A -p $port -S 65535 -v >cli.log 2>&1 &
	cli=$!
	defer eval "kill -9 $cli 2>/dev/null || true"
	wait_for 20 eval "[ \$(grep -c '^ping data' cli.log) -ge 20 ]" ||
		fail "rping data does not flow: $(cat cli.log srv.log)"
	[ "$(res_count mr)" -gt 0 ] || fail "no MRs while rping runs"
	if [ "$victim" = client ]; then dead=$cli alive=$srv; else dead=$srv alive=$cli; fi
	kill -9 "$dead"
	wait "$dead" 2>/dev/null || true
	# the survivor sees DISCONNECTED (or a flushed WR) and ends by itself
	wait_gone 30 kill -0 "$alive" 2>/dev/null || {
		tail -n 5 srv.log
		rdma res show qp
		dmesg | grep -v "xiw_\(create\|modify\|destroy\)" | tail -25
		fail "rping $([ "$victim" = client ] && echo server || echo client) still running after the peer was killed"
	}
	# it ended by itself, with an error or not, but not by a signal
	# (a crash of rping or of libxiw in its teardown: 129-192)
	rc=0
	wait "$alive" 2>/dev/null || rc=$?
	if [ $rc -gt 128 ] && [ $rc -le 192 ]; then
		tail -n 5 srv.log cli.log
		fail "the surviving rping died of signal $((rc - 128)) after the peer was killed"
	fi
	log "the surviving rping exited $rc: $(grep -vE '^ping data' "$([ "$victim" = client ] && echo srv.log || echo cli.log)" | tail -n 2 | cut -c 1-100 | tr '\n' '|')"
	wait_for 20 no_resources ||
		fail "resources left after kill -9 of the $victim: $(rdma res show)"
	log "kill -9 of the rping $victim: peer ended, nothing left"
}
kill_mid client
kill_mid server

# A process with a big registered (pinned) buffer killed mid-transfer.
port=$((port + 1))
ib_write_bw -R -d xiw0 -p $port -s 1048576 -n 100000 >bw-srv.log 2>&1 &
srv=$!
defer eval "kill -9 $srv 2>/dev/null || true"
wait_for 10 eval "ss -Htln | grep -q ':$port '" || fail "no ib_write_bw server"
ib_write_bw -R -d xiw0 -p $port -s 1048576 -n 100000 $A >bw-cli.log 2>&1 &
cli=$!
defer eval "kill -9 $cli 2>/dev/null || true"
wait_for 30 eval "[ \$(res_count qp) -ge 4 ]" || fail "ib_write_bw did not connect: $(cat bw-cli.log)"
# mid-transfer: 8 MiB acknowledged on the data connection's TCP socket
wait_for 30 eval "[ \$(tcp_bytes_acked $port) -ge 8388608 ]" ||
	fail "ib_write_bw moves no data: $(tail -n 5 bw-cli.log)"
kill -9 "$cli"
wait "$cli" 2>/dev/null || true
kill -9 "$srv" 2>/dev/null || true
wait "$srv" 2>/dev/null || true
wait_for 20 no_resources || fail "resources left after killing ib_write_bw: $(rdma res show)"
log "ib_write_bw killed mid-transfer: nothing left"
