# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# Helpers of make bench's tests, sourced after selftests/lib.sh. The 1vm
# benches' devices are bench_devs.sh's; the 2vm benches' are
# bench_2vm_devs' (below).

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

# bench_median "V V ...": the median of the figures that are not n/a
# (the rounds of one cell), or n/a if none is
bench_median() {
	tr ' ' '\n' <<<"$1" | { grep -v -e '^n/a$' -e '^$' || true; } | sort -g |
		awk '{ v[NR] = $1 } END { if (!NR) print "n/a"
			else if (NR % 2) print v[(NR + 1) / 2]
			else printf "%g\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# bench_ratio A B: A/B to two decimals, or "-" unless both are figures
bench_ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN {
		if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "-" }'
}

# bench_judge RATIO OP LIMIT: "met" if RATIO OP (<= or >=) LIMIT, else
# "missed"; "-" without a ratio
bench_judge() {
	awk -v r="$1" -v op="$2" -v l="$3" 'BEGIN {
		if (r == "-" || r == "") print "-"
		else if (op == "<=" ? r + 0 <= l + 0 : r + 0 >= l + 0) print "met"
		else print "missed" }'
}

# bench_best "V V ..." low|high: the lowest or highest figure that is not
# n/a, or n/a if none is. A TCP floor is the best its rounds gave: a
# disturbed round only makes TCP look slower, which would flatter xiw.
bench_best() {
	tr ' ' '\n' <<<"$1" | { grep -v -e '^n/a$' -e '^$' || true; } | sort -g |
		awk -v w="$2" '{ v[NR] = $1 } END { if (!NR) print "n/a"
			else print (w == "low" ? v[1] : v[NR]) }'
}

# bench_goal_row TEXT VALUE AGAINST OP LIMIT: a row of a goal table,
# "| TEXT | VALUE | AGAINST | VALUE/AGAINST | met or missed |" (OP: <= or
# >=; n/a without two figures)
bench_goal_row() {
	local r
	r=$(bench_ratio "$2" "$3")
	if [ "$r" = - ]; then
		echo "| $1 | $2 | $3 | - | n/a |"
	else
		echo "| $1 | $2 | $3 | $r | $(bench_judge "$r" "$4" "$5") |"
	fi
}

# bench_pingpong PORT SECS ARGS...: one xiw_tcp_pingpong client run with
# ARGS (at most SECS seconds) against a fresh server on 192.0.2.1:PORT,
# killed after; the client's result line on stdout. Non-zero if either
# failed: the server's log is in floor-srv.log, the client's errors in
# floor.err.
bench_pingpong() {
	local port=$1 secs=$2 pp srv rc=0
	shift 2
	pp=$(need_prog xiw_tcp_pingpong)
	"$pp" -s 192.0.2.1 "$port" >floor-srv.log 2>&1 &
	srv=$!
	# wait_listen in a subshell: its fail would end the caller
	if (wait_listen "$port" 10 "$srv" floor-srv.log); then
		run_timeout "$secs" "$pp" -c 192.0.2.1 "$port" "$@" 2>floor.err ||
			rc=$?
	else
		rc=1
	fi
	kill_bg "$srv"
	wait "$srv" 2>/dev/null || true
	return $rc
}

# bench_2vm_devs MODULE...: the devices of a 2vm bench, each on the test's
# netdev: xiw0 and, for each MODULE given (siw, rxe), its device if the
# module loads here. The two VMs agree on those both have: devs[] (in
# that order) and type[] for `rdma link add`. Every one is deleted when
# the test ends, after the test's own processes are killed (siw has no
# disassociate_ucontext: its link delete waits for every process that has
# a siw context).
bench_2vm_devs() {
	local mine=xiw0 theirs d m siw_ko=${XIW_SIW_KO:-$XIW_BUILD/siw/siw.ko}
	xiw_load
	xiw_need_provider
	for m in "$@"; do
		case $m in
		siw)
			if [ -f "$siw_ko" ]; then
				siw_load
				mine+=,siw0
			else
				log "no $siw_ko (selftests/build-siw.sh): no siw column"
			fi
			;;
		rxe)
			if modprobe rdma_rxe; then
				defer modprobe -r rdma_rxe
				mine+=,rxe0
			else
				log "modprobe rdma_rxe failed: no rxe column"
			fi
			;;
		*) fail "bench_2vm_devs: no device module '$m'" ;;
		esac
	done
	theirs=$(xiw_sync devs "$mine" 60) || fail "peer lost"
	devs=()
	for d in ${mine//,/ }; do
		[[ ",$theirs," != *",$d,"* ]] || devs+=("$d")
	done
	# shellcheck disable=SC2034 # (the caller's)
	declare -gA type=([xiw0]=$XIW_LINK_TYPE [siw0]=siw [rxe0]=rxe)
	for d in "${devs[@]}"; do
		defer rdma_link_del "$d"
	done
	# (LIFO: the test's processes go first, on any exit)
	defer eval 'kill -KILL $(jobs -p) 2>/dev/null; wait 2>/dev/null || true'
}

# bench_iperf_2vm PORT: iperf3 from VM a to VM b of a 2vm bench (server
# on b, bound to its address), 64 KiB writes for 5 s. Both VMs call it
# with the same PORT; a prints the MB/s (n/a if iperf3 gave none), b
# prints nothing (its server's log goes to stderr if the server failed).
bench_iperf_2vm() {
	local port=$1 v="" srv
	if [ "$XIW_ROLE" = b ]; then
		run_timeout 60 iperf3 -s -B "$XIW_LOCAL_IP" -p "$port" -1 \
			>iperf.log 2>&1 &
		srv=$!
		(wait_listen "$port" 10 "$srv" iperf.log) || true
		xiw_barrier "iperf$port-listen" 30
		wait "$srv" || sed 's/^/#   /' iperf.log >&2
		return 0
	fi
	xiw_barrier "iperf$port-listen" 30
	v=$(run_timeout 50 iperf3 -c "$XIW_PEER_IP" -p "$port" -t 5 \
		-l 65536 -J 2>/dev/null | awk -F'[:,]' '
		/"bits_per_second"/ { b = $2 }
		END { if (b) printf "%.0f", b / 8e6 }') || true
	echo "${v:-n/a}"
}

# shellcheck disable=SC2034 # BENCH_FIG: the caller's
# bench_perftest_2vm DEV COL TOOL ARGS...: one perftest run between the
# VMs of a 2vm bench (server on b, perftest_2vm_run), column COL of the
# client's result row into BENCH_FIG (n/a on b, and if the run failed:
# both VMs agree on every outcome, so both go on in step). Not in $(...):
# the port and sync tag counters advance here.
bench_perftest_2vm() {
	local dev=$1 col=$2
	shift 2
	BENCH_FIG=n/a
	rm -f row.out
	# a subshell, so that its fail ends only this run
	if (perftest_2vm_run result b "$dev" "$@" &&
		printf '%s\n' "$PERFTEST_ROWS" >row.out) 2>perf.err; then
		[ ! -s row.out ] || BENCH_FIG=$(awk -v c="$col" '{ print $c }' row.out)
	else
		sed 's/^/#   /' perf.err |
			{ grep -v "^#   #   \( [A-Z]\|---\|\*\)" || true; } | tail -25
	fi
	# perftest_2vm_run's retries, for the runner to count
	grep '^# retry:' perf.err >&2 || true
	# the subshell's port and sync tag counters are lost here
	PERFTEST_2VM_N=$((PERFTEST_2VM_N + 1))
	PERFTEST_PORT=$((PERFTEST_PORT + 8))
}
