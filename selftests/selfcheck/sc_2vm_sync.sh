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

# A line that reaches a across one of xiw_sync's 1 s read steps, split at
# its blank: b writes it by hand in two parts. a must read the MSG whole
# (with the default IFS the step's trailing blank was lost: "split5b").
if [ "$XIW_ROLE" = a ]; then
	got=$(xiw_sync split5 a5) || fail "sync of a line split at its blank"
	expect_eq "$got" "b5"
else
	fd=
	for _ in $(seq 100); do
		exec {fd}<>"/dev/tcp/$XIW_PEER_IP/$XIW_SYNC_PORT" 2>/dev/null && break
		fd=
		sleep 0.1
	done
	[ -n "$fd" ] || fail "a does not listen for the split line"
	printf 'split5 ' >&"$fd"
	sleep 1.5
	printf 'b5\n' >&"$fd"
	IFS= read -r -t 10 line <&"$fd" || fail "no answer from a"
	exec {fd}>&-
	expect_eq "$line" "split5 a5"
fi
