#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 3vm
# timeout: 60
# expect: fail
# expect-reason: \[a\] fail: barrier after-crash failed; \[b\] fail: barrier after-crash failed; \[c\] no result
# description: VM c dies mid-test (a panic, not a power cycle): all three are reported, a and b do not hang
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

xiw_barrier before-crash
if [ "$XIW_ROLE" = c ]; then
	sync
	echo c >/proc/sysrq-trigger
	sleep 30
fi
# a and b: c never comes.
xiw_barrier after-crash 20
