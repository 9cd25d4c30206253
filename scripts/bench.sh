#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make bench: the performance table - perftest (-R) on xiw, siw (built
# from linux-source-6.12) and rxe side by side in one VM, and the TCP
# floors measured in the same rounds (xiw_tcp_pingpong's busy-polled
# 8-byte round trip, pipelined echo of FetchAdd-sized FPDUs and 64 KiB
# stream; iperf3), then the goals (Documentation/performance.md) with
# their ratios against those floors and xiw.ko's instruction budgets
# (from insn_profile below);
# then the curves (bandwidth and latency vs message size, the latency
# distribution of 8-byte Reads and FetchAdds: PNGs under build/, drawn by
# scripts/bench_plot.sh), NVMe-oF with fio on each device and on
# NVMe/TCP, NFS over RDMA on xiw against NFS over TCP (each in one VM,
# and between two: nvmeof_bench_2vm, nfs_bench_2vm), the two-VM rows
# (Write bandwidth, Read and FetchAdd latency, FetchAdd rate on xiw, siw
# and rxe over UDP, against the two-VM TCP round trip and iperf3), MPI
# between the two VMs (mpi_bench: hpcc and xiw_mpi_check over xiw, siw
# and Open MPI's TCP BTL), the two-VM bulk A/B of xiw's TX settings
# (perf_ab_2vm: Write, Read and Send bandwidth at 64 KiB and 1 MiB for
# the defaults, one-segment FPDUs and zero copy, against iperf3; ~40 min under
# TCG; XIW_BENCH_AB2VM=0 leaves it out), the two-VM curves (curve_2vm:
# Write bandwidth from 4 KiB to 4 MiB on xiw and siw against iperf3 and
# the busy-polled TCP stream, and the 64 KiB and 1 MiB rows with netem
# delay and loss on the link; ~30 min; XIW_BENCH_CURVE=0 leaves it
# out), where a single QP's stream
# between the two VMs spends its CPU against TCP's (prof_2vm: perftest
# and qperf against qperf and iperf3, CPU shares and TCP state), where
# the CPU time of a small op goes on xiw (profile_ops: per-op counters,
# context switches and perf's hottest symbols);
# then guest instructions per op per kernel function for xiw, siw and
# rxe (insn_profile, counted by qemu: tools/tcgprof);
# then xiw_commitlog (a remote commit log: push with Flush and Atomic
# Write against Send/Recv) on DRAM and emulated persistent memory, in a
# VM of its own with an NVDIMM; then a 1 GiB RDMA Verify (crc32c) in the
# background while another QP's Reads go on (commit_verifybg with
# XIW_VERIFYBG_MIB, default 1024; the VMs get XIW_VM_MEM, default 3072 MiB).
# XIW_BENCH_ITERS (default 2000) iterations per perftest run (the FetchAdd
# rate: XIW_BENCH_RATE_ITERS, default 50 times that),
# XIW_BENCH_COMMITS (default 2000) commits per xiw_commitlog run. Not part of
# make check: it takes several minutes and its figures are not pass/fail.
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/bench/bench_lib.sh
BUILD=${XIW_BUILD:-$PWD/build}
export XIW_BUILD=$BUILD

bash selftests/build-siw.sh >/dev/null ||
	echo "bench: cannot build siw.ko, its column stays empty" >&2
