#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 2vm
# timeout: 60
# expect: ok
# description: xiw_sync between the two VMs, with payloads
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

for i in 1 2 3; do
	got=$(xiw_sync "step$i" "$XIW_ROLE$i") || fail "sync $i"
	case $XIW_ROLE in a) expect_eq "$got" "b$i" ;; b) expect_eq "$got" "a$i" ;; esac
done
[ -n "$XIW_NETDEV" ] || fail "no XIW_NETDEV"
busybox ping -c 1 -W 5 "$XIW_PEER_IP" >/dev/null
