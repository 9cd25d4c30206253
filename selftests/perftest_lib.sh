# SPDX-License-Identifier: GPL-2.0
# perftest helpers for the VM tests (sourced after lib.sh).
#
# Two perftest failures that are perftest's own are retried; every other
# failure fails the test:
# * perftest measures its clock against gettimeofday() before it reports;
#   under TCG that regression is sometimes too noisy ("Correlation
#   coefficient r^2: ... < 0.9", "Can't produce a report") and that side
#   exits 1 after a correct run (the other side then sees its last
#   handshake receive flushed: "Bad wc status -- 5"; a client may still
#   exit 0, with that message inside its report line).
# * With -R the server accepts a control connection, destroys that listener
#   and only then listens again for the data connection; a client that is
#   quicker is refused and perftest 4.5 gives up instead of retrying. How
#   the refusal shows depends on the client's device: xiw connects
#   asynchronously (an RDMA_CM_EVENT_REJECTED event, status -111), siw
#   connects its TCP socket inside rdma_connect(), which then fails with
#   ECONNREFUSED ("Failed to connect through RDMA CM."). The test VMs
#   drop the reset that refuses such a client (guest-suite.sh,
#   hold_perftest_refusals), so its TCP tries again a second later and the
#   refusal should not come; the retry stays for a VM where tc failed.
#   On rxe (RoCE, no TCP) the server's IB CM answers the client's REQ
#   with a REJ of reason 8, invalid service ID (nothing listens on that
#   port): RDMA_CM_EVENT_REJECTED, status 8. Nothing holds that one back;
#   between two VMs it came in 6 of 10 rxe runs, so it is retried too.

PERFTEST_PORT=${PERFTEST_PORT:-18600}

# perftest_r2_noise FILE...: the run failed only because of clock noise.
perftest_r2_noise() {
	# perftest prints it right after a report row, on the same line
	grep -q "Correlation coefficient r^2: .* < 0.9" "$@"
}

# perftest_listen_race FILE: the client met the server between listeners
# (any face of the refusal, see the top).
perftest_listen_race() {
	grep -qE "Event: RDMA_CM_EVENT_REJECTED; error: (-111|8)\b" "$1" ||
		grep -A1 "Failed to connect through RDMA CM\." "$1" |
		grep -q "ERRNO: Connection refused"
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
		# the listener must exist before the client starts: a refusal
		# is then perftest's relisten race, not a missing listener
		wait_listen "$PERFTEST_PORT" 30 "$srv" srv.log
		rc=0
		run_timeout 80 "$t" -R -d "$dev" -p "$PERFTEST_PORT" "$@" "$addr" \
			>cli.log 2>&1 || rc=$?
		if [ $rc != 0 ] && perftest_listen_race cli.log; then
			# the server waits for a data connection that never comes
			kill_bg "$srv"
			wait "$srv" 2>/dev/null || true
			retry_note "$t $*: client refused between perftest's listeners (try $try)"
			continue
		fi
		wait "$srv" || rc=$((rc ? rc : 1))
		# a latency tool whose calibration failed still exits 0, with
		# inf in every column: that is the same tool-side failure
		# (a subshell: perftest_result's fail would end this one)
		if [ $rc = 0 ] && ! (perftest_result cli.log "$t $*") \
				>/dev/null 2>&1; then
			rc=1
		fi
		[ $rc != 0 ] || break
		if ! perftest_r2_noise cli.log srv.log; then
			kill_bg "$srv"
			sed 's/^/#   /' cli.log srv.log >&2
			fail "$t $* failed ($rc)"
		fi
		retry_note "$t $*: perftest's clock calibration (r^2 < 0.9) (try $try)"
	done
	[ $rc = 0 ] || fail "$t $*: failed 6 times (clock calibration or listener race)"
	perftest_result cli.log "$t $*"
}

