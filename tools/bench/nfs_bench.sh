#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 1800
# description: make bench's NFS rows: NFSv4.2 over RDMA on xiw against NFSv4.2 over TCP, one nfsd, one export, the same files, taking turns in XIW_BENCH_ROUNDS rounds (default 3; each cell the median), a fresh mount per run and O_DIRECT fio: sequential read and write (1 MiB, QD4, MB/s), 4 KiB random read (QD16, IOPS), kernel CPU per 4 KiB read; goal >= 1.0x NFS/TCP, met or missed; nfs-table.md
. "$(dirname "${BASH_SOURCE[0]}")/../../selftests/lib.sh"
. "$XIW_ROOT/tools/bench/bench_lib.sh"
. "$XIW_SELFTESTS/nfs_lib.sh"
. "$XIW_ROOT/tools/bench/nfs_bench_lib.sh"
#
# Server and client are this VM, over xiw0's address (192.0.2.1 on the
# dummy netdev d0: the packets of both transports go through lo); nfsd
# listens there on TCP 2049 and RDMA 20049 and exports a tmpfs, so what
# the server reads and writes is memory on either transport. The files
# are written once, on the server, before the first run. Each run mounts
# afresh (the client starts with an empty cache) and fio uses O_DIRECT,
# so every I/O is an NFS READ or WRITE on the wire: without it the
# client's page cache would answer the re-reads of a time-based job and
# its write-back would batch the writes (asserted: the mount's READ and
# READ_PLUS count grows by at least one per 4 KiB read). XIW_FIO_SECS (default 10)
# seconds per job, libaio, the same jobs on both transports.

need_cmd fio rpc.nfsd rpc.mountd exportfs mount.nfs dd
T=${XIW_FIO_SECS:-10}
R=${XIW_BENCH_ROUNDS:-3}
MB=256		# the size of each file
ADDR=192.0.2.1

xiw_loopback "$ADDR"
nfs_server "$ADDR"
expect_match "$(cat /proc/fs/nfsd/portlist)" '^tcp 2049' "nfsd portlist"
run_timeout 300 dd if=/dev/urandom of="$NFS_EXPORT/rfile" bs=1M count=$MB \
	status=none || fail "cannot write the read file"
run_timeout 300 dd if=/dev/zero of="$NFS_EXPORT/wfile" bs=1M count=$MB \
	status=none || fail "cannot write the write file"

# nfs_profile PROTO (XIW_NFS_PROFILE=1): one more sequential read under
# perf record (all CPUs, cpu-clock samples: TCG has no PMU); the symbols
# above 0.5% of the samples go to nfs-profile-PROTO.txt and the log
nfs_profile() {
	need_cmd perf
	echo -1 >/proc/sys/kernel/perf_event_paranoid
	echo 0 >/proc/sys/kernel/kptr_restrict
	fio_job prof read 1M 4 rfile
	perf record -a -e cpu-clock -F 997 -o nfsprof.data -- \
		"${fio_argv[@]}" >/dev/null 2>nfsprof.err ||
		{ cat nfsprof.err; fail "perf record of fio failed"; }
	perf report -i nfsprof.data --stdio --sort dso,sym \
		--percent-limit 0.5 2>/dev/null | grep -v '^#' | sed '/^$/d' \
		>"nfs-profile-$1.txt" || true
	sed "s/^/# $1 profile: /" "nfs-profile-$1.txt" | head -40 >&2
	cp "nfs-profile-$1.txt" "$XIW_TEST_OUT/" 2>/dev/null || true
	rm -f nfsprof.data
}

