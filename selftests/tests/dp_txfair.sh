#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 180
# description: TX work of bulk flows shares its CPU: a busy loop pinned to one CPU keeps at least 15% of that CPU's task time (time outside interrupts and softirqs) while four QPs of 64 KiB RDMA Writes (ib_write_bw -q 4, posted from the other CPU) have their TX work there; the flood's report must be sane
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

port=18631
run_timeout 90 taskset -c 0 ib_write_bw -s 65536 -q 4 -D 8 -R -d xiw0 \
	-p "$port" >srv.log 2>&1 &
srv=$!
wait_listen "$port" 30 "$srv" srv.log
run_timeout 90 taskset -c 0 ib_write_bw -s 65536 -q 4 -D 8 -R -d xiw0 \
	-p "$port" 192.0.2.1 >cli.log 2>&1 &
cli=$!
wait_for 30 eval "[ \$(tcp_bytes_acked $port) -gt 10000000 ]" ||
	fail "no flood: $(tail -n 3 cli.log)"
flood=$(share 4)
wait "$cli" || { sed 's/^/#   /' cli.log; fail "ib_write_bw client failed"; }
wait "$srv" || { sed 's/^/#   /' srv.log; fail "ib_write_bw server failed"; }
log "busy loop beside the flood: $flood% of CPU 1's task time ($((flood * 100 / alone))% of alone)"
log "flood: $(perftest_result cli.log "ib_write_bw -q 4")"
[ $((flood * 100)) -ge $((alone * 15)) ] ||
	fail "busy loop starved: $flood% of CPU 1's task time beside the flood, $alone% alone"
