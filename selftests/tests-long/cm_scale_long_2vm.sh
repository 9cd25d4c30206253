#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 2vm
# timeout: 2400
# description: the long form of cm_scale_2vm (make check-long): 1000 connected RC QPs between two VMs, 20 rounds of a verified 64 KiB RDMA Write + Send + 64 KiB RDMA Read round trip on every one at once (2.6 GB), teardown, every count and the memory back to the baseline on both VMs
# its own figures unless the environment names others
export XIW_CM_SCALE_ROUNDS=${XIW_CM_SCALE_ROUNDS:-20} XIW_CM_SCALE_SIZE=${XIW_CM_SCALE_SIZE:-65536}
. "$(dirname "${BASH_SOURCE[0]}")/../tests/cm_scale_2vm.sh"
