#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 2vm
# timeout: 420
# description: Open MPI across two VMs over xiw (PML cm, OFI MTL, libfabric verbs;ofi_rxm), one rank per VM, started by mpirun on a through an rsh agent and a command server on b: xiw_mpi_check (verified ping-pong and allreduce) gives the same result as over Open MPI's TCP BTL; both ranks opened xiw0 and both VMs' xiw0 counters moved the job's bytes, the TCP run none
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$XIW_SELFTESTS/mpi_lib.sh"

mpi_vms_up 10.77.0.1 10.77.0.2

# xiw_mpi_check over xiw, then over TCP: the same exact result. 5 ping-pongs
# of 1 MiB each way and 5 allreduces of 1 MiB (~21 MB on each xiw0).
mpi_phase check-xiw $((15 << 20)) "${MPI_XIW[@]}" xiw_mpi_check -n 100 -b 5
mpi_phase check-tcp 0 "${MPI_TCP[@]}" xiw_mpi_check -n 100 -b 5
mpi_check_xiw_tcp
