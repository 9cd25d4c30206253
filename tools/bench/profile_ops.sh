#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 1800
# description: where the CPU time of one small op goes on xiw0: for each row of XIW_PROF_ROWS (default atomic_rate atomic_lat read_lat write_lat; also read_bw, write_bw: 64 KiB) perftest (XIW_PROF_ITERS iterations, default 200000: the ops then outweigh perftest's start and teardown in the recorded run too) runs three times on loopback, twice under perf stat (N/4 and N iterations: context switches and busy CPU time from /proc/stat per op as the difference between the two, without perftest's setup and teardown; all CPUs) and once under perf record (cpu-clock samples with call chains, all CPUs); prints the per-op costs and the hottest symbols (profile-ROW.txt: those above XIW_PROF_LIMIT percent, default 1, sorted by XIW_PROF_SORT, default dso,sym; profile-table.md); XIW_PROF_CALLERS="SYM ..." also prints the call chains into these symbols
. "$(dirname "${BASH_SOURCE[0]}")/../../selftests/lib.sh"
. "$XIW_SELFTESTS/perftest_lib.sh"
. "$XIW_ROOT/tools/bench/bench_lib.sh"

need_cmd perf ib_atomic_bw ib_atomic_lat ib_read_lat ib_write_lat ip ss
# /proc/stat counts CPU time in 10 ms ticks: enough iterations that a
# row runs for seconds
N=${XIW_PROF_ITERS:-200000}
xiw_need_provider
dummy_add d0
ip addr add 192.0.2.1/24 dev d0
xiw_load
xiw_link_add xiw0 d0
wait_port_state xiw0 PORT_ACTIVE 10
# kernel symbols (the module's too) for a root perf
echo -1 >/proc/sys/kernel/perf_event_paranoid
echo 0 >/proc/sys/kernel/kptr_restrict

declare -A cmd=(
	[atomic_rate]="ib_atomic_bw -A FETCH_AND_ADD"
	[atomic_lat]="ib_atomic_lat -A FETCH_AND_ADD"
	[read_lat]="ib_read_lat -s 8"
	[write_lat]="ib_write_lat -s 8"
	[read_bw]="ib_read_bw -s 65536"
	[write_bw]="ib_write_bw -s 65536")

# under ROW ITERS PERF_ARGS...: perftest for ROW (-n ITERS) with perf (all
# CPUs) counting from the moment it has said so (its control FIFO
# acknowledged "enable") until perftest has ended
under() {
	local row=$1 n=$2 p
	shift 2
	rm -f ctl ack
	mkfifo ctl ack
	perf "$@" -a -D -1 --control fifo:ctl,ack -- sleep 900 >perf.out 2>&1 &
	p=$!
	exec 7<>ctl 8<>ack
	echo enable >&7
	read -r -t 60 _ <&8 || { cat perf.out; fail "$row: perf did not start"; }
	# shellcheck disable=SC2086
	perftest_local xiw0 192.0.2.1 ${cmd[$row]} -n "$n" >res.txt ||
		{ perf_end "$p"; fail "$row: perftest failed"; }
	echo disable >&7
	read -r -t 60 _ <&8 || true
	PERFTEST_PORT=$((PERFTEST_PORT + 8))
	perf_end "$p"
	exec 7>&- 8>&-
}

# perf_end PID: end perf's workload (its sleep), so that perf reports or
# writes its file and exits by itself (a signal to perf itself only
# makes it wait for the workload)
perf_end() {
	pkill -P "$1" -x sleep || true
	wait "$1" || true
}

# stat_cs ROW: the context switches perf stat counted (perf.out)
stat_cs() {
	local cs
	cs=$(awk -F, '$3 == "context-switches" { print $1 }' perf.out)
	[ -n "$cs" ] || { cat perf.out; fail "$1: no perf stat counts"; }
	echo "$cs"
}

# busy_us: CPU time spent busy (user, nice, system, irq, softirq, steal) by
# all CPUs since boot, in microseconds
busy_us() {
	awk -v hz="$(getconf CLK_TCK)" '$1 == "cpu" {
		printf "%.0f", ($2 + $3 + $4 + $7 + $8 + $9) * 1e6 / hz }' /proc/stat
}

