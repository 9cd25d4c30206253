#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 3vm
# timeout: 60
# expect: fail
# expect-reason: ^\[a\] barrier mid1 failed; \[b\] barrier mid1 failed; \[c\] c fails first$
# description: one of three VMs fails a 3vm test at once while the two others still sync inside it: that test fails on all three, and the next 3vm test (sc_3vm_sync, expected to pass) brings the three together as usual
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

# c leaves the test at once: the runner takes it to this test's end
# barrier, then to the next test's begin barrier.
[ "$XIW_ROLE" != c ] || fail "c fails first"
# a and b still sync inside the test: the sync meets c's end barrier
xiw_barrier mid1 20
fail "mid1 met a peer that had left the test"
