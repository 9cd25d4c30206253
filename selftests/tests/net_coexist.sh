#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 150
# description: xiw beside siw and rxe: wildcard rdma_cm servers (rping -s without -a) work over every device whichever iWARP stack listens first, and for a device added while the server listens (and an address added after it); nvmet on 0.0.0.0 serves an NVMe-oF host over xiw; xiw's wildcard listener is bound to its netdev
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$XIW_SELFTESTS/nvmet_lib.sh"

need_cmd rping ss
xiw_load
xiw_need_provider
siw_load
modprobe rdma_rxe || skip "no rdma_rxe module"
defer modprobe -r rdma_rxe

# one /24 per device; every client talks to its own device's address
# (rdma_cm then picks that device on both ends)
dummy_add d0
dummy_add d1
dummy_add d2
ip addr add 10.77.4.1/24 dev d0
ip addr add 10.77.5.1/24 dev d1
ip addr add 10.77.6.1/24 dev d2
# rdma_cm listens on the devices in the order they were registered:
# xiw0 first, siw0 second
xiw_link_add xiw0 d0
rdma_link_add siw0 siw d1
rdma_link_add rxe0 rxe d2
wait_port_state xiw0 PORT_ACTIVE 5
wait_port_state siw0 PORT_ACTIVE 5
wait_port_state rxe0 PORT_ACTIVE 5

port=7600
# wild_server: `rping -s` without an address (a wildcard listen on every
# RDMA device) on a fresh port, in the background ($srv, srv.log), once
# it listens.
wild_server() {
	port=$((port + 1))
	run_timeout 60 rping -s -p $port -C 3 -V >srv.log 2>&1 &
	srv=$!
	wait_listen $port 20 $srv srv.log
	# iWARP listeners in the socket table: xiw's and siw's, each bound
	# to its netdev (rxe has none)
	sockets=$(ss -Hltn "sport = :$port")
	expect_match "$sockets" '%d0:' "xiw0's listener bound to d0"
	expect_match "$sockets" '%d1:' "siw0's listener bound to d1"
}
# client ADDR: rping over the device of ADDR to the server, data checked
client() {
	run_timeout 30 rping -c -a "$1" -I "$1" -p $port -C 3 -V >cli.log 2>&1 ||
		rping_race cli.log ||
		fail "rping client $1 -> wildcard server: $(tail -n 3 cli.log srv.log)"
	log "rping over $1: ok"
}
# round WHAT: one wildcard server per device, a client over each
round() {
	local a
	for a in 10.77.4.1 10.77.5.1 10.77.6.1; do
		wild_server
		client $a
		wait "$srv" || rping_race srv.log || fail "$1: wildcard server for $a failed: $(tail -n 3 srv.log)"
	done
}

round "xiw first, siw second"

# siw first, xiw second; xiw0 registered while the server listens (the
# listen rdma_cm adds for a new device)
rdma link delete xiw0
port=$((port + 1))
# no run_timeout around it: a persistent rping ends on SIGKILL only
rping -s -p $port -C 3 -V -P >srv.log 2>&1 &
srv=$!
defer eval "kill -KILL $srv 2>/dev/null || true"
wait_listen $port 20 $srv srv.log
rdma link add xiw0 type "$XIW_LINK_TYPE" netdev d0
wait_port_state xiw0 PORT_ACTIVE 5
wait_for 10 eval "ss -Hltn 'sport = :$port' | grep -q '%d0:'" ||
	fail "no xiw0 listener after xiw0 came: $(ss -Hltn "sport = :$port"; tail -n 3 srv.log)"
client 10.77.4.1
client 10.77.5.1
# an address added while the server listens is served (wildcard socket)
ip addr add 10.77.4.11/24 dev d0
client 10.77.4.11
kill -KILL "$srv"
wait "$srv" 2>/dev/null || true

round "siw first, xiw second"

# a kernel ULP's wildcard listen: nvmet-rdma on 0.0.0.0 (listens on xiw0,
# siw0 and rxe0), an NVMe-oF host over xiw0
nvmet_target 0.0.0.0 xiw-net-coexist
wait_for 10 eval "ss -Hltn 'sport = :4420' | grep -q '%d1:'" ||
	fail "nvmet has no siw0 listener: $(ss -Hltn 'sport = :4420')"
nvme_host_connect 10.77.4.1 xiw-net-coexist nr_io_queues=1,queue_size=32
nvme_rw_check 8
nvme_host_disconnect
nvmet_target_down

wait_for 10 eval "[ -z \"\$(rdma res show cm_id 2>/dev/null)\" ]" ||
	fail "cm_ids left: $(rdma res show cm_id)"
log ok
