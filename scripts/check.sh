#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make check: static checks of the kernel code, host unit tests (CTest /
# GoogleTest), then the VM test suite. Ends with one line
# "N passed, N failed" that sums everything; exits non-zero on any failure.
#
#   scripts/check.sh            everything
#   scripts/check.sh NAME...    only the named VM tests (no host tests)
#   REPEAT=N scripts/check.sh NAME...   each named VM test N times in a row
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-$PWD/build}
export XIW_BUILD=$BUILD

passed=0
failed=0
skipped=0

result() {	# name rc
	if [ "$2" = 0 ]; then
		passed=$((passed + 1)); echo "ok - $1"
	else
		failed=$((failed + 1)); echo "not ok - $1"
	fi
}

# static NAME TARGET [ERE]: `make TARGET` must exit 0 and print no
# warning or error; when ERE is given, some line of its output must match
# it (proof that the checker ran at all). Its output is shown on failure.
static() {
	local name=$1 target=$2 ran=${3:-} out rc why=
	out=$(make --no-print-directory "$target" 2>&1); rc=$?
	if [ $rc != 0 ]; then
		why="make $target exited $rc"
	elif grep -qiE 'warning:|error:|not found|No such file' <<<"$out"; then
		why="make $target printed warnings"
	elif [ -n "$ran" ] && ! grep -qE -- "$ran" <<<"$out"; then
		why="make $target did not run its checker (no /$ran/ line)"
	fi
	if [ -n "$why" ]; then
		echo "$out" | tail -n 40
		echo "$why"
		result "$name" 1
	else
		result "$name" 0
	fi
}

if [ $# = 0 ]; then
	echo "== static checks of kernel/"
	# checkpatch --quiet prints nothing for clean files
	out=$(make --no-print-directory checkpatch 2>&1); rc=$?
	[ $rc = 0 ] && [ -z "$out" ] || { echo "$out"; rc=1; }
	result "checkpatch --strict clean" $rc

	# W=1 and C=2 rebuild every file: a compiler line per file ("CC"),
	# a sparse run per file ("CHECK"); sparse must be installed.
	static "make W=1 warning-free" w1 '^ +CC \[M\] '
	if command -v sparse >/dev/null; then
		static "sparse (C=2) warning-free" sparse '^ +CHECK '
	else
		echo "sparse is not installed (make deps installs it)"
		result "sparse (C=2) warning-free" 1
	fi
	# W=1 / C=2 rebuilt the modules; make sure they are the normal build
	# (ktest: xiw.ko, then the kernel API test module that links to it).
	out=$(make --no-print-directory ktest 2>&1); rc=$?
	[ $rc = 0 ] || echo "$out" | tail -n 40
	result "xiw.ko and xiw_ktest.ko rebuilt without W=1/C=2" $rc

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

mkdir -p "$BUILD"
if [ $# = 0 ]; then
	echo "== VM bench self-check (the bench must catch oopses, hangs, leaks)"
	bash selftests/run.sh --selfcheck >"$BUILD/vm-selfcheck.log" 2>&1
	grep -vE '^# ' "$BUILD/vm-selfcheck.log" | tail -n 20
	add_summary "$BUILD/vm-selfcheck.log" "VM bench self-check"
fi

# siw.ko (from linux-source-6.12) is the interop peer of the siw VM tests:
# not building it is a failure, not a reason to let those tests fail later.
if ! out=$(bash selftests/build-siw.sh 2>&1); then
	echo "$out" | tail -n 20
	echo "cannot build siw.ko (selftests/build-siw.sh)"
	failed=$((failed + 1))
fi

echo "== VM tests"
rep=()
[ -z "${REPEAT:-}" ] || [ "$REPEAT" = 1 ] || rep=(-r "$REPEAT")
bash selftests/run.sh "${rep[@]}" "$@" 2>&1 | tee "$BUILD/vm-tests.log"
add_summary "$BUILD/vm-tests.log" "VM test runner"

echo
if [ "$skipped" -gt 0 ]; then
	echo "$passed passed, $failed failed, $skipped skipped"
else
	echo "$passed passed, $failed failed"
fi
[ "$failed" = 0 ]
