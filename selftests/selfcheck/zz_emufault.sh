#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 60
# expect: ok
# description: a VM that dies of an emulator fault (a register dump with an RFLAGS no CPU holds) has the test it died in run once more in the next boot, which says so (XIW_EMULATOR_RERUN); that run passes
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

# Runs after zz_crash (name order), so first in the second boot: it
# fakes the register dump of TCG's faults (RFLAGS 04bc46a6: reserved
# bits 5, 23, 26 set, as in the one seen under CI) and panics.
if [ "${XIW_EMULATOR_RERUN:-}" = zz_emufault ]; then
	log "run again after the faked emulator fault"
	exit 0
fi
echo "<2>RSP: 0018:ffffb0c440527c48 EFLAGS: 04bc46a6" >/dev/kmsg
sync
echo c >/proc/sysrq-trigger
sleep 30
