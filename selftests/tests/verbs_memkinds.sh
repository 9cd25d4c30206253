#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 300
# description: the memory users register, not only anonymous 4 KiB pages (xiw_memkinds, both ends in one process on xiw0): RDMA Write then Read back, the owner's view checked (pread() of a file), the owner's own writes (pwrite()) Read back, on hugetlbfs pages (MAP_HUGETLB, across the 2 MiB boundary), transparent huge pages (AnonHugePages shown non-zero), MAP_SHARED files on tmpfs and on ext4 (a loop device; registered for writing ext4 is refused with EFAULT, as the kernel refuses long-term writable pins of files with dirty tracking, and registered for remote reads it serves the file's bytes), unaligned pieces across page boundaries with as many SGEs as the QP takes (Write gathered, Read scattered), and a region of more than 4 GiB (4084 mappings of one 1028 KiB file) at offsets beyond 4 GiB and across a seam, where an offset cut to 32 bits would land 16 pages away
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

M=$(need_prog xiw_memkinds)
need_cmd mkfs.ext4 losetup
xiw_loopback 10.77.6.1
xiw_dyndbg
port=7540
# XIW_MEMKINDS="big sges": run only those (debugging)
kinds=" ${XIW_MEMKINDS:-hugetlb thp file sges big} "
want() { [[ "$kinds" == *" $1 "* ]]; }

# kind NAME [PATH]: xiw_memkinds NAME must pass; its output in NAME.log
kind() {
	local name=$1
	shift
	run_timeout 200 "$M" 10.77.6.1 $port "$name" "$@" >"$name.log" 2>&1 ||
		fail "$name: $(grep -m1 -E 'FAIL|:' "$name.log" || tail -n 2 "$name.log")"
	expect_match "$(cat "$name.log")" "^PASS $name\$" "$name"
	port=$((port + 1))
}

if want hugetlb; then
# hugetlbfs: two 2 MiB pages, taken back at the end
defer sysctl -qw vm.nr_hugepages="$(sysctl -n vm.nr_hugepages)"
sysctl -qw vm.nr_hugepages=4
[ "$(sysctl -n vm.nr_hugepages)" -ge 2 ] || fail "no huge pages: vm.nr_hugepages $(sysctl -n vm.nr_hugepages)"
kind hugetlb
log "hugetlb: 4 MiB of MAP_HUGETLB pages written and read at 2 MiB - 3000, 0 and the end"
fi

if want thp; then
# transparent huge pages: the range must really be backed by them
kind thp
thp=$(sed -n 's/^THP kB=//p' thp.log)
[ "${thp:-0}" -ge 2048 ] || fail "thp: AnonHugePages of the range $thp kB: not backed by huge pages"
log "thp: AnonHugePages $thp kB"
fi

mkdir -p shm
mount -t tmpfs -o size=64m tmpfs shm
defer umount shm
if want file; then
# MAP_SHARED files: tmpfs, then ext4 on a loop device
kind file shm/target
modprobe loop 2>/dev/null || true
modprobe ext4 2>/dev/null || true
truncate -s 64M ext4.img
mkfs.ext4 -q -F ext4.img || fail "mkfs.ext4"
dev=$(losetup -f --show ext4.img) || fail "losetup"
defer losetup -d "$dev"
mkdir -p e4
mount -t ext4 "$dev" e4 || fail "mount ext4"
defer umount e4
# Since Linux 6.5 GUP refuses a long-term pin for writing of a file
# mapping whose file system tracks dirty pages (ext4): ibv_reg_mr fails
# with EFAULT for every RDMA device but those with on-demand paging, and
# registering for remote reads only works.
rc=0
run_timeout 100 "$M" 10.77.6.1 $port file e4/target >file-ext4.log 2>&1 || rc=$?
port=$((port + 1))
expect_eq "$rc" 3 "file on ext4, writable: xiw_memkinds' exit status ($(tail -n 1 file-ext4.log))"
expect_match "$(cat file-ext4.log)" '^REGFAIL errno=14 ' "file on ext4, writable: ibv_reg_mr's errno"
kind file-ro e4/target
log "file: MAP_SHARED on tmpfs: RDMA bytes seen by pread(), pwrite() bytes seen by RDMA Read; on ext4: writable registration refused (EFAULT), read-only registration Read back"
fi


if want sges; then
kind sges
log "sges: SGEs per Write, per Read: $(sed -n "s/^SGES //p" sges.log); odd lengths and offsets across pages"
fi

want big || exit 0
# more than 4 GiB of registered virtual memory, 1028 KiB of it real
defer sysctl -qw vm.max_map_count="$(sysctl -n vm.max_map_count)"
sysctl -qw vm.max_map_count=100000
kind big shm/big
log "big: $(sed -n 's/^BIG //p' big.log), Write and Read beyond 4 GiB and across a seam"
