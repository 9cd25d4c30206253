#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 600
# description: the rdma-core series at work: rdma-core 56.1 as make upstream-check built it with providers/xiw (run in place from its build tree: its libibverbs, its libxiw) finds the xiw device (ibv_devices, ibv_devinfo: iWARP), rping with data verification through its librdmacm, xiw_commitops (Flush, Atomic Write, Verify through ibv_qp_ex and xiwdv.h) with its libraries in place of the system's: all 38 checks; rdma-core's own tests/run_tests.py on xiw0: no failure, at least 32 passed, the series' three xiwdv tests (pyverbs) among them
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

# make upstream-check's build of the series (scripts/upstream-rdma.sh
# check: -DIN_PLACE=1, so its libibverbs loads providers from its lib/)
RC=${XIW_RDMA_CORE_BUILD:-$XIW_BUILD/upstream/rdma-core-build}
[ -x "$RC/bin/ibv_devinfo" ] && [ -e "$RC/lib/libxiw.so.1" ] ||
	fail "no rdma-core build with providers/xiw in $RC: run make upstream-check first"
C=$(need_prog xiw_commitops)
need_cmd ldd
xiw_loopback

# The tree's tools must take the tree's libibverbs and its provider, not
# the system's (Debian 12's rdma-core 44 has no libxiw).
ldd "$RC/bin/ibv_devinfo" | grep -q "$RC/lib/libibverbs.so.1" ||
	fail "ibv_devinfo of the tree does not link its libibverbs: $(ldd "$RC/bin/ibv_devinfo" | grep ibverbs)"
run_timeout 30 "$RC/bin/ibv_devices" >devs.log 2>&1 || { cat devs.log; fail "ibv_devices failed"; }
grep -qw xiw0 devs.log || { cat devs.log; fail "ibv_devices of the tree does not list xiw0"; }
run_timeout 30 "$RC/bin/ibv_devinfo" -d xiw0 >info.log 2>&1 ||
	{ cat info.log; fail "ibv_devinfo -d xiw0 failed"; }
grep -qE '^[[:space:]]*transport:[[:space:]]+iWARP' info.log ||
	{ cat info.log; fail "ibv_devinfo: transport is not iWARP"; }
log "ibv_devinfo (rdma-core 56.1 tree): $(grep -E 'transport|fw_ver' info.log | tr -s ' \t' ' ' | tr '\n' ';')"

# rping of the tree, 64 KiB verified 20 times
run_timeout 60 "$RC/bin/rping" -s -a 192.0.2.1 -p 7330 -C 20 -S 65000 >srv.log 2>&1 &
srv=$!
wait_listen 7330 20 $srv
run_timeout 60 "$RC/bin/rping" -c -a 192.0.2.1 -p 7330 -C 20 -S 65000 -V >cli.log 2>&1 ||
	rping_race cli.log || { cat cli.log srv.log; fail "rping of the tree (65000 bytes, -V) failed"; }
wait $srv || rping_race srv.log || { cat srv.log; fail "rping server of the tree failed"; }

# the extended verbs and xiwdv.h through the tree's libraries: the
# program was linked against the system's libibverbs and the repository's
# libxiw (XIWDV_1.0), both binary compatible with the tree's
LD_LIBRARY_PATH=$RC/lib run_timeout 150 "$C" 192.0.2.1 7474 >c.log 2>&1 || rc=$?
LD_LIBRARY_PATH=$RC/lib ldd "$C" | grep -E 'libibverbs|libxiw' | sed 's/^/# /'
LD_LIBRARY_PATH=$RC/lib ldd "$C" | grep -q "$RC/lib/libxiw.so.1" ||
	fail "xiw_commitops did not take the tree's libxiw"
[ "${rc:-0}" = 0 ] || { cat c.log; fail "xiw_commitops with the tree's libraries (exit $rc)"; }
expect_eq "$(grep -c '^ok ' c.log)" 38 "xiw_commitops checks passed with the tree's libraries"

# rdma-core's own tests (tests/run_tests.py, pyverbs) on xiw0: no
# failure and no error. Most skip, rightly for an iWARP device: their
# traffic needs an InfiniBand or RoCE port (QPs connected by modify_qp
# with GIDs; iWARP connects only through the CM), or UD/UC/raw QPs,
# address handles, device memory, mlx5, EFA, CUDA or dmabuf.
[ -x "$RC/bin/run_tests.py" ] || fail "no pyverbs in $RC (make deps installs cython3)"
PATH=/usr/bin:$PATH run_timeout 600 sh "$RC/bin/run_tests.py" --dev xiw0 -v >rt.log 2>&1 || rc=$?
tail -n 4 rt.log | sed 's/^/# /'
[ "${rc:-0}" = 0 ] || sed -n '/^======/,$p' rt.log | head -n 80
[ "${rc:-0}" = 0 ] || fail "run_tests.py exited $rc: $(grep -m3 -E '^(FAIL|ERROR):' rt.log | tr '\n' ' ')"
grep -qE '^OK( |$)' rt.log || fail "run_tests.py did not end OK"
ran=$(sed -nE 's/^Ran ([0-9]+) tests.*/\1/p' rt.log)
passed=$(grep -cE '\.\.\. ok$' rt.log)
[ "$passed" -ge 32 ] || fail "run_tests.py: $passed of $ran tests passed (32 did with the series' first run)"
# the series' pyverbs bindings of xiwdv.h (tests/test_xiwdv.py)
for t in test_xiwdv_reg_mr_digests test_xiwdv_reg_mr_bad_digest test_xiw_context_checks; do
	# unittest -v: "NAME (CLASS)" and, with a docstring, its first
	# line on the next line, then " ... ok"
	awk -v t="$t" '$1 == t { f = 1 } f && / \.\.\. / { ok = / \.\.\. ok$/; exit } END { exit !ok }' rt.log ||
		fail "run_tests.py: $t: $(grep -m1 -A1 "^$t " rt.log | tr '\n' ' ' || echo 'did not run')"
done
log "rdma-core 56.1 with providers/xiw: devices, rping -V, 38 commit checks, run_tests.py $passed passed of $ran, $(sed -nE 's/^OK \(skipped=([0-9]+)\)/\1/p' rt.log) skipped"
