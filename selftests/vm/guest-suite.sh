#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The in-guest half of selftests/run.sh: runs the tests of one VM boot.
# Started by selftests/vm/vm.sh inside the VM; never run it on the host.
#
# Input (in $XIW_VM_OUT, the writable 9p dir shared with the host):
#   plan      one test per line: NAME<TAB>TIMEOUT_S<TAB>SCRIPT_PATH
#   vm.env    environment (XIW_ROLE single|a|b|c, XIW_TOPOLOGY 2vm|3vm,
#             XIW_LOCAL_IP, XIW_PEER_IP, XIW_IP_A/B/C (3vm), XIW_BUILD,
#             XIW_KO, XIW_UNLOAD_MODULES, XIW_RUN_ID, ...; XIW_RESUME=N and
#             XIW_RESUME_BOOT=K in the boot of a 3vm VM after its power
#             cycle: resume at plan line N, whose test runs with XIW_BOOT=K)
# Output (same dir):
#   results   one line per test as it ends: NAME<TAB>ok|fail|skip<TAB>SECONDS<TAB>REASON
#   tests/NAME.log    the test's stdout+stderr, then the runner's findings
#   tests/NAME.dmesg  the kernel log written while the test ran
#   dmesg.log         the whole kernel log at the end
#   done              written last (the host knows the guest got to the end)
#   power-cycle       (3vm, lib.sh's xiw_vm_power_cycle) the test asked the
#                     host to power this VM off and boot it again
#
# Per test: (2vm: barrier with the peer), a marker line in the kernel log,
# the script in its own session (setsid), started by kselftest's runner
# (make -C selftests run_tests TEST_PROGS=SCRIPT), with a timeout (TERM, KILL 5 s later;
# a test that cannot be killed, e.g. stuck in D state, is abandoned and
# failed), every process left in the session killed, then the kernel log
# since the marker scanned for splats and the taint flags compared.
# After the last test: `module_unload` rmmods $XIW_UNLOAD_MODULES (default
# xiw) if loaded and scans the log once more.
set -u
export LC_ALL=C

