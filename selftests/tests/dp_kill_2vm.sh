#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 2vm
# timeout: 150
# description: kill -9 of either side of a connection between the two VMs mid-transfer (xiw_cm_tool stream: 4 KiB RDMA Writes both ways, each read back and checked): first the client on b, then the server on a; the survivor's every WR completes (success or flush), its receives come back flushed, it exits 0 by itself; no QP, cm_id, MR or TCP socket of the connection is left on either VM; a new connection carries verified data; xiw unloads cleanly
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
#
# Both ends post: each RDMA-Writes blocks into the other's region and
# Reads them back (xiw_cm_tool's "stream" mode), so whichever process
# survives has Writes and Reads outstanding when its peer dies. The
# killed process's QP is destroyed by ib_uverbs when its file closes:
# xiw aborts the connection (RST), and the survivor's QP goes to ERROR.

need_cmd ss rdma
CM=$(need_prog xiw_cm_tool)
xiw_load
xiw_need_provider
xiw_link_add xiw0 "$XIW_NETDEV"
wait_port_state xiw0 PORT_ACTIVE 5
SRV=10.77.0.1	# a serves, b connects
sock0=$(tcp_socks)

# ended PID: PID (a child of ours) exited: gone or a zombie
ended() {
	local st=Z
	[ -r "/proc/$1/stat" ] && read -r _ _ st _ <"/proc/$1/stat" 2>/dev/null
	[ "$st" = Z ]
}
res_count() { rdma res show "$1" 2>/dev/null | grep -cE "(dev|link) xiw0[/ ]" || true; }
no_resources() {
	local r
	for r in qp cm_id mr cq pd; do
		[ "$(res_count $r)" = 0 ] || return 1
	done
}
port_socks() {
	ss -Htan "( sport = :$1 or dport = :$1 )" 2>/dev/null | grep -vc TIME-WAIT || true
}

# clean TAG PORT: nothing of the connection on PORT left on this VM
clean() {
	wait_for 15 no_resources ||
		fail "$1: resources left: $(rdma res show 2>/dev/null | grep xiw0 | tr '\n' '|')"
	wait_for 15 eval '[ "$(port_socks $2)" = 0 ]' ||
		fail "$1: sockets left: $(ss -Htan "( sport = :$2 or dport = :$2 )" | tr '\n' '|')"
	wait_for 15 eval '[ "$(tcp_socks)" -le "$sock0" ]' ||
		fail "$1: TCP sockets: $(tcp_socks), $sock0 before: $(ss -tan | tr '\n' '|')"
}

# start ROLE PORT LOG: a stream end on this VM (no wrapper: kill -9 must
# hit the program itself); pid in $sp
start() {
	if [ "$1" = server ]; then
		"$CM" stream-server $SRV "$2" 0 60 >"$3" 2>&1 &
		sp=$!
		wait_listen "$2" 20 $sp
	else
		"$CM" stream-client $SRV "$2" "$XIW_LOCAL_IP" 0 60 >"$3" 2>&1 &
		sp=$!
	fi
	defer eval "kill -9 $sp 2>/dev/null || true"
}

# survive TAG PID LOG: the survivor ends by itself within 30 s of the
# kill, exit 0, every check passed; logs how long it took
survive() {
	local t0 rc=0
	t0=$(now_us)
	wait_for 30 ended "$2" || fail "$1: survivor still running 30 s after the kill: $(tail -n 3 "$3")"
	wait "$2" || rc=$?
	sed 's/^/# /' "$3"
	[ "$rc" = 0 ] || fail "$1: survivor exit $rc: $(grep -m1 '^FAIL' "$3")"
	expect_eq "$(grep -c '^ok' "$3")" 4 "$1: survivor checks passed"
	expect_match "$(cat "$3")" '^TORN DOWN$' "$1: survivor tore down"
	expect_match "$(cat "$3")" '^ok the connection ended \((peer|error CQE)\)' "$1: the survivor saw the peer go"
	# WRs outstanding at the kill are flushed. At most one
	# other error, from a Terminate of the dying side: ib_core tears a
	# dead process's verbs objects down newest first, so its MRs go
	# before its QP. In between, a Write or Read of ours that arrives
	# finds its STag gone (remote access error), or the dying side's
	# own WR finds its local MR gone (a Read Response it cannot place,
	# an MR revoked under a WR: RDMAP catastrophic, our remote operation
	# error). The oldest WR gets that status, the rest are flushed.
	# A survivor that was not scheduled between the kill and the end of
	# the connection finds every WR of its window completed by then
	# (the dead process's QP answers until ib_uverbs destroys it) and
	# the end already reported, so it posts nothing more: no flush on its
	# SQ (seen once in CI, "6066 ok, then 0 flushed"). Its receives are
	# flushed all the same (the program checks all 16), and it said so.
	expect_match "$(cat "$3")" '^# sq: .* then [0-9]+ flushed, [01] other errors' "$1: survivor's WRs at the kill"
	grep -q ' then 0 flushed' "$3" &&
		log "$1: no SQ WR of the survivor was outstanding when it saw the end"
	if grep -q ' flushed, 1 other errors' "$3"; then
		expect_match "$(cat "$3")" '^# non-flush error CQE: remote (access|operation) error$' "$1: the one non-flush error"
	fi
	log "$1: survivor ended $(( ($(now_us) - t0) / 1000 )) ms after the kill was announced;" \
	    "$(grep -E '^# (sq|[0-9]+ blocks|the end)' "$3" | tr '\n' ' ')"
}

