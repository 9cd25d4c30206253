#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 2vm
# timeout: 5400
# description: make bench's MPI rows: Open MPI between two VMs, one rank each, over xiw and siw (PML cm, OFI MTL, libfabric verbs;ofi_rxm) and over Open MPI's TCP BTL, taking turns in XIW_BENCH_MPI_ROUNDS rounds (default 3; medians and spread): xiw_mpi_check (ping-pong latency 8 B and bandwidth 1 MiB, allreduce latency and bandwidth) and hpcc (PingPong, MPIRandomAccess, PTRANS); mpi-table.md
. "$(dirname "${BASH_SOURCE[0]}")/../../selftests/lib.sh"
. "$XIW_ROOT/tools/bench/bench_lib.sh"
. "$XIW_SELFTESTS/mpi_lib.sh"
#
# mpirun on a, the other rank on b through mpi_lib.sh's rsh agent; one
# RDMA device at a time on both VMs (the other deleted), so libfabric can
# only open that one, checked in every rank's log. Every job's results are
# checked (xiw_mpi_check's own verification, the same result line on every
# transport; hpcc's residuals and error counts); a job that fails counts
# n/a. hpcc: a 1 x 2 grid, N = XIW_BENCH_HPCC_N (default 1024): PingPong
# latency and bandwidth are hpcc's (8 B and 2 MB messages, the worst pair),
# MPIRandomAccess the GUP/s of the whole job, PTRANS the GB/s of its
# transposes (XIW_BENCH_HPCC=0 leaves hpcc out). XIW_BENCH_MPI_ITERS (default 1000) latency iterations and
# a tenth of that (at least 10) 1 MiB ones for xiw_mpi_check.

need_cmd hpcc
need_prog xiw_mpi_check >/dev/null
R=${XIW_BENCH_MPI_ROUNDS:-3}
N=${XIW_BENCH_HPCC_N:-1024}
IT=${XIW_BENCH_MPI_ITERS:-1000}
BI=$(( IT / 10 > 10 ? IT / 10 : 10 ))
HPCC=${XIW_BENCH_HPCC:-1}	# 0: xiw_mpi_check only
declare -A runs

bench_2vm_devs siw

mpi_hosts 10.77.0.1 10.77.0.2
hpcc_input 1 2 "$N" 64

# note T KEY V: a run's figure (or n/a) to runs[T,KEY]
note() {
	runs[$1,$2]="${runs[$1,$2]:-}${runs[$1,$2]:+ }$3"
	log "round $round, $1 $2: $3"
}

# job NAME TRANSPORT-ARGS... -- PROG...: one mpirun from a (b waits);
# returns mpirun's status on a, 0 on b
job() {
	local name=$1 rc=0
	shift
	xiw_barrier "$name-start" 120
	if [ "$XIW_ROLE" = a ]; then
		run_timeout 1200 mpirun -np 2 --hostfile hosts --map-by node \
			--bind-to none "$@" >"$name.log" 2>&1 || rc=$?
	fi
	xiw_sync "$name-end" "$rc" 1300 >/dev/null || fail "$name: peer lost"
	return "$rc"
}

