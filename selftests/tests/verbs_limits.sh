#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 300
# description: the device limits through libxiw: max_cq (16384) CQs and max_qp (16384) QPs exist at once on a fresh xiw0, the next create of each fails with ENOMEM and leaves nothing behind (after one is destroyed the next succeeds); every object destroyed, the device then deleted cleanly
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

xiw_load
xiw_need_provider
prog=$(need_prog xiw_objects)
dummy_add d0
xiw_link_add xiw0 d0
expect_eq "$(ibv_devinfo -v -d xiw0 | awk '$1 == "max_qp:" { print $2 }')" 16384 "max_qp"
expect_eq "$(ibv_devinfo -v -d xiw0 | awk '$1 == "max_cq:" { print $2 }')" 16384 "max_cq"
rc=0
run_timeout 280 "$prog" --dev xiw0 --limits >limits.log 2>&1 || rc=$?
sed 's/^/# /' limits.log
[ $rc = 0 ] || fail "xiw_objects --limits exited $rc: $(grep -m1 FAIL limits.log)"
expect_match "$(cat limits.log)" '16384 at once \(create_cq\), the next: Cannot allocate memory' "CQ limit"
expect_match "$(cat limits.log)" '16384 at once \(create_qp\), the next: Cannot allocate memory' "QP limit"
rdma link delete xiw0
wait_gone 5 ib_dev_exists xiw0 || fail "xiw0 still registered after delete"
no_stray_devices xiw
