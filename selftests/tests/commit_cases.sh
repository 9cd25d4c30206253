#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 240
# description: xiw_commit between xiw1 (client process) and xiw0 (server process), one connection per case: capability bits, Atomic Write byte-exact in both verbs forms, Flush of a range/0 bytes/the whole MR, 120 Write+Flush+Atomic Write chains watched live from the responder's memory, crc32c and sha256 Verify digests and hashes, Atomic Writes behind long Verifies never in their digest, and each error case alone (misaligned Atomic Write refused locally; no Remote Write, no flush right, persistent Flush on DRAM, Verify out of bounds, wrong Verify hash or hash length, an invalid STag refused by the peer with their IBA status and vendor_err, the WR behind flushed and never placed); the responder's commit counters match exactly
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

need_cmd dmesg
C=$(need_prog xiw_commit)
xiw_two_devices

# case:checks of the client, in the order they run; the server makes 27
# checks in all (4 caps, 3 chain, 3 flush-persistent, 2 each for awrite,
# verify, verify-sha256, verify-wrong and awrite-misaligned, 1 for the
# other seven).
CASES="caps:3 awrite:4 flush:4 chain:2 verify:7 verify-sha256:8
	verify-wrong:4 awrite-misaligned:6 awrite-noright:3 flush-noright:3
	flush-persistent:5 verify-oob:3 verify-hashlen:3 flush-badstag:3
	order-verify:5"
SERVER_CHECKS=27
ncases=$(wc -w <<<"$CASES")

declare -A s0
for k in flush_global flush_persistent atomic_writes verify verify_bytes verify_mismatch; do
	s0[$k]=$(xiw_commit_stat $k)
done
dmesg_from=$(dmesg | wc -l)

"$C" server 192.0.2.1 7476 --conns "$ncases" --timeout 60 >srv.log 2>&1 &
srv=$!
defer eval "kill $srv 2>/dev/null || true"
wait_for 10 grep -q listening srv.log || fail "no listener: $(cat srv.log)"

for c in $CASES; do
	name=${c%%:*} want=${c#*:}
	rc=0
	run_timeout 60 "$C" client 192.0.2.1 7476 --src 192.0.2.2 \
		--case "$name" >"cli-$name.log" 2>&1 || rc=$?
	grep -v '^ok ' "cli-$name.log" | sed "s/^/# $name: /" || true
	[ $rc = 0 ] || fail "$name: client exited $rc: $(grep -m1 -v '^ok ' "cli-$name.log")"
	expect_eq "$(grep -c '^ok ' "cli-$name.log")" "$want" "$name: client checks passed"
done

src=0
run_timeout 60 tail --pid=$srv -f /dev/null || true
wait $srv || src=$?
grep -v '^ok ' srv.log | sed 's/^/# server: /' || true
[ $src = 0 ] || fail "server exited $src: $(grep -m1 -v '^ok ' srv.log)"
expect_eq "$(grep -c '^ok ' srv.log)" $SERVER_CHECKS "server checks passed"
grep -E '^ok server chain' srv.log | sed 's/^ok /# /'

# Executed at the responder: Atomic Writes 2 (awrite) + 120 (chain) + 1
# (the aligned one of awrite-misaligned) + 5 (order-verify); Flush G 6
# (flush) + 120 (chain); no Flush P; Verify 4 + 4 (verify, verify-sha256)
# + 2 (verify-wrong: the right and the wrong hash, 1 mismatch) + 5
# (order-verify) over 64 KiB + 1001 + 64 KiB + 4 KiB twice, 2 x 64 KiB and
# 5 x 256 KiB. Nothing refused, flushed or with a hash of the
# wrong length (refused before digesting) was executed.
delta() { echo $(( $(xiw_commit_stat "$1") - s0[$1] )); }
expect_eq "$(delta atomic_writes)" 128 "Atomic Writes executed"
expect_eq "$(delta flush_global)" 126 "Flush G executed"
expect_eq "$(delta flush_persistent)" 0 "Flush P executed"
expect_eq "$(delta verify)" 15 "Verifies executed"
expect_eq "$(delta verify_mismatch)" 1 "Verify mismatches"
expect_eq "$(delta verify_bytes)" $(( 2 * (65536 + 1001 + 65536 + 4096) + 2 * 65536 + 5 * 262144 )) \
	"bytes verified"

# The Terminates, sent by xiw0 and received by xiw1, each as often as its
# cases: Remote Operation Error 0xff (wrong hash, hash of the wrong
# length); Remote Protection access rights (no Remote Write, no flush
# right, Flush P with the global right only), base/bounds (Verify out of
# bounds), invalid STag.
msgs=$(dmesg | tail -n +"$((dmesg_from + 1))")
for t in 'type 2 code 0xff:2' 'type 1 code 0x2:3' 'type 1 code 0x1:1' 'type 1 code 0x0:1'; do
	expect_eq "$(grep -cE "QP[0-9]+: Terminate layer 0 ${t%:*}\$" <<<"$msgs" || true)" \
		"${t##*:}" "Terminates sent: ${t%:*}"
	expect_eq "$(grep -cE "QP[0-9]+: Terminate received: layer 0 ${t%:*}\$" <<<"$msgs" || true)" \
		"${t##*:}" "Terminates received: ${t%:*}"
done
expect_eq "$(grep -c 'Terminate layer' <<<"$msgs" || true)" 7 "Terminates sent"
log "$ncases cases, $(cat cli-*.log | grep -c '^ok ') client and $SERVER_CHECKS server checks"
