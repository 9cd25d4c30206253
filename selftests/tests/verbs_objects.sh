#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 420
# description: xiw_objects: 1000 cycles of verbs object create/destroy on xiw0
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

xiw_load
xiw_need_provider
prog=$(need_prog xiw_objects)
dummy_add d0
xiw_link_add xiw0 d0
rc=0
run_timeout 400 "$prog" --dev xiw0 --cycles "${XIW_OBJECTS_CYCLES:-1000}" || rc=$?
[ $rc = 0 ] || fail "xiw_objects exited $rc"
rdma link delete xiw0
wait_gone 5 ib_dev_exists xiw0 || fail "xiw0 still registered after delete"
no_stray_devices xiw
