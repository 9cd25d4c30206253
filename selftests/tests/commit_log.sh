#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 180
# description: xiw_commitlog between xiw1 and xiw0 on DRAM: push commits (Write + Flush(global) + Atomic Write of the tail + Flush), the same log over Send/Recv with a target thread, and plain Writes with a Read of the tail; every record and the tail checked in the target's memory
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

CL=$(need_prog xiw_commitlog)
xiw_two_devices
N=${XIW_COMMITLOG_N:-300}
seed=$(( (RANDOM << 16) | RANDOM ))
port=7480
skipped=
declare -A c0
for mode in push send write; do
	port=$((port + 1))
	rc=0
	if [ $mode = push ]; then
		for k in flush_global flush_persistent flush_wb_bytes atomic_writes; do
			c0[$k]=$(xiw_commit_stat $k)
		done
	fi
	run_timeout 90 "$CL" run --addr 192.0.2.1 --src 192.0.2.2 --port $port \
		--mode $mode -n "$N" --size 200 --seed "$seed" >"cl-$mode.log" 2>&1 || rc=$?
	sed 's/^/# /' "cl-$mode.log"
	if [ $mode = push ] && [ $rc = 4 ]; then
		skipped="push: $(sed -n 's/^SKIP //p' "cl-$mode.log" | head -n 1)"
		continue
	fi
	[ $rc = 0 ] || fail "$mode: xiw_commitlog exited $rc: $(grep -m1 FAIL "cl-$mode.log")"
	# the log was checked where it lies: tail and every record
	expect_match "$(cat "cl-$mode.log")" "^ok log: $N records of 200 bytes and the tail intact" "$mode"
	expect_match "$(cat "cl-$mode.log")" "^commitlog mode=$mode mem=dram n=$N " "$mode"
	if [ $mode = push ]; then
		# two Flush G and one Atomic Write per commit reached the
		# responder; DRAM: nothing written back
		expect_eq $(( $(xiw_commit_stat flush_global) - c0[flush_global] )) $((2 * N)) "Flush G executed"
		expect_eq $(( $(xiw_commit_stat atomic_writes) - c0[atomic_writes] )) "$N" "Atomic Writes executed"
		expect_eq $(( $(xiw_commit_stat flush_persistent) - c0[flush_persistent] )) 0 "Flush P executed"
		expect_eq $(( $(xiw_commit_stat flush_wb_bytes) - c0[flush_wb_bytes] )) 0 "bytes written back"
	fi
done
# pipelined: 8 commits in flight (the tail only ever grows; the target
# thread answers in order)
for mode in push send; do
	[ $mode != push ] || [ -z "$skipped" ] || continue
	port=$((port + 1))
	run_timeout 90 "$CL" run --addr 192.0.2.1 --src 192.0.2.2 --port $port \
		--mode $mode -n "$N" --size 1000 --seed "$seed" --depth 8 >"cl-$mode-8.log" 2>&1 ||
		fail "$mode, 8 in flight: $(grep -m1 FAIL "cl-$mode-8.log" || tail -n 1 "cl-$mode-8.log")"
	grep '^commitlog' "cl-$mode-8.log" | sed 's/^/# /'
	expect_match "$(cat "cl-$mode-8.log")" "^ok log: $N records of 1000 bytes and the tail intact" "$mode, 8 in flight"
done
[ -z "$skipped" ] || skip "$skipped (send and write modes passed)"