out=${XIW_VM_OUT:?not in a test VM}
XIW_ROOT=${XIW_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
export XIW_ROOT
role=${XIW_ROLE:-single}
ksft=${XIW_KSFT:-1}	# 0: start each test without kselftest's runner
run_id=${XIW_RUN_ID:-$$}
topo=${XIW_TOPOLOGY:-}
[ "$role" = single ] || topo=${topo:-2vm}
resume=${XIW_RESUME:-0}	# 3vm: the plan line this boot resumes at
mkdir -p "$out/tests"
[ "$resume" -gt 0 ] || : >"$out/results"

# Kernel log lines that fail a test (extended regex).
bad_re='WARNING:|BUG:|BUG [^ ]+ \(|Oops|KFENCE|refcount_t|list_add corruption|list_del corruption'
# User-space faults are the test's business (exit status), except inside
# the provider: "general protection fault[,:]" and "invalid opcode: " are
# the kernel's own oops forms ("traps: PROG[PID] general protection fault
# ip:..." is a user process).
bad_re+='|general protection fault[,:]|kernel BUG|UBSAN|KASAN|hung_task|blocked for more than'
bad_re+='|Kernel panic|Call Trace:|rcu_.*stall|detected stalls|cannot create duplicate filename'
bad_re+='|unreferenced object|invalid opcode: |Unable to handle'
bad_re+='|segfault at .* in (lib)?xiw|traps: .* in (lib)?xiw'
# Taint bits that fail a test when they appear: B bad page (5), D die (7),
# W warning (9), L soft lockup (14).
bad_taint_mask=$(( (1 << 5) | (1 << 7) | (1 << 9) | (1 << 14) ))

# With slab debugging on the kernel command line (XIW_VM_APPEND=
# "slab_debug=FZP ..."), every cache is validated after each test, so a
# corruption is reported ("BUG <cache> (...)", taint B) against the test
# that made it rather than the one that later trips over it.
slab_debug=0
grep -qE '(^| )(slab|slub)_debug' /proc/cmdline && slab_debug=1
slab_validate() {
	local v

	[ $slab_debug = 1 ] || return 0
	for v in /sys/kernel/slab/*/validate; do
		echo 1 >"$v" 2>/dev/null || true
	done
}

# A sleep without fork: read from a fifo nobody writes.
mkfifo /run/xiw-suite.fifo
exec 9<>/run/xiw-suite.fifo
nap() { read -r -t "$1" -u 9 _ || :; }

now() { echo "${EPOCHREALTIME/./}"; }	# microseconds

say() { echo "xiw-suite[$role]: $*"; }

# --- 2vm: the virtual link and the barrier ------------------------------------
sync_ok=1
if [ "$role" != single ]; then
	# shellcheck source=../lib.sh
	XIW_SYNC_PORT=${XIW_SYNC_PORT:-7700}
	modprobe virtio_net
	XIW_NETDEV=
	for n in /sys/class/net/*; do
		[ "$(basename "$(readlink -f "$n/device/driver" 2>/dev/null)")" = virtio_net ] &&
			XIW_NETDEV=$(basename "$n") && break
	done
	if [ -z "$XIW_NETDEV" ]; then
		say "no virtio-net interface"; sync_ok=0
	else
		if [ "$topo" = 3vm ]; then
			# The 3vm segment is qemu's multicast socket netdev,
			# which hands every VM its own frames back. IPv6 DAD
			# would take the looped-back Neighbor Solicitation of
			# its own tentative address for another host's
			# (enhanced DAD's nonce catches that, but only when
			# the kernel has it and it is on): no DAD on this
			# netdev, whose addresses run.sh makes unique anyway.
			# IPv4 is unaffected: ARP ignores a request for
			# another address, and a frame to another MAC is
			# dropped as PACKET_OTHERHOST.
			sysctl -qw "net.ipv6.conf.$XIW_NETDEV.accept_dad=0" \
				"net.ipv6.conf.$XIW_NETDEV.dad_transmits=0"
		fi
		ip addr add "$XIW_LOCAL_IP/24" dev "$XIW_NETDEV"
		ip link set "$XIW_NETDEV" up
		say "$XIW_NETDEV $XIW_LOCAL_IP, peer $XIW_PEER_IP${XIW_IP_C:+ (3vm: a $XIW_IP_A, b $XIW_IP_B, c $XIW_IP_C)}"
	fi
	export XIW_NETDEV XIW_SYNC_PORT
fi

# barrier NAME SEC [resync]: both VMs reach NAME within SEC s (uses xiw_sync
# from lib.sh in a subshell so that lib.sh's traps stay out of this script).
# Sets barrier_why when it fails.
#
# One failure stays one failure: a test that fails on one side leaves the
# two VMs at different points (one at its end barrier or already at the
# next test's begin barrier, the other still in the test's own syncs), so
# barriers meet the wrong partner and fail. Only a peer VM that died (or
# the virtual link missing) loses the peer for good (sync_ok=0); any
# other miss is repaired at the next test boundary: the begin barrier of
# each test ("resync") keeps answering whatever the peer sends until the
# peer reaches the same begin barrier. Its name is that test's plan entry
# (unique per test, also under -r), so a stale line of an earlier point
# can never satisfy it. The peer's own in-test syncs meanwhile fail (they
# meet "begin:NEXT"), which fails only the test that went wrong already.
barrier() {
	[ "$role" = single ] && return 0
	barrier_why=
	[ $sync_ok = 1 ] || { barrier_why="the peer VM was lost earlier"; return 1; }
	local end=$(( EPOCHSECONDS + $2 )) left err at
	while :; do
		left=$(( end - EPOCHSECONDS ))
		if [ $left -le 0 ]; then
			barrier_why="no peer at $1 within $2 s${err:+ ($err)}"
			break
		fi
		if err=$( (set +eE; . "$XIW_ROOT/selftests/lib.sh"; trap - ERR EXIT
			   xiw_sync "$1" . "$left" 2>&1 >/dev/null) ); then
			return 0
		fi
		err=${err//$'\n'/ }
		if [ -e "$out/peer-died" ]; then
			barrier_why="the peer VM died"
			sync_ok=0
			break
		fi
		at=
		if [[ $err == *"peer is at '"* ]]; then
			at=${err#*peer is at \'}
			at=${at%%\'*}
		fi
		if [ "${3:-}" = resync ] && [ $(( end - EPOCHSECONDS )) -gt 0 ]; then
			# The peer is at another test's begin: it went on
			# without us (we missed a begin it passed); give
			# this one up, the next one meets it.
			if [[ $at == begin:* ]]; then
				barrier_why="the peer is at $at"
				break
			fi
			# Still in the previous test or its end: wait here.
			say "barrier $1: the peer is at ${at:-?} (${err:-no answer}); waiting for it here"
			nap 0.2
			continue
		fi
		if [ -n "$at" ]; then
			barrier_why="the peer is at $at"
		else
			barrier_why="no peer at $1 within $2 s${err:+ ($err)}"
		fi
		break
	done
	say "missed the peer at barrier $1: $barrier_why"
	return 1
}

# --- kernel log -----------------------------------------------------------------
seq=0
mark() {
	seq=$((seq + 1))
	mark_text="xiw-selftest: $run_id-$seq begin $1"
	echo "$mark_text" >/dev/kmsg
}

# log_since_mark FILE: the kernel log since the last mark into FILE.
# (one awk over dmesg: every process costs a few tenths of a second
# under TCG, and the runner starts them between every two tests)
log_since_mark() {
	dmesg 2>/dev/null | awk -v m="$mark_text" '
		f { print; next }
		{ all[NR] = $0 }
		index($0, m) { f = 1 }
		END {
			if (f) exit
			print "(marker lost, whole kernel log follows)"
			for (i = 1; i <= NR; i++) print all[i]
		}' >"$1"
}

# scan NAME LOGFILE: 0 if clean; else sets scan_reason and appends the
# offending lines to the test's log.
scan() {
	local name=$1 klog=$2 hits t
	# (ENVIRON: awk -v would take the backslashes of bad_re as escapes)
	hits=$(BAD_RE=$bad_re awk '$0 ~ ENVIRON["BAD_RE"] &&
		!/xiw-selftest: / && !/Command line:/ { print; if (++n == 40) exit }' "$klog")
	read -r t </proc/sys/kernel/tainted
	if [ -n "$hits" ] || (( (t & ~taint0) & bad_taint_mask )); then
		{
			echo "---- kernel log problems during $name ----"
			[ -n "$hits" ] && echo "$hits"
			(( (t & ~taint0) & bad_taint_mask )) &&
				echo "kernel newly tainted: $taint0 -> $t"
			echo "---- (full kernel log of the test: tests/$name.dmesg) ----"
		} >>"$out/tests/$name.log"
		if [ -n "$hits" ]; then
			scan_reason="kernel: $(head -n 1 <<<"$hits" | sed 's/^\[[^]]*\] *//' | cut -c1-120)"
		else
			scan_reason="kernel tainted $taint0 -> $t"
		fi
		taint0=$t
		return 1
	fi
	taint0=$t
	return 0
}

result() {	# NAME STATUS SECONDS REASON
	printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "${4//$'\t'/ }" >>"$out/results"
	say "$2 $1 ($3 s)${4:+: $4}"
}

# tidy: remove the RDMA links and netdevs a test left behind, so that the
# next test starts clean; sets tidy_left (a test that did not fail already
# fails for it: its deferred cleanup should have removed them). Fallback
# devices that modules create (tunl0, sit0, ...) cannot be deleted and stay.
base_netdevs=" $(cd /sys/class/net && echo *) "
tidy() {
	local d n left=
	tidy_left=
	for d in /sys/class/infiniband/*; do
		[ -e "$d" ] || continue
		n=${d##*/}
		left="$left rdma:$n"
		rdma link delete "$n" 2>/dev/null
	done
	for d in /sys/class/net/*; do
		n=${d##*/}
		[ -e "$d" ] && [[ $base_netdevs != *" $n "* ]] || continue
		ip link del "$n" 2>/dev/null
		if [ -e "$d" ]; then
			base_netdevs+="$n "	# undeletable (tunl0 and such): ignore
		else
			left="$left net:$n"
		fi
	done
	[ -z "$left" ] || echo "---- runner: removed what the test left:$left ----"
	tidy_left=$left
}

