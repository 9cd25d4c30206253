#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make demo, the part that runs inside the test VM: create xiw0 on a dummy
# netdev and show what it is and that it works. The report goes to
# /xiw-out/demo.txt, which scripts/demo.sh prints on the host.
. "$(dirname "${BASH_SOURCE[0]}")/../selftests/lib.sh"

exec > >(tee /xiw-out/demo.txt) 2>&1
step() { printf '\n--- %s\n' "$*"; }
show() { printf '$ %s\n' "$*"; "$@"; }

xiw_load
dummy_add d0
ip addr add 192.0.2.1/24 dev d0
step "create an xiw device on the dummy netdev d0"
show rdma link add xiw0 type xiw netdev d0
show rdma link show
show ibv_devices
step "what the device reports (rdma-core ibv_devinfo through libxiw)"
show ibv_devinfo -v -d xiw0 | grep -E 'hca_id|transport|fw_ver|node_guid|vendor_id|max_qp:|max_qp_wr|max_sge:|max_cqe:|max_mr:|max_mr_size|max_srq:|atomic_cap|state:|active_mtu|link_layer|GID'
step "the port follows the netdev"
ip link set d0 down
printf 'd0 down: %s\n' "$(ibv_devinfo -d xiw0 | grep -m1 'state:' | xargs)"
ip link set d0 up
wait_for 5 sh -c "ibv_devinfo -d xiw0 | grep -q PORT_ACTIVE"
printf 'd0 up:   %s\n' "$(ibv_devinfo -d xiw0 | grep -m1 'state:' | xargs)"
step "verbs objects from user space: PD, MR, CQ, QP, SRQ (mmap'd rings)"
show xiw_objects --dev xiw0 --cycles 20
step "remove the device and unload the module"
show rdma link delete xiw0
show rmmod xiw
if dmesg | grep -E 'WARNING:|BUG:|Oops|KFENCE|refcount_t' ; then
	echo "kernel log: NOT clean"
	exit 1
fi
echo "kernel log: clean (no WARNING/BUG/Oops/KFENCE/refcount reports)"
