#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 180
# description: memory windows through verbs (xiw_mw): type 2 (IBV_WR_BIND_MW, ibv_wr_bind_mw) and type 1 (ibv_bind_mw) windows grant exactly their own range and rights (a Write just outside the window but inside its MR refused, the MR's bytes unchanged), local and remote invalidation (IBV_WC_LOCAL_INV, IBV_WC_WITH_INV with invalidated_rkey), rebinding under a new key (old key refused), bind errors IBV_WC_MW_BIND_ERR, dereg of an MR under a bound window EBUSY, a zero-based MR, rkey as lkey LOC_PROT_ERR, binds and invalidations racing streamed Writes
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

P=$(need_prog xiw_mw)
xiw_loopback

rc=0
t0=$SECONDS
run_timeout 150 "$P" 192.0.2.1 7477 "${XIW_MW_ROUNDS:-32}" >m.log 2>&1 || rc=$?
log "xiw_mw ran $((SECONDS - t0)) s"
grep -v '^ok ' m.log | sed 's/^/# /'
[ "$rc" = 0 ] || fail "xiw_mw (exit $rc): $(grep -m1 '^FAIL' m.log || grep -m1 -v -e '^ok ' -e '^# ' m.log || true)"
expect_eq "$(grep -c '^ok ' m.log)" 317 "checks passed (every one ran)"
# nothing of the owner's or the peers' is left
[ -z "$(rdma resource show mr 2>/dev/null | grep -w xiw0)" ] ||
	fail "MRs left: $(rdma resource show mr | grep -w xiw0)"
[ -z "$(rdma resource show qp 2>/dev/null | grep -w xiw0 | grep -v 'type GSI')" ] ||
	fail "QPs left: $(rdma resource show qp | grep -w xiw0)"
