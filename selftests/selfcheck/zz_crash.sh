#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 60
# expect: fail
# expect-reason: no result: the VM crashed.*; class: kernel\)
# description: a kernel crash fails this test; the tests after it run in a new boot (zzz_after_crash)
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

# Runs last but one (name order). sysrq c panics the kernel; panic=-1 + -no-reboot
# end the VM at once; zzz_after_crash and module_unload run in a new boot.
sync
echo c >/proc/sysrq-trigger
sleep 30
