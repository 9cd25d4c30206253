#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 120
# description: deleting the netdev under xiw0 removes xiw0
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

need_cmd rdma ip
xiw_load
modprobe dummy numdummies=0 2>/dev/null || true
refcnt0=$(xiw_refcnt)

for round in 1 2 3; do
	ip link add d0 type dummy
	defer netdev_del d0
	ip link set d0 up
	rdma link add xiw0 type "$XIW_LINK_TYPE" netdev d0
	defer rdma_link_del xiw0
	ib_dev_exists xiw0 || fail "round $round: xiw0 not registered"
	[ $round = 2 ] && ip link set d0 down	# also when the netdev is down
	ip link del d0
	wait_gone 5 ib_dev_exists xiw0 ||
		fail "round $round: xiw0 still in /sys/class/infiniband 5 s after its netdev went"
	wait_gone 5 rdma_link_has xiw0 ||
		fail "round $round: rdma link still lists xiw0: $(rdma link show)"
	no_stray_devices xiw
done

# The name and the module are still usable.
dummy_add d1
xiw_link_add xiw0 d1
rdma link delete xiw0
wait_gone 5 ib_dev_exists xiw0 || fail "xiw0 still registered after delete"
no_stray_devices xiw
expect_eq "$(xiw_refcnt)" "$refcnt0" "xiw module refcount"
log "netdev removal ok (module_unload checks the unload)"
