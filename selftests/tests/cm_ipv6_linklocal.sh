#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 180
# description: rdma_cm over IPv6 link-local addresses with a scope id: rping between fe80::2%d0 and fe80::1%d0 on xiw0 (Send, RDMA Read and Write, ten pings verified on both sides, -V checks the data read back); without a scope id rdma_connect fails with EINVAL (the kernel's TCP refuses a link-local bind without an interface), and with the scope of another interface (lo) rdma_resolve_addr fails with ENETUNREACH
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

need_cmd rping ip ss
xiw_loopback
ip -6 addr add fe80::1/64 dev d0 nodad
ip -6 addr add fe80::2/64 dev d0 nodad

# -v prints every ping received; -V: the client checks the data it reads
# back and exits non-zero on a mismatch.
run_timeout 60 rping -s -a 'fe80::1%d0' -p 7310 -v -C 10 -S 100 >srv.log 2>&1 &
srv=$!
defer eval "kill $srv 2>/dev/null || true"
wait_listen 7310 20 $srv
expect_match "$(ss -ltnH 'sport = :7310')" '\[fe80::1\]%d0:7310' "rping's listener"
run_timeout 60 rping -c -a 'fe80::1%d0' -I 'fe80::2%d0' -p 7310 -v -V -C 10 -S 100 \
	>cli.log 2>&1 || rping_race cli.log || {
	sed 's/^/# /' cli.log srv.log
	fail "rping client over fe80::2%d0 -> fe80::1%d0 failed"
}
wait $srv || rping_race srv.log || { sed 's/^/# /' srv.log; fail "rping server failed"; }
expect_eq "$(grep -c 'ping data: rdma-ping-' cli.log)" 10 "pings seen by the client"
expect_eq "$(grep -c 'ping data: rdma-ping-' srv.log)" 10 "pings seen by the server"
log "fe80::2%d0 -> fe80::1%d0: 10 pings, data verified"

# The errors, against a listener that stays up.
run_timeout 90 rping -s -a 'fe80::1%d0' -p 7311 -v -C 1 -S 100 >srv2.log 2>&1 &
srv=$!
defer eval "kill $srv 2>/dev/null || true"
wait_listen 7311 20 $srv
# no scope id: the address resolves, the connect is refused (rping then
# waits for an event that never comes: its timeout ends it)
rc=0
run_timeout 20 rping -c -a 'fe80::1' -p 7311 -C 1 -S 100 >noscope.log 2>&1 || rc=$?
[ "$rc" != 0 ] || fail "rping to fe80::1 without a scope id succeeded"
expect_match "$(cat noscope.log)" '^rdma_connect: Invalid argument$' "no scope id"
# the scope of another interface: no route
rc=0
run_timeout 20 rping -c -a 'fe80::1%lo' -p 7311 -C 1 -S 100 >lo.log 2>&1 || rc=$?
[ "$rc" != 0 ] || fail "rping to fe80::1%lo succeeded"
expect_match "$(cat lo.log)" '^rdma_resolve_addr: Network is unreachable$' "scope of another interface"
log "no scope id: rdma_connect EINVAL; scope lo: rdma_resolve_addr ENETUNREACH"
