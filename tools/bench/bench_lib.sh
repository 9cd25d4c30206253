# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# Helpers of make bench's tests, sourced after selftests/lib.sh. The 1vm
# benches' devices are bench_devs.sh's; the 2vm benches' are
# bench_2vm_devs' (below).

# xiw_op_counter_names: xiw's per-op counters (hw_counters of port 1,
# Documentation/observability.md)
xiw_op_counter_names=(tx_work_queued tx_sendmsg_calls tx_fpdus rx_fpdus
		      tx_fpdus_from_rx tx_fpdus_from_post)

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

# bench_add_run KEY1 KEY2 FIGURE: one run's figure (n/a if empty) appended
# to the caller's runs[KEY1,KEY2]; bench_medians then sets the caller's
# val[K] to the median of runs[K] for every K
bench_add_run() { runs[$1,$2]="${runs[$1,$2]:-}${runs[$1,$2]:+ }${3:-n/a}"; }
bench_medians() {
	local k
	for k in "${!runs[@]}"; do
		val[$k]=$(bench_median "${runs[$k]}")
	done
}
# bench_runs_list "KEY2..." "KEY1...": every run of the caller's runs[],
# a line "- KEY2, KEY1: figures" for each pair that has some, KEY2 outer
bench_runs_list() {
	local k p
	for k in $1; do
		for p in $2; do
			[ -z "${runs[$p,$k]:-}" ] || echo "- $k, $p: ${runs[$p,$k]}"
		done
	done
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

# bench_2vm_keep_devs "DEV...": only those of bench_2vm_devs' devs[] that
# the list names (an empty list keeps them all)
bench_2vm_keep_devs() {
	local want=" $1 " i
	[ -n "$1" ] || return 0
	for i in "${!devs[@]}"; do
		[[ $want == *" ${devs[i]} "* ]] || unset "devs[i]"
	done
	devs=("${devs[@]}")
}

# bench_dev_up DEV NETDEV: DEV (of the caller's type[DEV]) on NETDEV,
# active. bench_dev_down DEV: DEV gone. Devices take turns in the benches
# (bench_devs.sh's dev_up and dev_down, the two-VM ones below).
bench_dev_up() {
	rdma link add "$1" type "${type[$1]}" netdev "$2"
	wait_port_state "$1" PORT_ACTIVE 5
}
bench_dev_down() {
	rdma link delete "$1"
	wait_for 5 eval "! ib_dev_exists $1" || fail "$1 still registered"
}

# bench_2vm_dev_up DEV: DEV (bench_2vm_devs' type[]) on the bench's link,
# active. bench_2vm_dev_down DEV [TAG]: DEV gone from this VM, and with a
# TAG from both VMs before either goes on (a barrier)
bench_2vm_dev_up() { bench_dev_up "$1" "$XIW_NETDEV"; }
bench_2vm_dev_down() {
	bench_dev_down "$1"
	[ -z "${2:-}" ] || xiw_barrier "$2" 60
}

# bench_iperf_2vm PORT [LEN]: iperf3 from VM a to VM b of a 2vm bench
# (server on b, bound to its address), writes of LEN (default 64 KiB; at
# most iperf3's largest, 1 MiB) for 5 s. Both VMs call it with the same
# PORT; a prints the MB/s (n/a if iperf3 gave none), b prints nothing
# (its server's log goes to stderr if the server failed).
bench_iperf_2vm() {
	local port=$1 len=${2:-65536} v="" srv
	[ "$len" -le 1048576 ] || len=1048576
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
		-l "$len" -J 2>/dev/null | awk -F'[:,]' '
		/"bits_per_second"/ { b = $2 }
		END { if (b) printf "%.0f", b / 8e6 }') || true
	echo "${v:-n/a}"
}

# bench_pp_2vm PORT SECS FIELD ARGS...: one xiw_tcp_pingpong run between
# the VMs of a 2vm bench, its server on b (on b's address, PORT), its
# client on a with ARGS, for at most SECS seconds. Both VMs call it with
# the same PORT. On a BENCH_FIG is the FIELD= figure of the client's
# result line (logged), n/a if the run failed; b waits for its server
# without polling and leaves BENCH_FIG n/a.
bench_pp_2vm() {
	local port=$1 secs=$2 field=$3 pp r srv rc=0
	shift 3
	pp=$(need_prog xiw_tcp_pingpong)
	BENCH_FIG=n/a
	if [ "$XIW_ROLE" = b ]; then
		run_timeout $((secs + 10)) "$pp" -s "$XIW_LOCAL_IP" "$port" \
			>pp.log 2>&1 &
		srv=$!
		(wait_listen "$port" 10 "$srv" pp.log) || rc=1
		xiw_barrier "pp$port-listen" 30
		[ $rc != 0 ] || wait "$srv" || rc=$?
		kill_bg "$srv"
		wait "$srv" 2>/dev/null || true
		[ $rc = 0 ] || sed 's/^/#   /' pp.log
		return 0
	fi
	xiw_barrier "pp$port-listen" 30
	if r=$(run_timeout "$secs" "$pp" -c "$XIW_PEER_IP" "$port" "$@" \
			2>pp.log); then
		BENCH_FIG=$(sed -n "s/.* $field=\([0-9.]*\) .*/\1/p" <<<"$r")
		BENCH_FIG=${BENCH_FIG:-n/a}
		log "xiw_tcp_pingpong $*: $r"
	else
		sed 's/^/#   /' pp.log
	fi
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

# The instruction counter (tools/tcgprof, loaded when the VMs run under
# XIW_QEMU=tools/tcgprof/qemu-tcgprof.sh) counts between two marks the
# guest sets in its test output directory ($XIW_TEST_OUT, shared with
# the host); the counts go to $XIW_TEST_OUT/prof-LABEL.txt.
# bench_insn_start LABEL [skip]: the plugin takes its snapshot and deletes
# prof.start; without an answer in 10 s the test fails (skips with
# "skip"). The symbols the plugin names the functions with at the stop
# (prof.syms) are read here, outside the count: reading /proc/kallsyms
# costs some 300M guest instructions, as much as a second of a bulk
# stream. So a module loaded between the two marks goes unnamed.
bench_insn_start() {
	local ctl=$XIW_TEST_OUT why="no instruction counter: run with XIW_QEMU=tools/tcgprof/qemu-tcgprof.sh (as make bench does)"
	rm -f "$ctl/prof-$1.txt"
	cat /proc/kallsyms >"$ctl/prof.syms"
	echo "$1" >"$ctl/prof.start.tmp"
	mv "$ctl/prof.start.tmp" "$ctl/prof.start"
	wait_for 10 eval "[ ! -e '$ctl/prof.start' ]" && return 0
	[ "${2:-}" = skip ] && skip "$why"
	fail "$why"
}
# bench_insn_stop LABEL: the plugin writes prof-LABEL.txt. prof.stop
# appears by a rename, as prof.start does: the plugin deletes it on the
# host as soon as it sees it, and a plain "echo >" into it failed with
# ENOENT over 9p in 2 of 7 runs (2026-11-28)
bench_insn_stop() {
	local ctl=$XIW_TEST_OUT
	echo stop >"$ctl/prof.stop.tmp"
	mv "$ctl/prof.stop.tmp" "$ctl/prof.stop"
	wait_for 120 eval "[ -e '$ctl/prof-$1.txt' ]" || fail "no count for $1"
}

# bench_insn_report FILE PER UNIT [TOP]: the counts of prof-LABEL.txt FILE
# divided by PER (bytes, ops) and scaled to UNIT ("MiB": per 1,048,576 of
# PER; anything else: per one): the line "all user xiw" on stdout, then
# the TOP (default 30) hottest functions as log lines
bench_insn_report() {
	local f=$1 per=$2 unit=$3 top=${4:-30} m=1
	[ "$unit" != MiB ] || m=1048576
	awk -v b="$per" -v m="$m" '$3 == "[all]" { a = $1 } $3 == "[user]" { u = $1 }
		$3 == "[module" && $4 == "xiw]" { x = $1 }
		END { if (b > 0) printf "%.0f %.0f %.0f\n", a / b * m, u / b * m, x / b * m }' "$f"
	sort -rn "$f" | awk -v b="$per" -v m="$m" -v u="$unit" -v t="$top" \
		'b > 0 && $3 !~ /^\[/ && n++ < t {
		printf "#   %10.0f /%s  %s\n", $1 / b * m, u, substr($0, index($0, $3)) }' >&2
}

# bench_cpu_snap: "busy kernel": the VM's busy CPU time (us: every CPU's
# but idle and iowait) and its kernel CPU time (us: system, irq and
# softirq: ULPs, transports and TCP, not the workload's user time), from
# the USER_HZ ticks of /proc/stat
bench_cpu_snap() {
	awk -v hz="$(getconf CLK_TCK)" '/^cpu / {
		b = 0; for (i = 2; i <= NF; i++) if (i != 5 && i != 6) b += $i
		printf "%.0f %.0f\n", b * 1e6 / hz, ($4 + $7 + $8) * 1e6 / hz }' /proc/stat
}

