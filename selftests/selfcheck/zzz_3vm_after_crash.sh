#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 3vm
# timeout: 60
# expect: ok
# description: runs after zz_3vm_peer_crash, in which VM c panics: the runner boots the three again for the tests after it, and they talk
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

up=$(cut -d. -f1 /proc/uptime)
[ "$up" -lt 150 ] || fail "uptime ${up}s: not a fresh boot"
for ip in "$XIW_IP_A" "$XIW_IP_B" "$XIW_IP_C"; do
	[ "$ip" = "$XIW_LOCAL_IP" ] || busybox ping -c 2 -W 5 "$ip" >/dev/null || fail "no ping to $ip"
done
got=$(xiw_sync boot "$(cut -c1-8 /proc/sys/kernel/random/boot_id)") || fail "no word from the others"
[ -n "$got" ] || fail "empty answer"
xiw_barrier end 15
log "the three are up again: $got"
