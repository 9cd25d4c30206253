# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Helpers for the xiw VM tests (selftests/tests/*.sh). A test starts with
#
#	#!/bin/bash
#	# topology: 1vm            (or 2vm)
#	# timeout: 120             (seconds, optional)
#	# description: one line
#	. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
#
# and runs inside a test VM as root (see selftests/README.md). Exit status:
# 0 = pass, 4 = skip (kselftest's KSFT_SKIP), anything else = fail. Sourcing
# this file turns on `set -eE -o pipefail` with an ERR trap that names the
# failing command, so any unchecked failure fails the test; use expect_fail
# or `if` for commands that are meant to fail.
#
# Cleanup: `defer CMD...` registers CMD to run at exit (last in, first out),
# whether the test passed or not. The runner also kills every process left in
# the test's session and scans the kernel log after the test.

# The VM runner gives the test its log file: the test writes there itself
# rather than through the kselftest runner's pipe, so that a process the
# test leaves behind holds the file, not the pipe the runner waits on (the
# runner names and kills such processes after the test). The log being a
# file, the runner's stdbuf (LD_PRELOAD into every process the test
# starts, each start dearer under TCG) has nothing to do: it goes.
if [ -n "${XIW_TEST_LOG:-}" ]; then
	exec >>"$XIW_TEST_LOG" 2>&1
	[[ ${LD_PRELOAD:-} != *libstdbuf* ]] || unset LD_PRELOAD _STDBUF_O
fi

set -eE -o pipefail
export LC_ALL=C	# predictable tool output, and grep is 3x faster than in UTF-8

# This file's directory: selftests/ of the source tree, or xiw/ of a tree
# that `make -C selftests install` made (no run.sh there: the programs
# are in progs/ beside it, xiw.ko and the provider are the host's own).
XIW_SELFTESTS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [ -e "$XIW_SELFTESTS/run.sh" ]; then
	XIW_ROOT=${XIW_ROOT:-$(cd "$XIW_SELFTESTS/.." && pwd)}
	XIW_BUILD=${XIW_BUILD:-$XIW_ROOT/build}
	XIW_KO=${XIW_KO:-$XIW_ROOT/kernel/xiw.ko}
	XIW_PROGS=${XIW_PROGS:-$XIW_BUILD/selftests/progs}
else
	XIW_ROOT=${XIW_ROOT:-$XIW_SELFTESTS}
	XIW_BUILD=${XIW_BUILD:-$XIW_SELFTESTS}
	XIW_KO=${XIW_KO:-}
	XIW_PROGS=${XIW_PROGS:-$XIW_SELFTESTS/progs}
fi
XIW_PROVIDER=${XIW_PROVIDER:-$XIW_BUILD/userspace/libxiw/libxiw}
# The module and `rdma link` type under test. Only for checking the tests
# themselves against another iWARP driver (e.g. XIW_KO=.../siw.ko XIW_MOD=siw
# XIW_LINK_TYPE=siw); device names stay xiw0, xiw1, ...
XIW_MOD=${XIW_MOD:-xiw}
XIW_LINK_TYPE=${XIW_LINK_TYPE:-$XIW_MOD}
XIW_TEST_NAME=${XIW_TEST_NAME:-$(basename "$0" .sh)}
XIW_ROLE=${XIW_ROLE:-single}
export XIW_ROOT XIW_BUILD XIW_KO XIW_PROVIDER XIW_PROGS XIW_TEST_NAME XIW_ROLE XIW_MOD XIW_LINK_TYPE
export XIW_SELFTESTS
export PATH=$XIW_PROGS:$PATH
# libibverbs loads RDMAV_DRIVERS in addition to /etc/libibverbs.d (system
# providers such as rxe stay available). Only set it when the provider exists,
# else every verbs tool warns that it cannot load it.
if [ -z "${RDMAV_DRIVERS:-}" ] && [ -e "$XIW_PROVIDER-rdmav34.so" ]; then
	export RDMAV_DRIVERS=$XIW_PROVIDER
fi

# XIW_TRACE=1: trace every command of the test, with time stamps.
if [ "${XIW_TRACE:-0}" = 1 ]; then
	PS4='+ ${EPOCHREALTIME} ${BASH_SOURCE[0]##*/}:${LINENO}: '
	set -x
fi

export KSFT_PASS=0 KSFT_FAIL=1 KSFT_SKIP=4

_xiw_deferred=()

log() { printf '# %s\n' "$*"; }

fail() {
	printf 'FAIL: %s\n' "$*" >&2
	exit $KSFT_FAIL
}

# A test skips only through skip(), which says why: the exit handler turns
# any other exit status 4 (an unguarded command that exited 4, a bare
# "exit 4") into a failure.
_xiw_skipping=0
skip() {
	printf 'SKIP: %s\n' "$*" >&2
	_xiw_skipping=1
	exit $KSFT_SKIP
}

_xiw_on_err() {
	local rc=$? cmd=$BASH_COMMAND line=${BASH_LINENO[0]} src=${BASH_SOURCE[1]:-?}
	printf 'FAIL: %s:%s: `%s` exited %d\n' "$(basename "$src")" "$line" "$cmd" "$rc" >&2
}
trap _xiw_on_err ERR

# A deferred command that fails fails the test (a passing or skipped one
# becomes a failure; a failing one keeps its own reason): each runs in a
# subshell, so that a `fail` in it ends only that command.
_xiw_on_exit() {
	local rc=$? i out crc
	set +eE
	trap - ERR
	if [ $rc = "$KSFT_SKIP" ] && [ "$_xiw_skipping" != 1 ]; then
		printf 'FAIL: exit status %d without skip(): a skip must say why\n' $rc >&2
		rc=$KSFT_FAIL
	fi
	for ((i = ${#_xiw_deferred[@]} - 1; i >= 0; i--)); do
		out=$(eval "${_xiw_deferred[i]}" 2>&1)
		crc=$?
		[ $crc != 0 ] || continue
		printf 'FAIL: cleanup `%s` exited %d%s\n' "${_xiw_deferred[i]}" $crc \
			"${out:+: $(head -c 400 <<<"$out" | tr '\n' ' ')}" >&2
		[ $rc != 0 ] && [ $rc != "$KSFT_SKIP" ] || rc=$KSFT_FAIL
	done
	[ -z "$_xiw_own_tmp" ] || { cd / && rm -rf "$_xiw_own_tmp"; }
	exit $rc
}
trap _xiw_on_exit EXIT

# Outside the project's VM (the installed tree under run_kselftest.sh on
# a host, or a test started by hand) a test that needs what only the VM
# harness gives skips: the VM pair, an emulated NVDIMM, a power-off and a
# second boot (its headers say so; see also siw_load).
if [ -z "${XIW_VM_OUT:-}" ] && [ -r "$0" ]; then
	case $(sed -n '1,12{/^# \(topology: *[23]vm\|pmem:\|boots:\)/p}' "$0") in
	*topology*3vm) skip "a three-VM test: needs the project's three VMs (selftests/run.sh)" ;;
	*topology*) skip "a two-VM test: needs the project's VM pair (selftests/run.sh)" ;;
	*pmem:*) skip "needs the project's VM with an emulated NVDIMM (selftests/run.sh)" ;;
	*boots:*) skip "needs the project's VM, powered off and booted again (selftests/run.sh)" ;;
	esac
