#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 240
# description: a 64 MiB RDMA Verify (crc32c, digest checked against one computed in user space) runs in the responder's exec work while another QP's 8-byte RDMA Reads keep completing, none waiting a quarter of the Verify's time; the exec work ran (commit_stats)
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

V=$(need_prog xiw_verifybg)
xiw_loopback
stats=/sys/kernel/debug/xiw/commit_stats
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
[ -r $stats ] || fail "no $stats"
bytes0=$(awk '$1 == "verify_bytes" { print $2 }' $stats)

run_timeout 200 "$V" 192.0.2.1 7472 --mib "${XIW_VERIFYBG_MIB:-64}" >v.log 2>&1 || rc=$?
sed 's/^/# /' v.log
[ "${rc:-0}" = 0 ] || fail "xiw_verifybg: $(grep -m1 -E '^FAIL|xiw_verifybg|usage|die' v.log || tail -1 v.log)"
expect_match "$(cat v.log)" '^READS during n=' "Reads measured during the Verify"
bytes1=$(awk '$1 == "verify_bytes" { print $2 }' $stats)
expect_eq $((bytes1 - bytes0)) $(( ${XIW_VERIFYBG_MIB:-64} << 20 )) "bytes digested by the responder"
log "$(grep -E '^(VERIFY|READS)' v.log | tr '\n' ' ')"
