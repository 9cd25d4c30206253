#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 2vm
# timeout: 900
# description: rdma_cm at scale between two VMs (xiw <-> xiw, xiw_cm_scale): connect/teardown cycles one at a time and 8 in flight (every connection up on both sides, none failed or retried); then 1000 connected RC QPs at once (own CQ, MR, id each), a verified RDMA Write + Send + RDMA Read round trip on every one at once, teardown (every receive flushed); rdma resources, TCP sockets, xiw's Read counter, slab, free pages, xiw's vmalloc areas and the module's references back to the baseline on both VMs
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
#
# Server on b, client on a. XIW_CM_SCALE_QPS (default 1000),
# XIW_CM_SCALE_ROUNDS (2), XIW_CM_SCALE_SIZE (4096 bytes per Write and
# Read), XIW_CM_SCALE_INFLIGHT (16 connections opening or closing at a
# time). XIW_CM_SCALE_LEAK=K (both VMs see it): the client leaves K
# connections up on purpose, and the test must fail on both VMs.

S=$(need_prog xiw_cm_scale)
need_cmd ss rdma
N=${XIW_CM_SCALE_QPS:-1000}
R=${XIW_CM_SCALE_ROUNDS:-2}
SZ=${XIW_CM_SCALE_SIZE:-4096}
C=${XIW_CM_SCALE_INFLIGHT:-16}
leak=${XIW_CM_SCALE_LEAK:-0}
xiw_load
xiw_need_provider
xiw_link_add xiw0 "$XIW_NETDEV"
wait_port_state xiw0 PORT_ACTIVE 5
defer eval 'kill -KILL $(jobs -p) 2>/dev/null; wait 2>/dev/null || true'

# res [KINDS]: xiw0's counts in `rdma res show`, "pd N cq N ..."; KINDS
# (an ERE) the ones to print, default all of pd, cq, qp, cm_id, mr, ctx
res() {
	rdma res show | sed -n 's/.* xiw0: //p' |
		grep -Eo "\\<(${1:-pd|cq|qp|cm_id|mr|ctx}) [0-9]*" | tr '\n' ' ' | sed 's/ $//'
}
# per connection: one of each (PDs and contexts are per process:
# librdmacm's and the program's; librdmacm frees its PD with the last id
# on the device)
conn_kinds='cq|qp|cm_id|mr'
# res_plus BASE DCQ DQP DCM DMR: BASE ("cq N qp N cm_id N mr N") grown
res_plus() {
	local -a b=($1)
	echo "cq $((b[1] + $2)) qp $((b[3] + $3)) cm_id $((b[5] + $4)) mr $((b[7] + $5))"
}
# tcp_on PORT [STATE]: TCP sockets of the connections on PORT
tcp_on() {
	ss -Htn state "${2:-established}" "( sport = :$1 or dport = :$1 )" | wc -l
}
# log_wait SEC FILE ERE: until FILE holds a line matching ERE; 1 on
# timeout. Builtins only: wait_for's poll of grep and sleep every 0.1 s
# forks 20 processes a second, and after the minutes of a 1000-QP run
# the pid cache was still 1730 objects up at the end (freed later).
mkfifo nap.fifo
exec {nap}<>nap.fifo
log_wait() {
	local end=$(( ${EPOCHREALTIME/./} + $1 * 1000000 )) l
	while :; do
		# (a background command's log may not be open yet)
		if [ -e "$2" ]; then
			while IFS= read -r l; do
				[[ $l =~ $3 ]] && return 0
			done <"$2"
		fi
		[ "${EPOCHREALTIME/./}" -lt $end ] || return 1
		read -r -t 0.2 -u "$nap" l || :
	done
}
vmalloc_xiw() { grep -c "\[$XIW_MOD\]" /proc/vmallocinfo || true; }
free_pages() { awk '$1 == "nr_free_pages" { print $2 }' /proc/vmstat; }
mem_avail() { awk '$1 == "MemAvailable:" { print $2 }' /proc/meminfo; }
# kernel threads: the CM and data path work items run on unbound
# workqueues, whose pools grow kworkers under load and reap them only
# after 5 idle minutes
kthreads() { ps -e -o comm= | grep -c '^kworker/' || true; }
# the caches the soak leaves out (tests-long/dp_soak.sh: vmalloc's lazy
# purge, TIME_WAIT and request socks), and pid: SLUB merges
# tcp_bind_bucket and tcp_bind2_bucket into it (all three 128 bytes,
# accounted), and each of a's 1000 TIME_WAIT sockets holds its port's two
# for 60 s (2000 more "pid" objects at the end, going as they expire;
# b, which closes passively, +32). xiw allocates none. With slab_debug
# on the command line SLUB merges nothing, and the bind buckets are
# caches of their own: left out by name for the same reason.
slab_filter() {
	grep -v -e '^vmap_area ' -e '^tw_sock_TCP' -e '^request_sock_TCP' \
		-e '^pid ' -e '^tcp_bind_bucket ' -e '^tcp_bind2_bucket ' "$1"
}
snapshot() {	# NAME: the memory figures of one moment, in NAME.*
	sync
	echo 3 >/proc/sys/vm/drop_caches
	slab_snapshot "$1.slab.all"
	slab_filter "$1.slab.all" >"$1.slab"
	awk '{ s += $2 } END { print s }' "$1.slab" >"$1.slabsum"
	free_pages >"$1.pages"
	mem_avail >"$1.avail"
	vmalloc_xiw >"$1.vmalloc"
	xiw_refcnt >"$1.refcnt"
	kthreads >"$1.kworkers"
	awk '$1 == "pid" { print $2 }' "$1.slab.all" >"$1.pids"
}