fi

# The test's working directory is its scratch directory $XIW_TEST_TMP
# (kselftest's runner starts it in the directory of the script): the VM
# runner's fresh tmpfs directory, or one of our own elsewhere, removed at
# exit.
_xiw_own_tmp=${_xiw_own_tmp:-}
if [ -n "${XIW_VM_OUT:-}" ]; then
	[ -z "${XIW_TEST_TMP:-}" ] || cd "$XIW_TEST_TMP"
elif [ -z "${XIW_TEST_TMP:-}" ]; then
	XIW_TEST_TMP=$(mktemp -d "/tmp/xiw-$XIW_TEST_NAME.XXXXXX")
	_xiw_own_tmp=$XIW_TEST_TMP
	export XIW_TEST_TMP
	cd "$XIW_TEST_TMP"
else
	cd "$XIW_TEST_TMP"
fi

# defer CMD [ARG...]: run at exit (LIFO), pass or fail; its failure fails
# the test. Arguments are quoted as given.
defer() {
	local q
	printf -v q ' %q' "$@"
	_xiw_deferred+=("${q# }")
}

# --- assertions -------------------------------------------------------------

# expect_eq ACTUAL EXPECTED [WHAT]
expect_eq() {
	[ "$1" = "$2" ] || fail "${3:-value}: got '$1', expected '$2'"
}

# expect_ne ACTUAL UNEXPECTED [WHAT]
expect_ne() {
	[ "$1" != "$2" ] || fail "${3:-value}: got '$1', expected anything else"
}

# expect_match TEXT REGEX [WHAT]   (extended regex, grep -E, any line)
expect_match() {
	grep -qE -- "$2" <<<"$1" || fail "${3:-output} does not match /$2/: $(head -c 2000 <<<"$1")"
}

# expect_nomatch TEXT REGEX [WHAT]
expect_nomatch() {
	if grep -qE -- "$2" <<<"$1"; then
		fail "${3:-output} matches /$2/: $(grep -E -- "$2" <<<"$1" | head -n 5)"
	fi
}

# expect_ok CMD [ARG...]: CMD must succeed; its output is shown.
expect_ok() {
	local rc=0
	"$@" || rc=$?
	[ $rc = 0 ] || fail "\`$*\` exited $rc, expected success"
}

# expect_fail CMD [ARG...]: CMD must fail (non-zero exit, not a signal/timeout).
expect_fail() {
	local rc=0
	"$@" || rc=$?
	[ $rc != 0 ] || fail "\`$*\` succeeded, expected a failure"
	[ $rc -lt 124 ] || fail "\`$*\` exited $rc (timeout or signal), expected a plain failure"
	log "failed as expected ($rc): $*"
}

# run_timeout SEC CMD [ARG...]: CMD killed (TERM, then KILL 2 s later) after SEC.
run_timeout() {
	local t=$1
	shift
	timeout -k 2 "$t" "$@"
}

# kill_bg PID: stop a command started as `run_timeout SEC CMD ... &`. PID
# is the background subshell: killing only it leaves GNU timeout and CMD
# running (a perftest server killed so lived on, holding its cm_ids, and
# failed apps_2vm's check for leftovers). TERM goes to the subshell's
# children first; timeout passes it on to CMD.
kill_bg() {
	pkill -TERM -P "$1" 2>/dev/null || true
	kill "$1" 2>/dev/null || true
}

# now_us: microseconds since the epoch, without a fork.
now_us() { local t=$EPOCHREALTIME; echo "${t/./}"; }

# xiw_nap SEC: sleep SEC seconds (fractions allowed) without a process:
# a read that times out on a FIFO this shell holds open at both ends, so
# that nothing ever arrives on it (guest-suite.sh's nap). The polling
# loops below can run for as long as a bench's job (xiw_sync's connect
# loop on b), where sleep(1) cost a fork and an exec per step, on the CPU
# the bench measures.
xiw_nap() {
	local f rc=0
	if [ -z "${_xiw_nap_fd:-}" ]; then
		f=$(mktemp -u "${TMPDIR:-/tmp}/xiw-nap.XXXXXX")
		if mkfifo "$f" 2>/dev/null && exec {_xiw_nap_fd}<>"$f"; then
			rm -f "$f"
		else
			rm -f "$f"
			_xiw_nap_fd=
			sleep "$1"
			return 0
		fi
	fi
	read -r -t "$1" -u "$_xiw_nap_fd" _ 2>/dev/null || rc=$?
	# only a timeout slept: a closed descriptor (a caller that closed
	# it) fails at once, and would turn the poll into a spin
	if [ $rc -le 128 ]; then
		_xiw_nap_fd=
		sleep "$1"
	fi
}

# wait_for SEC CMD [ARG...]: poll CMD (every 0.1 s) until it succeeds; 1 on
# timeout. CMD is tried once before any sleep.
wait_for() {
	local t=$1 end
	shift
	end=$(( ${EPOCHREALTIME/./} + t * 1000000 ))
	until "$@" >/dev/null 2>&1; do
		[ "${EPOCHREALTIME/./}" -lt $end ] || return 1
		xiw_nap 0.1
	done
}

# wait_gone SEC CMD [ARG...]: poll until CMD fails; 1 on timeout.
wait_gone() {
	local t=$1 end
	shift
	end=$(( ${EPOCHREALTIME/./} + t * 1000000 ))
	while "$@" >/dev/null 2>&1; do
		[ "${EPOCHREALTIME/./}" -lt $end ] || return 1
		xiw_nap 0.1
	done
}

# wait_listen PORT [SEC] [PID] [LOG]: wait until something listens on
# PORT: a TCP socket (an rdma_cm listen on an iWARP device is a kernel TCP
# listener, which `ss` shows like any other) or an rdma_cm ID in LISTEN on
# that port (`rdma resource show cm_id`: RoCE devices such as rxe have no
# TCP listener); fails the test after SEC (default 20 s), or at once when
# PID (the server expected to listen) has ended, showing LOG (the server's
# output) first.
xiw_port_listening() {
	ss -Htln "sport = :$1" 2>/dev/null | grep -q . ||
		rdma resource show cm_id 2>/dev/null | awk -v p=":$1\$" '
			/ state LISTEN / { for (i = 1; i <= NF; i++) if ($i ~ p) f = 1 }
			END { exit !f }'
}
wait_listen() {
	local port=$1 t=${2:-20} pid=${3:-} log=${4:-} end why=
	end=$(( ${EPOCHREALTIME/./} + t * 1000000 ))
	until xiw_port_listening "$port"; do
		if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
			why="the server (pid $pid) ended without listening on TCP port $port"
		elif [ "${EPOCHREALTIME/./}" -ge $end ]; then
			why="nothing listens on TCP port $port after ${t}s"
		fi
		if [ -n "$why" ]; then
			[ -z "$log" ] || sed 's/^/#   /' "$log" >&2
			fail "$why"
		fi
		xiw_nap 0.1
	done
}

# server_bg NAME SEC CMD...: a server CMD in the background under
# run_timeout SEC, its output in NAME-srv.log, its pid in $srv (for
# server_done, or kill_bg); returns once something listens on TCP port
# $port (wait_listen), fails with the server's output if CMD ends first
# or nothing listens within 20 s.
server_bg() {
	local name=$1 t=$2
	shift 2
	run_timeout "$t" "$@" >"$name-srv.log" 2>&1 &
	srv=$!
	wait_listen "$port" 20 "$srv" "$name-srv.log"
}

