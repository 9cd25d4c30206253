#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 2vm
# timeout: 5400
# description: make bench's two-host rows: RDMA Write bandwidth (64 KiB), RDMA Read latency (8 B), FetchAdd latency and rate between two VMs on xiw, siw and rxe (over UDP), against TCP between the same VMs (busy-polled ping-pong, iperf3), devices and floors taking turns in XIW_BENCH_2VM_ROUNDS rounds (default 5; medians), a busy loop on the responder VM; Read latency and TCP round trips again without it; rdma_cm connection rate (connect + teardown cycles one at a time and 8 in flight, xiw_cm_scale) on each device; perf-2vm-table.md
. "$(dirname "${BASH_SOURCE[0]}")/../../selftests/lib.sh"
. "$XIW_ROOT/tools/bench/bench_lib.sh"
. "$XIW_SELFTESTS/perftest_lib.sh"
#
# Servers on b, clients on a, over the bench's virtual link. In every
# round the devices (xiw0, siw0, rxe0 on both VMs) and TCP take turns, the
# first of the round rotating; a cell is the median of its rounds and
# every run is listed under the table (XIW_BENCH_2VM_DEVS: only the
# devices it names, e.g. "xiw0"). XIW_BENCH_ITERS (default 2000)
# iterations per run; the FetchAdd rate XIW_BENCH_RATE_ITERS (default 10
# times that: between the VMs the pipeline's ramp-up is a few round trips
# of a millisecond, not the run). A figure a run could not produce is n/a.
# The VMs have one vCPU each unless XIW_VM_SMP_2VM says otherwise
# (Documentation/testing.md, "Two VMs": with two each on a 2-core host
# the spinning perftest client takes CPU from the other "host").
#
# The busy loop on b: perftest's client on a busy-polls its CQ, but the
# responder of a Read or an atomic is b's kernel, and nothing on b runs
# while it waits for the next request: its one vCPU halts, and every
# request then pays for waking it (the guest's idle exit, and under TCG
# the host thread of that vCPU being woken and scheduled again), a cost a
# busy host does not have and TCP's busy-polled ping-pong, whose server
# spins, never pays. So every measured run keeps a spinning process
# (SCHED_IDLE: it gives way to anything else, softirqs and work items
# included) on b from before the run starts until it ended. The Read
# latency and TCP's blocking round trip are measured once more per round
# without it, and the table beside shows what the halted vCPU costs. The
# loop is not free where the host has fewer free cores than the pair has
# busy threads: under TCG it keeps b's vCPU thread runnable on the host,
# beside a's spinning client and qemu's forwarding between the VMs, so
# that table can come out either way (Documentation/performance.md, "Two
# VMs").

# The connection rate (xiw_cm_scale rate, server on b): XIW_BENCH_CM_SEQ
# (default 200) connect + teardown cycles one at a time and
# XIW_BENCH_CM_PAR (default 400) with XIW_BENCH_CM_INFLIGHT (default 8)
# in flight, per device and round; the connects per second, the
# establishment latency (rdma_create_id to ESTABLISHED and the server's
# first message received: both QPs in RTS) and the teardown latency
# (rdma_disconnect to DISCONNECTED and every object destroyed).
# XIW_BENCH_2VM_PARTS (default "perf cm"): "cm" alone runs only these.

need_cmd ib_write_bw ib_read_lat ib_atomic_lat ib_atomic_bw iperf3 ss chrt
parts=" ${XIW_BENCH_2VM_PARTS:-perf cm} "
CM_SEQ=${XIW_BENCH_CM_SEQ:-200}
CM_PAR=${XIW_BENCH_CM_PAR:-400}
CM_C=${XIW_BENCH_CM_INFLIGHT:-8}
N=${XIW_BENCH_ITERS:-2000}
NR=${XIW_BENCH_RATE_ITERS:-$((N * 10))}
R=${XIW_BENCH_2VM_ROUNDS:-5}
need_prog xiw_tcp_pingpong >/dev/null
cms=$(need_prog xiw_cm_scale)
declare -A runs val

# --- the VM's clock -----------------------------------------------------------

