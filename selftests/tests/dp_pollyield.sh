#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 240
# description: libxiw's empty poll yields the CPU only while the kernel sends for one of the CQ's QPs: a 1 MiB RDMA Write stream's busy-polling client calls sched_yield (traced at the syscall), an 8-byte Send ping-pong (each post sends in its own doorbell) and the stream with XIW_POLL_YIELD=0 call it never; every run reports a bandwidth or latency
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$XIW_SELFTESTS/perftest_lib.sh"

need_cmd ib_write_bw ib_send_lat
xiw_loopback

xiw_trace_instance xiw_pollyield 4096
inst=$XIW_TRACE_INST
ev=events/syscalls/sys_enter_sched_yield
[ -f "$inst/$ev/enable" ] || fail "no $ev (CONFIG_FTRACE_SYSCALLS)"
defer eval "echo 0 >$inst/$ev/enable"

# yields NAME: the sched_yield calls perftest's NAME made during RUN...,
# and the run's perftest line in $res
yields() {
	local name=$1 lost
	shift
	echo >$inst/trace
	echo 1 >$inst/$ev/enable
	"$@" >run.out
	res=$(cat run.out)
	echo 0 >$inst/$ev/enable
	lost=$(xiw_trace_lost $inst)
	[ "$lost" = 0 ] || log "$name: the trace buffer overran ($lost events lost)"
	n=$(grep -c "^ *$name-[0-9]* .*sys_sched_yield" $inst/trace || true)
}

# figure TEXT COLUMN: the run's figure, which must be a positive number
figure() {
	local v
	v=$(awk -v c="$2" '{ print $c }' <<<"$res")
	awk -v v="$v" 'BEGIN { exit !(v + 0 > 0) }' || fail "$1: no figure in '$res'"
	echo "$v"
}

# A stream: the client posts a window of 1 MiB Writes and polls for their
# completions while the TX work sends them (on the other CPU): its empty
# polls yield.
yields ib_write_bw perftest_local xiw0 192.0.2.1 ib_write_bw -s 1048576 -n 200
bw=$(figure "1 MiB Write stream" 4)
log "1 MiB Write stream: $bw MB/s, $n sched_yield calls"
[ "$n" -gt 0 ] || fail "a busy-polling stream client never yielded: $(grep -c sys_sched_yield $inst/trace || true) calls in all"

# A ping-pong: each post sends in its own doorbell (the poster polled
# before it), so no TX is pending while either side waits for the other's
# Send, and an empty poll must not cost a syscall.
yields ib_send_lat perftest_local xiw0 192.0.2.1 ib_send_lat -s 8 -n 2000
lat=$(figure "8-byte Send ping-pong" 5)
log "8-byte Send ping-pong: $lat us, $n sched_yield calls"
expect_eq "$n" 0 "sched_yield calls of a ping-pong"

# The switch for comparisons.
XIW_POLL_YIELD=0 yields ib_write_bw \
	perftest_local xiw0 192.0.2.1 ib_write_bw -s 1048576 -n 200
bw=$(figure "1 MiB Write stream, XIW_POLL_YIELD=0" 4)
log "1 MiB Write stream, XIW_POLL_YIELD=0: $bw MB/s, $n sched_yield calls"
expect_eq "$n" 0 "sched_yield calls with XIW_POLL_YIELD=0"
log ok
