#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 2vm
# timeout: 240
# description: responder order between two VMs (IBA C9-28): b posts FetchAdd(X, +5), RDMA Write(X = 0), RDMA Read(X) back to back, 200 rounds, half of them behind a 512 KiB Read: the Read and the FetchAdd return 0 every round; then Atomic Write(TAIL = i), Send(i), 200 rounds: a's server finds TAIL >= i on every Send completion
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
#
# xiw_order server on a, client on b. XIW_ORDER_ROUNDS sets the rounds.

O=$(need_prog xiw_order)
xiw_load
xiw_need_provider
xiw_link_add xiw0 "$XIW_NETDEV"
wait_port_state xiw0 PORT_ACTIVE 5

ROUNDS=${XIW_ORDER_ROUNDS:-200}
SRV=10.77.0.1

if [ "$XIW_ROLE" = a ]; then
	"$O" server $SRV 7495 --rounds "$ROUNDS" --timeout 180 >srv.log 2>&1 &
	srv=$!
	wait_for 10 grep -q listening srv.log || fail "no listener: $(cat srv.log)"
	xiw_barrier listening
	src=0
	wait $srv || src=$?
	sed 's/^/# /' srv.log >&2
	xiw_sync done "" 200 >/dev/null || fail "sync with the client"
	[ $src = 0 ] || fail "server: $(grep -m1 FAIL srv.log)"
	expect_eq "$(grep -c '^ok notify' srv.log)" 2 "server checks passed"
else
	xiw_barrier listening
	crc=0
	run_timeout 190 "$O" client $SRV 7495 --rounds "$ROUNDS" >cli.log 2>&1 ||
		crc=$?
	sed 's/^/# /' cli.log >&2
	xiw_sync done "" 200 >/dev/null || fail "sync with the server"
	[ $crc = 0 ] || fail "client: $(grep -m1 FAIL cli.log || tail -1 cli.log)"
	expect_eq "$(grep -c '^ok ' cli.log)" 2 "client checks passed"
fi
