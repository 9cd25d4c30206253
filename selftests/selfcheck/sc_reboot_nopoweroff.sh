#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# boots: 2
# timeout: 30
# expect: fail
# expect-reason: boot 1 ended without xiw_power_off
# description: a two-boot test that passes boot 1 without powering off fails (the checking half never ran)
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

expect_eq "$XIW_BOOT" 1 "XIW_BOOT"
