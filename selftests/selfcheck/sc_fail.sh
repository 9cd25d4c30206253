#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 30
# expect: fail
# expect-reason: ^deliberate failure$
# description: fail() fails
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

fail "deliberate failure"
