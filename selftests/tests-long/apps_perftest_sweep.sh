#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 400
# description: perftest over rdma_cm (-R) on xiw at every size from 2 B to 8 MiB (-a): send/write/read bandwidth and latency, every row present and sane
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$XIW_SELFTESTS/perftest_lib.sh"
#
# perftest 4.5 has no data validation and -a cannot be bounded (2 B to
# 2^23 B, the same -n for every size): the checks are perftest_check's,
# on every row (perftest_local_rows). Data integrity is checked by
# apps_rdmacm, apps_fabric and apps_2vm (rping -V, fi_pingpong -c).
# XIW_SWEEP_ITERS overrides the iterations per size.

need_cmd ib_send_bw ib_write_bw ib_read_bw ib_send_lat ib_write_lat ib_read_lat ss
xiw_loopback
N=${XIW_SWEEP_ITERS:-100}

for t in ib_send_bw ib_write_bw ib_read_bw ib_send_lat ib_write_lat ib_read_lat; do
	perftest_local_rows xiw0 192.0.2.1 "$t" -a -n "$N"
	case $t in
	*_bw) log "$t -a -n $N (size:MB/s): $(echo "$PERFTEST_ROWS" | awk '{ printf "%s:%s ", $1, $4 }')" ;;
	*) log "$t -a -n $N (size:t_typical us): $(echo "$PERFTEST_ROWS" | awk '{ printf "%s:%s ", $1, $5 }')" ;;
	esac
done
log ok
