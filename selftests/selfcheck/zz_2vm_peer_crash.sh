#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 2vm
# timeout: 60
# expect: fail
# expect-reason: \[a\] fail: barrier after-crash failed; \[b\] no result
# description: the peer VM dies mid-test: both sides are reported, the survivor does not hang
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

xiw_barrier before-crash
if [ "$XIW_ROLE" = b ]; then
	sync
	echo c >/proc/sysrq-trigger
	sleep 30
fi
# a: the peer never comes.
xiw_barrier after-crash 15
