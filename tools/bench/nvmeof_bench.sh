#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 1200
# description: make bench's NVMe-oF rows: fio through nvme-rdma to an nvmet-rdma target on null_blk, 4 KiB random read at queue depth 16 (IOPS), 128 KiB sequential read (MB/s) and 4 KiB random read at queue depth 1 (mean latency), on xiw, siw and rxe in turn; nvmeof-table.md
. "$(dirname "${BASH_SOURCE[0]}")/../../selftests/lib.sh"
. "$XIW_SELFTESTS/nvmet_lib.sh"
#
# The host and the target are the same VM, over the measured device's own
# address; the namespace is written once (so reads are of stored data)
# and each job runs XIW_FIO_SECS (default 10) seconds, O_DIRECT, libaio.
# A device whose run failed gets n/a and the reason in the log.

need_cmd fio dd
T=${XIW_FIO_SECS:-10}
. "$XIW_ROOT/tools/bench/bench_lib.sh"
. "$XIW_ROOT/tools/bench/bench_devs.sh"

# fio_job NAME RW BS [QD]: the fio command line of one read job on
# $NVME_NS (queue depth QD, default 16, O_DIRECT, libaio, T seconds, terse
# output) in fio_argv
fio_job() {
	fio_argv=(fio --name="$1" --filename="$NVME_NS" --rw="$2" --bs="$3"
		  --iodepth="${4:-16}" --ioengine=libaio --direct=1 --time_based
		  --runtime="$T" --size=256M --minimal)
}

# fio_read NAME RW BS [QD]: "IOPS MB/s KiB LAT" of one read job (terse
# v3: field 6 the KiB read, 7 the read bandwidth in KiB/s, 8 the IOPS, 40
# the mean total latency in us)
fio_read() {
	local t
	fio_job "$@"
	t=$(run_timeout $((T + 60)) "${fio_argv[@]}") || fail "fio $1 failed"
	awk -F';' '{ printf "%d %.1f %d %.1f\n", $8, $7 * 1024 / 1e6, $6, $40 }' <<<"$t"
}

# cost_snap DEV: the VM's context switches, busy CPU time (us: every
# CPU's time but idle and iowait, USER_HZ ticks) and packets through lo
# (host and target are this VM: xiw's and siw's TCP segments, pure ACKs
# included, all go there; rxe hands a packet for a local address from its
# requester to its receiver inside the driver, so it sends none) so far,
# and DEV's per-op counters (xiw's; none for siw and rxe), "name value"
# lines
cost_snap() {
	awk -v hz="$(getconf CLK_TCK)" '
		/^ctxt/ { print "ctxt", $2 }
		/^cpu / { b = 0; for (i = 2; i <= NF; i++) if (i != 5 && i != 6) b += $i
			  printf "busy_us %.0f\n", b * 1e6 / hz }' /proc/stat
	echo "lo_packets $(cat /sys/class/net/lo/statistics/tx_packets)"
	xiw_op_counters "$1"
}

