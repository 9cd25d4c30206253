#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# pmem: 512M
# timeout: 240
# description: RDMA Verify as a scrub of persistent memory: a Verify over a device-dax MR succeeds with the digest computed in user space; the kernel then marks one page of the namespace poisoned (hwpoison_inject, memory_failure()); a Verify of a clean page still succeeds, one across the poisoned page completes IBV_WC_REM_OP_ERR with the Terminate RDMAP / Remote Operation / 0x07 (vendor_err 0x207), the target's kernel unharmed; the responder counted the poisoned read
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

C=$(need_prog xiw_commitops)
xiw_loopback
dax=$(pmem_devdax 256M)
res=/sys/bus/dax/devices/${dax##*/}/resource
[ -r "$res" ] || fail "no $res: cannot find the namespace's physical address"
modprobe hwpoison_inject 2>mod.log || fail "modprobe hwpoison_inject: $(cat mod.log)"
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
inject=/sys/kernel/debug/hwpoison/corrupt-pfn
[ -w $inject ] || fail "no $inject"
p0=$(xiw_commit_stat verify_poisoned)

run_timeout 180 "$C" 192.0.2.1 7475 --poison-dax "$dax" go >c.log 2>&1 &
pid=$!
defer eval "kill $pid 2>/dev/null || true"
wait_for 120 grep -q -e '^POISON ' -e '^FAIL' c.log ||
	fail "xiw_commitops never reached the poisoning: $(tail -n 3 c.log)"
off=$(sed -n 's/^POISON offset=//p' c.log)
[ -n "$off" ] || fail "xiw_commitops: $(grep -m1 FAIL c.log)"
start=$(cat "$res")
pfn=$(( (start + off) / 4096 ))
log "poisoning pfn $(printf %#x $pfn) (namespace at $start, offset $off)"
echo $pfn >$inject 2>inj.log || fail "corrupt-pfn $pfn: $(cat inj.log)"
touch go
wait "$pid" || rc=$?
sed 's/^/# /' c.log
[ "${rc:-0}" = 0 ] || fail "xiw_commitops --poison-dax (exit ${rc:-0}): $(grep -m1 FAIL c.log || tail -n 1 c.log)"
expect_eq "$(grep -c '^ok ' c.log)" 5 "checks passed (every one ran)"
expect_eq $(( $(xiw_commit_stat verify_poisoned) - p0 )) 1 "poisoned reads counted"