# Under TCG a VM's TSC runs at the host's rate, but the kernel calibrates
# it at boot against the PIT, and a vCPU descheduled during that
# calibration on a busy host gets it wrong ("tsc: Detected 900.211 MHz
# processor" for a 2594 MHz TSC; with tsc=reliable nothing corrects it):
# that VM's clock then runs 2.9 times too fast, and every figure it
# measures is off by as much. Two files created 3 s apart by this VM's
# clock in the run's output directory, whose times the host's file
# system sets, say how fast this clock runs.
clock_ratio() {
	local f=${XIW_VM_OUT:-/nonexistent}/clock.$XIW_ROLE t0 t1
	[ -d "${XIW_VM_OUT:-/nonexistent}" ] || { echo 1.00; return; }
	rm -f "$f.0" "$f.1"
	t0=$EPOCHREALTIME
	: >"$f.0"
	sleep 3
	t1=$EPOCHREALTIME
	: >"$f.1"
	awk -v a="$t0" -v b="$t1" -v c="$(stat -c %.9Y "$f.0")" \
		-v d="$(stat -c %.9Y "$f.1")" 'BEGIN {
		if (d > c) printf "%.2f", (b - a) / (d - c); else print "n/a" }'
	rm -f "$f.0" "$f.1"
}
r=$(clock_ratio)
log "this VM's clock runs at $r times the host's ($(dmesg | grep -m1 -o 'tsc: Detected .*'))"
awk -v r="$r" 'BEGIN { exit !(r == "n/a" || (r > 0.85 && r < 1.15)) }' ||
	fail "this VM's clock runs at $r times the host's (a wrong TSC calibration at boot): its figures would be off by as much"

# --- the busy loop on b -----------------------------------------------------

spin=
spin_on() {
	[ "$XIW_ROLE" = b ] && [ -z "$spin" ] || return 0
	chrt -i 0 bash -c 'while :; do :; done' &
	spin=$!
}
spin_off() {
	[ -n "$spin" ] || return 0
	kill -0 "$spin" 2>/dev/null || fail "the busy loop on b died"
	kill "$spin"
	wait "$spin" 2>/dev/null || true
	spin=
}
defer eval '[ -z "$spin" ] || kill "$spin" 2>/dev/null || true'

# --- the devices ------------------------------------------------------------

# Every device this VM can bring up; the two VMs use those both can.
bench_2vm_devs siw rxe
# XIW_BENCH_2VM_DEVS="xiw0 ...": only these (TCP always runs)
bench_2vm_keep_devs "${XIW_BENCH_2VM_DEVS:-}"
log "devices on both VMs: ${devs[*]}"
# both VMs are rid of the device before either brings up the next one
dev_down() { bench_2vm_dev_down "$1" "$1-down-$round"; }

# --- one run ------------------------------------------------------------------

# note DEV KEY V: a run's figure (or n/a) to runs[DEV,KEY], on a
note() {
	[ "$XIW_ROLE" = a ] || return 0
	runs[$1,$2]="${runs[$1,$2]:-}${runs[$1,$2]:+ }$3"
	log "round $round, $1 $2: $3"
}

# cell SPIN DEV KEY TOOL ARGS...: one perftest run between the VMs
# (server on b), with the busy loop on b if SPIN is 1; its figure to
# runs[DEV,KEY]. A run that fails leaves n/a on both sides: they agree on
# every outcome (perftest_2vm_run), so both continue in step.
cell() {
	local s=$1 dev=$2 key=$3 col
	shift 3
	case $1 in
	*_lat) col=5 ;;		# t_typical
	ib_atomic_bw) col=5 ;;	# MsgRate [Mpps]
	*) col=4 ;;		# BW average [MB/s]
	esac
	[ "$s" = 0 ] || spin_on
	bench_perftest_2vm "$dev" "$col" "$@"
	spin_off
	note "$dev" "$key" "$BENCH_FIG"
}