# server_start PORT [ARGS]: the server on b, listening; sets srv
server_start() {
	"$S" server "$XIW_LOCAL_IP" "$@" >srv.log 2>&1 &
	srv=$!
	wait_listen "$1" 20 "$srv" srv.log
}
# server_end: wait for the server's end (the client's quit); it must
# have served WANT connections without an error
server_end() {
	local want=$1 rc=0
	run_timeout 300 tail --pid="$srv" -f /dev/null ||
		{ kill_bg "$srv"; fail "server did not end: $(tail -n3 srv.log)"; }
	wait "$srv" || rc=$?
	grep '^FAIL' srv.log | head -n5 | sed 's/^/# /' || true
	[ $rc = 0 ] || fail "server exited $rc: $(grep -m1 FAIL srv.log)"
	expect_match "$(cat srv.log)" "^served $want connections .* errors 0\$" "server"
}

# tcp_stats: TCP's counters of lost segments and their repair
tcp_stats() {
	nstat -az TcpRetransSegs TcpExtTCPLossProbes TcpExtTCPTimeouts \
		TcpExtTCPSynRetrans TcpExtListenOverflows TcpExtTCPSpuriousRTOs \
		TcpExtTCPDSACKRecv TcpExtTCPFastRetrans TcpOutRsts TcpEstabResets \
		TcpExtTCPAbortOnClose TcpExtTCPAbortOnData TcpAttemptFails \
		TcpExtTCPAbortOnTimeout TcpInErrs TcpExtTWKilled 2>/dev/null |
		awk 'NR > 1 { printf "%s %s ", $1, $2 }'
}
log "TCP at the start: $(tcp_stats)"

# --- 1: connect/teardown cycles ---------------------------------------------

# rate NAME CONNS INFLIGHT PORT: CONNS cycles; every one up and torn
# down, no failure, no retry (xiw picks another port where siw would
# fail with EADDRINUSE), and the server saw them all
rate() {
	local name=$1 n=$2 c=$3 port=$4 r
	if [ "$XIW_ROLE" = b ]; then
		server_start "$port"
		xiw_barrier "$name-listen" 60
		server_end "$n"
		xiw_barrier "$name-done" 300
		return
	fi
	xiw_barrier "$name-listen" 60
	run_timeout 300 "$S" rate "$XIW_PEER_IP" "$port" "$XIW_LOCAL_IP" "$n" "$c" \
		>"$name.log" 2>&1 || fail "$name: $(grep -m3 -e FAIL -e : "$name.log" | tr '\n' ' ')"
	r=$(grep '^RESULT mode=rate' "$name.log") || fail "$name: no RESULT line"
	expect_match "$r" " conns=$n inflight=$c .* failed=0 retries=0 errors=0\$" "$name"
	log "$name: $(grep connects/s "$name.log")"
	grep '^slow: ' "$name.log" | sed 's/^/# /' || true
	xiw_barrier "$name-done" 300
}
rate seq 40 1 7521
log "TCP after seq: $(tcp_stats)"
rate par 100 8 7522
log "TCP after par: $(tcp_stats)"
wait_for 10 eval "[ -z \"\$(rdma res show cm_id 2>/dev/null)\" ]" ||
	fail "cm_ids left after the cycles: $(rdma res show cm_id)"

