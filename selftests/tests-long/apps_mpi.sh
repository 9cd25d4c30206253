#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 720
# description: Open MPI over xiw in one VM, 2 ranks over xiw0's loopback (PML cm, OFI MTL, libfabric verbs;ofi_rxm): hpcc (HPL, PTRANS, RandomAccess, FFT, PingPong) passes its own checks; xiw_mpi_check (verified ping-pong, allreduce) gives the same result as over Open MPI's TCP BTL; every rank opened xiw0, xiw0's counters moved the job's bytes, the TCP run none
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$XIW_SELFTESTS/mpi_lib.sh"

need_cmd fi_info hpcc
need_prog xiw_mpi_check >/dev/null
xiw_loopback 192.0.2.1
mpi_env

# libfabric's RDM endpoint over xiw0 (what the OFI MTL asks for)
fi_info -p 'verbs;ofi_rxm' -t FI_EP_RDM >fi_info.log 2>&1 ||
	{ cat fi_info.log; fail "fi_info: no verbs;ofi_rxm RDM endpoint"; }
expect_match "$(grep -m1 'domain:' fi_info.log)" 'domain: xiw0$' "fi_info verbs;ofi_rxm"

# mpi NAME NP TRANSPORT... -- PROG ARGS...: one mpirun, all ranks in this
# VM; log NAME.log, the xiw0 bytes it moved in $moved
mpi() {
	local name=$1 np=$2 b0 rc=0 t0
	shift 2
	b0=$(mpi_xiw_bytes xiw0)
	t0=$(now_us)
	run_timeout 400 mpirun -np "$np" --oversubscribe --bind-to none "$@" \
		>"$name.log" 2>&1 || rc=$?
	moved=$(( $(mpi_xiw_bytes xiw0) - b0 ))
	[ $rc = 0 ] || { grep -vE 'mca:base|select:|mtl_ofi' "$name.log" | tail -n 30; fail "$name: mpirun exited $rc"; }
	log "$name: $(( ($(now_us) - t0) / 1000 )) ms, xiw0 moved $moved bytes"
}

# hpcc, 1 x 2 grid, N = 256: 80-110 s under TCG on a loaded host (over
# 200 s when six other VMs shared its two cores), most of it the
# time-bounded PingPong and ring section, whose 2 MB messages alone move
# hundreds of MB
hpcc_input 1 2 256 32
mpi hpcc 2 "${MPI_XIW[@]}" hpcc
mpi_ofi_check hpcc.log 2 xiw0
hpcc_check hpccoutf.txt
cp hpccoutf.txt "$XIW_TEST_OUT/apps_mpi-hpccoutf.txt"
[ "$moved" -gt $((100 << 20)) ] || fail "hpcc moved only $moved bytes over xiw0"
log "hpcc over xiw: $(hpcc_summary hpccoutf.txt)"

# xiw_mpi_check over xiw, then over TCP: the same exact result. 5
# ping-pongs of 1 MiB each way and 5 allreduces of 1 MiB.
mpi check-xiw 2 "${MPI_XIW[@]}" xiw_mpi_check -n 100 -b 5
mpi_ofi_check check-xiw.log 2 xiw0
r_xiw=$(mpi_check_result check-xiw.log)
[ "$moved" -gt $((15 << 20)) ] || fail "xiw_mpi_check moved only $moved bytes over xiw0"
mpi check-tcp 2 "${MPI_TCP[@]}" xiw_mpi_check -n 100 -b 5
r_tcp=$(mpi_check_result check-tcp.log)
[ "$moved" -lt $((1 << 20)) ] || fail "the TCP BTL run moved $moved bytes over xiw0"
expect_eq "$r_xiw" "$r_tcp" "xiw_mpi_check result, xiw against TCP"
log "xiw: $(grep '^lat_us' check-xiw.log)"
log "tcp: $(grep '^lat_us' check-tcp.log)"
