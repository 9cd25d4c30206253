# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# Helpers of make bench's tests that set nothing up (bench_devs.sh does
# the devices): sourced after selftests/lib.sh.

# xiw_op_counter_names: xiw's per-op counters (hw_counters of port 1,
# Documentation/observability.md)
xiw_op_counter_names=(tx_work_queued tx_sendmsg_calls tx_fpdus rx_fpdus
		      tx_fpdus_from_rx)

# xiw_op_counters DEV [NAME...]: "NAME VALUE" lines of DEV's per-op
# counters (default: xiw_op_counter_names), in that order. A counter the
# device lacks (siw has none, rxe others) is left out.
xiw_op_counters() {
	local dir=/sys/class/infiniband/$1/ports/1/hw_counters f v
	shift
	[ $# -gt 0 ] || set -- "${xiw_op_counter_names[@]}"
	for f; do
		[ -r "$dir/$f" ] && read -r v <"$dir/$f" && echo "$f $v"
	done
	return 0
}
