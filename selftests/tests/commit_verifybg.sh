#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 240
# description: a 64 MiB RDMA Verify (crc32c, digest checked against one computed in user space) runs in the responder's exec work while another QP's 8-byte RDMA Reads keep completing, none waiting a quarter of the Verify's time; the exec work ran (commit_stats); the same Verify through a type 1 memory window that the responder unbinds while it runs ends with IBV_WC_REM_ACCESS_ERR (nothing read through the window after the unbind completed), the other QP unaffected
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

# The same Verify through a type 1 window over the region, which the
# responder's consumer unbinds while the Verify runs: no byte is read
# through the window once the unbind completed, so the Verify ends with a
# remote access error (the responder's Terminate), not with a digest.
rc=0
run_timeout 200 "$V" 192.0.2.1 7473 --mib "${XIW_VERIFYBG_MIB:-64}" --unbind >vu.log 2>&1 || rc=$?
sed 's/^/# /' vu.log
[ "$rc" = 0 ] || fail "xiw_verifybg --unbind: $(grep -m1 -E '^FAIL|xiw_verifybg|usage|die' vu.log || tail -1 vu.log)"
expect_match "$(cat vu.log)" '^ok Verify through the unbound window: remote access error$' "the Verify after the unbind"
log "$(grep -E '^(UNBOUND|VERIFY)' vu.log | tr '\n' ' ')"
