#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 30
# expect: fail
# expect-reason: kernel: WARNING: CPU
# description: a WARNING: in the kernel log fails a test that exits 0
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

echo "WARNING: CPU: 0 PID: $$ at selftests/selfcheck/sc_warn.sh:1 xiw bench self-check" >/dev/kmsg
log "exits 0"