# session_procs SID: the processes of session SID, found by walking /proc
# (no fork): their pids in session_pids, "comm(pid)" each in session_names.
session_procs() {
	local p st f c
	session_pids=() session_names=()
	for p in /proc/[0-9]*; do
		st=
		read -r st 2>/dev/null <"$p/stat" || continue
		c=${st#*(} c=${c%%) *}
		st=${st##*) }
		read -r -a f <<<"$st"	# state ppid pgrp session ...
		[ "${f[3]:-}" = "$1" ] || continue
		session_pids+=("${p#/proc/}")
		session_names+=("$c(${p#/proc/})")
	done
}

# kill_session SID: SIGKILL to every process of session SID (no fork).
kill_session() {
	session_procs "$1"
	[ ${#session_pids[@]} = 0 ] || kill -KILL "${session_pids[@]}" 2>/dev/null
	return 0
}

# --- run one test -------------------------------------------------------------
# Sets status and reason.
run_test() {
	local name=$1 limit=$2 path=$3 pid rc t0 t1 tnow deadline killed='' st n timer
	local log=$out/tests/$name.log tmp line tboot=1
	tmp=$(mktemp -d "/tmp/xiw-$name.XXXXXX")
	status=fail reason='' secs=0
	[ ! -e "$out/peer-ended" ] || rm -f "$out/peer-ended"
	testno=$((testno + 1))
	if [ "$testno" = "$resume" ]; then
		# Back from a power cycle inside this test (3vm): the other
		# VMs are in it; no begin barrier, the log goes on.
		tboot=${XIW_RESUME_BOOT:-2}
		echo "---- runner: boot $tboot of $name on $role (after a power cycle) ----" >>"$log"
	else
		: >"$log"
	fi
	# The peer may still be finishing the previous test (up to its
	# limit, the kill and its end barrier) when we get here.
	if [ "$testno" != "$resume" ] &&
	   ! barrier "begin:$testno:$name" $(( 300 + prev_limit )) resync; then
		if [ $sync_ok = 0 ]; then
			reason="peer VM lost before the test ($barrier_why)"
		else
			reason="no rendezvous with the peer before the test ($barrier_why)"
			# a peer that did not answer for that long is gone
			[[ $barrier_why != no\ peer* ]] || sync_ok=0
		fi
		echo "$reason" >"$log"
		return
	fi
	read -r taint0 </proc/sys/kernel/tainted
	mark "$name"
	t0=$(now)
	(
		cd "$tmp" || exit 1
		mkdir -p "$out/state/$name"
		export XIW_TEST_NAME=$name XIW_TEST_TMP=$tmp XIW_TEST_OUT=$out/tests
		# the test's timeout (its header, raised by XIW_TEST_TIMEOUT): a
		# helper the test starts may live that long
		export XIW_TEST_LIMIT=$limit
		# For lib.sh's xiw_power_off, which checks the kernel log as the
		# runner would before it powers the VM off; and a directory that
		# outlives a power-off (boots of one "# boots: 2" test share it).
		export XIW_KLOG_MARK=$mark_text XIW_KLOG_BAD_RE=$bad_re
		export XIW_TAINT0=$taint0 XIW_TAINT_MASK=$bad_taint_mask
		export XIW_TEST_STATE=$out/state/$name
		# 3vm: the test's place in the plan and its boot (lib.sh's
		# xiw_vm_power_cycle)
		[ "$topo" != 3vm ] || export XIW_TEST_NO=$testno XIW_BOOT=$tboot
		# Through kselftest: selftests/Makefile's run_tests and the
		# kernel's runner start the script. The test appends to its log
		# itself (lib.sh, XIW_TEST_LOG); the runner's timeout is longer
		# than ours, so ours (TERM, KILL, abandon) decides. XIW_KSFT=0
		# starts the script directly, without the runner's process
		# starts (2-4 s a test under TCG).
		export XIW_TEST_LOG=$log
		[ "$ksft" = 1 ] || exec setsid /bin/bash "$path"
		exec setsid make -r -s --no-print-directory -C "$XIW_ROOT/selftests" \
			run_tests BUILD="$XIW_BUILD" TEST_PROGS="$path" KSFT_TIMEOUT=$((limit + 60))
	) </dev/null >>"$log" 2>&1 &
	pid=$!
	deadline=$(( t0 + limit * 1000000 ))
	# Wait without polling while the test runs: whichever ends first of
	# the test and a timer for its limit. A 10 Hz poll of /proc cost this
	# shell 40-60 ms of CPU a second under TCG, on every VM, for as long
	# as every test ran (Documentation/performance.md, "The benches' own
	# polling"). The poll below then sees the test gone, or runs the
	# kill sequence once the limit has passed; it also takes over if a
	# signal interrupts the wait.
	sleep "$limit" >/dev/null 2>&1 &
	timer=$!
	wait -n "$pid" "$timer" 2>/dev/null || :
	kill "$timer" 2>/dev/null || :
	wait "$timer" 2>/dev/null || :
	# Poll without forking: the test must have the CPUs.
	while :; do
		st=
		read -r st 2>/dev/null </proc/$pid/stat
		st=${st##*) }; st=${st%% *}	# field 3, after "(comm)"
		if [ -z "$st" ] || [ "$st" = Z ] || [ "$st" = X ]; then
			# make, the leader, ends after the test, unless the TERM
			# below killed it first: the test (in a process group of
			# GNU timeout's, which passed the TERM on) may still run
			# its cleanup, or be stuck. The session decides then.
			[ -n "$killed" ] || break
			session_procs "$pid"
			[ ${#session_pids[@]} != 0 ] || break
		fi
		tnow=${EPOCHREALTIME/./}
		if [ -z "$killed" ] && [ "$tnow" -ge $deadline ]; then
			killed=term
			echo "---- timeout after ${limit}s: killing the test ----" >>"$log"
			kill -TERM -- -"$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null
			deadline=$(( tnow + 5000000 ))
		elif [ "$killed" = term ] && [ "$tnow" -ge $deadline ]; then
			killed='kill'
			kill_session "$pid"
			deadline=$(( tnow + 10000000 ))
		elif [ "$killed" = kill ] && [ "$tnow" -ge $deadline ]; then
			killed=stuck
			session_procs "$pid"
			{
				echo "---- the test does not die (${session_names[*]}); kernel stacks: ----"
				for n in "${session_pids[@]}"; do cat "/proc/$n/stack" 2>/dev/null; done
			} >>"$log"
			echo w >/proc/sysrq-trigger 2>/dev/null
			break
		fi
		nap 0.1
	done
	if [ "$killed" = stuck ]; then
		rc=stuck
	else
		wait "$pid"
		rc=$?
	fi
	t1=$(now)
	# Whatever the test left behind in its session goes: its process
	# group and every other group of the session (GNU timeout, for one,
	# puts its command in a process group of its own). What a test that
	# ended by itself left running is named under its TAP line ("# left:
	# ..."); the leak checks after it (tidy, cm_ids, rmmod) judge whether
	# any of it held something.
	if [ -z "$killed" ]; then
		session_procs "$pid"
		[ ${#session_names[@]} = 0 ] ||
			echo "# left: processes still running when the test ended, killed: ${session_names[*]}" >>"$log"
	fi
	kill -KILL -- -"$pid" 2>/dev/null
	kill_session "$pid"
	# The test's exit status is in the runner's TAP line (make and the
	# runner exit 0 whatever the test did); the runner's framing lines
	# leave the log, that line stays.
	if [ "$rc" = 0 ] && [ "$ksft" = 1 ]; then
		line=$(grep -E '^(not )?ok 1 selftests: ' "$log" | tail -n 1)
		case $line in
		"ok "*"# SKIP") rc=4 ;;
		"ok "*) rc=0 ;;
		*"# exit="*) rc=${line##*# exit=} ;;
		*"# TIMEOUT"*) rc=124 ;;
		*) rc=1; echo "---- runner: no kselftest result line ----" >>"$log" ;;
		esac
	fi
	[ "$ksft" = 0 ] ||
		sed -i -E '/^(TAP version 13|1\.\.1|# (timeout set|overriding timeout) to [0-9]+|# selftests: .*)$/d' "$log"
	# Retried tool-side failures ("# retry: ..." lines, lib.sh's
	# retry_note): counted here, shown under the TAP line by run.sh.
	n=$(grep -c '^# retry: ' "$log")
	[ "$n" = 0 ] || echo "---- runner: $n retries (the '# retry:' lines above) ----" >>"$log"
	tidy >>"$log" 2>&1
	if [ "$role" != single ]; then
		# Give the peer's side the same chance to finish before comparing
		# logs; unless a sync inside the test already met the peer's end
		# barrier (the peer failed first and moved on without us).
		# A miss here is not a lost peer: the next test's begin
		# barrier resynchronises both VMs.
		if [ "$(cat "$out/peer-ended" 2>/dev/null)" = "end:$name" ]; then
			say "the peer ended $name first: meeting it at the next test"
		else
			barrier "end:$name" $(( limit + 60 )) || true
		fi
		[ ! -e "$out/peer-ended" ] || rm -f "$out/peer-ended"
	fi
	slab_validate
	log_since_mark "$out/tests/$name.dmesg"
	secs=$(( (t1 - t0) / 1000000 )).$(( (t1 - t0) / 100000 % 10 ))
	case $killed:$rc in
	stuck:*) reason="timeout after ${limit}s, cannot be killed" ;;
	term:*|kill:*) reason="timeout after ${limit}s" ;;
	*:0) status=ok ;;
	*:4)
		# A skip says why (lib.sh's skip: "SKIP: why"; a script
		# without lib.sh under kselftest's runner: "# SKIP: why").
		# Exit status 4 without it is a failure: an unguarded
		# command that happened to exit 4, or a bare "exit 4".
		reason=$(sed -n -E 's/^(# )?SKIP: //p' "$log" | tail -n 1)
		if [ -n "$reason" ]; then
			status=skip
		else
			reason="exit status 4 (skip) without a 'SKIP: why' line"
			echo "---- runner: $reason: a failure ----" >>"$log"
		fi ;;
	*) reason=$(grep -E '^FAIL: ' "$log" | head -n 1 | sed 's/^FAIL: //' | cut -c1-160)
	   [ -n "$reason" ] || reason="exit status $rc" ;;
	esac
	if [ -n "$tidy_left" ] && [ "$status" != fail ]; then
		status=fail
		reason="left behind (the runner removed them):$tidy_left"
	fi
	if ! scan "$name" "$out/tests/$name.dmesg"; then
		status=fail
		reason="${reason:+$reason; }$scan_reason"
	fi
	rm -rf "$tmp"
}

