#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 2vm
# timeout: 60
# expect: fail
# expect-reason: ^\[a\] a fails first; \[b\] barrier mid2 failed$
# description: one VM fails a 2vm test at once while the other still syncs inside it: that test fails on both sides, and the next 2vm test (sc_2vm_sync, expected to pass) meets its peer as usual instead of "peer VM lost"
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

# a leaves the test at once: the runner takes it to this test's end
# barrier, then to the next test's begin barrier.
[ "$XIW_ROLE" = b ] || fail "a fails first"

# b still syncs inside the test: the first sync meets a's end barrier, the
# second a's begin barrier of the next test (which must keep waiting for
# b instead of giving the peer up).
if got=$(xiw_sync mid1 . 20 2>&1); then
	fail "mid1 met a peer that had left the test: $got"
fi
log "mid1: $got"
xiw_sync mid2 . 20 >/dev/null || fail "barrier mid2 failed"
fail "mid2 met a peer that had left the test"
