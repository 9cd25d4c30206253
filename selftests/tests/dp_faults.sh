#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 240
# description: faults under traffic (Sends and Writes, a window of 64, selective signaling): xiw's TCP socket reset (ss -K, SOCK_DESTROY) and the netdev flapping down and up; every WR posted completes (success or flush), nothing leaks (module_unload), and a new connection carries data again, every byte checked
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

LC=$(need_prog xiw_lifecycle)
ZC=$(need_prog xiw_zcreuse)
need_cmd ss ip
xiw_loopback

# traffic TAG PORT: start traffic, wait until data flows
traffic() {
	"$LC" traffic 192.0.2.1 "$2" 60 >"tr-$1.log" 2>&1 &
	trpid=$!
	defer eval "kill $trpid 2>/dev/null || true"
	wait_for 30 grep -q TRAFFIC "tr-$1.log" || fail "$1: no traffic: $(cat "tr-$1.log")"
}

# settle TAG: the traffic program ends; every WR completed
settle() {
	local rc=0
	wait "$trpid" || rc=$?
	sed 's/^/# /' "tr-$1.log"
	[ "$rc" = 0 ] || fail "$1: $(grep -m1 -E '^FAIL|xiw_lifecycle|rdma|no completion' "tr-$1.log")"
	[ "$(grep -c '^ok' "tr-$1.log")" = 2 ] || fail "$1: not every check ran"
}

# again TAG PORT: a new connection carries data, every byte checked
again() {
	run_timeout 120 "$ZC" 192.0.2.1 "$2" 8 65536 >"zc-$1.log" 2>&1 ||
		fail "$1: no new connection: $(cat "zc-$1.log")"
	expect_match "$(cat "zc-$1.log")" '^ok 8 messages' "$1 reconnect"
}

# 1. xiw's TCP connection is reset under it
traffic rst 7601
ss -K "( sport = :7601 or dport = :7601 )" >/dev/null ||
	fail "ss -K could not destroy the sockets"
settle rst
again rst 7602
log "TCP reset under traffic: every WR completed, a new connection works"

# 2. the netdev goes down and up again under traffic
traffic flap 7603
ip link set d0 down
ip link set d0 up
wait_port_state xiw0 PORT_ACTIVE 10
settle flap
again flap 7604
log "netdev down/up under traffic: every WR completed, a new connection works"
