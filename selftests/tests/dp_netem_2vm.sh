#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 2vm
# timeout: 300
# description: a link that loses and reorders, with a small MSS, payload sent by reference (tx_zcopy=auto, the default, lends the pages of user messages over 64 KiB on a link that leaves the host: tx_zcopy_sends grows on b, whose ib_write_bw Writes 128 KiB messages, and stays 0 on a, which sends 4 KiB Writes, atomics, rping's 2000-byte Writes and Read Responses): both VMs' link at MTU 576 (TCP MSS 536, the path MTU and segment size seen on xiw's sockets) and netem on each side's egress (delay 4 ms, a quarter of the packets sent at once past the delayed ones, 1% lost); across it a Write+Read stream verified block by block both ways (xiw_cm_tool, 1500 blocks of 4 KiB), RFC 7306 atomics with RDMA Read/Write and Write with Immediate (xiw_atomic: FetchAdd originals exactly 0..N-1, a CmpSwap spinlock around a Read-modify-Write counter, immediates in order) and rping -V (Sends with RDMA Read and Write, every ping validated), then 20 RDMA Writes of 128 KiB from b to a (ib_write_bw); TCP's counters show retransmissions and out-of-order segments on both VMs; xiw's FPDUs sized from the path's segment (fpdu_segments=2: bytes per FPDU at most two segment payloads); no Terminate
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$XIW_SELFTESTS/perftest_lib.sh"

C=$(need_prog xiw_cm_tool)
A=$(need_prog xiw_atomic)
need_cmd tc rping nstat ss ib_write_bw
xiw_load
xiw_need_provider

# FPDUs two segments long: longer than one, as the default's (16) are,
# and short enough that the 4 KiB blocks of the stream fill them, so the
# size check below sees whether they follow the path's MSS
fseg=/sys/module/$XIW_MOD/parameters/fpdu_segments
defer eval "echo $(cat "$fseg") >$fseg"
echo 2 >"$fseg"
mtu0=$(cat "/sys/class/net/$XIW_NETDEV/mtu")
defer ip link set "$XIW_NETDEV" mtu "$mtu0"
ip link set "$XIW_NETDEV" mtu 576
modprobe sch_netem 2>/dev/null || true
defer tc qdisc del dev "$XIW_NETDEV" root
tc qdisc add dev "$XIW_NETDEV" root netem delay 4ms reorder 25% 50% loss 1%
xiw_link_add xiw0 "$XIW_NETDEV"
wait_port_state xiw0 PORT_ACTIVE 5
nstat -n	# nstat's baseline: tcp_counter shows what follows
dmesg_from=$(dmesg | wc -l)

# tcp_counter NAME: NAME's increase since the nstat -n above
tcp_counter() { nstat -sz "$1" | awk -v n="$1" '$1 == n { print $2 }'; }

# stream_mss FILTER: "PMTU MSS" of the stream's connection (ss FILTER
# picks it) once it is established: the path MTU, and the payload of a
# full segment (536 at MTU 576, less 12 for TCP timestamps)
stream_mss() {
	wait_for 30 eval "ss -tniH state established '$1' | grep -q ' mss:'" ||
		fail "the stream's connection did not come up"
	ss -tniH state established "$1" |
		sed -n 's/.* mss:\([0-9]*\) .*pmtu:\([0-9]*\).*/\2 \1/p' | head -n 1
}

ITERS=300 LOCKS=10 IMM=16 THREADS=2
if [ "$XIW_ROLE" = a ]; then
	run_timeout 150 "$C" stream-server "$XIW_LOCAL_IP" 18650 0 140 >s.log 2>&1 &
	sp=$!
	wait_listen 18650 20 "$sp" s.log
	"$A" server "$XIW_LOCAL_IP" 7490 --conns $THREADS --errconns 0 \
		--imm $IMM --expect-a $((THREADS * ITERS)) \
		--expect-b $((THREADS * LOCKS)) --timeout 200 >a.log 2>&1 &
	ap=$!
	wait_for 10 grep -q listening a.log || fail "no atomic listener: $(cat a.log)"
	run_timeout 200 rping -s -a "$XIW_LOCAL_IP" -p 7520 -C 100 -S 2000 >r.log 2>&1 &
	rp=$!
	wait_listen 7520 20 "$rp" r.log
	xiw_barrier listening
	mss=$(stream_mss "sport = :18650")
	rc=0
	wait "$sp" || rc=$?
	[ $rc = 0 ] || fail "stream server exited $rc: $(tail -n 3 s.log | tr '\n' ' ')"
	expect_match "$(cat s.log)" '^ok [0-9]+ blocks read back intact, 0 corrupt' "stream data (server)"
	rc=0
	run_timeout 200 tail --pid=$ap -f /dev/null || true
	wait "$ap" || rc=$?
	grep -v '^ok ' a.log | sed 's/^/# /' >&2 || true
	[ $rc = 0 ] || fail "atomic server: $(grep -m1 FAIL a.log)"
	expect_eq "$(grep -c '^ok ' a.log)" $((6 + 2 * THREADS)) "atomic server checks passed"
	rc=0
	wait "$rp" || rping_race r.log || rc=$?
	[ $rc = 0 ] || { sed 's/^/# /' r.log; fail "rping server failed"; }
