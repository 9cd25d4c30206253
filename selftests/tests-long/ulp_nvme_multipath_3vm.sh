#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 3vm
# shared-disk: 64M
# timeout: 600
# description: NVMe-oF native multipath over xiw: b and c export one namespace (one subsystem NQN, nsid, UUID/NGUID; one host file as their shared virtio-blk disk; cntlid ranges of their own), a connects to both (one subsystem, two paths, round-robin) and runs fio with crc32c verify on the multipath device while b powers itself off for 10 s and comes back: I/O fails over to c and back, no I/O or verify error, both paths live at the end; I/O completed on c while b was down and no gap without a completed I/O longer than 20 s (XIW_MPATH_STALL_MS). Then the same with siw on the targets (a on xiw), a shorter run
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$XIW_SELFTESTS/nvmet_lib.sh"
#
# Why it can pass only when multipath really works: fio verifies every
# block it wrote (crc32c and the block's offset in a header) by reading it
# back, interleaved with the writes (verify_backlog) and all of it at the
# end; round-robin sends every other I/O down each path, so a block written
# through one target is read through the other; the writes in flight on b's
# path when b vanishes must be retried on c (nvme_failover_req) or fio sees
# an error. XIW_MPATH_PROOF shows that the checks bite:
#   unshared  c exports a RAM disk of the same size instead of the shared
#             disk: blocks written through one path and read through the
#             other differ, fio's verify must fail
#   noexport  b comes back but exports nothing: b's path must stay down and
#             the test fail on it
# XIW_MPATH_CASES (default "xiw siw") the RDMA device of the targets per case.

need_cmd fio awk
xiw_load
xiw_need_provider
nqn=xiw-mpath
uuid=6c1f3a52-9d0e-4c77-8a41-3b2f5e7d9c10
read -r -a cases <<<"${XIW_MPATH_CASES:-xiw siw}"
proof=${XIW_MPATH_PROOF:-}
# The longest gap without a completed I/O after b's power-off (ms). The
# keep-alive (5 s) finds b gone and its I/O fails over to c: the longest
# gaps seen were 7.4-7.9 s (xiw) and 8.3-10.0 s (siw). A host that waited
# for b stalls for all of b's absence, 10 s off, then its boot and export
# (32.4 s with mutation 70's 60 s keep-alive).
stall_max=${XIW_MPATH_STALL_MS:-20000}
off_s=10
# keep-alive 5 s finds a dead target (its TCP connection only times out
# after minutes); reconnect every second; give a dead path 180 s before
# its controller goes for good (b is off ~10 s and boots in ~30 s)
opts=nr_io_queues=1,keep_alive_tmo=5,reconnect_delay=1,ctrl_loss_tmo=180

# --- targets (b, c) ---------------------------------------------------------

# target_up STACK: this VM's RDMA device on the segment (xiw0 or siw0) and
# an nvmet-rdma target on it exporting the shared disk as namespace 1
target_up() {
	local dev=/dev/vda
	if [ "$1" = xiw ]; then
		xiw_link_add xiw0 "$XIW_NETDEV"
		wait_port_state xiw0 PORT_ACTIVE 5
	else
		siw_load
		rdma_link_add siw0 siw "$XIW_NETDEV"
		wait_port_state siw0 PORT_ACTIVE 5
	fi
	modprobe virtio_blk
	wait_for 10 test -b /dev/vda || fail "no shared disk /dev/vda (# shared-disk: header)"
	if [ "$proof" = unshared ] && [ "$XIW_ROLE" = c ]; then
		modprobe brd rd_nr=1 rd_size=$(( $(cat /sys/block/vda/size) / 2 )) || fail "no brd"
		defer modprobe -r brd
		dev=/dev/ram0
		log "PROOF: c exports a RAM disk of its own, not the shared disk"
	fi
	[ "$XIW_ROLE" = b ] && NVMET_CNTLID=1-99 || NVMET_CNTLID=100-199
	NVMET_DEVICE=$dev NVMET_NS_UUID=$uuid NVMET_SERIAL=xiwmpath0 NVMET_CNTLID=$NVMET_CNTLID \
		nvmet_target "$XIW_LOCAL_IP" $nqn 0
	log "target $XIW_ROLE on $1: $dev as $nqn ns 1, cntlid $NVMET_CNTLID"
}

