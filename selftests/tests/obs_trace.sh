#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 240
# description: tracepoints (tracefs instance, events/xiw): rping over one device gives one xiw_fpdu_tx per FPDU counted and one xiw_fpdu_rx with the same header fields for each, Send MSNs 1 to 6, Read/Write STags, CM state changes and MPA done with the 4-tuple mirrored, closes, successful completions of the right opcodes; a hostile peer's bad MSN gives xiw_term_tx with the Terminate it decoded, its own Terminate gives xiw_term_rx, the flushed receives xiw_cqe WR_FLUSH_ERR; events disabled, nothing is recorded
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

need_cmd rping
B=$(need_prog xiw_badpeer)
T=$(need_prog xiw_target)
xiw_loopback

tr=/sys/kernel/tracing
if [ ! -d $tr/events ]; then
	mount -t tracefs tracefs $tr || skip "no tracefs in this kernel"
	defer umount $tr
fi
[ -d $tr/events/xiw ] || fail "no events/xiw in tracefs: $(ls $tr/events | tr '\n' ' ')"
for e in xiw_cm_state xiw_cm_mpa_done xiw_cm_close xiw_fpdu_tx xiw_fpdu_rx \
	 xiw_term_tx xiw_term_rx xiw_cqe; do
	[ -f $tr/events/xiw/$e/format ] || fail "event $e missing"
done
# an instance of our own: the global buffer stays untouched
inst=$tr/instances/xiw_obs_trace
mkdir $inst
defer rmdir $inst
defer eval "echo 0 >$inst/events/xiw/enable"
echo 8192 >$inst/buffer_size_kb
echo 1 >$inst/events/xiw/enable
expect_eq "$(cat $inst/events/xiw/xiw_fpdu_tx/enable)" 1 "xiw_fpdu_tx enabled"

hw=/sys/class/infiniband/xiw0/ports/1/hw_counters
tx0=$(cat $hw/tx_fpdus)
rx0=$(cat $hw/rx_fpdus)

# --- 1. rping: 3 rounds of Send, RDMA Read, RDMA Write
run_timeout 60 rping -s -a 192.0.2.1 -C 3 -S 100 -v >srv.log 2>&1 &
srv=$!
wait_listen 7174 20 $srv
run_timeout 60 rping -c -a 192.0.2.1 -C 3 -S 100 -v -V >cli.log 2>&1 ||
	rping_race cli.log ||
	fail "rping client: $(cat cli.log srv.log)"
wait $srv || rping_race srv.log || fail "rping server: $(cat srv.log)"
# the CM closes asynchronously: wait for both ends' CLOSED
wait_for 10 eval "[ \"\$(grep -c 'xiw_cm_state:.* -> CLOSED' $inst/trace)\" -ge 2 ]" ||
	fail "no CLOSED for both ends: $(grep xiw_cm_ $inst/trace)"
echo 0 >$inst/tracing_on
cat $inst/trace >rping.trace
tx1=$(cat $hw/tx_fpdus)
rx1=$(cat $hw/rx_fpdus)
grep -m 12 xiw_ rping.trace | sed 's/^/# /'

count() { grep -c "$1" rping.trace || true; }
expect_eq "$(count 'xiw_fpdu_tx:')" $((tx1 - tx0)) "xiw_fpdu_tx events = FPDUs counted (tx_fpdus)"
expect_eq "$(count 'xiw_fpdu_rx:')" $((rx1 - rx0)) "xiw_fpdu_rx events = FPDUs counted (rx_fpdus)"
[ $((tx1 - tx0)) -ge 12 ] || fail "only $((tx1 - tx0)) FPDUs"
# both ends are xiw0: every FPDU sent arrived with the same header fields
hdrs() { sed -n "s/.*$1: [^ ]* qpn=[0-9]* //p" rping.trace | sort; }
expect_eq "$(hdrs xiw_fpdu_tx | md5sum)" "$(hdrs xiw_fpdu_rx | md5sum)" \
	"headers sent = headers received"
