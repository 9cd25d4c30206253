#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 2vm
# timeout: 300
# description: NFS over RDMA on xiw between the two VMs with the link flapping while a 24 MiB file of random data is written to the mount 1 MiB at a time (O_DIRECT): a 4 s blackout of the link (frames dropped both ways, NICs up), the client's netdev down 3 s and up, the server's netdev down 3 s and up; the hard mount recovers each time with no write error, and the file read back on the client and the file the server stored have the sha256 of the data written; recovery times logged
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$XIW_SELFTESTS/nfs_lib.sh"
#
# The flaps are ulp_nvmeof_flap_2vm's (see there why these two kinds): a blackout
# the connection outlives, and a netdev going down on either side, after
# which xprtrdma (client) must reconnect and svcrdma (server) accept it.

need_cmd rpc.nfsd mount.nfs dd sha256sum tc ip
xiw_load
xiw_link_add xiw0 "$XIW_NETDEV"
wait_port_state xiw0 PORT_ACTIVE 5
MB=24
DEV=$XIW_NETDEV

if [ "$XIW_ROLE" = a ]; then
	nfs_server "$XIW_LOCAL_IP"
	xiw_barrier server-up 60
	xiw_barrier flap3 200
	t0=$(now_us)
	netdev_flap "$DEV" 3
	log "server's netdev down for $(( ($(now_us) - t0) / 1000 )) ms"
	xiw_barrier flap3-done 200
	want=$(xiw_sync nfs-written - 200) || fail "the client VM is gone"
	got=$(sha256sum <"$NFS_EXPORT/data")
	expect_eq "${got%% *}" "$want" "sha256 of the file the NFS server stored"
	# b removes the file only after this (it did so right after the
	# sync above, and beside a CPU hog the hash found no file)
	xiw_barrier nfs-hashed 60
	# the server stays until the client has unmounted (a hard mount
	# whose server went away would hang in umount)
	xiw_barrier client-done 120
	exit 0
fi

# b: the client, the writer, and the flaps of its own link
xiw_barrier server-up 60
nfs_mount "$XIW_PEER_IP" mnt
head -c $((MB * 1048576)) /dev/urandom >src
want=$(sha256sum <src)
want=${want%% *}

# the writer: 1 MiB at a time with O_DIRECT, a pause after each so the
# writes span the flaps; "progress" holds the MiB written
echo 0 >progress
(
	for ((i = 0; i < MB; i++)); do
		dd if=src of=mnt/data bs=1M count=1 skip=$i seek=$i conv=notrunc \
			oflag=direct status=none || { echo "dd of MiB $i failed" >&2; exit 1; }
		echo $((i + 1)) >progress
		sleep 0.5
	done
) 2>writer.log &
wr=$!
defer eval "kill $wr 2>/dev/null || true"
writing() { kill -0 "$wr" 2>/dev/null; }
wait_for 30 eval '[ "$(cat progress)" -ge 2 ]' || fail "the writer does not move: $(cat writer.log)"

# conn: the client's connection(s) to the server (xiw's TCP sockets),
# "local peer" each; a reconnect shows as another local port
conn() { ss -Htn state established "( dport = :20049 )" | awk '{ print $3 }' | sort | tr '\n' ' '; }

# recovered TAG T0 [WHAT] [new]: the writer moves again (or has ended);
# logs the time since T0 (WHAT, default: the end of the outage) and
# whether the connection is the one from before the flap (c0); with
# "new" it must be another one (a netdev went down: xiw aborted it)
recovered() {
	local p0 t1 c
	p0=$(cat progress)
	t1=$(( $(now_us) + 90000000 ))
	while writing && [ "$(cat progress)" -le "$p0" ]; do
		[ "$(now_us)" -lt $t1 ] || fail "$1: no write 90 s after the link came back"
		sleep 0.1
	done
	log "$1: writes again $(( ($(now_us) - $2) / 1000 )) ms after ${3:-the link came back} ($(cat progress) MiB written)$(writing || echo ', the writer had ended')"
	wait_for 30 eval '[ -n "$(conn)" ]' || fail "$1: no connection to the server"
	c=$(conn)
	if [ "$c" = "$c0" ]; then
		log "$1: the connection outlived it ($c)"
		[ "${4:-}" != new ] || fail "$1: the connection outlived a netdev down ($c)"
	else
		log "$1: reconnected ($c0-> $c)"
	fi
	c0=$c
}

c0=$(conn)
[ -n "$c0" ] || fail "no TCP connection to port 20049: $(ss -Htan | tr '\n' '|')"

# 1. blackout: every frame dropped both ways for 4 s
writing || fail "the writer ended before the flaps"
link_blackout "$DEV" 4
recovered blackout "$(now_us)"

# 2. the client's netdev down for 3 s, then up
writing || log "the writer had ended before the client's netdev went down"
netdev_flap "$DEV" 3
t_up=$FLAP_UP_US
recovered client-down "$t_up" "" new

# 3. the server's netdev down for 3 s (a), then up
writing || log "the writer had ended before the server's netdev went down"
xiw_barrier flap3 60
t_dn=$(now_us)
xiw_barrier flap3-done 60
recovered server-down "$t_dn" "the server's netdev went down for 3 s" new

wait_for 120 eval '! writing' || fail "the writer still runs 120 s after the flaps"
rc=0
wait "$wr" || rc=$?
[ "$rc" = 0 ] || fail "writer: $(cat writer.log)"
expect_eq "$(cat progress)" $MB "MiB written"
got=$(run_timeout 120 dd if=mnt/data bs=1M iflag=direct status=none | sha256sum) ||
	fail "read back over NFS/RDMA failed"
expect_eq "${got%% *}" "$want" "sha256 of the file read back over NFS/RDMA"
expect_match "$(grep " $PWD/mnt " /proc/mounts)" 'proto=rdma' "still mounted over RDMA"
log "NFS/RDMA: $MB MiB written across three flaps, read back: equal"
xiw_sync nfs-written "$want" 200 >/dev/null || fail "the server VM is gone"
xiw_barrier nfs-hashed 200
rm mnt/data
nfs_umount "$PWD/mnt"
xiw_barrier client-done 120
