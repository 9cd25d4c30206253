#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 30
# expect: ok
# description: cleanup of sc_a_helpers happened
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

if ip link show scdummy0 >/dev/null 2>&1; then fail "deferred cleanup did not run"; fi
pid=$(cat /tmp/sc-leftover.pid)
if kill -0 "$pid" 2>/dev/null; then fail "leftover process $pid survived its test"; fi
log "previous test cleaned up"
