#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 120
# description: kernel API of the commit extensions: a kernel ULP (selftests/kmod/xiw_ktest.ko) connects xiw1 to xiw0 with rdma_cm and runs RDMA Write then Flush, Atomic Write, Flush of a whole MR, Verify with crc32c and sha256 (digest returned and compared, matching hash, wrong hash ending in a Terminate), a commit log (Write, Flush, Atomic Write of the tail), Flush without the flush right; no reference left behind
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

need_cmd ip insmod rmmod modinfo modprobe dmesg
KT=${XIW_KTEST_KO:-$XIW_ROOT/selftests/kmod/xiw_ktest.ko}
[ "$XIW_MOD" = xiw ] || skip "the kernel API is xiw's own"
[ -f "$KT" ] || fail "test module not built: $KT (make ktest)"
xiw_load
dummy_add d0
dummy_add d1
ip addr add 192.0.2.1/24 dev d0
ip addr add 192.0.2.2/24 dev d1
xiw_link_add xiw0 d0
xiw_link_add xiw1 d1
# sysfs, not ibv_devinfo: this test needs no user-space provider
for d in xiw0 xiw1; do
	wait_for 5 grep -q ACTIVE /sys/class/infiniband/$d/ports/1/state ||
		fail "$d port state: $(cat /sys/class/infiniband/$d/ports/1/state)"
done
# What the test module links to besides xiw (loaded above): rdma_cm,
# libcrc32c, ...
for m in $(modinfo -F depends "$KT" | tr , ' '); do
	[ "$m" = "$XIW_MOD" ] || modprobe "$m" || fail "modprobe $m failed"
done

ref0=$(xiw_refcnt)
mark="dp_kapi-$RANDOM-$RANDOM"
echo "$mark" >/dev/kmsg
# Init runs every check and fails (EIO) if one failed; it tears down
# everything it set up before it returns.
rc=0
run_timeout 100 insmod "$KT" server_addr=192.0.2.1 client_addr=192.0.2.2 \
	port=7490 timeout_ms=10000 || rc=$?
defer eval '[ ! -d /sys/module/xiw_ktest ] || rmmod xiw_ktest'
out=$(dmesg | sed -n "/$mark/,\$p" | grep 'xiw_ktest: ' || true)
while IFS= read -r l; do log "$l"; done <<<"$out"
expect_nomatch "$out" 'xiw_ktest: FAIL ' "xiw_ktest's log"
[ $rc = 0 ] || fail "insmod xiw_ktest exited $rc: $(grep -m1 -E 'FAIL|passed' <<<"$out")"
checks=(listen connect register write_flush atomic_write flush_mr
	verify_crc32c_digest verify_crc32c_match verify_sha256_digest
	verify_sha256_match bad_operands verify_mismatch flushed_after_terminate
	commit_chain disconnect flush_no_right)
for t in "${checks[@]}"; do
	expect_match "$out" "xiw_ktest: PASS $t\$" "xiw_ktest's log"
done
expect_match "$out" "xiw_ktest: ${#checks[@]} passed, 0 failed\$" "xiw_ktest's summary"

rmmod xiw_ktest
# The test module held xiw while loaded, and nothing else: no cm_id, QP
# or MR outlives it (rdma link delete at exit would hang on one).
expect_eq "$(xiw_refcnt)" "$ref0" "xiw's reference count after rmmod xiw_ktest"
[ -z "$(rdma res show cm_id 2>/dev/null)" ] || fail "cm_ids left: $(rdma res show cm_id)"
if rdma res show qp 2>/dev/null | grep -qE 'xiw[01]'; then
	fail "QPs left: $(rdma res show qp)"
fi
log "${#checks[@]} checks passed"
