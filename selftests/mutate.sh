#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The mutation check (make mutate): every patch in selftests/mutations/
# is a deliberate defect that some test must catch, for a stated reason.
# In a scratch copy of the tree, the named tests first run once on the
# clean build (the baseline); then for each patch: apply it, build what
# it touches, run the tests its "Tests:" line names, report
#   KILLED    a named test failed with a reason its "Expect:" pattern
#             matches
#   SURVIVED  every named test passed
#   ERROR     anything else: the patch does not apply, the tree does not
#             build, a named test failed for another reason or skipped,
#             the VM crashed or timed out, module_unload failed, run.sh
#             ended without a verdict (the actual reasons are printed)
# then reverse it. The last line: "mutate: N mutations: K killed, S
# survived, E error". Exit status 0 when every mutation was killed, 1 if
# any survived or errored, 2 on a usage or scratch tree problem, 3 when
# the baseline fails (a named test fails or skips on the clean tree:
# nothing it would catch could be told from its own failure).
#
#   selftests/mutate.sh [options] [NN|NAME...]
#     NN        the mutations whose file name starts with NN (e.g. 07)
#     NAME      a patch file name (with or without .patch)
#   -l          list the mutations, their tests and reasons, run nothing
#   -x          stop at the first ERROR (by default every mutation runs)
#   -B          no baseline (debugging one mutation; make mutate runs it)
#   -v          show build and test output
#   --selfcheck judge the fixtures of selftests/selfcheck/mutate/ with a
#               stand-in run.sh and host test binary (seconds, no VM)
#
# Header lines of a patch (before the first "---"), one each:
#   Tests: host[:GTEST_FILTER] VMTEST...   what must catch it (required):
#           "host" runs the host unit tests (selftests/host, xiw_wire_tests),
#           ":FILTER" narrows them (--gtest_filter); every other word is a
#           VM test of selftests/tests, all run in one selftests/run.sh
#   Expect: TEST ERE                        one per test of Tests: (TEST
#           "host" for the host words): the extended regex (grep -E) the
#           failure must match. A VM test's is matched against its TAP
#           reason, the text after the time of run.sh's
#           "not ok N - TEST # 12.3s REASON" line: the test's first
#           "FAIL: " line (lib.sh's fail, expect_*; its first 160
#           characters), "[a] ...; [b] ..." for the VMs of a 2vm/3vm
#           test, "; kernel: ..." appended for a splat. The host tests'
#           is matched against the name of each failed GoogleTest
#           ("[  FAILED  ] Suite.Name": Suite.Name).
#   Env: VAR=VALUE                          passed to the VM tests (run.sh -e)
#   any other text: what the mutation breaks (shown by -l)
#
# The baseline: the union of the VM tests the selected patches name, in
# one run.sh without their Env: lines (every case of a test that Env:
# narrows), and the host tests if a patch names them, on the clean
# scratch build; every one must pass.
#
# The scratch copy is $XIW_BUILD/mutate/src (default build/mutate/src):
# the files git tracks plus new unignored ones, synced from the working
# tree at every start; its kernel module (make kernel) and user space
# build ($XIW_BUILD/mutate/build) are kept between runs, so each mutation
# rebuilds only what it changes. A mutated xiw.ko goes to run.sh as
# XIW_KO; a mutation of user space (userspace/, include/) builds the
# scratch provider and runs the VM tests with it (XIW_PROVIDER, and
# LD_LIBRARY_PATH for the programs that link libxiw for xiwdv.h); a
# mutation of the bench (selftests/: a test, its libraries, the VM
# runner) runs the scratch tree's selftests/run.sh, so the guests run
# the mutated scripts; the test programs are the working tree's build.
# Logs: $XIW_BUILD/mutate/logs/ (one per mutation, 00-baseline.log) and
# $XIW_BUILD/mutate/runs/NAME/ (run.sh's).
#
# For the self-check only: XIW_MUTATIONS (the patch directory),
# XIW_MUTATE_RUN (a stand-in for selftests/run.sh), XIW_MUTATE_HOST (a
# stand-in for the host test binary: nothing is built for "host"),
# XIW_MUTATE_FILES (git pathspecs: sync only these).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
build=${XIW_BUILD:-$repo/build}
work=$build/mutate
src=$work/src
ubuild=$work/build
logs=$work/logs
mdir=${XIW_MUTATIONS:-$here/mutations}
runsh=${XIW_MUTATE_RUN:-$repo/selftests/run.sh}
hostrun=${XIW_MUTATE_HOST:-}
jobs=${JOBS:-$(nproc)}

