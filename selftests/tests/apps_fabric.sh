#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 180
# description: libfabric message bandwidth (xiw_fi_msg_bw, a verified fi_msg_bw) over the verbs provider's MSG endpoints on xiw: 1 B..1 MiB, an odd size with a tiny window, and a corrupted message that must be caught
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

need_prog xiw_fi_msg_bw
xiw_loopback
A=192.0.2.1
port=9228

# The verbs provider must offer xiw0 for MSG endpoints (libxiw through
# RDMAV_DRIVERS; no other RDMA device exists in the VM).
if command -v fi_info >/dev/null; then
	fi_info -p verbs -t FI_EP_MSG >fi_info.log 2>&1 ||
		{ cat fi_info.log; fail "fi_info -p verbs: no MSG endpoint"; }
	expect_match "$(grep 'domain:' fi_info.log)" 'domain: xiw0$' "fi_info -p verbs"
fi

# bw NAME [EXPECT_RC] CLIENT_ARGS...: one server/client pair; the logs are
# NAME-srv.log and NAME-cli.log; both must exit with EXPECT_RC (0).
bw() {
	local name=$1 want=0 srv rc_s=0 rc_c=0
	shift
	if [[ $1 =~ ^[0-9]+$ ]]; then want=$1; shift; fi
	port=$((port + 1))
	# a plain command, not run_timeout: a function in the background
	# would print the ERR trap's message into the log when it exits 1
	timeout -k 2 120 xiw_fi_msg_bw -s $A -p $port >"$name-srv.log" 2>&1 &
	srv=$!
	wait_for 10 grep -q '^listening on' "$name-srv.log" ||
		{ cat "$name-srv.log"; fail "$name: server not listening"; }
	run_timeout 120 xiw_fi_msg_bw $A -p $port "$@" >"$name-cli.log" 2>&1 || rc_c=$?
	wait "$srv" || rc_s=$?
	if [ "$rc_c" != "$want" ] || [ "$rc_s" != "$want" ]; then
		sed "s/^/  cli: /" "$name-cli.log"
		sed "s/^/  srv: /" "$name-srv.log"
		fail "$name: client exit $rc_c, server exit $rc_s, expected $want"
	fi
	for f in "$name-srv.log" "$name-cli.log"; do
		expect_match "$(grep '^info ' "$f")" ' prov=verbs domain=xiw0 ' "$f"
	done
}

# check_sizes NAME SIZE...: one "bw" line per size on both sides, with
# a nonzero rate and no error, then "ok" (bash matching only: a grep per
# check costs ~60 ms under TCG).
check_sizes() {
	local name=$1 f s l line n lines
	shift
	for f in "$name-srv.log" "$name-cli.log"; do
		mapfile -t lines <"$f"
		n=0
		for l in "${lines[@]}"; do
			if [[ $l == FAIL* ]]; then cat "$f"; fail "$f: $l"; fi
			if [[ $l == "bw "* ]]; then n=$((n + 1)); fi
		done
		[ "$n" = $# ] || { cat "$f"; fail "$f: $n bw lines, expected $#"; }
		for s in "$@"; do
			line=
			for l in "${lines[@]}"; do
				if [[ $l == "bw bytes=$s "* ]]; then line=$l; fi
			done
			[ -n "$line" ] || { cat "$f"; fail "$f: no line for $s bytes"; }
			[[ $line =~ \ MB/s=([0-9]+\.[0-9]+)\  && ${BASH_REMATCH[1]} =~ [1-9] ]] ||
				fail "$f: $s bytes: no nonzero rate: $line"
			[[ $line == *" errors=0" ]] || fail "$f: $s bytes: $line"
		done
		[[ ${lines[-1]} =~ ^ok\ [0-9]+\ messages ]] ||
			{ cat "$f"; fail "$f: does not end with ok"; }
	done
}

# Every power of 4 from 1 B to 1 MiB, window 64.
t0=$(now_us)
bw all
check_sizes all 1 4 16 64 256 1024 4096 16384 65536 262144 1048576
log "all sizes in $(( ($(now_us) - t0) / 1000 )) ms; client:"
grep '^bw ' all-cli.log | sed 's/^/  /'
log "server:"
grep '^bw ' all-srv.log | sed 's/^/  /'

# An odd size (several FPDUs, a partial last word) with a 3-message window:
# credits come back one at a time.
bw odd -S 12345 -W 3 -I 300
check_sizes odd 12345
log "odd size, window 3: $(grep '^bw ' odd-cli.log)"

# The verification must catch a message whose payload is wrong: the client
# flips byte 2048 of message 100; both sides must end with FAIL.
bw corrupt 1 -S 4096 -I 200 --selftest-corrupt
expect_match "$(cat corrupt-cli.log)" '^selftest: corrupted byte 2048 of message seq=100$' "corrupt client"
expect_match "$(cat corrupt-srv.log)" '^FAIL message seq=100 \(size 4096, #100 of it\): byte 2048 is ' "corrupt server"
expect_eq "$(grep -c '^FAIL message' corrupt-srv.log)" 1 "corrupt messages found"
expect_match "$(tail -n 1 corrupt-srv.log)" '^FAIL 1 of 200 messages corrupt$' "corrupt server verdict"
expect_match "$(tail -n 1 corrupt-cli.log)" '^FAIL the server found 1 of 200 messages corrupt$' "corrupt client verdict"
log "corrupted message detected: $(grep '^FAIL message' corrupt-srv.log)"
