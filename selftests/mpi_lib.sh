# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash disable=SC2034,SC2054
# Open MPI over xiw for the apps_mpi* tests and make bench's mpi_bench,
# sourced after lib.sh.
#
# Transports (arrays of mpirun arguments):
#   MPI_XIW  the PML "cm" over the OFI MTL over libfabric's verbs provider
#            with ofi_rxm (RDM endpoints made of verbs RC QPs), and no BTL
#            but "self": if libfabric cannot open the device the job fails
#            instead of falling back to TCP. mtl_base_verbose makes every
#            rank log the domain it opened ("mtl:ofi:provider: xiw0").
#   MPI_TCP  the PML "ob1" over Open MPI's TCP BTL (and "self").
# Both leave out the shared-memory BTL (vader), so ranks in one VM talk
# over the transport too.
#
# Ranks on other VMs (no ssh in the VMs): mpirun's rsh launcher starts its
# daemon (orted) through $XIW_SELFTESTS/mpi_rsh.sh HOST CMD..., which hands
# CMD to a command server the test started on HOST (mpi_cmd_server: busybox
# nc on MPI_CMD_PORT running mpi_rsh.sh --serve per connection) and relays
# its output and exit status, as ssh would.

MPI_CMD_PORT=${MPI_CMD_PORT:-7750}
MPI_XIW=(--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include 'verbs;ofi_rxm'
	 --mca btl self --mca mtl_base_verbose 100)
MPI_TCP=(--mca pml ob1 --mca btl tcp,self)
# MPI_Barrier's linear algorithm: with three ranks or more its default,
# recursive doubling, hangs over the OFI MTL (verbs;ofi_rxm, libfabric
# 1.17) on siw as on xiw
MPI_BARRIER_LINEAR=(--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_barrier_algorithm 1)

# mpi_env: what every mpirun needs here: the VMs run as root, the xiw
# provider of the build tree (RDMAV_DRIVERS) for the ranks too.
mpi_env() {
	need_cmd mpirun
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
	# no "help" aggregation: every rank's complaint reaches the log
	export OMPI_MCA_orte_base_help_aggregate=0
	export OMPI_MCA_btl_openib_warn_no_device_params_found=0
	export OMPI_MCA_plm_rsh_agent="$XIW_SELFTESTS/mpi_rsh.sh"
	export OMPI_MCA_plm_rsh_no_tree_spawn=1
}

# mpi_cmd_server: serve mpi_rsh.sh on MPI_CMD_PORT of this VM until the
# test ends (deferred kill)
mpi_cmd_server() {
	busybox nc -ll -p "$MPI_CMD_PORT" -e "$XIW_SELFTESTS/mpi_rsh.sh" --serve \
		>>mpi-cmd-server.log 2>&1 &
	local pid=$!
	defer kill_bg "$pid"
	wait_listen "$MPI_CMD_PORT" 10 "$pid"
}

# mpi_xiw_bytes DEV: tx_bytes + rx_bytes of DEV's port 1 (hw counters)
mpi_xiw_bytes() {
	local d=/sys/class/infiniband/$1/ports/1/hw_counters
	echo $(( $(cat $d/tx_bytes) + $(cat $d/rx_bytes) ))
}

# mpi_ofi_check LOG NRANKS DEV: every one of the NRANKS ranks opened DEV
# through the OFI MTL
mpi_ofi_check() {
	local n
	n=$(grep -c "mtl:ofi:provider: $3\$" "$1" || true)
	[ "$n" = "$2" ] || { tail -n 40 "$1"; fail "$1: $n of $2 ranks opened $3 through the OFI MTL"; }
}

# mpi_check_result LOG: the xiw_mpi_check job of LOG ended with ok; prints
# its result line
mpi_check_result() {
	if grep -q '^FAIL' "$1" || ! grep -qx ok "$1"; then
		grep -m5 -E '^FAIL|rror' "$1" || tail -n 20 "$1"
		fail "$1: xiw_mpi_check did not end with ok"
	fi
	grep '^result ' "$1" || fail "$1: no result line"
}

# hpcc_input P Q N NB: a small hpccinf.txt for a P x Q grid, N x N
# matrices in NB blocks (HPL, PTRANS; RandomAccess and FFT are sized from
# the memory HPL uses)
hpcc_input() {
	sed -e "s/^1000 *Ns/$3 Ns/" -e "s/^80 *NBs/$4 NBs/" \
	    -e "s/^2 *Ps/$1 Ps/" -e "s/^2 *Qs/$2 Qs/" \
	    /usr/share/doc/hpcc/examples/_hpccinf.txt >hpccinf.txt
	grep -q "^$3 *Ns" hpccinf.txt && grep -q "^$2 *Qs" hpccinf.txt ||
		fail "hpcc_input: Debian's example hpccinf.txt changed"
}

# hpcc_check OUT: hpcc's own verdicts in its hpccoutf.txt OUT: HPL's
# residual check, PTRANS, every RandomAccess verification, the FFT and no
# failure anywhere
hpcc_check() {
	local f=$1 n
	grep -q 'End of HPL section' "$f" || fail "$f: hpcc did not finish HPL"
	grep -q '^End of LatencyBandwidth section' "$f" || fail "$f: no PingPong section"
	grep -qE '^\|\|Ax-b\|\|_oo/.* PASSED$' "$f" || fail "$f: HPL residual not PASSED"
	expect_eq "$(grep -c '1 tests completed and passed residual checks' "$f")" 1 "$f: HPL tests passed"
	n=$(grep -cE '^WALL .* PASSED ' "$f" || true)
	[ "$n" -ge 1 ] || fail "$f: no PTRANS run PASSED"
	expect_eq "$(grep -cE '^WALL .* FAILED ' "$f" || true)" 0 "$f: PTRANS runs FAILED"
	expect_eq "$(grep -c 'Found 0 errors in .* (passed)' "$f")" 4 "$f: RandomAccess verifications passed"
	expect_eq "$(grep -c 'Found [1-9][0-9]* errors' "$f" || true)" 0 "$f: RandomAccess errors"
	expect_eq "$(grep -cE '[1-9][0-9]* tests completed and failed residual checks' "$f" || true)" 0 "$f: failed residual checks"
}

