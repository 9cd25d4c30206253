#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 2vm
# timeout: 240
# description: xiw_commit across two VMs, one connection per case: the server (responder) on a, every case as its own client connection from b - capability bits, Atomic Write byte-exact, Flush range/0 bytes/whole MR, 120 Write+Flush+Atomic Write chains watched live in a's memory, crc32c/sha256 Verify, and each error case alone with its IBA status and vendor_err; a's commit counters and the Terminates on both sides
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

need_cmd dmesg
C=$(need_prog xiw_commit)
xiw_load
xiw_need_provider
xiw_link_add xiw0 "$XIW_NETDEV"
wait_port_state xiw0 PORT_ACTIVE 5

# as in commit_cases: case:client checks; the server's 27 checks in all
CASES="caps:3 awrite:4 flush:4 chain:2 verify:7 verify-sha256:8
	verify-wrong:4 awrite-misaligned:6 awrite-noright:3 flush-noright:3
	flush-persistent:5 verify-oob:3 verify-hashlen:3 flush-badstag:3
	order-verify:5"
SERVER_CHECKS=27
ncases=$(wc -w <<<"$CASES")
SRV=10.77.0.1
dmesg_from=$(dmesg | wc -l)
# the Terminates of the refused cases, code:count (as in commit_cases)
TERMS=('type 2 code 0xff:2' 'type 1 code 0x2:3' 'type 1 code 0x1:1' 'type 1 code 0x0:1')

if [ "$XIW_ROLE" = a ]; then
	declare -A s0
	for k in flush_global flush_persistent atomic_writes verify verify_mismatch; do
		s0[$k]=$(xiw_commit_stat $k)
	done
	"$C" server $SRV 7477 --conns "$ncases" --timeout 90 >srv.log 2>&1 &
	srv=$!
	defer eval "kill $srv 2>/dev/null || true"
	wait_for 10 grep -q listening srv.log || fail "no listener: $(cat srv.log)"
	xiw_barrier listening
	src=0
	run_timeout 200 tail --pid=$srv -f /dev/null || true
	wait $srv || src=$?
	grep -v '^ok ' srv.log | sed 's/^/# server: /' || true
	[ $src = 0 ] || fail "server exited $src: $(grep -m1 -v '^ok ' srv.log)"
	expect_eq "$(grep -c '^ok ' srv.log)" $SERVER_CHECKS "server checks passed"
	grep -E '^ok server chain' srv.log | sed 's/^ok /# /'
	delta() { echo $(( $(xiw_commit_stat "$1") - s0[$1] )); }
	expect_eq "$(delta atomic_writes)" 128 "Atomic Writes executed"
	expect_eq "$(delta flush_global)" 126 "Flush G executed"
	expect_eq "$(delta flush_persistent)" 0 "Flush P executed"
	expect_eq "$(delta verify)" 15 "Verifies executed"
	expect_eq "$(delta verify_mismatch)" 1 "Verify mismatches"
	msgs=$(dmesg | tail -n +"$((dmesg_from + 1))")
	for t in "${TERMS[@]}"; do
		expect_eq "$(grep -cE "QP[0-9]+: Terminate layer 0 ${t%:*}\$" <<<"$msgs" || true)" \
			"${t##*:}" "Terminates sent: ${t%:*}"
	done
	expect_eq "$(grep -c 'Terminate layer' <<<"$msgs" || true)" 7 "Terminates sent"
else
	xiw_barrier listening
	for c in $CASES; do
		name=${c%%:*} want=${c#*:}
		rc=0
		run_timeout 60 "$C" client $SRV 7477 --case "$name" \
			>"cli-$name.log" 2>&1 || rc=$?
		grep -v '^ok ' "cli-$name.log" | sed "s/^/# $name: /" || true
		[ $rc = 0 ] || fail "$name: client exited $rc: $(grep -m1 -v '^ok ' "cli-$name.log")"
		expect_eq "$(grep -c '^ok ' "cli-$name.log")" "$want" "$name: client checks passed"
	done
	msgs=$(dmesg | tail -n +"$((dmesg_from + 1))")
	for t in "${TERMS[@]}"; do
		expect_eq "$(grep -cE "QP[0-9]+: Terminate received: layer 0 ${t%:*}\$" <<<"$msgs" || true)" \
			"${t##*:}" "Terminates received: ${t%:*}"
	done
	log "$ncases cases, $(cat cli-*.log | grep -c '^ok ') client checks"
fi
