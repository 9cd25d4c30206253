#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 180
# description: xiw in network namespaces: a device on a veth end inside a netns (link added from inside it), rping between the netns and init_net both ways, a netdev moved to another netns takes its device away, the netns deleted under a wildcard listener and with a device in it (nothing left, no hang); `rdma system set netns exclusive`: device invisible in the netns until `rdma dev set ... netns`, then only there, rping over it, back to init_net when the netns goes
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

need_cmd rping ss ip
xiw_load
xiw_need_provider
modprobe veth || skip "no veth module"

NS=xiwns$$
in_ns() { ip netns exec "$NS" "$@"; }
# ns_del NAME: `ip netns del NAME` unless it is gone (the cleanup form)
ns_del() { [ ! -e "/run/netns/$1" ] || ip netns del "$1"; }
# rdma_devs [NS]: the RDMA device names seen from init_net or from NS
rdma_devs() {
	if [ -n "${1:-}" ]; then
		ip netns exec "$1" rdma dev show | awk '{ print $2 }' | tr -d :
	else
		rdma dev show | awk '{ print $2 }' | tr -d :
	fi
}
# listening NS|- PORT: a TCP listener on PORT in NS (- = init_net)
listening() {
	if [ "$1" = - ]; then
		ss -Hltn "sport = :$2" | grep -q .
	else
		ip netns exec "$1" ss -Hltn "sport = :$2" | grep -q .
	fi
}
# veth_ns: vA (10.77.8.1, init_net) <-> vB (10.77.8.2, in $NS)
veth_ns() {
	ip netns add "$NS"
	defer ns_del "$NS"
	in_ns ip link set lo up
	ip link add vA type veth peer name vB
	defer netdev_del vA
	ip link set vB netns "$NS"
	ip addr add 10.77.8.1/24 dev vA
	ip link set vA up
	in_ns ip addr add 10.77.8.2/24 dev vB
	in_ns ip link set vB up
}
port=7700
# rping_ns SERVER_NS CLIENT_NS: wildcard `rping -s` in SERVER_NS, client
# in CLIENT_NS towards the other end of the veth (- = init_net)
rping_ns() {
	local sns=$1 cns=$2 dst=10.77.8.2 src=10.77.8.1 sx=() cx=()
	port=$((port + 1))
	[ "$sns" = - ] || sx=(ip netns exec "$sns")
	[ "$cns" = - ] || cx=(ip netns exec "$cns")
	if [ "$sns" = - ]; then dst=10.77.8.1 src=10.77.8.2; fi
	run_timeout 60 "${sx[@]}" rping -s -p $port -C 3 -V >srv.log 2>&1 &
	srv=$!
	wait_for 20 listening "$sns" $port || fail "no rping listener in $sns: $(cat srv.log)"
	run_timeout 30 "${cx[@]}" rping -c -a $dst -I $src -p $port -C 3 -V >cli.log 2>&1 ||
		rping_race cli.log ||
		fail "rping $cns -> $sns ($src -> $dst): $(tail -n 3 cli.log srv.log)"
	wait "$srv" || rping_race srv.log || fail "rping server in $sns: $(tail -n 3 srv.log)"
	log "rping $cns ($src) -> $sns ($dst): ok"
}

# --- shared mode (ib_core's default): devices are seen from every netns
expect_match "$(rdma system show)" 'netns shared' "ib_core in shared netns mode"

veth_ns
# a netdev that moves to another netns takes its device with it
ip link add vC type veth peer name vD
defer netdev_del vC
xiw_link_add xiw2 vC
ip link set vC netns "$NS"
wait_gone 10 ib_dev_exists xiw2 || fail "xiw2 stayed after its netdev left init_net"
in_ns ip link del vC

# xiw1 on vB, added from inside the netns (rdma_nl finds vB there)
in_ns rdma link add xiw1 type "$XIW_LINK_TYPE" netdev vB
defer rdma_link_del xiw1
xiw_link_add xiw0 vA
wait_port_state xiw0 PORT_ACTIVE 5
wait_port_state xiw1 PORT_ACTIVE 5
expect_match "$(rdma_devs "$NS" | tr '\n' ' ')" 'xiw0 .*xiw1|xiw1 .*xiw0' "both devices seen from the netns (shared mode)"
expect_fail rdma dev set xiw1 netns "$NS"	# only in exclusive mode

