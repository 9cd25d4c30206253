#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 240
# description: memory cgroups: the kernel memory of a user process's connections (rings, data path, TX pages, CM endpoint) is charged to the process's memory cgroup, also what xiw allocates in its work items; under a small memory.max a passive side's connections fail with ENOMEM (no OOM kill); everything is uncharged when the process ends
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$XIW_SELFTESTS/fault_lib.sh"

LC=$(need_prog xiw_lifecycle)
xiw_loopback
memcg_create xiw_memcg

# The charge a connection (two user QPs in one process, each with its CQ,
# rings, 8 KiB MR, data path, and an 8 KiB Write each way through the TX
# pages) adds: the kernel part must be at least xiw's own allocations,
# two TX batch buffers (16 KiB each) and six ring pages.
N=20
MIN_KERNEL=$(( 2 * 16384 + 6 * 4096 ))

# lc_start TAG N PORT DEPTH: xiw_lifecycle conns in the cgroup, stdin from the
# fifo TAG.in (held open by fd $lc_in), output in TAG.log; pid in $lc_pid.
lc_start() {
	mkfifo "$1.in"
	memcg_run xiw_memcg "$LC" conns 192.0.2.1 "$3" "$2" step "$4" <"$1.in" >"$1.log" 2>&1 &
	lc_pid=$!
	defer kill_bg "$lc_pid"
	exec {lc_in}>"$1.in"
}
# lc_wait TAG LINE SEC: until TAG.log has LINE; fails if the process ended.
lc_wait() {
	local end=$(( $(now_us) + $3 * 1000000 ))

	until grep -qx "$2" "$1.log"; do
		kill -0 "$lc_pid" 2>/dev/null || fail "$1: ended before '$2': $(tail -n 3 "$1.log")"
		[ "$(now_us)" -lt $end ] || fail "$1: no '$2' in $3 s"
		sleep 0.05
	done
}

lc_start p1 "$N" 7480 16
k=() c=()
for i in $(seq 1 "$N"); do
	lc_wait p1 "CONN $i" 60
	k[i]=$(memcg_stat xiw_memcg kernel)
	c[i]=$(memcg_current xiw_memcg)
	echo >&$lc_in
done
lc_wait p1 HOLD 60
# Charge per connection from connection 2 to N (the first one also
# brings the process's libraries and slab pages).
kper=$(( (k[N] - k[2]) / (N - 2) ))
cper=$(( (c[N] - c[2]) / (N - 2) ))
log "per connection (2 user QPs): memory.current +$cper bytes, memory.stat kernel +$kper bytes (vmalloc $(memcg_stat xiw_memcg vmalloc), slab_unreclaimable $(memcg_stat xiw_memcg slab_unreclaimable), sock $(memcg_stat xiw_memcg sock) at $N connections)"
held=$(memcg_current xiw_memcg)
exec {lc_in}>&-
rc=0
wait "$lc_pid" || rc=$?
[ "$rc" = 0 ] || fail "phase 1: xiw_lifecycle conns exited $rc: $(tail -n 3 p1.log)"
lc_wait p1 FREED 1
[ "$kper" -ge "$MIN_KERNEL" ] ||
	fail "a connection charges $kper bytes of kernel memory to its cgroup, expected at least $MIN_KERNEL (xiw's memory is not charged)"

# Everything the connections charged goes when the process does (RCU and
# deferred frees: give them a few seconds).
base_k=${k[1]}
wait_for 20 eval '[ "$(memcg_stat xiw_memcg kernel)" -le $(( base_k + 256 * 1024 )) ]' ||
	fail "after the process ended the cgroup still has $(memcg_stat xiw_memcg kernel) bytes of kernel memory (one connection: ${k[1]})"
log "after the process ended: memory.current $(memcg_current xiw_memcg) (at $N connections: $held), kernel $(memcg_stat xiw_memcg kernel)"

# Under a limit: the passive side in the cgroup, with its QPs created
# and its memory locked before the limit is set, so that what meets the
# limit is the memory xiw allocates per connection (in its CM work, for
# a QP of this process) and nothing that would invoke the cgroup's OOM
# killer (a page fault, a VMA, a file: an OOM kill's report fails every
# test). The active side runs outside the cgroup. 512 KiB above what the
# passive side holds when ready: some tens of connections of the 200
# asked for; the one that meets the limit fails with ENOMEM.
oom0=$(memcg_event xiw_memcg oom_kill) max0=$(memcg_event xiw_memcg max)
mkfifo p2.in c2.in
memcg_run xiw_memcg "$LC" accepter 192.0.2.1 7481 200 <p2.in >p2.log 2>&1 &
lc_pid=$!
defer kill_bg "$lc_pid"
exec {lc_in}>p2.in
lc_wait p2 READY 60
limit=$(( $(memcg_current xiw_memcg) + 512 * 1024 ))
memcg_set_max xiw_memcg "$limit"
"$LC" connector 192.0.2.1 7481 200 <c2.in >c2.log 2>&1 &
cpid=$!
defer kill_bg "$cpid"
exec {c_in}>c2.in
echo >&$lc_in
run_timeout 150 tail --pid="$lc_pid" -f /dev/null ||
	fail "phase 2: still accepting after 150 s: $(tail -n 1 p2.log); active side: $(tail -n 1 c2.log)"
rc=0
wait "$lc_pid" || rc=$?
exec {lc_in}>&- {c_in}>&-
wait "$cpid" || fail "connector exited $?: $(tail -n 2 c2.log)"
out=$(cat p2.log)
memcg_set_max xiw_memcg max
last=$(grep -E '^CONN [0-9]+$' <<<"$out" | tail -n1)
log "memory.max $limit: passive side ${last:-no connection}, then: $(grep -v -e '^CONN' -e READY <<<"$out" | head -n 3 | tr '\n' ' ') (exit $rc); active side: $(tail -n 1 c2.log)"
log "memory.events: max $(( $(memcg_event xiw_memcg max) - max0 )), oom $(memcg_event xiw_memcg oom), oom_kill $(( $(memcg_event xiw_memcg oom_kill) - oom0 )); memory.peak $(cat "$(memcg_path xiw_memcg)/memory.peak" 2>/dev/null || echo -)"
expect_nomatch "$out" '^HOLD' "phase 2 (200 connections under a limit of some tens)"
expect_eq "$(( $(memcg_event xiw_memcg oom_kill) - oom0 ))" 0 "OOM kills in the cgroup"
expect_match "$out" '^FAILED [0-9]+: .*(Cannot allocate memory|status -12)' "phase 2: the failed connection"
[ "$rc" = 2 ] || fail "phase 2: xiw_lifecycle accepter exited $rc, expected 2 (a failed connection)"
[ "$(memcg_event xiw_memcg max)" -gt "$max0" ] || fail "memory.events max did not count the limit"

wait_for 20 eval '[ "$(memcg_stat xiw_memcg kernel)" -le $(( base_k + 256 * 1024 )) ]' ||
	fail "after the limited process ended the cgroup still has $(memcg_stat xiw_memcg kernel) bytes of kernel memory"
[ -z "$(rdma resource show qp 2>/dev/null | grep -w xiw0 | grep -v 'type GSI')" ] ||
	fail "QPs left: $(rdma resource show qp | grep -w xiw0)"
log "after it ended: memory.current $(memcg_current xiw_memcg), kernel $(memcg_stat xiw_memcg kernel); no QP left"
