#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 30
# expect: fail
# expect-reason: ^cleanup `false` exited 1
# description: a deferred command that fails fails a test that passed
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

defer true
defer false
log "passing, but its cleanup fails"
