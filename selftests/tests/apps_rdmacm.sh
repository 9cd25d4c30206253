#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 300
# description: rdma-core and libfabric applications on xiw: rping -v/-V over many iterations and sizes, ucmatose (several connections), rdma_server/rdma_client, fi_pingpong over libfabric's verbs provider (MSG and RDM endpoints, every message's data checked with -c)
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

need_cmd rping ucmatose rdma_server rdma_client fi_pingpong ip ss
xiw_loopback
A=192.0.2.1
port=7600

# rping: Send + RDMA Read + RDMA Write per iteration, payload verified
# (-V) and printed (-v): every ping line must be there and intact.
for size in 23 1000 4096 65535; do
	port=$((port + 1))
	server_bg rping 120 rping -s -a $A -p $port -C 100 -S $size -V
	run_timeout 120 rping -c -a $A -p $port -C 100 -S $size -V -v \
		>rping-cli.log 2>&1 || rping_race rping-cli.log ||
		{ cat rping-cli.log; fail "rping -S $size"; }
	server_done rping
	n=$(grep -c '^ping data: rdma-ping-' rping-cli.log)
	[ "$n" = 100 ] || fail "rping -S $size: $n ping lines, expected 100"
	# the pattern advances by one character per iteration
	expect_match "$(grep '^ping data' rping-cli.log | tail -1)" \
		"^ping data: rdma-ping-99: " "rping -S $size last line"
	log "rping -S $size: 100 verified iterations"
done

# ucmatose: 4 connections, 50 sends of 1000 bytes each way.
port=$((port + 1))
server_bg ucmatose 120 ucmatose -b $A -p $port -c 4 -C 50 -S 1000
run_timeout 120 ucmatose -s $A -p $port -c 4 -C 50 -S 1000 >ucm-cli.log 2>&1 ||
	{ cat ucm-cli.log; fail "ucmatose client"; }
server_done ucmatose
for f in ucm-cli.log ucmatose-srv.log; do
	expect_match "$(cat $f)" 'return status 0' "ucmatose $f"
	expect_match "$(cat $f)" 'data transfers complete' "ucmatose $f"
done

# rdma_server / rdma_client (librdmacm's rdma_* verbs helpers).
port=$((port + 1))
server_bg rdma_server 120 rdma_server -s $A -p $port
run_timeout 60 rdma_client -s $A -p $port >rc-cli.log 2>&1 ||
	{ cat rc-cli.log; fail "rdma_client"; }
server_done rdma_server
expect_match "$(cat rc-cli.log)" 'rdma_client: end 0' "rdma_client"
expect_match "$(cat rdma_server-srv.log)" 'rdma_server: end 0' "rdma_server"

# libfabric over its verbs provider: MSG endpoints directly, RDM through
# ofi_rxm; -c: both sides check every message's data. (fi_msg_bw is in
# fabtests, which Debian 12 does not package; make deps installs
# libfabric-bin, so a missing fi_pingpong fails.)
for ep in "-p verbs -e msg" "-p verbs;ofi_rxm -e rdm"; do
	port=$((port + 1))
	# shellcheck disable=SC2086
	server_bg fi 120 fi_pingpong $ep -B $port -I 200 -S 4096 -c
	# shellcheck disable=SC2086
	run_timeout 90 fi_pingpong $ep -P $port -I 200 -S 4096 -c $A \
		>fi-cli.log 2>&1 || { cat fi-cli.log fi-srv.log; fail "fi_pingpong $ep"; }
	server_done fi
	line=$(grep -E '^4k +200 +=200 ' fi-cli.log) ||
		{ cat fi-cli.log; fail "fi_pingpong $ep: no result line"; }
	log "fi_pingpong -c $ep: $line"
done
