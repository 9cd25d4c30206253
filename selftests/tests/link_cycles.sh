#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 300
# description: 30 rdma link add/delete cycles (XIW_LINK_CYCLES), the device appears and disappears each time, the module refcount back where it was
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

need_cmd rdma
# 30 cycles: a leak of the module or a device left behind shows after
# one; under TCG each cycle costs 0.7 s (100 took 78 s of make check).
cycles=${XIW_LINK_CYCLES:-30}
xiw_load
dummy_add d0
dummy_add d1
defer rdma_link_del xiw0
refcnt0=$(xiw_refcnt)
t0=$(now_us)
for ((i = 1; i <= cycles; i++)); do
	nd=d$((i % 2))	# alternate the netdev
	rdma link add xiw0 type "$XIW_LINK_TYPE" netdev "$nd" || fail "cycle $i: rdma link add on $nd failed"
	wait_for 5 ib_dev_exists xiw0 || fail "cycle $i: xiw0 did not appear"
	if ((i % 10 == 1)); then
		rdma_link_has xiw0 "$nd" || fail "cycle $i: rdma link show does not list xiw0 on $nd"
	fi
	rdma link delete xiw0 || fail "cycle $i: rdma link delete failed"
	wait_gone 5 ib_dev_exists xiw0 || fail "cycle $i: xiw0 did not disappear"
done
t1=$(now_us)
log "$cycles cycles in $(( (t1 - t0) / 1000 )) ms"
no_stray_devices xiw
expect_eq "$(xiw_refcnt)" "$refcnt0" "xiw module refcount after the cycles"
