#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 3vm
# timeout: 480
# description: Open MPI across three VMs over xiw (PML cm, OFI MTL, libfabric verbs;ofi_rxm), one rank per VM, started by mpirun on a through an rsh agent and command servers on b and c: every pair of ranks connects (some both ways at once); xiw_mpi_check (verified ping-pong and allreduce) gives the same result as over Open MPI's TCP BTL; all ranks opened xiw0 and every VM's xiw0 moved the job's bytes, the TCP run none
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$XIW_SELFTESTS/mpi_lib.sh"

mpi_vms_up "$XIW_IP_A" "$XIW_IP_B" "$XIW_IP_C"

# 5 ping-pongs of 1 MiB between a and c, 5 allreduces of 1 MiB among the
# three (b takes part in those: several MB on every xiw0). MPI_Barrier's
# default for three ranks, recursive doubling, hangs over the OFI MTL on
# siw as on xiw (Documentation/mpi.md): the linear one.
mpi_phase check-xiw $((4 << 20)) "${MPI_XIW[@]}" "${MPI_BARRIER_LINEAR[@]}" \
	xiw_mpi_check -n 100 -b 5
mpi_phase check-tcp 0 "${MPI_TCP[@]}" xiw_mpi_check -n 100 -b 5
mpi_check_xiw_tcp