# pingpong SPIN KEY [--block]: xiw_tcp_pingpong's 8-byte round trip
# between the VMs (server on b), busy-polled on both sides or with
# blocking recv() (--block); its typical round trip to runs[tcp,KEY].
pp_port=7790
pingpong() {
	local s=$1 key=$2
	shift 2
	pp_port=$((pp_port + 1))
	[ "$s" = 0 ] || spin_on
	bench_pp_2vm "$pp_port" 140 typical -n "$N" "$@"
	spin_off
	xiw_barrier "pp$pp_port-done" 200
	note tcp "$key" "$BENCH_FIG"
}

# iperf SPIN: iperf3 between the VMs (server on b), 64 KiB writes, MB/s
ip_port=5201
iperf() {
	local s=$1 v
	ip_port=$((ip_port + 1))
	[ "$s" = 0 ] || spin_on
	v=$(bench_iperf_2vm "$ip_port")
	spin_off
	xiw_barrier "iperf$ip_port-done" 120
	note tcp bw "${v:-n/a}"
}

# cmrate DEV KEY CONNS INFLIGHT: xiw_cm_scale's connect + teardown cycles
# between the VMs (server on b); its figures to runs[DEV,KEY_rate],
# KEY_est, KEY_est99, KEY_td, KEY_td99 and KEY_retries. A run that
# fails leaves n/a.
cm_port=7800
cmrate() {
	local dev=$1 key=$2 n=$3 c=$4 r f v rc=0 srv
	cm_port=$((cm_port + 1))
	if [ "$XIW_ROLE" = b ]; then
		run_timeout 600 "$cms" server "$XIW_LOCAL_IP" "$cm_port" >cms.log 2>&1 &
		srv=$!
		(wait_listen "$cm_port" 20 "$srv" cms.log) || rc=1
		xiw_barrier "cm$cm_port-listen" 60
		[ $rc != 0 ] || wait "$srv" || rc=$?
		kill_bg "$srv"
		wait "$srv" 2>/dev/null || true
		[ $rc = 0 ] || sed 's/^/#   /' cms.log | tail -n 10
	else
		xiw_barrier "cm$cm_port-listen" 60
		# a run with failed connections still gives its figures (the
		# rate counts those that came up) and the count of failures
		run_timeout 550 "$cms" rate "$XIW_PEER_IP" "$cm_port" "$XIW_LOCAL_IP" \
			"$n" "$c" >cmc.log 2>&1 || rc=$?
		if r=$(grep '^RESULT mode=rate' cmc.log); then
			log "$dev $key: $(grep connects/s cmc.log)"
		else
			r=
		fi
		[ $rc = 0 ] || { grep -m5 FAIL cmc.log | sed 's/^/#   /'; } || true
	fi
	xiw_barrier "cm$cm_port-done" 600
	for f in rate:rate est_med:est est_p99:est99 td_med:td td_p99:td99 failed:failed retries:retries; do
		v=$(sed -n "s/.* ${f%%:*}=\([0-9.]*\).*/\1/p" <<<"${r:-}")
		note "$dev" "${key}_${f#*:}" "${v:-n/a}"
	done
}

# --- the rounds -----------------------------------------------------------------