# target_down STACK: the target, its modules and the device
target_down() {
	nvmet_target_down
	if [ "$1" = xiw ]; then rdma_link_del xiw0; else rdma_link_del siw0; fi
}

# --- host (a) ---------------------------------------------------------------

# sample: every 0.2 s "ms ios_b ios_c state_b state_c" (I/Os completed on
# each path's hidden disk, controller states) into samples.log
sample() {
	local t sb sc stb stc
	while :; do
		t=$(now_us)
		sb=-1 sc=-1
		{ read -r -a f <"$pdisk_b/stat" && sb=$(( f[0] + f[4] )); } 2>/dev/null
		{ read -r -a f <"$pdisk_c/stat" && sc=$(( f[0] + f[4] )); } 2>/dev/null
		stb=$(cat "$ctrl_b/state" 2>/dev/null || echo gone)
		stc=$(cat "$ctrl_c/state" 2>/dev/null || echo gone)
		echo "$(( t / 1000 )) $sb $sc $stb $stc"
		sleep 0.2
	done >samples.log
}
fio_running() { kill -0 "$fio" 2>/dev/null; }
# fio_why: fio's first error lines, for a failure message (fio writes them
# to stderr or, with --output, into its log; either may have none)
fio_why() {
	{ grep -h -m3 -iE 'verify|bad|err=|error' fio.out fio.log || echo "no error line"; } |
		tr '\n' '|' | cut -c1-400
}
# fio_ended STACK WHEN: fio ended early; its status and first errors
fio_ended() {
	local rc=0
	wait "$fio" || rc=$?
	sed 's/^/# /' fio.log fio.out
	fail "$1: fio ended $2 (exit $rc): $(fio_why)"
}
ios_b() { local f; read -r -a f <"$pdisk_b/stat"; echo $(( f[0] + f[4] )); }

