#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build siw.ko (the kernel's Soft-iWARP, off in Debian's kernel) from
# linux-source-6.12 into $XIW_BUILD/siw, as an interop peer for the cm_*
# VM tests. Nothing of siw is part of xiw.
#
#   selftests/build-siw.sh        prints the path of siw.ko
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
XIW_BUILD=${XIW_BUILD:-$here/../build}
KDIR=${KDIR:-$(ls -d /usr/src/linux-headers-6.12.*+deb12-amd64 | sort | tail -n 1)}
SRC=${SIW_SRC:-/usr/src/linux-source-6.12/drivers/infiniband/sw/siw}
out=$XIW_BUILD/siw
if [ -f "$out/siw.ko" ] && [ "$out/siw.ko" -nt "$SRC/siw_cm.c" ]; then
	echo "$out/siw.ko"
	exit 0
fi
[ -d "$SRC" ] || { echo "no siw sources at $SRC" >&2; exit 1; }
rm -rf "$out"
mkdir -p "$out"
cp "$SRC"/*.[ch] "$out/"
echo 'obj-m += siw.o' >"$out/Kbuild"
echo 'siw-y := siw_cm.o siw_cq.o siw_main.o siw_mem.o siw_qp.o siw_qp_rx.o siw_qp_tx.o siw_verbs.o' >>"$out/Kbuild"
make -s -C "$KDIR" M="$out" CONFIG_RDMA_SIW=m modules >"$out/build.log" 2>&1 ||
	{ tail -n 20 "$out/build.log" >&2; exit 1; }
echo "$out/siw.ko"
