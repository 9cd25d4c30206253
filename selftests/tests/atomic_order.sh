#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 150
# description: responder order on one VM (loopback): FetchAdd(X, +5), RDMA Write(X = 0), RDMA Read(X) back to back, 100 rounds, half behind a 512 KiB Read: Read and FetchAdd return 0 every round; Atomic Write(TAIL = i), Send(i), 100 rounds: the receiver finds TAIL >= i on every Send completion
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
#
# The same program as atomic_order_2vm, both ends on this VM.
# XIW_ORDER_ROUNDS sets the rounds.

O=$(need_prog xiw_order)
xiw_loopback 192.0.2.1

ROUNDS=${XIW_ORDER_ROUNDS:-100}
"$O" server 192.0.2.1 7496 --rounds "$ROUNDS" --timeout 100 >srv.log 2>&1 &
srv=$!
wait_for 10 grep -q listening srv.log || fail "no listener: $(cat srv.log)"
crc=0
run_timeout 110 "$O" client 192.0.2.1 7496 --rounds "$ROUNDS" >cli.log 2>&1 ||
	crc=$?
src=0
wait $srv || src=$?
sed 's/^/# /' cli.log srv.log >&2
[ $crc = 0 ] || fail "client: $(grep -m1 FAIL cli.log || tail -1 cli.log)"
[ $src = 0 ] || fail "server: $(grep -m1 FAIL srv.log || tail -1 srv.log)"
expect_eq "$(grep -c '^ok ' cli.log)" 2 "client checks passed"
expect_eq "$(grep -c '^ok notify' srv.log)" 2 "server checks passed"