# bench_procs_snap: "PID COMM USER SYS" (USER_HZ ticks) of every process
# and kernel thread of this VM; bench_procs_top BEFORE AFTER [N]: the N
# (default 6) that used the most CPU between two snapshots, as
# "comm(pid) user+sys ms, ..." (what else a VM ran during a bench's
# window: the test's own polling, fio, nfsd, kworkers; a process that
# ended in between is not in it, its time went to its parent's children)
bench_procs_snap() {
	awk '{ c = $0; sub(/.*\) /, "", c); split(c, f, " ")
		n = substr($0, index($0, "(") + 1); n = substr(n, 1, length(n) - length(c) - 2)
		gsub(/ /, "_", n); print $1, n, f[12], f[13] }' /proc/[0-9]*/stat 2>/dev/null
}
bench_procs_top() {
	awk -v hz="$(getconf CLK_TCK)" '
		NR == FNR { u[$1] = $3; s[$1] = $4; next }
		$1 in u { d = ($3 - u[$1]) + ($4 - s[$1])
		  if (d > 0) print d, $2 "(" $1 ")", ($3 - u[$1]) * 1000 / hz, ($4 - s[$1]) * 1000 / hz }' \
		<(printf '%s\n' "$1") <(printf '%s\n' "$2") | sort -rn | head -n "${3:-6}" |
		awk '{ printf "%s%s %.0f+%.0f ms", sep, $2, $3, $4; sep = ", " } END { print "" }'
}

