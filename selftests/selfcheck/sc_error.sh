#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 30
# expect: fail
# expect-reason: sc_error.sh:[0-9]+: `false` exited 1
# description: an unchecked failing command fails (set -e + ERR trap)
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

false
log "not reached"
exit 0
