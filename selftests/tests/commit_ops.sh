#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 180
# description: RDMA Flush, Atomic Write and Verify through rdma-core and xiwdv.h (xiw_commitops): capability bits, Atomic Write bytes in place (both verbs forms), Flush of a range/0 bytes/the whole MR, 20 Write+Flush+Atomic Write chains checked in the responder's memory, crc32c and sha256 digests against ones computed in user space, local refusals (EINVAL), and five refusals by the peer each with its IBA status and the Terminate in vendor_err; the responder's counters saw them
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

C=$(need_prog xiw_commitops)
xiw_loopback

aw0=$(xiw_counter atomic_writes_executed)
fl0=$(xiw_counter flushes_executed)
ve0=$(xiw_counter verifies_executed)

run_timeout 150 "$C" 192.0.2.1 7474 >c.log 2>&1 || rc=$?
grep -v '^ok ' c.log | sed 's/^/# /'
[ "${rc:-0}" = 0 ] || fail "xiw_commitops (exit ${rc}): $(grep -m1 -v '^ok ' c.log || true)"
n=$(grep -c '^ok ' c.log)
expect_eq "$n" 38 "checks passed (every one ran)"
# 2 + 20 + 1 Atomic Writes, 3 + 20 Flushes, 4 Verifies succeeded
[ $(( $(xiw_counter atomic_writes_executed) - aw0 )) -ge 23 ] ||
	fail "atomic_writes_executed $(xiw_counter atomic_writes_executed) - $aw0"
[ $(( $(xiw_counter flushes_executed) - fl0 )) -ge 23 ] ||
	fail "flushes_executed $(xiw_counter flushes_executed) - $fl0"
[ $(( $(xiw_counter verifies_executed) - ve0 )) -ge 4 ] ||
	fail "verifies_executed $(xiw_counter verifies_executed) - $ve0"
[ "$(xiw_counter terminates_sent)" -ge 5 ] || fail "terminates_sent $(xiw_counter terminates_sent)"
log "$n checks; $(grep -E '^(ok|FAIL): ' c.log)"
