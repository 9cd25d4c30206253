#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 240
# description: access ends when a kernel consumer is told it ended: a kernel ULP (xiw_ktest role=fence, one PD for all its connections) fast-registers 1 MiB of 0xa5 with IB_WR_REG_MR; a raw peer stalls a Read Response of all of it, invalidates the STag with a Send with Invalidate, and only once the ULP overwrote the region with a marker (its receive reported the invalidation) opens its TCP window: no marker byte reaches it, the response stops with an RDMAP Invalid STag Terminate; the same when the ULP invalidates the region itself (IB_WR_LOCAL_INV on another QP of the PD, the marker at its completion); a Write FPDU half placed into the region on a second connection of the PD while the first one invalidates it places nothing more (DDP tagged Invalid STag)
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

B=$(need_prog xiw_badpeer)
need_cmd insmod rmmod modinfo modprobe dmesg
KT=${XIW_KTEST_KO:-$XIW_SELFTESTS/kmod/xiw_ktest.ko}
[ "$XIW_MOD" = xiw ] || skip "the kernel test module is xiw's own"
[ -f "$KT" ] || fail "test module not built: $KT (make ktest)"
addr=10.77.6.1
xiw_loopback $addr
for m in $(modinfo -F depends "$KT" | tr , ' '); do
	[ "$m" = "$XIW_MOD" ] || modprobe "$m" || fail "modprobe $m failed"
done

params=/sys/module/$XIW_MOD/parameters
defer eval "echo $(cat "$params/mpa_crc") > $params/mpa_crc"
echo 0 >"$params/mpa_crc"
# A send buffer that stays small while the peer does not read, so most of
# the response is still to be framed when the STag goes away.
defer sysctl -qw net.ipv4.tcp_wmem="$(sysctl -n net.ipv4.tcp_wmem)"
sysctl -qw net.ipv4.tcp_wmem="4096 16384 65536"
defer eval '[ ! -d /sys/module/xiw_ktest ] || rmmod xiw_ktest'

port=7410
mark=

# klog: xiw_ktest's lines since fence_up
klog() { dmesg | sed -n "/$mark/,\$p" | grep 'xiw_ktest: ' || true; }
klog_has() { klog | grep -qE -- "$1"; }

# fence_up NAME: the kernel consumer listens on $addr:$port
fence_up() {
	rm -f win.txt win.tmp hold inv peer*.log
	mark="kapi_invfence-$1-$RANDOM-$RANDOM"
	echo "$mark" >/dev/kmsg
	run_timeout 60 insmod "$KT" role=fence server_addr=$addr port=$port ||
		fail "insmod xiw_ktest role=fence: $(klog | tail -n 3)"
}

# fence_key: once the first connection registered the region, its
# STAG:ADDR into win.txt (the peers' --foreign-file); sets $stag
fence_key() {
	wait_for 30 klog_has 'fence: registered ' ||
		fail "no region registered: $(klog | tail -n 3)"
	# whole when the peers see it (they wait for the file to exist)
	cat /sys/module/xiw_ktest/parameters/fence_key >win.tmp
	mv win.tmp win.txt
	stag=$(cut -d: -f1 win.txt)
	log "region $(cat win.txt)"
}

# fence_down: rmmod, the module's log shown and free of failures; sets $out
fence_down() {
	rmmod xiw_ktest
	out=$(klog)
	sed 's/^.*xiw_ktest: /# module: /' <<<"$out" | grep -v 'status=5 '
	expect_nomatch "$out" 'xiw_ktest: FAIL ' "xiw_ktest's log"
}

# XIW_INVFENCE_CASES="read local write": run only those (debugging)
cases=" ${XIW_INVFENCE_CASES:-read local write} "

# 1. Read Response of the whole region, stalled, then invalidated by the
#    peer (Send with Invalidate).
if [[ "$cases" == *" read "* ]]; then
fence_up read
"$B" $addr $port --case window-read-inv --foreign-file win.txt --hold hold \
	--timeout 6000 >peer.log 2>&1 &
ppid=$!
defer eval "kill $ppid 2>/dev/null || true"
fence_key
wait_for 20 grep -q '^STALLED' peer.log ||
	fail "the peer did not stall: $(tail -n 3 peer.log | tr '\n' ' ')"
wait_for 20 klog_has 'fence: MARKED conn=1 after=INVALIDATED$' ||
	fail "the consumer was not told of the invalidation: $(klog | tail -n 3)"
touch hold
wait "$ppid" || fail "xiw_badpeer exited $?: $(tail -n 3 peer.log | tr '\n' ' ')"
sed 's/^/# peer: /' peer.log | grep -v '^# peer: INFO'
fence_down
expect_match "$out" "fence: RECV conn=1 status=0 len=16 inv=$stag\$" "the Send with Invalidate was received"
expect_match "$out" 'fence: region invalidated a5=1048576 ee=0 other=0$' "the region when the consumer was told"
sum=$(grep '^RSUM ' peer.log) || fail "no Read Response summary: $(tail -n 3 peer.log | tr '\n' ' ')"
bytes=$(sed -n 's/^RSUM bytes=\([0-9]*\) .*/\1/p' <<<"$sum")
# no byte read after the consumer was told: no marker, nothing else
expect_match "$sum" ' ee=0 other=0$' "Read Response bytes after the invalidation"
[ "$bytes" -lt 1048576 ] || fail "the whole region was read ($bytes bytes) after its invalidation"
expect_match "$(cat peer.log)" '^TERM layer=0 type=1 code=0x00 hdrct=0x00 ' "Terminate: RDMAP remote protection, invalid STag"
expect_match "$out" 'fence: region at rmmod a5=0 ee=1048576 other=0$' "the region after the invalidation"
log "read: $bytes of 1048576 bytes sent before the invalidation, none after"
fi

