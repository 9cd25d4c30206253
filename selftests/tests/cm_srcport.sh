#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 90
# description: the source port rdma_cm chose is not TCP's to give: held by a user-space TCP socket (bind EADDRINUSE) or its 4-tuple in TIME_WAIT from the previous connection (connect EADDRNOTAVAIL, without TCP timestamps); xiw connects from a port TCP picks, as an iwpmd mapping would
#
# rdma_cm picks a connection's source port in its own port space and never
# asks TCP. xiw's active socket binds that port (kernel/xiw_cm.c,
# xiw_cm_active_sock()); when TCP refuses it, the connection must still
# be made. Seen in CI as an rdma_connect() that failed with EADDRINUSE
# between two VMs. Each case pins the port with SRC/SPORT, so both are
# hit every run; the kernel's debug line shows the fallback was taken.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

need_cmd ss sysctl
T=$(need_prog xiw_cm_tool)
xiw_load
xiw_need_provider
dummy_add d0
dummy_add d1
ip addr add 10.77.4.1/24 dev d0
ip addr add 10.77.4.2/24 dev d1
xiw_link_add xiw0 d0
xiw_link_add xiw1 d1
wait_port_state xiw0 PORT_ACTIVE 5
wait_port_state xiw1 PORT_ACTIVE 5

xiw_dyndbg
# TIME_WAIT blocks a connect from an explicitly bound port only when the
# connection had no TCP timestamps (with them TCP lets the bound port
# reuse it: tcp_twsk_unique()); sites that turn timestamps off get it.
# 10.77.4.0/24 is not a loopback address, so tcp_tw_reuse 2 (Debian's
# default) does not apply; 0 makes the test independent of it.
defer sysctl -qw net.ipv4.tcp_tw_reuse="$(sysctl -n net.ipv4.tcp_tw_reuse)"
defer sysctl -qw net.ipv4.tcp_timestamps="$(sysctl -n net.ipv4.tcp_timestamps)"
sysctl -qw net.ipv4.tcp_tw_reuse=0 net.ipv4.tcp_timestamps=0

# three connections, each ended by the client (its port goes to TIME_WAIT)
"$T" server 10.77.4.1 7501 accept 3 >srv.log 2>&1 &
srv=$!
defer kill_bg "$srv"
wait_for 10 grep -q listening srv.log || fail "no listener: $(cat srv.log)"

# connect NAME SRC/SPORT: a client that must get through
connect() {
	run_timeout 20 "$T" client 10.77.4.1 7501 "$2" >"cli-$1.log" 2>&1 ||
		fail "$1: client: $(cat "cli-$1.log")"
	expect_match "$(cat "cli-$1.log")" 'ESTABLISHED status=0 pd="welcome"' "$1: connected"
}

# 1. A user-space TCP connection holds the port (no SO_REUSEADDR): bash's
#    /dev/tcp to the xiw listener (which never sees an MPA Request on
#    it), from 10.77.4.1 (a local destination is its own source). Its
#    port is found by its owner (this shell's fd 3): an earlier connection
#    to 7501 may still be in TIME_WAIT (a repeat in the same boot), and
#    its port is no user-space connection's.
#    The listener gives up on a connection that sends no MPA Request
#    after mpa_timeout_resp_ms (5 s): on a loaded host the steps below
#    took longer once, and the connection was gone before it was looked
#    at, so the test gives it a minute.
P=/sys/module/$XIW_MOD/parameters
defer eval "echo $(cat "$P/mpa_timeout_resp_ms") >$P/mpa_timeout_resp_ms"
echo 60000 >"$P/mpa_timeout_resp_ms"
exec 3<>/dev/tcp/10.77.4.1/7501 || fail "no TCP connection to 10.77.4.1:7501"
held=$(ss -Htnp state established "( dport = :7501 )" | { grep "pid=$BASHPID," || true; } |
       awk '{ sub(/.*:/, "", $3); print $3 }' | head -n 1)
[ -n "$held" ] || fail "no local port for this shell's TCP connection: $(ss -tanp)"
log "user-space TCP connection from port $held"
kmsg_mark held
connect held "10.77.4.1/$held"
expect_match "$(kmsg_since)" "port of 10\.77\.4\.1:$held taken in TCP: TCP picks one" "held: xiw took a port from TCP"
expect_match "$(ss -Htan "( sport = :$held )")" "." "held: the user-space connection is still there"
exec 3<&-

# 2. The 4-tuple of the previous connection is in TIME_WAIT: the client
#    closed first, so its side of 10.77.4.2:7502 -> 10.77.4.1:7501 waits.
connect first 10.77.4.2/7502
wait_for 10 sh -c 'ss -Htan state time-wait "( sport = :7502 and dport = :7501 )" | grep -q .' ||
	fail "no TIME_WAIT for port 7502: $(ss -tan)"
kmsg_mark tw
connect again 10.77.4.2/7502
expect_match "$(kmsg_since)" "10\.77\.4\.2:7502 -> 10\.77\.4\.1:7501 in use: TCP picks a port" "again: xiw took a port from TCP"

wait "$srv" || fail "server: $(cat srv.log)"
srv=
expect_eq "$(grep -c 'DISCONNECTED' srv.log)" 3 "server: three connections ended"