# transport T DEV|tcp: both jobs over T, figures to runs[T,*]
result_ref=
transport() {
	local t=$1 dev=$2 args r ok
	if [ "$dev" = tcp ]; then
		args=("${MPI_TCP[@]}")
	else
		args=("${MPI_XIW[@]}")
		rdma link add "$dev" type "${type[$dev]}" netdev "$XIW_NETDEV"
		wait_port_state "$dev" PORT_ACTIVE 5
	fi
	ok=1
	job "check-$t-$round" "${args[@]}" xiw_mpi_check -n "$IT" -b "$BI" || ok=0
	if [ "$XIW_ROLE" = a ]; then
		f=check-$t-$round.log
		[ $ok = 1 ] && [ "$dev" != tcp ] && ! (mpi_ofi_check "$f" 2 "$dev") && ok=0
		r=$( (mpi_check_result "$f") 2>/dev/null) || ok=0
		if [ $ok = 1 ]; then
			[ -n "$result_ref" ] || result_ref=$r
			[ "$r" = "$result_ref" ] || { log "$t: result $r, first run $result_ref"; ok=0; }
		fi
		for k in lat_us bw_MBps allreduce_us allreduce_MBps; do
			v=n/a
			[ $ok = 0 ] || v=$(grep -o "$k=[0-9.]*" "$f" | cut -d= -f2)
			note "$t" "$k" "$v"
		done
		[ $ok = 1 ] || { log "$t: xiw_mpi_check failed:"; tail -n 20 "$f"; }
	fi
	ok=1
	if [ "$HPCC" = 0 ]; then
		:
	elif ! job "hpcc-$t-$round" "${args[@]}" hpcc; then
		ok=0
	fi
	if [ "$XIW_ROLE" = a ] && [ "$HPCC" != 0 ]; then
		f=hpcc-$t-$round.log
		[ $ok = 1 ] && [ "$dev" != tcp ] && ! (mpi_ofi_check "$f" 2 "$dev") && ok=0
		[ $ok = 0 ] || (hpcc_check hpccoutf.txt) || ok=0
		cp hpccoutf.txt "$XIW_TEST_OUT/hpccoutf-$t-$round.txt" 2>/dev/null || true
		for k in MaxPingPongLatency_usec MinPingPongBandwidth_GBytes \
			 MPIRandomAccess_GUPs PTRANS_GBs; do
			v=n/a
			[ $ok = 0 ] || v=$(hpcc_value hpccoutf.txt "$k")
			note "$t" "$k" "${v:-n/a}"
		done
		rm -f hpccoutf.txt
	fi
	if [ "$dev" != tcp ]; then
		rdma link delete "$dev"
		wait_for 5 eval "! ib_dev_exists $dev" || fail "$dev still registered"
		xiw_barrier "$dev-down-$round" 60
	fi
}

ts=()
for d in "${devs[@]}"; do ts+=("${d%0}:$d"); done
ts+=(tcp:tcp)
for round in $(seq 1 "$R"); do
	for i in "${!ts[@]}"; do
		x=${ts[(i + round - 1) % ${#ts[@]}]}
		transport "${x%%:*}" "${x#*:}"
	done
done
[ "$XIW_ROLE" = a ] || exit 0

cols=()
for x in "${ts[@]}"; do cols+=("${x%%:*}"); done
m() { bench_median "${runs[$1,$2]:-n/a}"; }
{
	echo "MPI between two VMs (one rank each, Open MPI 4.1; xiw and siw: PML cm, OFI MTL, libfabric verbs;ofi_rxm; tcp: Open MPI's TCP BTL), median of $R round(s), with the lowest and highest round:"
	echo
	printf '| |'; printf ' %s |' "${cols[@]}"; echo
	printf '|---|'; printf -- '---|%.0s' "${cols[@]}"; echo
	# a cell: the median, and with more than one round the spread of
	# the rounds, "M (L-H)", each times SCALE
	row() {
		local label=$1 key=$2 scale=${3:-1} c v r
		printf '| %s |' "$label"
		for c in "${cols[@]}"; do
			v=$(m "$c" "$key")
			r=${runs[$c,$key]:-n/a}
			[ "$v" = n/a ] || v=$(awk -v s="$scale" -v m="$v" \
				-v l="$(bench_best "$r" low)" -v h="$(bench_best "$r" high)" \
				-v n="$R" 'BEGIN { printf "%.4g", m * s
					if (n > 1) printf " (%.4g-%.4g)", l * s, h * s }')
			printf ' %s |' "$v"
		done
		echo
	}
	row "xiw_mpi_check ping-pong latency 8 B, us" lat_us
	row "xiw_mpi_check ping-pong bandwidth 1 MiB, MB/s" bw_MBps
	row "xiw_mpi_check allreduce latency 8 B, us" allreduce_us
	row "xiw_mpi_check allreduce 1 MiB, MB/s" allreduce_MBps
	[ "$HPCC" = 0 ] ||
	row "hpcc PingPong latency (max), us" MaxPingPongLatency_usec
	[ "$HPCC" = 0 ] ||
	row "hpcc PingPong bandwidth (min), MB/s" MinPingPongBandwidth_GBytes 1000
	[ "$HPCC" = 0 ] ||
	row "hpcc MPIRandomAccess, MUP/s" MPIRandomAccess_GUPs 1000
	[ "$HPCC" = 0 ] ||
	row "hpcc PTRANS, MB/s" PTRANS_GBs 1000
	echo
	echo "hpcc N = $N (NB 64); xiw_mpi_check $IT latency and $BI 1 MiB iterations. Every run:"
	for k in "${!runs[@]}"; do echo "    $k: ${runs[$k]}"; done | sort
} >"$XIW_TEST_OUT/mpi-table.md"
cat "$XIW_TEST_OUT/mpi-table.md"
