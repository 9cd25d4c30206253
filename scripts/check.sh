#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make check: static checks of the kernel code, host unit tests (CTest /
# GoogleTest), then the VM test suite. Ends with one line
# "N passed, N failed" that sums everything; exits non-zero on any failure.
#
#   scripts/check.sh            everything
#   scripts/check.sh NAME...    only the named VM tests (no host tests)
#   REPEAT=N scripts/check.sh NAME...   each named VM test N times in a row
#   scripts/check.sh --kver61 NAME...   only the Debian 12 6.1 part: W=1
#                               build for 6.1, the named VM tests booting 6.1
# The 6.1 part of a full run runs $CHECK61_TESTS (the Makefile's) on the
# newest installed 6.1.0-N-amd64 (or $KVER61). XIW_CHECK_SELFCHECK=1 runs
# the VM bench's self-check first (make check-long does).
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-$PWD/build}
export XIW_BUILD=$BUILD

passed=0
failed=0
skipped=0

# Phase times: "NAME SECONDS" lines in $BUILD/phases (the Makefile's
# check target writes deps and build there first); shown by finish().
PHASES=$BUILD/phases
phase_t0=
phase_name=
phase() {	# NAME: end the running phase, start NAME ("" ends only)
	local now
	now=$(date +%s)
	[ -z "$phase_name" ] || echo "$phase_name $((now - phase_t0))" >>"$PHASES"
	phase_name=$1 phase_t0=$now
}

result() {	# name rc
	if [ "$2" = 0 ]; then
		passed=$((passed + 1)); echo "ok - $1"
	else
		failed=$((failed + 1)); echo "not ok - $1"
	fi
}

# static NAME TARGET [ERE...]: `make TARGET` must exit 0 and print no
# warning or error; some line of its output must match each ERE (proof
# that each checker ran at all). Its output is shown on failure.
static() {
	local name=$1 target=$2 out rc why= ran
	shift 2
	# shellcheck disable=SC2086 # TARGET may carry variables: "w1 KVER=..."
	out=$(make --no-print-directory $target 2>&1); rc=$?
	if [ $rc != 0 ]; then
		why="make $target exited $rc"
	elif grep -qiE 'warning:|error:|not found|No such file' <<<"$out"; then
		why="make $target printed warnings"
	fi
	for ran in "$@"; do
		[ -z "$why" ] || break
		grep -qE -- "$ran" <<<"$out" ||
			why="make $target did not run its checker (no /$ran/ line)"
	done
	if [ -n "$why" ]; then
		echo "$out" | tail -n 40
		echo "$why"
		result "$name" 1
	else
		result "$name" 0
	fi
}