# hpcc_value OUT KEY: a value of hpcc's summary (KEY=VALUE lines)
hpcc_value() {
	sed -n "s/^$2=//p" "$1" | tail -n 1
}

# hpcc_summary OUT: PingPong latency and bandwidth, RandomAccess, PTRANS
# of hpcc's summary, one line
hpcc_summary() {
	printf 'PingPong %s us %s GB/s, MPIRandomAccess %s GUP/s, PTRANS %s GB/s\n' \
		"$(hpcc_value "$1" MaxPingPongLatency_usec)" \
		"$(hpcc_value "$1" MinPingPongBandwidth_GBytes)" \
		"$(hpcc_value "$1" MPIRandomAccess_GUPs)" \
		"$(hpcc_value "$1" PTRANS_GBs)"
}

# mpi_hostname NAME: this VM's host name for the test (the VMs share one),
# so that Open MPI and the logs tell the ranks' hosts apart
mpi_hostname() {
	local old
	old=$(hostname)
	hostname "$1"
	defer hostname "$old"
}

# mpi_hosts IP...: this VM's part of an MPI job with one rank per VM at
# the IPs (a, b, c order; "hosts" in the test's directory, MPI_NP): the
# environment and host name (mpi-ROLE), the daemons' TCP on the test's
# netdev, and on every VM but a the command server mpirun starts its
# daemon through
mpi_hosts() {
	mpi_env
	mpi_hostname "mpi-$XIW_ROLE"
	export OMPI_MCA_oob_tcp_if_include=$XIW_NETDEV OMPI_MCA_btl_tcp_if_include=$XIW_NETDEV
	[ "$XIW_ROLE" = a ] || mpi_cmd_server
	printf '%s slots=1\n' "$@" >hosts
	MPI_NP=$#
}

# mpi_vms_up IP...: a multi-VM MPI test's setup: xiw0 up, then mpi_hosts
mpi_vms_up() {
	need_prog xiw_mpi_check >/dev/null
	xiw_load
	xiw_need_provider
	xiw_link_add xiw0 "$XIW_NETDEV"
	wait_port_state xiw0 PORT_ACTIVE 5
	mpi_hosts "$@"
}

# mpi_phase NAME MIN TRANSPORT... PROG ARGS...: one mpirun from a with one
# rank on each VM of mpi_vms_up, the others serve it (NAME.log on a). Every
# VM checks that its xiw0 moved at least MIN bytes while it ran (MIN = 0:
# fewer than 1 MiB, the job went elsewhere) and fails with mpirun's
# status, which a passes on.
mpi_phase() {
	local name=$1 min=$2 b0 moved rc=0 t0 words
	shift 2
	b0=$(mpi_xiw_bytes xiw0)
	xiw_barrier "$name-start" 120
	if [ "$XIW_ROLE" = a ]; then
		t0=$(now_us)
		run_timeout 300 mpirun -np "$MPI_NP" --hostfile hosts --map-by node \
			--bind-to none "$@" >"$name.log" 2>&1 || rc=$?
		log "$name: $(( ($(now_us) - t0) / 1000 )) ms, mpirun exited $rc"
	fi
	words=$(xiw_sync "$name-end" "$rc" 400) || fail "$name: no end sync"
	[ "$XIW_ROLE" = a ] || rc=$words
	if [ "$rc" != 0 ]; then
		[ "$XIW_ROLE" != a ] || grep -vE 'mca:base|select:|mtl_ofi' "$name.log" | tail -n 30
		fail "$name: mpirun exited $rc"
	fi
	moved=$(( $(mpi_xiw_bytes xiw0) - b0 ))
	log "$name: xiw0 of $XIW_ROLE moved $moved bytes"
	if [ "$min" = 0 ]; then
		[ "$moved" -lt $((1 << 20)) ] || fail "$name: $moved bytes over xiw0 of $XIW_ROLE"
	else
		[ "$moved" -ge "$min" ] || fail "$name: only $moved bytes over xiw0 of $XIW_ROLE"
	fi
}

# mpi_check_xiw_tcp: on a, after mpi_phase check-xiw and check-tcp ran
# xiw_mpi_check: every rank opened xiw0 in the first, each rank ran on its
# own VM in both ("rank N on mpi-ROLE"), and both jobs got the same result
mpi_check_xiw_tcp() {
	local want="" i r r_xiw r_tcp roles=(a b c)
	[ "$XIW_ROLE" = a ] || return 0
	for ((i = 0; i < MPI_NP; i++)); do
		want+="rank $i on mpi-${roles[i]} "
	done
	mpi_ofi_check check-xiw.log "$MPI_NP" xiw0
	for r in check-xiw.log check-tcp.log; do
		expect_eq "$(grep '^rank ' "$r" | sort | tr '\n' ' ')" "$want" "$r: ranks and hosts"
	done
	r_xiw=$(mpi_check_result check-xiw.log)
	r_tcp=$(mpi_check_result check-tcp.log)
	expect_eq "$r_xiw" "$r_tcp" "xiw_mpi_check result, xiw against TCP"
	log "xiw: $(grep '^lat_us' check-xiw.log)"
	log "tcp: $(grep '^lat_us' check-tcp.log)"
}
