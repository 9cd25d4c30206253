#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 900
# description: soak: XIW_SOAK_QPS QPs (default 1000: 500 rdma_cm connections over one xiw device) with mixed traffic (Send/Recv with sequence numbers, RDMA Write, RDMA Read, Fetch&Add and Compare&Swap with checked results) for XIW_SOAK_TIME seconds (default 600), then graceful teardown; slab objects, free pages, vmalloc areas, TCP sockets and rdma resources measured before and after must be back within the stated tolerance. make soak runs it; dp_soak_short is the short form in make check
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

S=$(need_prog xiw_soak)
need_cmd ss rdma
qps=${XIW_SOAK_QPS:-1000}
secs=${XIW_SOAK_TIME:-600}
port=${XIW_SOAK_PORT:-7600}
xiw_loopback
vmalloc_xiw() { grep -c "\[$XIW_MOD\]" /proc/vmallocinfo || true; }
# free pages: the page allocator's count (vmstat), in 4 KiB pages
free_pages() { awk '$1 == "nr_free_pages" { print $2 }' /proc/vmstat; }
# established TCP connections and TCP sockets in use (sockstat)
tcp_estab() { ss -Htn state established | wc -l; }
tcp_inuse() { awk '$1 == "TCP:" { print $3 }' /proc/net/sockstat; }
# kernel threads: the CM and data path work items run on unbound
# workqueues, whose pools grow kworkers under load and reap them only
# after 5 idle minutes (each with its pid, task, stack and worker struct)
kthreads() { ps -e -o comm= | grep -c '^kworker/' || true; }
# caches not counted: vmap_area (vmalloc frees lazily; xiw's own areas
# are counted exactly below) and TIME_WAIT/request socks (counted by ss)
slab_filter() { grep -v -e '^vmap_area ' -e '^tw_sock_TCP' -e '^request_sock_TCP' "$1"; }
snapshot() {	# NAME: every figure of one moment, in NAME.*
	sync
	echo 3 >/proc/sys/vm/drop_caches
	slab_snapshot "$1.slab.all"
	slab_filter "$1.slab.all" >"$1.slab"
	awk '{ s += $2 } END { print s }' "$1.slab" >"$1.slabsum"
	kthreads >"$1.kworkers"
	free_pages >"$1.pages"
	awk '$1 == "MemFree:" { print $2 }' /proc/meminfo >"$1.memfree"
	tcp_estab >"$1.estab"
	tcp_inuse >"$1.inuse"
	tcp_socks >"$1.alloc"
	vmalloc_xiw >"$1.vmalloc"
}

# A warm-up with the same number of QPs (2 s of traffic) grows the
# workqueue pools, socket and slab caches to what the soak needs; the
# baseline is taken after it, so a leak of the soak itself shows.
run_timeout 900 "$S" 192.0.2.1 $((port + 1)) "$qps" 2 >warmup.log 2>&1 ||
	{ sed 's/^/# /' warmup.log | tail -n 20; fail "warm-up: $(grep -m3 FAIL warmup.log | tr '\n' ' ')"; }
log "warm-up: $(grep '^connected .* QPs in' warmup.log), $(grep '^ops ' warmup.log)"
snapshot base
log "baseline: kworkers $(cat base.kworkers), slab objects $(cat base.slabsum), free pages $(cat base.pages) (MemFree $(cat base.memfree) kB), TCP established $(cat base.estab) inuse $(cat base.inuse) alloc $(cat base.alloc), xiw vmalloc areas $(cat base.vmalloc)"

rc=0
"$S" 192.0.2.1 "$port" "$qps" "$secs" >soak.log 2>&1 &
pid=$!
defer eval "kill $pid 2>/dev/null || true"
# the figures under load, once the connections are up
wait_for 600 grep -q '^connected [0-9]* QPs in' soak.log ||
	{ sed 's/^/# /' soak.log | tail -n 20; fail "connections not up: $(tail -n1 soak.log)"; }
