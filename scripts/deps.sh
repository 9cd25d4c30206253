#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Install everything xiw needs to build and test on Debian 12 (bookworm).
# Idempotent and quiet when nothing is missing. Must run as root (CI and
# the dev machines are root); uses sudo otherwise.
#
# Kernel: the newest linux-image/linux-headers 6.12 pair that the archive
# offers (bookworm-security / backports carry 6.12.*+deb12-amd64), and the
# newest 6.1 pair, Debian 12's default kernel (linux-image-6.1.0-N-amd64,
# what linux-image-amd64 depends on), for "make kernel61" and the 6.1 VM
# test. The host never boots either; the VM does.
set -euo pipefail

SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive

PKGS=(
	# build
	build-essential cmake pkg-config g++ gcc-12 bc kmod cpio xz-utils zstd
	libelf-dev sparse git python3 ethtool
	# make upstream-check: rdma-core 56.1's build (the tree's provider series)
	curl ninja-build libnl-3-dev libnl-route-3-dev cython3 python3-dev
	# tests
	libgtest-dev googletest
	# fuzzing (selftests/fuzz): clang-14 with libFuzzer, ASan and UBSan
	clang-14 libfuzzer-14-dev libclang-rt-14-dev llvm-14
	qemu-system-x86 busybox-static iproute2 procps util-linux tshark
	# rdma-core (provider ABI 34 = rdma-core 44), tools and ULP clients
	rdma-core ibverbs-utils rdmacm-utils libibverbs-dev librdmacm-dev
	perftest
	# applications, bench and ULP user space in the VM tests
	libfabric-bin iperf3 nfs-kernel-server nfs-common libfabric-dev
	# MPI across VMs (apps_mpi_*, tools/bench/mpi_bench.sh): Open MPI
	# over libfabric, and HPC Challenge as the MPI benchmark
	openmpi-bin libopenmpi-dev hpcc
	# iSER initiator (iscsid, iscsiadm); the LIO target is set up through
	# configfs, so targetcli-fb is not needed
	open-iscsi
	# make bench: TCP curves (qperf), NVMe-oF rows (fio), pictures
	# (gnuplot), per-op profiles (perf)
	qperf fio gnuplot-nox linux-perf
	# persistent memory in the VM (NVDIMM namespaces: pmem tests, commitlog)
	ndctl daxctl
	# DKMS and Debian packages (make dkms-install, make deb, pkg_* tests)
	dkms dpkg-dev debhelper dh-dkms fakeroot lintian man-db
)

missing_pkgs() {
	local p
	for p in "$@"; do
		dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null |
			grep -q '^install ok installed$' || echo "$p"
	done
}

# has_candidate PKG: PKG can be installed (a name that only other
# packages mention has no candidate, yet apt-cache show accepts it).
has_candidate() {
	apt-cache policy "$1" 2>/dev/null |
		awk '$1 == "Candidate:" { ok = ($2 != "(none)") } END { exit !ok }'
}

# image_pkg ABI: the installable image package for ABI: the signed one,
# else the unsigned build of the same kernel (the archive publishes the
# signed package some days after it; both install the same vmlinuz).
image_pkg() {
	local p
	for p in "linux-image-$1-amd64" "linux-image-$1-amd64-unsigned"; do
		has_candidate "$p" && { echo "$p"; return 0; }
	done
	return 1
}

newest_612() {
	# Newest 6.12 ABI for which both the image and the headers exist.
	apt-cache pkgnames linux-headers-6.12. 2>/dev/null |
		sed -n 's/^linux-headers-\(6\.12\.[0-9]*+deb12\)-amd64$/\1/p' |
		sort -V | while read -r v; do
			image_pkg "$v" >/dev/null &&
				has_candidate "linux-headers-$v-amd64" && echo "$v"
		done | tail -n 1
}

