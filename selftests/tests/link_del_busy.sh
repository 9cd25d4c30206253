#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 240
# description: rdma link delete and rmmod with traffic running (xiw_lifecycle traffic and rping between two devices): the peer's device deleted - every WR of the survivor completes (success or flush); the poster's own device deleted - the removal is reported, the process tears down and exits; rping on both ends exits; rmmod refused while a process holds the device, traffic undisturbed; each time the link is re-added and the survivor connects again (rping -V), and no QP, cm_id, MR, TCP socket or xiw vmalloc area is left
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

LC=$(need_prog xiw_lifecycle)
need_cmd rping ss
xiw_two_devices
vmalloc_xiw() { grep -c '\[xiw\]' /proc/vmallocinfo || true; }
sock0=$(tcp_socks)
vm0=$(vmalloc_xiw)
# ended PID: PID (a child of ours) exited: gone or a zombie
ended() {
	local st=Z
	[ -r "/proc/$1/stat" ] && read -r _ _ st _ <"/proc/$1/stat" 2>/dev/null
	[ "$st" = Z ]
}

# traffic TAG PORT: xiw_lifecycle traffic from xiw1 (192.0.2.2, posts and
# counts) to xiw0 (192.0.2.1); waits until data flows.
traffic() {
	"$LC" traffic 192.0.2.1 "$2" 90 192.0.2.2 >"tr-$1.log" 2>&1 &
	trpid=$!
	defer eval "kill $trpid 2>/dev/null || true"
	wait_for 30 grep -q TRAFFIC "tr-$1.log" || fail "$1: no traffic: $(cat "tr-$1.log")"
}

# settle TAG NOKS: the traffic program ends within 30 s with NOKS ok lines,
# no FAIL, and tears down
settle() {
	local rc=0
	wait_for 30 ended "$trpid" ||
		fail "$1: the traffic program does not end: $(tail -n 3 "tr-$1.log")"
	wait "$trpid" || rc=$?
	sed 's/^/# /' "tr-$1.log"
	[ "$rc" = 0 ] || fail "$1: exit $rc: $(grep -m1 -E '^FAIL|xiw_lifecycle|rdma' "tr-$1.log")"
	expect_eq "$(grep -c '^ok' "tr-$1.log")" "$2" "$1: checks passed"
	expect_match "$(cat "tr-$1.log")" '^TORN DOWN$' "$1: teardown returned"
}

# relink NAME NETDEV: the link again, port up
relink() {
	rdma link add "$1" type "$XIW_LINK_TYPE" netdev "$2"
	wait_port_state "$1" PORT_ACTIVE 10
}

# again TAG PORT: the survivor (xiw1) connects to xiw0 again, data verified
again() {
	run_timeout 60 rping -s -a 192.0.2.1 -p "$2" -C 10 -S 4000 >"rs-$1.log" 2>&1 &
	local srv=$!
	wait_listen "$2" 20 $srv
	run_timeout 60 rping -c -a 192.0.2.1 -I 192.0.2.2 -p "$2" -C 10 -S 4000 -V \
		>"rc-$1.log" 2>&1 || rping_race "rc-$1.log" || fail "$1: no new connection: $(cat "rc-$1.log" "rs-$1.log")"
	wait $srv || rping_race "rs-$1.log" || fail "$1: rping server: $(cat "rs-$1.log")"
}

# 1. the passive side's device is deleted under traffic: the survivor's
# connection is aborted, every WR it posted completes
traffic peer 7611
t0=$(now_us)
rdma link delete xiw0
log "rdma link delete xiw0 under traffic: $(( ($(now_us) - t0) / 1000 )) ms"
settle peer 2
relink xiw0 d0
again peer 7612
log "peer's device deleted: every WR completed, link re-added, new connection works"

# 2. the posting side's own device is deleted: xiw destroys its QP (the
# WRs are flushed into its CQ) and then ib_core revokes its rings. The
# program sees either every WR complete (it polled the flushes before the
# rings went) or IBV_EVENT_DEVICE_FATAL first ("REMOVED"); every call
# returns and it exits
traffic own 7613
rdma link delete xiw1
if grep -q '^REMOVED after' tr-own.log 2>/dev/null || { wait_for 30 ended "$trpid" &&
		grep -q '^REMOVED after' tr-own.log; }; then
	settle own 1
	log "own device deleted: removal reported before the flushes were seen"
else
	settle own 2
	log "own device deleted: every WR completed (flushed) before the rings were revoked"
fi
relink xiw1 d1
again own 7614
log "own device deleted: process ended, new connection works"

# 3. rping across the two devices, the server's device deleted: both exit
rping -s -a 192.0.2.1 -p 7615 -C 1000000 -S 4000 >rs-rp.log 2>&1 &
rs=$!
defer eval "kill $rs 2>/dev/null || true"
wait_listen 7615 20 $rs
rping -c -a 192.0.2.1 -I 192.0.2.2 -p 7615 -C 1000000 -S 4000 -V >rc-rp.log 2>&1 &
rc=$!
defer eval "kill $rc 2>/dev/null || true"
# rping prints nothing without -v: wait for the connection to carry
# 256 KiB (about 30 of its 4000-byte rounds)
wait_for 20 eval "[ \$(tcp_bytes_acked 7615) -ge 262144 ]" ||
	fail "rping moves no data: $(cat rs-rp.log rc-rp.log)"
rdma link delete xiw0
for p in $rs $rc; do
	wait_for 30 ended "$p" ||
		fail "rping $p still runs 30 s after the device went: $(cat rs-rp.log rc-rp.log)"
done
# (rping's exit status says nothing here: its client exits 0 after a
# DISCONNECTED event mid-loop)
wait $rc || true
wait $rs || true
expect_match "$(cat rc-rp.log)" 'DISCONNECT|error|fail' "rping client: the connection ended"
log "rping server: $(tr '\n' ' ' <rs-rp.log | cut -c1-200)"
log "rping client: $(tr '\n' ' ' <rc-rp.log | cut -c1-200)"
relink xiw0 d0
again rping 7616

# 4. rmmod while a process runs traffic: refused (the process holds the
# device: libxiw's doorbell files pin the module), traffic undisturbed;
# it succeeds once the process is gone
traffic rmmod 7617
expect_fail rmmod "$XIW_MOD"
kill -0 "$trpid" || fail "rmmod: the traffic program died: $(cat tr-rmmod.log)"
rdma link delete xiw0
settle rmmod 2
rmmod "$XIW_MOD"
log "rmmod refused while traffic ran, traffic went on; done after it ended"
xiw_load
relink xiw0 d0
relink xiw1 d1
again rmmod 7618

# nothing left behind
wait_for 10 eval "[ -z \"\$(rdma res show qp 2>/dev/null | grep xiw)\" ]" ||
	fail "QPs left: $(rdma res show qp)"
wait_for 10 eval "[ -z \"\$(rdma res show cm_id 2>/dev/null | grep xiw)\" ]" ||
	fail "cm_ids left: $(rdma res show cm_id)"
expect_eq "$(rdma res show mr 2>/dev/null | grep -c xiw || true)" 0 "MRs left"
wait_for 30 eval '[ "$(tcp_socks)" -le "$sock0" ]' ||
	fail "TCP sockets: $(tcp_socks) allocated, $sock0 before: $(ss -tanp | head -n 20 | tr '\n' '|')"
expect_eq "$(vmalloc_xiw)" "$vm0" "vmalloc areas of xiw"
