#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 180
# description: a connection's teardown waits for no RCU grace period: 60 rdma_cm connections cycled one at a time and 60 more 4 in flight (xiw1 -> xiw0, xiw_cm_scale rate: every one up, a message each way, torn down, every receive flushed) while kprobes with a stack trace on synchronize_rcu and synchronize_rcu_expedited record every caller: none of the waits has a frame of xiw (an expedited one interrupts every CPU, at the rate a local user or a remote client cycles connections)
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

S=$(need_prog xiw_cm_scale)
xiw_two_devices

# Both grace-period waits, each a kprobe event with a stack trace, in a
# tracefs instance of the test's own.
tr=/sys/kernel/tracing
if [ ! -d $tr/events ]; then
	mount -t tracefs tracefs $tr || fail "no tracefs"
	defer umount $tr
fi
for f in synchronize_rcu synchronize_rcu_expedited; do
	echo "p:xiwgp/$f $f" >>$tr/kprobe_events ||
		fail "kprobe on $f: $(tail -n 3 $tr/error_log 2>/dev/null)"
	defer eval "echo '-:xiwgp/$f' >>$tr/kprobe_events"
done
gi=$tr/instances/xiw_gp
mkdir $gi
defer rmdir $gi
echo 4096 >$gi/buffer_size_kb
for f in synchronize_rcu synchronize_rcu_expedited; do
	echo stacktrace >$gi/events/xiwgp/$f/trigger
	defer eval "echo '!stacktrace' >$gi/events/xiwgp/$f/trigger"
	echo 1 >$gi/events/xiwgp/$f/enable
	defer eval "echo 0 >$gi/events/xiwgp/$f/enable"
done

# waits: "TOTAL XIW", the waits recorded and those with a frame of xiw
# (a function of the module: "=> xiw_...", "[xiw]" after it)
waits() {
	awk '/: synchronize_rcu(_expedited)?: \(/ { n++; cur = n }
	     /=> (xiw_|.*\[xiw\])/ && cur { x[cur] = 1 }
	     END { c = 0; for (i in x) c++; printf "%d %d\n", n, c }' $gi/trace
}

port=7530
# rate NAME N INFLIGHT: N cycles xiw1 -> xiw0, all up, none failed
rate() {
	local name=$1 n=$2 c=$3 srv r
	"$S" server 192.0.2.1 $port >"srv-$name.log" 2>&1 &
	srv=$!
	defer eval "kill $srv 2>/dev/null || true"
	wait_listen $port 20 $srv "srv-$name.log"
	run_timeout 150 "$S" rate 192.0.2.1 $port 192.0.2.2 "$n" "$c" >"$name.log" 2>&1 ||
		fail "$name: $(grep -m3 -e FAIL -e : "$name.log" | tr '\n' ' ')"
	r=$(grep '^RESULT mode=rate' "$name.log") || fail "$name: no RESULT line"
	expect_match "$r" " conns=$n inflight=$c .* failed=0 retries=0 errors=0\$" "$name"
	run_timeout 60 tail --pid="$srv" -f /dev/null || fail "$name: the server did not end"
	wait "$srv" || fail "$name: server exited $?: $(grep -m1 FAIL "srv-$name.log")"
	expect_match "$(cat "srv-$name.log")" "^served $n connections .* errors 0\$" "$name: server"
	log "$name: $(grep -o 'td_med=[0-9.]* td_p99=[0-9.]*' <<<"$r")"
	port=$((port + 1))
}

# the probes work: a netdev's unregistration waits for a grace period
# (synchronize_net() under RTNL, expedited); it is recorded with its stack
: >$gi/trace
ip link add d9 type dummy
ip link del d9
read -r total0 _ <<<"$(waits)"
[ "$total0" -ge 1 ] || fail "the kprobes recorded no wait for a netdev's unregistration: $(head -c 300 $gi/trace)"
grep -q '=> .*unregister_netdev' $gi/trace ||
	fail "no stack trace with the recorded waits: $(grep -m3 '=>' $gi/trace)"
log "probe check: $total0 grace-period waits recorded for one netdev's unregistration"

: >$gi/trace
rate seq 60 1
rate par 60 4
read -r total xiw <<<"$(waits)"
log "grace-period waits during 120 connection cycles: $total, with a frame of xiw: $xiw"
# where the waits come from, most frequent first: the first four frames
# under the probe's own (kprobe, ftrace, the trampoline's address)
awk 'function out() { if (st != "") print st; st = ""; k = 0 }
     /: synchronize_rcu(_expedited)?: \(/ { out(); k = 4; next }
     /=> / && k > 0 && $2 !~ /^(kprobe|ftrace|0x|synchronize_rcu)/ { sub(/\+0x.*/, "", $2); st = st (st == "" ? "" : " < ") $2; k-- }
     END { out() }' $gi/trace |
	sort | uniq -c | sort -rn | head -n 5 | sed 's/^ */# from: /'
expect_eq "$xiw" 0 "grace-period waits with a frame of xiw in 120 connection teardowns"
