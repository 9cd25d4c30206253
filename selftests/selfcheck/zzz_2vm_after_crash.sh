#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 2vm
# timeout: 30
# expect: ok
# description: runs after zz_2vm_peer_crash, in which VM b panics: the runner boots the pair again for the tests after it, and the two VMs talk
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

up=$(cut -d. -f1 /proc/uptime)
[ "$up" -lt 120 ] || fail "uptime ${up}s: not a fresh boot"
busybox ping -c 2 -W 5 "$XIW_PEER_IP" >/dev/null || fail "no ping to $XIW_PEER_IP"
peer=$(xiw_sync boot "$(cat /proc/sys/kernel/random/boot_id)")
[ -n "$peer" ] || fail "no word from the peer"
xiw_barrier end 15
log "the pair is up again, peer boot $peer"