# server_done NAME: the server_bg server ends with status 0 (rping's exit
# race let through by rping_status); its output shown when it does not.
server_done() {
	local rc=0
	wait "$srv" || rc=$?
	[ "$1" != rping ] || rc=$(rping_status $rc "$1-srv.log")
	[ "$rc" = 0 ] || { cat "$1-srv.log"; fail "$1: server exited $rc"; }
}

# tcp_bytes_acked PORT: bytes acknowledged by the peers of the TCP sockets
# on local or remote PORT, summed (ss -ti; kernel sockets of xiw included).
tcp_bytes_acked() {
	ss -Htin "( sport = :$1 or dport = :$1 )" 2>/dev/null |
		{ grep -oE 'bytes_acked:[0-9]+' || true; } |
		awk -F: '{ s += $2 } END { print s + 0 }'
}

# retry_note WHAT: a named, tool-side failure is being retried. Prints
# "# retry: WHAT" (stderr: it reaches the test's log even from inside
# $(...)); the runner counts these lines and shows them under the test's
# TAP line. Never retry anything else.
retry_note() { printf '# retry: %s\n' "$*" >&2; }

# --- environment ------------------------------------------------------------

# need_cmd CMD...: fail (not skip) when a tool the bench needs is missing.
need_cmd() {
	local c
	for c; do
		command -v "$c" >/dev/null || fail "missing tool: $c"
	done
}

# need_prog NAME: path of a test program built in $XIW_PROGS; fails if absent.
need_prog() {
	[ -x "$XIW_PROGS/$1" ] || fail "test program not built: $XIW_PROGS/$1"
	echo "$XIW_PROGS/$1"
}

# xiw_trace_instance NAME KB: a tracefs instance of the test's own,
# $XIW_TRACE_INST (tracefs mounted if it is not, unmounted again at
# exit; the instance removed at exit), with a buffer of KB KiB per CPU
xiw_trace_instance() {
	local tr=/sys/kernel/tracing
	if [ ! -d $tr/events ]; then
		mount -t tracefs tracefs $tr || fail "cannot mount tracefs"
		defer umount $tr
	fi
	XIW_TRACE_INST=$tr/instances/$1
	mkdir "$XIW_TRACE_INST"
	defer rmdir "$XIW_TRACE_INST"
	echo "$2" >"$XIW_TRACE_INST/buffer_size_kb"
}

# xiw_trace_lost INST: the events INST's buffer lost to overruns
xiw_trace_lost() {
	awk '$1 == "overrun:" { n += $2 } END { print n + 0 }' \
		"$1"/per_cpu/cpu*/stats 2>/dev/null
}

# --- modules and devices ----------------------------------------------------

# xiw_dyndbg: the module's dynamic debug messages (the kernel's reasons the
# tests check) on for the rest of the test, off again at its end.
xiw_dyndbg() {
	local ctl=/sys/kernel/debug/dynamic_debug/control
	echo "module $XIW_MOD +p" >"$ctl" || fail "dynamic debug of $XIW_MOD"
	defer eval "echo 'module $XIW_MOD -p' > $ctl"
}

# kmsg_mark NAME: a marker line in the kernel log; kmsg_since: the kernel
# log from the latest marker on.
kmsg_mark() { kmark="xiw-$XIW_TEST_NAME-$1-$RANDOM"; echo "$kmark" >/dev/kmsg; }
kmsg_since() { dmesg | sed -n "/$kmark/,\$p"; }

# The kernel modules an xiw device needs besides the ones xiw.ko links to.
XIW_DEP_MODULES="ib_core ib_uverbs iw_cm rdma_cm rdma_ucm"