# The connections and the rdma resources first: the slab snapshot drops
# the caches, which on a loaded host took longer than a 20 s soak's
# traffic (then 0 connections were "under load").
tcp_estab >load.estab.now
rdma res show | grep ' xiw0: ' >load.res || true
snapshot load
log "$(grep '^connected .* QPs in' soak.log); under load: TCP established $(cat load.estab.now), rdma: $(cat load.res); slab objects $(cat load.slabsum), free pages $(cat load.pages), xiw vmalloc areas $(cat load.vmalloc)"
[ "$(cat load.estab.now)" -ge "$(($(cat base.estab) + qps))" ] ||
	fail "under load: $(cat load.estab.now) TCP connections established, want $qps more than $(cat base.estab)"
wait "$pid" || rc=$?
sed 's/^/# /' soak.log | grep -v '^# connected [0-9]*$'
[ "$rc" = 0 ] || fail "xiw_soak exited $rc: $(grep -m3 FAIL soak.log | tr '\n' ' ')"
expect_match "$(cat soak.log)" '^teardown ok$' "xiw_soak"
expect_match "$(cat soak.log)" ', errors 0$' "xiw_soak"

# Teardown is done: what the connections held must be given back. TCP
# sockets at once (the closes are graceful: TIME_WAIT sockets are not in
# use and not counted; they are reported). Memory after the kernel's
# deferred frees (RCU, vmalloc's lazy purge, per-CPU caches): a few tries.
summary=$(rdma res show | grep ' xiw0: ' || true)
expect_match "$summary" 'pd 0 cq 0 qp 0 cm_id 0 mr 0 ctx 0' "rdma resources after teardown"
wait_for 30 eval '[ "$(tcp_estab)" = "$(cat base.estab)" ]' ||
	fail "TCP established after teardown: $(tcp_estab), baseline $(cat base.estab)"
wait_for 30 eval '[ "$(tcp_inuse)" -le "$(cat base.inuse)" ]' ||
	fail "TCP sockets in use after teardown: $(tcp_inuse), baseline $(cat base.inuse)"
# Tolerances, measured against what the kernel does anyway (two runs of
# dp_soak_short without a leak: single caches +157..+314 objects, all
# filtered caches +486, free pages -333..-950): slab objects (but the
# caches slab_filter leaves out) at most max(2 per QP, 1500) more than
# before, no single cache grown by max(3/4 per QP, 400) objects (and two
# slabs per CPU of that cache, what slab_snapshot can tell apart) (a leak
# of one object per QP shows at 1000 QPs, of two per QP at 200); free
# pages at most 1024 (4 MiB) fewer (a leak of two pages per QP shows at
# 1000 QPs; rings are vmalloc'ed and counted exactly); xiw's vmalloc
# areas exactly back.
slab_tol=$((2 * qps > 1500 ? 2 * qps : 1500))
cache_tol=$((3 * qps / 4 > 400 ? 3 * qps / 4 : 400))
page_tol=1024
ok=0
for try in 1 2 3 4 5 6; do
	sleep 5
	snapshot after
	ds=$(($(cat after.slabsum) - $(cat base.slabsum)))
	dp=$(($(cat base.pages) - $(cat after.pages)))
	grown=$(slab_grown base.slab after.slab $cache_tol)
	if [ "$ds" -le "$slab_tol" ] && [ "$dp" -le "$page_tol" ] &&
		[ -z "$grown" ] && [ "$(cat after.vmalloc)" = "$(cat base.vmalloc)" ]; then
		ok=1
		break
	fi
done
tw=$(ss -Htn state time-wait | wc -l)
log "after teardown (try $try): kworkers $(cat after.kworkers) (baseline $(cat base.kworkers)), slab objects $(cat after.slabsum) ($ds vs baseline, tolerance $slab_tol; largest: $(slab_top base.slab after.slab)), free pages $(cat after.pages) ($dp fewer, tolerance $page_tol), MemFree $(cat after.memfree) kB (baseline $(cat base.memfree)), TCP established $(cat after.estab) inuse $(cat after.inuse) alloc $(cat after.alloc) (TIME_WAIT $tw), xiw vmalloc areas $(cat after.vmalloc)"
[ $ok = 1 ] || fail "not back to baseline: slab $ds (tolerance $slab_tol), caches grown by $cache_tol or more: ${grown:-none}, pages $dp (tolerance $page_tol), vmalloc $(cat after.vmalloc) vs $(cat base.vmalloc)"
log "ok: $qps QPs, $secs s, $(grep '^ops ' soak.log)"
