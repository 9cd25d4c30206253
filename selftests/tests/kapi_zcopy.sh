#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 240
# description: a completion means a kernel consumer's buffer is free: xiw_ktest.ko (xiw1 to xiw0) sends 48 signaled RDMA Writes of three pages of its page-allocated buffer and writes 0xee over the buffer the moment each completes; a Flush, then the target must hold the Write's bytes and none of the overwrite; under netem delay 2ms loss 3% on lo (TCP resends from the pages it holds), with zero-copy TX (tx_zcopy=1: tx_zcopy_kernel_bytes grows by at least the Writes' bytes, the pages went to TCP by reference) and with copying TX (the counter stays put)
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

need_cmd ip insmod rmmod modinfo modprobe dmesg tc
ktest_two_devices

P=/sys/module/$XIW_MOD/parameters
defer eval "echo $(cat "$P/tx_zcopy") >$P/tx_zcopy"
# the client end is xiw1's: its Writes' zero-copy bytes
kbytes() { cat /sys/class/infiniband/xiw1/ports/1/hw_counters/tx_zcopy_kernel_bytes; }

# The path delays and drops segments: TCP keeps its clones queued behind
# netem and resends from the pages it holds, so bytes of a buffer that
# is already written over would reach the peer.
modprobe sch_netem || fail "modprobe sch_netem"
tc qdisc add dev lo root netem delay 2ms loss 3% || fail "tc netem on lo"
defer tc qdisc del dev lo root

ROUNDS=48
LEN=12288	# xiw_ktest's KT_READ_MAX, three pages
# zc_run NAME ZCOPY PORT: the zc_reuse check with tx_zcopy=ZCOPY; sets
# grown (tx_zcopy_kernel_bytes it added)
zc_run() {
	local name=$1 mark rc=0 out k0
	echo "$2" >"$P/tx_zcopy"
	k0=$(kbytes)
	mark="kapi_zcopy-$name-$RANDOM-$RANDOM"
	echo "$mark" >/dev/kmsg
	run_timeout 200 insmod "$KT" server_addr=192.0.2.1 client_addr=192.0.2.2 \
		port="$3" zc_rounds=$ROUNDS || rc=$?
	out=$(dmesg | sed -n "/$mark/,\$p" | grep 'xiw_ktest: ' || true)
	grep -E 'zc_reuse|FAIL|passed' <<<"$out" | sed "s/^/# $name: /"
	expect_nomatch "$out" 'xiw_ktest: FAIL zc_reuse' "$name: zc_reuse"
	expect_match "$out" "xiw_ktest: zc_reuse: $ROUNDS rounds of $LEN bytes\$" "$name: zc_reuse's rounds"
	expect_match "$out" 'xiw_ktest: PASS zc_reuse$' "$name: zc_reuse"
	expect_nomatch "$out" 'xiw_ktest: FAIL ' "$name: xiw_ktest's other checks"
	[ $rc = 0 ] || fail "$name: insmod xiw_ktest exited $rc: $(grep -m1 -E 'FAIL|passed' <<<"$out")"
	rmmod xiw_ktest
	grown=$(( $(kbytes) - k0 ))
	log "$name: tx_zcopy_kernel_bytes +$grown"
}

zc_run zcopy 1 7492
[ "$grown" -ge $((ROUNDS * LEN)) ] ||
	fail "zcopy: tx_zcopy_kernel_bytes grew by $grown, less than the Writes' $((ROUNDS * LEN)) bytes: the pages were copied"
zc_run copy 0 7493
expect_eq "$grown" 0 "copy: tx_zcopy_kernel_bytes of copying TX"