for op in send read_req read_resp write; do
	expect_match "$(hdrs xiw_fpdu_tx)" "^$op " "FPDUs of opcode $op"
done
# tagged FPDUs carry an STag, untagged ones none; Read Requests go on QN 1
expect_nomatch "$(hdrs xiw_fpdu_tx)" '^(write|read_resp) .* T.* stag=0x0 ' "tagged FPDU without STag"
expect_nomatch "$(hdrs xiw_fpdu_tx)" '^(send|read_req) .* T' "untagged FPDU marked tagged"
expect_match "$(hdrs xiw_fpdu_tx)" '^read_req len=[0-9]+ UL stag=0x0 to=0x0 qn=1 msn=1 mo=0$' "first Read Request"
# the client's Sends (rping: two per round, its buffer for the Read and for
# the Write) have MSN 1, 2, ... 6 on QN 0
mpa=$(grep 'xiw_cm_mpa_done:' rping.trace)
expect_eq "$(grep -c . <<<"$mpa")" 2 "xiw_cm_mpa_done events"
cqpn=$(sed -n 's/.*xiw_cm_mpa_done: [^ ]* cep=[^ ]* qpn=\([0-9]*\) active .*/\1/p' <<<"$mpa")
sqpn=$(sed -n 's/.*xiw_cm_mpa_done: [^ ]* cep=[^ ]* qpn=\([0-9]*\) passive .*/\1/p' <<<"$mpa")
[[ $cqpn =~ ^[0-9]+$ && $sqpn =~ ^[0-9]+$ && $cqpn != "$sqpn" ]] || fail "QPs of mpa_done: $mpa"
expect_eq "$(sed -n "s/.*xiw_fpdu_tx: [^ ]* qpn=$cqpn send .* qn=0 msn=\([0-9]*\) mo=0$/\1/p" rping.trace | tr '\n' ' ')" \
	"1 2 3 4 5 6 " "MSNs of the client's Sends"
# MPA: revision 2, the 4-tuple of one end mirrored at the other
[[ $mpa =~ active\ ([0-9.:]+)\ -\>\ ([0-9.:]+)\ rev=2 ]] || fail "active mpa_done: $mpa"
a_src=${BASH_REMATCH[1]} a_dst=${BASH_REMATCH[2]}
expect_eq "$a_dst" 192.0.2.1:7174 "client's peer"
expect_match "$mpa" "passive $a_dst -> $a_src rev=2 crc=0 " "server's mpa_done mirrors the client's"
# CM state walks
st=$(grep 'xiw_cm_state:' rping.trace)
for walk in "qpn=$cqpn active IDLE -> CONNECTING" "qpn=$cqpn active CONNECTING -> AWAIT_MPAREP" \
	    "qpn=$cqpn active AWAIT_MPAREP -> RDMA_MODE" "qpn=0 passive IDLE -> AWAIT_MPAREQ" \
	    "qpn=0 passive AWAIT_MPAREQ -> RECVD_MPAREQ" "qpn=$sqpn passive RECVD_MPAREQ -> AWAIT_RTR" \
	    "qpn=$sqpn passive AWAIT_RTR -> RDMA_MODE" "qpn=$cqpn active [A-Z_]+ -> CLOSED" \
	    "qpn=$sqpn passive [A-Z_]+ -> CLOSED" "passive IDLE -> LISTEN" "passive LISTEN -> CLOSED"; do
	expect_match "$st" "$walk" "CM state change $walk"
done
expect_nomatch "$st" " ([A-Z_]+) -> \\1$" "a CM state change to the same state"
expect_match "$(grep 'xiw_cm_close:' rping.trace)" "qpn=($cqpn|$sqpn) in (RDMA_MODE|CLOSING) status=" "xiw_cm_close"
# completions: all successful, each opcode rping uses, on the two QPs
cqe=$(grep 'xiw_cqe:' rping.trace)
# (the receives still posted at the end are flushed)
expect_eq "$(grep -vE ' (SUCCESS|recv WR_FLUSH_ERR) ' <<<"$cqe" | grep -c . || true)" 0 \
	"completions neither SUCCESS nor flushed receives"
