#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 120
# description: rdma statistic show link xiw0/1 (hw counters): after the xiwdv traffic of xiw_dv over one device, FPDUs and bytes sent equal those received, every atomic the program ran was executed and counted, doorbells were rung, nothing was terminated; the sysfs hw_counters agree with rdma(8)
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

DV=$(need_prog xiw_dv)
xiw_loopback

for c in tx_fpdus tx_bytes rx_fpdus rx_bytes rx_crc_errors terminates_sent \
	 terminates_received read_requests_answered atomics_executed \
	 flushes_executed atomic_writes_executed verifies_executed \
	 tx_socket_full doorbells mpa_rejects; do
	v=$(xiw_counter $c)
	[[ $v =~ ^[0-9]+$ ]] || fail "counter $c missing: $(rdma statistic show link xiw0/1)"
done
expect_eq "$(xiw_counter atomics_executed)" 0 "atomics before any traffic"

run_timeout 60 "$DV" 192.0.2.1 7473 >dv.log 2>&1 || fail "xiw_dv: $(grep -m1 FAIL dv.log)"
# two checks per masked atomic, one per plain one
natomic=$(( $(grep -c '^ok masked' dv.log) / 2 + $(grep -cE '^ok (FetchAdd|CmpSwap)' dv.log) ))
[ "$natomic" -ge 10 ] || fail "xiw_dv ran only $natomic atomics"
# both ends of every connection are xiw0: once quiet, sent == received
wait_for 10 eval '[ "$(xiw_counter tx_fpdus)" = "$(xiw_counter rx_fpdus)" ]' ||
	fail "tx_fpdus $(xiw_counter tx_fpdus) != rx_fpdus $(xiw_counter rx_fpdus)"
expect_eq "$(xiw_counter tx_bytes)" "$(xiw_counter rx_bytes)" "bytes sent = bytes received"
[ "$(xiw_counter tx_fpdus)" -gt 20 ] || fail "tx_fpdus $(xiw_counter tx_fpdus)"
[ "$(xiw_counter atomics_executed)" -ge "$natomic" ] ||
	fail "atomics_executed $(xiw_counter atomics_executed) < $natomic run"
[ "$(xiw_counter doorbells)" -gt 0 ] || fail "no doorbell counted"
expect_eq "$(xiw_counter terminates_sent)" 0 "Terminates sent"
expect_eq "$(xiw_counter rx_crc_errors)" 0 "CRC errors"
sysfs=/sys/class/infiniband/xiw0/ports/1/hw_counters
expect_eq "$(cat $sysfs/atomics_executed)" "$(xiw_counter atomics_executed)" "sysfs and rdma(8)"
log "$(rdma statistic show link xiw0/1)"
