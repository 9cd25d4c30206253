#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# mpirun's rsh agent between the test VMs, which have no ssh (mpi_lib.sh):
#   mpi_rsh.sh HOST CMD...   run CMD (joined by blanks, as ssh does) on
#                            HOST through its command server; CMD's output
#                            here, its exit status ours
#   mpi_rsh.sh --serve       one connection of the command server (busybox
#                            nc -ll -e): read the command line, run it with
#                            bash, send its output, then "xiw-rsh-exit N"
port=${MPI_CMD_PORT:-7750}
if [ "${1:-}" = --serve ]; then
	IFS= read -r cmd || exit 1
	echo "$(date +%T) run: $cmd" >&2
	bash -c "$cmd" </dev/null 2>&1
	echo "xiw-rsh-exit $?"
	exit 0
fi
while [[ ${1:-} == -* ]]; do shift; done	# ssh-style options, if any
host=$1
shift
[ -n "$host" ] && [ $# -gt 0 ] || { echo "usage: mpi_rsh.sh HOST CMD..." >&2; exit 2; }
exec 3<>"/dev/tcp/$host/$port" || { echo "mpi_rsh.sh: no command server on $host:$port" >&2; exit 255; }
printf '%s\n' "$*" >&3
rc=255
while IFS= read -r line <&3; do
	if [[ $line =~ ^xiw-rsh-exit\ ([0-9]+)$ ]]; then
		rc=${BASH_REMATCH[1]}
		break
	fi
	printf '%s\n' "$line"
done
exec 3>&-
exit "$rc"
