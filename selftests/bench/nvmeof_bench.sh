#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 1200
# description: make bench's NVMe-oF rows: fio through nvme-rdma to an nvmet-rdma target on null_blk, 4 KiB random read at queue depth 16 (IOPS) and 128 KiB sequential read (MB/s), on xiw, siw and rxe in turn; nvmeof-table.md
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$XIW_ROOT/selftests/nvmet_lib.sh"
#
# The host and the target are the same VM, over the measured device's own
# address; the namespace is written once (so reads are of stored data)
# and each job runs XIW_FIO_SECS (default 10) seconds, O_DIRECT, libaio.
# A device whose run failed gets n/a and the reason in the log.

need_cmd fio dd
T=${XIW_FIO_SECS:-10}
. "$XIW_ROOT/selftests/bench/bench_lib.sh"
. "$XIW_ROOT/selftests/bench/bench_devs.sh"

# fio_read NAME RW BS: "IOPS MB/s KiB" of one read job on $NVME_NS (terse
# v3: field 6 the KiB read, 7 the read bandwidth in KiB/s, 8 the IOPS)
fio_read() {
	local t
	t=$(run_timeout $((T + 60)) fio --name="$1" --filename="$NVME_NS" \
		--rw="$2" --bs="$3" --iodepth=16 --ioengine=libaio --direct=1 \
		--time_based --runtime="$T" --size=256M --minimal) ||
		fail "fio $1 failed"
	awk -F';' '{ printf "%d %.1f %d\n", $8, $7 * 1024 / 1e6, $6 }' <<<"$t"
}

# cost_snap DEV: the VM's context switches so far and DEV's per-op
# counters (xiw's; none for siw and rxe), "name value" lines
cost_snap() {
	awk '/^ctxt/ { print "ctxt", $2 }' /proc/stat
	xiw_op_counters "$1"
}

declare -A iops mbps ctxt
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
		read -r _ _ kib <"r-$dev"
		paste "c0-$dev" "c1-$dev" | awk -v n=$((kib / 4)) '
			n > 0 { printf "%s %.2f\n", $1, ($4 - $2) / n }' >"cost-$dev"
		fio_read seq128k read 128k >"s-$dev"
	) 2>err-$dev; then
		read -r iops[$dev] _ <"r-$dev"
		read -r _ mbps[$dev] _ <"s-$dev"
	else
		sed 's/^/#   /' "err-$dev" | tail -5
	fi
	log "$dev: 4K randread QD16 ${iops[$dev]:-n/a} IOPS, 128K read ${mbps[$dev]:-n/a} MB/s"
	[ -s "cost-$dev" ] && {
		log "$dev: per 4K read: $(tr '\n' ' ' <"cost-$dev")"
		read -r _ ctxt[$dev] <"cost-$dev"
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
{
	echo "| NVMe-oF (fio, nvme-rdma to nvmet-rdma on null_blk) | xiw | siw | rxe | xiw/better of siw, rxe | goal |"
	echo "|---|---|---|---|---|---|"
	x=${iops[xiw0]:-n/a} s=${iops[siw0]:-n/a} r=${iops[rxe0]:-n/a}
	echo "| 4 KiB random read, QD16, IOPS | $x | $s | $r | $(ratio "$x" "$(best "$s" "$r")") | >= 1.20 |"
	x=${mbps[xiw0]:-n/a} s=${mbps[siw0]:-n/a} r=${mbps[rxe0]:-n/a}
	echo "| 128 KiB sequential read, QD16, MB/s | $x | $s | $r | $(ratio "$x" "$(best "$s" "$r")") | >= 1.20 |"
	echo "| context switches per 4 KiB read (whole VM) | ${ctxt[xiw0]:-n/a} | ${ctxt[siw0]:-n/a} | ${ctxt[rxe0]:-n/a} | | |"
} | tee nvmeof-table.md | sed 's/^/BENCH /'
cp nvmeof-table.md "$XIW_TEST_OUT/nvmeof-table.md"
[ -n "${iops[xiw0]:-}" ] || fail "no NVMe-oF figure for xiw"