out=$(mktemp)
trap 'rm -f "$out" "$out.links" "$out.insn"' EXIT
export XIW_VM_MEM=${XIW_VM_MEM:-3072}
# mpi_bench: Open MPI between the two VMs over xiw, siw and TCP (hpcc and
# xiw_mpi_check; three rounds, ~45 min under TCG); XIW_BENCH_MPI=0 leaves it out
mpi_bench=tools/bench/mpi_bench.sh
[ "${XIW_BENCH_MPI:-1}" != 0 ] || mpi_bench=
ab2vm=tools/bench/perf_ab_2vm.sh
[ "${XIW_BENCH_AB2VM:-1}" != 0 ] || ab2vm=
# curve_2vm: Write bandwidth from 4 KiB to 4 MiB between the VMs on xiw,
# siw and TCP, and the 64 KiB and 1 MiB rows on a link with delay and
# loss (~30 min under TCG); XIW_BENCH_CURVE=0 leaves it out
curve2vm=tools/bench/curve_2vm.sh
[ "${XIW_BENCH_CURVE:-1}" != 0 ] || curve2vm=
# perf_2vm: two VMs of one vCPU each (run.sh's default), so that the two
# "hosts" do not take each other's cores on a 2-core machine
# (Documentation/testing.md, "Two VMs"); XIW_VM_SMP_2VM=2 for 2 each.
bash selftests/run.sh -e XIW_VERIFYBG_MIB="${XIW_VERIFYBG_MIB:-1024}" \
	tools/bench/perf_table.sh tools/bench/perf_sweep.sh \
	tools/bench/nvmeof_bench.sh tools/bench/nfs_bench.sh \
	tools/bench/nvmeof_bench_2vm.sh tools/bench/nfs_bench_2vm.sh \
	tools/bench/perf_2vm.sh \
	$mpi_bench $ab2vm $curve2vm tools/bench/prof_2vm.sh tools/bench/profile_ops.sh tools/bench/commitlog.sh \
	selftests/tests/commit_verifybg.sh >"$out" 2>&1 || {
	cat "$out"
	exit 1
}
run=$(sed -n 's/^# results in \([^ ]*\) .*/\1/p' "$out" | tail -1)
# Guest instructions per op, per kernel function, xiw beside siw and rxe,
# counted by qemu (tools/tcgprof): a VM of its own, since the plugin
# slows every guest instruction down. The goal table needs xiw0's
# read_lat, write_lat and atomic_rate rows.
insn_rows=${XIW_INSN_ROWS:-write_lat send_lat read_lat atomic_lat atomic_rate}
for r in write_lat read_lat atomic_rate; do
	[[ " $insn_rows " == *" $r "* ]] || insn_rows+=" $r"
done
itable='' irun=''
if cmake --build "$BUILD" --target xiw_tcgprof >/dev/null 2>&1 &&
   XIW_INSN_ROWS=$insn_rows XIW_QEMU=$PWD/tools/tcgprof/qemu-tcgprof.sh \
	bash selftests/run.sh tools/bench/insn_profile.sh >"$out.insn" 2>&1; then
	irun=$(sed -n 's/^# results in \([^ ]*\) .*/\1/p' "$out.insn" | tail -1)
	itable=$irun/1vm/tests/insn-table.md
fi
[ -n "$itable" ] && [ -f "$itable" ] || itable=

goal() { bench_goal_row "$@"; }
# insn ROW: instructions per op in xiw.ko for xiw0's ROW, or n/a
insn() {
	[ -n "$itable" ] || { echo n/a; return; }
	awk -F' *[|] *' -v r="$1" '$2 == r && $3 == "xiw0" { v = $5 }
		END { print (v != "" ? v : "n/a") }' "$itable"
}
table=$run/1vm/tests/bench-table.md
[ -f "$table" ] || { cat "$out"; echo "bench: no table" >&2; exit 1; }
echo "xiw bench, $(date -u +%Y-%m-%d), ${XIW_BENCH_ITERS:-2000} iterations" \
     "per run, one TCG VM with 2 vCPUs (figures move from run to run)"
