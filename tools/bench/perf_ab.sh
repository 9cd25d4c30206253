#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 2400
# description: A/B of xiw modules in one boot: XIW_AB_KOS (space-separated .ko paths; "NAME=PATH" names a variant, "NAME=PATH:ENV=VAL" adds a provider environment variable, "NAME=PATH:mod.PARAM=VAL" sets a module parameter) take turns XIW_AB_ROUNDS times (default 2) through the perf_table rows and 4 KiB Write and Send bandwidth (write_bw_4k, send_bw_4k), the copied sizes below a page (write_bw_2k, send_bw_1k) 1 MiB Writes windowed and one at a time (write_bw_1m, write_bw_1m_qd1) and fi_pingpong over rxm, 8 bytes (rxm_pp, us) on xiw0 (XIW_AB_ROWS: only these); prints every run and the per-variant medians (ab-table.md)
. "$(dirname "${BASH_SOURCE[0]}")/../../selftests/lib.sh"
. "$XIW_SELFTESTS/perftest_lib.sh"

need_cmd ib_write_bw ib_read_bw ib_send_bw ib_write_lat ib_send_lat \
	ib_read_lat ib_atomic_bw ib_atomic_lat ip ss
N=${XIW_BENCH_ITERS:-2000}
[ -n "${XIW_AB_KOS:-}" ] || skip "XIW_AB_KOS not set"
xiw_need_provider
dummy_add d0
ip addr add 192.0.2.1/24 dev d0

rows=(atomic_rate atomic_lat read_lat write_lat send_lat write_bw read_bw
      send_bw write_bw_4k send_bw_4k write_bw_2k send_bw_1k write_bw_1m
      write_bw_1m_qd1 rxm_pp)
declare -A val
# row_selected KEY: KEY is one of XIW_AB_ROWS (default: every row)
row_selected() {
	case " ${XIW_AB_ROWS:-${rows[*]}} " in *" $1 "*) return 0 ;; esac
	return 1
}
cell() {
	local key=$1 col r
	shift
	row_selected "$key" || return 0
	case $1 in
	*_lat) col=5 ;;
	ib_atomic_bw) col=5 ;;
	*) col=4 ;;
	esac
	if r=$(perftest_local xiw0 192.0.2.1 "$@" 2>perf.err); then
		r=$(awk -v c=$col '{ print $c }' <<<"$r")
	else
		r=n/a
	fi
	val[$variant,$key]="${val[$variant,$key]:-} $r"
	log "$variant round $round $key: $r"
	PERFTEST_PORT=$((PERFTEST_PORT + 8))
	pkill -f "^$1 .*-p [0-9]" 2>/dev/null || true
}

