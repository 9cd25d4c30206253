#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 3000
# description: make bench's NVMe-oF rows: fio on a null_blk namespace through nvme-rdma to nvmet-rdma on xiw, siw and rxe and through nvme-tcp to nvmet-tcp (what a user would pick instead), taking turns in XIW_BENCH_ROUNDS rounds (default 3; each cell the median): 4 KiB random read at queue depth 16 (IOPS), 128 KiB sequential read (MB/s), 4 KiB random read at queue depth 1 (mean latency), kernel CPU time per read; goals against NVMe/TCP and against siw and rxe, met or missed; nvmeof-table.md
. "$(dirname "${BASH_SOURCE[0]}")/../../selftests/lib.sh"
. "$XIW_SELFTESTS/nvmet_lib.sh"
#
# The host and the target are the same VM, over the measured transport's
# own address on a dummy netdev (the packets go through lo); NVMe/TCP has
# one of its own too, 192.0.2.4 on d3. The namespace is written once per
# connection (so reads are of stored data) and each job runs XIW_FIO_SECS
# (default 10) seconds, O_DIRECT, libaio, the same job on every transport.
# A transport whose run failed gets n/a for that round and the reason in
# the log. XIW_NVME_TCP= (empty) leaves NVMe/TCP out.

need_cmd fio dd
T=${XIW_FIO_SECS:-10}
R=${XIW_BENCH_ROUNDS:-3}
. "$XIW_ROOT/tools/bench/bench_lib.sh"
. "$XIW_ROOT/tools/bench/bench_devs.sh"
. "$XIW_ROOT/tools/bench/nvmeof_bench_lib.sh"
# NVMe/TCP: no RDMA device, an address of its own like the devices'
dummy_add d3
ip addr add 192.0.2.4/24 dev d3
addr[tcp]=192.0.2.4

# cost_snap DEV: "name value" lines: the VM's context switches, its busy
# CPU time (us: every CPU's time but idle and iowait), its kernel CPU time
# (us: system, irq and softirq, so not fio's user time: the work of the
# host driver, the target, the transport and TCP) with its three parts,
# and the packets through lo (host and target are this VM: xiw's, siw's
# and NVMe/TCP's TCP segments, pure ACKs included, all go there; rxe hands
# a packet for a local address from its requester to its receiver inside
# the driver, so it sends none) so far, then DEV's per-op counters (xiw's;
# none for siw, rxe and tcp). /proc/stat counts USER_HZ ticks.
cost_snap() {
	awk -v hz="$(getconf CLK_TCK)" '
		/^ctxt/ { print "ctxt", $2 }
		/^cpu / { b = 0; for (i = 2; i <= NF; i++) if (i != 5 && i != 6) b += $i
			  u = 1e6 / hz
			  printf "busy_us %.0f\nkern_us %.0f\n", b * u, ($4 + $7 + $8) * u
			  printf "sys_us %.0f\nirq_us %.0f\nsoftirq_us %.0f\n", $4 * u, $7 * u, $8 * u }' /proc/stat
	echo "lo_packets $(cat /sys/class/net/lo/statistics/tx_packets)"
	xiw_op_counters "$1"
}

# cost_per N BEFORE AFTER: each counter's growth over N I/Os
cost_per() {
	paste "$2" "$3" | awk -v n="$1" 'n > 0 { printf "%s %.2f\n", $1, ($4 - $2) / n }'
}

# nvme_profile DEV (XIW_NVME_PROFILE=1): one more run, a 4 KiB random
# read (XIW_NVME_PROFILE_JOB=128k: a 128 KiB sequential read instead),
# under perf record (all CPUs, cpu-clock samples: TCG has no PMU), after
# the measured ones; the symbols above 0.5% of the samples go to
# nvme-profile-DEV.txt and the log
nvme_profile() {
	need_cmd perf
	echo -1 >/proc/sys/kernel/perf_event_paranoid
	echo 0 >/proc/sys/kernel/kptr_restrict
	if [ "${XIW_NVME_PROFILE_JOB:-4k}" = 128k ]; then
		fio_job prof read 128k
	else
		fio_job prof randread 4k
	fi
	perf record -a -g -e cpu-clock -F 997 -o nvprof.data -- \
		"${fio_argv[@]}" >/dev/null 2>nvprof.err ||
		{ cat nvprof.err; fail "perf record of fio failed"; }
	perf report -i nvprof.data --stdio --no-children --sort dso,sym \
		--percent-limit 0.5 2>/dev/null | grep -v '^#' | sed '/^$/d' \
		>"nvme-profile-$1.txt" || true
	# inclusive: which paths (RX, TX work, the ULPs, fio) hold the time
	perf report -i nvprof.data --stdio --children --sort sym -g none \
		--percent-limit 3 2>/dev/null | grep -v '^#' | sed '/^$/d' \
		>"nvme-paths-$1.txt" || true
	cp "nvme-paths-$1.txt" "$XIW_TEST_OUT/" 2>/dev/null || true
	sed "s/^/# $1 profile: /" "nvme-profile-$1.txt" | head -60 >&2
	cp "nvme-profile-$1.txt" "$XIW_TEST_OUT/" 2>/dev/null || true
	rm -f nvprof.data
}

