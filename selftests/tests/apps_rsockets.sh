#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 400
# description: rsockets and qperf over xiw: rstream (blocking, non-blocking, async; data verified) between two xiw devices, riostream (riomap'd RDMA Writes, data verified) over one, qperf -cm1 rc_bw, rc_lat, rc_rdma_read_bw, rc_rdma_write_bw; every exit status, every figure sane, xiw's counters saw the traffic
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

need_cmd rstream riostream qperf ss
xiw_two_devices
A=192.0.2.1	# xiw0
B=192.0.2.2	# xiw1
port=7700

# hw NAME DEV: one of DEV's port counters (Documentation/observability.md)
hw() { cat "/sys/class/infiniband/$2/ports/1/hw_counters/$1"; }

# snap: "xiw0_rx xiw0_tx xiw1_rx xiw1_tx" payload-and-header bytes now
snap() { echo "$(hw rx_bytes xiw0) $(hw tx_bytes xiw0) $(hw rx_bytes xiw1) $(hw tx_bytes xiw1)"; }

# sane_number WHAT VALUE: a finite number above zero (not 0, inf, nan)
sane_number() {
	[[ $2 =~ ^[0-9]+(\.[0-9]+)?$ ]] || fail "$1: '$2' is not a number"
	awk -v v="$2" 'BEGIN { exit !(v > 0) }' || fail "$1: $2 is not above 0"
}

# stream_line LOG WHAT: check rstream/riostream's result line
# ("custom SIZE XFERS ITERS TOTAL TIMEs GB/SEC USEC/XFER") and log it
stream_line() {
	local l
	l=$(awk '$1 == "custom"' "$1")
	if [ -z "$l" ] || [ "$(wc -l <<<"$l")" != 1 ]; then cat "$1"; fail "$2: no single result line"; fi
	read -r _ _ _ _ _ t gbs us <<<"$l"
	sane_number "$2 time" "${t%s}"
	sane_number "$2 Gb/sec" "$gbs"
	sane_number "$2 usec/xfer" "$us"
	log "$2: $l"
}

# --- rstream: the rsocket stream API, xiw1 (client) -> xiw0 (server) --------
# Custom mode (-S/-C/-I) makes rstream's exit status the test's: a failed
# transfer or a verify mismatch (-T v: every received buffer checked
# against the sender's pattern) ends it with a non-zero status.
# Async mode (-T a: poll before every transfer) runs on the server only:
# rstream's do_poll() fails on POLLHUP even when POLLIN comes with it, and
# rsockets reports both once the peer's last data and its shutdown are in
# (rs_poll_rs()), so an async client whose last receive finds the server
# already gone exits 16 with the data in hand. The server's polls all come
# before the client can go; its client runs non-blocking (-T n).
size=65536 count=20 iters=4
for mode in b n a; do
	port=$((port + 1))
	before=$(snap)
	server_bg rstream 200 rstream -b $A -p $port -S $size -C $count -I $iters -T v -T $mode
	cmode=$mode
	[ $mode != a ] || cmode=n
	rc=0
	run_timeout 120 rstream -s $A -b $B -p $port -S $size -C $count -I $iters -T v -T $cmode \
		>rstream-cli.log 2>&1 || rc=$?
	[ $rc = 0 ] || { cat rstream-cli.log rstream-srv.log; fail "rstream -T $mode: client exited $rc"; }
	server_done rstream
	stream_line rstream-cli.log "rstream -T $mode client"
	stream_line rstream-srv.log "rstream -T $mode server"
	read -r r0 t0 r1 t1 <<<"$before"
	read -r r0n t0n r1n t1n <<<"$(snap)"
	want=$((size * count * iters))
	# each way: the payload once, plus MPA/DDP/RDMAP headers and
	# rsockets' control messages
	[ $((r0n - r0)) -ge $want ] || fail "rstream -T $mode: xiw0 received $((r0n - r0)) B < $want B sent to it"
	[ $((r1n - r1)) -ge $want ] || fail "rstream -T $mode: xiw1 received $((r1n - r1)) B < $want B sent to it"
	[ $((t1n - t1)) -ge $want ] || fail "rstream -T $mode: xiw1 sent $((t1n - t1)) B < $want B"
	[ $((t0n - t0)) -ge $want ] || fail "rstream -T $mode: xiw0 sent $((t0n - t0)) B < $want B"
	log "rstream -T $mode: xiw1->xiw0 $((t1n - t1)) B, xiw0->xiw1 $((t0n - t0)) B on xiw's counters"
