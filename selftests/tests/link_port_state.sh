#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 120
# description: the port follows its netdev: admin up/down (dummy) and carrier (veth)
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

need_cmd rdma ibv_devinfo ip
xiw_load
xiw_need_provider

# Administrative state, on a dummy netdev.
dummy_add d0
xiw_link_add xiw0 d0
wait_port_state xiw0 PORT_ACTIVE 5
ip link set d0 down
wait_port_state xiw0 PORT_DOWN 5
ip link set d0 up
wait_port_state xiw0 PORT_ACTIVE 5
rdma link delete xiw0

# Carrier, on a veth pair: v1 down takes the carrier off v0.
veth_add v0 v1
xiw_link_add xiw0 v0
wait_port_state xiw0 PORT_ACTIVE 5
ip link set v1 down
wait_for 5 grep -qx 0 /sys/class/net/v0/carrier || fail "v0 kept its carrier"
wait_port_state xiw0 PORT_DOWN 5
ip link set v1 up
wait_port_state xiw0 PORT_ACTIVE 5
# And admin down on the xiw netdev itself.
ip link set v0 down
wait_port_state xiw0 PORT_DOWN 5
ip link set v0 up
wait_port_state xiw0 PORT_ACTIVE 5
rdma link delete xiw0
wait_gone 5 ib_dev_exists xiw0 || fail "xiw0 still registered after delete"
no_stray_devices xiw
log "port state follows the netdev"
