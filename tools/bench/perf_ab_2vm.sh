#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 2vm
# timeout: 5400
# description: A/B of xiw's TX settings between two VMs: the variants of XIW_AB_2VM (module parameters set on both VMs at run time, "NAME:PARAM=VAL,PARAM=VAL", and provider environment variables, "env.VAR=VAL"; default the defaults (16-segment FPDUs, tx_zcopy=auto: zero copy between VMs), tx_zcopy=0, fpdu_segments=1 and both) take turns with iperf3 in XIW_AB_2VM_ROUNDS rounds (default 5) through single-QP RDMA Write, Read and Send bandwidth at 64 KiB and 1 MiB; medians, spread and every run (ab-2vm-table.md)
. "$(dirname "${BASH_SOURCE[0]}")/../../selftests/lib.sh"
. "$XIW_ROOT/tools/bench/bench_lib.sh"
. "$XIW_SELFTESTS/perftest_lib.sh"
#
# Servers on b, clients on a. The module parameters the variants set are
# read when a QP reaches RTS (fpdu_segments) or per work request
# (tx_zcopy), so one boot serves every variant and a variant's link is
# added after its parameters are written; each variant's parameters are
# restored to the module's defaults before the next one. A round runs the
# variants and TCP in a rotating order. XIW_AB_2VM_ITERS (default 2000)
# iterations per 64 KiB run and a tenth of that per 1 MiB run
# (XIW_AB_2VM_ROWS: only these rows; write_4k, write_16k and send_4k,
# with four times the 64 KiB iterations, run only when named there).

need_cmd ib_write_bw ib_read_bw ib_send_bw iperf3 ss
N=${XIW_AB_2VM_ITERS:-2000}
NB=$(((N + 9) / 10))
R=${XIW_AB_2VM_ROUNDS:-5}
read -ra variants <<<"${XIW_AB_2VM:-default: copy:tx_zcopy=0 \
seg1:fpdu_segments=1 seg1copy:fpdu_segments=1,tx_zcopy=0}"
rows=(write_64k write_1m read_64k read_1m send_64k send_1m)
# rows only when named in XIW_AB_2VM_ROWS: the sizes where zero copy's
# threshold is decided (4 and 16 KiB, four times the 64 KiB iterations)
xrows=(write_4k write_16k send_4k)
declare -A runs

row_selected() {
	case " ${XIW_AB_2VM_ROWS:-${rows[*]}} " in *" $1 "*) return 0 ;; esac
	return 1
}
NS=$((N * 4))

bench_2vm_devs
params=/sys/module/$XIW_MOD/parameters
# param_list "P=V,P=V": the assignments of a variant into ps[] (empty
# ones left out)
param_list() {
	local a q
	IFS=, read -ra a <<<"$1"
	ps=()
	for q in "${a[@]}"; do
		[ -z "$q" ] || ps+=("$q")
	done
}
# the defaults, to restore between variants
declare -A dflt
for v in "${variants[@]}"; do
	param_list "${v#*:}"
	for p in "${ps[@]}"; do
		case $p in env.*) continue ;; esac
		k=${p%%=*}
		[ -w "$params/$k" ] || fail "variant ${v%%:*}: no writable module parameter $k"
		[ -n "${dflt[$k]:-}" ] || dflt[$k]=$(cat "$params/$k")
	done
done
# "env.VAR=VAL" in a variant: an environment variable for the provider
# (perftest on both VMs), unset again after the variant
envs=()
set_params() {	# "P=V,P=V" (empty: the defaults)
	local p k
	for k in "${!dflt[@]}"; do
		echo "${dflt[$k]}" >"$params/$k" || fail "cannot restore $k"
	done
	for k in "${envs[@]}"; do
		unset "$k"
	done
	envs=()
	param_list "$1"
	for p in "${ps[@]}"; do
		case $p in
		env.*)	p=${p#env.}
			# shellcheck disable=SC2163
			export "$p"
			envs+=("${p%%=*}") ;;
		*)	echo "${p#*=}" >"$params/${p%%=*}" || fail "cannot set $p" ;;
		esac
	done
}
defer set_params ""

