#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 2vm
# timeout: 1800
# description: where the CPU of a single-QP bulk stream between two VMs goes, xiw against TCP in one boot: each run of XIW_PROF2_RUNS (default write_64k write_64k_idle qperf_write qperf_send qperf_tcp iperf3) gives its MB/s, each VM's busy, user, system, softirq and idle shares from /proc/stat and its TCP connections' state (ss -tinm) in a window inside the run; with XIW_BENCH_INSN=1 under XIW_QEMU=tools/tcgprof/qemu-tcgprof.sh also each VM's guest instructions per MiB that crossed the link (all, user, per kernel function); prof2-table-ROLE.md
. "$(dirname "${BASH_SOURCE[0]}")/../../selftests/lib.sh"
. "$XIW_ROOT/tools/bench/bench_lib.sh"
. "$XIW_SELFTESTS/perftest_lib.sh"
#
# A stream that moves less than TCP over the same link is either short of
# CPU - the guest's, or under TCG the host's, which both VMs share - or
# waiting (a window, an acknowledgement, a work item not run). The
# shares tell a busy vCPU from a waiting one, the TCP state what the
# connection waited for, the instruction counts what each byte cost on
# each side, user space included: perftest busy-polls its CQ on the
# client, and its server (-R) spins on the CQ for the end-of-test
# handshake, so neither VM's vCPU ever halts, and under TCG a spinning
# vCPU takes a host core that the other VM's packet processing needs.
# The runs:
# - write_64k: ib_write_bw -s 65536, 10 s (-D);
# - write_64k_idle: the same with both perftest processes at SCHED_IDLE
#   (the poll gets only what the VM does not use);
# - qperf_write, qperf_send: qperf rc_rdma_write_bw and rc_bw, 64 KiB,
#   8 s, waiting for CQ events (-cp 0) as iperf3 waits in send and recv;
# - qperf_tcp: qperf tcp_bw, the same sizes over TCP; iperf3: 64 KiB
#   writes, 5 s.
# Then small messages (XIW_PROF2_LAT, below).
# Also: send_64k, read_64k (ib_send_bw, ib_read_bw), qperf_read
# (rc_rdma_read_bw).

need_cmd ib_write_bw ib_read_bw ib_send_bw iperf3 qperf ss chrt
D=10
runs=${XIW_PROF2_RUNS:-write_64k write_64k_idle qperf_write qperf_send qperf_tcp iperf3}

xiw_load
xiw_link_add xiw0 "$XIW_NETDEV"
wait_port_state xiw0 PORT_ACTIVE 5

# cpu_ticks: user nice system idle iowait irq softirq steal of all CPUs
cpu_ticks() { awk '$1 == "cpu" { print $2, $3, $4, $5, $6, $7, $8, $9 }' /proc/stat; }

# shares BEFORE AFTER: busy user sys softirq idle in percent
shares() {
	awk -v a="$1" -v b="$2" 'BEGIN {
		split(a, x, " "); split(b, y, " ")
		for (i = 1; i <= 8; i++) { d[i] = y[i] - x[i]; t += d[i] }
		if (t <= 0) { print "- - - - -"; exit }
		printf "%.0f %.0f %.0f %.0f %.0f\n", 100 * (t - d[4] - d[5]) / t,
			100 * (d[1] + d[2]) / t, 100 * d[3] / t,
			100 * (d[6] + d[7]) / t, 100 * (d[4] + d[5]) / t
	}'
}

port=5401
mkdir -p bin
printf '#!/bin/sh\nexec chrt --idle 0 ib_write_bw "$@"\n' >bin/idle_ib_write_bw
chmod +x bin/idle_ib_write_bw
PATH=$PWD/bin:$PATH
declare -A fig share bytes
qport=19765
# qperf_2vm TEST: qperf (RDMA tests: rdma_cm, CQ events: -cp 0) from a to b for 8 s,
# 64 KiB messages; a prints MB/s (n/a if none), b nothing
qperf_2vm() {
	local srv v rdma=(-cm1 -cp 0)
	[[ $1 != tcp_* ]] || rdma=()
	qport=$((qport + 1))
	if [ "$XIW_ROLE" = b ]; then
		run_timeout 60 qperf -lp "$qport" >qperf.log 2>&1 &
		srv=$!
		(wait_listen "$qport" 10 "$srv" qperf.log) || true
		xiw_barrier "qperf$qport-listen" 30
		xiw_barrier "qperf$qport-done" 60
		kill_bg "$srv"
		wait "$srv" 2>/dev/null || true
		return 0
	fi
	xiw_barrier "qperf$qport-listen" 30
	v=$(run_timeout 40 qperf -lp "$qport" "${rdma[@]}" -t 8 -m 64K -uu \
		"$XIW_PEER_IP" "$1" 2>&1 | tee qperf.out | awk '$1 == "bw" && $2 == "=" {
		printf "%.1f", $3 / 1e6 }') || true
	xiw_barrier "qperf$qport-done" 60
	[ -n "$v" ] || sed 's/^/#   qperf: /' qperf.out >&2
	echo "${v:-n/a}"
}
# link_bytes: bytes sent and received on the link
link_bytes() {
	echo $(($(cat "/sys/class/net/$XIW_NETDEV/statistics/tx_bytes") +
		$(cat "/sys/class/net/$XIW_NETDEV/statistics/rx_bytes")))
}
# XIW_BENCH_INSN=1 (with XIW_QEMU=tools/tcgprof/qemu-tcgprof.sh): guest
# instructions per MiB that crosses the link, per kernel function
insn=
ctl=$XIW_TEST_OUT
if [ "${XIW_BENCH_INSN:-0}" = 1 ]; then
	insn=1
	echo 0 >/proc/sys/kernel/kptr_restrict
