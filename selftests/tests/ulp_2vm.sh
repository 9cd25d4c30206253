#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 2vm
# timeout: 400
# description: kernel ULPs between two VMs over xiw: NVMe-oF (target on a, nvme-rdma host on b, 256 MiB written and read back) and NFS over RDMA (nfsd on a, NFSv4.2 -o rdma mount on b, 16 MiB), then disconnect and teardown on both sides
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$XIW_ROOT/selftests/nvmet_lib.sh"
. "$XIW_ROOT/selftests/nfs_lib.sh"

need_cmd rpc.nfsd mount.nfs dd sha256sum
xiw_load
xiw_link_add xiw0 "$XIW_NETDEV"
wait_port_state xiw0 PORT_ACTIVE 5
nqn=xiw-ulp-2vm

if [ "$XIW_ROLE" = a ]; then
	nvmet_target "$XIW_LOCAL_IP" $nqn 0
	nfs_server "$XIW_LOCAL_IP"
	xiw_barrier servers-up 60
	# b runs its I/O; the servers stay up until it is done
	xiw_barrier clients-done 300
else
	xiw_barrier servers-up 60
	nvme_host_connect "$XIW_PEER_IP" $nqn nr_io_queues=2
	nvme_rw_check "${XIW_NVME_MB:-256}"
	nvme_host_disconnect
	nfs_mount "$XIW_PEER_IP" mnt
	nfs_rw_check mnt 16
	nfs_umount "$PWD/mnt"
	xiw_barrier clients-done 300
fi
