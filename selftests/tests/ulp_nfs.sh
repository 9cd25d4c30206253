#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 300
# description: NFS over RDMA on xiw: nfsd with an rdma listener (port 20049), NFSv4.2 mount -o rdma, 32 MiB of random data written and read back with O_DIRECT, checksums on both sides, the mount really on RDMA, clean unmount and server stop
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$XIW_SELFTESTS/nfs_lib.sh"

need_cmd rpc.nfsd rpc.mountd exportfs mount.nfs sha256sum dd
xiw_loopback
nfs_server 192.0.2.1
nfs_mount 192.0.2.1 mnt
nfs_rw_check mnt 32