fi
for r in $runs; do
	xiw_barrier "prof2-$r-start" 60
	P=4
	[ "$r" != iperf3 ] || P=2
	# the shares, the TCP state and the instruction counts of each VM
	# in a window of P s inside the run: from its second second on
	# (iperf3's 5 s and warm-up are shorter)
	(
		sleep 1
		t0=$(cpu_ticks)
		n0=$(link_bytes)
		[ -z "$insn" ] || bench_insn_start "$r"
		sleep "$P"
		[ -z "$insn" ] || bench_insn_stop "$r"
		shares "$t0" "$(cpu_ticks)" >"prof2-$r.share"
		echo $(($(link_bytes) - n0)) >"prof2-$r.bytes"
		ss -tinmH state established >"prof2-$r.ss"
	) &
	rec=$!
	case $r in
	iperf3)
		port=$((port + 1))
		BENCH_FIG=$(bench_iperf_2vm "$port")
		xiw_barrier "prof2-iperf$port-done" 120
		;;
	write_64k) bench_perftest_2vm xiw0 4 ib_write_bw -s 65536 -D "$D" ;;
	send_64k) bench_perftest_2vm xiw0 4 ib_send_bw -s 65536 -D "$D" ;;
	read_64k) bench_perftest_2vm xiw0 4 ib_read_bw -s 65536 -D "$D" ;;
	# qperf, which waits for CQ events instead of polling
	qperf_write) BENCH_FIG=$(qperf_2vm rc_rdma_write_bw) ;;
	qperf_read) BENCH_FIG=$(qperf_2vm rc_rdma_read_bw) ;;
	qperf_send) BENCH_FIG=$(qperf_2vm rc_bw) ;;
	qperf_tcp) BENCH_FIG=$(qperf_2vm tcp_bw) ;;
	# perftest at SCHED_IDLE: its polling only gets what TX leaves
	write_64k_idle) bench_perftest_2vm xiw0 4 idle_ib_write_bw -s 65536 -D "$D" ;;
	*) fail "unknown run $r" ;;
	esac
	wait "$rec" || true
	fig[$r]=${BENCH_FIG:-n/a}
	share[$r]=$(cat "prof2-$r.share")
	bytes[$r]=$(cat "prof2-$r.bytes")
	sed 's/^/#   ss: /' "prof2-$r.ss"
	log "$XIW_ROLE $r: ${fig[$r]} MB/s; busy user sys softirq idle: ${share[$r]}; link bytes ${bytes[$r]}"
	if [ -n "$insn" ]; then
		f=$ctl/prof-$r.txt
		log "$XIW_ROLE $r: instructions per MiB on the link, all, user and xiw.ko: $(
			bench_insn_report "$f" "${bytes[$r]}" MiB 2>"prof2-$r.top")"
		cat "prof2-$r.top"
	fi
done
{
	echo "| $XIW_ROLE, run | MB/s | busy % | user % | sys % | softirq % | idle % |"
	echo "|---|---|---|---|---|---|---|"
	for r in $runs; do
		# shellcheck disable=SC2086
		set -- ${share[$r]}
		echo "| $r | ${fig[$r]} | $1 | $2 | $3 | $4 | $5 |"
	done
} | tee "prof2-table-$XIW_ROLE.md" | sed 's/^/BENCH /'
cp "prof2-table-$XIW_ROLE.md" "$XIW_TEST_OUT/" 2>/dev/null || true
bench_2vm_dev_down xiw0

