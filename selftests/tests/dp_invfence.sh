#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 150
# description: access ends when the consumer is told it ended: a raw peer stalls a 1 MiB Read Response through a type 2 window, invalidates the window with a Send with Invalidate, and only once the target has overwritten the region with a marker (its receive reported the invalidation) opens its TCP window: no marker byte reaches it, the response stops with an RDMAP Invalid STag Terminate; a Write FPDU half placed through a type 1 window that is unbound meanwhile places nothing more (DDP tagged Invalid STag)
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

B=$(need_prog xiw_badpeer)
T=$(need_prog xiw_target)
xiw_loopback 10.77.5.1

params=/sys/module/$XIW_MOD/parameters
defer eval "echo $(cat "$params/mpa_crc") > $params/mpa_crc"
echo 0 >"$params/mpa_crc"
# A send buffer that stays small while the peer does not read, so most of
# the response is still to be framed when the window goes away.
defer sysctl -qw net.ipv4.tcp_wmem="$(sysctl -n net.ipv4.tcp_wmem)"
sysctl -qw net.ipv4.tcp_wmem="4096 16384 65536"

addr=10.77.5.1
port=7400

# run_case NAME WINDOW_TYPE TARGET_ARGS...: target and peer in the
# background ($tpid, $ppid; logs tgt.log, peer.log); the peer waits for
# the file "hold", which this script makes once the target printed MARKED
run_case() {
	local name=$1 type=$2
	shift 2
	rm -f win.txt hold unbind tgt.log peer.log
	"$T" --bind $addr --port $port --timeout 60 --window "$type" win.txt "$@" \
		>tgt.log 2>&1 &
	tpid=$!
	defer eval "kill $tpid 2>/dev/null || true"
	wait_listen $port 10 $tpid
	"$B" $addr $port --case "$name" --foreign-file win.txt --hold hold \
		--timeout 6000 >peer.log 2>&1 &
	ppid=$!
	defer eval "kill $ppid 2>/dev/null || true"
}

# XIW_INVFENCE_CASES="read write": run only those (debugging)
cases=" ${XIW_INVFENCE_CASES:-read write} "

# 1. Read Response through a type 2 window, stalled, then invalidated by
#    the peer (Send with Invalidate through the QP it was bound through).
if [[ "$cases" == *" read "* ]]; then
run_case window-read-inv 2
wait_for 20 grep -q '^STALLED' peer.log
wait_for 20 grep -q '^MARKED id=1 after=INVALIDATED' tgt.log
touch hold
wait "$ppid" || fail "xiw_badpeer exited $?: $(tail -n 3 peer.log | tr '\n' ' ')"
wait "$tpid" || true
sed 's/^/# peer: /' peer.log | grep -v '^# peer: INFO'
sed 's/^/# target: /' tgt.log | grep -E 'WINDOW|MARKED|EVENT|WIN|RECV' | head -n 8
expect_match "$(cat tgt.log)" '^WINDOW id=1 type=2 status=0 ' "the type 2 window was bound"
expect_match "$(cat tgt.log)" '^CQE id=1 op=RECV status=0 len=16 flags=[0-9]+' "the Send with Invalidate was received"
sum=$(grep '^RSUM ' peer.log) || fail "no Read Response summary: $(tail -n 3 peer.log | tr '\n' ' ')"
bytes=$(sed -n 's/^RSUM bytes=\([0-9]*\) .*/\1/p' <<<"$sum")
# no byte read after the consumer was told: no marker, nothing else
expect_match "$sum" ' ee=0 other=0$' "Read Response bytes after the invalidation"
# the response was cut short: part of it went before the invalidation,
# and the rest was refused
[ "$bytes" -lt 1048576 ] || fail "the whole window was read ($bytes bytes) after its invalidation"
expect_match "$(cat peer.log)" '^TERM layer=0 type=1 code=0x00 hdrct=0x00 ' "Terminate: RDMAP remote protection, invalid STag"
log "window-read-inv: $bytes of 1048576 bytes sent before the invalidation, none after"
fi
[[ "$cases" == *" write "* ]] || exit 0

# 2. A Write FPDU half placed through a type 1 window that is unbound
#    before its other half arrives.
port=$((port + 1))
run_case window-write-split 1 --unbind-on unbind
wait_for 20 grep -q '^HALF' peer.log
# the first half is placed (RX takes what TCP has)
sleep 1
touch unbind
wait_for 20 grep -q '^MARKED id=1 after=UNBIND' tgt.log
touch hold
wait "$ppid" || fail "xiw_badpeer exited $?: $(tail -n 3 peer.log | tr '\n' ' ')"
wait_for 20 grep -q '^WIN id=1 ' tgt.log
kill "$tpid" 2>/dev/null || true
wait "$tpid" 2>/dev/null || true
sed 's/^/# peer: /' peer.log | grep -v '^# peer: INFO'
sed 's/^/# target: /' tgt.log | grep -E 'WINDOW|UNBOUND|MARKED|EVENT|WIN' | head -n 8
expect_match "$(cat tgt.log)" '^UNBOUND id=1 status=0$' "the type 1 window was unbound"
# nothing of the second half reached the region the consumer got back
expect_match "$(cat tgt.log)" '^WIN id=1 a5=0 ee=1048576 other=0$' "the window's region after the unbind"
expect_match "$(cat peer.log)" '^TERM layer=1 type=1 code=0x00 hdrct=0xc0 ' "Terminate: DDP tagged, invalid STag"
