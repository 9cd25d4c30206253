#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 120
# description: bench stand-in: rdma_rxe device on a dummy netdev, seen by libibverbs
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

need_cmd rdma ibv_devinfo ibv_devices ip modprobe
modprobe rdma_rxe
defer modprobe -r rdma_rxe
dummy_add d0
rdma_link_add rxe0 rxe d0
wait_for 5 ib_dev_exists rxe0 || fail "rxe0 not in /sys/class/infiniband"
rdma_link_has rxe0 d0 || fail "rdma link show does not list rxe0 on d0: $(rdma link show)"
out=$(ibv_devices)
expect_match "$out" '^[[:space:]]+rxe0[[:space:]]' "ibv_devices"
info=$(ibv_devinfo -d rxe0)
echo "$info"
expect_match "$info" 'transport:[[:space:]]+InfiniBand \(0\)' "ibv_devinfo"
expect_match "$info" 'link_layer:[[:space:]]+Ethernet' "ibv_devinfo"
wait_port_state rxe0 PORT_ACTIVE 5
rdma link delete rxe0
wait_for 5 eval '! ib_dev_exists rxe0' || fail "rxe0 still registered after delete"
no_stray_devices rxe
modprobe -r rdma_rxe
[ ! -d /sys/module/rdma_rxe ] || fail "rdma_rxe still loaded"
log "rxe stand-in ok"
