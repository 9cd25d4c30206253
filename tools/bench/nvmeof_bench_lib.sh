# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# The NVMe-oF benches' fio jobs (nvmeof_bench, nvmeof_bench_2vm; sourced
# after lib.sh): the caller sets T (seconds per job) and NVME_NS (the
# namespace's block device, nvme_host_connect's).

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