installed_612() {
	ls -d /usr/src/linux-headers-6.12.*+deb12-amd64 2>/dev/null |
		sed -n 's|.*/linux-headers-\(6\.12\.[0-9]*+deb12\)-amd64$|\1|p' |
		sort -V | while read -r v; do
			[ -e "/boot/vmlinuz-$v-amd64" ] && echo "$v"
		done | tail -n 1
}

# The same for Debian 12's 6.1 (ABI names 6.1.0-N-amd64).
newest_61() {
	apt-cache pkgnames linux-headers-6.1.0- 2>/dev/null |
		sed -n 's/^linux-headers-\(6\.1\.0-[0-9]*\)-amd64$/\1/p' |
		sort -V | while read -r v; do
			image_pkg "$v" >/dev/null &&
				has_candidate "linux-headers-$v-amd64" && echo "$v"
		done | tail -n 1
}

installed_61() {
	ls -d /usr/src/linux-headers-6.1.0-*-amd64 2>/dev/null |
		sed -n 's|.*/linux-headers-\(6\.1\.0-[0-9]*\)-amd64$|\1|p' |
		sort -V | while read -r v; do
			[ -e "/boot/vmlinuz-$v-amd64" ] && [ -d "/lib/modules/$v-amd64/kernel" ] &&
				echo "$v"
		done | tail -n 1
}

need_update=1
apt_update() {
	if [ $need_update = 1 ]; then
		# A mirror that does not answer must not stop us if the
		# packages are reachable elsewhere: the install says if not.
		$SUDO apt-get update -qq >/dev/null ||
			echo "deps: apt-get update reported errors" >&2
		need_update=0
	fi
}

kver=$(installed_612 || true)
kver61=$(installed_61 || true)
miss=$(missing_pkgs "${PKGS[@]}" linux-source-6.12)
if [ -z "$kver" ] || [ -z "$kver61" ] || [ -n "$miss" ]; then
	echo "deps: installing $(echo $miss)${kver:+}${kver:- linux-image/headers 6.12}${kver61:+}${kver61:- linux-image/headers 6.1}"
	apt_update
	if [ -z "$kver" ]; then
		kver=$(newest_612)
		[ -n "$kver" ] || { echo "deps: no linux 6.12 in the archive" >&2; exit 1; }
		miss="$miss $(image_pkg "$kver") linux-headers-$kver-amd64"
	fi
	if [ -z "$kver61" ]; then
		kver61=$(newest_61)
		[ -n "$kver61" ] || { echo "deps: no linux 6.1 in the archive" >&2; exit 1; }
		miss="$miss $(image_pkg "$kver61") linux-headers-$kver61-amd64"
	fi
	# INITRD=No: the VM boots our own busybox initramfs, skip Debian's.
	# shellcheck disable=SC2086
	$SUDO env INITRD=No apt-get install -y -qq --no-install-recommends \
		-o Dpkg::Options::=--force-confold -o Dpkg::Options::=--force-confdef $miss >/dev/null
fi

# /boot/vmlinuz is root-only readable on Debian; qemu runs as root here.
# From linux-source-6.12: checkpatch, siw's sources (build-siw.sh) and the
# kselftest runner (run_kselftest.sh, kselftest/runner.sh, prefix.pl) that
# selftests/Makefile's run_tests and install use. Not kselftest.h: the
# tests are scripts that exit with kselftest's codes, the C++ programs
# they drive are not kselftest programs.
src=/usr/src/linux-source-6.12
if [ ! -d "$src/scripts" ] || [ ! -f "$src/tools/testing/selftests/kselftest/runner.sh" ]; then
	echo "deps: unpacking linux-source-6.12 (checkpatch, kselftest runner, siw)"
	$SUDO mkdir -p "$src"
	$SUDO tar -C /usr/src -xf /usr/src/linux-source-6.12.tar.xz \
		linux-source-6.12/scripts linux-source-6.12/tools/testing/selftests/kselftest \
		linux-source-6.12/tools/testing/selftests/run_kselftest.sh \
		linux-source-6.12/drivers/infiniband/sw linux-source-6.12/include/uapi/rdma
fi
exit 0