# perftest_result FILE WHAT: the result line of a perftest report (first
# column the message size), whose column 5 is a positive number: the
# figure measured (bandwidth rows: the message rate, since BW average
# rounds to 0.00 MB/s for tiny messages between slow VMs; latency rows:
# t_typical). inf, nan and the like fail.
perftest_result() {
	local line
	line=$(awk '$1 ~ /^[0-9]+$/ && NF >= 5 { l = $0 } END { print l }' "$1")
	[ -n "$line" ] || { sed 's/^/#   /' "$1" >&2; fail "$2: no result line"; }
	awk -v l="$line" 'BEGIN { split(l, f)
		exit !(f[5] ~ /^[0-9]+(\.[0-9]+)?$/ && f[5] > 0) }' ||
		fail "$2: no positive figure in column 5: $line"
	echo "$line"
}

# perftest_check FILE TOOL ARGS...: FILE is the client's report of TOOL
# ARGS (ARGS as given to perftest_local or perftest_2vm_rows); every
# result row it should have is there, in order, and sane. Prints the rows.
# Sizes: -s SIZE (one row; 65536 without -s), or -a (every power of two
# from 2 B to 8 MiB); the iterations column must be -n's.
# Bandwidth rows (#bytes #iterations BW_peak BW_average MsgRate): MsgRate
# > 0 and BW average = MsgRate x size in MiB/s within rounding (a 2 B row
# between two TCG VMs says 0.00 MB/s, but has a message rate).
# Latency rows (#bytes #iterations t_min t_max t_typical t_avg t_stdev 99%
# 99.9%): 0 < t_min <= t_typical, t_avg, 99% <= 99.9% <= t_max.
perftest_check() {
	local f=$1 t=$2 sizes=65536 iters='' kind got bad i
	shift 2
	while [ $# -gt 0 ]; do
		case $1 in
		-s|--size) sizes=$2; shift ;;
		--size=*) sizes=${1#*=} ;;
		-a|--all) sizes=$(for i in $(seq 1 23); do echo $((1 << i)); done) ;;
		-n|--iters) iters=$2; shift ;;
		--iters=*) iters=${1#*=} ;;
		esac
		shift
	done
	kind=${t##*_}
	case $kind in
	bw|lat) ;;
	*) fail "perftest_check: $t is neither a _bw nor a _lat tool" ;;
	esac
	got=$(awk '$1 ~ /^[0-9]+$/ && NF >= 5 { print $1 }' "$f") || fail "perftest_check: cannot read $f"
	if [ "$got" != "$sizes" ]; then
		sed 's/^/#   /' "$f" >&2
		fail "$t: result rows for sizes '$(echo $got)', expected '$(echo $sizes)'"
	fi
	bad=$(awk -v k="$kind" -v n="$iters" '
	$1 ~ /^[0-9]+$/ && NF >= 5 {
		why = ""
		# every figure must be a number, except the t_stdev of a
		# latency row: perftest prints -nan there for a handful of
		# samples (the square root of a variance rounded below
		# zero), and it is not a figure this bench judges
		for (i = 3; i <= NF; i++)
			if (!(k == "lat" && i == 7) &&
			    $i !~ /^[0-9]+(\.[0-9]+)?$/)
				why = "not a number (" $i ")"
		if (k == "lat" && $7 !~ /^-?(nan|[0-9]+(\.[0-9]+)?)$/)
			why = "t_stdev not a number (" $7 ")"
		if (why != "")
			;
		else if (n != "" && $2 != n)
			why = "iterations " $2 " instead of " n
		else if (k == "bw") {
			# MiB/s from the message rate (Mpps, 6 decimals)
			mib = 1e6 * $1 / 1048576
			want = $5 * mib
			tol = 0.011 + 0.02 * want + 0.5e-6 * mib
			d = $4 - want
			if (NF != 5)
				why = NF " columns"
			else if (!($5 > 0))
				why = "no message rate"
			else if (!($3 >= 0 && $4 >= 0))
				why = "negative bandwidth"
			else if (d > tol || -d > tol)
				why = "BW average " $4 " MB/s is not the message rate times the size (" want ")"
		} else {
			if (NF < 9)
				why = NF " columns"
			else if (!($3 > 0))
				why = "t_min not > 0"
			else if (!($3 <= $5 && $5 <= $4))
				why = "t_typical not within [t_min, t_max]"
			else if (!($3 <= $6 && $6 <= $4))
				why = "t_avg not within [t_min, t_max]"
			else if ($7 !~ /nan/ && !($7 >= 0))
				why = "negative t_stdev"
			else if (!($3 <= $8 && $8 <= $9 && $9 <= $4))
				why = "percentiles not within [t_min, t_max] or not in order"
		}
		if (why != "")
			print "size " $1 ": " why ": " $0
	}' "$f") || fail "perftest_check: awk failed on $f"
	if [ -n "$bad" ]; then
		sed 's/^/#   /' "$f" >&2
		fail "$t: bad result rows: $bad"
	fi
	awk '$1 ~ /^[0-9]+$/ && NF >= 5 { $1 = $1; print }' "$f"
}