list=0 stop=0 verbose=0 baseline=1 selfcheck=0
sel=()
while [ $# -gt 0 ]; do
	case $1 in
	-l) list=1 ;;
	-x) stop=1 ;;
	-v) verbose=1 ;;
	-B) baseline=0 ;;
	--selfcheck) selfcheck=1 ;;
	-h|--help) sed -n '3,/^set -uo/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//;$d'; exit 0 ;;
	-*) echo "mutate.sh: unknown option $1" >&2; exit 2 ;;
	*) sel+=("$1") ;;
	esac
	shift
done

if [ $selfcheck = 1 ]; then
	exec bash "$here/selfcheck/mutate/check.sh"
fi

patches=()
for p in "$mdir"/*.patch; do
	[ -e "$p" ] || continue
	b=$(basename "$p" .patch)
	if [ ${#sel[@]} -gt 0 ]; then
		m=0
		for s in "${sel[@]}"; do
			s=${s%.patch}
			case $b in "$s"|"$s"-*) m=1 ;; esac
		done
		[ $m = 1 ] || continue
	fi
	patches+=("$p")
done
[ ${#patches[@]} -gt 0 ] || { echo "mutate.sh: no mutation matches: ${sel[*]:-(none in $mdir)}" >&2; exit 2; }

# header FILE KEY: the value of the first "KEY:" line before the diff
header() {
	sed -n "/^---/q; s/^$2:[[:space:]]*//p" "$1" | head -n 1
}
headers() {
	sed -n "/^---/q; s/^$2:[[:space:]]*//p" "$1"
}
# the files a patch changes, relative to the top of the tree
touched() {
	sed -n 's|^+++ [^/]*/\([^[:space:]]*\).*|\1|p' "$1"
}
# test_key WORD: the Expect: name of a Tests: word ("host" for host:FILTER)
test_key() {
	case $1 in host|host:*) echo host ;; *) echo "$1" ;; esac
}
# load_expect PATCH: expect[TEST]=ERE from its Expect: lines; exp_err
# says what is wrong with them (a test without one, one for a test not
# named, a pattern grep -E refuses), empty when they are right.
declare -A expect=()
exp_err=
load_expect() {
	local p=$1 l t re w k
	local -A named=()
	expect=() exp_err=
	for w in $(header "$p" Tests); do named[$(test_key "$w")]=1; done
	while IFS= read -r l; do
		t=${l%%[[:space:]]*} re=${l#"$t"}
		re=${re#"${re%%[![:space:]]*}"}
		if [ -z "$t" ] || [ -z "$re" ]; then
			exp_err+="; Expect: line without a test and a pattern: '$l'"
		elif [ -z "${named[$t]:-}" ]; then
			exp_err+="; Expect: for $t, which Tests: does not name"
		elif [ -n "${expect[$t]:-}" ]; then
			exp_err+="; two Expect: lines for $t"
		elif grep -qE -- "$re" </dev/null; [ $? = 2 ]; then
			exp_err+="; Expect: $t: grep -E refuses /$re/"
		else
			expect[$t]=$re
		fi
	done < <(headers "$p" Expect)
	for k in "${!named[@]}"; do
		[ -n "${expect[$k]:-}" ] || exp_err+="; no Expect: line for $k"
	done
	exp_err=${exp_err#; }
}

if [ $list = 1 ]; then
	for p in "${patches[@]}"; do
		printf '%s\n    files: %s\n    tests: %s\n' "$(basename "$p" .patch)" \
			"$(touched "$p" | tr '\n' ' ')" "$(header "$p" Tests)"
		headers "$p" Expect | sed 's/^/    expect: /'
		sed -n '/^---/q; /^Tests:/d; /^Expect:/d; /^Env:/{s/^Env:[[:space:]]*/    env: /p;d;}; /^$/d; s/^/    /p' "$p"
	done
	exit 0
fi

say() { printf '%s\n' "$*"; }
run_logged() {	# LOG CMD...: output to LOG (and the terminal with -v)
	local log=$1; shift
	if [ $verbose = 1 ]; then
		"$@" 2>&1 | tee -a "$log"
	else
		"$@" >>"$log" 2>&1
	fi
}

# A run stopped with a mutation applied: its objects are stale whatever
# the sources say, so start the scratch copy and its builds afresh.
if [ -e "$work/applied" ]; then
	say "mutate: the last run stopped with $(cat "$work/applied") applied: rebuilding the scratch tree"
	rm -rf "$src" "$ubuild" "$work/applied"
fi
mkdir -p "$src" "$ubuild" "$logs"
rm -f "$logs"/*.log "$logs"/*.tap

# Sync the scratch copy: what git tracks plus new files git does not ignore
# (the working tree as it is, uncommitted changes included).
t0=$(date +%s)
say "mutate: syncing $src"
read -ra fspec <<<"${XIW_MUTATE_FILES:-}"
(cd "$repo" && git ls-files -z --cached --others --exclude-standard -- "${fspec[@]}" |
	grep -zv '^build/' >"$work/files")
# (A copy gets a new mtime, so make rebuilds what depends on it.)
while IFS= read -r -d '' f; do
	[ -f "$repo/$f" ] || continue
	cmp -s "$repo/$f" "$src/$f" && continue
	mkdir -p "$src/$(dirname "$f")" && cp "$repo/$f" "$src/$f" ||
		{ echo "mutate.sh: cannot copy $f to $src" >&2; exit 2; }
done <"$work/files"
# Sources the working tree no longer has (a rename, a deleted file).
(cd "$src" && find kernel userspace include selftests -type f \
	\( -name '*.[ch]' -o -name '*.cpp' -o -name '*.sh' -o -name '*.patch' \) -print0 2>/dev/null |
	while IFS= read -r -d '' f; do
		[ -e "$repo/$f" ] || rm -f "$f"
	done)

# What each mutation needs built, once for the clean tree first, so a
# mutation's build only recompiles what it changes (and a clean tree
# that does not build is reported as such, not as a killed mutation);
# and the VM tests of the baseline.
need_kernel=0 need_host=0 need_user=0
declare -A base_vm=()
for p in "${patches[@]}"; do
	t=$(header "$p" Tests)
	f=$(touched "$p")
	for w in $t; do
		case $w in
		host|host:*) need_host=1 ;;
		*) base_vm[$w]=1
		   grep -qE '^(kernel|include)/' <<<"$f" && need_kernel=1
		   grep -qE '^(userspace|include)/' <<<"$f" && need_user=1 ;;
		esac
	done
done

# The scratch user space build: no optimization, no sanitizers, no
# fuzzers (a mutation of kernel/xiw_wire.h recompiles every host test:
# ~10 s so, minutes with -O2 and ASan; the defects are wrong values, which
# the tests see without them).
configure() {
	[ -e "$ubuild/CMakeCache.txt" ] ||
		cmake -S "$src" -B "$ubuild" -DCMAKE_BUILD_TYPE=None \
			-DXIW_HOST_SANITIZE=OFF -DXIW_FUZZ=OFF >/dev/null
}
build_kernel() { make -C "$src" --no-print-directory kernel JOBS="$jobs"; }
build_host() {
	[ -z "$hostrun" ] || return 0
	configure || return
	cmake --build "$ubuild" -j"$jobs" --target xiw_wire_tests
}
build_user() {
	configure || return
	cmake --build "$ubuild" -j"$jobs" --target xiw
}
# host_tests NAME [GTEST ARGS]: the host tests, for mutation NAME
host_tests() {
	local name=$1
	shift
	if [ -n "$hostrun" ]; then
		XIW_MUTATION=$name "$hostrun" "$@"
	else
		"$ubuild/selftests/host/xiw_wire_tests" "$@"
	fi
}
# gtest_failed FILE: the GoogleTests that failed in FILE, one a line
gtest_failed() {
	sed -n 's/^\[  FAILED  \] \([A-Za-z_][^ ,]*\).*/\1/p' "$1" | sort -u
}
# run_vm NAME TAPFILE KO USERSPACE(0|1) RUNSH ARGS...: RUNSH (run.sh) on the VM tests
# and run.sh's options in ARGS, its output in TAPFILE (and NAME's log);
# sets rc.
run_vm() {
	local name=$1 tap=$2 ko=$3 us=$4 rs=$5 ev eargs=()
	shift 5
	ev=(XIW_KO="$ko" XIW_BUILD="$build")
	if [ "$us" = 1 ]; then
		ev+=(XIW_PROVIDER="$ubuild/userspace/libxiw/libxiw")
		eargs+=(-e LD_LIBRARY_PATH="$ubuild/userspace/libxiw")
	fi
	env "${ev[@]}" XIW_MUTATION="$name" bash "$rs" -o "$work/runs/$name" \
		"${eargs[@]}" "$@" >"$tap" 2>&1
	rc=$?
	cat "$tap" >>"$logs/$name.log"
	[ $verbose = 0 ] || cat "$tap"
}
# tap_line TAPFILE TEST: the TAP line of TEST ("ok"/"not ok" ...), if any
tap_line() {
	awk -v t="$2" '($1 == "ok" && $3 == "-" && $4 == t) ||
		($1 == "not" && $2 == "ok" && $4 == "-" && $5 == t) { l = $0 } END { if (l != "") print l }' "$1"
}
# tap_reason LINE: the reason of a "not ok N - TEST # 12.3s REASON" line
# (or of an "ok N - TEST # SKIP REASON" line)
tap_reason() {
	sed -E 's/^(not )?ok [0-9]+ - [^ ]+ # ([0-9.]+s ?|SKIP )?//' <<<"$1"
}

say "mutate: building the clean scratch tree (kernel $need_kernel, host tests $need_host, user space $need_user)"
blog=$logs/00-clean-build.log
if { [ $need_kernel = 0 ] || run_logged "$blog" build_kernel; } &&
	{ [ $need_host = 0 ] || run_logged "$blog" build_host; } &&
	{ [ $need_user = 0 ] || run_logged "$blog" build_user; }; then :; else
	echo "mutate.sh: the unmutated scratch tree does not build (see $blog)" >&2
	tail -n 30 "$blog" >&2
	exit 2
fi
say "mutate: scratch tree ready in $(($(date +%s) - t0)) s"

# The baseline: what the mutations are judged by must pass unmutated.
if [ $baseline = 1 ]; then
	t1=$(date +%s)
	bl=$logs/00-baseline.log
	: >"$bl"
	bad=()
	if [ $need_host = 1 ]; then
		say "mutate: baseline: the host tests on the clean tree"
		host_tests 00-baseline --gtest_brief=1 >"$logs/00-baseline.host" 2>&1
		rc=$?
		cat "$logs/00-baseline.host" >>"$bl"
		[ $rc = 0 ] || bad+=("host: exit $rc, failed: $(gtest_failed "$logs/00-baseline.host" | paste -sd' ' -)")
	fi
	if [ ${#base_vm[@]} -gt 0 ]; then
		mapfile -t bvm < <(printf '%s\n' "${!base_vm[@]}" | sort)
		ko=$repo/kernel/xiw.ko
		[ $need_kernel = 0 ] || ko=$src/kernel/xiw.ko
		say "mutate: baseline: ${bvm[*]} on the clean tree"
		run_vm 00-baseline "$logs/00-baseline.tap" "$ko" "$need_user" "$runsh" "${bvm[@]}"
		for t in "${bvm[@]}"; do
			l=$(tap_line "$logs/00-baseline.tap" "$t")
			case $l in
			"") bad+=("$t: no result") ;;
			"not ok "*) bad+=("$t: failed: $(tap_reason "$l")") ;;
			*"# SKIP"*) bad+=("$t: skipped: $(tap_reason "$l")") ;;
			esac
		done
		while IFS= read -r l; do
			t=$(awk '{ print $5 }' <<<"$l")
			[ -n "${base_vm[$t]:-}" ] || bad+=("$t: failed: $(tap_reason "$l")")
		done < <(grep -E '^not ok [0-9]+ - ' "$logs/00-baseline.tap")
		[ $rc = 0 ] || [ ${#bad[@]} -gt 0 ] ||
			bad+=("run.sh: exit $rc: $(grep -v '^#' "$logs/00-baseline.tap" | tail -n 1)")
	fi
	if [ ${#bad[@]} -gt 0 ]; then
		echo "mutate.sh: the baseline fails: a named test does not pass on the clean tree, so no mutation it names can be judged:" >&2
		printf '  %s\n' "${bad[@]}" >&2
		echo "(log: $bl; run.sh's output: $work/runs/00-baseline; -B runs without the baseline)" >&2
		exit 3
	fi
	say "mutate: baseline passed in $(($(date +%s) - t1)) s"
fi

results=()
nk=0 ns=0 ne=0
for p in "${patches[@]}"; do
	name=$(basename "$p" .patch)
	log=$logs/$name.log
	tests=$(header "$p" Tests)
	mapfile -t envs < <(headers "$p" Env)
	files=$(touched "$p")
	t1=$(date +%s)
	verdict='' why=''
	say "mutate: $name: ${files//$'\n'/ } -> $tests"
	load_expect "$p"
	if [ -z "$tests" ]; then
		verdict=ERROR why="no Tests: line"
	elif [ -n "$exp_err" ]; then
		verdict=ERROR why=$exp_err
	elif ! patch -p1 -d "$src" --dry-run -s -f <"$p" >>"$log" 2>&1; then
		verdict=ERROR why="does not apply"
	fi
	if [ -z "$verdict" ]; then
		echo "$name" >"$work/applied"
		patch -p1 -d "$src" -s -f --no-backup-if-mismatch <"$p" >>"$log" 2>&1
		host=() vm=()
		for w in $tests; do
			case $w in host|host:*) host+=("$w") ;; *) vm+=("$w") ;; esac
		done
		bk=0 bu=0 rs=$runsh
		if [ ${#vm[@]} -gt 0 ]; then
			grep -qE '^(kernel|include)/' <<<"$files" && bk=1
			grep -qE '^(userspace|include)/' <<<"$files" && bu=1
			[ -n "${XIW_MUTATE_RUN:-}" ] || ! grep -q '^selftests/' <<<"$files" ||
				rs=$src/selftests/run.sh
		fi
		if [ ${#host[@]} -gt 0 ] && ! run_logged "$log" build_host; then
			verdict=ERROR why="host tests do not build"
		elif [ $bk = 1 ] && ! run_logged "$log" build_kernel; then
			verdict=ERROR why="xiw.ko does not build"
		elif [ $bu = 1 ] && ! run_logged "$log" build_user; then
			verdict=ERROR why="user space does not build"
		fi
		# caught: the tests that failed for the reason expected;
		# other: every other failure, with its reason
		caught=() other=()
		if [ -z "$verdict" ]; then
			for h in "${host[@]}"; do
				f=()
				[ "$h" = host ] || f=(--gtest_filter="${h#host:}")
				hout=$logs/$name.host
				host_tests "$name" --gtest_brief=1 "${f[@]}" >"$hout" 2>&1
				rc=$?
				cat "$hout" >>"$log"
				[ $verbose = 0 ] || cat "$hout"
				[ $rc != 0 ] || continue
				mapfile -t gf < <(gtest_failed "$hout")
				if [ ${#gf[@]} = 0 ]; then
					other+=("$h: exit $rc without a failed test ($(grep -v '^\[' "$hout" | tail -n 1 | cut -c1-120))")
					continue
				fi
				hit=() miss=()
				for g in "${gf[@]}"; do
					if grep -qE -- "${expect[host]}" <<<"$g"; then hit+=("$g"); else miss+=("$g"); fi
				done
				[ ${#hit[@]} = 0 ] || caught+=("$h ($(printf '%s\n' "${hit[@]}" | head -n 3 | paste -sd, -))")
				[ ${#miss[@]} = 0 ] || other+=("$h: failed $(printf '%s\n' "${miss[@]}" | head -n 3 | paste -sd, -), not /${expect[host]}/")
			done
		fi
		if [ -z "$verdict" ] && [ ${#vm[@]} -gt 0 ]; then
			ko=$repo/kernel/xiw.ko
			[ $bk = 0 ] || ko=$src/kernel/xiw.ko
			eargs=()
			for e in "${envs[@]}"; do eargs+=(-e "$e"); done
			tap=$logs/$name.tap
			run_vm "$name" "$tap" "$ko" "$bu" "$rs" "${eargs[@]}" "${vm[@]}"
			declare -A isvm=()
			for t in "${vm[@]}"; do
				isvm[$t]=1
				l=$(tap_line "$tap" "$t")
				r=$(tap_reason "$l")
				case $l in
				"") other+=("$t: no result") ;;
				"not ok "*)
					if grep -qE -- "${expect[$t]}" <<<"$r"; then
						caught+=("$t ($r)")
					else
						other+=("$t: $r (not /${expect[$t]}/)")
					fi ;;
				*"# SKIP"*) other+=("$t: skipped: $r") ;;
				esac
			done
			# a failure of what the patch does not name (module_unload)
			while IFS= read -r l; do
				t=$(awk '{ print $5 }' <<<"$l")
				[ -n "${isvm[$t]:-}" ] || other+=("$t: $(tap_reason "$l")")
			done < <(grep -E '^not ok [0-9]+ - ' "$tap")
			unset isvm
			# run.sh's own end: 1 before any test (the initramfs),
			# 2 (a setup error), 130 (interrupted)
			if [ $rc != 0 ] && ! grep -q '^not ok ' "$tap"; then
				other+=("run.sh exit $rc without a failed test: $(grep -v '^#' "$tap" | tail -n 1)")
			elif [ $rc != 0 ] && [ $rc != 1 ]; then
				other+=("run.sh exit $rc: $(grep -v '^#' "$tap" | tail -n 1)")
			fi
		fi
		if [ -z "$verdict" ]; then
			if [ ${#caught[@]} -gt 0 ]; then
				verdict=KILLED why="by $(printf '%s; ' "${caught[@]}")"
				why=${why%; }
				[ ${#other[@]} = 0 ] || why+=" [also: $(printf '%s; ' "${other[@]}" | sed 's/; $//')]"
			elif [ ${#other[@]} -gt 0 ]; then
				verdict=ERROR why="$(printf '%s; ' "${other[@]}" | sed 's/; $//')"
			else
				verdict=SURVIVED why="every named test passed"
			fi
		fi
		patch -p1 -d "$src" -R -s -f --no-backup-if-mismatch <"$p" >>"$log" 2>&1 || {
			echo "mutate.sh: $name does not reverse: the scratch tree is resynced next run" >&2
			exit 2; }
		rm -f "$work/applied"
	fi
	secs=$(($(date +%s) - t1))
	case $verdict in KILLED) nk=$((nk + 1)) ;; SURVIVED) ns=$((ns + 1)) ;; *) ne=$((ne + 1)) ;; esac
	results+=("$(printf '%-40s %-8s %5ss  %s' "$name" "$verdict" "$secs" "$why")")
	say "mutate: $name: $verdict ($secs s) $why"
	[ "$verdict" != ERROR ] || [ $stop = 0 ] || break
done

say ""
printf '%-40s %-8s %6s  %s\n' mutation result time detail
printf '%s\n' "${results[@]}"
say ""
say "mutate: ${#results[@]} mutations: $nk killed, $ns survived, $ne error in $(($(date +%s) - t0)) s (logs: $logs)"
[ $ns = 0 ] && [ $ne = 0 ]
