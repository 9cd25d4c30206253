#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 2vm
# timeout: 200
# description: the peer dies without a FIN or RST (b stops sending anything at all, as a powered-off host) mid-transfer (rping, 64 KiB Reads/Writes) and on an idle connection (xiw_cm_tool): with llp_timeout_ms=3000 the survivor's connection ends within 3-10 s (TCP_USER_TIMEOUT with data outstanding, keepalive when idle), its programs end, no QP, cm_id or TCP socket is left, and it connects to the peer that comes back, data verified
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
#
# A real power-off would end the VM pair for every later 2vm test, so b
# "dies" as far as a can tell: tc netem drops every packet b sends
# (loss 100% on its only link): from that instant not a single segment -
# no data, ACK, FIN, RST or ICMP - reaches a. b then cleans up its side
# behind the blackhole (its processes killed, their RSTs dropped too), as
# a reboot would, and comes back as the new peer. The sync channel of the
# pair runs over the same link, so while b is dark both sides only wait
# for bounded times.

need_cmd rping tc ss
CM=$(need_prog xiw_cm_tool)
xiw_load
xiw_need_provider
P=/sys/module/$XIW_MOD/parameters
[ -w $P/llp_timeout_ms ] || fail "no llp_timeout_ms parameter"
defer eval "echo $(cat $P/llp_timeout_ms) >$P/llp_timeout_ms"
echo 3000 >$P/llp_timeout_ms	# before any connection: new sockets take it
xiw_link_add xiw0 "$XIW_NETDEV"
wait_port_state xiw0 PORT_ACTIVE 5
SRV=10.77.0.2	# b serves, a is the client (survivor) in the first case
DARK=25		# seconds b stays dark: longer than a may take

sock0=$(tcp_socks)

# dark: b sends nothing from now on; light: it does again
dark() {
	modprobe sch_netem 2>/dev/null || true
	tc qdisc add dev "$XIW_NETDEV" root netem loss 100%
	defer eval "tc qdisc del dev $XIW_NETDEV root 2>/dev/null || true"
}
light() { tc qdisc del dev "$XIW_NETDEV" root; }

# ended PID: PID (a child of ours) exited: gone or a zombie
ended() {
	local st=Z
	[ -r "/proc/$1/stat" ] && read -r _ _ st _ <"/proc/$1/stat" 2>/dev/null
	[ "$st" = Z ]
}

# a_gone WHAT PID LOG MIN: on a, PID must end between MIN ms and 10 s
# after b went dark (TCP counts the 3 s from the last segment it got from
# b: with data outstanding that is about when b went dark, on an idle
# connection the last keepalive answer, up to a probe interval, 1 s,
# before)
a_gone() {
	local t0 ms
	t0=$(now_us)
	wait_for 20 ended "$2" || fail "$1: still running 20 s after the peer died: $(tail -n 3 "$3")"
	ms=$(( ($(now_us) - t0) / 1000 ))
	log "$1: ended $ms ms after the peer died"
	[ "$ms" -ge "$4" ] || fail "$1: ended after $ms ms: faster than the 3 s timeout allows"
	[ "$ms" -le 10000 ] || fail "$1: ended after $ms ms, the bound is 10 s (3 s + keepalive or RTO slack)"
}

# a_clean: nothing of the connection left on a
a_clean() {
	wait_for 10 eval "[ -z \"\$(rdma res show qp 2>/dev/null | grep xiw0)\" ]" ||
		fail "$1: QPs left: $(rdma res show qp)"
	wait_for 10 eval "[ -z \"\$(rdma res show cm_id 2>/dev/null | grep xiw0)\" ]" ||
		fail "$1: cm_ids left: $(rdma res show cm_id)"
	wait_for 10 eval '[ "$(tcp_socks)" -le "$sock0" ]' ||
		fail "$1: TCP sockets: $(tcp_socks), $sock0 before: $(ss -tan | tr '\n' '|')"
}

