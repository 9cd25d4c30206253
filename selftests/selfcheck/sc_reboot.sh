#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# pmem: 64M
# boots: 2
# timeout: 60
# expect: ok
# description: two boots on one NVDIMM file: a token stored through /dev/dax0.0 in boot 1 is read back in boot 2 after a power cut (sysrq b); RAM (tmpfs) does not survive, $XIW_TEST_STATE does
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

dax=$(pmem_devdax 32M)
# dax [TOKEN]: store TOKEN at offset 1 MiB of the namespace, or print what is there
dax() {
	python3 - "$dax" "$@" <<'PY'
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
m = mmap.mmap(fd, 2 << 20, mmap.MAP_SHARED)
if len(sys.argv) > 2:
    m[1 << 20:(1 << 20) + 32] = sys.argv[2].encode().ljust(32, b"\0")
else:
    print(m[1 << 20:(1 << 20) + 32].rstrip(b"\0").decode(errors="replace"))
PY
}
case $XIW_BOOT in
1)
	expect_eq "$(dax)" "" "namespace content on a new NVDIMM file"
	tok=boot1-$RANDOM-$RANDOM
	dax "$tok"
	echo "$tok" >"$XIW_TEST_STATE/token"
	echo "$tok" >/run/sc_reboot.ram
	xiw_power_off ;;
2)
	[ ! -e /run/sc_reboot.ram ] || fail "RAM of boot 1 is still there: no reboot happened"
	tok=$(cat "$XIW_TEST_STATE/token")
	expect_eq "$(dax)" "$tok" "token read back through /dev/dax0.0" ;;
*)	fail "XIW_BOOT=${XIW_BOOT:-unset}" ;;
esac
