# SPDX-License-Identifier: GPL-2.0
# NFS over RDMA for the VM tests (sourced after lib.sh). The guest's root
# is read-only, so the server's state directories and the export are
# tmpfs; only NFSv4 is served (no rpcbind needed).

# nfs_server ADDR: nfsd with an RDMA listener on ADDR:20049 exporting
# $XIW_TEST_TMP/export (tmpfs) as the NFSv4 root; stopped at exit.
nfs_server() {
	local d
	modprobe nfsd || fail "modprobe nfsd failed (Debian's kernel has it)"
	modprobe rpcrdma || fail "modprobe rpcrdma failed (Debian's kernel has it)"
	mount -t tmpfs none /var/lib/nfs || fail "cannot mount tmpfs on /var/lib/nfs"
	defer umount -l /var/lib/nfs
	NFS_EXPORT=$XIW_TEST_TMP/export
	mkdir -p "$NFS_EXPORT" /var/lib/nfs/v4recovery
	: >/var/lib/nfs/etab
	: >/var/lib/nfs/rmtab
	mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd
	defer nfs_server_stop
	# no 90 s grace period before the first OPEN
	echo 10 >/proc/fs/nfsd/nfsv4leasetime
	echo 10 >/proc/fs/nfsd/nfsv4gracetime
	exportfs -o rw,fsid=0,no_root_squash,insecure,no_subtree_check \
		"*:$NFS_EXPORT" || fail "exportfs"
	rpc.mountd -N 3 --no-udp >/dev/null 2>&1 || fail "rpc.mountd"
	rpc.nfsd -N 3 --no-udp --rdma=20049 -H "$1" 2 >nfsd.log 2>&1 ||
		fail "rpc.nfsd: $(cat nfsd.log)"
	expect_match "$(cat /proc/fs/nfsd/portlist)" '^rdma 20049' "nfsd portlist"
}

# nfs_server_stop: nfs_server's teardown, deferred by it. Every step must
# succeed and the modules must unload (a module still in use 30 s after
# its last user went is a leak); fails with the list of what did not.
nfs_server_stop() {
	local err=
	rpc.nfsd 0 >/dev/null 2>&1 || err+=" rpc.nfsd 0 failed;"
	exportfs -ua || err+=" exportfs -ua failed;"
	pkill -x rpc.mountd || err+=" no rpc.mountd to stop;"
	wait_gone 5 pgrep -x rpc.mountd || err+=" rpc.mountd still runs after 5 s;"
	umount /proc/fs/nfsd || err+=" umount /proc/fs/nfsd failed;"
	nfs_mod_unload nfsd || err+=" nfsd stays loaded: $(nfs_mod_users nfsd);"
	# the client's transport module, unless a client on this VM still
	# has it (nfs_umount removes it then)
	[ -d /sys/module/nfs ] || nfs_mod_unload rpcrdma ||
		err+=" rpcrdma stays loaded: $(nfs_mod_users rpcrdma);"
	[ -z "$err" ] || { echo "nfs_server_stop:$err"; return 1; }
}

# nfs_mod_unload MOD...: modprobe -r, tried for up to 30 s (a module's
# last user may still be going away: RPC transports close asynchronously)
nfs_mod_unload() {
	wait_for 30 modprobe -r "$@"
}

# nfs_mod_users MOD: its reference count and the modules holding it
nfs_mod_users() {
	[ -d "/sys/module/$1" ] || { echo "(not loaded)"; return 0; }
	echo "refcnt $(cat "/sys/module/$1/refcnt"), held by" \
	     "$(ls "/sys/module/$1/holders" | tr '\n' ' ')"
}

# nfs_mount ADDR DIR [PROTO [OPTIONS]]: NFSv4.2 over RDMA (PROTO rdma, the
# default: port 20049) or TCP (PROTO tcp: port 2049, which nfs_server's
# nfsd serves too), OPTIONS added to the mount's; unmounted at exit.
# Fails unless the mount really uses that transport.
nfs_mount() {
	local proto=${3:-rdma} port=20049
	[ "$proto" = rdma ] || port=2049
	mkdir -p "$2"
	modprobe nfsv4 || fail "modprobe nfsv4 failed (Debian's kernel has it)"
	run_timeout 60 mount -t nfs4 \
		-o "proto=$proto,port=$port,vers=4.2${4:+,$4}" "$1:/" "$2" ||
		fail "mount -o proto=$proto to $1 failed"
	defer nfs_umount "$PWD/$2"
	expect_match "$(grep " $PWD/$2 " /proc/mounts)" "proto=$proto" "mount options"
}

# nfs_umount DIR: nfs_mount's teardown, deferred by it: the unmount and
# the client's modules (rpcrdma too, unless this VM's nfsd still has it)
nfs_umount() {
	mountpoint -q "$1" || return 0
	run_timeout 60 umount "$1" || fail "umount $1"
	nfs_mod_unload nfsv4 nfs ||
		fail "the NFS client stays loaded: nfsv4 $(nfs_mod_users nfsv4), nfs $(nfs_mod_users nfs)"
	[ -d /sys/module/nfsd ] || nfs_mod_unload rpcrdma ||
		fail "rpcrdma stays loaded: $(nfs_mod_users rpcrdma)"
}

# nfs_rw_check DIR MB: write MB MiB of random data to DIR/data with O_DIRECT,
# read it back with O_DIRECT, compare SHA-256 with the original and with
# the file the server stored ($NFS_EXPORT/data, when the server is local).
# NFS_RW_SHA is the hash of what was written; NFS_RW_KEEP=1 keeps DIR/data
# (for a remote server to hash it).
nfs_rw_check() {
	local dir=$1 mb=$2 want got t0 t1 t2
	head -c $((mb * 1048576)) /dev/urandom >nfs-data
	want=$(sha256sum <nfs-data)
	NFS_RW_SHA=${want%% *}
	t0=$(now_us)
	run_timeout 120 dd if=nfs-data of="$dir/data" bs=1M oflag=direct \
		status=none || fail "write over NFS/RDMA failed"
	t1=$(now_us)
	got=$(run_timeout 120 dd if="$dir/data" bs=1M iflag=direct status=none |
	      sha256sum) || fail "read over NFS/RDMA failed"
	t2=$(now_us)
	expect_eq "$got" "$want" "sha256 read back over NFS/RDMA"
	if [ -n "${NFS_EXPORT:-}" ]; then
		expect_eq "$(sha256sum <"$NFS_EXPORT/data")" "$want" \
			"sha256 of the file on the server"
	fi
	rm -f nfs-data
	[ "${NFS_RW_KEEP:-0}" = 1 ] || rm -f "$dir/data"
	log "NFS/RDMA: $mb MiB written ($((mb * 1000000 / (t1 - t0))) MB/s)" \
	    "and read back ($((mb * 1000000 / (t2 - t1))) MB/s): equal"
}
