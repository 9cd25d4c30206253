#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 2vm
# timeout: 90
# description: two VMs on the private virtual link: ping, sync with a payload (no sync connection left in TIME_WAIT on b), TCP
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

log "role $XIW_ROLE: $XIW_NETDEV $XIW_LOCAL_IP -> $XIW_PEER_IP"
ip -br addr show dev "$XIW_NETDEV"
busybox ping -c 3 -W 5 "$XIW_PEER_IP"
# xiw_sync carries a word each way.
peer_host=$(xiw_sync hello "from-$XIW_ROLE-$(cat /proc/sys/kernel/random/boot_id)")
log "peer says $peer_host"
case $XIW_ROLE in
a) expect_match "$peer_host" '^from-b-' "peer message" ;;
b) expect_match "$peer_host" '^from-a-' "peer message" ;;
esac
# A byte stream across the link, server on a, client on b.
if [ "$XIW_ROLE" = a ]; then
	# (busybox nc quits when its stdin ends: give it one that lasts, a
	# FIFO held open by a sleep that goes once nc is done)
	mkfifo "$XIW_TEST_TMP/in"
	sleep 120 >"$XIW_TEST_TMP/in" &
	hold=$!
	busybox nc -l -p 7710 >"$XIW_TEST_TMP/got" <"$XIW_TEST_TMP/in" &
	srv=$!
	wait_listen 7710 10 $srv
	xiw_barrier listening
	wait $srv
	kill $hold
	log "received $(wc -c <"$XIW_TEST_TMP/got") bytes"
	expect_eq "$(sha256sum <"$XIW_TEST_TMP/got" | cut -d' ' -f1)" \
		"$(xiw_sync sum .)" "sha256 of the stream"
else
	head -c 1048576 /dev/urandom >"$XIW_TEST_TMP/data"
	xiw_barrier listening
	busybox nc "$XIW_PEER_IP" 7710 <"$XIW_TEST_TMP/data"
	xiw_sync sum "$(sha256sum <"$XIW_TEST_TMP/data" | cut -d' ' -f1)" >/dev/null
	# xiw_sync's connections end in TIME_WAIT on a (port
	# $XIW_SYNC_PORT), never on b, where they would hold ephemeral
	# ports that a siw client's bind to rdma_cm's port trips over
	tw=$(ss -Htan state time-wait "dport = :$XIW_SYNC_PORT")
	[ -z "$tw" ] ||
		fail "xiw_sync connections in TIME_WAIT on b: $(echo $tw | cut -c1-300)"
fi
log "ok"
