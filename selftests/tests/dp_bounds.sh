#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 180
# description: bounds to the byte through verbs (xiw_bounds): Write, Read, FetchAdd, CmpSwap, Atomic Write, Flush and Verify ending exactly at a region's end succeed with their data in place; one byte past it the WR completes REM_ACCESS_ERR with the peer's base/bounds Terminate in vendor_err (0x1101 DDP for a Write, 0x0101 RDMAP for the rest), the responder's memory untouched; a local SGE one byte past its region completes LOC_PROT_ERR
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

P=$(need_prog xiw_bounds)
xiw_loopback

run_timeout 150 "$P" 192.0.2.1 7476 >b.log 2>&1 || rc=$?
grep -v '^ok ' b.log | sed 's/^/# /'
[ "${rc:-0}" = 0 ] || fail "xiw_bounds (exit ${rc}): $(grep -m1 -v '^ok ' b.log || true)"
# 10 exact checks, 8 cases past the end with 3 checks each, the Write past the end with 4
expect_eq "$(grep -c '^ok ' b.log)" 38 "checks passed (every one ran)"
log "$(grep -E '^(ok|FAIL): ' b.log)"
