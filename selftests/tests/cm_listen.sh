#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 120
# description: iWARP CM listeners: two devices, wildcard and specific, IPv4/IPv6, parallel connections, listener destroyed with half-open connections, unanswered request rejected after mpa_timeout_accept_ms
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

need_cmd ss
T=$(need_prog xiw_cm_tool)
P=$(need_prog xiw_mpa_peer)
xiw_load
xiw_need_provider
dummy_add d0
dummy_add d1
ip addr add 10.77.3.1/24 dev d0
ip addr add 10.77.3.2/24 dev d1
ip -6 addr add fd00:77:3::1/64 dev d0 nodad
ip -6 addr add fd00:77:3::2/64 dev d1 nodad
xiw_link_add xiw0 d0
xiw_link_add xiw1 d1
wait_port_state xiw0 PORT_ACTIVE 5
wait_port_state xiw1 PORT_ACTIVE 5

params=/sys/module/$XIW_MOD/parameters
defer eval "echo $(cat "$params/mpa_timeout_resp_ms") > $params/mpa_timeout_resp_ms"
xiw_dyndbg
# kmsg_us ERE: the kernel time stamp (us) of the first line since the mark
# that matches ERE; empty if none
kmsg_us() {
	kmsg_since | grep -m1 -E -- "$1" |
		sed -nE 's/^\[ *([0-9]+)\.([0-9]{6})\].*/\1\2/p' | sed 's/^0*//'
}

# listen ADDR PORT COUNT: server in the background ($srv, srv-PORT.log)
listen() {
	"$T" server "$1" "$2" accept-close "$3" >"srv-$2.log" 2>&1 &
	srv=$!
	wait_for 10 grep -q listening "srv-$2.log" || fail "no listener on $1 $2"
}
# connect DST PORT SRC: one connection, closed by the server
connect() {
	run_timeout 20 "$T" client "$1" "$2" "$3" wait >"cli-$2-$3.log" 2>&1 ||
		fail "client $3 -> $1:$2: $(cat "cli-$2-$3.log")"
	expect_match "$(cat "cli-$2-$3.log")" 'ESTABLISHED status=0 pd="welcome"' "$3 -> $1:$2"
}

# Wildcard listener: rdma_cm listens on every device; each xiw device has
# a socket on the wildcard address bound to its netdev (so that siw's
# sockets, bound the same way, coexist). A bound listener answers through
# its netdev only, so its clients are on the same device; a specific
# address (7402) serves a client on the other device (through lo).
kmsg_mark wild
listen 0.0.0.0 7401 2
wild=$srv
expect_match "$(kmsg_since)" 'xiw0: .*listening on 0.0.0.0:7401 \(shared\)' "xiw0 wildcard listener"
expect_match "$(kmsg_since)" 'xiw1: .*listening on 0.0.0.0:7401 \(shared\)' "xiw1 wildcard listener"
expect_match "$(ss -Hltn "sport = :7401")" '%d0:' "xiw0's socket bound to d0"
expect_match "$(ss -Hltn "sport = :7401")" '%d1:' "xiw1's socket bound to d1"
# A specific-address listener on another port of xiw1, IPv6 ones too.
listen 10.77.3.2 7402 1
spec=$srv
listen :: 7403 2
wild6=$srv
connect 10.77.3.1 7401 10.77.3.1
connect 10.77.3.2 7401 10.77.3.2
connect 10.77.3.2 7402 10.77.3.1
connect fd00:77:3::1 7403 fd00:77:3::1
connect fd00:77:3::2 7403 fd00:77:3::2
for p in $wild $spec $wild6; do
	run_timeout 10 tail --pid="$p" -f /dev/null || fail "server $p did not end"
	wait "$p" || fail "server $p failed"
done

# Parallel connections to one listener.
listen 10.77.3.1 7404 6
par=$srv
pids=()
for i in 1 2 3 4 5 6; do
	run_timeout 30 "$T" client 10.77.3.1 7404 10.77.3.2 wait >"par-$i.log" 2>&1 &
	pids+=($!)