# victim TAG PID LOG PORT: kill -9 PID once both ends move data and its
# connection (on TCP PORT) has carried another 512 KiB since
victim() {
	local b0
	wait_for 30 grep -q '^TRAFFIC' "$3" || fail "$1: no traffic: $(cat "$3")"
	xiw_barrier "$1-flowing" 40
	b0=$(tcp_bytes_acked "$4")
	wait_for 30 eval "[ \$(tcp_bytes_acked $4) -ge $((b0 + 524288)) ]" ||
		fail "$1: the traffic stopped: $(tcp_bytes_acked "$4") bytes acked, $b0 before"
	kill -9 "$2"
	wait "$2" 2>/dev/null || true
	xiw_barrier "$1-killed" 40
}

# watcher TAG PID LOG: the survivor's side of victim
watcher() {
	wait_for 30 grep -q '^TRAFFIC' "$3" || fail "$1: no traffic: $(cat "$3")"
	xiw_barrier "$1-flowing" 40
	xiw_barrier "$1-killed" 40
	survive "$1" "$2" "$3"
}

# 1. the client (b) is killed; the server (a) survives
if [ "$XIW_ROLE" = a ]; then
	start server 7631 s1.log
	xiw_barrier listening1
	watcher kill-client $sp s1.log
else
	xiw_barrier listening1
	start client 7631 c1.log
	victim kill-client $sp c1.log 7631
fi
clean kill-client 7631
xiw_barrier clean1 60

# 2. the server (a) is killed; the client (b) survives
if [ "$XIW_ROLE" = a ]; then
	start server 7632 s2.log
	xiw_barrier listening2
	victim kill-server $sp s2.log 7632
else
	xiw_barrier listening2
	start client 7632 c2.log
	watcher kill-server $sp c2.log
fi
clean kill-server 7632
xiw_barrier clean2 60

# 3. a new connection: 2000 blocks (8 MiB each way) verified, then the
# client disconnects; both ends complete every WR
if [ "$XIW_ROLE" = a ]; then
	run_timeout 60 "$CM" stream-server $SRV 7633 0 50 >s3.log 2>&1 &
	sp=$!
	wait_listen 7633 20 $sp
	xiw_barrier listening3
	wait $sp || fail "reconnect: server: $(cat s3.log)"
	sed 's/^/# /' s3.log
	expect_match "$(cat s3.log)" '^ok the connection ended \((peer|error CQE)\)' "reconnect: server saw the disconnect"
else
	xiw_barrier listening3
	run_timeout 60 "$CM" stream-client $SRV 7633 "$XIW_LOCAL_IP" 2000 50 >c3.log 2>&1 ||
		fail "reconnect: client: $(cat c3.log)"
	sed 's/^/# /' c3.log
	expect_match "$(cat c3.log)" '^ok [0-9]+ blocks verified, then disconnected' "reconnect: client"
	log "reconnect: $(grep -E '^# [0-9]+ blocks' c3.log)"
fi
clean reconnect 7633
xiw_barrier clean3 60

# 4. xiw unloads: nothing of the three connections holds a reference
rdma_link_del xiw0
xiw_unload
log "rmmod $XIW_MOD: clean"
xiw_barrier unloaded 60
