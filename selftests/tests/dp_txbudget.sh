#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 240
# description: a TX pass that may sleep (the TX work, a doorbell) ends at its byte budget: 1 MiB RDMA Writes over lo (FPDUs of up to 64 KiB), each pass traced (xiw_tx_pass); at tx_budget_kb=1024 (the default) and 64 no such pass frames more than the budget plus one FPDU, and passes stop at the bytes with work left and fewer than 64 FPDUs; at 0 (FPDU count only) passes run past 1 MiB, so the trace sees long passes; every run completes with perftest's report sane
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$XIW_SELFTESTS/perftest_lib.sh"

need_cmd ib_write_bw
xiw_loopback

param=/sys/module/$XIW_MOD/parameters/tx_budget_kb
[ -w "$param" ] || fail "no writable $param"
kb0=$(cat "$param")
expect_eq "$kb0" 1024 "tx_budget_kb's default"
defer eval "echo $kb0 >$param"

xiw_trace_instance xiw_txbudget 16384
inst=$XIW_TRACE_INST
[ -f $inst/events/xiw/xiw_tx_pass/format ] || fail "no xiw_tx_pass event"
defer eval "echo 0 >$inst/events/xiw/xiw_tx_pass/enable"

# The longest FPDU: an MPA ULPDU of 65534 bytes, its length field, pad
# and CRC (RFC 5044); the pass that crosses its budget ends after it.
FPDU_MAX=65540

# stream KB: 1 MiB Writes with tx_budget_kb=KB, the passes of the
# runners that may sleep ("run=work") into passes-KB ("FPDUS BYTES
# LEFT" per line)
stream() {
	local kb=$1 r bw lost
	echo "$kb" >"$param"
	expect_eq "$(cat "$param")" "$kb" "tx_budget_kb"
	echo >$inst/trace
	echo 1 >$inst/events/xiw/xiw_tx_pass/enable
	r=$(perftest_local xiw0 192.0.2.1 ib_write_bw -s 1048576 -n 200)
	echo 0 >$inst/events/xiw/xiw_tx_pass/enable
	bw=$(awk '{ print $4 }' <<<"$r")
	log "tx_budget_kb=$kb: $r"
	awk -v b="$bw" 'BEGIN { exit !(b > 0) }' || fail "tx_budget_kb=$kb: no bandwidth in '$r'"
	lost=$(xiw_trace_lost $inst)
	[ "$lost" = 0 ] ||
		log "tx_budget_kb=$kb: the trace buffer overran ($lost events lost, later passes kept)"
	sed -n 's/.*xiw_tx_pass: xiw0 qpn=[0-9]* run=work fpdus=\([0-9]*\) bytes=\([0-9]*\) left=\([01]\)$/\1 \2 \3/p' \
		$inst/trace >"passes-$kb"
	[ -s "passes-$kb" ] || fail "tx_budget_kb=$kb: no pass traced: $(head -5 $inst/trace)"
	log "tx_budget_kb=$kb: $(wc -l <"passes-$kb") passes, the longest $(sort -k2 -n "passes-$kb" | tail -1)"
}

# within KB: no pass over KB KiB and one FPDU, and some pass stopped at
# the bytes (work left, fewer than 64 FPDUs)
within() {
	local kb=$1 n long
	long=$(awk -v m=$((kb * 1024 + FPDU_MAX)) '$2 > m' "passes-$kb" | head -3)
	[ -z "$long" ] || fail "tx_budget_kb=$kb: passes framed more than $kb KiB and one FPDU: $long"
	n=$(awk -v m=$((kb * 1024)) '$3 == 1 && $1 < 64 && $2 >= m' "passes-$kb" | wc -l)
	[ "$n" -gt 0 ] || fail "tx_budget_kb=$kb: no pass stopped at its bytes with work left: $(sort -k2 -n "passes-$kb" | tail -3)"
	log "tx_budget_kb=$kb: $n passes ended at the budget with work left"
}

stream 1024
within 1024
stream 64
within 64
# no byte limit: the stream's passes go past 1 MiB (up to 64 FPDUs)
stream 0
n=$(awk -v m=$((1024 * 1024 + FPDU_MAX)) '$2 > m' passes-0 | wc -l)
[ "$n" -gt 0 ] || fail "tx_budget_kb=0: no pass beyond 1 MiB and one FPDU: $(sort -k2 -n passes-0 | tail -3)"
log "tx_budget_kb=0: $n passes beyond 1 MiB and one FPDU"
log ok