# --- small messages: what MPI's ping-pong sends --------------------------------
# ib_send_lat -s 72 (an rxm eager message of 8 bytes), with perftest's
# default inline size (mode "inline") and without inline (-I 0, mode
# "noinline"), and fi_pingpong's 8-byte ping-pong over libfabric's rxm
# on verbs (mode "rxm8", what MPI's small messages take), on xiw and on
# siw, one device at a time, XIW_PROF2_LAT_ROUNDS rounds (default 3;
# medians; XIW_PROF2_LAT=0 leaves it out): perftest's typical latency or
# fi_pingpong's usec/xfer, and per iteration (a message each way, and
# whatever rxm adds) the TCP segments both VMs sent (Tcp OutSegs) and
# their context switches (ctxt of /proc/stat)
[ "${XIW_PROF2_LAT:-1}" != 0 ] || { log ok; exit 0; }
need_cmd ib_send_lat fi_pingpong
NL=${XIW_PROF2_LAT_ITERS:-2000}
fport=7400
# fipp_2vm: fi_pingpong -S 8 over verbs;ofi_rxm from a to b (server on
# b), NL iterations; BENCH_FIG: a's usec/xfer (n/a on b, or if it failed)
fipp_2vm() {
	local srv ep=(-p "verbs;ofi_rxm" -e rdm -I "$NL" -S 8)
	fport=$((fport + 1))
	BENCH_FIG=n/a
	if [ "$XIW_ROLE" = b ]; then
		run_timeout 90 fi_pingpong "${ep[@]}" -B "$fport" >fipp.log 2>&1 &
		srv=$!
		(wait_listen "$fport" 10 "$srv" fipp.log) || true
		xiw_barrier "fipp$fport-listen" 30
		xiw_barrier "fipp$fport-done" 120
		wait "$srv" || sed 's/^/#   fi_pingpong server: /' fipp.log | tail -5
		return 0
	fi
	xiw_barrier "fipp$fport-listen" 30
	run_timeout 80 fi_pingpong "${ep[@]}" -P "$fport" "$XIW_PEER_IP" \
		>fipp.log 2>&1 || sed 's/^/#   fi_pingpong: /' fipp.log | tail -5
	xiw_barrier "fipp$fport-done" 120
	# the row of the 8-byte size: bytes, iters, "=" iters, total, time,
	# MB/sec, usec/xfer, Mxfers/sec (iters as 2k)
	BENCH_FIG=$(awk '$1 == "8" && $7 ~ /^[0-9.]+$/ && $7 > 0 { v = $7 }
		END { print v ? v : "n/a" }' fipp.log)
	[ "$BENCH_FIG" != n/a ] || sed 's/^/#   fi_pingpong: /' fipp.log | tail -5
}
bench_2vm_devs siw
# out_segs: this VM's TCP segments sent so far
out_segs() { awk '$1 == "Tcp:" && $2 ~ /^[0-9]/ { print $12 }' /proc/net/snmp; }
ctxt() { awk '$1 == "ctxt" { print $2 }' /proc/stat; }
declare -A lat per
RL=${XIW_PROF2_LAT_ROUNDS:-3}
for ((round = 1; round <= RL; round++)); do
	for dev in "${devs[@]}"; do
		bench_2vm_dev_up "$dev"
		for mode in inline noinline rxm8; do
			k=$dev,$mode
			s0=$(out_segs) c0=$(ctxt)
			case $mode in
			inline) bench_perftest_2vm "$dev" 5 ib_send_lat -s 72 -n "$NL" ;;
			noinline) bench_perftest_2vm "$dev" 5 ib_send_lat -s 72 -n "$NL" -I 0 ;;
			rxm8) fipp_2vm ;;
			esac
			segs=$(($(out_segs) - s0)) cs=$(($(ctxt) - c0))
			# both VMs' counts, a's first
			both=$(xiw_sync "lat-$round-$k" "$segs:$cs" 60) ||
				fail "peer lost"
			[ "$XIW_ROLE" = a ] || continue
			lat[$k]="${lat[$k]:-}${lat[$k]:+ }$BENCH_FIG"
			p=$(awk -v n="$NL" -v m="$segs:$cs" -v p="$both" 'BEGIN {
				split(m, x, ":"); split(p, y, ":")
				printf "%.2f:%.2f:%.2f:%.2f", x[1] / n, y[1] / n, x[2] / n, y[2] / n }')
			per[$k]="${per[$k]:-}${per[$k]:+ }$p"
			log "round $round, $dev $mode: $BENCH_FIG us; per message: segments a:b, context switches a:b: $p"
		done
		bench_2vm_dev_down "$dev"
	done
done
# med KEY FIELD: the median over the rounds of field FIELD (1-4) of per[KEY]
med() {
	bench_median "$(tr ' ' '\n' <<<"${per[$1]:-}" | cut -d: -f"$2" | tr '\n' ' ')"
}
if [ "$XIW_ROLE" = a ]; then
	{
		echo "| 72-byte Send (ib_send_lat) and rxm 8-byte ping-pong (fi_pingpong), two VMs, medians of $RL rounds | us (rounds) | segments/msg a | b | context switches/msg a | b |"
		echo "|---|---|---|---|---|---|"
		for dev in "${devs[@]}"; do
			for mode in inline noinline rxm8; do
				k=$dev,$mode
				echo "| $dev, $mode | $(bench_median "${lat[$k]:-}") (${lat[$k]:-}) | $(med "$k" 1) | $(med "$k" 2) | $(med "$k" 3) | $(med "$k" 4) |"
			done
		done
	} | tee prof2-lat.md | sed 's/^/BENCH /'
	cp prof2-lat.md "$XIW_TEST_OUT/" 2>/dev/null || true
fi
log ok
