#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 30
# expect: fail
# expect-reason: ^skip not on the allow-list \(selftests/selfcheck/skip-allow.txt\): deliberate skip, not allowed$
# description: a skip that says why, of a test not on the skip allow-list, fails
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

skip "deliberate skip, not allowed"