# xiw_load: load the freshly built xiw.ko ($XIW_KO) and its dependencies.
# Fails the test when the module is not built or does not load. A module
# already loaded by an earlier test of the same VM is kept.
xiw_load() {
	local deps m
	[ -d "/sys/module/$XIW_MOD" ] && return 0
	if [ ! -f "$XIW_KO" ] && [ -z "${XIW_VM_OUT:-}" ]; then
		# a host: the installed module (make install, make dkms-install)
		# shellcheck disable=SC2086
		modprobe "$XIW_MOD" ${XIW_KO_PARAMS:-} ||
			skip "$XIW_MOD is not loaded and modprobe $XIW_MOD failed"
		log "loaded $XIW_MOD (modprobe)"
		return 0
	fi
	[ -f "$XIW_KO" ] || fail "$XIW_MOD module not built: $XIW_KO"
	deps=$(modinfo -F depends "$XIW_KO") || fail "modinfo $XIW_KO failed"
	for m in ${deps//,/ } $XIW_DEP_MODULES; do
		modprobe "$m" || fail "modprobe $m failed"
	done
	# shellcheck disable=SC2086
	insmod "$XIW_KO" ${XIW_KO_PARAMS:-} || fail "insmod $XIW_KO failed"
	[ -d "/sys/module/$XIW_MOD" ] || fail "$XIW_MOD not in /sys/module after insmod"
	log "loaded $XIW_KO"
}

# siw_load: insmod siw.ko (the kernel's Soft-iWARP, an interop peer built on
# the host from linux-source-6.12 by selftests/build-siw.sh, which make
# check runs; building it in the VM would take minutes under TCG) unless it
# is loaded; rmmod at exit if this test loaded it. Its MPA policy is in
# /sys/module/siw/parameters (see build-siw.sh).
siw_load() {
	local ko=${XIW_SIW_KO:-$XIW_BUILD/siw/siw.ko} m
	[ -d /sys/module/siw ] && return 0
	if [ ! -f "$ko" ] && [ -z "${XIW_VM_OUT:-}" ]; then
		modprobe siw || skip "no siw module (the project's VM loads the one build-siw.sh builds)"
		defer rmmod siw
		return 0
	fi
	[ -f "$ko" ] || fail "siw.ko not built: run selftests/build-siw.sh on the host"
	for m in $(modinfo -F depends "$ko" | tr , ' '); do
		modprobe "$m" || fail "modprobe $m failed"
	done
	insmod "$ko" || fail "insmod $ko failed"
	defer rmmod siw
}

# siw_2vm_up: the topology of the siw_*_2vm interop tests: xiw0 on VM a,
# siw0 on VM b, both on $XIW_NETDEV and up. Sets IW_DEV (the device) and
# IW_PARAMS (its module's parameter directory); xiw's MPA parameters are
# restored at exit (siw's go with its rmmod).
siw_2vm_up() {
	local p
	if [ "$XIW_ROLE" = a ]; then
		xiw_load
		xiw_link_add xiw0 "$XIW_NETDEV"
		IW_DEV=xiw0
		IW_PARAMS=/sys/module/$XIW_MOD/parameters
		for p in mpa_rev mpa_crc mpa_p2p; do
			defer eval "echo $(cat "$IW_PARAMS/$p") > $IW_PARAMS/$p"
		done
	else
		siw_load
		rdma_link_add siw0 siw "$XIW_NETDEV"
		# siw has no disassociate_ucontext: "rdma link del" waits for
		# every process with a siw context, so the test's own go first
		# (LIFO) on any exit.
		defer eval 'kill -KILL $(jobs -p) 2>/dev/null; wait 2>/dev/null || true'
		IW_DEV=siw0
		IW_PARAMS=/sys/module/siw/parameters
	fi
	wait_port_state "$IW_DEV" PORT_ACTIVE 5
}

# xiw_unload: rmmod xiw (fails the test if that fails).
xiw_unload() {
	[ -d "/sys/module/$XIW_MOD" ] || return 0
	rmmod "$XIW_MOD" ||
		fail "rmmod $XIW_MOD failed (refcount $(cat "/sys/module/$XIW_MOD/refcnt" 2>/dev/null))"
}

# xiw_refcnt: the module's reference count.
xiw_refcnt() { cat "/sys/module/$XIW_MOD/refcnt"; }

# slab_snapshot FILE: "cache objects objects-per-slab" of every slab cache
# (/proc/slabinfo's active_objs and objperslab), after shrinking each.
# kmem_cache_shrink flushes the per-CPU slabs, but the count is not exact:
# whatever runs between the shrink and the read (this shell, awk) makes
# each CPU take a slab of the cache again, and /proc/slabinfo counts every
# object of a CPU's slabs (its active one and those on its partial list)
# as in use, free or not. Two snapshots of the same state can thus differ
# by up to two slabs per CPU of a cache: slab_grown allows that much
# (dp_soak_short failed on kmalloc-8:+954 with 512 objects per slab and 2
# CPUs, and so did fuzz_verbs before on kmalloc-8:+920 and +423).
# The shrink files stay open from the first snapshot to the test's end:
# every open of a sysfs file allocates a kernfs_open_node (kmalloc-96)
# that its close frees with kfree_rcu(), seconds later. Opening all ~300
# per snapshot left ~300 such objects pending in each snapshot, so two
# snapshots differed by up to a few hundred objects of the measurement's
# own (fuzz_verbs failed once on kmalloc-96:+447 that way).
xiw_shrink_fds=()
slab_snapshot() {
	local f fd
	if [ ${#xiw_shrink_fds[@]} = 0 ]; then
		for f in /sys/kernel/slab/*/shrink; do
			# the braces keep 2>/dev/null to this open: on a bare
			# exec it would silence the test's stderr (its FAIL
			# line included) for good
			{ exec {fd}>"$f"; } 2>/dev/null && xiw_shrink_fds+=("$fd")
		done
	fi
	for fd in "${xiw_shrink_fds[@]}"; do
		echo 1 >&"$fd" 2>/dev/null || true
	done
	awk 'NR > 2 { print $1, $2, $5 }' /proc/slabinfo >"$1"
}

# slab_grown BASE NOW MIN: the caches that hold at least MIN more objects in
# NOW than in BASE (slab_snapshot files), and more than the snapshot can
# tell apart (two slabs per CPU, see slab_snapshot), "cache:+n" each,
# largest first.
slab_grown() {
	awk -v min="$3" -v cpus="$(nproc)" 'NR == FNR { b[$1] = $2; next }
		{ m = 2 * cpus * $3; if (m < min) m = min }
		$2 - b[$1] >= m { printf "%d %s:+%d\n", $2 - b[$1], $1, $2 - b[$1] }' \
		"$1" "$2" | sort -rn | cut -d' ' -f2 | tr '\n' ' '
}

# slab_top BASE NOW: the three caches that grew most ("cache:+n"). sed
# reads all of sort's output (head would close the pipe early, and sort
# die of SIGPIPE under pipefail once the cache list outgrows a pipe's
# buffer, as with slab_debug's unmerged caches).
slab_top() {
	awk 'NR == FNR { b[$1] = $2; next }
		{ printf "%d %s:%+d\n", $2 - b[$1], $1, $2 - b[$1] }' "$1" "$2" |
		sort -rn | sed -n '1,3p' | cut -d' ' -f2 | tr '\n' ' '
}

# tcp_socks: TCP sockets allocated (inuse + orphans, /proc/net/sockstat's
# "alloc"), not counting TIME_WAIT.
tcp_socks() { awk '$1 == "TCP:" { print $9 }' /proc/net/sockstat; }

# xiw_need_provider: the user-space provider must be built and in use.
xiw_need_provider() {
	[ "$XIW_LINK_TYPE" = xiw ] || return 0	# another driver: system provider
	if [ ! -e "$XIW_PROVIDER-rdmav34.so" ] && [ -z "${XIW_VM_OUT:-}" ]; then
		# a host: the installed provider (make install, libxiw1)
		compgen -G '/etc/libibverbs.d/xiw.driver' >/dev/null ||
			skip "the xiw provider is not installed (/etc/libibverbs.d/xiw.driver)"
		return 0
	fi
	[ -e "$XIW_PROVIDER-rdmav34.so" ] ||
		fail "provider not built: $XIW_PROVIDER-rdmav34.so"
	[ -n "${RDMAV_DRIVERS:-}" ] || fail "RDMAV_DRIVERS not set"
}

# xiw_link_add NAME NETDEV: `rdma link add NAME type xiw netdev NETDEV`,
# deleted at exit.
xiw_link_add() { rdma_link_add "$1" "$XIW_LINK_TYPE" "$2"; }

# xiw_loopback [ADDR]: the one-VM setup of the data-path tests: xiw loaded,
# the provider in use, a dummy netdev d0 with ADDR/24 (default 192.0.2.1)
# and xiw0 on it, port active. Traffic to ADDR loops through lo.
xiw_loopback() {
	xiw_load
	xiw_need_provider
	dummy_add d0
	ip addr add "${1:-192.0.2.1}/24" dev d0
	xiw_link_add xiw0 d0
	wait_port_state xiw0 PORT_ACTIVE 5
}

# xiw_two_devices: xiw_loopback plus a second device: xiw1 on dummy d1
# with 192.0.2.2/24. A connection from 192.0.2.2 to 192.0.2.1 runs between
# xiw1 and xiw0 (the packets go through lo).
xiw_two_devices() {
	xiw_loopback 192.0.2.1
	dummy_add d1
	ip addr add 192.0.2.2/24 dev d1
	xiw_link_add xiw1 d1
	wait_port_state xiw1 PORT_ACTIVE 5
}

# ktest_two_devices: the setup of a test of the kernel API through
# selftests/kmod/xiw_ktest.ko ($KT, set here; XIW_KTEST_KO loads another
# build): xiw0 on dummy d0 (192.0.2.1/24) and xiw1 on d1 (192.0.2.2/24),
# ACTIVE by sysfs rather than ibv_devinfo (no user-space provider is
# needed), what the test module links to besides xiw (rdma_cm,
# libcrc32c, ...) loaded, and the test module removed at the end if the
# test left it loaded.
ktest_two_devices() {
	KT=${XIW_KTEST_KO:-$XIW_SELFTESTS/kmod/xiw_ktest.ko}
	[ "$XIW_MOD" = xiw ] || skip "the kernel API is xiw's own"
	[ -f "$KT" ] || fail "test module not built: $KT (make ktest)"
	xiw_load
	dummy_add d0
	dummy_add d1
	ip addr add 192.0.2.1/24 dev d0
	ip addr add 192.0.2.2/24 dev d1
	xiw_link_add xiw0 d0
	xiw_link_add xiw1 d1
	local d m
	for d in xiw0 xiw1; do
		wait_for 5 grep -q ACTIVE /sys/class/infiniband/$d/ports/1/state ||
			fail "$d port state: $(cat /sys/class/infiniband/$d/ports/1/state)"
	done
	for m in $(modinfo -F depends "$KT" | tr , ' '); do
		[ "$m" = "$XIW_MOD" ] || modprobe "$m" || fail "modprobe $m failed"
	done
	defer eval '[ ! -d /sys/module/xiw_ktest ] || rmmod xiw_ktest'
}

# xiw_commit_stat NAME: a counter of debugfs xiw/commit_stats (flush_global,
# flush_persistent, flush_wb_bytes: bytes whose CPU cache lines a Flush P
# wrote back, atomic_writes, verify, verify_bytes, verify_mismatch).
xiw_commit_stat() {
	local f=/sys/kernel/debug/xiw/commit_stats v
	[ -r $f ] || fail "no $f (xiw without the commit extensions?)"
	v=$(awk -v k="$1" '$1 == k { print $2 }' $f)
	[ -n "$v" ] || fail "no counter $1 in $f"
	echo "$v"
}

# dummy_add NAME: a dummy netdev, up, deleted at exit (netdev_del).
dummy_add() {
	modprobe dummy numdummies=0 2>/dev/null || true
	ip link add "$1" type dummy
	defer netdev_del "$1"
	ip link set "$1" up
}

# veth_add A B: a veth pair, both up, deleted at exit (netdev_del).
veth_add() {
	ip link add "$1" type veth peer name "$2"
	defer netdev_del "$1"
	ip link set "$1" up
	ip link set "$2" up
}

# netdev_del NAME: `ip link del NAME` unless the test removed it already
# (the cleanup form: it fails only when NAME exists and stays).
netdev_del() {
	[ -e "/sys/class/net/$1" ] || return 0
	ip link del "$1"
}

# rdma_link_add NAME TYPE NETDEV: `rdma link add`, deleted at exit
# (rdma_link_del).
rdma_link_add() {
	rdma link add "$1" type "$2" netdev "$3"
	defer rdma_link_del "$1"
}

# xiw_counter NAME [DEV]: the value of DEV's (default xiw0) port counter
# NAME (rdma statistic, the hw_counters of port 1)
xiw_counter() {
	rdma statistic show link "${2:-xiw0}/1" | tr ' ' '\n' |
		awk -v n="$1" 'prev == n { print; exit } { prev = $0 }'
}

# rxe_loopback ADDR: rdma_rxe loaded (unloaded at the end) and rxe0 on a
# dummy netdev d2 with ADDR/24, ACTIVE: the same verbs program on rxe,
# for the tests that compare xiw with it
rxe_loopback() {
	modprobe rdma_rxe
	defer modprobe -r rdma_rxe
	dummy_add d2
	ip addr add "$1/24" dev d2
	rdma_link_add rxe0 rxe d2
	wait_port_state rxe0 PORT_ACTIVE 5
}

# rdma_link_del NAME: `rdma link delete NAME` unless NAME is gone already
# (deleted by the test, or with its netdev).
rdma_link_del() {
	ib_dev_exists "$1" || return 0
	rdma link delete "$1"
}

# ib_dev_exists NAME: the ib_device NAME is registered.
ib_dev_exists() { [ -e "/sys/class/infiniband/$1" ]; }

# rdma_link_has NAME [NETDEV]: `rdma link show` lists NAME (on NETDEV).
rdma_link_has() {
	local out
	out=$(rdma link show 2>/dev/null) || return 1
	if [ -n "${2:-}" ]; then
		grep -qE "^link $1/[0-9]+ .* netdev $2( |$)" <<<"$out"
	else
		grep -qE "^link $1/[0-9]+ " <<<"$out"
	fi
}

# port_state DEV [PORT]: the port state ibv_devinfo reports, e.g. PORT_ACTIVE.
port_state() {
	ibv_devinfo -d "$1" -i "${2:-1}" 2>/dev/null |
		awk '/^[[:space:]]*state:/ { print $2; exit }'
}

# wait_port_state DEV STATE [SEC]: poll until port 1 of DEV is in STATE
# (default 5 s); fails the test otherwise.
wait_port_state() {
	local dev=$1 want=$2 t=${3:-5} end s=
	end=$(( ${EPOCHREALTIME/./} + t * 1000000 ))
	while :; do
		s=$(port_state "$dev")
		[ "$s" = "$want" ] && return 0
		[ "${EPOCHREALTIME/./}" -lt $end ] || break
		xiw_nap 0.2
	done
	fail "$dev port state: '$s' after ${t}s, expected $want"
}

# count_devices PREFIX: how many ib_devices named PREFIX* are registered.
count_devices() {
	local d n=0
	for d in /sys/class/infiniband/"$1"*; do
		[ -e "$d" ] && n=$((n + 1))
	done
	echo $n
}

# no_stray_devices PREFIX: no ib_device named PREFIX* is registered, and
# `rdma link show` lists none.
no_stray_devices() {
	local d left=
	for d in /sys/class/infiniband/"$1"*; do
		[ -e "$d" ] && left="$left $(basename "$d")"
	done
	if rdma link show 2>/dev/null | grep -qE "^link $1"; then
		left="$left (rdma link: $(rdma link show | grep -E "^link $1" | tr '\n' ';'))"
	fi
	[ -z "$left" ] || fail "stray devices left:$left"
}

# --- two-VM tests -----------------------------------------------------------
# In a 2vm test the same script runs on both VMs at once, with XIW_ROLE=a on
# one and b on the other; XIW_LOCAL_IP / XIW_PEER_IP are the addresses of the
# virtual link (netdev $XIW_NETDEV). The runner synchronises both sides
# before and after each test; inside a test use xiw_sync.
# Three-VM tests (XIW_TOPOLOGY=3vm, roles a, b, c; XIW_IP_A/B/C) work the
# same way on one shared segment; b or c may xiw_vm_power_cycle itself
# (selftests/README.md, "Three VMs").

XIW_SYNC_PORT=${XIW_SYNC_PORT:-7700}

# xiw_sync NAME [MSG] [SEC]: wait until the peer VM calls xiw_sync NAME too
# (default timeout 60 s); prints the MSG the peer passed. Calls must pair up
# in the same order on both sides. Returns 1 on timeout, mismatch, or when
# the host runner reports the peer VM dead ($XIW_VM_OUT/peer-died).
# Three VMs (XIW_TOPOLOGY=3vm): every VM calls it, a is the hub (b
# connects to a on $XIW_SYNC_PORT, c on the port after it) and answers
# only once both are in; b and c print a's MSG, a prints "MSG_B MSG_C".
xiw_sync() {
	local name=$1 msg=${2:-.} t=${3:-60} line='' part fd end rc abort port=$XIW_SYNC_PORT
	abort=${XIW_VM_OUT:-/nonexistent}/peer-died
	[ -n "${XIW_PEER_IP:-}" ] || { echo "xiw_sync: not a 2vm or 3vm test" >&2; return 1; }
	case $name$msg in *[[:space:]]*) echo "xiw_sync: no blanks in NAME/MSG" >&2; return 1 ;; esac
	end=$(( EPOCHSECONDS + t ))
	if [ "${XIW_TOPOLOGY:-}" = 3vm ]; then
		if [ "$XIW_ROLE" = a ]; then
			# (an explicit status: a bare return in a function run
			# from a trap, e.g. a deferred sync, returns the
			# status the trap began with)
			_xiw_sync_hub "$name" "$msg" "$t"
			return $?
		fi
		[ "$XIW_ROLE" = c ] && port=$((XIW_SYNC_PORT + 1))
	fi
	if [ "$XIW_ROLE" = a ]; then
		# Side a listens, one connection per sync. busybox nc quits when
		# its stdin ends: keep that open until the peer's line is in.
		coproc _XIW_NC { exec timeout "$t" busybox nc -l -p "$XIW_SYNC_PORT" 2>/dev/null; }
		printf '%s %s\n' "$name" "$msg" >&"${_XIW_NC[1]}"
		fd=${_XIW_NC[0]}
	else
		# Side b connects; a refused connection means a is not there yet.
		# Every 0.1 s for the first 2 s, then every 0.3 s: b waits for
		# as long as a's step takes (a bench's job: 10 s and more), and
		# each attempt (a connect refused over the link, a stat of the
		# abort file over 9p) cost b's bash 7-8 ms of CPU under TCG.
		fd=
		while :; do
			exec {fd}<>"/dev/tcp/$XIW_PEER_IP/$port" && break
			fd=
			[ "$EPOCHSECONDS" -lt $end ] && [ ! -e "$abort" ] || break
			if [ $((end - EPOCHSECONDS)) -gt $((t - 2)) ]; then
				xiw_nap 0.1
			else
				xiw_nap 0.3
			fi
		done 2>/dev/null
		if [ -z "$fd" ]; then
			if [ -e "$abort" ]; then
				echo "xiw_sync $name: the peer VM died" >&2
			else
				echo "xiw_sync $name: peer not listening within ${t}s" >&2
			fi
			return 1
		fi
		printf '%s %s\n' "$name" "$msg" >&"$fd"
	fi
	# Read the peer's line in 1 s steps, to notice a dead peer. A step
	# that times out keeps what it read of the line (bash stores partial
	# input on a timeout): append it, or the line's first bytes are lost
	# when it arrives across a step ("peer is at 'vme-siw-...'"). IFS=
	# keeps the blank a step can end on: "NAME " then "MSG" read with the
	# default IFS join to "NAMEMSG" ("peer is at 'pt8-1-listen.'").
	while :; do
		rc=0
		part=
		IFS= read -r -t 1 part <&"$fd" || rc=$?
		line+=$part
		[ $rc -gt 128 ] || break			# a line, or EOF
		[ ! -e "$abort" ] || { line=died; break; }
		[ "$EPOCHSECONDS" -lt $end ] || break
	done
	if [ "$XIW_ROLE" = a ]; then
		kill "$_XIW_NC_PID" 2>/dev/null || true
		fd=${_XIW_NC[1]}
		exec {fd}>&-
		wait "$_XIW_NC_PID" 2>/dev/null || true
	else
		# a closes first: b waits (up to 5 s) for a's end of the
		# connection before it closes its own. Whoever closes first
		# keeps the connection in TIME_WAIT for a minute: on a, that
		# is port $XIW_SYNC_PORT; on b it was an ephemeral port, in
		# the range rdma_cm picks its source ports from. A TIME_WAIT
		# of this socket (no SO_REUSEADDR) makes bind() of that port
		# fail, and siw binds its connecting socket to rdma_cm's port
		# with no fallback: a siw client on b failed rdma_connect()
		# with EADDRINUSE (seen once in siw_data_2vm).
		[ -z "$line" ] || read -r -t 5 part <&"$fd" || true
		exec {fd}>&-
	fi
	case $line in
	'') echo "xiw_sync $name: no answer from the peer within ${t}s" >&2; return 1 ;;
	died) echo "xiw_sync $name: the peer VM died" >&2; return 1 ;;
	esac
	[ "${line%% *}" = "$name" ] || {
		echo "xiw_sync $name: peer is at '${line%% *}'" >&2
		# The peer already ended the test (its end barrier met us
		# here): tell the suite not to wait for that barrier again.
		case ${line%% *} in
		end:*) echo "${line%% *}" >"${XIW_VM_OUT:-/nonexistent}/peer-ended" 2>/dev/null || true ;;
		esac
		return 1; }
	printf '%s\n' "${line#* }"
}

# _xiw_sync_hub NAME MSG SEC: xiw_sync on a of three VMs. One busybox nc
# listener per peer (b on $XIW_SYNC_PORT, c on the next port), each
# behind two fifos: its stdin stays open until both peers' lines are in,
# so neither peer leaves the rendezvous before the other has come. Then
# each peer gets a's line when both are at NAME; when one is elsewhere,
# the other gets that one's place as the answer ("peer is at ..." on its
# side, which the suite's begin barrier needs to resync) and the stray
# one gets a's line. Closing stdin makes nc send its FIN first (a keeps
# the TIME_WAIT, as in the 2vm case) and end when the peer closes.
_xiw_sync_hub() {
	local name=$1 msg=$2 t=$3 abort=${XIW_VM_OUT:-/nonexistent}/peer-died
	local dir p i rc part end err='' ans
	local -A pid=() in=() outfd=() got=() full=()
	end=$(( EPOCHSECONDS + t ))
	dir=$(mktemp -d /run/xiw-sync.XXXXXX)
	for p in b c; do
		mkfifo "$dir/$p.in" "$dir/$p.out"
		i=$XIW_SYNC_PORT
		[ $p = b ] || i=$((i + 1))
		timeout "$t" busybox nc -l -p "$i" <"$dir/$p.in" >"$dir/$p.out" 2>/dev/null &
		pid[$p]=$!
		exec {i}<>"$dir/$p.in"; in[$p]=$i
		exec {i}<>"$dir/$p.out"; outfd[$p]=$i
		got[$p]='' full[$p]=0
	done
	# both lines, read in 1 s steps (partial reads kept, see xiw_sync)
	while [ "${full[b]}${full[c]}" != 11 ]; do
		for p in b c; do
			[ "${full[$p]}" = 0 ] || continue
			rc=0 part=
			IFS= read -r -t 0.5 part <&"${outfd[$p]}" || rc=$?
			got[$p]+=$part
			[ $rc -gt 128 ] || full[$p]=1
		done
		[ ! -e "$abort" ] || { err="a peer VM died"; break; }
		[ "$EPOCHSECONDS" -lt $end ] || break
	done
	for p in b c; do
		ans=$name' '$msg
		if [ "${full[$p]}" = 1 ] && [ "${got[$p]%% *}" = "$name" ]; then
			# the other one is elsewhere: tell this one where
			i=b; [ $p = c ] || i=c
			if [ "${full[$i]}" = 0 ] || [ -z "${got[$i]}" ]; then
				ans=
			elif [ "${got[$i]%% *}" != "$name" ]; then
				ans="${got[$i]%% *} -"
			fi
		fi
		[ -z "$ans" ] || { printf '%s\n' "$ans" >&"${in[$p]}"; } 2>/dev/null || true
		i=${in[$p]}; exec {i}>&-
		# a listener that never got its peer's line goes at once
		[ "${full[$p]}" = 1 ] || kill "${pid[$p]}" 2>/dev/null || true
	done
	# nc sent the answer and its FIN; it ends when the peer closes (up to
	# 5 s later, see xiw_sync)
	for _ in {1..60}; do
		kill -0 "${pid[b]}" 2>/dev/null || kill -0 "${pid[c]}" 2>/dev/null || break
		xiw_nap 0.1
	done
	kill "${pid[b]}" "${pid[c]}" 2>/dev/null || true
	wait "${pid[b]}" "${pid[c]}" 2>/dev/null || true
	for p in b c; do i=${outfd[$p]}; exec {i}<&-; done
	rm -rf "$dir"
	[ -z "$err" ] || { echo "xiw_sync $name: $err" >&2; return 1; }
	for p in b c; do
		if [ "${full[$p]}" = 0 ] || [ -z "${got[$p]}" ]; then
			echo "xiw_sync $name: no answer from $p within ${t}s" >&2
			return 1
		fi
		if [ "${got[$p]%% *}" != "$name" ]; then
			echo "xiw_sync $name: peer is at '${got[$p]%% *}' ($p)" >&2
			case ${got[$p]%% *} in
			end:*) echo "${got[$p]%% *}" >"${XIW_VM_OUT:-/nonexistent}/peer-ended" 2>/dev/null || true ;;
			esac
			return 1
		fi
	done
	printf '%s %s\n' "${got[b]#* }" "${got[c]#* }"
}

# xiw_barrier NAME [SEC]: xiw_sync without a message; fails the test on error.
xiw_barrier() {
	xiw_sync "$1" . "${2:-60}" >/dev/null || fail "barrier $1 failed"
}

# link_blackout DEV SECS: DEV drops every frame it sends or receives for
# SECS seconds, with its link up (a carrier loss that a guest's
# virtio-net cannot fake; ulp_nvmeof_flap_2vm, ulp_nfs_flap_2vm). The test VMs keep a
# clsact qdisc with a filter of their own on their link (guest-suite.sh,
# hold_perftest_refusals): the blackout adds its filters at prio 2 beside
# it and removes only those.
link_blackout() {
	local undo="tc filter del dev $1 ingress prio 2; tc filter del dev $1 egress prio 2"
	if ! tc qdisc show dev "$1" | grep -q '^qdisc clsact '; then
		modprobe sch_ingress 2>/dev/null || true
		tc qdisc add dev "$1" clsact
		undo="tc qdisc del dev $1 clsact"
	fi
	defer eval "{ $undo; } 2>/dev/null || true"
	tc filter add dev "$1" ingress prio 2 matchall action drop
	tc filter add dev "$1" egress prio 2 matchall action drop
	sleep "$2"
	eval "$undo"
}

# rping_status RC LOG...: the exit status RC of an rping whose output
# (stdout and stderr) is in LOG..., as a test must judge it. Debian 12's
# rping (rdma-core 44) races with itself on the way out: main destroys the
# rdma_cm event channel while its CM thread may still be about to call
# rdma_get_cm_event(), which then fails with EBADF, and that thread's
# exit(-1) can beat main's exit(0) (later rdma-core stops the thread
# through an eventfd first). A finished, clean run then exits 255; under
# a CPU hog apps_rping saw it in 2 of 5 runs. Only that case becomes 0:
# status 255, the EBADF line exactly once, and every other line one that
# rping prints on a clean run (pings, the disconnect event, the server's
# "wait for RDMA_READ_ADV state 10", i.e. DISCONNECTED, which is how its
# loop ends) or lib.sh's own ERR-trap line for that status. It is logged
# as "# tool: ..." (shown under the test's TAP line).
rping_status() {
	local rc=$1
	shift
	if [ "$rc" = 255 ] &&
	   [ "$(cat "$@" | grep -cx 'rdma_get_cm_event: Bad file descriptor' || true)" = 1 ] &&
	   ! cat "$@" | grep -vxE '(server )?ping data: .*|(server|client) DISCONNECT EVENT\.\.\.|wait for RDMA_READ_ADV state 10|rdma_get_cm_event: Bad file descriptor|FAIL: lib\.sh:[0-9]+: `timeout -k 2 "\$t" "\$@"` exited 255|' |
	   grep -q .; then
		printf '# tool: rping (%s) exited 255 in its own exit race after a clean run (rdma_get_cm_event: EBADF): taken as 0\n' "$*" >&2
		rc=0
	fi
	echo "$rc"
}

# CMD || rping_race LOG... || fail ...: rping_status for the status of
# the command that just failed.
rping_race() { return "$(rping_status $? "$@")"; }

# netdev_flap DEV SECONDS: take DEV down for SECONDS, bring it up and wait
# until xiw0's port is active again. FLAP_UP_US: when DEV came up (µs).
netdev_flap() {
	ip link set "$1" down
	sleep "$2"
	ip link set "$1" up
	FLAP_UP_US=$(now_us)
	wait_port_state xiw0 PORT_ACTIVE 10
}

# addrinuse_note LOG: for a client whose LOG says "Address already in use"
# (a stack that binds its TCP socket to rdma_cm's source port and fails
# when TCP holds that port: siw; xiw takes another), the TIME_WAIT
# sockets of this VM, and how many are xiw_sync's (see there).
addrinuse_note() {
	grep -q "Address already in use" "$1" || return 0
	ss -Htan state time-wait | awk -v p=":$XIW_SYNC_PORT" '
		function ours(a) { return substr(a, length(a) - length(p) + 1) == p }
		{ n++; if (ours($3) || ours($4)) s++ }
		END { printf " (EADDRINUSE: %d sockets in TIME_WAIT here, %d of them xiw_sync connections)", n, s }'
}

# rping_2vm NAME SERVER_ROLE SIZE COUNT: rping between the two VMs of a 2vm
# test, its server on SERVER_ROLE (a or b), with -v (every ping printed,
# counted on both sides) and -V (the client checks what it reads back).
# Both VMs call it with the same arguments in the same order.
RPING_PORT=7800
rping_2vm() {
	local name=$1 srole=$2 size=$3 count=$4 srv
	RPING_PORT=$((RPING_PORT + 1))
	if [ "$XIW_ROLE" = "$srole" ]; then
		run_timeout 90 rping -s -a "$XIW_LOCAL_IP" -p $RPING_PORT -v \
			-C "$count" -S "$size" >rping-srv.log 2>&1 &
		srv=$!
		wait_for 10 eval "ss -Hltn 'sport = :$RPING_PORT' | grep -q ." ||
			fail "$name: rping server does not listen"
		xiw_barrier "$name-listen" 30
		wait "$srv" || rping_race rping-srv.log ||
			fail "$name: rping server: $(tail -n 5 rping-srv.log)"
		expect_eq "$(grep -c 'ping data: rdma-ping-' rping-srv.log)" "$count" "$name: pings at the server"
	else
		xiw_barrier "$name-listen" 30
		run_timeout 90 rping -c -a "$XIW_PEER_IP" -p $RPING_PORT -v -V \
			-C "$count" -S "$size" >rping-cli.log 2>&1 ||
			rping_race rping-cli.log ||
			fail "$name: rping client: $(tail -n 5 rping-cli.log)$(addrinuse_note rping-cli.log)"
		expect_eq "$(grep -c 'ping data: rdma-ping-' rping-cli.log)" "$count" "$name: pings at the client"
	fi
	xiw_barrier "$name-end" 30
	log "$name: $count pings of $size bytes, server on $srole: ok"
}

# --- persistent memory and tests of two boots ---------------------------------
# A test with "# pmem: SIZE" runs in a VM of its own with an emulated NVDIMM
# of SIZE, backed by a host file in the run's directory; "# boots: 2" boots
# that VM a second time on the same file (see selftests/README.md).

# pmem_devdax [SIZE]: the NVDIMM's device-dax namespace, /dev/dax0.0,
# created on the first boot (labels written, one devdax namespace of SIZE,
# default 256M, 2 MiB aligned) and found again on later boots on the same
# file (the labels live in it; XIW_BOOT > 1 never creates one). Prints the
# character device's path.
pmem_devdax() {
	local m
	need_cmd ndctl daxctl
	for m in nfit nd_pmem dax_pmem device_dax; do
		# (the ndctl package hooks libnvdimm's modprobe to load keys: notes to ndctl.log)
		modprobe "$m" 2>>ndctl.log || fail "modprobe $m: $(tail -n 2 ndctl.log)"
	done
	[ -d /sys/bus/nd/devices/region0 ] ||
		fail "no NVDIMM region (the VM has no NVDIMM: is there a '# pmem:' header?)"
	if [ "${XIW_BOOT:-1}" -gt 1 ]; then
		# Later boots find the namespace of boot 1 (never re-create it:
		# that would wipe what the test is to find)
		wait_for 10 test -c /dev/dax0.0 ||
			fail "boot ${XIW_BOOT}: the devdax namespace of boot 1 is gone: $(ndctl list -N 2>&1 | tr -d '\n' | cut -c1-200)"
	elif [ ! -e /dev/dax0.0 ]; then
		# A label-less region cannot be divided, and the whole of it is
		# not a multiple of its alignment: write labels first.
		# (ndctl's notes about a missing TPM key go to ndctl.log)
		{ ndctl disable-region all && ndctl init-labels -f all &&
		  ndctl enable-region all &&
		  ndctl create-namespace -m devdax -a 2M -s "${1:-256M}"; } >>ndctl.log 2>&1 ||
			fail "ndctl could not create a devdax namespace: $(tail -n 3 ndctl.log | tr '\n' ' ')"
	fi
	wait_for 10 test -c /dev/dax0.0 || fail "no /dev/dax0.0 after ndctl create-namespace"
	echo /dev/dax0.0
}

# xiw_power_off: the end of boot 1 of a "# boots: 2" test. Checks the
# kernel log and taint flags since the test began as the runner would
# (a splat fails the test here, boot 2 never runs), tells the runner that
# the power-off is meant, then cuts the VM's power (_xiw_power_cut): no
# clean shutdown, no deferred cleanup, nothing unmapped or written back.
# The runner boots again on the same NVDIMM file and runs the test once
# more with XIW_BOOT=2; $XIW_TEST_STATE is the same directory in both boots.
xiw_power_off() {
	[ "${XIW_BOOT:-}" = 1 ] && [ "${XIW_TOPOLOGY:-}" != 3vm ] ||
		fail "xiw_power_off outside boot 1 of a '# boots: 2' test (XIW_BOOT=${XIW_BOOT:-unset})"
	_xiw_klog_check
	log "boot 1 ends here: power cut"
	now_us >"$XIW_TEST_OUT/$XIW_TEST_NAME.poweroff"
	_xiw_power_cut
}

# _xiw_power_cut: end this boot the way a power loss would. sysrq b resets
# the machine at once and qemu's -no-reboot turns the reset into its exit.
# Not sysrq o: a power-off shuts the devices down first (virtio breaks its
# queues, 6.11 and later), so for a moment the disks fail their I/O while
# the NIC still sends, and an NVMe-oF target answers its host's writes
# with a media error instead of vanishing. A sync first, so that the
# runner finds the notes written just before (they go to the host's
# output directory, which a reset would otherwise cut off).
_xiw_power_cut() {
	sync
	echo b >/proc/sysrq-trigger
	sleep 60
	fail "the VM still runs 60 s after sysrq b"
}

# _xiw_klog_check: fail the test on a splat in the kernel log since the
# runner's marker, or a new bad taint, as the runner would after the test
# (for a power-off, after which the runner cannot look).
_xiw_klog_check() {
	local hits t
	if [ -n "${XIW_KLOG_MARK:-}" ]; then
		hits=$(dmesg | awk -v m="$XIW_KLOG_MARK" 'f { print } index($0, m) { f = 1 }' |
			grep -E -- "$XIW_KLOG_BAD_RE" | grep -v -e 'xiw-selftest: ' -e 'Command line:' |
			head -n 20 || true)
		if [ -n "$hits" ]; then
			printf '%s\n' "$hits" >&2
			fail "kernel: $(head -n 1 <<<"$hits" | sed 's/^\[[^]]*\] *//' | cut -c1-120)"
		fi
		t=$(cat /proc/sys/kernel/tainted)
		(( (t & ~XIW_TAINT0) & XIW_TAINT_MASK )) &&
			fail "kernel tainted $XIW_TAINT0 -> $t"
	fi
	return 0
}

# xiw_vm_power_cycle SEC: in a 3vm test on b or c, cut this VM's power
# (_xiw_power_cut: no shutdown, no deferred cleanup, the peers see it vanish
# mid-connection) while a and the other VM go on with the test. The host
# runner keeps it off for SEC seconds (from qemu's exit), then boots it
# again with the same role, address and MAC, and its suite resumes in the
# same test: the script runs once more from the top with XIW_BOOT one
# higher (the first run has XIW_BOOT=1), without the runner's begin
# barrier (the other VMs are inside the test), then the plan goes on.
# $XIW_TEST_STATE outlives the power-off; the test's log goes on in the
# same file. The kernel log of the boot that ends is checked here, as the
# runner would (a splat fails the test and no power-off happens), and kept
# as tests/NAME.dmesg.bootN. The boot after the power-off takes 10-30 s
# under TCG on top of SEC.
xiw_vm_power_cycle() {
	local sec=$1 b=${XIW_BOOT:-1}
	[ "${XIW_TOPOLOGY:-}" = 3vm ] && [[ $XIW_ROLE == [bc] ]] ||
		fail "xiw_vm_power_cycle: only on VM b or c of a 3vm test (role $XIW_ROLE, topology ${XIW_TOPOLOGY:-?})"
	[[ $sec =~ ^[0-9]+$ ]] || fail "xiw_vm_power_cycle: SEC '$sec'"
	[ -n "${XIW_VM_OUT:-}" ] && [ -n "${XIW_TEST_NO:-}" ] ||
		fail "xiw_vm_power_cycle: not started by the VM runner"
	_xiw_klog_check
	dmesg | awk -v m="${XIW_KLOG_MARK:-}" 'f { print } index($0, m) { f = 1 }' \
		>"$XIW_TEST_OUT/$XIW_TEST_NAME.dmesg.boot$b" 2>/dev/null || true
	log "boot $b of $XIW_TEST_NAME on $XIW_ROLE ends here: power cut, $sec s off"
	printf '%s\t%s\t%s\t%s\n' "$XIW_TEST_NAME" "$XIW_TEST_NO" "$sec" "$b" \
		>"$XIW_VM_OUT/power-cycle"
	_xiw_power_cut
}
