#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 360
# description: unprivileged use: the device nodes are 0666 as the kernel creates them (uverbs, rdma_cm); a user without capabilities (uid 65534) under RLIMIT_MEMLOCK of 8 MiB (prlimit) connects two QPs (VmPin 0: rings are not pinned user memory), registers MRs up to the limit (VmPin counts them to the page), one page more fails with ENOMEM, a CQ of 16384 and a QP of 4096 WRs are still created at the limit, a Write between the MRs carries its data, deregistration gives the pages back (the next registration fits, half the limit does not until a page is freed); the same program on rdma_rxe
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

U=$(need_prog xiw_usage)
need_cmd setpriv prlimit stat
xiw_loopback

limit=$((8 << 20))

# The device nodes: devtmpfs creates them with the mode the kernel's
# devnode callbacks give (0666); Debian's udev rules (60-infiniband.rules)
# only add symlinks.
uv=
for d in /sys/class/infiniband_verbs/uverbs*; do
	[ "$(cat "$d/ibdev")" = xiw0 ] && uv=/dev/infiniband/${d##*/}
done
[ -n "$uv" ] || fail "no uverbs node for xiw0"
expect_eq "$(stat -c %a "$uv")" 666 "mode of $uv"
expect_eq "$(stat -c %a /dev/infiniband/rdma_cm)" 666 "mode of /dev/infiniband/rdma_cm"

# memlock TAG ADDR PORT: xiw_usage memlock as uid/gid 65534, no
# capabilities, RLIMIT_MEMLOCK = $limit
memlock() {
	local tag=$1 rc=0
	run_timeout 150 prlimit --memlock=$limit:$limit \
		setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all -- \
		"$U" memlock "$2" "$3" $limit >"u-$tag.log" 2>&1 || rc=$?
	sed 's/^/# /' "u-$tag.log"
	[ "$rc" = 0 ] || fail "$tag: $(grep -m1 -E '^FAIL|^[a-z_]+: ' "u-$tag.log" || echo "exit $rc")"
	expect_eq "$(grep -c '^ok ' "u-$tag.log")" 15 "$tag: checks passed (every one ran)"
}

memlock xiw 192.0.2.1 7630
log "xiw: MRs pinned against RLIMIT_MEMLOCK (ENOMEM past it), rings not"

rxe_loopback 10.77.6.1
memlock rxe 10.77.6.1 7631
log "rxe: the same"
