#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 2400
# description: guest instructions per op, per kernel function, for xiw, siw and rxe side by side (XIW_INSN_DEVS, XIW_INSN_ROWS: write_lat send_lat read_lat atomic_lat, also atomic_rate, write_bw, read_bw, write_bw_4k; XIW_INSN_MTU sets lo's MTU, 1500 for the MSS of 1448 a real link gives), counted by qemu itself (tools/tcgprof: run with XIW_QEMU=tools/tcgprof/qemu-tcgprof.sh, as scripts/bench.sh does); each row runs twice (XIW_INSN_ITERS/4 and XIW_INSN_ITERS iterations, default 4000; ten times that for atomic_rate and write_bw_4k) and the difference, per iteration, drops perftest's start and teardown; prints the totals and each device's hottest functions (XIW_INSN_TOP, default 30); with XIW_INSN_TCP=1 (default) also the kernel instructions of one 8-byte TCP round trip (xiw_tcp_pingpong, blocking and busy-polled: rows tcp_rtt, tcp_rtt_poll)
. "$(dirname "${BASH_SOURCE[0]}")/../../selftests/lib.sh"
. "$XIW_SELFTESTS/perftest_lib.sh"
. "$XIW_ROOT/tools/bench/bench_lib.sh"

need_cmd ib_write_lat ib_send_lat ib_read_lat ib_atomic_lat ib_atomic_bw \
	ib_write_bw ib_read_bw
N=${XIW_INSN_ITERS:-4000}
Q=$((N / 4))
ctl=$XIW_TEST_OUT
mkdir -p "$ctl"
echo 0 >/proc/sys/kernel/kptr_restrict
# one address space layout for every perftest process, so that the
# plugin can split user space by file with one process's maps
defer sh -c "echo $(cat /proc/sys/kernel/randomize_va_space) >/proc/sys/kernel/randomize_va_space"
echo 0 >/proc/sys/kernel/randomize_va_space

mark_start() { bench_insn_start "$1" skip; }
mark_stop() { bench_insn_stop "$1"; }

# the plugin must answer before the devices exist
mark_start probe
mark_stop probe
. "$XIW_ROOT/tools/bench/bench_devs.sh"

declare -A cmd=(
	[write_lat]="ib_write_lat -s 8" [send_lat]="ib_send_lat -s 8"
	[read_lat]="ib_read_lat -s 8"
	[atomic_lat]="ib_atomic_lat -A FETCH_AND_ADD"
	[atomic_rate]="ib_atomic_bw -A FETCH_AND_ADD"
	[write_bw]="ib_write_bw -s 65536" [read_bw]="ib_read_bw -s 65536"
	[write_bw_4k]="ib_write_bw -s 4096")
rows=(${XIW_INSN_ROWS:-write_lat send_lat read_lat atomic_lat})
for r in "${rows[@]}"; do
	[ -n "${cmd[$r]:-}" ] || fail "unknown row $r"
done

# per_op LABEL MULT [EXT]: "INSNS/op NAME" lines, the N-iteration count
# minus the N/4 one over the iterations between them; EXT "blocks": per
# block of the modules the plugin lists one by one (XIW_TCGPROF_BLOCKS)
per_op() {
	awk -v m=$(($2 * (N - Q))) 'FNR == NR { a[substr($0, index($0, $3))] = $1; next }
		{ k = substr($0, index($0, $3)); d = ($1 - a[k]) / m
		  if (d > 0) printf "%.1f %s\n", d, k }' \
		"$ctl/prof-$1-a.${3:-txt}" "$ctl/prof-$1-b.${3:-txt}" | sort -rn
}
total() { awk -v k="$2" 'substr($0, index($0, $2)) == k { print $1; f = 1 } END { if (!f) print "n/a" }' "$1"; }

# marked LABEL DEV TOOL ARGS...: one perftest run on DEV, counted from
# when its server listens (no polling for the listener counted) until
# both ends exited; a refused client (perftest's relisten race, which the
# bench's tc filter normally hides) is run again
marked() {
	local label=$1 dev=$2 t=$3 try srv rc p
	shift 3
	for try in 1 2 3; do
		PERFTEST_PORT=$((PERFTEST_PORT + 1))
		run_timeout 150 "$t" -R -d "$dev" -p "$PERFTEST_PORT" "$@" >srv.log 2>&1 &
		srv=$!
		wait_listen "$PERFTEST_PORT" 30 "$srv" srv.log
		# the server has loaded libibverbs' providers (perftest finds
		# its device first): its maps are every perftest's
		p=$(pgrep -n -x "$t") && cat "/proc/$p/maps" >"$ctl/prof.maps" ||
			rm -f "$ctl/prof.maps"
		mark_start "$label"
		rc=0
		run_timeout 140 "$t" -R -d "$dev" -p "$PERFTEST_PORT" "$@" "${addr[$dev]}" \
			>cli.log 2>&1 || rc=$?
		wait "$srv" || rc=$((rc ? rc : 1))
		mark_stop "$label"
		[ $rc != 0 ] || return 0
		retry_note "$label: $t failed (try $try): $(tail -2 cli.log | tr '\n' ' ')"
	done
	fail "$label: $t failed 3 times"
}

# XIW_INSN_MTU: lo's MTU for the runs, so that FPDUs take the size a real
# link gives them (1500: an MSS of 1448, as between the bench's two VMs)
if [ -n "${XIW_INSN_MTU:-}" ]; then
	defer ip link set lo mtu "$(cat /sys/class/net/lo/mtu)"
	ip link set lo mtu "$XIW_INSN_MTU" || fail "cannot set lo's MTU to $XIW_INSN_MTU"
	log "lo MTU $XIW_INSN_MTU"
