#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 30
# expect: skip
# expect-reason: ^deliberate skip$
# description: skip() skips
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

skip "deliberate skip"
