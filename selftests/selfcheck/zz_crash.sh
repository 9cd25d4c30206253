#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 60
# expect: fail
# expect-reason: no result: the VM crashed
# description: a kernel crash fails this test and the rest of the boot
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

# Runs last (name order). sysrq c panics the kernel; panic=-1 + -no-reboot
# end the VM at once. module_unload then has no result either.
sync
echo c >/proc/sysrq-trigger
sleep 30