expect_match "$cqe" "qpn=$cqpn wr_id=0x[0-9a-f]+ send SUCCESS" "client Send completion"
expect_match "$cqe" "qpn=$cqpn wr_id=0x[0-9a-f]+ recv SUCCESS len=16 " "client Recv completion (16-byte buffer advert)"
expect_match "$cqe" "qpn=$sqpn wr_id=0x[0-9a-f]+ read SUCCESS" "server Read completion"
expect_match "$cqe" "qpn=$sqpn wr_id=0x[0-9a-f]+ write SUCCESS" "server Write completion"
expect_nomatch "$cqe" "qpn=$cqpn .* (read|write) SUCCESS" "a Read or Write completion on the client"

# --- 2. Terminates: a bad MSN (xiw sends one), a Terminate from the peer
echo >$inst/trace
echo 1 >$inst/tracing_on
echo 0 >/sys/module/xiw/parameters/mpa_crc
"$T" --bind 192.0.2.1 --port 7490 --conns 3 --timeout 100 >tgt.log 2>&1 &
tgt=$!
defer eval "kill $tgt 2>/dev/null || true"
wait_for 20 grep -q LISTENING tgt.log || fail "xiw_target: $(cat tgt.log)"
run_timeout 30 "$B" 192.0.2.1 7490 --case badmsn --timeout 6000 >badmsn.log 2>&1 ||
	fail "badpeer badmsn: $(cat badmsn.log)"
peer=$(grep -m1 '^TERM ' badmsn.log) || fail "badpeer saw no Terminate: $(cat badmsn.log)"
[[ $peer =~ ^TERM\ layer=([0-9])\ type=([0-9])\ code=0x([0-9a-f]+) ]] || fail "TERM line: $peer"
want="layer=$(echo rdmap ddp mpa | cut -d' ' -f$((BASH_REMATCH[1] + 1))) type=0x${BASH_REMATCH[2]} code=0x${BASH_REMATCH[3]}"
expect_eq "$want" "layer=ddp type=0x2 code=0x03" "the Terminate for a bad MSN (RFC 5041)"
wait_for 10 grep -q xiw_term_tx: $inst/trace || fail "no xiw_term_tx: $(grep xiw_ $inst/trace | tail)"
expect_match "$(grep xiw_term_tx: $inst/trace)" "qpn=[0-9]+ $want hdrct=MD$" "xiw_term_tx = the Terminate the peer received"
expect_match "$(grep xiw_fpdu_tx: $inst/trace)" " terminate len=[0-9]+ UL .* qn=2 msn=1 mo=0$" "the Terminate FPDU (QN 2, MSN 1)"
# the target's 16 posted receives are flushed
wait_for 10 eval "[ \"\$(grep -c 'xiw_cqe:.* recv WR_FLUSH_ERR' $inst/trace)\" -ge 16 ]" ||
	fail "flushed receives: $(grep -c xiw_cqe: $inst/trace) completions"

run_timeout 30 "$B" 192.0.2.1 7490 --case term --timeout 6000 >term.log 2>&1 ||
	fail "badpeer term: $(cat term.log)"
wait_for 10 grep -q xiw_term_rx: $inst/trace || fail "no xiw_term_rx: $(grep xiw_ $inst/trace | tail)"
expect_match "$(grep xiw_term_rx: $inst/trace)" "qpn=[0-9]+ layer=rdmap type=0x0 code=0x00 hdrct=$" "xiw_term_rx: RDMAP catastrophic"
log "$(grep -m1 xiw_term_tx: $inst/trace)"
log "$(grep -m1 xiw_term_rx: $inst/trace)"

# --- 3. events off: nothing recorded
echo 0 >$inst/events/xiw/enable
n=$(grep -c xiw_ $inst/trace)
run_timeout 30 "$B" 192.0.2.1 7490 --case good >good.log 2>&1 || fail "good peer: $(cat good.log)"
expect_eq "$(grep -c xiw_ $inst/trace)" "$n" "events recorded while disabled"
