#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 3vm
# timeout: 480
# description: Open MPI across three VMs over xiw (PML cm, OFI MTL, libfabric verbs;ofi_rxm), one rank per VM, started by mpirun on a through an rsh agent and command servers on b and c: every pair of ranks connects (some both ways at once); xiw_mpi_check (verified ping-pong and allreduce) gives the same result as over Open MPI's TCP BTL; all ranks opened xiw0 and every VM's xiw0 moved the job's bytes, the TCP run none
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$XIW_SELFTESTS/mpi_lib.sh"

need_prog xiw_mpi_check >/dev/null
xiw_load
xiw_need_provider
xiw_link_add xiw0 "$XIW_NETDEV"
wait_port_state xiw0 PORT_ACTIVE 5
mpi_env
mpi_hostname "mpi-$XIW_ROLE"
export OMPI_MCA_oob_tcp_if_include=$XIW_NETDEV OMPI_MCA_btl_tcp_if_include=$XIW_NETDEV
[ "$XIW_ROLE" = a ] || mpi_cmd_server
printf '%s slots=1\n' "$XIW_IP_A" "$XIW_IP_B" "$XIW_IP_C" >hosts

# phase NAME MIN TRANSPORT... PROG ARGS...: one mpirun from a with a rank
# on each VM; b and c serve it. Every VM checks that its xiw0 moved at
# least MIN bytes (MIN = 0: fewer than 1 MiB) while it ran.
phase() {
	local name=$1 min=$2 b0 moved rc=0 t0 words
	shift 2
	b0=$(mpi_xiw_bytes xiw0)
	xiw_barrier "$name-start" 120
	if [ "$XIW_ROLE" = a ]; then
		t0=$(now_us)
		run_timeout 300 mpirun -np 3 --hostfile hosts --map-by node \
			--bind-to none "$@" >"$name.log" 2>&1 || rc=$?
		log "$name: $(( ($(now_us) - t0) / 1000 )) ms, mpirun exited $rc"
	fi
	words=$(xiw_sync "$name-end" "$rc" 400) || fail "$name: no end sync"
	[ "$XIW_ROLE" = a ] || rc=$words
	if [ "$rc" != 0 ]; then
		[ "$XIW_ROLE" != a ] || grep -vE 'mca:base|select:|mtl_ofi' "$name.log" | tail -n 30
		fail "$name: mpirun exited $rc"
	fi
	moved=$(( $(mpi_xiw_bytes xiw0) - b0 ))
	log "$name: xiw0 of $XIW_ROLE moved $moved bytes"
	if [ "$min" = 0 ]; then
		[ "$moved" -lt $((1 << 20)) ] || fail "$name: $moved bytes over xiw0 of $XIW_ROLE"
	else
		[ "$moved" -ge "$min" ] || fail "$name: only $moved bytes over xiw0 of $XIW_ROLE"
	fi
}

rank_hosts() {
	expect_eq "$(grep '^rank ' "$1" | sort | tr '\n' ' ')" \
		"rank 0 on mpi-a rank 1 on mpi-b rank 2 on mpi-c " "$1: ranks and hosts"
}

# 5 ping-pongs of 1 MiB between a and c, 5 allreduces of 1 MiB among the
# three (b takes part in those: several MB on every xiw0). MPI_Barrier's
# default for three ranks, recursive doubling, hangs over the OFI MTL on
# siw as on xiw (Documentation/performance.md, "MPI"): the linear one.
phase check-xiw $((4 << 20)) "${MPI_XIW[@]}" "${MPI_BARRIER_LINEAR[@]}" \
	xiw_mpi_check -n 100 -b 5
phase check-tcp 0 "${MPI_TCP[@]}" xiw_mpi_check -n 100 -b 5
if [ "$XIW_ROLE" = a ]; then
	mpi_ofi_check check-xiw.log 3 xiw0
	rank_hosts check-xiw.log
	rank_hosts check-tcp.log
	r_xiw=$(mpi_check_result check-xiw.log)
	r_tcp=$(mpi_check_result check-tcp.log)
	expect_eq "$r_xiw" "$r_tcp" "xiw_mpi_check result, xiw against TCP"
	log "xiw: $(grep '^lat_us' check-xiw.log)"
	log "tcp: $(grep '^lat_us' check-tcp.log)"
fi
