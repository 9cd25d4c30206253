#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 300
# description: data path: NVMe-oF (nvmet-rdma + nvme-rdma) over xiw: fast registration, Read with Invalidate, Send with Invalidate; write and read back random data
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

need_cmd ip cmp dd
xiw_load
dummy_add d0
ip addr add 192.0.2.1/24 dev d0
xiw_link_add xiw0 d0
wait_port_state xiw0 PORT_ACTIVE 5

MB=${XIW_NVME_MB:-64}
modprobe null_blk nr_devices=1 gb=1 memory_backed=1 || fail "no null_blk"
defer modprobe -r null_blk
modprobe nvmet-rdma || skip "no nvmet-rdma"
modprobe nvme-rdma || skip "no nvme-rdma"
defer modprobe -r nvme-rdma nvmet-rdma
mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
c=/sys/kernel/config/nvmet
nqn=xiw-dp-nvmeof
mkdir "$c/subsystems/$nqn"
defer rmdir "$c/subsystems/$nqn"
echo 1 >"$c/subsystems/$nqn/attr_allow_any_host"
mkdir "$c/subsystems/$nqn/namespaces/1"
defer rmdir "$c/subsystems/$nqn/namespaces/1"
echo -n /dev/nullb0 >"$c/subsystems/$nqn/namespaces/1/device_path"
echo 1 >"$c/subsystems/$nqn/namespaces/1/enable"
defer eval "echo 0 >$c/subsystems/$nqn/namespaces/1/enable"
mkdir "$c/ports/1"
defer rmdir "$c/ports/1"
echo rdma >"$c/ports/1/addr_trtype"
echo ipv4 >"$c/ports/1/addr_adrfam"
echo 192.0.2.1 >"$c/ports/1/addr_traddr"
echo 4420 >"$c/ports/1/addr_trsvcid"
ln -s "$c/subsystems/$nqn" "$c/ports/1/subsystems/$nqn"
defer rm "$c/ports/1/subsystems/$nqn"

echo "transport=rdma,traddr=192.0.2.1,trsvcid=4420,nqn=$nqn" >/dev/nvme-fabrics ||
	fail "nvme-rdma connect over xiw failed"
ctrl=
for d in /sys/class/nvme/nvme*; do
	[ "$(cat "$d/subsysnqn")" = "$nqn" ] && ctrl=$d
done
[ -n "$ctrl" ] || fail "no controller for $nqn"
defer eval "echo 1 >$ctrl/delete_controller"
wait_for 10 eval "ls /dev/${ctrl##*/}n1 >/dev/null 2>&1" ||
	fail "no namespace block device"
ns=/dev/${ctrl##*/}n1

head -c $((MB * 1048576)) /dev/urandom >data
run_timeout 150 dd if=data of="$ns" bs=1M oflag=direct status=none ||
	fail "write through NVMe-oF failed"
run_timeout 150 dd if="$ns" of=back bs=1M count="$MB" iflag=direct \
	status=none || fail "read through NVMe-oF failed"
cmp data back || fail "data read back differs"
log "$MB MiB written and read back"
