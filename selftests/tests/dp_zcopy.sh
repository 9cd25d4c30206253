#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 400
# description: a completion means the buffer is free: 64 KiB RDMA Writes and Sends from one buffer reused right after a later (or their own) signaled completion, every byte checked at the peer; copying TX (tx_zcopy=auto, the default, copies on loopback; values other than 0, 1, auto refused) and zero-copy TX completed on TCP's release (tx_zcopy=1), without and with netem delay and loss on the path (retransmissions from the pages), MPA CRC off and on; copying TX goes through the QP's TX pages (counted); zero copy proven used (tx_zcopy_sends > 0 with tx_zcopy=1, 0 without), each zero-copy FPDU whole in one sendmsg (tx_sendmsg below 1.5x the hand-offs); the error paths: a zero-copy Write TCP still holds when the connection closes completes only once TCP let go of its pages (64 KiB, and 16 MiB of which TX still holds the rest; the peer never sees bytes written after the completion)
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

ZC=$(need_prog xiw_zcreuse)
xiw_loopback
P=/sys/module/$XIW_MOD/parameters
# auto by default: zero copy only for connections that leave the host,
# so this loopback connection copies (the first run below)
expect_eq "$(cat "$P/tx_zcopy")" auto "tx_zcopy by default"
defer sh -c "echo auto > $P/tx_zcopy; echo 0 > $P/mpa_crc"
for bad in 2 '' autox; do
	! echo "$bad" >"$P/tx_zcopy" 2>/dev/null || fail "tx_zcopy took '$bad'"
done
expect_eq "$(cat "$P/tx_zcopy")" auto "tx_zcopy after refused values"

# zcreuse TAG PORT ROUNDS: one run, its lines in the log, a failure ends the test
zcreuse() {
	local rc=0
	run_timeout 300 "$ZC" 192.0.2.1 "$2" "$3" 65536 >"zc-$1.log" 2>&1 || rc=$?
	sed 's/^/# /' "zc-$1.log"
	[ "$rc" = 0 ] || fail "$1: $(grep -m1 -E '^FAIL|xiw_zcreuse|rdma|die' "zc-$1.log")"
	expect_match "$(cat "zc-$1.log")" "^ok $3 messages of 65536 bytes" "$1"
	log "$1: $3 x 64 KiB from one reused buffer arrived intact"
}

# tx_zcopy_sends: sendmsg calls that handed payload pages to TCP by
# reference (xiw_tx_zc_uarg()): none while TX copies, some once it does
hw=/sys/class/infiniband/xiw0/ports/1/hw_counters
zsends() { cat "$hw/tx_zcopy_sends"; }
z0=$(zsends)
zcreuse copy 7481 64
expect_eq $(( $(zsends) - z0 )) 0 "tx_zcopy_sends of TX on loopback with tx_zcopy=auto"
echo 1 >"$P/tx_zcopy"
expect_eq "$(cat "$P/tx_zcopy")" 1 "tx_zcopy after 'echo 1'"
z0=$(zsends)
s0=$(cat "$hw/tx_sendmsg_calls")
zcreuse zcopy 7482 64
z1=$(zsends)
s1=$(cat "$hw/tx_sendmsg_calls")
[ $(( z1 - z0 )) -gt 0 ] || fail "zero copy did not run: tx_zcopy_sends $z0 -> $z1 for 64 messages of 64 KiB"
log "zero-copy TX: $(( z1 - z0 )) payload hand-offs by reference in $(( s1 - s0 )) sendmsg calls for 64 messages of 64 KiB"
# A zero-copy FPDU goes to TCP whole, header and trailer lent from the TX
# pages with its payload: one sendmsg, not three (header, payload, trailer
# apart); the few others are the peer's acks and the setup's Sends.
[ $(( s1 - s0 )) -lt $(( (z1 - z0) * 3 / 2 )) ] ||
	fail "zero-copy FPDUs not sent whole: $(( s1 - s0 )) sendmsg calls for $(( z1 - z0 )) zero-copy hand-offs"

# The link drops and delays segments: TCP queues clones behind netem and
# retransmits lost segments from the pages it still references.
modprobe sch_netem || fail "modprobe sch_netem"
tc qdisc add dev lo root netem delay 2ms loss 3% || fail "tc netem on lo"
defer tc qdisc del dev lo root
zcreuse netem-zcopy 7483 128

echo 1 >"$P/mpa_crc"
zcreuse netem-zcopy-crc 7484 64
echo 0 >"$P/mpa_crc"

echo 0 >"$P/tx_zcopy"
z0=$(zsends)
zcreuse netem-copy 7485 64
# copying TX puts these FPDUs in the QP's TX pages (xiw_tx_pages.c), which
# TCP references like zero-copy pages: with CRC on, a page written again
# while a retransmission could still read it would fail the peer's CRC
echo 1 >"$P/mpa_crc"
zcreuse netem-copy-crc 7486 64
echo 0 >"$P/mpa_crc"
expect_eq $(( $(zsends) - z0 )) 0 "tx_zcopy_sends of copying TX (netem, CRC off and on)"
pf=$(cat "$hw/tx_page_fpdus")
[ "$pf" -gt 0 ] || fail "no FPDU went through the TX pages"
log "TX pages: $pf FPDUs; $(cat "$hw/tx_pages_busy") copied by TCP while all 64 pages were in flight"

# The error paths: every segment is dropped, a zero-copy Write is posted
# (TCP holds its pages, unacknowledged), the connection is closed, the
# buffer is scribbled over as soon as the WR completes (with any status),
# then segments pass again. A completion that came while TCP still held
# the pages lets TCP retransmit the scribble to the peer, whose QP is
# still connected.
# zcflush TAG PORT SIZE: one --flush run, as zcreuse
zcflush() {
	local rc=0
	run_timeout 120 "$ZC" 192.0.2.1 "$2" --flush \
		"tc qdisc replace dev lo root netem loss 100%" \
		"tc qdisc replace dev lo root netem delay 1ms" \
		"$3" >"zc-$1.log" 2>&1 || rc=$?
	sed 's/^/# /' "zc-$1.log"
	[ "$rc" = 0 ] || fail "$1: $(grep -m1 -E '^FAIL|xiw_zcreuse|rdma|die|command' "zc-$1.log")"
	expect_match "$(cat "zc-$1.log")" "^ok flushed zero-copy Write" "$1"
	log "$1: $(grep -m1 '^# completion' "zc-$1.log" | sed 's/^# //')"
}
echo 1 >"$P/tx_zcopy"
tc qdisc replace dev lo root netem delay 1ms
zcflush zcopy-close 7487 65536
# 16 MiB: more than TCP takes, so TX also holds the WR's notifier, parked
# in the middle of it, when the connection closes
zcflush zcopy-close-16m 7488 16777216
echo 0 >"$P/tx_zcopy"