else
	xiw_barrier listening
	run_timeout 150 "$C" stream-client "$XIW_PEER_IP" 18650 "$XIW_LOCAL_IP" 1500 140 >c.log 2>&1 &
	cp=$!
	run_timeout 200 "$A" client "$XIW_PEER_IP" 7490 --threads $THREADS \
		--iters $ITERS --locks $LOCKS --imm $IMM >a.log 2>&1 &
	ap=$!
	mss=$(stream_mss "dport = :18650")
	rc=0
	run_timeout 200 rping -c -a "$XIW_PEER_IP" -p 7520 -C 100 -S 2000 -V >r.log 2>&1 ||
		rping_race r.log || rc=$?
	[ $rc = 0 ] || { sed 's/^/# /' r.log; fail "rping client failed (a ping not validated?)"; }
	rc=0
	wait "$cp" || rc=$?
	sed 's/^/# stream client: /' c.log
	[ $rc = 0 ] || fail "stream client exited $rc"
	expect_match "$(cat c.log)" '^ok [0-9]+ blocks verified, then disconnected' "stream client"
	expect_match "$(cat c.log)" '^ok [0-9]+ blocks read back intact, 0 corrupt' "stream data"
	rc=0
	wait "$ap" || rc=$?
	grep -v '^ok ' a.log | sed 's/^/# /' >&2 || true
	[ $rc = 0 ] || fail "atomic client: $(grep -m1 FAIL a.log)"
	expect_eq "$(grep -c '^ok ' a.log)" $((THREADS * 5)) "atomic client checks passed"
fi
# Writes of more than 64 KiB from b, over the same link: tx_zcopy=auto
# lends their pages (below)
perftest_2vm_run result a xiw0 ib_write_bw -s 131072 -n 20 >/dev/null
[ "$XIW_ROLE" = a ] || log "b: ib_write_bw -s 131072 over the link: $PERFTEST_ROWS"
retrans=$(tcp_counter TcpRetransSegs)
ofo=$(tcp_counter TcpExtTCPOFOQueue)
read -r pmtu seg <<<"$mss"
log "$XIW_ROLE: stream socket: path MTU $pmtu, segments of $seg bytes; TCP retransmitted $retrans segments, queued $ofo out of order"
expect_eq "$pmtu" 576 "the stream's path MTU"
[ "$seg" -le 536 ] || fail "the stream's segments carry $seg bytes: more than MSS 536"
# FPDUs are sized from the path's segment (RFC 5044's MULPDU, times
# fpdu_segments): a path MTU of 576 shortens them, whatever the
# netdev's MTU was when the module learnt of it
nseg=$(cat "$fseg")
fpdus=$(xiw_counter tx_fpdus) bytes=$(xiw_counter tx_bytes)
log "$XIW_ROLE: xiw sent $fpdus FPDUs, $bytes bytes, $((bytes / (fpdus ? fpdus : 1))) per FPDU ($nseg segments allowed)"
[ "$fpdus" -gt 0 ] || fail "xiw sent no FPDU"
[ $((bytes / fpdus)) -le $((seg * nseg)) ] ||
	fail "FPDUs of $((bytes / fpdus)) bytes on average: larger than the $((seg * nseg)) bytes of $nseg segments"
# tx_zcopy=auto (the default) lends payload pages to TCP on a connection
# that leaves the host, for user messages of more than 64 KiB: b's 128
# KiB Writes went by reference, while a's stream of 4 KiB Writes, its
# atomics, rping's 2000-byte Writes and the Read Responses (copied in any
# mode) were copied
expect_eq "$(cat "/sys/module/$XIW_MOD/parameters/tx_zcopy")" auto "tx_zcopy by default"
zsends=$(xiw_counter tx_zcopy_sends)
log "$XIW_ROLE: $zsends sendmsg calls lent payload pages (tx_zcopy=auto, off the host)"
if [ "$XIW_ROLE" = b ]; then
	[ "$zsends" -gt 0 ] || fail "tx_zcopy=auto copied on a link that leaves the host: tx_zcopy_sends 0"
else
	expect_eq "$zsends" 0 "tx_zcopy_sends of messages of 64 KiB or less (tx_zcopy=auto)"
fi
[ "${retrans:-0}" -gt 0 ] || fail "no TCP retransmission: the link lost nothing"
[ "${ofo:-0}" -gt 0 ] || fail "no out-of-order segment: the link reordered nothing"
expect_eq "$(dmesg | tail -n +"$((dmesg_from + 1))" | grep -c 'Terminate' || true)" 0 "Terminates"
