#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 2vm
# timeout: 150
# description: kernel API of the commit extensions between two VMs, kernel QPs on both ends: xiw_ktest.ko as server (three fast-registered regions, their STags sent to the client) and as client running kapi_loopback's checks (target read back with RDMA Read: Write then Flush, Atomic Write, Flush of an MR, Verify crc32c/sha256 and mismatch, commit log, Flush without the right, WRs posted with bottom halves off, at least 4 FPDUs of them sent from the post itself on a one-CPU VM), each VM in each role; both unload clean
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

need_cmd insmod rmmod modinfo modprobe dmesg
KT=${XIW_KTEST_KO:-$XIW_SELFTESTS/kmod/xiw_ktest.ko}
[ "$XIW_MOD" = xiw ] || skip "the kernel API is xiw's own"
[ -f "$KT" ] || fail "test module not built: $KT (make ktest)"
xiw_load
xiw_link_add xiw0 "$XIW_NETDEV"
# sysfs, not ibv_devinfo: this test needs no user-space provider
wait_for 5 grep -q ACTIVE /sys/class/infiniband/xiw0/ports/1/state ||
	fail "xiw0 port state: $(cat /sys/class/infiniband/xiw0/ports/1/state)"
for m in $(modinfo -F depends "$KT" | tr , ' '); do
	[ "$m" = "$XIW_MOD" ] || modprobe "$m" || fail "modprobe $m failed"
done
defer eval '[ ! -d /sys/module/xiw_ktest ] || rmmod xiw_ktest'

# the client's checks: kapi_loopback's, less the listener
checks=(connect register write_flush atomic_write flush_mr
	verify_crc32c_digest verify_crc32c_match verify_sha256_digest
	verify_sha256_match bad_operands verify_mismatch flushed_after_terminate
	commit_chain disconnect flush_no_right atomic_post tx_noio)
# disconnect passes twice: commit_chain's and atomic_post's connections

# FPDUs xiw0 sent from kernel posts that may not sleep (atomic_post's)
post_fpdus() { xiw_counter tx_fpdus_from_post; }

# kmsg_since MARK: xiw_ktest's lines in the kernel log since MARK
kmsg_since() { dmesg | sed -n "/$1/,\$p" | grep 'xiw_ktest: ' || true; }

# round NAME SERVER_ROLE PORT: xiw_ktest as server on SERVER_ROLE and as
# client on the other VM. Both VMs call it with the same arguments.
round() {
	local name=$1 srole=$2 port=$3 ref0 mark rc=0 out t word p0 grown
	ref0=$(xiw_refcnt)
	mark="kapi_2vm-$name-$RANDOM-$RANDOM"
	echo "$mark" >/dev/kmsg
	if [ "$XIW_ROLE" = "$srole" ]; then
		insmod "$KT" role=server server_addr="$XIW_LOCAL_IP" port="$port" ||
			fail "$name: insmod xiw_ktest role=server failed: $(kmsg_since "$mark")"
		xiw_barrier "$name-listening" 30
		# the client's outcome, when it is done
		word=$(xiw_sync "$name-done" . 120) || fail "$name: the client did not finish"
		rmmod xiw_ktest
		out=$(kmsg_since "$mark")
		while IFS= read -r l; do log "$l"; done <<<"$out"
		expect_nomatch "$out" 'xiw_ktest: FAIL ' "$name: the server's log"
		expect_match "$out" 'xiw_ktest: server: 4 connections, 0 failed$' \
			"$name: the server's summary"
		log "$name: the client says $word"
	else
		xiw_barrier "$name-listening" 30
		p0=$(post_fpdus)
		run_timeout 100 insmod "$KT" role=client server_addr="$XIW_PEER_IP" \
			client_addr="$XIW_LOCAL_IP" port="$port" || rc=$?
		out=$(kmsg_since "$mark")
		word=$(sed -nE 's/.*xiw_ktest: ([0-9]+) passed, ([0-9]+) failed$/\1-passed-\2-failed/p' <<<"$out")
		xiw_sync "$name-done" "${word:-none}" 30 >/dev/null ||
			fail "$name: the server did not wait for the client"
		while IFS= read -r l; do log "$l"; done <<<"$out"
		expect_nomatch "$out" 'xiw_ktest: FAIL ' "$name: xiw_ktest's log"
		[ $rc = 0 ] || fail "$name: insmod xiw_ktest role=client exited $rc"
		for t in "${checks[@]}"; do
			expect_match "$out" "xiw_ktest: PASS $t\$" "$name: xiw_ktest's log"
		done
		expect_match "$out" "xiw_ktest: $((${#checks[@]} + 1)) passed, 0 failed\$" \
			"$name: xiw_ktest's summary"
		expect_match "$out" "xiw_ktest: connected xiw0 ${XIW_LOCAL_IP//./\\.}:[1-9][0-9]* -> peer ${XIW_PEER_IP//./\\.}:$port\$" \
			"$name: xiw_ktest's connections"
		rmmod xiw_ktest
		# One CPU: no other to hand kernel posts to, so a post that
		# may not sleep sends its short WRs itself (kernel_tx_inline=0)
		grown=$(( $(post_fpdus) - p0 ))
		log "$name: $grown FPDUs sent from posts, $(nproc) CPUs"
		[ "$(nproc)" != 1 ] || [ "$grown" -ge 4 ] ||
			fail "$name: $grown FPDUs sent from posts that may not sleep, expected at least atomic_post's 4"
	fi
	expect_eq "$(xiw_refcnt)" "$ref0" "$name: xiw's reference count after rmmod xiw_ktest"
	[ -z "$(rdma res show cm_id 2>/dev/null)" ] || fail "$name: cm_ids left: $(rdma res show cm_id)"
	if rdma res show qp 2>/dev/null | grep -q xiw0; then
		fail "$name: QPs left: $(rdma res show qp)"
	fi
}

round b-serves b 7492
round a-serves a 7493
log "${#checks[@]} client checks passed in each direction"
