# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# The NFS benches' fio jobs and counters (nfs_bench, nfs_bench_2vm;
# sourced after lib.sh): the caller sets T (seconds per job) and MB (the
# size of each file).

# fio_job NAME RW BS QD FILE: the argv of one fio job on mnt/FILE
# (libaio, O_DIRECT, T seconds, MB MiB) in fio_argv
fio_job() {
	fio_argv=(fio --name="$1" --filename="mnt/$5" --rw="$2" --bs="$3"
		  --iodepth="$4" --ioengine=libaio --direct=1 --time_based
		  --runtime="$T" --size=${MB}M)
}

# fio_run NAME RW BS QD FILE: "IOPS MB/s KiB" of one job (terse v3: fields
# 6-8 the KiB read, KiB/s and IOPS of reads, 47-49 those of writes)
fio_run() {
	local t
	fio_job "$@"
	t=$(run_timeout $((T + 60)) "${fio_argv[@]}" --minimal) ||
		fail "fio $1 failed"
	awk -F';' '{ f = $6 > 0 ? 6 : 47
		printf "%d %.1f %d\n", $(f + 2), $(f + 1) * 1024 / 1e6, $f }' <<<"$t"
}

# mount_stat DIR OP: with OP "xprt" the transport of the mount on DIR,
# else the RPC count of OP on it (/proc/self/mountstats); OP "reads" is
# READ and READ_PLUS together (the NFSv4.2 client reads with READ_PLUS
# over TCP, with READ over RDMA)
mount_stat() {
	awk -v d=" $PWD/$1 " -v op="$2" '
		/^device / { m = index($0, d) > 0 }
		m && op == "xprt" && $1 == "xprt:" { print $2; exit }
		m && ($1 == op ":" || op == "reads" && ($1 == "READ:" || $1 == "READ_PLUS:")) { n += $2 }
		END { if (op != "xprt") print n + 0 }' /proc/self/mountstats
}

# row WHAT KEY [OP LIMIT]: the medians of KEY, xiw over TCP, the goal
# (OP LIMIT, met or missed) if any
row() {
	local x=${val[rdma,$2]:-n/a} t=${val[tcp,$2]:-n/a}
	awk -v w="$1" -v a="$x" -v b="$t" -v op="${3:-}" -v l="${4:-}" 'BEGIN {
		r = "-"; if (a + 0 > 0 && b + 0 > 0) r = sprintf("%.2f", a / b)
		g = ""
		if (op != "") {
			g = op " " l
			if (r != "-") g = g ": " ((op == ">=" ? r + 0 >= l + 0 : r + 0 <= l + 0) ? "met" : "missed")
		}
		printf "| %s | %s | %s | %s | %s |\n", w, a, b, r, g }'
}
