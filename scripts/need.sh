#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# What "make demo", "make check" and "make bench" need, said plainly when
# something is missing (instead of a failure deep inside apt, qemu or the VM).
#
#   scripts/need.sh host    before scripts/deps.sh: can deps.sh install at all?
#   scripts/need.sh vm      after it: can the test VM boot here?
#
# Exit 0 when all is there; otherwise one "xiw: ..." line per problem with
# what to do, and exit 1.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
what=${1:-vm}
bad=0
need() { echo "xiw: $*" >&2; bad=1; }

case $what in
host)
	[ "$(uname -m)" = x86_64 ] ||
		need "the test bench boots an x86-64 Debian kernel under qemu; this is $(uname -m)"
	if ! command -v apt-get >/dev/null || ! command -v dpkg-query >/dev/null; then
		need "scripts/deps.sh installs the tools with apt-get on Debian 12 (bookworm);" \
			"this system has no apt-get/dpkg. Install by hand what scripts/deps.sh lists"
	elif [ -r /etc/os-release ] && ! grep -qE '^(ID|ID_LIKE)=.*debian' /etc/os-release; then
		need "scripts/deps.sh expects Debian 12 (bookworm); /etc/os-release says" \
			"'$(. /etc/os-release; echo "${PRETTY_NAME:-?}")'"
	fi
	if [ "$(id -u)" != 0 ] && ! command -v sudo >/dev/null; then
		need "not root and no sudo: run 'make deps' as root once (it installs packages," \
			"and the VM reads /boot/vmlinuz-*, which Debian makes readable by root only)"
	fi
	;;
vm)
	k=$(ls -1 /boot/vmlinuz-6.12.* 2>/dev/null | sort -V | tail -n 1)
	if [ -n "${KERNEL:-}" ]; then k=$KERNEL; fi
	if [ -z "$k" ]; then
		need "no /boot/vmlinuz-6.12.*: 'make deps' installs linux-image-6.12.*+deb12-amd64" \
			"from bookworm-security/backports (or set KERNEL=/path/to/vmlinuz)"
	elif [ ! -r "$k" ]; then
		need "$k is not readable by $(id -un): the VM boots it; run as root" \
			"(or chmod a+r $k)"
	else
		kv=${k##*/vmlinuz-}
		[ -d "/lib/modules/$kv" ] ||
			need "no /lib/modules/$kv for $k: install linux-image-$kv"
	fi
	command -v "${XIW_QEMU:-qemu-system-x86_64}" >/dev/null ||
		need "no qemu-system-x86_64: apt-get install qemu-system-x86 (make deps does)"
	# the pmem tests build NVDIMM namespaces in the guest with the host's tools
	for t in ndctl daxctl; do
		command -v $t >/dev/null ||
			need "no $t (persistent memory tests): apt-get install ndctl daxctl (make deps does)"
	done
	bb=$(command -v busybox || echo /bin/busybox)
	if [ ! -x "$bb" ] || ldd "$bb" >/dev/null 2>&1; then
		need "no static busybox (the VM's initramfs): apt-get install busybox-static (make deps does)"
	fi
	mem=$(awk '/^MemAvailable:/ { print int($2 / 1024) }' /proc/meminfo)
	want=$(( ${XIW_VM_MEM:-2048} + 256 ))
	[ "${mem:-0}" -ge "$want" ] ||
		need "only ${mem} MiB of memory available; one test VM takes ${XIW_VM_MEM:-2048} MiB" \
			"(two for the 2vm tests): free memory or set XIW_VM_MEM=1024"
	b=${BUILD:-$PWD/build}
	mkdir -p "$b" 2>/dev/null || need "cannot create the build tree $b"
	free=$(df -Pm "$b" 2>/dev/null | awk 'NR == 2 { print $4 }')
	[ "${free:-0}" -ge 500 ] ||
		need "only ${free:-?} MiB free under $b; the build and the VM logs need about 500 MiB"
	case $PWD$b in *[[:space:],]*)
		need "the checkout or build path '$PWD' / '$b' has a blank or a comma; the VM" \
			"passes paths on the kernel command line: clone it elsewhere" ;;
	esac
	;;
*)
	echo "usage: scripts/need.sh host|vm" >&2; exit 2 ;;
esac
[ $bad = 0 ]
