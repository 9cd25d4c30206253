#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 600
# description: data path: NVMe-oF (nvmet-rdma + nvme-rdma) over xiw, 256 MiB of random data written and read back with 2 I/O queues (fast registration, Read with Invalidate, Send with Invalidate), then again with the target on a shared receive queue
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$XIW_ROOT/selftests/nvmet_lib.sh"

need_cmd ip dd sha256sum
xiw_load
dummy_add d0
ip addr add 192.0.2.1/24 dev d0
xiw_link_add xiw0 d0
wait_port_state xiw0 PORT_ACTIVE 5

nvmet_target 192.0.2.1 xiw-dp-nvmeof 0
nvme_host_connect 192.0.2.1 xiw-dp-nvmeof nr_io_queues=2,queue_size=64
nvme_rw_check "${XIW_NVME_MB:-256}"
nvme_host_disconnect
nvmet_target_down

# The target's receive queues on one SRQ (its limit event armed).
nvmet_target 192.0.2.1 xiw-dp-nvmeof 1
nvme_host_connect 192.0.2.1 xiw-dp-nvmeof nr_io_queues=2
srqs=$(rdma res show srq 2>/dev/null | grep -c "dev xiw0" || true)
[ "$srqs" -ge 1 ] || fail "target uses no SRQ on xiw0: $(rdma res show srq)"
nvme_rw_check 32
log "SRQ round: $srqs SRQ(s) on xiw0"
nvme_host_disconnect
nvmet_target_down