# rxm_cell: fi_pingpong's 8-byte ping-pong over libfabric's rxm on verbs
# (what MPI's small messages take), usec/xfer, as row rxm_pp
rxm_cell() {
	local r srv port ep=(-p "verbs;ofi_rxm" -e rdm -I "$N" -S 8)
	row_selected rxm_pp || return 0
	if ! command -v fi_pingpong >/dev/null; then
		val[$variant,rxm_pp]="${val[$variant,rxm_pp]:-} n/a"
		return 0
	fi
	port=$((PERFTEST_PORT + 1))
	PERFTEST_PORT=$((PERFTEST_PORT + 8))
	run_timeout 90 fi_pingpong "${ep[@]}" -B "$port" >fipp-srv.log 2>&1 &
	srv=$!
	wait_listen "$port" 30 "$srv" fipp-srv.log
	run_timeout 80 fi_pingpong "${ep[@]}" -P "$port" 192.0.2.1 \
		>fipp.log 2>&1 || sed 's/^/#   fi_pingpong: /' fipp.log | tail -5
	wait "$srv" || sed 's/^/#   fi_pingpong server: /' fipp-srv.log | tail -5
	# the 8-byte row: bytes, iters, "=" iters, total, time, MB/sec,
	# usec/xfer, Mxfers/sec
	r=$(awk '$1 == "8" && $7 ~ /^[0-9.]+$/ && $7 > 0 { v = $7 }
		END { print v ? v : "n/a" }' fipp.log)
	val[$variant,rxm_pp]="${val[$variant,rxm_pp]:-} $r"
	log "$variant round $round rxm_pp: $r"
}

variants=()
for round in $(seq "${XIW_AB_ROUNDS:-2}"); do
	for spec in $XIW_AB_KOS; do
		variant=${spec%%=*}
		[ "$variant" = "$spec" ] && variant=$(basename "$spec" .ko)
		[ "$round" = 1 ] && variants+=("$variant")
		ko=${spec#*=}
		envset=
		case $ko in *:*) envset=${ko#*:} ko=${ko%%:*} ;; esac
		xiw_unload
		XIW_KO=$ko xiw_load
		case $envset in
		mod.*)	# a module parameter: mod.NAME=VAL
			p=${envset#mod.}
			echo "${p#*=}" >"/sys/module/$XIW_MOD/parameters/${p%%=*}" ||
				fail "$variant: module parameter ${p%%=*}"
			envset= ;;
		esac
		# the variable's value before this variant (e.g. RDMAV_DRIVERS,
		# which lib.sh set to the built provider), restored after it
		envname=${envset%%=*}
		envold=
		[ -z "$envset" ] || envold=$(declare -p "$envname" 2>/dev/null) || true
		# shellcheck disable=SC2163
		[ -z "$envset" ] || export "$envset"
		xiw_link_add xiw0 d0
		wait_port_state xiw0 PORT_ACTIVE 5
		cell atomic_rate ib_atomic_bw -A FETCH_AND_ADD -n "$N"
		cell atomic_lat ib_atomic_lat -A FETCH_AND_ADD -n "$N"
		cell read_lat ib_read_lat -s 8 -n "$N"
		cell write_lat ib_write_lat -s 8 -n "$N"
		cell send_lat ib_send_lat -s 8 -n "$N"
		cell write_bw ib_write_bw -s 65536 -n "$N"
		cell read_bw ib_read_bw -s 65536 -n "$N"
		cell send_bw ib_send_bw -s 65536 -n "$N"
		# storage's block size (NVMe-oF, iSER, NFS pages)
		cell write_bw_4k ib_write_bw -s 4096 -n "$N"
		cell send_bw_4k ib_send_bw -s 4096 -n "$N"
		# below a page a user QP's payload is copied (no zero-copy)
		cell write_bw_2k ib_write_bw -s 2048 -n "$N"
		cell send_bw_1k ib_send_bw -s 1024 -n "$N"
		# 1 MiB Writes, a window of them and one at a time (-t 1: each
		# post follows the last completion, so it rings the doorbell)
		cell write_bw_1m ib_write_bw -s 1048576 -n $((N / 8 + 1))
		cell write_bw_1m_qd1 ib_write_bw -s 1048576 -t 1 -n $((N / 8 + 1))
		rxm_cell
		if [ -n "$envset" ]; then
			unset "$envname"
			[ -z "$envold" ] || eval "$envold"
		fi
		rdma link delete xiw0
		wait_for 5 eval "! ib_dev_exists xiw0" || fail "xiw0 still registered"
	done
done
xiw_unload

median() { tr ' ' '\n' | { grep -E '^[0-9.]+$' || true; } | sort -g |
	awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2); else print "n/a" }'; }
{
	printf '| row |'; printf ' %s |' "${variants[@]}"; echo
	printf '|---|'; printf -- '---|%.0s' "${variants[@]}"; echo
	for k in "${rows[@]}"; do
		row_selected "$k" || continue
		printf '| %s |' "$k"
		for v in "${variants[@]}"; do
			printf ' %s (%s) |' "$(median <<<"${val[$v,$k]}")" "${val[$v,$k]# }"
		done
		echo
	done
} | tee ab-table.md | sed 's/^/BENCH /'
cp ab-table.md "$XIW_TEST_OUT/ab-table.md" 2>/dev/null || true