# nvme_profile DEV (XIW_NVME_PROFILE=1): one more 4 KiB random read run,
# under perf record (all CPUs, cpu-clock samples: TCG has no PMU), after
# the measured ones; the symbols above 0.5% of the samples go to
# nvme-profile-DEV.txt and the log
nvme_profile() {
	need_cmd perf
	echo -1 >/proc/sys/kernel/perf_event_paranoid
	echo 0 >/proc/sys/kernel/kptr_restrict
	fio_job prof randread 4k
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

declare -A iops mbps qd1 lat ctxt busy pkts
for dev in ${XIW_BENCH_DEVS:-${devs[@]}}; do
	dev_up "$dev"
	# a subshell of its own, with its own deferred cleanup (traps are
	# not inherited): a device that fails leaves n/a, not a dead run
	if (
		_xiw_deferred=()
		trap _xiw_on_exit EXIT
		nvmet_target "${addr[$dev]}" "nqn.2026-11.xiw:bench-$dev"
		nvme_host_connect "${addr[$dev]}" "nqn.2026-11.xiw:bench-$dev"
		run_timeout 300 dd if=/dev/urandom of="$NVME_NS" bs=1M count=256 \
			oflag=direct status=none || fail "fill failed"
		cost_snap "$dev" >"c0-$dev"
		fio_read rand4k randread 4k >"r-$dev"
		cost_snap "$dev" >"c1-$dev"
		# per 4 KiB read: the counters' growth over the I/Os done
		read -r _ _ kib _ <"r-$dev"
		paste "c0-$dev" "c1-$dev" | awk -v n=$((kib / 4)) '
			n > 0 { printf "%s %.2f\n", $1, ($4 - $2) / n }' >"cost-$dev"
		fio_read seq128k read 128k >"s-$dev"
		fio_read qd1 randread 4k 1 >"l-$dev"
		[ -z "${XIW_NVME_PROFILE:-}" ] || nvme_profile "$dev"
	) 2>err-$dev; then
		read -r iops[$dev] _ <"r-$dev"
		read -r _ mbps[$dev] _ <"s-$dev"
		read -r qd1[$dev] _ _ lat[$dev] <"l-$dev"
	else
		sed 's/^/#   /' "err-$dev" | tail -5
	fi
	log "$dev: 4K randread QD16 ${iops[$dev]:-n/a} IOPS, 128K read ${mbps[$dev]:-n/a} MB/s, 4K randread QD1 ${qd1[$dev]:-n/a} IOPS at ${lat[$dev]:-n/a} us"
	[ -s "cost-$dev" ] && {
		log "$dev: per 4K read: $(tr '\n' ' ' <"cost-$dev")"
		while read -r k v; do
			case $k in
			ctxt) ctxt[$dev]=$v ;;
			busy_us) busy[$dev]=$v ;;
			lo_packets) pkts[$dev]=$v ;;
			esac
		done <"cost-$dev"
	}
	dev_down "$dev"
done

ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN {
		if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "-" }'
}
best() {
	awk -v a="$1" -v b="$2" 'BEGIN { a += 0; b += 0; print (a > b ? a : b) }'
}
# lowest A B: the lower of two latencies (one that is n/a does not count)
lowest() {
	awk -v a="$1" -v b="$2" 'BEGIN { a += 0; b += 0
		print (a > 0 && (b <= 0 || a < b) ? a : b) }'
}
{
	echo "| NVMe-oF (fio, nvme-rdma to nvmet-rdma on null_blk) | xiw | siw | rxe | xiw/better of siw, rxe | goal |"
	echo "|---|---|---|---|---|---|"
	x=${iops[xiw0]:-n/a} s=${iops[siw0]:-n/a} r=${iops[rxe0]:-n/a}
	echo "| 4 KiB random read, QD16, IOPS | $x | $s | $r | $(ratio "$x" "$(best "$s" "$r")") | >= 1.20 |"
	x=${mbps[xiw0]:-n/a} s=${mbps[siw0]:-n/a} r=${mbps[rxe0]:-n/a}
	echo "| 128 KiB sequential read, QD16, MB/s | $x | $s | $r | $(ratio "$x" "$(best "$s" "$r")") | >= 1.20 |"
	x=${lat[xiw0]:-n/a} s=${lat[siw0]:-n/a} r=${lat[rxe0]:-n/a}
	echo "| 4 KiB random read, QD1, mean latency us | $x | $s | $r | $(ratio "$x" "$(lowest "$s" "$r")") (xiw/lower) | |"
	echo "| context switches per 4 KiB read (whole VM) | ${ctxt[xiw0]:-n/a} | ${ctxt[siw0]:-n/a} | ${ctxt[rxe0]:-n/a} | | |"
	echo "| busy CPU us per 4 KiB read (whole VM, 2 vCPUs) | ${busy[xiw0]:-n/a} | ${busy[siw0]:-n/a} | ${busy[rxe0]:-n/a} | | |"
	echo "| packets through lo per 4 KiB read (TCP segments and ACKs; rxe loops back inside the driver) | ${pkts[xiw0]:-n/a} | ${pkts[siw0]:-n/a} | ${pkts[rxe0]:-n/a} | | |"
} | tee nvmeof-table.md | sed 's/^/BENCH /'
cp nvmeof-table.md "$XIW_TEST_OUT/nvmeof-table.md"
[ -n "${iops[xiw0]:-}" ] || fail "no NVMe-oF figure for xiw"
