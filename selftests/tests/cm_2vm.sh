#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 2vm
# timeout: 90
# description: iWARP CM between two VMs (xiw <-> xiw): wildcard listen, private data, reject, disconnect, peer reset
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

T=$(need_prog xiw_cm_tool)
xiw_load
xiw_need_provider
xiw_link_add xiw0 "$XIW_NETDEV"
wait_port_state xiw0 PORT_ACTIVE 5

if [ "$XIW_ROLE" = a ]; then
	# 1: accept, then disconnect from this side
	"$T" server 0.0.0.0 7501 accept-close 1 >srv.log 2>&1 &
	srv=$!
	wait_for 10 grep -q listening srv.log || fail "no listener"
	xiw_barrier listening1
	run_timeout 30 tail --pid=$srv -f /dev/null || fail "server 1 did not end"
	wait $srv || fail "server 1: $(cat srv.log)"
	expect_match "$(cat srv.log)" 'CONNECT_REQUEST status=0 pd="hello xiw" ird=2 ord=4' "request"
	expect_match "$(cat srv.log)" 'DISCONNECTED' "disconnect"
	# 2: reject with private data
	"$T" server 0.0.0.0 7502 reject 1 >srv.log 2>&1 &
	srv=$!
	wait_for 10 grep -q listening srv.log || fail "no listener"
	xiw_barrier listening2
	wait $srv || fail "server 2: $(cat srv.log)"
	# 3: accept, then die (RST): b must see DISCONNECTED
	"$T" server 0.0.0.0 7503 accept 1 >srv.log 2>&1 &
	srv=$!
	wait_for 10 grep -q listening srv.log || fail "no listener"
	xiw_barrier listening3
	wait_for 20 grep -q ESTABLISHED srv.log || fail "no connection 3: $(cat srv.log)"
	kill -9 $srv
	wait $srv 2>/dev/null || true
	xiw_barrier done3
else
	xiw_barrier listening1
	run_timeout 30 "$T" client "$XIW_PEER_IP" 7501 "$XIW_LOCAL_IP" wait >cli.log 2>&1 ||
		fail "client 1: $(cat cli.log)"
	expect_match "$(cat cli.log)" 'ESTABLISHED status=0 pd="welcome"' "accept private data"
	xiw_barrier listening2
	run_timeout 30 "$T" client "$XIW_PEER_IP" 7502 "$XIW_LOCAL_IP" >cli.log 2>&1 ||
		fail "client 2: $(cat cli.log)"
	expect_match "$(cat cli.log)" 'REJECTED status=-104 pd="no thanks"' "reject private data"
	xiw_barrier listening3
	run_timeout 30 "$T" client "$XIW_PEER_IP" 7503 "$XIW_LOCAL_IP" wait >cli.log 2>&1 ||
		fail "client 3: $(cat cli.log)"
	expect_match "$(cat cli.log)" 'DISCONNECTED' "peer reset"
	xiw_barrier done3
fi
wait_for 10 eval "[ -z \"\$(rdma res show cm_id 2>/dev/null)\" ]" ||
	fail "cm_ids left: $(rdma res show cm_id)"
log ok