# The first TCP connection of each address family flips a static key
# (net_get_random_once() in inet_ehashfn/inet6_ehashfn) and the kernel
# patches that code while other vCPUs may run it. Under TCG that patching
# once crashed the guest (an int3 oops in inet6_ehashfn, in cm_listen's
# first IPv6 connection). Make those first connections now, while nothing
# else runs; the key flips in a deferred work item right after them.
warm_tcp_once() {
	local lsn=() addr fd _
	# busybox nc listens on both families ([::]) and takes one
	# connection: one listener per connection. python3 did this before,
	# but its start took 2 s (8 s in the 2vm topology) under TCG.
	busybox nc -l -p 7698 </dev/null >/dev/null 2>&1 & lsn+=($!)
	busybox nc -l -p 7699 </dev/null >/dev/null 2>&1 & lsn+=($!)
	for addr in 127.0.0.1/7698 ::1/7699; do
		fd=
		for _ in {1..50}; do	# until nc listens (5 s at most)
			exec {fd}<>"/dev/tcp/$addr" && break
			fd=
			nap 0.1
		done 2>/dev/null
		[ -z "$fd" ] || exec {fd}>&-
	done
	kill "${lsn[@]}" 2>/dev/null
	wait "${lsn[@]}" 2>/dev/null
	# no event to wait on: give the deferred static-key work its turn
	nap 1
}