if [ $# = 0 ]; then
	phase static
	echo "== static checks of kernel/"
	# checkpatch --quiet prints nothing for clean files
	out=$(make --no-print-directory checkpatch 2>&1); rc=$?
	[ $rc = 0 ] && [ -z "$out" ] || { echo "$out"; rc=1; }
	result "checkpatch --strict clean" $rc

	# make lint compiles every file once with W=1 and C=2, in a tree of
	# its own (the modules under test stay as built): a compiler line per
	# file ("CC"), a sparse run per file ("CHECK"); sparse must be
	# installed.
	if command -v sparse >/dev/null; then
		static "make W=1 C=2 (gcc's W=1 and sparse) warning-free" lint \
			'^ +CC \[M\] ' '^ +CHECK '
	else
		echo "sparse is not installed (make deps installs it)"
		result "make W=1 C=2 (gcc's W=1 and sparse) warning-free" 1
	fi

	phase host-tests
	echo "== host unit tests (ctest)"
	log=$BUILD/ctest.log
	(cd "$BUILD" && ctest --output-on-failure -j"$(nproc)") >"$log" 2>&1
	tail -n 30 "$log"
	# "100% tests passed, 0 tests failed out of 42"
	line=$(grep -E 'tests passed, [0-9]+ tests failed out of [0-9]+' "$log" | tail -n 1)
	if [ -n "$line" ]; then
		total=$(echo "$line" | sed -E 's/.* out of ([0-9]+).*/\1/')
		hf=$(echo "$line" | sed -E 's/.*passed, ([0-9]+) tests failed.*/\1/')
		passed=$((passed + total - hf))
		failed=$((failed + hf))
	else
		echo "ctest did not run"; failed=$((failed + 1))
	fi
fi

# Add the "N passed, N failed[, N skipped]" summary of a log to the totals.
add_summary() {	# log what
	local line vp vf vs
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$1" | tail -n 1)
	if [ -z "$line" ]; then
		echo "$2 produced no summary"; failed=$((failed + 1)); return
	fi
	vp=$(echo "$line" | sed -E 's/^([0-9]+) passed.*/\1/')
	vf=$(echo "$line" | sed -E 's/^[0-9]+ passed, ([0-9]+) failed.*/\1/')
	vs=$(echo "$line" | sed -nE 's/.*, ([0-9]+) skipped.*/\1/p')
	passed=$((passed + vp)); failed=$((failed + vf)); skipped=$((skipped + ${vs:-0}))
}

# check61 NAME...: Debian 12's default kernel, 6.1 (Documentation/testing.md):
# the W=1 build of xiw.ko and xiw_ktest.ko for it must be silent; the
# modules of that build are tested in VMs that boot 6.1 (W=1 adds
# warnings, not code: a build without it would compile every file again
# for the same objects).
check61() {
	local kver=${KVER61:-} out rc ko
	[ -n "$kver" ] || kver=$(ls -1d /lib/modules/6.1.0-*-amd64/build 2>/dev/null |
		sed 's|^/lib/modules/||; s|/build$||' | sort -V | tail -n 1)
	phase linux-6.1
	echo "== Debian 12's 6.1 kernel${kver:+ ($kver)}"
	if [ -z "$kver" ]; then
		echo "no 6.1 kernel headers in /lib/modules/6.1.0-*-amd64: make deps installs them"
		result "Linux 6.1 build and VM tests" 1
		return
	fi
	# a fresh tree: every file compiled (and warned about) again
	rm -rf "$BUILD/kver/$kver"
	static "make W=1 warning-free (Linux $kver)" "w1 KVER=$kver" '^ +CC \[M\] '
	rc=0
	for ko in kernel/xiw.ko selftests/kmod/xiw_ktest.ko; do
		ko=$BUILD/kver/$kver/$ko
		[ -f "$ko" ] && [ "$ko" -nt "$BUILD/.check-start" ] ||
			{ echo "no $ko from this run's W=1 build"; rc=1; }
	done
	result "xiw.ko and xiw_ktest.ko built for $kver" $rc
	[ $rc = 0 ] || return
	XIW_KVER=$kver bash selftests/run.sh "$@" 2>&1 | tee "$BUILD/vm-tests-6.1.log"
	add_summary "$BUILD/vm-tests-6.1.log" "VM test runner (Linux $kver)"
}

# The phase times and the ten slowest VM tests ("ok 7 - name # 12.3s").
report_times() {
	local logs=() f
	phase ""
	for f in "$BUILD/vm-tests.log" "$BUILD/vm-tests-6.1.log"; do
		[ -f "$f" ] && [ "$f" -nt "$BUILD/.check-start" ] && logs+=("$f")
	done
	echo
	echo "== time per phase (seconds)"
	awk '{ printf "  %-12s %6d\n", $1, $2; t += $2 }
		END { printf "  %-12s %6d\n", "total", t }' "$PHASES"
	[ ${#logs[@]} -gt 0 ] || return 0
	echo "== the ten slowest VM tests"
	grep -hE '^(not )?ok [0-9]+ - [^ ]+ # [0-9.]+s' "${logs[@]}" |
		sed -E 's/^(not )?ok [0-9]+ - ([^ ]+) # ([0-9.]+)s.*/\3 \2/' |
		sort -rn | head -n 10 | awk '{ printf "  %7.1fs %s\n", $1, $2 }'
}

finish() {
	report_times
	echo
	if [ "$skipped" -gt 0 ]; then
		echo "$passed passed, $failed failed, $skipped skipped"
	else
		echo "$passed passed, $failed failed"
	fi
	[ "$failed" = 0 ]
	exit
}

mkdir -p "$BUILD"
# The Makefile's check target has written its deps and build phases
# (XIW_PHASES_CONT=1); any other caller (make soak, fuzz-live, by hand)
# starts a fresh list.
[ "${XIW_PHASES_CONT:-}" = 1 ] || : >"$PHASES"
touch "$BUILD/.check-start"
if [ "${1:-}" = --kver61 ]; then
	shift
	[ $# -gt 0 ] || { echo "check.sh: --kver61 needs test names" >&2; exit 2; }
	check61 "$@"
	finish
fi
# The VM bench's self-check (7 minutes of VM boots, crashes and power
# cycles) runs in make check-long, which sets XIW_CHECK_SELFCHECK=1.
if [ "${XIW_CHECK_SELFCHECK:-0}" = 1 ]; then
	phase selfcheck
	echo "== VM bench self-check (the bench must catch oopses, hangs, leaks)"
	bash selftests/run.sh --selfcheck >"$BUILD/vm-selfcheck.log" 2>&1
	grep -vE '^# ' "$BUILD/vm-selfcheck.log" | tail -n 20
	add_summary "$BUILD/vm-selfcheck.log" "VM bench self-check"
fi
if [ $# = 0 ]; then
	phase mutate-sc
	echo "== make mutate's self-check (its verdicts: killed for the reason expected, else error)"
	bash selftests/mutate.sh --selfcheck >"$BUILD/mutate-selfcheck.log" 2>&1
	grep -E '^(not ok|[0-9]+ passed)' "$BUILD/mutate-selfcheck.log"
	add_summary "$BUILD/mutate-selfcheck.log" "make mutate's self-check"
fi

phase siw-build
# siw.ko (from linux-source-6.12) is the interop peer of the siw VM tests:
# not building it is a failure, not a reason to let those tests fail later.
if ! out=$(bash selftests/build-siw.sh 2>&1); then
	echo "$out" | tail -n 20
	echo "cannot build siw.ko (selftests/build-siw.sh)"
	failed=$((failed + 1))
fi

phase vm-tests
echo "== VM tests"
rep=()
[ -z "${REPEAT:-}" ] || [ "$REPEAT" = 1 ] || rep=(-r "$REPEAT")
# kselftest's runner costs 2-4 s around each 1-VM test under TCG and up
# to 9 s around a 2-VM one (Documentation/performance.md): a full run
# starts the main suite's scripts directly and leaves the runner to the
# self-check and the 6.1 part, which still go through it.
ksft=${XIW_KSFT:-1}
[ $# != 0 ] || ksft=${XIW_KSFT:-0}
XIW_KSFT=$ksft bash selftests/run.sh "${rep[@]}" "$@" 2>&1 | tee "$BUILD/vm-tests.log"
add_summary "$BUILD/vm-tests.log" "VM test runner"

# shellcheck disable=SC2086 # a list of test names
[ $# != 0 ] || check61 ${CHECK61_TESTS:-link_basic apps_rping atomic_contention}
finish