fi

declare -A tab
for dev in ${XIW_INSN_DEVS:-${devs[@]}}; do
	dev_up "$dev"
	for r in "${rows[@]}"; do
		if [ "$dev" = siw0 ] && [[ $r == atomic_* ]]; then
			continue	# siw has no atomics
		fi
		# the cheap rows run ten times the iterations: their ops must
		# outweigh the run-to-run spread of perftest's start and end
		case $r in atomic_rate|write_bw_4k) m=10 ;; *) m=1 ;; esac
		for pass in a b; do
			[ $pass = a ] && n=$((Q * m)) || n=$((N * m))
			# shellcheck disable=SC2086
			marked "$dev-$r-$pass" "$dev" ${cmd[$r]} -n "$n"
		done
		per_op "$dev-$r" $m >"$ctl/insn-$dev-$r.txt"
		if [ -e "$ctl/prof-$dev-$r-b.blocks" ]; then
			per_op "$dev-$r" $m blocks >"$ctl/insn-$dev-$r-blocks.txt"
		fi
		for k in all user "module vmlinux" "module ${type[$dev]}" "module rdma_${type[$dev]}"; do
			v=$(total "$ctl/insn-$dev-$r.txt" "[$k]")
			[ "$v" = n/a ] || tab[$dev,$r,$k]=$v
		done
		log "$dev $r: $(head -c 300 "$ctl/insn-$dev-$r.txt" | tr '\n' ';')"
		grep '^[0-9.]* \[user ' "$ctl/insn-$dev-$r.txt" | sed "s/^/# $dev $r: /" || true
		awk -v t="${XIW_INSN_TOP:-30}" -v p="# $dev $r: " \
			'$2 !~ /^\[/ && n++ < t { print p $0 }' "$ctl/insn-$dev-$r.txt"
	done
	dev_down "$dev"
done

# The TCP floor counted the same way (XIW_INSN_TCP, default 1): the
# kernel instructions of one 8-byte round trip between two processes on
# TCP sockets over the same path, xiw_tcp_pingpong with blocking recv()
# (tcp_rtt: the work of the round trip, its wakeups included) and
# busy-polled (tcp_rtt_poll: as make bench's floor runs, every empty
# recv() counted too), beside what a Read or FetchAdd costs the kernel.
# marked_tcp LABEL ARGS...: one counted ping-pong run
marked_tcp() {
	local label=$1 pp srv
	shift
	pp=$(need_prog xiw_tcp_pingpong)
	"$pp" -s 192.0.2.1 7791 >srv.log 2>&1 &
	srv=$!
	wait_listen 7791 10 "$srv" srv.log
	mark_start "$label"
	run_timeout 140 "$pp" -c 192.0.2.1 7791 "$@" >cli.log 2>&1 ||
		fail "$label: $(cat cli.log srv.log)"
	wait "$srv" || fail "$label: server: $(cat srv.log)"
	mark_stop "$label"
}
tcp_rows=()
if [ "${XIW_INSN_TCP:-1}" = 1 ]; then
	for r in tcp_rtt tcp_rtt_poll; do
		for pass in a b; do
			[ $pass = a ] && n=$Q || n=$N
			if [ $r = tcp_rtt ]; then
				marked_tcp "tcp-$r-$pass" -n "$n" --block
			else
				marked_tcp "tcp-$r-$pass" -n "$n"
			fi
		done
		per_op "tcp-$r" 1 >"$ctl/insn-tcp-$r.txt"
		for k in all user; do
			v=$(total "$ctl/insn-tcp-$r.txt" "[$k]")
			[ "$v" = n/a ] || tab[tcp,$r,$k]=$v
		done
		tcp_rows+=("$r")
		log "tcp $r: $(head -c 300 "$ctl/insn-tcp-$r.txt" | tr '\n' ';')"
	done
fi

# user space is mostly perftest busy-polling: what it counts is time
# spent waiting, not work
{
	echo "| row | device | kernel instructions / op | in the device's module | user space (polling included) |"
	echo "|---|---|---|---|---|"
	for r in "${rows[@]}"; do
		for dev in ${XIW_INSN_DEVS:-${devs[@]}}; do
			m=${tab[$dev,$r,module ${type[$dev]}]:-${tab[$dev,$r,module rdma_${type[$dev]}]:-}}
			[ -n "${tab[$dev,$r,all]:-}$m" ] || continue
			# a loaded host can make the whole VM's count of the
			# short run exceed the long one's (per_op drops what is
			# not positive): that total is n/a, the module's stays
			awk -v a="${tab[$dev,$r,all]:-}" -v u="${tab[$dev,$r,user]:-0}" -v m="${m:-0}" \
				-v r="$r" -v d="$dev" 'BEGIN {
				k = a == "" ? "n/a" : sprintf("%.0f", a - u)
				printf "| %s | %s | %s | %.0f | %.0f |\n", r, d, k, m, u }'
		done
	done
	for r in "${tcp_rows[@]}"; do
		[ -n "${tab[tcp,$r,all]:-}" ] || continue
		awk -v a="${tab[tcp,$r,all]}" -v u="${tab[tcp,$r,user]:-0}" \
			-v r="$r" 'BEGIN {
			printf "| %s | TCP | %.0f | - | %.0f |\n", r, a - u, u }'
	done
} >insn-table.md
sed 's/^/BENCH /' insn-table.md
cp insn-table.md "$ctl/"
