#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 30
# expect: ok
# description: runs after zz_crash, which panics its VM: the runner boots a new VM for the tests after a crash
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

# A fresh boot: the suite's first test, and the crash left no trace in
# this kernel's log.
up=$(cut -d. -f1 /proc/uptime)
[ "$up" -lt 120 ] || fail "uptime ${up}s: not a fresh boot"
expect_nomatch "$(dmesg)" 'sysrq: Trigger a crash' "this boot's kernel log"
log "fresh boot, uptime ${up}s"
