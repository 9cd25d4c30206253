#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 240
# description: peers that stall must not hold xiw (or other connections): a peer that stops reading (TX parked mid-FPDU) and then breaks the protocol still gets its QP to ERROR and the connection closed though the Terminate cannot be sent; a peer that stops in the middle of a Write FPDU cannot make ibv_dereg_mr (or process exit) wait for it: the region is revoked, the connection ended; one that stops between the FPDUs of a Write, or leaves Read Requests for the region queued behind a parked TX, does not make it wait at all (its next FPDU is refused: invalid STag); graceful closes towards three peers that do not read hold up no other connection setup or teardown (CM work is concurrent)
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

B=$(need_prog xiw_badpeer)
T=$(need_prog xiw_target)
need_cmd ss
xiw_loopback 10.77.5.1
addr=10.77.5.1

# target TAG PORT [ARGS...]: start xiw_target on PORT, killed at exit; its
# pid in tpid once it listens
target() {
	local tag=$1 port=$2
	shift 2
	"$T" --bind $addr --port "$port" "$@" >"tgt$tag.log" 2>&1 &
	tpid=$!
	defer eval "kill $tpid 2>/dev/null || true"
	wait_for 20 grep -q LISTENING "tgt$tag.log" ||
		fail "xiw_target does not listen: $(cat "tgt$tag.log")"
}

# tcp_conns PORT: established TCP connections on PORT (xiw's kernel socket
# and the raw peer's)
tcp_conns() { ss -Htn state established "( sport = :$1 or dport = :$1 )"; }

# Small socket buffers: a peer that does not read parks xiw's TX soon.
wmem=$(sysctl -n net.ipv4.tcp_wmem)
defer sysctl -qw "net.ipv4.tcp_wmem=$wmem"
sysctl -qw net.ipv4.tcp_wmem="4096 16384 65536"

# --- 1. A Terminate TCP will not take
target 1 7320 --conns 1 --timeout 60
"$B" $addr 7320 --case stall-read --timeout 20000 >peer1.log 2>&1 &
peer1=$!
defer eval 'kill $peer1 2>/dev/null || true'
wait_for 30 grep -q STALLING peer1.log || fail "stall-read: $(cat peer1.log)"
# the peer now sleeps 12 s without reading: xiw must not wait for it
wait_for 8 grep -q 'DISCONNECTED' tgt1.log ||
	fail "a peer that does not read kept the QP out of ERROR: $(cat tgt1.log)"
expect_match "$(cat tgt1.log)" 'QPSTATE id=1 state=ERR' "target after the stall"
wait_for 5 eval '[ -z "$(tcp_conns 7320)" ]' ||
	fail "connection still established: $(tcp_conns 7320)"
log "peer not reading + IRD overflow: QP in ERROR and connection closed while the peer slept ($(grep -m1 DISCONNECTED tgt1.log))"
wait "$peer1" || true
sed 's/^/# peer: /' peer1.log | tail -n 3

# --- 2. ibv_dereg_mr while a peer stops in the middle of a Write FPDU
target 2 7321 --conns 1 --timeout 60 --dereg-on dereg.now
tgt2=$tpid
"$B" $addr 7321 --case stall-write --timeout 30000 >peer2.log 2>&1 &
peer2=$!
defer eval 'kill $peer2 2>/dev/null || true'
wait_for 30 grep -q 'SENT case=stall-write' peer2.log || fail "stall-write: $(cat peer2.log)"
# xiw's RX has taken the partial FPDU once its socket's receive queue is empty
wait_for 10 eval "ss -Htn '( sport = :7321 )' | awk '{ exit !(\$2 == 0) }'" ||
	fail "RX did not consume the partial FPDU: $(ss -Htn '( sport = :7321 )')"
touch dereg.now
wait_for 15 grep -q '^DEREG' tgt2.log ||
	fail "ibv_dereg_mr hangs while a peer holds the region mid-FPDU"
line=$(grep -m1 '^DEREG' tgt2.log)
expect_match "$line" 'rc=0' "dereg"
wait_for 10 grep -q 'DISCONNECTED' tgt2.log || fail "the stalled connection was not ended: $(cat tgt2.log)"
log "dereg with a peer stalled mid-Write: $line, connection ended"
wait "$tgt2" || true

# dereg_at_once TAG FILE WHAT: create FILE, on which target TAG
# deregisters its RW region; it must return below the 500 ms grace after
# which a holder is revoked, the connection still up. Sets line.
dereg_at_once() {
	local ms
	touch "$2"
	wait_for 15 grep -q '^DEREG' "tgt$1.log" || fail "ibv_dereg_mr $3 hangs"
	line=$(grep -m1 '^DEREG' "tgt$1.log")
	expect_match "$line" 'rc=0' "dereg $3"
	ms=$(sed -nE 's/.* ms=([0-9]+) .*/\1/p' <<<"$line")
	[ "${ms:-999}" -lt 400 ] || fail "dereg $3 waited: $line"
	! grep -q DISCONNECTED "tgt$1.log" ||
		fail "dereg $3 ended the connection: $(cat "tgt$1.log")"
}