done
for i in 1 2 3 4 5 6; do
	wait "${pids[i - 1]}" || fail "parallel client $i: $(cat "par-$i.log")"
	expect_match "$(cat "par-$i.log")" 'DISCONNECTED' "parallel client $i"
done
wait "$par" || fail "parallel server: $(cat srv-7404.log)"

# A listener destroyed while connections wait for their MPA Request:
# they are closed at once, not left to the timer.
echo 20000 >"$params/mpa_timeout_resp_ms"
kmsg_mark halfopen
listen 10.77.3.1 7405 1
hl=$srv
"$P" connect 10.77.3.1 7405 silent >peer1.log 2>&1 &
p1=$!
"$P" connect 10.77.3.1 7405 silent >peer2.log 2>&1 &
p2=$!
wait_for 10 eval "[ \$(kmsg_since | grep -c 'xiw_cep_accept_conns: accepted') = 2 ]" ||
	fail "half-open connections not accepted"
kill "$hl"
wait "$hl" 2>/dev/null || true
wait "$p1" "$p2" || fail "raw peers failed"
for f in peer1.log peer2.log; do
	ms=$(sed -n 's/^closed after \([0-9]*\) ms.*/\1/p' "$f")
	[ -n "$ms" ] && [ "$ms" -lt 15000 ] || fail "$f: not closed with the listener: $(cat "$f")"
done

# A request the server never answers is rejected after
# mpa_timeout_accept_ms; the late accept fails, nothing is left behind.
defer eval "echo $(cat "$params/mpa_timeout_accept_ms") > $params/mpa_timeout_accept_ms"
echo 1000 >"$params/mpa_timeout_accept_ms"
kmsg_mark hold
"$T" server 10.77.3.1 7406 hold >srv-7406.log 2>&1 &
hold=$!
wait_for 10 grep -q listening srv-7406.log || fail "no listener on 7406"
t0=$(now_us)
run_timeout 20 "$T" client 10.77.3.1 7406 10.77.3.2 >cli-hold.log 2>&1 ||
	fail "client of the unanswered request: $(cat cli-hold.log)"
ms=$((($(now_us) - t0) / 1000))
expect_match "$(cat cli-hold.log)" 'REJECTED' "unanswered request"
# Timed in the kernel, from the CONNECT_REQUEST upcall to the reject (no
# process start-up in it): the timer's 1000 ms, and well before the
# server's accept 3 s after it got the request.
t_req=$(kmsg_us 'event 1 status 0 ')
t_rej=$(kmsg_us 'not accepted within 1000 ms: rejected')
[ -n "$t_req" ] && [ -n "$t_rej" ] ||
	fail "no CONNECT_REQUEST or reject in the kernel log: $(kmsg_since | tail -n 20)"
kms=$(( (t_rej - t_req) / 1000 ))
log "unanswered request: rejected $kms ms after its CONNECT_REQUEST (client run: $ms ms)"
[ "$kms" -ge 950 ] && [ "$kms" -lt 2900 ] ||
	fail "rejected $kms ms after the CONNECT_REQUEST (accept timeout 1000)"
wait "$hold" || fail "hold server: $(cat srv-7406.log)"
expect_match "$(cat srv-7406.log)" 'ACCEPT rv=-1 errno=[1-9]' "late accept"
expect_match "$(kmsg_since)" 'not accepted within 1000 ms: rejected' "accept timeout reason"
[ -z "$(ss -Htn state established "( sport = :7406 or dport = :7406 )")" ] ||
	fail "connection left open: $(ss -Htn)"

wait_for 10 eval "[ -z \"\$(rdma res show cm_id 2>/dev/null)\" ]" ||
	fail "cm_ids left: $(rdma res show cm_id)"
# Devices go away with their listeners and connections gone.
rdma link delete xiw1
rdma link delete xiw0
log ok
