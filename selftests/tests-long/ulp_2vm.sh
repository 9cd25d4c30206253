#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 2vm
# timeout: 400
# description: kernel ULPs between two VMs over xiw: NVMe-oF (target on a, nvme-rdma host on b, 256 MiB written and read back, hashed on both ends) and NFS over RDMA (nfsd on a, NFSv4.2 -o rdma mount on b, 16 MiB, hashed on both ends), then disconnect and teardown on both sides
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$XIW_SELFTESTS/nvmet_lib.sh"
. "$XIW_SELFTESTS/nfs_lib.sh"

need_cmd rpc.nfsd mount.nfs dd sha256sum
xiw_load
xiw_link_add xiw0 "$XIW_NETDEV"
wait_port_state xiw0 PORT_ACTIVE 5
nqn=xiw-ulp-2vm

if [ "$XIW_ROLE" = a ]; then
	nvmet_target "$XIW_LOCAL_IP" $nqn 0
	nfs_server "$XIW_LOCAL_IP"
	xiw_barrier servers-up 60
	# b runs its I/O; the servers stay up until it is done. What they
	# stored must be what b wrote (b sends its hashes).
	want=$(xiw_sync nvme-written - 400) || fail "the host VM is gone"
	expect_eq "$(nvmet_stored_sha "${XIW_NVME_MB:-256}")" "$want" \
		"sha256 of what the NVMe-oF target stored"
	want=$(xiw_sync nfs-written - 300) || fail "the NFS client VM is gone"
	got=$(sha256sum <"$NFS_EXPORT/data")
	expect_eq "${got%% *}" "$want" "sha256 of the file the NFS server stored"
	xiw_barrier nfs-hashed 60
	xiw_barrier clients-done 300
else
	xiw_barrier servers-up 60
	nvme_host_connect "$XIW_PEER_IP" $nqn nr_io_queues=2
	nvme_rw_check "${XIW_NVME_MB:-256}"
	xiw_sync nvme-written "$NVME_RW_SHA" 400 >/dev/null || fail "the target VM is gone"
	nvme_host_disconnect
	nfs_mount "$XIW_PEER_IP" mnt
	NFS_RW_KEEP=1 nfs_rw_check mnt 16
	xiw_sync nfs-written "$NFS_RW_SHA" 300 >/dev/null || fail "the server VM is gone"
	xiw_barrier nfs-hashed 60
	rm mnt/data
	nfs_umount "$PWD/mnt"
	xiw_barrier clients-done 300
fi
