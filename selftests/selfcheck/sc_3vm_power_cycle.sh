#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 3vm
# timeout: 240
# expect: ok
# description: xiw_vm_power_cycle: b powers itself off inside the test for 8 s while a and c run on; both see it gone (ping fails), b boots again, runs the same test with XIW_BOOT=2 (its RAM gone, $XIW_TEST_STATE kept) and the three sync again; the 3vm tests after it still run
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

case $XIW_ROLE:${XIW_BOOT:-1} in
b:1)
	tok=tok-$RANDOM-$RANDOM
	echo "$tok" >"$XIW_TEST_STATE/token"
	echo "$tok" >/run/sc_3vm_power_cycle.ram
	xiw_sync before "$tok" 60 >/dev/null || fail "sync before"
	xiw_vm_power_cycle 8 ;;
b:2)
	[ ! -e /run/sc_3vm_power_cycle.ram ] || fail "RAM of boot 1 is still there: no reboot happened"
	up=$(cut -d. -f1 /proc/uptime)
	[ "$up" -lt 200 ] || fail "uptime ${up}s: not a fresh boot"
	tok=$(cat "$XIW_TEST_STATE/token")
	# a answers with the token it got before the power-off
	got=$(xiw_sync back "$tok" 200) || fail "sync back"
	expect_eq "$got" "$tok" "the token a got from boot 1"
	;;
[ac]:1)
	got=$(xiw_sync before . 60) || fail "sync before"
	tok=${got%% *}
	[ "$XIW_ROLE" = c ] || [[ $tok == tok-* ]] || fail "b's token before: '$tok'"
	# b goes away: its address stops answering
	t0=$(now_us)
	wait_gone 60 busybox ping -c 1 -W 1 "$XIW_IP_B" ||
		fail "b still answers pings 60 s after it powered off"
	log "b is gone ($(( ($(now_us) - t0) / 1000 )) ms after the sync)"
	got=$(xiw_sync back "$tok" 200) || fail "sync back"
	[ "$XIW_ROLE" = c ] || expect_eq "${got%% *}" "$tok" "b's token after its power cycle"
	log "b is back after $(( ($(now_us) - t0) / 1000000 )) s"
	busybox ping -c 1 -W 5 "$XIW_IP_B" >/dev/null || fail "no ping to b after it came back"
	;;
*)	fail "role $XIW_ROLE, boot ${XIW_BOOT:-unset}" ;;
esac
xiw_barrier end 60
