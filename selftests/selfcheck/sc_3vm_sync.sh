#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 3vm
# timeout: 90
# expect: ok
# description: xiw_sync among the three VMs with payloads (a gets b's and c's, b and c get a's), the addresses of the three roles, and the shared segment: every VM pings the two others, b and c directly
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

[ -n "$XIW_NETDEV" ] || fail "no XIW_NETDEV"
case $XIW_ROLE in
a) expect_eq "$XIW_LOCAL_IP" "$XIW_IP_A" "a's address"; expect_eq "$XIW_PEER_IP" "$XIW_IP_B" "a's peer" ;;
b) expect_eq "$XIW_LOCAL_IP" "$XIW_IP_B" "b's address"; expect_eq "$XIW_PEER_IP" "$XIW_IP_A" "b's peer" ;;
c) expect_eq "$XIW_LOCAL_IP" "$XIW_IP_C" "c's address"; expect_eq "$XIW_PEER_IP" "$XIW_IP_A" "c's peer" ;;
*) fail "role $XIW_ROLE" ;;
esac
for i in 1 2 3; do
	got=$(xiw_sync "step$i" "$XIW_ROLE$i") || fail "sync $i"
	case $XIW_ROLE in
	a) expect_eq "$got" "b$i c$i" "a's sync $i" ;;
	*) expect_eq "$got" "a$i" "$XIW_ROLE's sync $i" ;;
	esac
done
for ip in "$XIW_IP_A" "$XIW_IP_B" "$XIW_IP_C"; do
	[ "$ip" != "$XIW_LOCAL_IP" ] || continue
	busybox ping -c 1 -W 5 "$ip" >/dev/null || fail "no ping from $XIW_ROLE to $ip"
done
# every VM got there before any leaves
xiw_barrier pinged 30
# no IPv6 address of the segment failed DAD on its own looped-back frames
expect_nomatch "$(ip -6 addr show dev "$XIW_NETDEV")" 'dadfailed' "IPv6 addresses of $XIW_NETDEV"