# A two-VM bench that a drives and b serves (nfs_bench_2vm,
# nvmeof_bench_2vm): a sends each step to b (bench_2vm_ask) and b carries
# it out (bench_2vm_serve), so the two stay in step whatever a's jobs
# take. A measurement window (bench_win_open, bench_win_close) takes each
# VM's kernel CPU time over one job, and with XIW_BENCH_INSN=1 (under
# XIW_QEMU=tools/tcgprof/qemu-tcgprof.sh) its guest instructions, which
# bench_insn_report divides by the job's reads or bytes into
# bench2-insn-ROLE-TAG.txt (in the log and $XIW_TEST_OUT).
BENCH_WIN_SECS=${BENCH_WIN_SECS:-300}	# the longest a window may last

# _bench_insn_log TAG N UNIT: this VM's instructions per UNIT over N
_bench_insn_log() {
	log "$XIW_ROLE $1: instructions per $3, all, user and xiw.ko: $(
		bench_insn_report "$XIW_TEST_OUT/prof-$1.txt" "$2" "$3" 40 \
		2>"bench2-insn-$XIW_ROLE-$1.txt")"
	cat "bench2-insn-$XIW_ROLE-$1.txt"
	cp "bench2-insn-$XIW_ROLE-$1.txt" "$XIW_TEST_OUT/"
}

# _bench_kern A B: the kernel us between two bench_cpu_snap lines
_bench_kern() { awk -v a="$1" -v b="$2" 'BEGIN { split(a, x, " "); split(b, y, " "); print y[2] - x[2] }'; }