note() {	# NAME KEY VALUE
	[ "$XIW_ROLE" = a ] || return 0
	runs[$1,$2]="${runs[$1,$2]:-}${runs[$1,$2]:+ }$3"
	log "round $round, $1 $2: $3"
}

# cell NAME KEY TOOL ARGS...: one perftest run, its BW average (MB/s)
cell() {
	local name=$1 key=$2
	shift 2
	row_selected "$key" || return 0
	bench_perftest_2vm xiw0 4 "$@"
	note "$name" "$key" "$BENCH_FIG"
}

ip_port=5301
iperf() {	# iperf3 from a to b (bench_iperf_2vm), MB/s
	local v
	ip_port=$((ip_port + 1))
	v=$(bench_iperf_2vm "$ip_port")
	xiw_barrier "iperf$ip_port-done" 120
	note tcp iperf3 "${v:-n/a}"
}

turns=("${variants[@]}" tcp)
for ((round = 1; round <= R; round++)); do
	log "round $round of $R"
	for ((i = 0; i < ${#turns[@]}; i++)); do
		t=${turns[(i + round - 1) % ${#turns[@]}]}
		if [ "$t" = tcp ]; then
			iperf
			continue
		fi
		name=${t%%:*}
		set_params "${t#*:}"
		xiw_link_add xiw0 "$XIW_NETDEV"
		wait_port_state xiw0 PORT_ACTIVE 5
		cell "$name" write_64k ib_write_bw -s 65536 -n "$N"
		cell "$name" write_1m ib_write_bw -s 1048576 -n "$NB"
		cell "$name" read_64k ib_read_bw -s 65536 -n "$N"
		cell "$name" read_1m ib_read_bw -s 1048576 -n "$NB"
		cell "$name" send_64k ib_send_bw -s 65536 -n "$N"
		cell "$name" send_1m ib_send_bw -s 1048576 -n "$NB"
		cell "$name" write_4k ib_write_bw -s 4096 -n "$NS"
		cell "$name" write_16k ib_write_bw -s 16384 -n "$NS"
		cell "$name" send_4k ib_send_bw -s 4096 -n "$NS"
		rdma link delete xiw0
		wait_for 5 eval "! ib_dev_exists xiw0" || fail "xiw0 still registered"
		xiw_barrier "$name-down-$round" 60
	done
done
[ "$XIW_ROLE" = a ] || exit 0

# spread: the lowest and highest figure of the rounds
spread() {
	local lo hi
	lo=$(bench_best "$1" low) hi=$(bench_best "$1" high)
	[ "$lo" = n/a ] && echo "-" || echo "$lo-$hi"
}
tcpm=$(bench_median "${runs[tcp,iperf3]:-}")
{
	echo "| two VMs ($(nproc) vCPU each), MB/s |$(for v in "${variants[@]}"; do
		printf ' %s |' "${v%%:*}"; done) ${variants[0]%%:*}/iperf3 |"
	echo "|---|$(for v in "${variants[@]}"; do printf -- '---|'; done)---|"
	for k in "${rows[@]}" "${xrows[@]}"; do
		row_selected "$k" || continue
		printf '| %s |' "$k"
		for v in "${variants[@]}"; do
			r=${runs[${v%%:*},$k]:-}
			printf ' %s (%s) |' "$(bench_median "$r")" "$(spread "$r")"
		done
		printf ' %s |\n' "$(bench_ratio "$(bench_median "${runs[${variants[0]%%:*},$k]:-}")" "$tcpm")"
	done
	echo "| iperf3, 64 KiB writes | $tcpm ($(spread "${runs[tcp,iperf3]:-}")) |"
	echo
	echo "Medians of $R rounds (lowest-highest); variants:"
	for v in "${variants[@]}"; do echo "- ${v%%:*}: ${v#*:}"; done
	echo
	echo "Every run, in order:"
	for k in "${!runs[@]}"; do echo "- $k: ${runs[$k]}"; done | sort
} | tee ab-2vm-table.md | sed 's/^/BENCH /'
cp ab-2vm-table.md "$XIW_TEST_OUT/ab-2vm-table.md" 2>/dev/null || true
