#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 180
# description: xiw as requester: a Terminate completes the WR it names (xiw vs xiw: Read, FetchAdd or Read with a bad rkey, then a WR behind; Read, FetchAdd, Read with a bad rkey or out of bounds, Read: the responder answers every request before the refused one, SUCCESS with the Read's data and the FetchAdd's original value and sum, the refused one REM_ACCESS_ERR 0x0100/0x0101, the rest flushed; a raw responder answering Read 1 then naming Read 2, Read 3 or nothing), earlier answered WRs keep their data, the rest flushed; hostile responses (Read Response with wrong STag/offset/length/too many bytes, atomic with wrong id or type, Flush/Verify with the wrong response): exact Terminate from xiw, the WR BAD_RESP_ERR, nothing written outside the posted sink; the bytes of a region Flush, an Atomic Write and a range Flush as xiw puts them on the wire
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

B=$(need_prog xiw_badresp)
xiw_loopback
addr=192.0.2.1

# --- xiw against xiw: the Terminate's MSN picks the WR ------------------------
# XIW_BADRESP_KEEPGOING=1: judge every case, fail at the end (a module
# under investigation: which cases fail)
bad=()
judge() {
	if [ -n "${XIW_BADRESP_KEEPGOING:-}" ]; then
		("$@") || bad+=("$2")
	else
		"$@"
	fi
}

pair_seq() {
	local seq=$1 port=$2 rc=0
	run_timeout 60 "$B" pair $addr "$port" "$seq" >"pair-$seq.log" 2>&1 || rc=$?
	sed 's/^/# /' "pair-$seq.log"
	[ "$rc" = 0 ] || fail "$seq: $(grep -m3 -E '^FAIL|usage|rdma' "pair-$seq.log" | tr '\n' '|')"
	log "$seq: the WRs before the refused one SUCCESS with their data, it REM_ACCESS_ERR with its code, the rest flushed"
}
judge pair_seq read-fadd-read 7401
judge pair_seq read-read-fadd 7402
judge pair_seq read-fadd-badread-read 7403
judge pair_seq read-fadd-oobread-read 7404

# --- a raw responder ----------------------------------------------------------
# case | the Terminate xiw must send ("layer=L type=T code=0xCC hdrct=0xHH")
# or NOTERM (a Terminate is never answered with one). Layers: 0 RDMAP,
# 1 DDP; Documentation/wire-format.md "Terminate codes for bad input".
cases=(
	"term-mid|NOTERM"
	"term-last|NOTERM"
	"term-nohdr|NOTERM"
	"rresp-stag|layer=1 type=1 code=0x00 hdrct=0xc0"
	"rresp-to|layer=1 type=1 code=0x01 hdrct=0xc0"
	"rresp-short|layer=1 type=1 code=0x01 hdrct=0xc0"
	"rresp-long|layer=1 type=1 code=0x01 hdrct=0xc0"
	"rresp-crc|layer=2 type=0 code=0x02 hdrct=0xc0"
	"rresp-aresp|layer=0 type=2 code=0x06 hdrct=0xc0"
	"aresp-id|layer=0 type=2 code=0x06 hdrct=0xc0"
	"aresp-type|layer=0 type=2 code=0x06 hdrct=0xc0"
	"flush-type|layer=0 type=2 code=0x06 hdrct=0xc0"
	"flush-rresp|layer=0 type=2 code=0x06 hdrct=0xc0"
	"verify-type|layer=0 type=2 code=0x06 hdrct=0xc0"
	"wire|NOTERM"
)
if [ -n "${XIW_BADRESP_CASES:-}" ]; then
	sel=()
	for c in "${cases[@]}"; do
		[[ " $XIW_BADRESP_CASES " != *" ${c%%|*} "* ]] || sel+=("$c")
	done
	cases=("${sel[@]}")
fi
# resp_case NAME WANT PORT: one raw responder case
resp_case() {
	local name=$1 want=$2 port=$3 rc=0 resp out
	run_timeout 40 "$B" listen $addr "$port" --case "$name" >"resp-$name.log" 2>&1 &
	resp=$!
	wait_for 10 grep -q LISTENING "resp-$name.log" || fail "$name: responder: $(cat "resp-$name.log")"
	run_timeout 40 "$B" req $addr "$port" --case "$name" >"req-$name.log" 2>&1 || rc=$?
	wait "$resp" || fail "$name: responder failed: $(tr '\n' '|' <"resp-$name.log")"
	sed "s/^/# $name req: /" "req-$name.log"
	sed "s/^/# $name resp: /" "resp-$name.log"
	[ "$rc" = 0 ] || fail "$name: requester: $(grep -m3 -E '^FAIL|rdma|die' "req-$name.log" | tr '\n' '|')"
	out=$(sed -n '/^SENT /,$p' "resp-$name.log")
	if [ "$want" = NOTERM ]; then
		expect_match "$out" '^NOTERM$' "$name: no Terminate in reply to one"
	else
		expect_eq "$(grep -c '^TERM ' <<<"$out")" 1 "$name: Terminates from xiw"
		expect_match "$out" "^TERM $want qn=2 msn=1 len=ok$" "$name: Terminate"
	fi
	expect_match "$out" '^(EOF|RESET)$' "$name: xiw closes the connection"
	expect_nomatch "$out" '^(FPDU|BADCRC|TIMEOUT|SENDFAIL)' "$name: nothing else on the wire"
	log "$name: ok"
}
port=7500
for c in "${cases[@]}"; do
	IFS='|' read -r name want <<<"$c"
	port=$((port + 1))
	judge resp_case "$name" "$want" $port
done
# the wire case: the request bytes xiw sent, as the raw responder read them
# (commit draft appendix A; Documentation/wire-format.md "Flush", "Atomic Write")
wire_bytes() {
	local w
	w=$(grep '^WIRE ' resp-wire.log)
	# a region Flush: R|G, Length 2^32 - 1 and TO 2^64 - 1, so that a peer
	# ignoring R sees a wrapping range whatever the region's size
	expect_match "$w" '^WIRE op=0xc len=0xffffffff to=0xffffffffffffffff flags=0x00000006$' "region Flush on the wire"
	# "the 64-bit data value to be written, in big-endian format"
	expect_match "$w" '^WIRE op=0x10 len=0x00000008 to=0x0000000000100040 data=0102030405060708$' "Atomic Write on the wire"
	expect_match "$w" '^WIRE op=0xc len=0x00001000 to=0x0000000000100080 flags=0x00000001$' "range Flush P on the wire"
	log "wire: region Flush R|G len 2^32-1 TO 2^64-1, Atomic Write data big-endian, range Flush P"
}
[ ! -f resp-wire.log ] || judge wire_bytes
[ ${#bad[@]} = 0 ] || fail "cases failed: ${bad[*]}"
log "ok: 2 sequences xiw vs xiw, ${#cases[@]} raw responder cases"