# _bench_ops_log TAG N UNIT BEFORE: xiw0's per-op counters (if this VM
# has xiw0) grown since BEFORE (xiw_op_counters' lines), per read or per
# MiB as bench_win_close's N and UNIT say, in the log: where each VM's
# I/O went (TX work items, sends from RX and from posts)
_bench_ops_log() {
	local c1
	c1=$(xiw_op_counters xiw0 2>/dev/null) || return 0
	[ -n "$c1" ] && [ -n "$4" ] || return 0
	log "$1: xiw0 per $3 ($XIW_ROLE): $(paste <(echo "$4") <(echo "$c1") |
		awk -v n="$2" -v u="$3" 'BEGIN { if (u == "MiB") n /= 1048576 } n > 0 && $1 == $3 { printf "%s%s %.2f", s, $1, ($4 - $2) / n; s = ", " }')"
}

# bench_2vm_serve HANDLER (b): carry out a's steps until a says "done":
# windows here, anything else by HANDLER STEP (which fails the test on
# error), each acknowledged once done
bench_2vm_serve() {
	local step c0 c1 n ops0 p0
	while :; do
		step=$(xiw_sync bench-next . "$BENCH_WIN_SECS") ||
			fail "the driving VM is gone"
		case $step in
		done) return 0 ;;
		win:*)
			step=${step#win:}
			# the process snapshots outside the counted window:
			# each reads every /proc/PID/stat
			p0=$(bench_procs_snap)
			[ "${XIW_BENCH_INSN:-0}" != 1 ] || bench_insn_start "$step"
			ops0=$(xiw_op_counters xiw0 2>/dev/null || true)
			c0=$(bench_cpu_snap)
			xiw_barrier "$step-end" "$BENCH_WIN_SECS"
			c1=$(bench_cpu_snap)
			[ "${XIW_BENCH_INSN:-0}" != 1 ] || bench_insn_stop "$step"
			log "$step ($XIW_ROLE): busiest: $(bench_procs_top "$p0" "$(bench_procs_snap)")"
			n=$(xiw_sync "$step-srv" "$(_bench_kern "$c0" "$c1")" 30) ||
				fail "the driving VM is gone"
			_bench_ops_log "$step" "${n%:*}" "${n#*:}" "$ops0"
			[ "${XIW_BENCH_INSN:-0}" != 1 ] ||
				_bench_insn_log "$step" "${n%:*}" "${n#*:}"
			;;
		*)
			"$1" "$step"
			xiw_barrier "bench-did-$step" 60
			;;
		esac
	done
}

# bench_2vm_ask STEP (a): b carries out STEP ("done" ends b's service);
# returns once it has
bench_2vm_ask() {
	xiw_sync bench-next "$1" 60 >/dev/null || fail "the serving VM is gone"
	[ "$1" = done ] || xiw_barrier "bench-did-$1" "$BENCH_WIN_SECS"
}

# bench_win_open TAG (a): both VMs measure from here
bench_win_open() {
	xiw_sync bench-next "win:$1" 60 >/dev/null || fail "the serving VM is gone"
	_bench_procs0=$(bench_procs_snap)	# outside the counted window
	[ "${XIW_BENCH_INSN:-0}" != 1 ] || bench_insn_start "$1"
	_bench_ops0=$(xiw_op_counters xiw0 2>/dev/null || true)
	_bench_win0=$(bench_cpu_snap)
}

# bench_win_close TAG N UNIT (a): to here, over N reads (UNIT read) or N
# bytes (UNIT MiB); BENCH_WIN_KERN: "a b", each VM's kernel us per read
# (per N)
BENCH_WIN_KERN=
bench_win_close() {
	local c1 srv
	c1=$(bench_cpu_snap)
	xiw_barrier "$1-end" 60
	[ "${XIW_BENCH_INSN:-0}" != 1 ] || bench_insn_stop "$1"
	log "$1 ($XIW_ROLE): busiest: $(bench_procs_top "$_bench_procs0" "$(bench_procs_snap)")"
	srv=$(xiw_sync "$1-srv" "$2:$3" 30) || fail "the serving VM is gone"
	_bench_ops_log "$1" "$2" "$3" "$_bench_ops0"
	[ "${XIW_BENCH_INSN:-0}" != 1 ] || _bench_insn_log "$1" "$2" "$3"
	BENCH_WIN_KERN=$(awk -v n="$2" -v a="$(_bench_kern "$_bench_win0" "$c1")" \
		-v b="$srv" 'BEGIN { if (n > 0) printf "%.2f %.2f\n", a / n, b / n }')
}