done

# --- riostream: riomap()ed buffers written by riowrite() (RDMA Writes) -----
# riostream's client cannot bind a source address (rdma-core leaves it as a
# TODO), so client and server both use xiw0 here.
size=16384 count=8 iters=10
port=$((port + 1))
before=$(snap)
server_bg riostream 200 riostream -b $A -p $port -S $size -C $count -I $iters -T v -T b
rc=0
run_timeout 120 riostream -s $A -p $port -S $size -C $count -I $iters -T v -T b \
	>riostream-cli.log 2>&1 || rc=$?
[ $rc = 0 ] || { cat riostream-cli.log riostream-srv.log; fail "riostream: client exited $rc"; }
server_done riostream
stream_line riostream-cli.log "riostream client"
stream_line riostream-srv.log "riostream server"
read -r r0 t0 _ _ <<<"$before"
read -r r0n t0n _ _ <<<"$(snap)"
want=$((2 * size * count * iters))
[ $((r0n - r0)) -ge $want ] || fail "riostream: xiw0 received $((r0n - r0)) B < $want B written"
[ $((t0n - t0)) -ge $want ] || fail "riostream: xiw0 sent $((t0n - t0)) B < $want B written"
log "riostream: $((t0n - t0)) B through xiw0"

# --- qperf over rdma_cm (-cm1: iWARP needs the CM) ---------------------------
# The qperf server listens on TCP port 19765 for its control connection and
# opens an rdma_cm listener (wildcard address) for each test.
port=19765
server_bg qperf 200 qperf -lp $port
# qperf_test TEST UNIT: one test (2 s), its result checked; prints the value
qperf_test() {
	local out v u rc=0
	out=$(run_timeout 60 qperf -lp $port -cm1 -t 2 -uu $A "$1" 2>&1) || rc=$?
	[ $rc = 0 ] || fail "qperf $1 exited $rc: $out"
	expect_nomatch "$out" 'failed|error|Error' "qperf $1"
	read -r v u <<<"$(awk -v k="$2" '$1 == k && $2 == "=" { print $3, $4 }' <<<"$out")"
	[ -n "$v" ] || fail "qperf $1: no $2 line: $out"
	sane_number "qperf $1 $2" "$v"
	printf '%s %s %s\n' "$1" "$v" "$u"
}
before=$(snap)
results=()
for t in rc_bw rc_rdma_read_bw rc_rdma_write_bw; do
	results+=("$(qperf_test $t bw)")
done
results+=("$(qperf_test rc_lat latency)")
read -r r0 t0 _ _ <<<"$before"
read -r r0n t0n _ _ <<<"$(snap)"
# qperf's server runs until stopped: TERM to it and its timeout (kill_bg)
kill_bg "$srv"
wait "$srv" 2>/dev/null || true
bw_sum=0
for r in "${results[@]}"; do
	log "qperf -cm1 $r"
	read -r t v u <<<"$r"
	case $t in
	*_bw) [ "$u" = bytes/sec ] || fail "qperf $t: unit '$u', expected bytes/sec (-uu)"
	      bw_sum=$(awk -v a="$bw_sum" -v b="$v" 'BEGIN { printf "%d", a + b }') ;;
	*_lat) [ "$u" = ns ] || fail "qperf $t: unit '$u', expected ns (-uu)" ;;
	esac
done
# The three bandwidth tests ran 2 s each (-t 2) at the rates they report:
# xiw0 (both ends of every qperf connection) moved at least one second's
# worth of the three rates, each way. (No check that all xiw sent was
# received: these tools tear connections down without waiting for the
# peer, and an FPDU in TCP when the receiving QP goes is never counted;
# one run ended with 56 bytes sent and not received.)
[ $((r0n - r0)) -ge "$bw_sum" ] || fail "qperf: xiw0 received $((r0n - r0)) B, less than 1 s of the reported rates ($bw_sum B)"
[ $((t0n - t0)) -ge "$bw_sum" ] || fail "qperf: xiw0 sent $((t0n - t0)) B, less than 1 s of the reported rates ($bw_sum B)"
log "qperf: xiw0 received $((r0n - r0)) B, sent $((t0n - t0)) B (1 s of the reported rates: $bw_sum B)"
