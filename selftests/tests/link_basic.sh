#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 120
# description: rdma link add/delete of xiw0 on a dummy netdev; iWARP device seen by libibverbs
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

need_cmd rdma ibv_devices ibv_devinfo
xiw_load
xiw_need_provider
dummy_add d0
dummy_add d1

xiw_link_add xiw0 d0
ib_dev_exists xiw0 || fail "xiw0 not in /sys/class/infiniband after rdma link add"
links=$(rdma link show)
echo "$links"
rdma_link_has xiw0 d0 || fail "rdma link show does not list xiw0 on d0"

# The ib_device itself: an RNIC without a PCI parent.
expect_match "$(cat /sys/class/infiniband/xiw0/node_type)" '^4: RNIC' "node_type"
if [ -e /sys/class/infiniband/xiw0/device ]; then
	parent=$(readlink -f /sys/class/infiniband/xiw0/device)
	expect_nomatch "$parent" '/pci[0-9a-f]' "parent device of xiw0"
fi

devs=$(ibv_devices)
echo "$devs"
expect_match "$devs" '^[[:space:]]+xiw0[[:space:]]' "ibv_devices"

info=$(ibv_devinfo -v -d xiw0)
echo "$info"
expect_match "$info" '^hca_id:[[:space:]]+xiw0$' "ibv_devinfo hca_id"
expect_match "$info" 'transport:[[:space:]]+iWARP \(1\)' "ibv_devinfo transport"
guid=$(awk '/^[[:space:]]*node_guid:/ { print $2; exit }' <<<"$info")
[ -n "$guid" ] || fail "no node_guid in ibv_devinfo"
expect_ne "${guid//[0:]/}" "" "node_guid $guid (all zero)"
expect_eq "$(tr -d '\n' </sys/class/infiniband/xiw0/node_guid)" "$guid" "sysfs node_guid"
wait_port_state xiw0 PORT_ACTIVE 5

# A second device has its own node GUID.
xiw_link_add xiw1 d1
rdma_link_has xiw1 d1 || fail "rdma link show does not list xiw1 on d1"
guid1=$(tr -d '\n' </sys/class/infiniband/xiw1/node_guid)
expect_ne "$guid1" "$guid" "node_guid of xiw1 (same as xiw0)"
expect_ne "${guid1//[0:]/}" "" "node_guid of xiw1 $guid1 (all zero)"
rdma link delete xiw1
wait_gone 5 ib_dev_exists xiw1 || fail "xiw1 still registered after rdma link delete"

rdma link delete xiw0
wait_gone 5 ib_dev_exists xiw0 || fail "xiw0 still registered after rdma link delete"
if rdma_link_has xiw0; then fail "rdma link show still lists xiw0"; fi
expect_nomatch "$(ibv_devices)" '^[[:space:]]+xiw0[[:space:]]' "ibv_devices after delete"
no_stray_devices xiw
log "link add/show/delete ok"