# perftest_inf_report: perftest_check's failure (in rows.err) is the
# other face of perftest's clock noise: the latency tools do not exit 1
# on "Correlation coefficient r^2 ... < 0.9", they report with a clock
# rate of 0: inf and -nan (seen under TCG).
perftest_inf_report() {
	perftest_r2_noise cli.log &&
		grep '^FAIL: .*bad result rows' rows.err | grep -qwE 'inf|-?nan'
}

# perftest_local_rows DEV ADDR TOOL ARGS...: perftest_local, then
# perftest_check on the client's report; rows in PERFTEST_ROWS. A report
# that perftest's clock noise made unusable (perftest_inf_report) is
# run again; call it directly, not in $(...).
perftest_local_rows() {
	local dev=$1 addr=$2 t=$3 try
	shift 3
	for try in 1 2 3 4; do
		perftest_local "$dev" "$addr" "$t" "$@" >/dev/null
		if (perftest_check cli.log "$t" "$@") >rows.out 2>rows.err; then
			PERFTEST_ROWS=$(cat rows.out)
			return 0
		fi
		if ! perftest_inf_report; then
			cat rows.err >&2
			fail "$t $*: bad report"
		fi
		retry_note "$t $*: perftest's clock calibration (inf in its report) (try $try)"
	done
	fail "$t $*: unusable reports 4 times (clock calibration)"
}

# perftest_2vm SERVER_ROLE DEV TOOL ARGS...: TOOL with -R between the two
# VMs of a 2vm test, its server on SERVER_ROLE (a or b) and its client
# towards it, both on device DEV of their own VM. Both VMs call it with the
# same arguments, in the same order. They agree on every try over xiw_sync,
# so both retry perftest's own failures (above) together and fail together.
# Prints the client's result line (perftest_result) on the client, "(server
# side)" on the server.
#
# perftest_2vm_rows SERVER_ROLE DEV TOOL ARGS...: the same, but the client
# checks its whole report with perftest_check. Call it directly, not in
# $(...), so that the port and sync tag counters advance; the client's
# checked rows end up in PERFTEST_ROWS ("" on the server).
#
# Both are perftest_2vm_run CHECK ... (CHECK: result or rows). The client
# judges its report before both sides agree on the outcome, so a bad report
# fails both VMs at once and is never retried.
PERFTEST_2VM_N=0
PERFTEST_ROWS=
perftest_2vm() {
	perftest_2vm_run result "$@"
	if [ -n "$PERFTEST_ROWS" ]; then
		echo "$PERFTEST_ROWS"
	else
		echo "(server side)"
	fi
}

perftest_2vm_rows() { perftest_2vm_run rows "$@"; }

# perftest_2vm_judge CHECK TOOL ARGS...: the client's report (cli.log) by
# CHECK; the rows on stdout, the reason on stderr.
perftest_2vm_judge() {
	local check=$1 t=$2
	shift 2
	if [ "$check" = rows ]; then
		(perftest_check cli.log "$t" "$@")
	else
		(perftest_result cli.log "$t $*")
	fi
}

# perftest_2vm_noise CHECK: the report perftest_2vm_judge rejected is
# perftest's clock noise (a latency tool exits 0 after a failed clock
# calibration, with inf in every column).
perftest_2vm_noise() {
	if [ "$1" = rows ]; then
		perftest_inf_report
	else
		perftest_r2_noise cli.log
	fi
}

