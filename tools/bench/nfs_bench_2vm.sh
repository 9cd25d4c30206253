#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 2vm
# timeout: 2400
# description: make bench's two-host NFS rows: NFSv4.2 over RDMA on xiw against NFSv4.2 over TCP between two VMs (nfsd and a tmpfs export on b, the client and fio on a), taking turns in XIW_BENCH_ROUNDS rounds (default 3; each cell the median), a fresh mount per run and O_DIRECT fio: sequential read and write (1 MiB, QD4, MB/s), 4 KiB random read (QD16, IOPS), kernel CPU per 4 KiB read on the client and on the server (and, with XIW_BENCH_INSN=1, guest instructions per MiB and per read on both); goal >= 1.2x NFS/TCP, met or missed; nfs-2vm-table.md
. "$(dirname "${BASH_SOURCE[0]}")/../../selftests/lib.sh"
. "$XIW_ROOT/tools/bench/bench_lib.sh"
. "$XIW_SELFTESTS/nfs_lib.sh"
. "$XIW_ROOT/tools/bench/nfs_bench_lib.sh"
#
# nfs_bench's jobs and checks (every 4 KiB read is a READ or READ_PLUS on
# the wire), with the client and the server on two hosts: nfsd on b
# serves TCP 2049 and RDMA 20049 on b's address of the bench's link,
# where xiw is linked on both VMs (the defaults: 16-segment FPDUs, zero
# copy for connections that leave the host, kernel memory included).
# The kernel CPU time per 4 KiB read is taken on both ends around the
# random read job (b's by the barriers a sets before and after it).
# XIW_FIO_SECS (default 10) seconds per job. XIW_BENCH_INSN=1 (with
# XIW_QEMU=tools/tcgprof/qemu-tcgprof.sh): guest instructions on both VMs
# per MiB of the sequential read and per 4 KiB read of the random read
# job (all, user, xiw.ko and the hottest functions;
# bench2-insn-ROLE-nfs-ROUND-PROTO-{seq,rand}.txt).

need_cmd fio rpc.nfsd rpc.mountd exportfs mount.nfs dd
T=${XIW_FIO_SECS:-10}
R=${XIW_BENCH_ROUNDS:-3}
MB=256		# the size of each file

xiw_load
xiw_link_add xiw0 "$XIW_NETDEV"
wait_port_state xiw0 PORT_ACTIVE 5

if [ "$XIW_ROLE" = b ]; then
	nfs_server "$XIW_LOCAL_IP"
	expect_match "$(cat /proc/fs/nfsd/portlist)" '^tcp 2049' "nfsd portlist"
	run_timeout 300 dd if=/dev/urandom of="$NFS_EXPORT/rfile" bs=1M \
		count=$MB status=none || fail "cannot write the read file"
	run_timeout 300 dd if=/dev/zero of="$NFS_EXPORT/wfile" bs=1M \
		count=$MB status=none || fail "cannot write the write file"
	xiw_barrier nfs-ready 600
	# a's measurement windows, until a is done
	bench_2vm_serve fail
	log ok
	exit 0
fi

xiw_barrier nfs-ready 600

# one_run PROTO TAG: one round's jobs over PROTO (rdma, tcp) on a fresh
# mount, as nfs_bench's, the server's kernel us for the random reads from
# b; into r-, w-, x- and cpu-PROTO ("client server" kernel us per 4 KiB
# read)
one_run() {
	local p=$1 tag=$2 n0 n1 kib
	rm -f "r-$p" "w-$p" "x-$p" "cpu-$p"
	nfs_mount "$XIW_PEER_IP" mnt "$p"
	log "$p: $(grep " $PWD/mnt " /proc/mounts | cut -d' ' -f4)"
	log "$p: transport $(mount_stat mnt xprt)"
	bench_win_open "$tag-seq"
	fio_run seqread read 1M 4 rfile >"r-$p"
	read -r _ _ kib <"r-$p"
	bench_win_close "$tag-seq" $((kib * 1024)) MiB
	fio_run seqwrite write 1M 4 wfile >"w-$p"
	n0=$(mount_stat mnt reads)
	bench_win_open "$tag-rand"
	fio_run rand4k randread 4k 16 rfile >"x-$p"
	read -r _ _ kib <"x-$p"
	bench_win_close "$tag-rand" $((kib / 4)) read
	n1=$(mount_stat mnt reads)
	[ $((n1 - n0)) -ge $((kib / 4)) ] ||
		fail "$p: $((kib / 4)) reads of 4 KiB but $((n1 - n0)) READ and READ_PLUS RPCs"
	echo "$BENCH_WIN_KERN" >"cpu-$p"
	nfs_umount "$PWD/mnt"
}

declare -A runs val
for ((round = 1; round <= R; round++)); do
	log "round $round of $R"
	order=(rdma tcp)
	[ $((round % 2)) = 1 ] || order=(tcp rdma)
	for p in "${order[@]}"; do
		one_run "$p" "nfs-$round-$p"
		read -r _ rd _ <"r-$p"
		read -r _ wr _ <"w-$p"
		read -r rr _ <"x-$p"
		read -r kc ks <"cpu-$p"
		log "$p: read $rd MB/s, write $wr MB/s, 4K randread $rr IOPS, kernel CPU per 4K read: client $kc us, server $ks us"
		bench_add_run "$p" read "$rd"
		bench_add_run "$p" write "$wr"
		bench_add_run "$p" rand "$rr"
		bench_add_run "$p" kcli "$kc"
		bench_add_run "$p" ksrv "$ks"
	done
done
bench_2vm_ask done
bench_medians
{
	echo "| NFSv4.2 between two VMs ($(nproc) vCPU each), fio with O_DIRECT, tmpfs export | NFS/RDMA on xiw | NFS/TCP | xiw/TCP | goal |"
	echo "|---|---|---|---|---|"
	row "sequential read, 1 MiB, QD4, MB/s" read ">=" 1.20
	row "sequential write, 1 MiB, QD4, MB/s" write ">=" 1.20
	row "4 KiB random read, QD16, IOPS" rand
	row "client kernel CPU us per 4 KiB read (system+irq+softirq)" kcli
	row "server kernel CPU us per 4 KiB read (system+irq+softirq)" ksrv
	echo
	echo "Each cell is the median of $R rounds, the transports taking turns in each"
	echo "round, a fresh mount per run (XIW_BENCH_ROUNDS). Every run, in order:"
	echo
	bench_runs_list "read write rand kcli ksrv" "rdma tcp"
} | tee nfs-2vm-table.md | sed 's/^/BENCH /'
cp nfs-2vm-table.md "$XIW_TEST_OUT/nfs-2vm-table.md"
log ok