# b_cleanup: b's own side, behind the blackhole, then light again
b_cleanup() {
	local p
	for p; do kill -9 "$p" 2>/dev/null || true; done
	wait_for 10 eval "[ -z \"\$(rdma res show qp 2>/dev/null | grep xiw0)\" ]" ||
		fail "b: QPs left after kill -9: $(rdma res show qp)"
	light
}

# 1. mid-transfer: a's rping client has Reads, Writes and Sends
# outstanding when b goes dark (TCP_USER_TIMEOUT)
if [ "$XIW_ROLE" = b ]; then
	rping -s -a $SRV -p 7620 -C 1000000 -S 65000 >rs1.log 2>&1 &
	rs=$!
	defer eval "kill -9 $rs 2>/dev/null || true"
	wait_listen 7620 20 $rs
	xiw_barrier listening1
	xiw_barrier die1 60
	dark
	sleep $DARK
	b_cleanup $rs
else
	xiw_barrier listening1
	rping -c -a $SRV -p 7620 -C 1000000 -S 65000 -V >rc1.log 2>&1 &
	rc=$!
	defer eval "kill -9 $rc 2>/dev/null || true"
	# transfers running: 2 MiB through the connection (16 of rping's
	# 65000-byte rounds)
	wait_for 20 eval "[ \$(tcp_bytes_acked 7620) -ge 2097152 ]" ||
		fail "rping client moves no data: $(cat rc1.log)"
	ended $rc && fail "rping client ended early: $(cat rc1.log)"
	xiw_barrier die1 60
	a_gone "rping client (transfer)" $rc rc1.log 2500
	wait $rc || true	# rping's client exits 0 after DISCONNECTED too
	expect_match "$(cat rc1.log)" 'DISCONNECT|error|fail' "rping client: the connection ended"
	log "rping client: $(tr '\n' ' ' <rc1.log | cut -c1-160)"
	a_clean transfer
fi
xiw_barrier back1 $((DARK + 60))

# 2. idle: a accepted a connection that carries nothing when b goes dark
# (keepalive, bounded by TCP_USER_TIMEOUT)
if [ "$XIW_ROLE" = a ]; then
	"$CM" server 10.77.0.1 7621 accept >cs2.log 2>&1 &
	cs=$!
	defer eval "kill -9 $cs 2>/dev/null || true"
	wait_listen 7621 20 $cs
	xiw_barrier listening2
	wait_for 20 grep -q ESTABLISHED cs2.log || fail "idle: no connection: $(cat cs2.log)"
	xiw_barrier die2 60
	a_gone "idle server" $cs cs2.log 1500
	wait $cs || true
	expect_match "$(cat cs2.log)" DISCONNECTED "idle server: disconnect reported"
	log "idle server: $(tr '\n' ' ' <cs2.log | cut -c1-200)"
	a_clean idle
else
	xiw_barrier listening2
	"$CM" client 10.77.0.1 7621 $SRV wait >cc2.log 2>&1 &
	cc=$!
	defer eval "kill -9 $cc 2>/dev/null || true"
	wait_for 20 grep -q ESTABLISHED cc2.log || fail "idle client: $(cat cc2.log)"
	xiw_barrier die2 60
	dark
	sleep $DARK
	b_cleanup $cc
fi
xiw_barrier back2 $((DARK + 60))

# 3. the survivor connects to the peer that came back, data verified
if [ "$XIW_ROLE" = b ]; then
	run_timeout 60 rping -s -a $SRV -p 7622 -C 20 -S 65000 >rs3.log 2>&1 &
	rs=$!
	wait_listen 7622 20 $rs
	xiw_barrier listening3
	wait $rs || rping_race rs3.log || fail "new server: $(cat rs3.log)"
else
	xiw_barrier listening3
	run_timeout 60 rping -c -a $SRV -p 7622 -C 20 -S 65000 -V >rc3.log 2>&1 ||
		rping_race rc3.log ||
		fail "new connection: $(cat rc3.log)"
	log "new connection to the peer that came back: 20 x 64 KiB verified"
fi
xiw_barrier done3 60
