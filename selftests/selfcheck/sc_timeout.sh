#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 5
# expect: fail
# expect-reason: timeout after 5s
# description: a test past its timeout is killed and fails, with its children
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

trap '' TERM	# ignored, also by the children: the runner must escalate to KILL
sleep 600 &
echo $! >/tmp/sc-timeout-child.pid
sleep 600
