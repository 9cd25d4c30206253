#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 180
# description: TX work of bulk flows shares its CPU: a busy loop pinned to one CPU keeps at least 30% of the CPU time it gets alone while four QPs of 64 KiB RDMA Writes (ib_write_bw -q 4, posted from the other CPU) have their TX work on its CPU; the flood's report must be sane
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$XIW_ROOT/selftests/perftest_lib.sh"

need_cmd ib_write_bw taskset
[ "$(nproc)" -ge 2 ] || skip "needs 2 CPUs"
xiw_loopback

# The layout: perftest's client and server on CPU 0, so a burst's TX work
# goes to the next CPU (xiw_dp_tx_defer()), CPU 1, where the busy loop
# runs. Its share of CPU 1 is its run time (schedstat) over wall time.
taskset -c 1 bash -c 'while :; do :; done' &
hog=$!
defer kill "$hog"
hog_ns() { awk '{ print $1 }' "/proc/$hog/schedstat"; }

# share SEC: the busy loop's share of its CPU over SEC seconds, in %
share() {
	local a b t0 t1
	a=$(hog_ns) t0=$(now_us)
	sleep "$1"
	b=$(hog_ns) t1=$(now_us)
	echo $(( (b - a) / 10 / (t1 - t0) ))
}

alone=$(share 3)
log "busy loop alone: $alone% of CPU 1"
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
log "busy loop beside the flood: $flood% of CPU 1 ($((flood * 100 / alone))% of alone)"
log "flood: $(perftest_result cli.log "ib_write_bw -q 4")"
[ $((flood * 100)) -ge $((alone * 30)) ] ||
	fail "busy loop starved: $flood% of CPU 1 beside the flood, $alone% alone"
