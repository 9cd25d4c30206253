#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A qemu-system-x86_64 that loads xiw_tcgprof (XIW_QEMU for selftests/run.sh):
# the plugin watches the guest's test output directory, which vm.sh shares
# as mount_tag=out (the guest's XIW_TEST_OUT is its tests/ directory).
# XIW_TCGPROF_LIB: the plugin (default build/tools/tcgprof/libxiw_tcgprof.so).
# XIW_TCGPROF_BLOCKS: modules whose blocks are counted one by one, for
# tools/tcgprof/annotate.sh (default xiw; colon-separated; empty: none).
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
lib=${XIW_TCGPROF_LIB:-$here/../../build/tools/tcgprof/libxiw_tcgprof.so}
[ -f "$lib" ] || { echo "qemu-tcgprof.sh: no plugin at $lib (cmake --build build)" >&2; exit 2; }
out=
for a in "$@"; do
	case $a in
	local,path=*,mount_tag=out,*) out=${a#local,path=}; out=${out%%,mount_tag=out,*} ;;
	esac
done
[ -n "$out" ] || { echo "qemu-tcgprof.sh: no mount_tag=out share among the arguments" >&2; exit 2; }
blocks=${XIW_TCGPROF_BLOCKS-xiw}
exec qemu-system-x86_64 "$@" -plugin "$(realpath "$lib"),ctl=$out/tests${blocks:+,blocks=$blocks}"
