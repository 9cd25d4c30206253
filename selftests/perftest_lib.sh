# SPDX-License-Identifier: GPL-2.0
# perftest helpers for the VM tests (sourced after lib.sh).
#
# Two perftest failures that are perftest's own are retried; every other
# failure fails the test:
# * perftest measures its clock against gettimeofday() before it reports;
#   under TCG that regression is sometimes too noisy ("Correlation
#   coefficient r^2: ... < 0.9", "Can't produce a report") and that side
#   exits 1 after a correct run (the other side then sees its last
#   handshake receive flushed: "Bad wc status -- 5").
# * With -R the server accepts a control connection, destroys that listener
#   and only then listens again for the data connection; a client that is
#   quicker is refused (RDMA_CM_EVENT_REJECTED, -111) and perftest 4.5
#   crashes on that path instead of retrying.

PERFTEST_PORT=${PERFTEST_PORT:-18600}

# perftest_r2_noise FILE...: the run failed only because of clock noise.
perftest_r2_noise() {
	grep -q "^Correlation coefficient r^2: .* < 0.9" "$@"
}

# perftest_listen_race FILE: the client met the server between listeners.
perftest_listen_race() {
	grep -q "Event: RDMA_CM_EVENT_REJECTED; error: -111" "$1"
}

# perftest_local DEV ADDR TOOL ARGS...: server and client of TOOL on this
# host (-R, rdma_cm), client towards ADDR. The client's output ends up in
# cli.log, the server's in srv.log; the client's result line is printed.
perftest_local() {
	local dev=$1 addr=$2 t=$3 try srv rc
	shift 3
	for try in 1 2 3 4 5 6; do
		# a fresh port each time: the last server may still be closing
		PERFTEST_PORT=$((PERFTEST_PORT + 1))
		run_timeout 90 "$t" -R -d "$dev" -p "$PERFTEST_PORT" "$@" \
			>srv.log 2>&1 &
		srv=$!
		wait_for 5 eval "ss -Htln | grep -q ':$PERFTEST_PORT '" || true
		rc=0
		run_timeout 80 "$t" -R -d "$dev" -p "$PERFTEST_PORT" "$@" "$addr" \
			>cli.log 2>&1 || rc=$?
		if [ $rc != 0 ] && perftest_listen_race cli.log; then
			# the server waits for a data connection that never comes
			kill "$srv" 2>/dev/null || true
			wait "$srv" 2>/dev/null || true
			log "$t $*: client refused between perftest's listeners, again" >&2
			continue
		fi
		wait "$srv" || rc=$((rc ? rc : 1))
		[ $rc != 0 ] || break
		if ! perftest_r2_noise cli.log srv.log; then
			sed 's/^/#   /' cli.log srv.log >&2
			fail "$t $* failed ($rc)"
		fi
		log "$t $*: perftest clock calibration noise, again" >&2
	done
	[ $rc = 0 ] || fail "$t $*: failed 6 times (clock calibration or listener race)"
	perftest_result cli.log "$t $*"
}

# perftest_result FILE WHAT: the result line of a perftest report (first
# column the message size), with a positive figure in column 4 (bandwidth:
# BW average; latency: t_typical is column 5, t_avg column 6 - both > 0).
perftest_result() {
	local line
	line=$(awk '$1 ~ /^[0-9]+$/ && NF >= 5 { l = $0 } END { print l }' "$1")
	[ -n "$line" ] || { sed 's/^/#   /' "$1" >&2; fail "$2: no result line"; }
	awk -v l="$line" 'BEGIN { split(l, f); exit !(f[4] > 0) }' ||
		fail "$2: zero result: $line"
	echo "$line"
}

# perftest_2vm SERVER_ROLE DEV TOOL ARGS...: TOOL with -R between the two
# VMs of a 2vm test, its server on SERVER_ROLE (a or b) and its client
# towards it, both on device DEV of their own VM. Both VMs call it with the
# same arguments, in the same order. They agree on every try over xiw_sync,
# so both retry perftest's own failures (above) together and fail together.
# Prints the client's result line on the client, "(server side)" on the
# server.
PERFTEST_2VM_N=0
perftest_2vm() {
	local srole=$1 dev=$2 t=$3 try srv rc me peer tag log
	shift 3
	PERFTEST_2VM_N=$((PERFTEST_2VM_N + 1))
	for try in 1 2 3 4 5 6; do
		PERFTEST_PORT=$((PERFTEST_PORT + 1))
		tag=pt$PERFTEST_2VM_N-$try
		rc=0
		if [ "$XIW_ROLE" = "$srole" ]; then
			log=srv.log
			run_timeout 90 "$t" -R -d "$dev" -p "$PERFTEST_PORT" "$@" \
				>srv.log 2>&1 &
			srv=$!
			wait_for 5 eval "ss -Htln | grep -q ':$PERFTEST_PORT '" || true
			xiw_barrier "$tag-listen" 30
			# the client's outcome first: a refused client leaves
			# this server waiting for a connection that never comes
			peer=$(xiw_sync "$tag-client" . 120) || fail "$tag: peer lost"
			if [ "$peer" = race ]; then
				kill "$srv" 2>/dev/null || true
			fi
			wait "$srv" || rc=$?
		else
			log=cli.log
			xiw_barrier "$tag-listen" 30
			run_timeout 80 "$t" -R -d "$dev" -p "$PERFTEST_PORT" "$@" \
				"$XIW_PEER_IP" >cli.log 2>&1 || rc=$?
			me=.
			[ $rc != 0 ] && perftest_listen_race cli.log && me=race
			xiw_sync "$tag-client" "$me" 120 >/dev/null || fail "$tag: peer lost"
		fi
		# verdicts: ok, noise (perftest's clock check), race, or fail
		me=ok
		if [ $rc != 0 ]; then
			me=fail
			perftest_r2_noise "$log" && me=noise
			if [ "$log" = cli.log ]; then
				perftest_listen_race cli.log && me=race
			elif [ "$peer" = race ]; then
				me=race		# we killed it
			fi
		fi
		peer=$(xiw_sync "$tag-done" "$me" 120) || fail "$tag: peer lost"
		if [ "$me" = ok ] && [ "$peer" = ok ]; then
			if [ "$log" = cli.log ]; then
				perftest_result cli.log "$t $*"
			else
				echo "(server side)"
			fi
			return 0
		fi
		if [ "$me" = fail ] || [ "$peer" = fail ]; then
			sed 's/^/#   /' "$log" >&2
			fail "$t $* failed (here: $me, peer: $peer)"
		fi
		log "$t $*: $me/$peer (perftest's clock calibration or listener race), again" >&2
	done
	fail "$t $*: failed 6 times (clock calibration or listener race)"
}