# host_case STACK MB: connect both paths, fio over the multipath device,
# b's power cycle meanwhile, checks and timings
host_case() {
	local stack=$1 mb=$2 sub s inst head t_off t_back rc st ib
	xiw_link_add xiw0 "$XIW_NETDEV" 2>/dev/null || rdma_link_has xiw0 || fail "no xiw0"
	wait_port_state xiw0 PORT_ACTIVE 5
	xiw_barrier "$stack-targets-up" 120
	ctrl_b=$(nvme_path_connect "$XIW_IP_B" $nqn $opts)
	ctrl_c=$(nvme_path_connect "$XIW_IP_C" $nqn $opts)
	expect_eq "$(cat /sys/module/nvme_core/parameters/multipath)" Y "nvme_core multipath"
	# one subsystem, the two controllers its paths
	sub=
	for s in /sys/class/nvme-subsystem/nvme-subsys*; do
		[ "$(cat "$s/subsysnqn")" = $nqn ] && sub=$s
	done
	[ -n "$sub" ] || fail "no nvme subsystem $nqn"
	expect_eq "$(find "$sub/" -maxdepth 1 -name 'nvme*' -printf '%f\n' | grep -xE 'nvme[0-9]+' | sort -V | tr '\n' ' ')" \
		"$(printf '%s\n' "${ctrl_b##*/}" "${ctrl_c##*/}" | sort -V | tr '\n' ' ')" \
		"controllers of ${sub##*/}"
	expect_ne "$(cat "$ctrl_b/cntlid")" "$(cat "$ctrl_c/cntlid")" "cntlid of the two paths"
	inst=${sub##*nvme-subsys}
	wait_for 10 test -b /dev/nvme${inst}n1 || fail "no multipath device /dev/nvme${inst}n1"
	head=/dev/nvme${inst}n1
	pdisk_b=/sys/block/nvme${inst}c${ctrl_b##*/nvme}n1
	pdisk_c=/sys/block/nvme${inst}c${ctrl_c##*/nvme}n1
	[ -e "$pdisk_b" ] && [ -e "$pdisk_c" ] || fail "no path disks ${pdisk_b##*/} ${pdisk_c##*/}"
	expect_eq "$(cat "/sys/block/${head##*/}/wwid")" "uuid.$uuid" "wwid of the namespace"
	echo round-robin >"$sub/iopolicy"
	log "$stack: ${sub##*/}: paths ${ctrl_b##*/} (b, cntlid $(cat "$ctrl_b/cntlid")) and ${ctrl_c##*/} (c, cntlid $(cat "$ctrl_c/cntlid")), $head, iopolicy $(cat "$sub/iopolicy")"

	sample &
	sampler=$!
	defer eval "kill $sampler 2>/dev/null || true"
	# writes rate-limited so that they span b's outage; reads (the verify)
	# as fast as they go
	fio --name=mpath --filename="$head" --direct=1 --ioengine=libaio \
		--iodepth=4 --rw=randwrite --bs=4k --size="${mb}m" --rate=,384k \
		--verify=crc32c --verify_backlog=64 --verify_fatal=1 --do_verify=1 \
		--output=fio.log >fio.out 2>&1 &
	fio=$!
	# (on a failure: before the paths go, LIFO)
	defer eval "kill $fio 2>/dev/null && sleep 2 || true"
	# I/O on both paths before b goes
	if ! wait_for 60 eval '[ "$(ios_b)" -ge 64 ] && [ "$(awk "{ print \$1 + \$5 }" $pdisk_c/stat)" -ge 64 ] || ! fio_running'; then
		fail "$stack: no I/O on both paths: b $(ios_b), c $(cat "$pdisk_c/stat"): $(cat fio.out)"
	fi
	fio_running || fio_ended "$stack" "before the power-off"
	xiw_sync "$stack-poweroff" go 60 >/dev/null || fail "$stack: b and c not at the power-off"
	t_off=$(now_us)
	wait_for 60 eval '[ "$(cat $ctrl_b/state)" != live ]' ||
		fail "$stack: b's path still live 60 s after b powered off"
	log "$stack: b's path $(cat "$ctrl_b/state") $(( ($(now_us) - t_off) / 1000 )) ms after b's power-off"
	xiw_sync "$stack-back" . 300 >/dev/null || fail "$stack: b did not come back within 300 s"
	t_back=$(now_us)
	wait_for 60 eval '[ "$(cat $ctrl_b/state)" = live ]' ||
		fail "$stack: b's path not live 60 s after b exported again (state $(cat "$ctrl_b/state"))"
	log "$stack: b's path live again $(( ($(now_us) - t_back) / 1000 )) ms after b exported again"
	if fio_running; then
		ib=$(ios_b)
		wait_for 30 eval '[ "$(ios_b)" -gt '"$ib"' ] || ! fio_running' ||
			fail "$stack: no I/O through b's path 30 s after it came back"
	fi
	wait_for 300 eval '! fio_running' || fail "$stack: fio still running 300 s after b came back"
	rc=0
	wait "$fio" || rc=$?
	sleep 1	# a sample or more after the last state change
	kill "$sampler"; wait "$sampler" 2>/dev/null || true
	sed 's/^/# /' fio.log
	[ "$rc" = 0 ] ||
		fail "$stack: fio exit $rc: $(fio_why)"
	expect_match "$(cat fio.log)" 'err= 0' "$stack: fio: no I/O error"
	# (fio prints 8 MiB as 8192KiB)
	expect_match "$(cat fio.log)" "WRITE: bw=.*io=(${mb}\.0MiB|$((mb * 1024))KiB)" "$stack: fio wrote every block"
	expect_match "$(cat fio.log)" "READ: bw=.*io=(${mb}\.0MiB|$((mb * 1024))KiB)" "$stack: fio read every block back (verify)"
	st="$(cat "$ctrl_b/state") $(cat "$ctrl_c/state")"
	expect_eq "$st" "live live" "$stack: states of the two paths at the end"
	timings "$stack" "$((t_off / 1000))" "$((t_back / 1000))"
	# Failover, not patience: I/O went on through c while b was away,
	# and no gap without a completed I/O outlasted the bound
	[ "$t_cio" -gt 0 ] || fail "$stack: no I/O completed on c while b was down"
	[ "$t_stall" -le "$stall_max" ] ||
		fail "$stack: I/O stalled $t_stall ms after b's power-off (bound $stall_max ms)"
	nvme_path_delete "$ctrl_b"
	nvme_path_delete "$ctrl_c"
	xiw_barrier "$stack-done" 120
}

# timings STACK T_OFF T_BACK (ms): from samples.log, after b's power-off:
# when b's path left live, the longest time no I/O completed on either
# path, I/O on c while b was down; after b exported again: when its path
# was live and carried I/O again
timings() {
	local r
	r=$(awk -v off="$2" -v back="$3" '
		$1 < off { last = $2 + $3; lt = $1; next }
		{
			tot = $2 + $3
			if (down == "" && $4 != "live") { down = $1 - off; cdown = $3 }
			if (tot != last) { if (lt != "" && $1 - lt > stall) stall = $1 - lt; last = tot; lt = $1 }
			if (down != "" && live == "" && $1 >= back && $4 == "live") { live = $1 - back; blive = $2; bstart = $1 }
			if (live != "" && bio == "" && $2 > blive) bio = $1 - bstart
			if (down != "" && live == "") cend = $3
		}
		END {
			printf "%d %d\n", stall + 0, cend - cdown
			printf "path down %s ms after the power-off; I/O stalled %s ms at most; %d I/Os on c while b was down; b live %s ms after it exported again, %s",
				down == "" ? "?" : down, stall + 0, cend - cdown, live == "" ? "?" : live,
				bio == "" ? "fio had ended by then" : "I/O on b " bio " ms later"
		}' samples.log)
	read -r t_stall t_cio <<<"$r"
	r=$(tail -n +2 <<<"$r")
	log "$1 failover: $r"
	echo "$1: $r" >>"$XIW_TEST_OUT/$XIW_TEST_NAME.timings"
}

# --- the cases ----------------------------------------------------------------

case $XIW_ROLE in
a)
	for i in "${!cases[@]}"; do
		mb=24
		[ "$i" = 0 ] || mb=8	# the second case (siw) is a shorter run
		host_case "${cases[i]}" $mb
	done
	log "every case passed: $(tr '\n' ';' <"$XIW_TEST_OUT/$XIW_TEST_NAME.timings")"
	;;
c)
	for s in "${cases[@]}"; do
		target_up "$s"
		xiw_barrier "$s-targets-up" 120
		xiw_sync "$s-poweroff" . 60 >/dev/null || fail "$s: no power-off sync"
		xiw_sync "$s-back" . 300 >/dev/null || fail "$s: b did not come back"
		xiw_barrier "$s-done" 400
		target_down "$s"
	done
	;;
b)
	# boot K > 1: back from the power cycle of case K-1, then case K
	boot=${XIW_BOOT:-1}
	for i in "${!cases[@]}"; do
		s=${cases[i]}
		[ $((i + 1)) -ge $((boot - 1)) ] || continue
		if [ $((i + 2)) = "$boot" ]; then
			if [ "$proof" = noexport ]; then
				log "PROOF: b is back but exports nothing"
			else
				target_up "$s"
			fi
			xiw_sync "$s-back" . 300 >/dev/null || fail "$s: no sync after the power cycle"
			xiw_barrier "$s-done" 400
			[ "$proof" = noexport ] || target_down "$s"
			continue
		fi
		target_up "$s"
		xiw_barrier "$s-targets-up" 120
		xiw_sync "$s-poweroff" . 60 >/dev/null || fail "$s: no power-off sync"
		xiw_vm_power_cycle $off_s
	done
	;;
esac