# one_run DEV: one round's runs on DEV (xiw0, siw0, rxe0: nvme-rdma on
# that device; tcp: nvme-tcp), into r-DEV (4 KiB QD16), s-DEV (128 KiB),
# l-DEV (4 KiB QD1), cost-DEV and cost128-DEV (per read). A subshell of
# its own, with its own deferred cleanup (traps are not inherited): a run
# that fails leaves n/a, not a dead bench.
one_run() (
	local dev=$1 nqn=nqn.2026-11.xiw:bench-$1 kib
	_xiw_deferred=()
	trap _xiw_on_exit EXIT
	rm -f "r-$dev" "s-$dev" "l-$dev" "cost-$dev" "cost128-$dev"
	NVME_TRANSPORT=rdma
	[ "$dev" != tcp ] || NVME_TRANSPORT=tcp
	nvmet_target "${addr[$dev]}" "$nqn"
	nvme_host_connect "${addr[$dev]}" "$nqn"
	log "$dev: ${NVME_CTRL##*/} transport $(cat "$NVME_CTRL/transport")," \
	    "$(cat "$NVME_CTRL/address"), namespace $NVME_NS"
	run_timeout 300 dd if=/dev/urandom of="$NVME_NS" bs=1M count=256 \
		oflag=direct status=none || fail "fill failed"
	cost_snap "$dev" >"c0-$dev"
	fio_read rand4k randread 4k >"r-$dev"
	cost_snap "$dev" >"c1-$dev"
	read -r _ _ kib _ <"r-$dev"
	cost_per $((kib / 4)) "c0-$dev" "c1-$dev" >"cost-$dev"
	fio_read seq128k read 128k >"s-$dev"
	cost_snap "$dev" >"c2-$dev"
	read -r _ _ kib _ <"s-$dev"
	cost_per $((kib / 128)) "c1-$dev" "c2-$dev" >"cost128-$dev"
	fio_read qd1 randread 4k 1 >"l-$dev"
	# the I/O went where it was meant to: the controller is still this
	# transport's after the runs
	expect_eq "$(cat "$NVME_CTRL/transport")" "$NVME_TRANSPORT" "transport after the runs"
	[ -z "${XIW_NVME_PROFILE:-}" ] || nvme_profile "$dev"
)

# runs[DEV,KEY]: every round's figure, in order ("n/a" for a failed run)
declare -A runs val

order=(${XIW_BENCH_DEVS:-${devs[@]}} ${XIW_NVME_TCP-tcp})
for ((round = 1; round <= R; round++)); do
	log "round $round of $R"
	for dev in "${order[@]}"; do
		[ "$dev" = tcp ] || dev_up "$dev"
		# in the background, so that errexit holds inside (a
		# condition's commands run without it)
		one_run "$dev" 2>"err-$dev" &
		# a run that failed (a check included) counts for nothing
		wait $! || {
			sed 's/^/#   /' "err-$dev" | tail -5
			rm -f "r-$dev" "s-$dev" "l-$dev" "cost-$dev" "cost128-$dev"
		}
		iops= mbps= qd1= lat= ctxt= busy= kern= kern128= pkts=
		[ ! -s "r-$dev" ] || read -r iops _ <"r-$dev"
		[ ! -s "s-$dev" ] || read -r _ mbps _ <"s-$dev"
		[ ! -s "l-$dev" ] || read -r qd1 _ _ lat <"l-$dev"
		if [ -s "cost-$dev" ]; then
			log "$dev: per 4K read: $(tr '\n' ' ' <"cost-$dev")"
			while read -r k v; do
				case $k in
				ctxt) ctxt=$v ;;
				busy_us) busy=$v ;;
				kern_us) kern=$v ;;
				lo_packets) pkts=$v ;;
				esac
			done <"cost-$dev"
		fi
		if [ -s "cost128-$dev" ]; then
			log "$dev: per 128K read: $(tr '\n' ' ' <"cost128-$dev")"
			kern128=$(awk '$1 == "kern_us" { print $2 }' "cost128-$dev")
		fi
		log "$dev: 4K randread QD16 ${iops:-n/a} IOPS, 128K read ${mbps:-n/a} MB/s, 4K randread QD1 ${qd1:-n/a} IOPS at ${lat:-n/a} us, kernel CPU ${kern:-n/a} us per 4K read, ${kern128:-n/a} us per 128K read"
		bench_add_run "$dev" iops "$iops"
		bench_add_run "$dev" mbps "$mbps"
		bench_add_run "$dev" lat "$lat"
		bench_add_run "$dev" kern "$kern"
		bench_add_run "$dev" kern128 "$kern128"
		bench_add_run "$dev" busy "$busy"
		bench_add_run "$dev" ctxt "$ctxt"
		bench_add_run "$dev" pkts "$pkts"
		[ "$dev" = tcp ] || dev_down "$dev"
	done
