#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 120
# description: kernel API of the commit extensions: a kernel ULP (selftests/kmod/xiw_ktest.ko) connects with rdma_cm (xiw1 to xiw0 over IPv4, then xiw0 to itself over IPv6) and runs RDMA Write then Flush, Atomic Write, Flush of a whole MR, Verify with crc32c and sha256 (digest returned and compared, matching hash, wrong hash ending in a Terminate), a commit log (Write, Flush, Atomic Write of the tail), Flush without the flush right, WRs posted with bottom halves off (short ones sent from the post itself: at least 4 FPDUs with kernel_tx_inline=1, at least the lone first one with 0, where posts that pile up go to the next CPU); every SQ step of the kernel QPs' TX ran with NOIO semantics (a kprobe on xiw_tx_sq_next); no reference left behind
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

need_cmd ip insmod rmmod modinfo modprobe dmesg
ktest_two_devices

checks=(listen connect register write_flush atomic_write flush_mr
	verify_crc32c_digest verify_crc32c_match verify_sha256_digest
	verify_sha256_match bad_operands verify_mismatch flushed_after_terminate
	commit_chain disconnect flush_no_right atomic_post tx_noio)
# disconnect passes twice: commit_chain's and atomic_post's connections

# ktest_run WHAT CONNECTED-ERE PARAM...: insmod the test module with
# PARAMs; every check must pass, its connections must be CONNECTED-ERE
# (devices and addresses as it logs them), and rmmod must leave xiw as
# it was. Init runs every check and fails (EIO) if one failed, after
# tearing down everything it set up.
ktest_run() {
	local what=$1 conn=$2 ref0 mark rc=0 out t
	shift 2
	ref0=$(xiw_refcnt)
	mark="kapi_loopback-$what-$RANDOM-$RANDOM"
	echo "$mark" >/dev/kmsg
	run_timeout 100 insmod "$KT" "$@" || rc=$?
	out=$(dmesg | sed -n "/$mark/,\$p" | grep 'xiw_ktest: ' || true)
	log "$what: insmod xiw_ktest $*"
	while IFS= read -r l; do log "$l"; done <<<"$out"
	expect_nomatch "$out" 'xiw_ktest: FAIL ' "$what: xiw_ktest's log"
	[ $rc = 0 ] || fail "$what: insmod xiw_ktest exited $rc: $(grep -m1 -E 'FAIL|passed' <<<"$out")"
	for t in "${checks[@]}"; do
		expect_match "$out" "xiw_ktest: PASS $t\$" "$what: xiw_ktest's log"
	done
	expect_match "$out" "xiw_ktest: $((${#checks[@]} + 1)) passed, 0 failed\$" "$what: xiw_ktest's summary"
	expect_match "$out" "xiw_ktest: connected $conn\$" "$what: xiw_ktest's connections"
	rmmod xiw_ktest
	# The test module held xiw while loaded, and nothing else: no cm_id,
	# QP or MR outlives it (rdma link delete at exit would hang on one).
	expect_eq "$(xiw_refcnt)" "$ref0" "$what: xiw's reference count after rmmod xiw_ktest"
	[ -z "$(rdma res show cm_id 2>/dev/null)" ] || fail "$what: cm_ids left: $(rdma res show cm_id)"
	if rdma res show qp 2>/dev/null | grep -qE 'xiw[01]'; then
		fail "$what: QPs left: $(rdma res show qp)"
	fi
	if rdma res show mr 2>/dev/null | grep -qE 'xiw[01]'; then
		fail "$what: MRs left: $(rdma res show mr)"
	fi
}

# FPDUs that xiw sent from a kernel post that may not sleep (atomic_post
# posts with bottom halves off), on device $1
post_fpdus() { xiw_counter tx_fpdus_from_post "$1"; }
kti=/sys/module/$XIW_MOD/parameters/kernel_tx_inline
[ -w "$kti" ] || fail "no writable $kti"
defer eval "echo $(cat "$kti") >$kti"

# Two devices over IPv4: the client end on xiw1, the server end on xiw0.
# Kernel posts go to the TX work of the next CPU (kernel_tx_inline=0)
# once they pile up; a lone post is sent at once, from a section that
# may not sleep too: at least atomic_post's first Write, the first post
# of its connection (its long Write then has the work queued, the posts
# behind it pile up, and round 2 goes to the next CPU).
echo 0 >"$kti"
p0=$(post_fpdus xiw1)
ktest_run ipv4 'xiw1 192\.0\.2\.2:[1-9][0-9]* -> xiw0 192\.0\.2\.1:7490' \
	server_addr=192.0.2.1 client_addr=192.0.2.2 port=7490
grown=$(( $(post_fpdus xiw1) - p0 ))
log "ipv4, kernel_tx_inline=0, $(nproc) CPUs: $grown FPDUs sent from posts"
[ "$grown" -ge 1 ] ||
	fail "ipv4: no FPDU sent from a post that may not sleep: atomic_post's lone first Write went to the TX work"
# One device, both ends on xiw0, over IPv6, kernel posts inline: a post
# that may not sleep sends its short WRs itself, under the socket's
# spinlock (atomic_post: a short Write in round 1, then a Write, an
# Atomic Write and a Flush in round 2; the rest went to the TX work).
ip -6 addr add fd00:77:5::1/64 dev d0 nodad
ip -6 addr add fd00:77:5::2/64 dev d0 nodad
echo 1 >"$kti"
p0=$(post_fpdus xiw0)
ktest_run ipv6 'xiw0 \[fd00:77:5::2\]:[1-9][0-9]* -> xiw0 \[fd00:77:5::1\]:7491' \
	server_addr=fd00:77:5::1 client_addr=fd00:77:5::2 port=7491
grown=$(( $(post_fpdus xiw0) - p0 ))
log "ipv6, kernel_tx_inline=1: $grown FPDUs sent from posts"
[ "$grown" -ge 4 ] ||
	fail "ipv6: $grown FPDUs sent from posts that may not sleep, expected at least atomic_post's 4"
log "${#checks[@]} checks passed twice"
