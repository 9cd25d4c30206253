#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The mutation check (make mutate): every patch in selftests/mutations/
# is a deliberate defect that some test must catch. For each patch, in a
# scratch copy of the tree: apply it, build what it touches, run the tests
# its "Tests:" line names, report KILLED (a named test failed), SURVIVED
# (all passed) or ERROR (the patch does not apply or the tree does not
# build), then reverse it. Exit status 1 if any mutation survived or
# failed to apply or build.
#
#   selftests/mutate.sh [options] [NN|NAME...]
#     NN        the mutations whose file name starts with NN (e.g. 07)
#     NAME      a patch file name (with or without .patch)
#   -l          list the mutations and their tests, run nothing
#   -x          stop at the first ERROR (by default every mutation runs)
#   -v          show build and test output
#
# Header lines of a patch (before the first "---"), one each:
#   Tests: host[:GTEST_FILTER] VMTEST...   what must catch it (required):
#           "host" runs the host unit tests (selftests/host, xiw_wire_tests),
#           ":FILTER" narrows them (--gtest_filter); every other word is a
#           VM test of selftests/tests, all run in one selftests/run.sh
#   Env: VAR=VALUE                          passed to the VM tests (run.sh -e)
#   any other text: what the mutation breaks (shown by -l)
#
# The scratch copy is $XIW_BUILD/mutate/src (default build/mutate/src):
# the files git tracks plus new unignored ones, synced from the working
# tree at every start; its kernel module (make kernel) and user space
# build ($XIW_BUILD/mutate/build) are kept between runs, so each mutation
# rebuilds only what it changes. A mutated xiw.ko goes to run.sh as
# XIW_KO; a mutation of user space (userspace/, include/) builds the
# scratch provider and runs the VM tests with it (XIW_PROVIDER, and
# LD_LIBRARY_PATH for the programs that link libxiw for xiwdv.h); the
# test programs are the working tree's build. Logs: $XIW_BUILD/mutate/logs/
# (one per mutation) and $XIW_BUILD/mutate/runs/NAME/ (run.sh's).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
build=${XIW_BUILD:-$repo/build}
work=$build/mutate
src=$work/src
ubuild=$work/build
logs=$work/logs
mdir=$here/mutations
jobs=${JOBS:-$(nproc)}

list=0 stop=0 verbose=0
sel=()
while [ $# -gt 0 ]; do
	case $1 in
	-l) list=1 ;;
	-x) stop=1 ;;
	-v) verbose=1 ;;
	-h|--help) sed -n '3,/^set -uo/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//;$d'; exit 0 ;;
	-*) echo "mutate.sh: unknown option $1" >&2; exit 2 ;;
	*) sel+=("$1") ;;
	esac
	shift
done

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

if [ $list = 1 ]; then
	for p in "${patches[@]}"; do
		printf '%s\n    files: %s\n    tests: %s\n' "$(basename "$p" .patch)" \
			"$(touched "$p" | tr '\n' ' ')" "$(header "$p" Tests)"
		sed -n '/^---/q; /^Tests:/d; /^Env:/{s/^Env:[[:space:]]*/    env: /p;d;}; /^$/d; s/^/    /p' "$p"
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
rm -f "$logs"/*.log

# Sync the scratch copy: what git tracks plus new files git does not ignore
# (the working tree as it is, uncommitted changes included).
t0=$(date +%s)
say "mutate: syncing $src"
(cd "$repo" && git ls-files -z --cached --others --exclude-standard |
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
	\( -name '*.[ch]' -o -name '*.cpp' -o -name '*.sh' -o -name '*.patch' \) -print0 |
	while IFS= read -r -d '' f; do
		[ -e "$repo/$f" ] || rm -f "$f"
	done)

# What each mutation needs built, once for the clean tree first, so a
# mutation's build only recompiles what it changes (and a clean tree
# that does not build is reported as such, not as a killed mutation).
need_kernel=0 need_host=0 need_user=0
for p in "${patches[@]}"; do
	t=$(header "$p" Tests)
	f=$(touched "$p")
	for w in $t; do
		case $w in
		host|host:*) need_host=1 ;;
		*) grep -qE '^(kernel|include)/' <<<"$f" && need_kernel=1
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
	configure || return
	cmake --build "$ubuild" -j"$jobs" --target xiw_wire_tests
}
build_user() {
	configure || return
	cmake --build "$ubuild" -j"$jobs" --target xiw
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
if [ $need_host = 1 ] && ! run_logged "$blog" "$ubuild/selftests/host/xiw_wire_tests" --gtest_brief=1; then
	echo "mutate.sh: the host tests fail on the unmutated tree (see $blog)" >&2
	exit 2
fi
say "mutate: scratch tree ready in $(($(date +%s) - t0)) s"

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
	if [ -z "$tests" ]; then
		verdict=ERROR why="no Tests: line"
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
		bk=0 bu=0
		if [ ${#vm[@]} -gt 0 ]; then
			grep -qE '^(kernel|include)/' <<<"$files" && bk=1
			grep -qE '^(userspace|include)/' <<<"$files" && bu=1
		fi
		if [ ${#host[@]} -gt 0 ] && ! run_logged "$log" build_host; then
			verdict=ERROR why="host tests do not build"
		elif [ $bk = 1 ] && ! run_logged "$log" build_kernel; then
			verdict=ERROR why="xiw.ko does not build"
		elif [ $bu = 1 ] && ! run_logged "$log" build_user; then
			verdict=ERROR why="user space does not build"
		fi
		caught=()
		if [ -z "$verdict" ]; then
			for h in "${host[@]}"; do
				f=()
				[ "$h" = host ] || f=(--gtest_filter="${h#host:}")
				run_logged "$log" "$ubuild/selftests/host/xiw_wire_tests" \
					--gtest_brief=1 "${f[@]}"
				rc=$?
				[ $rc = 0 ] || caught+=("$h($(sed -n 's/^\[  FAILED  \] \([^ ,]*\).*/\1/p' "$log" |
					sort -u | head -n 3 | paste -sd, -))")
			done
		fi
		if [ -z "$verdict" ] && [ ${#vm[@]} -gt 0 ]; then
			ko=$repo/kernel/xiw.ko
			[ $bk = 0 ] || ko=$src/kernel/xiw.ko
			ev=(XIW_KO="$ko")
			eargs=()
			if [ $bu = 1 ]; then
				ev+=(XIW_PROVIDER="$ubuild/userspace/libxiw/libxiw")
				eargs+=(-e LD_LIBRARY_PATH="$ubuild/userspace/libxiw")
			fi
			for e in "${envs[@]}"; do eargs+=(-e "$e"); done
			env "${ev[@]}" bash "$repo/selftests/run.sh" \
				-o "$work/runs/$name" "${eargs[@]}" "${vm[@]}" >>"$log" 2>&1
			rc=$?
			case $rc in
			0) ;;
			1) mapfile -t -O ${#caught[@]} caught < <(sed -n \
				's/^\(# \)*not ok [0-9]* - \([^ ]*\) #.*/\2/p' "$log" | sort -u)
			   [ ${#caught[@]} -gt 0 ] || caught+=("run.sh") ;;
			*) verdict=ERROR why="run.sh exit $rc" ;;
			esac
		fi
		if [ -z "$verdict" ]; then
			if [ ${#caught[@]} -gt 0 ]; then
				verdict=KILLED why="by ${caught[*]}"
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
say "mutate: ${#results[@]} mutations: $nk killed, $ns survived, $ne errors in $(($(date +%s) - t0)) s (logs: $logs)"
[ $ns = 0 ] && [ $ne = 0 ]
