# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# fault_lib.sh: resource pressure and fault injection for VM tests.
# Source it after lib.sh:
#	. "$XIW_SELFTESTS/fault_lib.sh"
# The test VM's kernel has no fault injection (no FAILSLAB, no
# FAIL_PAGE_ALLOC): pressure comes from limits a process can be put
# under. Each section names its functions with its own prefix.

# memory cgroups
#
# cgroup v2's memory controller, for a process whose kernel memory must
# be charged to it and limited by it. The VM mounts no cgroup file
# system: memcg_create mounts cgroup2 on $MEMCG_ROOT if nothing is there
# and enables the memory controller for the root's children. A cgroup is
# named by its NAME under $MEMCG_ROOT; the test runs a command in it with
# memcg_run and reads its charge with memcg_current, memcg_stat and
# memcg_event. memcg_create defers memcg_remove (and the unmount, if it
# mounted), so call it in the test's shell, not inside $(...).

MEMCG_ROOT=${MEMCG_ROOT:-/sys/fs/cgroup}

# memcg_mount: cgroup2 on $MEMCG_ROOT, memory controller on for children.
memcg_mount() {
	if [ ! -e "$MEMCG_ROOT/cgroup.controllers" ]; then
		mkdir -p "$MEMCG_ROOT"
		mount -t cgroup2 cgroup2 "$MEMCG_ROOT" || fail "cannot mount cgroup2 on $MEMCG_ROOT"
		defer umount "$MEMCG_ROOT"
	fi
	grep -qw memory "$MEMCG_ROOT/cgroup.controllers" ||
		skip "no memory controller in cgroup2 ($(cat "$MEMCG_ROOT/cgroup.controllers"))"
	grep -qw memory "$MEMCG_ROOT/cgroup.subtree_control" ||
		echo +memory >"$MEMCG_ROOT/cgroup.subtree_control"
}

# memcg_path NAME: the cgroup's directory.
memcg_path() { echo "$MEMCG_ROOT/$1"; }

# memcg_create NAME [MAX]: a new cgroup NAME with memory.max MAX (bytes,
# default max) and no swap, removed at exit (memcg_remove).
memcg_create() {
	local cg=$MEMCG_ROOT/$1

	memcg_mount
	mkdir "$cg" || fail "cannot create cgroup $1"
	defer memcg_remove "$1"
	memcg_set_max "$1" "${2:-max}"
	if [ -e "$cg/memory.swap.max" ]; then echo 0 >"$cg/memory.swap.max"; fi
}

# memcg_set_max NAME BYTES|max: change the cgroup's limit.
memcg_set_max() { echo "$2" >"$MEMCG_ROOT/$1/memory.max"; }

# memcg_run NAME CMD [ARGS...]: run CMD inside the cgroup (in a subshell
# that moves itself there and execs CMD); its status is CMD's. Put it in
# the background, a coproc or a pipe as any command.
memcg_run() {
	local cg=$MEMCG_ROOT/$1

	shift
	# the status is CMD's to judge: no ERR trap for it here
	(echo "$BASHPID" >"$cg/cgroup.procs" && exec "$@") || return $?
}

# memcg_current NAME: memory.current, bytes charged to the cgroup now.
memcg_current() { cat "$MEMCG_ROOT/$1/memory.current"; }

# memcg_stat NAME KEY: KEY's value in memory.stat (e.g. kernel, vmalloc,
# slab_unreclaimable, sock; bytes), 0 if the kernel has no such key.
memcg_stat() {
	awk -v k="$2" '$1 == k { v = $2 } END { print v + 0 }' "$MEMCG_ROOT/$1/memory.stat"
}

# memcg_event NAME KEY: KEY's count in memory.events (max, oom,
# oom_kill, ...).
memcg_event() {
	awk -v k="$2" '$1 == k { v = $2 } END { print v + 0 }' "$MEMCG_ROOT/$1/memory.events"
}

# memcg_procs NAME: the PIDs in the cgroup, one a line.
memcg_procs() { cat "$MEMCG_ROOT/$1/cgroup.procs"; }

# memcg_remove NAME: kill what still runs in the cgroup, wait until it is
# empty (10 s), remove it. Deferred by memcg_create; a cgroup that cannot
# be removed fails the test.
memcg_remove() {
	local cg=$MEMCG_ROOT/$1

	[ -d "$cg" ] || return 0
	if [ -s "$cg/cgroup.procs" ]; then echo 1 >"$cg/cgroup.kill"; fi
	wait_for 10 eval "[ ! -s '$cg/cgroup.procs' ]" ||
		fail "cgroup $1 still has processes: $(tr '\n' ' ' <"$cg/cgroup.procs")"
	wait_for 10 rmdir "$cg" || fail "cannot remove cgroup $1"
}