# hold_perftest_refusals DEV...: perftest's relisten race (perftest_lib.sh)
# without its refusal. With -R a perftest server takes the control
# connection, closes that listener and only then listens again; a client
# that connects in between meets no listener, and the reset TCP answers its
# SYN makes perftest give up. On the egress of each DEV, drop that reset
# for perftest's ports (source port 18432-20479, which holds every
# PERFTEST_PORT): the client's TCP sends its SYN again a second later and
# finds the new listener. A reset that answers a SYN is the only one with
# sequence number 0 (RFC 9293 3.10.7.1: a segment without ACK is answered
# with SEQ=0); every reset of a connection that existed carries its
# sequence number, and passes. IPv4 without options, like every perftest
# connection of the bench. A bench where this fails still works:
# perftest_lib.sh retries the refused client.
hold_perftest_refusals() {
	local dev
	modprobe -q sch_ingress 2>/dev/null
	for dev; do
		# ip: version 4, IHL 5; protocol TCP; source port; SEQ 0; RST
		{ tc qdisc add dev "$dev" clsact &&
		  tc filter add dev "$dev" egress protocol ip prio 1 u32 \
			match u8 0x45 0xff at 0 \
			match u8 6 0xff at 9 \
			match u16 0x4800 0xf800 at 20 \
			match u32 0 0xffffffff at 24 \
			match u8 0x04 0x04 at 33 \
			action drop; } >/dev/null 2>&1 ||
			say "cannot hold perftest's refusals on $dev (tc): its client is retried instead"
	done
}