# --- 2: N connected QPs with traffic, teardown, baseline ----------------------

port=7523
t0=$(now_us)
snapshot base
base_res=$(res)
base_conn=$(res "$conn_kinds")
base_reads=$(xiw_counter read_requests_answered)
log "baseline: $base_res; slab objects $(cat base.slabsum), free pages $(cat base.pages), MemAvailable $(cat base.avail) kB, xiw vmalloc areas $(cat base.vmalloc), module refcnt $(cat base.refcnt), kworkers $(cat base.kworkers), pids $(cat base.pids)"

if [ "$XIW_ROLE" = b ]; then
	server_start "$port" --hold
	xiw_barrier scale-listen 60
else
	xiw_barrier scale-listen 60
	"$S" scale "$XIW_PEER_IP" "$port" "$XIW_LOCAL_IP" "$N" "$C" "$R" "$SZ" \
		--pause --hold >cli.log 2>&1 &
	cli=$!
	log_wait 400 cli.log '^(paused|FAIL)'
	grep -q '^paused' cli.log ||
		{ sed 's/^/# /' cli.log | tail -n 20; fail "client: $(grep -m3 FAIL cli.log | tr '\n' ' ')"; }
	log "$(grep '^connected ' cli.log); $(grep '^RESULT mode=open' cli.log)"
	grep '^slow: ' cli.log | sed 's/^/# /' || true
	log "$(grep '^traffic ok' cli.log)"
fi
# every connection up: N of each object (one PD and context per
# process; b's listener is one cm_id more) and N TCP connections
xiw_sync scale-up . 400 >/dev/null || fail "peer lost before the counts under load"
t_up=$(now_us)
lb=$([ "$XIW_ROLE" = b ] && echo 1 || echo 0)
expect_eq "$(res "$conn_kinds")" "$(res_plus "$base_conn" "$N" "$N" $((N + lb)) "$N")" \
	"rdma resources with $N connections up"

expect_eq "$(tcp_on $port)" "$N" "TCP connections established on port $port"
snapshot load
log "TCP under load: $(tcp_stats)"
log "under load: $(res); TCP established $(tcp_on $port); slab objects $(cat load.slabsum) (+$(($(cat load.slabsum) - $(cat base.slabsum)))), free pages $(cat load.pages) ($(($(cat load.pages) - $(cat base.pages)))), MemAvailable $(cat load.avail) kB, xiw vmalloc areas $(cat load.vmalloc)"
xiw_sync scale-counted . 120 >/dev/null || fail "peer lost after the counts under load"

# the teardown: the client's objects go one by one (each process keeps
# its PD and context, the server its listener until it exits)
if [ "$XIW_ROLE" = a ]; then
	kill -USR1 "$cli"
	log_wait 400 cli.log '^(holding|FAIL)'
	grep -q '^holding' cli.log ||
		{ sed 's/^/# /' cli.log | tail -n 20; fail "client: $(grep -m3 FAIL cli.log | tr '\n' ' ')"; }
	log "$(grep '^closed ' cli.log); $(grep '^RESULT mode=close' cli.log)"
	expect_match "$(cat cli.log)" "^closed $((N - leak)) connections .*, $((2 * (N - leak))) receives flushed; errors 0\$" "client"
	xiw_barrier scale-closing 60
