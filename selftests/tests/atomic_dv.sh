#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 120
# description: xiwdv.h direct verbs: masked FetchAdd/CmpSwap against the RFC 7306 reference code, plain atomics, RDMA Write with 64-bit immediate, Immediate Data alone, verbs 32-bit immediate
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

DV=$(need_prog xiw_dv)
xiw_loopback
# atomics are advertised as atomic against the CPU too (atomic_contention proves it)
expect_match "$(ibv_devinfo -v -d xiw0)" 'atomic_cap:[[:space:]]+ATOMIC_GLOB' "ibv_devinfo"

run_timeout 60 "$DV" 192.0.2.1 7471 >dv.log 2>&1 || rc=$?
grep -v '^ok ' dv.log | sed 's/^/# /'
[ "${rc:-0}" = 0 ] || fail "xiw_dv: $(grep -m1 -E '^FAIL|xiw_dv:' dv.log)"
# every check ran (a crash or an early exit would leave fewer lines)
n=$(grep -c '^ok ' dv.log)
[ "$n" -ge 35 ] || fail "only $n checks passed"
log "$n checks"