# --- main -----------------------------------------------------------------------
warm_tcp_once
hold_devs=(lo ${XIW_NETDEV:+"$XIW_NETDEV"})	# XIW_NETDEV: 2vm only
hold_perftest_refusals "${hold_devs[@]}"
say "kernel $(uname -r), $(nproc) cpus, role $role, uptime $(cut -d' ' -f1 /proc/uptime) s"
taint0=$(cat /proc/sys/kernel/tainted)
if [ "$role" != single ] && [ "$resume" = 0 ]; then
	if barrier start 180; then
		say "peer reached"
	else
		sync_ok=0	# no peer to begin with
	fi
fi
prev_limit=0 testno=0
while IFS=$'\t' read -r name limit path; do
	[ -n "$name" ] || continue
	if [ $((testno + 1)) -lt "$resume" ]; then
		# done in the boots before the power cycle
		testno=$((testno + 1)) prev_limit=$limit
		continue
	fi
	run_test "$name" "$limit" "$path"
	result "$name" "$status" "$secs" "$reason"
	prev_limit=$limit
done <"$out/plan"

# --- module_unload ------------------------------------------------------------
uname_=${XIW_UNLOAD_NAME:-module_unload}
[ "$role" = single ] || uname_=module_unload_$topo
barrier "begin:$uname_" $(( 120 + prev_limit )) resync || true
taint0_before=$taint0
mark "$uname_"
t0=$(now)
status=ok reason='' loaded=''
{
	for m in ${XIW_UNLOAD_MODULES:-xiw}; do
		[ -d "/sys/module/$m" ] || continue
		loaded="$loaded $m"
		if ! timeout -k 5 60 rmmod "$m"; then
			status=fail
			reason="rmmod $m failed (refcnt $(cat "/sys/module/$m/refcnt" 2>/dev/null))"
			lsmod
		elif [ -d "/sys/module/$m" ]; then
			status=fail; reason="$m still loaded after rmmod"
		fi
	done
} >"$out/tests/$uname_.log" 2>&1
nap 0.5
t1=$(now)
secs=$(( (t1 - t0) / 1000000 )).$(( (t1 - t0) / 100000 % 10 ))
log_since_mark "$out/tests/$uname_.dmesg"
taint0=$taint0_before
if ! scan "$uname_" "$out/tests/$uname_.dmesg"; then
	status=fail
	reason="${reason:+$reason; }$scan_reason"
fi
if [ -z "$loaded" ] && [ "$status" = ok ]; then
	status=skip reason="${XIW_UNLOAD_MODULES:-xiw} not loaded"
fi
result "$uname_" "$status" "$secs" "$reason"

held=0
for d in "${hold_devs[@]}"; do
	for n in $(tc -s filter show dev "$d" egress prio 1 2>/dev/null |
		   sed -n 's/.*Sent [0-9]* bytes \([0-9]*\) pkt.*/\1/p'); do
		held=$((held + n))
	done
done
say "perftest refusals held (hold_perftest_refusals): $held"

dmesg >"$out/dmesg.log" 2>&1
echo "$(cut -d' ' -f1 /proc/uptime)" >"$out/done"
say "done"
exit 0