# TCP memory pressure
#
# net.ipv4.tcp_mem (pages, global to every TCP socket of the VM) over its
# hard limit makes sk_wmem_schedule() fail (__sk_mem_raise_allocated(),
# "suppress_allocation"): a socket's send buffer is moderated down to
# SOCK_MIN_SNDBUF, and tcp_sendmsg_locked() that cannot charge a new skb
# or its copy returns -EAGAIN with MSG_DONTWAIT (or a short count) while
# sk_stream_is_writeable() may still say there is room: nothing in flight,
# no write-space event due. The limit is checked against the global
# counter, which each CPU updates only in steps of net.core.mem_pcpu_rsv
# (256 pages, also its minimum), so a VM whose sockets hold little may
# read 0 there and never be over any limit. The squeeze therefore first
# fills a ballast: a loopback TCP connection whose receiver never reads,
# holding a few MiB (its send and receive buffers) for as long as the
# squeeze lasts, well over the one page the limit is set to.
#
# TCP enters memory pressure only when some socket asks for memory over
# the limit; a ping-pong's sockets can live for seconds on what each has
# reserved (sk_forward_alloc) and never ask. So the squeeze pokes: the
# ballast sends once more on a second idle connection, a fresh charge
# that finds the counter over the limit, and the squeeze waits until
# /proc/net/protocols says TCP is under pressure. From then on every
# socket that needs memory is refused past its minimum.

# fault_tcp_mem_squeeze [PAGES]: the ballast, then tcp_mem "PAGES PAGES
# PAGES" (default 1: every send allocation over what a socket has
# reserved fails) until fault_tcp_mem_restore or the end of the test.
fault_tcp_mem_squeeze() {
	local pages=${1:-1}

	if [ -z "${FAULT_TCP_MEM_SAVED:-}" ]; then
		FAULT_TCP_MEM_SAVED=$(sysctl -n net.ipv4.tcp_mem | tr -s '\t ' ' ')
		defer fault_tcp_mem_restore
	fi
	[ -n "${FAULT_BALLAST_PID:-}" ] || fault_tcp_mem_ballast
	echo "$pages $pages $pages" >/proc/sys/net/ipv4/tcp_mem
	kill -USR1 "$FAULT_BALLAST_PID"
	wait_for 5 eval '[ "$(fault_tcp_mem_pressure)" = 1 ]' || true
}

# fault_tcp_mem_restore: tcp_mem as it was before the first squeeze;
# nothing if there was no squeeze. Safe to call again. The ballast stays
# for the next squeeze (it goes at the end of the test).
fault_tcp_mem_restore() {
	[ -n "${FAULT_TCP_MEM_SAVED:-}" ] || return 0
	echo "$FAULT_TCP_MEM_SAVED" >/proc/sys/net/ipv4/tcp_mem
}

# fault_tcp_mem_ballast: start the ballast (above) and wait until it is
# full: its sender saw EAGAIN. Sets FAULT_BALLAST_PID; the ballast goes at
# the end of the test. The squeeze starts it if need be; a test that loads
# its CPUs should call it first (python's start takes seconds under TCG).
fault_tcp_mem_ballast() {
	local f=$XIW_TEST_TMP/fault_ballast.$$

	[ -z "${FAULT_BALLAST_PID:-}" ] || return 0
	rm -f "$f"
	/usr/bin/python3 -c '
import signal, socket, sys, time
l = socket.socket()
l.bind(("127.0.0.1", 0))
l.listen(2)
c = socket.create_connection(l.getsockname())
r, _ = l.accept()
c.setblocking(False)
p = socket.create_connection(l.getsockname())
pr, _ = l.accept()
p.setblocking(False)
def poke(sig, frame):
    try:
        p.send(bytes(16384))
    except OSError:
        pass
signal.signal(signal.SIGUSR1, poke)
n = 0
buf = bytes(65536)
end = time.monotonic() + 10
while time.monotonic() < end:
    try:
        n += c.send(buf)
    except BlockingIOError:
        break
open(sys.argv[1], "w").write("%d\n" % n)
time.sleep(3600)
' "$f" &
	FAULT_BALLAST_PID=$!
	defer kill "$FAULT_BALLAST_PID"
	wait_for 60 test -s "$f" || fail "TCP ballast not filled"
}

# fault_tcp_mem_pressure: 1 while TCP is under memory pressure (the
# "press" column of /proc/net/protocols' TCP row says yes), else 0.
fault_tcp_mem_pressure() {
	awk '$1 == "TCP" { print ($5 == "yes") ? 1 : 0; exit }' /proc/net/protocols
}
