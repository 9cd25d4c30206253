#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 300
# description: QP lifecycle and access edges: posts with more SGEs than the QP's (or SRQ's) limit fail with EINVAL at post time and the QP keeps working; QP access flags enforced for remote Write/Read/atomics (rdma_cm's defaults allow atomics); connect/accept naming another process's QP refused; a connected QP moved to RESET executes no more remote Writes/Reads and its connection is aborted (the peer sees DISCONNECTED), stays in RESET after the old connection's teardown and connects again (Write and Read checked); QP numbers are not reused at once, and connects naming QPs another thread creates and destroys are refused (EINVAL) or go out; WRs posted while the QP moves to ERROR all complete (30 connections); an SRQ in another PD than its QP takes a Send; the netdev going down aborts the connections of its QPs (no half-open socket left)
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

LC=$(need_prog xiw_lifecycle)
need_cmd ss ip
xiw_loopback

# lc TAG ARGS...: one run, its lines in the log, a failure ends the test
lc() {
	local tag=$1 rc=0
	shift
	run_timeout 120 "$LC" "$@" >"lc-$tag.log" 2>&1 || rc=$?
	sed 's/^/# /' "lc-$tag.log"
	[ "$rc" = 0 ] || fail "$tag: $(grep -m1 -E '^FAIL|xiw_lifecycle|rdma|die|srqpd' "lc-$tag.log")"
	expect_nomatch "$(cat "lc-$tag.log")" '^FAIL' "$tag"
}

# lc_case MODE PORT N MESSAGE [ARG]: one case, which must pass all of
# its N checks
lc_case() {
	local mode=$1 port=$2 want=$3 msg=$4 n
	shift 4
	lc "$mode" "$mode" 192.0.2.1 "$port" "$@"
	n=$(grep -c '^ok' "lc-$mode.log")
	[ "$n" = "$want" ] || fail "$mode: $n of $want checks ran"
	log "$msg"
}

lc_case sgelimit 7490 12 "SGEs beyond the QP's max_send_sge/max_recv_sge and the SRQ's max_sge: EINVAL at post time, bad_wr at the WR; the connection still works"
lc_case qpstate 7489 24 "a new QP shows RESET in ibv_qp::state and INIT (Idle) through ibv_query_qp; modify and query keep the field; rdma_cm's QPs are INIT, then RTS through ibv_query_qp"
lc_case recvlen 7488 4 "a Send longer than its receive: the receive LOC_LEN_ERR, the next receive flushed, the sender's QP in error"
lc_case reset 7491 7 "RTS -> RESET: no remote Write or Read executed, the peer disconnected"
lc_case reuse 7481 7 "a QP reset while connected stays in RESET and connects again"
lc_case qpnum 7482 2 "QP numbers not reused at once; connects racing QP destroys refused or sent" 300

lc flushrace flushrace 192.0.2.1 7492 30
log "30 QPs moved to ERROR while posting: every WR completed"

lc_case qpaccess 7497 14 "QP access flags enforced: Write, Read, FetchAdd refused where the QP forbids them; rdma_cm's defaults allow atomics"

# One process names another's QP number in connect and accept.
coproc VICTIM { "$LC" victim 192.0.2.1 7495 2>&1; }
vpid=$VICTIM_PID
read -r -t 30 line <&"${VICTIM[0]}" || fail "victim: no QP"
log "victim: $line"
qpn=$(awk '{ print $2 }' <<<"$line")
rc=0
run_timeout 60 "$LC" thief 192.0.2.1 7496 "$qpn" >lc-thief.log 2>&1 || rc=$?
sed 's/^/# /' lc-thief.log
[ "$rc" = 0 ] || log "thief exited with $rc"
exec {VICTIM[1]}>&-
cat <&"${VICTIM[0]}" >lc-victim.log || true
wait "$vpid" || rc=1
sed 's/^/# /' lc-victim.log
[ "$rc" = 0 ] || fail "a process could use another process's QP: $(grep -h -m1 -E 'FAIL|thief|victim' lc-thief.log lc-victim.log)"
[ "$(grep -c '^ok' lc-thief.log lc-victim.log | awk -F: '{ s += $2 } END { print s }')" = 3 ] ||
	fail "victim/thief: not every check ran"
log "connect and accept naming another process's QP refused, its QP untouched"

lc srqpd srqpd 192.0.2.1 7493
log "SRQ in another PD: the Send landed in the SRQ's buffer"

# The netdev goes down under a connected pair.
"$LC" hold 192.0.2.1 7494 20 >lc-hold.log 2>&1 &
hold=$!
wait_for 30 grep -q CONNECTED lc-hold.log || fail "hold: no connection: $(cat lc-hold.log)"
ss -Htn state established "( sport = :7494 or dport = :7494 )" >ss-before.log
[ -s ss-before.log ] || fail "no established TCP connection on port 7494 while connected"
ip link set d0 down
defer ip link set d0 up
rc=0
wait "$hold" || rc=$?
sed 's/^/# /' lc-hold.log
[ "$rc" = 0 ] || fail "netdev down: the connection was not torn down: $(tail -n1 lc-hold.log)"
wait_for 10 eval '[ -z "$(ss -Htn state established "( sport = :7494 or dport = :7494 )")" ]' ||
	fail "netdev down: TCP connection still established: $(ss -Htn '( sport = :7494 or dport = :7494 )')"
log "netdev down: both QPs disconnected, no TCP connection left"