# counters: xiw0's per-op counters (bench_lib.sh), one value per line in
# the order of xiw_op_counter_names; every one must exist. Then the TCP
# segments the VM sent (/proc/net/snmp OutSegs: requester and responder
# are both here, so every segment of the connection, pure ACKs too, is
# counted once).
counters() {
	local c
	c=$(xiw_op_counters xiw0)
	[ "$(wc -l <<<"$c")" = ${#xiw_op_counter_names[@]} ] ||
		fail "xiw0 lacks per-op counters, it has: $(tr '\n' ' ' <<<"$c")"
	awk '{ print $2 }' <<<"$c"
	awk '$1 == "Tcp:" {
		if (!c) { for (i = 2; i <= NF; i++) if ($i == "OutSegs") c = i }
		else { print $c; exit } }' /proc/net/snmp
}

echo "| row | figure | ops | context switches / op | busy CPU us / op | TX work items / op | sendmsg / op | FPDUs sent / op | FPDUs received / op | FPDUs sent by RX / op | TCP segments / op | top symbols |" >profile-table.md
echo "|---|---|---|---|---|---|---|---|---|---|---|---|" >>profile-table.md
for row in ${XIW_PROF_ROWS:-atomic_rate atomic_lat read_lat write_lat}; do
	[ -n "${cmd[$row]:-}" ] || fail "unknown row $row"
	# perf stat twice, N/4 and N iterations: the difference is what the
	# ops cost, without perftest's start, connection setup and teardown
	# (a few seconds of CPU under TCG: 200-300 us per op of 20000, 20-30
	# of 200000)
	q=$((N / 4))
	b0=$(busy_us)
	under "$row" $q stat -x, -e context-switches
	b1=$(busy_us)
	cs0=$(stat_cs "$row")
	c0=$(counters)
	under "$row" "$N" stat -x, -e context-switches
	b2=$(busy_us)
	c1=$(counters)
	cs1=$(stat_cs "$row")
	m=$((N - q))
	per=$(paste <(echo "$c0") <(echo "$c1") |
	      awk -v n="$N" '{ printf "%s%.2f", s, ($2 - $1) / n; s = " | " }')
	# the figure: MB/s for the bandwidth rows, else perftest's fifth
	# column (Mpps, typical us)
	case $row in read_bw|write_bw) c=4 ;; *) c=5 ;; esac
	fig=$(awk -v c=$c '{ print $c }' res.txt)
	# per op: per perftest iteration (-n; the few warm-up iterations
	# are not counted), requester and responder together since both run
	# in this VM; a perftest retry (perftest_lib.sh) spoils the figures
	# of its pass (it is logged as "# retry:")
	cs=$(awk -v a="$cs0" -v b="$cs1" -v m=$m 'BEGIN { printf "%.2f", (b - a) / m }')
	us=$(awk -v a=$((b1 - b0)) -v b=$((b2 - b1)) -v m=$m 'BEGIN { printf "%.1f", (b - a) / m }')
	under "$row" "$N" record -g -e cpu-clock -F 997 -o prof.data
	perf report -i prof.data --stdio --no-children --sort "${XIW_PROF_SORT:-dso,sym}" -g none \
		--percent-limit "${XIW_PROF_LIMIT:-1}" 2>/dev/null | grep -v '^#' | sed '/^$/d' \
		>"profile-$row.txt" || true
	[ -s "profile-$row.txt" ] || fail "$row: empty profile"
	top=$(head -5 "profile-$row.txt" | awk '{ printf "%s%s %s (%s)", s, $1, $NF, $2; s = ", " }')
	printf '| %s | %s | %d | %s | %s | %s | %s |\n' \
		"$row" "$fig" "$N" "$cs" "$us" "$per" "$top" >>profile-table.md
	log "$row: $(tail -1 profile-table.md)"
	sed "s/^/# $row: /" "profile-$row.txt" | head -"${XIW_PROF_LINES:-40}"
	cp "profile-$row.txt" "$XIW_TEST_OUT/" 2>/dev/null || true
	# XIW_PROF_CALLERS="SYM ...": the call chains into these symbols
	# (a report restricted to one symbol; all of them took more than
	# 15 minutes in the VM)
	for sym in ${XIW_PROF_CALLERS:-}; do
		run_timeout 600 perf report -i prof.data --stdio --no-children \
			-S "$sym" -g caller,1,callee,function,percent 2>/dev/null |
			grep -v '^#' | sed '/^$/d' | head -80 | sed "s/^/# $row <- $sym: /" ||
			log "$row: callers of $sym: no report"
	done
	rm -f prof.data prof.data.old
done
sed 's/^/BENCH /' profile-table.md
cp profile-table.md "$XIW_TEST_OUT/" 2>/dev/null || true