else
	# the client's quit came once a is here
	xiw_barrier scale-closing 400
	log_wait 60 srv.log '^(holding|FAIL)'
	grep -q '^holding' srv.log ||
		{ sed 's/^/# /' srv.log | tail -n 20; fail "server: $(grep -m3 FAIL srv.log | tr '\n' ' ')"; }
	log "$(grep '^served ' srv.log)"
	expect_match "$(cat srv.log)" "^served $((N - leak)) connections .* kept $leak; completions: recv $((N * (R + 1))) send $((N * (R + 1))), flushed $((2 * (N - leak))); errors 0\$" "server"
	# b answered every Read of the client exactly once
	expect_eq "$(($(xiw_counter read_requests_answered) - base_reads))" "$((N * R))" \
		"Read Requests answered"
fi
xiw_sync scale-closed . 400 >/dev/null || fail "peer lost before the counts after teardown"
t_down=$(now_us)
# the processes still live: their objects back but one PD and context
# (and b's listener)
expect_eq "$(res "$conn_kinds")" "$(res_plus "$base_conn" 0 0 "$lb" 0)" \
	"rdma resources after the teardown, the processes still up"
wait_for 30 eval '[ "$(tcp_on $port)" = 0 ]' ||
	fail "TCP connections on port $port after the teardown: $(tcp_on $port)"
log "TCP after the teardown: $(tcp_stats)"
log "after the teardown: TIME_WAIT on port $port: $(tcp_on $port time-wait)"
xiw_sync scale-checked . 120 >/dev/null || fail "peer lost after the counts after teardown"

# the processes end: everything back
p=$([ "$XIW_ROLE" = a ] && echo "$cli" || echo "$srv")
kill -TERM "$p"
rc=0
run_timeout 60 tail --pid="$p" -f /dev/null || fail "xiw_cm_scale did not end on SIGTERM"
wait "$p" || rc=$?
[ $rc = 0 ] || fail "xiw_cm_scale exited $rc"
expect_eq "$(res)" "$base_res" "rdma resources after the processes ended"
wait_for 10 eval '[ "$(xiw_refcnt)" = "$(cat base.refcnt)" ]' ||
	fail "module refcnt $(xiw_refcnt), baseline $(cat base.refcnt)"
# Memory after the kernel's deferred frees (RCU, vmalloc's lazy purge,
# per-CPU caches): a few tries. Tolerances as make soak's
# (tests-long/dp_soak.sh): slab objects max(2 per QP, 1500), one cache
# max(3/4 per QP, 400), free pages 1024 (4 MiB); xiw's vmalloc areas
# exactly back.
slab_tol=$((2 * N > 1500 ? 2 * N : 1500))
cache_tol=$((3 * N / 4 > 400 ? 3 * N / 4 : 400))
page_tol=1024
ok=0
for try in 1 2 3 4 5 6; do
	snapshot after
	ds=$(($(cat after.slabsum) - $(cat base.slabsum)))
	dp=$(($(cat base.pages) - $(cat after.pages)))
	grown=$(slab_grown base.slab after.slab "$cache_tol")
	if [ "$ds" -le "$slab_tol" ] && [ "$dp" -le "$page_tol" ] &&
		[ -z "$grown" ] && [ "$(cat after.vmalloc)" = "$(cat base.vmalloc)" ]; then
		ok=1
		break
	fi
	log "try $try: slab $ds, free pages $dp fewer, grown: ${grown:-none}, xiw vmalloc areas $(cat after.vmalloc)"
	sleep 5
done
log "after the end (try $try): kworkers $(cat after.kworkers), pids $(cat after.pids); slab objects $(cat after.slabsum) ($ds vs baseline, tolerance $slab_tol; largest: $(slab_top base.slab after.slab)), free pages $(cat after.pages) ($dp fewer, tolerance $page_tol), MemAvailable $(cat after.avail) kB (baseline $(cat base.avail)), xiw vmalloc areas $(cat after.vmalloc), module refcnt $(xiw_refcnt)"
[ $ok = 1 ] || fail "not back to baseline: slab $ds (tolerance $slab_tol), caches grown by $cache_tol or more: ${grown:-none}, pages $dp (tolerance $page_tol), xiw vmalloc areas $(cat after.vmalloc) vs $(cat base.vmalloc)"
t1=$(now_us)
log "ok: $N QPs; connect and traffic $(((t_up - t0) / 1000)) ms, teardown $(((t_down - t_up) / 1000)) ms, whole part $(((t1 - t0) / 1000)) ms"
