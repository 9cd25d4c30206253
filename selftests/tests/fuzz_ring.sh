#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 240
# description: the kernel trusts nothing in the rings: a process fills its mmap'd SQ/RQ/CQ rings and control words with garbage and crafted WQEs (kernel-only opcodes, bad lkeys, huge lengths and SGE counts) while its connected QPs ring doorbells, across 10 QPs per connection, and calls the driver's methods with random attributes (doorbell alloc ioctls, made-up driver objects and methods, doorbell writes, modify_qp with random masks and values); no crash, nothing left after teardown
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

F=$(need_prog xiw_ringfuzz)
xiw_loopback
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
echo "module $XIW_MOD +p" >/sys/kernel/debug/dynamic_debug/control
defer eval "echo 'module $XIW_MOD -p' >/sys/kernel/debug/dynamic_debug/control"
mark="xiw-ringfuzz-$RANDOM"
echo "$mark" >/dev/kmsg

for seed in 1 2 3; do
	run_timeout 120 "$F" 192.0.2.1 $((7480 + seed)) 300 $seed >fuzz.log 2>&1 ||
		{ cat fuzz.log; fail "xiw_ringfuzz seed $seed"; }
	expect_match "$(cat fuzz.log)" 'teardown ok' "seed $seed"
	# the random driver calls reached the kernel: some refused, some not
	expect_match "$(cat fuzz.log)" '^methods [0-9]+, ok [0-9]+, errno ' "seed $seed: driver calls"
	expect_nomatch "$(cat fuzz.log)" 'accepted a write|destroy extra QP' "seed $seed"
	log "seed $seed: $(grep rounds fuzz.log); $(grep '^methods' fuzz.log)"
done
summary=$(rdma res show | grep ' xiw0: ' || true)
expect_match "$summary" 'pd 0 cq 0 qp 0 cm_id 0 mr 0 ctx 0' "resources after the fuzz"
# the kernel saw and refused garbage (reasons at debug level)
refused=$(dmesg | sed -n "/$mark/,\$p" | grep -cE 'refused|unsupported|bad receive WQE|SQ full' || true)
[ "$refused" -gt 0 ] || fail "no refusal logged: the fuzz did not reach the kernel's checks"
log "$refused refusals logged"