turns=("${devs[@]}")
[[ $parts != *" perf "* ]] || turns+=(tcp)
for ((round = 1; round <= R; round++)); do
	log "round $round of $R"
	for ((i = 0; i < ${#turns[@]}; i++)); do
		dev=${turns[(i + round - 1) % ${#turns[@]}]}
		if [ "$dev" = tcp ]; then
			pingpong 1 rtt
			pingpong 1 rtt_block --block
			iperf 1
			pingpong 0 rtt_block_idle --block
			continue
		fi
		bench_2vm_dev_up "$dev"
		if [[ $parts == *" cm "* ]]; then
			cmrate "$dev" cm_seq "$CM_SEQ" 1
			cmrate "$dev" cm_par "$CM_PAR" "$CM_C"
		fi
		if [[ $parts != *" perf "* ]]; then
			dev_down "$dev"
			continue
		fi
		cell 1 "$dev" write_bw ib_write_bw -s 65536 -n "$N"
		cell 1 "$dev" read_lat ib_read_lat -s 8 -n "$N"
		# siw has no atomics (atomic_cap NONE): its cells stay n/a
		if [ "$dev" != siw0 ]; then
			cell 1 "$dev" atomic_lat ib_atomic_lat -A FETCH_AND_ADD -n "$N"
			cell 1 "$dev" atomic_rate ib_atomic_bw -A FETCH_AND_ADD -n "$NR"
		fi
		cell 0 "$dev" read_lat_idle ib_read_lat -s 8 -n "$N"
		dev_down "$dev"
	done
done
[ "$XIW_ROLE" = a ] || exit 0

# --- the table (on a) -------------------------------------------------------------

# median of the runs that produced a figure; n/a if none did
for k in "${!runs[@]}"; do
	val[$k]=$(bench_median "${runs[$k]}")
done
v() { echo "${val[$1]:-n/a}"; }
ratio() { bench_ratio "$@"; }
# judge RATIO OP LIMIT: met, missed, or "-" without a ratio
judge() { bench_judge "$@"; }
# row WHAT KEY TCP GOALREF OP LIMIT: a table row; the goal is xiw/GOALREF
# OP LIMIT, GOALREF being TCP or rxe
row() {
	local what=$1 k=$2 t=$3 gref=$4 op=$5 lim=$6 x s r g
	x=$(v "xiw0,$k") s=$(v "siw0,$k") r=$(v "rxe0,$k")
	if [ "$gref" = TCP ]; then g=$(ratio "$x" "$t"); else g=$(ratio "$x" "$r"); fi
	echo "| $what | $t | $x | $s | $r | $(ratio "$x" "$s") | $(ratio "$x" "$r") |" \
	     "$(ratio "$x" "$t") | xiw/$gref $op $lim | $(judge "$g" "$op" "$lim") |"
}
declare -A what=(
	[write_bw]="write BW, 64 KiB, MB/s"
	[read_lat]="read latency, 8 B, typical us"
	[atomic_lat]="FetchAdd latency, typical us"
	[atomic_rate]="FetchAdd rate, Mpps"
	[read_lat_idle]="read latency, 8 B, typical us, no busy loop on b"
	[rtt]="TCP round trip, 8 B, busy-polled, us"
	[rtt_block]="TCP round trip, 8 B, blocking recv(), us"
	[rtt_block_idle]="TCP round trip, 8 B, blocking recv(), no busy loop on b, us"
	[bw]="TCP bandwidth (iperf3, 64 KiB writes), MB/s")
rtt=$(v tcp,rtt)
# the perftest and TCP tables
perf_tables() {
	echo "| two VMs ($(nproc) vCPU each) | TCP | xiw | siw | rxe | xiw/siw | xiw/rxe | xiw/TCP | goal | met |"
	echo "|---|---|---|---|---|---|---|---|---|---|"
	row "${what[write_bw]}" write_bw "$(v tcp,bw)" TCP ">=" 0.90
	row "${what[read_lat]}" read_lat "$rtt" TCP "<=" 0.95
	row "${what[atomic_lat]}" atomic_lat "$rtt" rxe "<=" 1.00
	row "${what[atomic_rate]}" atomic_rate - rxe ">=" 4
	echo
	echo "TCP: iperf3 for bandwidth, xiw_tcp_pingpong's busy-polled 8-byte round"
	echo "trip for latency. Servers on b, clients on a; a busy loop (SCHED_IDLE)"
	echo "on b during every run, so that b's vCPU never halts. Without it:"
	echo
	echo "| responder VM b | busy loop | idle | idle/busy loop |"
	echo "|---|---|---|---|"
	for d in "${devs[@]}"; do
		a=$(v "$d,read_lat") b=$(v "$d,read_lat_idle")
		echo "| $d read latency, 8 B, typical us | $a | $b | $(ratio "$b" "$a") |"
	done
	a=$(v tcp,rtt_block) b=$(v tcp,rtt_block_idle)
	echo "| TCP round trip, blocking recv(), us | $a | $b | $(ratio "$b" "$a") |"
	echo "| TCP round trip, busy-polled (b's server spins), us | $rtt | - | - |"
	echo
	echo "Each cell is the median of $R rounds, the devices and TCP taking turns"
	echo "in each round (XIW_BENCH_2VM_ROUNDS); every run, in order:"
	echo
	for k in write_bw read_lat atomic_lat atomic_rate read_lat_idle; do
		for d in "${devs[@]}"; do
			[ -z "${runs[$d,$k]:-}" ] || echo "- ${what[$k]}, $d: ${runs[$d,$k]}"
		done
	done
	for k in rtt rtt_block rtt_block_idle bw; do
		[ -z "${runs[tcp,$k]:-}" ] || echo "- ${what[$k]}: ${runs[tcp,$k]}"
	done
}
declare -A cmwhat=(
	[cm_seq_rate]="connect + teardown cycles, one at a time, per s"
	[cm_seq_est]="establishment, one at a time, median ms"
	[cm_seq_est99]="establishment, one at a time, p99 ms"
	[cm_seq_td]="teardown, one at a time, median ms"
	[cm_seq_td99]="teardown, one at a time, p99 ms"
	[cm_seq_failed]="connects failed, of $CM_SEQ one at a time"
	[cm_seq_retries]="connects retried (EADDRINUSE), one at a time"
	[cm_par_rate]="connect + teardown cycles, $CM_C in flight, per s"
	[cm_par_est]="establishment, $CM_C in flight, median ms"
	[cm_par_est99]="establishment, $CM_C in flight, p99 ms"
	[cm_par_td]="teardown, $CM_C in flight, median ms"
	[cm_par_td99]="teardown, $CM_C in flight, p99 ms"
	[cm_par_failed]="connects failed, of $CM_PAR with $CM_C in flight"
	[cm_par_retries]="connects retried (EADDRINUSE), $CM_C in flight")
cmkeys="cm_seq_rate cm_seq_est cm_seq_est99 cm_seq_td cm_seq_td99 cm_seq_failed
	cm_seq_retries cm_par_rate cm_par_est cm_par_est99 cm_par_td cm_par_td99
	cm_par_failed cm_par_retries"
# the connection rate table
cm_table() {
	local k x s r
	echo "| rdma_cm between two VMs ($(nproc) vCPU each) | xiw | siw | rxe | xiw/siw | xiw/rxe |"
	echo "|---|---|---|---|---|---|"
	for k in $cmkeys; do
		x=$(v "xiw0,$k") s=$(v "siw0,$k") r=$(v "rxe0,$k")
		echo "| ${cmwhat[$k]} | $x | $s | $r | $(ratio "$x" "$s") | $(ratio "$x" "$r") |"
	done
	echo
	echo "xiw_cm_scale rate, server on b, client on a: $CM_SEQ cycles one at a"
	echo "time, $CM_PAR with $CM_C in flight (each a fresh id, address and route"
	echo "resolution, a CQ, an RC QP and an MR of its own on both sides, connect,"
	echo "ESTABLISHED and the client's hello answered, rdma_disconnect,"
	echo "DISCONNECTED, every object destroyed). Each cell the median of $R"
	echo "rounds; every run, in order:"
	echo
	for k in $cmkeys; do
		for d in "${devs[@]}"; do
			[ -z "${runs[$d,$k]:-}" ] || echo "- ${cmwhat[$k]}, $d: ${runs[$d,$k]}"
		done
	done
}
{
	if [[ $parts == *" perf "* ]]; then
		perf_tables
		echo
	fi
	[[ $parts != *" cm "* ]] || cm_table
} | tee perf-2vm-table.md | sed 's/^/BENCH /'
cp perf-2vm-table.md "$XIW_TEST_OUT/perf-2vm-table.md"
if [[ $parts == *" perf "* ]]; then
	[ "$(v xiw0,write_bw)" != n/a ] || fail "no two-VM bandwidth figure for xiw"
	[ "$(v xiw0,read_lat)" != n/a ] || fail "no two-VM Read latency for xiw"
fi
if [[ $parts == *" cm "* ]]; then
	[ "$(v xiw0,cm_seq_rate)" != n/a ] || fail "no two-VM connection rate for xiw"
	[ "$(v xiw0,cm_par_rate)" != n/a ] || fail "no two-VM connection rate in flight for xiw"
fi