rping_ns "$NS" -	# server in the netns over xiw1, client in init_net over xiw0
rping_ns - "$NS"
# the server in the netns listens on every device: xiw1's socket is in
# the netns, bound to vB; xiw0's in init_net, bound to vA
# (ip netns exec execs rping: $! is rping's pid)
ip netns exec "$NS" rping -s -p $((port + 1)) -C 1 >srv.log 2>&1 &
srv=$!
wait_for 20 listening "$NS" $((port + 1)) || fail "no listener: $(cat srv.log)"
wait_for 10 listening - $((port + 1)) || fail "no xiw0 listener in init_net"
expect_match "$(in_ns ss -Hltn "sport = :$((port + 1))")" '%vB:' "xiw1's listener in the netns"
expect_match "$(ss -Hltn "sport = :$((port + 1))")" '%vA:' "xiw0's listener in init_net"
kill "$srv"
wait "$srv" 2>/dev/null || true
port=$((port + 1))

# The netns deleted while an init_net wildcard server holds a listening
# socket in it (on xiw1): the socket keeps the netns until the server
# ends; then the netns, its veth end and both devices go away.
port=$((port + 1))
rping -s -p $port -C 1 >srv.log 2>&1 &
srv=$!
wait_listen $port 20 $srv
wait_for 10 listening "$NS" $port || fail "no xiw1 listener in the netns"
ip netns del "$NS"
# the netns' stack still runs: a connection over xiw0 to its address
# reaches xiw1's listener there, and rdma_cm in init_net (the server's)
# refuses it, not having that address (a dismantled netns would have
# taken vA and both devices with it: no route, no device)
rc=0
run_timeout 30 rping -c -a 10.77.8.2 -I 10.77.8.1 -p $port -C 1 >cli.log 2>&1 || rc=$?
[ $rc != 0 ] || fail "rping to the deleted netns' address succeeded"
expect_match "$(cat cli.log)" 'RDMA_CM_EVENT_REJECTED' "refused by the server's rdma_cm after the netns was deleted"
ib_dev_exists xiw1 || fail "xiw1 gone while its listener holds the netns"
[ -e /sys/class/net/vA ] || fail "the netns went while xiw's listener was in it"
kill "$srv"
wait "$srv" 2>/dev/null || true
wait_gone 30 test -e /sys/class/net/vA || fail "vA left after the netns went"
wait_gone 10 ib_dev_exists xiw1 || fail "xiw1 left after the netns went"
wait_gone 10 ib_dev_exists xiw0 || fail "xiw0 left after its veth went"

# --- exclusive mode: a device belongs to one netns
# every other netns must be gone first (the deleted one is dismantled
# asynchronously)
wait_for 30 rdma system set netns exclusive 2>/dev/null ||
	fail "rdma system set netns exclusive refused: $(rdma system set netns exclusive 2>&1)"
defer eval 'wait_for 30 rdma system set netns shared 2>/dev/null || rdma system set netns shared'
expect_match "$(rdma system show)" 'netns exclusive' "exclusive mode"

NS=xiwnx$$
veth_ns
xiw_link_add xiw0 vA
# rdma link add from inside the netns: ib_core 6.12 registers every new
# device in init_net, so the netns does not see it until it is moved
in_ns rdma link add xiw1 type "$XIW_LINK_TYPE" netdev vB
defer rdma_link_del xiw1
expect_nomatch "$(rdma_devs "$NS")" 'xiw1' "new device not in the netns yet"
expect_match "$(rdma_devs)" 'xiw1' "new device in init_net"
rdma dev set xiw1 netns "$NS"
expect_match "$(rdma_devs "$NS")" 'xiw1' "xiw1 in the netns"
expect_nomatch "$(rdma_devs "$NS")" 'xiw0' "xiw0 not in the netns"
expect_nomatch "$(rdma_devs)" 'xiw1' "xiw1 no longer in init_net"
expect_fail rdma link delete xiw1	# from init_net: not its device any more
wait_port_state xiw0 PORT_ACTIVE 5
wait_for 5 eval "in_ns rdma link show xiw1/1 | grep -q ACTIVE" ||
	fail "xiw1 not active in the netns: $(in_ns rdma link show)"

rping_ns "$NS" -
rping_ns - "$NS"

# The netns deleted with xiw1 in it (no process left there): ib_core
# moves xiw1 back to init_net, then the veth goes and takes both devices.
ip netns del "$NS"
# ib_core moves xiw1 out before the netns' netdevs go
wait_gone 30 test -e /sys/class/net/vA || fail "vA left after the netns went"
wait_gone 10 ib_dev_exists xiw1 || fail "xiw1 left after its netns went"
wait_gone 10 ib_dev_exists xiw0 || fail "xiw0 left after its veth went"
wait_for 30 eval "[ -z \"\$(rdma res show cm_id 2>/dev/null)\" ]" ||
	fail "cm_ids left: $(rdma res show cm_id)"
log ok
