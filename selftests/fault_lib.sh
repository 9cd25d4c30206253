# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# Fault and pressure helpers for the VM tests (sourced after lib.sh).
#
# The Debian kernel of the test VMs has no fault injection (no failslab,
# no fail_page_alloc): pressure is made real through the knobs it has.
# Every helper that changes a setting registers its own restore with
# defer, so a failing test leaves the VM as it found it.

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
import socket, sys, time
l = socket.socket()
l.bind(("127.0.0.1", 0))
l.listen(1)
c = socket.create_connection(l.getsockname())
r, _ = l.accept()
c.setblocking(False)
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
