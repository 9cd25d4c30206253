#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 120
# description: rdma link add refuses unknown and non-Ethernet netdevs, duplicate names, two xiw per netdev
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

need_cmd rdma ip
xiw_load
dummy_add d0
dummy_add d1
no_stray_devices xiw

# Unknown netdev.
expect_fail rdma link add xiw0 type "$XIW_LINK_TYPE" netdev nosuchdev0
no_stray_devices xiw

# A netdev that is not Ethernet: an IPv4-in-IPv4 tunnel (ARPHRD_TUNNEL). It
# gets no address and no route, so it never sends anything.
modprobe ipip
ip link add ipip0 type ipip local 10.78.0.1 remote 10.78.0.2
defer ip link del ipip0
ip link set ipip0 up
expect_match "$(cat /sys/class/net/ipip0/type)" '^768$' "ipip0 type (ARPHRD_TUNNEL)"
expect_fail rdma link add xiw0 type "$XIW_LINK_TYPE" netdev ipip0
no_stray_devices xiw

# Duplicate name: xiw0 on d0, then xiw0 again on d1.
xiw_link_add xiw0 d0
expect_fail rdma link add xiw0 type "$XIW_LINK_TYPE" netdev d1
expect_eq "$(count_devices xiw)" 1 "xiw devices after a duplicate name"
rdma_link_has xiw0 d0 || fail "xiw0 lost its netdev d0"
if rdma_link_has xiw0 d1; then fail "xiw0 now listed on d1"; fi
if rdma link show | grep -qE ' netdev d1( |$)'; then
	fail "something was created on d1: $(rdma link show)"
fi

# A second xiw device on the same netdev.
expect_fail rdma link add xiw1 type "$XIW_LINK_TYPE" netdev d0
if ib_dev_exists xiw1; then fail "xiw1 half-created on d0"; fi
expect_eq "$(count_devices xiw)" 1 "xiw devices after a second one on d0"
rdma_link_has xiw0 d0 || fail "xiw0 lost after the refused xiw1"

rdma link delete xiw0
wait_gone 5 ib_dev_exists xiw0 || fail "xiw0 still registered after delete"
no_stray_devices xiw

# Nothing refused above left anything behind: both names and netdevs work.
xiw_link_add xiw1 d0
xiw_link_add xiw0 d1
expect_eq "$(count_devices xiw)" 2 "xiw devices"
rdma link delete xiw1
rdma link delete xiw0
wait_gone 5 ib_dev_exists xiw0 || fail "xiw0 still registered after delete"
wait_gone 5 ib_dev_exists xiw1 || fail "xiw1 still registered after delete"
no_stray_devices xiw
log "errors refused cleanly"
