#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 30
# expect: ok
# description: the children of the timed-out test are gone
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

pid=$(cat /tmp/sc-timeout-child.pid)
if kill -0 "$pid" 2>/dev/null; then fail "child $pid of sc_timeout survived"; fi
