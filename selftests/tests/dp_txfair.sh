#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 180
# description: TX work of bulk flows shares its CPU: a busy loop pinned to one CPU keeps at least 15% of that CPU's task time (time outside interrupts and softirqs) while four QPs of 64 KiB RDMA Writes (ib_write_bw -q 4, posted from the other CPU) have their TX work there, under the kernel's preemption model and again under preempt=none (a kernel thread yields only where it offers the CPU); the flood's report must be sane
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$XIW_SELFTESTS/perftest_lib.sh"

need_cmd ib_write_bw taskset
[ "$(nproc)" -ge 2 ] || skip "needs 2 CPUs"
xiw_loopback

# The layout: perftest's client and server on CPU 0, so a burst's TX work
# goes to the next CPU (xiw_sched_defer()), CPU 1, where the busy loop
# runs. Its share is its run time (schedstat) over CPU 1's task time: the
# wall time less CPU 1's irq and softirq time (/proc/stat, USER_HZ). The
# softirqs are no task's: on one host they carry the loopback receiver's
# work (placing the Writes), which the scheduler cannot share out.
taskset -c 1 bash -c 'while :; do :; done' &
hog=$!
defer kill "$hog"
hog_ns() { awk '{ print $1 }' "/proc/$hog/schedstat"; }
irq_ticks() { awk '$1 == "cpu1" { print $7 + $8 }' /proc/stat; }

# share SEC: the busy loop's share of CPU 1's task time over SEC s, in %
share() {
	local a b t0 t1 i0 i1 hz task
	hz=$(getconf CLK_TCK)
	a=$(hog_ns) t0=$(now_us) i0=$(irq_ticks)
	sleep "$1"
	b=$(hog_ns) t1=$(now_us) i1=$(irq_ticks)
	task=$(( (t1 - t0) - (i1 - i0) * 1000000 / hz ))
	log "CPU 1 over $(( (t1 - t0) / 1000 )) ms: $(( (i1 - i0) * 1000 / hz )) ms in irq and softirq, busy loop $(( (b - a) / 1000000 )) ms" >&2
	echo $(( (b - a) / 10 / (task > 0 ? task : 1) ))
}

alone=$(share 3)
log "busy loop alone: $alone% of CPU 1's task time"
[ "$alone" -ge 50 ] || fail "the busy loop gets only $alone% of an idle CPU"

PREEMPT=/sys/kernel/debug/sched/preempt
[ -w "$PREEMPT" ] || fail "no $PREEMPT (the kernel has PREEMPT_DYNAMIC)"
mode0=$(grep -o '([a-z]*)' "$PREEMPT" | tr -d '()')
defer eval "echo $mode0 >$PREEMPT"

# flood MODE PORT: the preemption model MODE, ib_write_bw -q 4 from CPU 0
# for 8 s, the busy loop's share of CPU 1 measured over 4 s of it. Under
# "none" a kernel thread gives up its CPU only where it calls schedule()
# or cond_resched(): the TX run must offer it between passes and hand on
# to the TX work, or the busy loop starves.
flood() {
	local mode=$1 port=$2 srv cli share_f
	echo "$mode" >"$PREEMPT"
	expect_match "$(cat "$PREEMPT")" "\\($mode\\)" "preemption model"
	run_timeout 90 taskset -c 0 ib_write_bw -s 65536 -q 4 -D 8 -R -d xiw0 \
		-p "$port" >"srv-$mode.log" 2>&1 &
	srv=$!
	wait_listen "$port" 30 "$srv" "srv-$mode.log"
	run_timeout 90 taskset -c 0 ib_write_bw -s 65536 -q 4 -D 8 -R -d xiw0 \
		-p "$port" 192.0.2.1 >"cli-$mode.log" 2>&1 &
	cli=$!
	wait_for 30 eval "[ \$(tcp_bytes_acked $port) -gt 10000000 ]" ||
		fail "$mode: no flood: $(tail -n 3 "cli-$mode.log")"
	share_f=$(share 4)
	wait "$cli" || { sed 's/^/#   /' "cli-$mode.log"; fail "$mode: ib_write_bw client failed"; }
	wait "$srv" || { sed 's/^/#   /' "srv-$mode.log"; fail "$mode: ib_write_bw server failed"; }
	log "preempt=$mode: busy loop beside the flood: $share_f% of CPU 1's task time ($((share_f * 100 / alone))% of alone)"
	log "preempt=$mode: flood: $(perftest_result "cli-$mode.log" "ib_write_bw -q 4")"
	[ $((share_f * 100)) -ge $((alone * 15)) ] ||
		fail "preempt=$mode: busy loop starved: $share_f% of CPU 1's task time beside the flood, $alone% alone"
}

flood "$mode0" 18631
flood none 18632
