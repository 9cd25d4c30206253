#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 2vm
# timeout: 2400
# description: make bench's two-host NVMe-oF rows: fio on a null_blk namespace through nvme-rdma to nvmet-rdma on xiw against nvme-tcp to nvmet-tcp between two VMs (the target on b, the host and fio on a), taking turns in XIW_BENCH_ROUNDS rounds (default 3; each cell the median): 4 KiB random read QD16 (IOPS), 128 KiB sequential read QD16 (MB/s), 4 KiB random read QD1 (mean latency), kernel CPU per read on the host and on the target (with XIW_BENCH_INSN=1 also guest instructions per read on both); goals: 128 KiB >= 1.5x NVMe/TCP's MB/s at <= 0.8x its kernel CPU per read, 4 KiB IOPS >= 2x; nvmeof-2vm-table.md
. "$(dirname "${BASH_SOURCE[0]}")/../../selftests/lib.sh"
. "$XIW_ROOT/tools/bench/bench_lib.sh"
. "$XIW_SELFTESTS/nvmet_lib.sh"
. "$XIW_ROOT/tools/bench/nvmeof_bench_lib.sh"
#
# nvmeof_bench's jobs between two hosts. For each run a asks b for a
# fresh target on b's address of the link (a 1 GiB memory-backed
# null_blk, nvmet over NVME_TRANSPORT, port 4420), connects, fills the
# 256 MiB the jobs read (so reads are of stored pages), runs the jobs and
# asks b to take the target down. xiw is linked on both VMs with the
# defaults. Kernel CPU (system, irq, softirq) per read over the QD16 jobs
# on both ends. XIW_FIO_SECS (default 10) seconds per job.

need_cmd fio dd
T=${XIW_FIO_SECS:-10}
R=${XIW_BENCH_ROUNDS:-3}
NQN=nqn.2026-12.xiw:bench-2vm

xiw_load
xiw_link_add xiw0 "$XIW_NETDEV"
wait_port_state xiw0 PORT_ACTIVE 5

# target STEP (b): "up-PROTO" sets the target up over PROTO, "down" takes
# it down
target() {
	case $1 in
	up-rdma | up-tcp)
		NVME_TRANSPORT=${1#up-}
		nvmet_target "$XIW_LOCAL_IP" "$NQN"
		;;
	down) nvmet_target_down ;;
	*) fail "unknown step $1" ;;
	esac
}

if [ "$XIW_ROLE" = b ]; then
	xiw_barrier nvme-ready 60
	bench_2vm_serve target
	log ok
	exit 0
fi
xiw_barrier nvme-ready 60

# one_run PROTO TAG: one round's jobs over PROTO (rdma, tcp) into r-, s-,
# l-, k4- and k128-PROTO
one_run() {
	local p=$1 tag=$2 kib
	rm -f "r-$p" "s-$p" "l-$p" "k4-$p" "k128-$p"
	bench_2vm_ask "up-$p"
	NVME_TRANSPORT=$p
	nvme_host_connect "$XIW_PEER_IP" "$NQN"
	log "$p: ${NVME_CTRL##*/} transport $(cat "$NVME_CTRL/transport")," \
	    "$(cat "$NVME_CTRL/address"), namespace $NVME_NS"
	run_timeout 300 dd if=/dev/zero of="$NVME_NS" bs=1M count=256 \
		oflag=direct status=none || fail "fill failed"
	bench_win_open "$tag-rand"
	fio_read rand4k randread 4k 16 >"r-$p"
	read -r _ _ kib _ <"r-$p"
	bench_win_close "$tag-rand" $((kib / 4)) read
	echo "$BENCH_WIN_KERN" >"k4-$p"
	bench_win_open "$tag-seq"
	fio_read seq128k read 128k 16 >"s-$p"
	read -r _ _ kib _ <"s-$p"
	bench_win_close "$tag-seq" $((kib / 128)) read
	echo "$BENCH_WIN_KERN" >"k128-$p"
	fio_read qd1 randread 4k 1 >"l-$p"
	expect_eq "$(cat "$NVME_CTRL/transport")" "$p" "transport after the runs"
	nvme_host_disconnect
	bench_2vm_ask down
}

declare -A runs val
for ((round = 1; round <= R; round++)); do
	log "round $round of $R"
	order=(rdma tcp)
	[ $((round % 2)) = 1 ] || order=(tcp rdma)
	for p in "${order[@]}"; do
		one_run "$p" "nvme-$round-$p"
		read -r iops _ <"r-$p"
		read -r _ mbps _ <"s-$p"
		read -r _ _ _ lat <"l-$p"
		read -r k4h k4t <"k4-$p"
		read -r k128h k128t <"k128-$p"
		log "$p: 4K randread QD16 $iops IOPS, 128K read $mbps MB/s, 4K QD1 $lat us; kernel CPU per 4K read host $k4h target $k4t us, per 128K read host $k128h target $k128t us"
		bench_add_run "$p" iops "$iops"
		bench_add_run "$p" mbps "$mbps"
		bench_add_run "$p" lat "$lat"
		bench_add_run "$p" k4h "$k4h"
		bench_add_run "$p" k4t "$k4t"
		bench_add_run "$p" k128h "$k128h"
		bench_add_run "$p" k128t "$k128t"
	done
done
bench_2vm_ask done
bench_medians

# row WHAT KEY [OP LIMIT]: the medians of KEY, xiw over NVMe/TCP, the
# goal (OP LIMIT, met or missed) if any
row() {
	local x=${val[rdma,$2]:-n/a} t=${val[tcp,$2]:-n/a} r g=
	r=$(bench_ratio "$x" "$t")
	if [ -n "${3:-}" ]; then
		g=$(awk -v r="$r" -v op="$3" -v l="$4" 'BEGIN { printf "%s %s", op, l
			if (r == "-") exit
			printf ": %s", (op == ">=" ? r + 0 >= l + 0 : r + 0 <= l + 0) ? "met" : "missed" }')
	fi
	echo "| $1 | $x | $t | $r | $g |"
}
{
	echo "| NVMe-oF between two VMs ($(nproc) vCPU each), fio on null_blk | nvme-rdma on xiw | NVMe/TCP | xiw/NVMe-TCP | goal |"
	echo "|---|---|---|---|---|"
	row "4 KiB random read, QD16, IOPS" iops ">=" 2.00
	row "128 KiB sequential read, QD16, MB/s" mbps ">=" 1.50
	row "4 KiB random read, QD1, mean latency us" lat
	row "host kernel CPU us per 4 KiB read" k4h
	row "target kernel CPU us per 4 KiB read" k4t
	row "host kernel CPU us per 128 KiB read" k128h "<=" 0.80
	row "target kernel CPU us per 128 KiB read" k128t "<=" 0.80
	echo
	echo "Each cell is the median of $R rounds, the transports taking turns in each"
	echo "round (XIW_BENCH_ROUNDS). Every run, in order:"
	echo
	bench_runs_list "iops mbps lat k4h k4t k128h k128t" "rdma tcp"
} | tee nvmeof-2vm-table.md | sed 's/^/BENCH /'
cp nvmeof-2vm-table.md "$XIW_TEST_OUT/nvmeof-2vm-table.md"
log ok