# --- 2b. ibv_dereg_mr between the FPDUs of a Write
# RX keeps a Write's region from one FPDU to the next; dereg takes it back
# at once when RX is between FPDUs: no wait, no revoked connection, and
# the Write's next FPDU is refused like any access to a dead STag.
target 4 7324 --conns 1 --timeout 60 --dereg-on dereg2.now
tgt4=$tpid
"$B" $addr 7324 --case midwrite --hold midwrite.go --timeout 10000 >peer4.log 2>&1 &
peer4=$!
defer eval 'kill $peer4 2>/dev/null || true'
wait_for 30 grep -q HOLDING peer4.log || fail "midwrite: $(cat peer4.log)"
wait_for 10 eval "ss -Htn '( sport = :7324 )' | awk '{ exit !(\$2 == 0) }'" ||
	fail "RX did not take the first FPDU: $(ss -Htn '( sport = :7324 )')"
dereg_at_once 4 dereg2.now "between the FPDUs of a Write"
touch midwrite.go
wait "$peer4" || true
expect_match "$(cat peer4.log)" 'TERM layer=1 type=1 code=0x00' \
	"the Write's last FPDU, into the deregistered region"
wait_for 10 grep -q 'DISCONNECTED' tgt4.log || fail "no disconnect after the Terminate: $(cat tgt4.log)"
log "dereg between the FPDUs of a Write: $line, then its last FPDU refused (invalid STag)"
wait "$tgt4" || true

# --- 2c. ibv_dereg_mr while Read Requests for the region wait in the IRQ
# RX hands the region it checked a request against to TX with the IRQ
# entry; dereg takes it back from entries TX has not started: no wait,
# no revoked connection. The peer does not read: TX parks in the
# target's Sends (another buffer) or in a Response from the RO region,
# the Read Requests for the RW region wait behind.
target 5 7325 --conns 1 --timeout 60 --dereg-on dereg3.now --send-out
tgt5=$tpid
"$B" $addr 7325 --case stall-irq --timeout 20000 >peer5.log 2>&1 &
peer5=$!
defer eval 'kill $peer5 2>/dev/null || true'
wait_for 30 grep -q STALLING peer5.log || fail "stall-irq: $(cat peer5.log)"
grep -q SENDING tgt5.log || fail "target: $(cat tgt5.log)"
# irq_used: requests not answered yet; 3 or 4 leave both RW ones unstarted
irq_used() { rdma -dd res show qp link xiw0/1 2>/dev/null | sed -nE 's/.* drv_irq_used ([0-9]+).*/\1/p' | sort -n | tail -1; }
# TX is parked once neither what it owes nor the socket's send queue
# changes over a second: on a loaded machine a high irq_used can also
# mean that TX has not run yet, and it would start a RW response later.
tx_state() { echo "$(irq_used) $(ss -Htn '( sport = :7325 )' | awk '{ print $3 }')"; }
tx_parked() {
	local a b
	a=$(tx_state)
	sleep 1
	b=$(tx_state)
	u=${b%% *}
	[ "$a" = "$b" ] && [ "${u:-0}" -ge 3 ]
}
wait_for 20 tx_parked ||
	fail "TX answered the RW Read Requests or never parked, nothing to test: $(rdma -dd res show qp link xiw0/1)"
dereg_at_once 5 dereg3.now "with Read Requests for the region queued"
sleep 1
! grep -q DISCONNECTED tgt5.log || fail "dereg ended the connection of queued Read Requests: $(cat tgt5.log)"
log "dereg with 2 Read Requests for the region queued behind a parked TX (irq_used $u): $line, connection kept"
kill "$peer5" 2>/dev/null || true
wait "$peer5" || true
wait "$tgt5" || true

# --- 3. Graceful closes towards peers that do not read hold up no one
# Three connections whose TX is parked (128 KiB of Sends into closed
# windows) are closed gracefully at once: each close waits (bounded, 2 s)
# for TX to drain.
# Meanwhile other connections are set up and torn down: none may wait.
LC=$(need_prog xiw_lifecycle)
target 3 7322 --conns 3 --timeout 90 --disconnect-on disc.now --send-out
for i in 1 2 3; do
	"$B" $addr 7322 --case stall-quiet --timeout 30000 >"peer3-$i.log" 2>&1 &
	eval "p3_$i=\$!"
	defer eval "kill \$p3_$i 2>/dev/null || true"
done
for i in 1 2 3; do
	wait_for 30 grep -q STALLING "peer3-$i.log" || fail "stall-quiet $i: $(cat "peer3-$i.log")"
done
wait_for 30 eval '[ "$(grep -c SENDING tgt3.log)" = 3 ]' || fail "target: $(cat tgt3.log)"
"$LC" cycle $addr 7323 40 >cycle.log 2>&1 &
cyc=$!
wait_for 30 grep -q 'CYCLE 2 ' cycle.log || fail "cycle: $(cat cycle.log)"
touch disc.now
wait "$cyc" || fail "cycle failed: $(tail -n 3 cycle.log)"
wait_for 20 eval '[ "$(grep -c DISCONNECTED tgt3.log)" = 3 ]' ||
	fail "the stalled connections did not close: $(cat tgt3.log)"
worst=$(sed -nE 's/^WORST ms=([0-9]+)/\1/p' cycle.log)
[ -n "$worst" ] || fail "cycle: no result"
# each stalled close waits up to 2 s; three of them in one queue took 6 s
[ "$worst" -lt 3500 ] ||
	fail "a connection waited ${worst} ms behind graceful closes of stalled peers"
log "40 connections set up and torn down while 3 stalled peers closed: slowest ${worst} ms"
