#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 180
# description: data path errors: a local protection error sends a Terminate, both QPs go to ERROR, the peer sees the Terminate; the next connection works
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

need_cmd rping ip dmesg ss
xiw_loopback

# The server's buffers are 64 bytes, the client advertises 100: the
# server's RDMA Read of 100 bytes into its 64-byte MR fails its local
# protection check. Its QP must send a Terminate (RDMAP, catastrophic),
# the client's QP must take it, and both rpings must fail, not hang.
# (The kernel log is read from a marker of this test's own: never
# `dmesg -C`, which would erase the runner's marker for its splat scan.)
kmark="xiw-test: $XIW_TEST_NAME terminate $RANDOM"
echo "$kmark" >/dev/kmsg
run_timeout 30 rping -s -a 192.0.2.1 -p 7201 -C 3 -S 64 >srv.log 2>&1 &
srv=$!
wait_listen 7201 20 $srv
# (the rping client exits 0 when its peer disconnects: judge the server)
run_timeout 30 rping -c -a 192.0.2.1 -p 7201 -C 3 -S 100 >cli.log 2>&1 || true
rv=0
wait $srv || rv=$?
cat cli.log srv.log
if [ "$rv" -eq 124 ] || [ "$rv" -eq 137 ]; then
	fail "rping server hung"
fi
# rping's server returns 0 whenever its CM thread has seen the client's
# disconnect by the time it gives up on the ping (rping_test_server():
# "state == DISCONNECTED ? 0 : ret"), however the ping ended; its exit
# status says that the Read failed only when it wins that race. Its log
# says it every time: the Read completed in error (below) and the server
# gave up waiting for it.
if [ "$rv" -eq 0 ]; then
	grep -q 'wait for RDMA_READ_COMPLETE state' srv.log ||
		fail "rping server succeeded with a too small buffer"
	log "rping server exited 0 after its Read failed: its CM thread saw the disconnect first"
fi
expect_match "$(cat srv.log)" 'cq completion failed status 4' \
	"server Read completion with IB_WC_LOC_PROT_ERR"
msgs=$(dmesg | sed -n "/$kmark/,\$p")
[ -n "$msgs" ] || fail "the kernel log lost this test's marker"
echo "$msgs" | grep -i terminate || true
expect_match "$msgs" 'QP[0-9]+: Terminate layer 0 type 0 code 0x0' "Terminate sent"
expect_match "$msgs" 'QP[0-9]+: Terminate received: layer 0 type 0 code 0x0' "Terminate received"
expect_nomatch "$msgs" 'WARNING|BUG|Oops' "kernel warnings"

# The device and the CM are fine afterwards.
run_timeout 30 rping -s -a 192.0.2.1 -p 7202 -C 3 -S 100 >srv.log 2>&1 &
srv=$!
wait_listen 7202 20 $srv
run_timeout 30 rping -c -a 192.0.2.1 -p 7202 -C 3 -S 100 -V >cli.log 2>&1 || rping_race cli.log || {
	cat cli.log srv.log
	fail "rping after the error failed"
}
wait $srv || rping_race srv.log || { cat srv.log; fail "rping server after the error failed"; }