cat "$table"
cp "$table" "$BUILD/bench-table.md"
gtable=$run/1vm/tests/bench-goals.md
if [ -f "$gtable" ]; then
	{
		echo
		echo "Goals, each against the floor of the same run (TCP) or"
		echo "the budget (xiw.ko's own instructions per op, insn_profile):"
		echo
		cat "$gtable"
		goal "xiw.ko instructions per op, Read 8 B (read_lat): <= 2,000" "$(insn read_lat)" 2000 "<=" 1
		goal "xiw.ko instructions per op, Write 8 B (write_lat): <= 1,000" "$(insn write_lat)" 1000 "<=" 1
		goal "xiw.ko instructions per op, FetchAdd at the rate (atomic_rate): <= 1,500" "$(insn atomic_rate)" 1500 "<=" 1
	} | tee -a "$BUILD/bench-table.md"
fi
ntable=$run/1vm/tests/nvmeof-table.md
if [ -f "$ntable" ]; then
	echo
	cat "$ntable"
	{ echo; cat "$ntable"; } >>"$BUILD/bench-table.md"
fi
ftable=$run/1vm/tests/nfs-table.md
if [ -f "$ftable" ]; then
	echo
	cat "$ftable"
	{ echo; cat "$ftable"; } >>"$BUILD/bench-table.md"
fi
ttable=$run/2vm/a/tests/perf-2vm-table.md
if [ -f "$ttable" ]; then
	echo
	cat "$ttable"
	{ echo; cat "$ttable"; } >>"$BUILD/bench-table.md"
fi
atable=$run/2vm/a/tests/ab-2vm-table.md
if [ -f "$atable" ]; then
	echo
	cat "$atable"
	{ echo; cat "$atable"; } >>"$BUILD/bench-table.md"
fi
ctable=$run/2vm/a/tests/curve-2vm-table.md
if [ -f "$ctable" ]; then
	echo
	cat "$ctable"
	{ echo; cat "$ctable"; } >>"$BUILD/bench-table.md"
fi
mtable=$run/2vm/a/tests/mpi-table.md
if [ -f "$mtable" ]; then
	echo
	cat "$mtable"
	{ echo; cat "$mtable"; } >>"$BUILD/bench-table.md"
fi
ptable=$run/1vm/tests/profile-table.md
if [ -f "$ptable" ]; then
	echo
	echo "Per-op costs of small ops on xiw0 (profile_ops: requester and" \
	     "responder in one VM; hottest symbols in $run/1vm/tests/profile-*.txt):"
	cat "$ptable"
	{ echo; cat "$ptable"; } >>"$BUILD/bench-table.md"
fi
# the pictures, linked from the table
if bash scripts/bench_plot.sh "$run/1vm/tests" "$BUILD" >"$out.links"; then
	cat "$out.links"
	cat "$out.links" >>"$BUILD/bench-table.md"
else
	echo "bench: no pictures (see above)" >&2
fi
if [ -n "$itable" ]; then
	echo
	echo "Guest instructions per op (insn_profile; per function in $irun/1vm/tests/insn-*.txt):"
	cat "$itable"
	{ echo; cat "$itable"; } >>"$BUILD/bench-table.md"
else
	echo "bench: no instruction counts:" >&2
	tail -20 "$out.insn" >&2 || true
fi
ctable=$run/own/commitlog/tests/commitlog-table.md
[ -f "$ctable" ] || { cat "$out"; echo "bench: no commitlog table" >&2; exit 1; }
echo
echo "xiw_commitlog: ${XIW_BENCH_COMMITS:-2000} commits per run (latency: one at a time), between xiw1" \
     "and xiw0 of one TCG VM (an NVDIMM backed by a host file for pmem)"
cat "$ctable"
cp "$ctable" "$BUILD/commitlog-table.md"
echo
echo "RDMA Verify of ${XIW_VERIFYBG_MIB:-1024} MiB (crc32c, in the responder's exec work) while" \
     "another QP runs 8-byte RDMA Reads, one VM:"
grep -hE '^# (VERIFY|READS) ' "$run"/1vm/tests/commit_verifybg.log | sed 's/^# /    /'
echo "(also in $BUILD/bench-table.md and $BUILD/commitlog-table.md; logs in $run)"