# 2. The same Read Response, stalled, and the consumer invalidates the
#    region itself: IB_WR_LOCAL_INV on a second connection of the PD (an
#    idle raw peer), as the QP of the response cannot run it before the
#    stalled FPDU is in TCP.
if [[ "$cases" == *" local "* ]]; then
port=$((port + 1))
fence_up local
"$B" $addr $port --case read-stall --foreign-file win.txt --hold hold \
	--timeout 6000 >peer.log 2>&1 &
ppid=$!
defer eval "kill $ppid 2>/dev/null || true"
fence_key
"$B" $addr $port --case stall-quiet --timeout 2000 >peer2.log 2>&1 &
p2=$!
defer eval "kill $p2 2>/dev/null || true"
wait_for 20 grep -q '^STALLED' peer.log ||
	fail "the peer did not stall: $(tail -n 3 peer.log | tr '\n' ' ')"
wait_for 20 klog_has 'fence: connection 2 from ' ||
	fail "no second connection: $(klog | tail -n 3)"
# the response is under way when the invalidation comes
sleep 1
echo 2 >/sys/module/xiw_ktest/parameters/fence_local_inv
wait_for 20 klog_has 'fence: MARKED conn=2 after=LOCAL_INV$' ||
	fail "the local invalidation did not complete: $(klog | tail -n 3)"
touch hold
wait "$ppid" || fail "xiw_badpeer exited $?: $(tail -n 3 peer.log | tr '\n' ' ')"
sed 's/^/# peer: /' peer.log | grep -v '^# peer: INFO'
fence_down
expect_match "$out" 'fence: LOCAL_INV conn=2 status=0$' "the local invalidation's completion"
expect_match "$out" 'fence: region invalidated a5=1048576 ee=0 other=0$' "the region when the consumer was told"
sum=$(grep '^RSUM ' peer.log) || fail "no Read Response summary: $(tail -n 3 peer.log | tr '\n' ' ')"
bytes=$(sed -n 's/^RSUM bytes=\([0-9]*\) .*/\1/p' <<<"$sum")
expect_match "$sum" ' ee=0 other=0$' "Read Response bytes after the invalidation"
[ "$bytes" -lt 1048576 ] || fail "the whole region was read ($bytes bytes) after its invalidation"
expect_match "$(cat peer.log)" '^TERM layer=0 type=1 code=0x00 hdrct=0x00 ' "Terminate: RDMAP remote protection, invalid STag"
expect_match "$out" 'fence: region at rmmod a5=0 ee=1048576 other=0$' "the region after the invalidation"
log "local: $bytes of 1048576 bytes sent before the invalidation, none after"
fi
[[ "$cases" == *" write "* ]] || exit 0

# 3. Two connections of the one PD: a Write FPDU into the region half
#    placed on connection 2; connection 1 invalidates the STag; the rest
#    of the FPDU arrives.
port=$((port + 1))
fence_up write
"$B" $addr $port --case inv-foreign --foreign-file win.txt --hold inv \
	--timeout 6000 >peer1.log 2>&1 &
p1=$!
defer eval "kill $p1 2>/dev/null || true"
fence_key
"$B" $addr $port --case window-write-split --foreign-file win.txt --hold hold \
	--timeout 6000 >peer2.log 2>&1 &
p2=$!
defer eval "kill $p2 2>/dev/null || true"
wait_for 20 grep -q '^HALF' peer2.log ||
	fail "no half Write: $(tail -n 3 peer2.log | tr '\n' ' ')"
wait_for 20 klog_has 'fence: connection 2 from ' ||
	fail "no second connection: $(klog | tail -n 3)"
# the first half is placed (RX takes what TCP has)
sleep 1
touch inv
wait_for 20 klog_has 'fence: MARKED conn=1 after=INVALIDATED$' ||
	fail "the consumer was not told of the invalidation: $(klog | tail -n 3)"
touch hold
wait "$p2" || fail "xiw_badpeer (Write) exited $?: $(tail -n 3 peer2.log | tr '\n' ' ')"
wait "$p1" || fail "xiw_badpeer (Invalidate) exited $?: $(tail -n 3 peer1.log | tr '\n' ' ')"
sed 's/^/# peer 1: /' peer1.log | grep -v '^# peer 1: INFO'
sed 's/^/# peer 2: /' peer2.log | grep -v '^# peer 2: INFO'
fence_down
expect_match "$out" "fence: RECV conn=1 status=0 len=16 inv=$stag\$" "the Send with Invalidate was received on connection 1"
# the first half was in the region when the consumer was told
expect_match "$out" 'fence: region invalidated a5=1046576 ee=0 other=2000$' "the region when the consumer was told"
# nothing of the second half reached the region the consumer got back
expect_match "$out" 'fence: region at rmmod a5=0 ee=1048576 other=0$' "the region after the invalidation"
expect_match "$(cat peer2.log)" '^TERM layer=1 type=1 code=0x00 hdrct=0xc0 ' "Terminate: DDP tagged, invalid STag"
expect_nomatch "$(cat peer1.log)" '^TERM ' "the invalidating connection"
log "write: 2000 of 4000 bytes placed before the invalidation, none after"