# one_run PROTO: one round's jobs over PROTO (rdma, tcp) on a fresh mount
# into r-PROTO (sequential read), w-PROTO (sequential write), x-PROTO
# (4 KiB random read) and cpu-PROTO ("busy kernel" us per 4 KiB read). A
# subshell with its own deferred cleanup (the unmount): a run that fails
# leaves n/a, not a dead bench.
one_run() (
	local p=$1 c0 c1 n0 n1 kib
	_xiw_deferred=()
	trap _xiw_on_exit EXIT
	rm -f "r-$p" "w-$p" "x-$p" "cpu-$p"
	nfs_mount "$ADDR" mnt "$p"
	log "$p: $(grep " $PWD/mnt " /proc/mounts | cut -d' ' -f4)"
	log "$p: transport $(mount_stat mnt xprt)"
	fio_run seqread read 1M 4 rfile >"r-$p"
	fio_run seqwrite write 1M 4 wfile >"w-$p"
	n0=$(mount_stat mnt reads)
	c0=$(bench_cpu_snap)
	fio_run rand4k randread 4k 16 rfile >"x-$p"
	c1=$(bench_cpu_snap)
	n1=$(mount_stat mnt reads)
	read -r _ _ kib <"x-$p"
	# each 4 KiB read was a READ (or READ_PLUS) on this mount's transport
	[ $((n1 - n0)) -ge $((kib / 4)) ] || {
		cp /proc/self/mountstats "$XIW_TEST_OUT/mountstats-$p"
		fail "$p: $((kib / 4)) reads of 4 KiB but $((n1 - n0)) READ and READ_PLUS RPCs ($n0 before, $n1 after)"
	}
	log "$p: $((n1 - n0)) READ and READ_PLUS RPCs for $((kib / 4)) reads of 4 KiB"
	awk -v n=$((kib / 4)) -v a="$c0" -v b="$c1" 'BEGIN {
		split(a, x, " "); split(b, y, " ")
		if (n > 0) printf "%.2f %.2f\n", (y[1] - x[1]) / n, (y[2] - x[2]) / n }' >"cpu-$p"
	[ -z "${XIW_NFS_PROFILE:-}" ] || nfs_profile "$p"
)

declare -A runs val
for ((round = 1; round <= R; round++)); do
	log "round $round of $R"
	# the transports take turns, the first of a round alternating
	order=(rdma tcp)
	[ $((round % 2)) = 1 ] || order=(tcp rdma)
	for p in "${order[@]}"; do
		# in the background, so that errexit holds inside (a
		# condition's commands run without it)
		one_run "$p" 2>"err-$p" &
		# a run that failed (a check included) counts for nothing
		wait $! || {
			sed 's/^/#   /' "err-$p" | tail -5
			rm -f "r-$p" "w-$p" "x-$p" "cpu-$p"
		}
		rd= wr= rr= busy= kern=
		[ ! -s "r-$p" ] || read -r _ rd _ <"r-$p"
		[ ! -s "w-$p" ] || read -r _ wr _ <"w-$p"
		[ ! -s "x-$p" ] || read -r rr _ <"x-$p"
		[ ! -s "cpu-$p" ] || read -r busy kern <"cpu-$p"
		log "$p: read ${rd:-n/a} MB/s, write ${wr:-n/a} MB/s, 4K randread ${rr:-n/a} IOPS, per 4K read: kernel CPU ${kern:-n/a} us, busy CPU ${busy:-n/a} us"
		bench_add_run "$p" read "$rd"
		bench_add_run "$p" write "$wr"
		bench_add_run "$p" rand "$rr"
		bench_add_run "$p" kern "$kern"
		bench_add_run "$p" busy "$busy"
	done
done
# median of the rounds that produced a figure; n/a if none did
bench_medians

{
	echo "| NFSv4.2, fio with O_DIRECT, one nfsd and tmpfs export in the VM | NFS/RDMA on xiw | NFS/TCP | xiw/TCP | goal |"
	echo "|---|---|---|---|---|"
	row "sequential read, 1 MiB, QD4, MB/s" read ">=" 1.00
	row "sequential write, 1 MiB, QD4, MB/s" write ">=" 1.00
	row "4 KiB random read, QD16, IOPS" rand ">=" 1.00
	row "kernel CPU us per 4 KiB read (system+irq+softirq, whole VM)" kern
	row "busy CPU us per 4 KiB read (all but idle and iowait: fio's user time too)" busy
	echo
	echo "Each cell is the median of $R rounds, the transports taking turns in each"
	echo "round, a fresh mount per run (XIW_BENCH_ROUNDS). Every run, in order:"
	echo
	bench_runs_list "read write rand kern busy" "rdma tcp"
} | tee nfs-table.md | sed 's/^/BENCH /'
cp nfs-table.md "$XIW_TEST_OUT/nfs-table.md"
[ "${val[rdma,read]:-n/a}" != n/a ] || fail "no NFS/RDMA figure"
[ "${val[tcp,read]:-n/a}" != n/a ] || fail "no NFS/TCP figure"
