#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 3vm
# timeout: 300
# description: NFS over RDMA (xiw) with two clients at once: nfsd on a, b and c mount the same export (NFSv4.2, proto=rdma) and write a file each at the same time, then each reads the other's; both write their own half of one shared file at the same time; every write and read with O_DIRECT (no client cache), sha256 of every file checked on a (the export itself) and on both clients
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$XIW_SELFTESTS/nfs_lib.sh"

need_cmd rpc.nfsd rpc.mountd exportfs mount.nfs sha256sum dd
xiw_load
xiw_link_add xiw0 "$XIW_NETDEV"
wait_port_state xiw0 PORT_ACTIVE 5
MB=4	# each client's file, and each half of the shared one
# XIW_NFS2_PROOF=overlap: c writes its half over b's (offset 0), which the
# checks of the halves must find
half_c=1
[ "${XIW_NFS2_PROOF:-}" != overlap ] || { half_c=0; log "PROOF: c writes over b's half"; }

# sha FILE [SKIP_MB COUNT_MB]: sha256 of FILE (or of COUNT_MB MiB of it
# from SKIP_MB on), read with O_DIRECT
sha() {
	local s
	s=$(run_timeout 120 dd if="$1" bs=1M ${2:+skip=$2 count=$3} iflag=direct status=none |
		sha256sum) || fail "cannot read $1"
	echo "${s%% *}"
}

# The server stops only after both clients unmounted, pass or fail (a
# client whose server went first hangs in umount): the last sync of the
# three is deferred, after the clients' unmount, before the server's stop.
# On a it is tried again while a client is still at an earlier sync of
# the test (that one fails there, unmounts, and comes).
unmounted() {
	local end=$((EPOCHSECONDS + 180)) err=
	while [ "$EPOCHSECONDS" -lt $end ]; do
		err=$(xiw_sync unmounted . $((end - EPOCHSECONDS)) 2>&1 >/dev/null) && return 0
		case $err in *"peer is at 'end:"*|*died*|*"no answer"*) break ;; esac
		sleep 0.5
	done
	echo "$err"
	return 1
}
if [ "$XIW_ROLE" = a ]; then
	nfs_server "$XIW_LOCAL_IP"
	defer unmounted
	# the shared file exists before either client writes its half
	truncate -s $((2 * MB))M "$NFS_EXPORT/shared"
	xiw_barrier server-up 60
	# 1. a file of each client's own
	xiw_barrier own-go 60
	got=$(xiw_sync own-written . 120) || fail "the clients did not write"
	read -r sb sc <<<"$got"
	expect_eq "$(sha "$NFS_EXPORT/b.dat")" "$sb" "sha256 of b's file on the server"
	expect_eq "$(sha "$NFS_EXPORT/c.dat")" "$sc" "sha256 of c's file on the server"
	xiw_sync own-checked "$sb:$sc" 60 >/dev/null || fail "own-checked"
	xiw_barrier own-read 120
	# 2. the halves of the shared file
	got=$(xiw_sync shared-written . 120) || fail "the clients did not write the halves"
	read -r hb hc <<<"$got"
	expect_eq "$(stat -c %s "$NFS_EXPORT/shared")" $((2 * MB * 1048576)) "size of the shared file"
	expect_eq "$(sha "$NFS_EXPORT/shared" 0 $MB)" "$hb" "sha256 of b's half on the server"
	expect_eq "$(sha "$NFS_EXPORT/shared" $MB $MB)" "$hc" "sha256 of c's half on the server"
	whole=$(sha "$NFS_EXPORT/shared")
	xiw_sync shared-checked "$hb:$hc:$whole" 60 >/dev/null || fail "shared-checked"
	xiw_barrier shared-read 120
	log "the server holds what b and c wrote, the shared file $whole"
	exit 0
fi

# b and c: the clients
me=$XIW_ROLE other=b half=$half_c
[ "$me" = b ] && { other=c half=0; }
defer xiw_sync unmounted . 180
xiw_barrier server-up 60
nfs_mount "$XIW_IP_A" mnt
head -c $((MB * 1048576)) /dev/urandom >own.dat
head -c $((MB * 1048576)) /dev/urandom >half.dat
# 1. both write a file of their own at the same time
xiw_barrier own-go 60
run_timeout 120 dd if=own.dat of="mnt/$me.dat" bs=1M oflag=direct status=none ||
	fail "write of mnt/$me.dat failed"
mine=$(sha own.dat)
expect_eq "$(sha "mnt/$me.dat")" "$mine" "sha256 of $me's file read back"
xiw_sync own-written "$mine" 120 >/dev/null || fail "own-written"
shas=$(xiw_sync own-checked . 60) || fail "the server's check of the files"
[ "$me" = b ] && want=${shas#*:} || want=${shas%%:*}
expect_eq "$(sha "mnt/$other.dat")" "$want" "sha256 of $other's file read on $me"
xiw_barrier own-read 120
# 2. both write their half of the shared file at the same time
run_timeout 120 dd if=half.dat of=mnt/shared bs=1M seek=$((half * MB)) conv=notrunc \
	oflag=direct status=none || fail "write of $me's half of mnt/shared failed"
xiw_sync shared-written "$(sha half.dat)" 120 >/dev/null || fail "shared-written"
shas=$(xiw_sync shared-checked . 60) || fail "the server's check of the shared file"
IFS=: read -r hb hc whole <<<"$shas"
expect_eq "$(sha mnt/shared)" "$whole" "sha256 of the shared file read on $me"
[ "$me" = b ] && want=$hc || want=$hb
expect_eq "$(sha mnt/shared $(( (1 - half) * MB )) $MB)" "$want" "$other's half of the shared file read on $me"
xiw_barrier shared-read 120
log "$me: own file, $other's file and the shared file as written"
nfs_umount "$PWD/mnt"