# perftest_2vm_run CHECK SERVER_ROLE DEV TOOL ARGS...: both of the above.
perftest_2vm_run() {
	local check=$1 srole=$2 dev=$3 t=$4 try srv rc me peer tag log prefix=pt
	shift 4
	[ "$check" = result ] || prefix=ptr
	PERFTEST_2VM_N=$((PERFTEST_2VM_N + 1))
	PERFTEST_ROWS=
	for try in 1 2 3 4 5 6; do
		PERFTEST_PORT=$((PERFTEST_PORT + 1))
		tag=$prefix$PERFTEST_2VM_N-$try
		rc=0
		peer=.
		if [ "$XIW_ROLE" = "$srole" ]; then
			log=srv.log
			run_timeout 90 "$t" -R -d "$dev" -p "$PERFTEST_PORT" "$@" \
				>srv.log 2>&1 &
			srv=$!
			wait_listen "$PERFTEST_PORT" 30 "$srv" srv.log
			xiw_barrier "$tag-listen" 30
			# Let the server end before the next sync (up to 30 s:
			# a refused client leaves it waiting): a long wait
			# inside xiw_sync on VM a can lose the first bytes of
			# the peer's line under load (its 1 s read timeouts).
			wait_for 30 eval "! kill -0 $srv 2>/dev/null" || true
			# the client's outcome first: a refused or failed client
			# leaves this server waiting for a connection that
			# never comes
			peer=$(xiw_sync "$tag-client" . 120) || fail "$tag: peer lost"
			case $peer in
			race|fail) kill_bg "$srv" ;;
			esac
			wait "$srv" || rc=$?
		else
			log=cli.log
			xiw_barrier "$tag-listen" 30
			run_timeout 80 "$t" -R -d "$dev" -p "$PERFTEST_PORT" "$@" \
				"$XIW_PEER_IP" >cli.log 2>&1 || rc=$?
			me=.
			if [ $rc != 0 ]; then
				me=fail
				perftest_r2_noise cli.log && me=noise
				perftest_listen_race cli.log && me=race
			fi
			xiw_sync "$tag-client" "$me" 120 >/dev/null || fail "$tag: peer lost"
		fi
		# verdicts: ok, noise (perftest's clock check), race, bad (a
		# report perftest_2vm_judge rejects), or fail
		me=ok
		if [ $rc != 0 ]; then
			me=fail
			perftest_r2_noise "$log" && me=noise
			if [ "$log" = cli.log ]; then
				perftest_listen_race cli.log && me=race
			elif [ "$peer" = race ]; then
				me=race		# we killed it
			elif [ "$peer" = fail ]; then
				me=killed	# the client's failure is the reason
			elif [ "$peer" = noise ]; then
				# the client ended on perftest's clock check after
				# the run: this server's last handshake fails
				me=noise
			fi
		elif [ "$log" = cli.log ] &&
			! perftest_2vm_judge "$check" "$t" "$@" >rows.out 2>rows.err; then
			me=bad
			! perftest_2vm_noise "$check" || me=noise
			# the handshake receive flushed (see the top), perftest's
			# message written into the report line: noise if the
			# server ended on its clock check
			[ "$me" != bad ] || ! grep -q 'Bad wc status -- 5' cli.log ||
				me=badflush
		fi
		peer=$(xiw_sync "$tag-done" "$me" 120) || fail "$tag: peer lost"
		case $me:$peer in
		badflush:noise|noise:badflush) me=noise peer=noise ;;
		esac
		[ "$me" != badflush ] || me=bad
		[ "$peer" != badflush ] || peer=bad
		if [ "$me" = ok ] && [ "$peer" = ok ]; then
			[ "$log" = srv.log ] || PERFTEST_ROWS=$(cat rows.out)
			return 0
		fi
		if [ "$me" = bad ]; then
			cat rows.err >&2
			fail "$t $*: bad report"
		fi
		if [ "$peer" = bad ]; then
			sed 's/^/#   /' "$log" >&2
			fail "$t $*: the client's report is bad (see its log; this server's is above)"
		fi
		if [ "$me" = fail ] || [ "$peer" = fail ]; then
			sed 's/^/#   /' "$log" >&2
			fail "$t $* failed (here: $me, peer: $peer)$(addrinuse_note "$log")"
		fi
		retry_note "$t $*: here $me, peer $peer (perftest's clock calibration or relisten race) (try $try)"
	done
	fail "$t $*: failed 6 times (clock calibration or listener race)"
}