done
# median of the rounds that produced a figure; n/a if none did
bench_medians

ratio() { bench_ratio "$@"; }
best() {
	awk -v a="$1" -v b="$2" 'BEGIN { a += 0; b += 0; print (a > b ? a : b) }'
}
# lowest A B: the lower of two latencies (one that is n/a does not count)
lowest() {
	awk -v a="$1" -v b="$2" 'BEGIN { a += 0; b += 0
		print (a > 0 && (b <= 0 || a < b) ? a : b) }'
}
# goal RATIO OP LIMIT: "OP LIMIT: met" or "missed" ("OP LIMIT" when there
# is no ratio)
goal() {
	awk -v r="$1" -v op="$2" -v l="$3" 'BEGIN {
		printf "%s %s", op, l
		if (r == "-") exit
		ok = op == ">=" ? r + 0 >= l + 0 : r + 0 <= l + 0
		printf ": %s", ok ? "met" : "missed" }'
}
# row WHAT KEY BETTER [GOAL_TCP [GOAL_RDMA]]: a table row of KEY's medians,
# xiw over NVMe/TCP and xiw over the better (BETTER: higher or lower) of
# siw and rxe, each with its goal ("OP LIMIT", e.g. ">= 1.00"), if any
row() {
	local x=${val[xiw0,$2]:-n/a} t=${val[tcp,$2]:-n/a} s=${val[siw0,$2]:-n/a}
	local r=${val[rxe0,$2]:-n/a} rt rb g1= g2=
	rt=$(ratio "$x" "$t")
	if [ "$3" = lower ]; then
		rb=$(ratio "$x" "$(lowest "$s" "$r")")
	else
		rb=$(ratio "$x" "$(best "$s" "$r")")
	fi
	# shellcheck disable=SC2086 # "OP LIMIT": two words
	[ -z "${4:-}" ] || g1=$(goal "$rt" $4)
	# shellcheck disable=SC2086
	[ -z "${5:-}" ] || g2=$(goal "$rb" $5)
	echo "| $1 | $x | $t | $s | $r | $rt | $g1 | $rb | $g2 |"
}
{
	echo "| NVMe-oF, fio on null_blk: nvme-rdma to nvmet-rdma (xiw, siw, rxe), nvme-tcp to nvmet-tcp (NVMe/TCP) | xiw | NVMe/TCP | siw | rxe | xiw/NVMe-TCP | goal | xiw/better of siw, rxe | goal |"
	echo "|---|---|---|---|---|---|---|---|---|"
	row "4 KiB random read, QD16, IOPS" iops higher ">= 1.00" ">= 1.20"
	row "128 KiB sequential read, QD16, MB/s" mbps higher ">= 1.00" ">= 1.20"
	row "4 KiB random read, QD1, mean latency us" lat lower
	row "kernel CPU us per 4 KiB read (system+irq+softirq, whole VM)" kern lower "<= 1.00"
	row "kernel CPU us per 128 KiB read (system+irq+softirq, whole VM)" kern128 lower "<= 1.00"
	row "busy CPU us per 4 KiB read (all but idle and iowait: fio's user time too)" busy lower
	row "context switches per 4 KiB read (whole VM)" ctxt lower
	row "packets through lo per 4 KiB read (TCP segments and ACKs; rxe loops back inside the driver)" pkts lower
	echo
	echo "Each cell is the median of $R rounds, the transports taking turns in each"
	echo "round (XIW_BENCH_ROUNDS); the CPU rows are /proc/stat's time over the"
	echo "I/Os of the QD16 runs (2 vCPUs, host and target in the VM). Every run, in order:"
	echo
	bench_runs_list "iops mbps lat kern kern128 busy ctxt pkts" "xiw0 tcp siw0 rxe0"
} | tee nvmeof-table.md | sed 's/^/BENCH /'
cp nvmeof-table.md "$XIW_TEST_OUT/nvmeof-table.md"
[ "${val[xiw0,iops]:-n/a}" != n/a ] || fail "no NVMe-oF figure for xiw"
