#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Run the libFuzzer harnesses of selftests/fuzz and report executions and
# coverage. Used by CTest (a short run per harness, fixed seed) and by
# make fuzz (FUZZ_TIME seconds per harness, corpus kept in the build tree,
# then a source-coverage report of kernel/xiw_wire.h).
#
#   run.sh --build DIR [--runs N | --time S] [--keep CORPUSDIR] [--coverage]
#          [HARNESS...]                   (default: every harness)
#   run.sh --build DIR --check-corpus     committed seeds == generator output
#
# The committed seeds (corpus/<harness>/) are copied into a scratch or
# kept corpus, never written to. A property violation or sanitizer report
# stores the input under DIR/artifacts/<harness>/ and fails the run.
# Files named crash-* in corpus/<harness>/ are reproducers of known bugs:
# they are not used as seeds but replayed, and the run fails while they
# still crash.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
all="ddp_hdr fpdu_stream mpa term atomic"

build='' runs='' time='' keep='' coverage=0 check_corpus=0
harnesses=()
while [ $# -gt 0 ]; do
	case $1 in
	--build) build=$2; shift ;;
	--runs) runs=$2; shift ;;
	--time) time=$2; shift ;;
	--keep) keep=$2; shift ;;
	--coverage) coverage=1 ;;
	--check-corpus) check_corpus=1 ;;
	-h|--help) sed -n '2,20s/^# \{0,1\}//p' "$0"; exit 0 ;;
	-*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
	*) harnesses+=("$1") ;;
	esac
	shift
done
[ ${#harnesses[@]} -gt 0 ] || read -ra harnesses <<<"$all"
if [ -z "$build" ] || [ ! -x "$build/fuzz_ddp_hdr" ]; then
	echo "fuzz: harnesses not built${build:+ in $build}: they need clang-14," \
		"libfuzzer-14-dev and libclang-rt-14-dev (make deps), then make" >&2
	exit 1
fi
[ -n "$runs$time" ] || runs=200000

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ $check_corpus = 1 ]; then
	"$build/xiw_fuzz_gencorpus" "$tmp/gen" >/dev/null || exit 1
	if diff -r -x 'crash-*' "$here/corpus" "$tmp/gen" >"$tmp/diff"; then
		echo "committed corpus matches xiw_fuzz_gencorpus"
		exit 0
	fi
	head -n 20 "$tmp/diff"
	echo "corpus/ differs from what the wire encoders produce now:" \
		"regenerate with make fuzz-corpus"
	exit 1
fi

stat() {	# log key
	sed -n "s/^stat::$2: *//p" "$1" | tail -n 1
}

failed=0
for h in "${harnesses[@]}"; do
	bin=$build/fuzz_$h
	seeds=$here/corpus/$h
	if [ ! -x "$bin" ]; then
		echo "fuzz_$h: no such harness ($bin)"; failed=1; continue
	fi
	if [ -n "$keep" ]; then
		corpus=$keep/$h
	else
		corpus=$tmp/corpus-$h
	fi
	mkdir -p "$corpus" "$build/artifacts/$h"
	nseed=0
	for f in "$seeds"/*; do
		[ -f "$f" ] || continue
		case ${f##*/} in crash-*) continue ;; esac
		cp -n "$f" "$corpus/" && nseed=$((nseed + 1))
	done
	before=$(find "$corpus" -type f | wc -l)

	# Known-bug reproducers: they must not crash any more.
	for f in "$seeds"/crash-*; do
		[ -f "$f" ] || continue
		if "$bin" "$f" >"$tmp/repro.log" 2>&1; then
			echo "fuzz_$h: ${f##*/} no longer crashes (fixed? remove it)"
		else
			echo "fuzz_$h: ${f##*/} still crashes:"
			grep -E '==xiw-fuzz==|ERROR: |SUMMARY' "$tmp/repro.log" | head -n 4
			failed=1
		fi
	done

	args=(-print_final_stats=1 -timeout=10 -rss_limit_mb=2048
	      "-artifact_prefix=$build/artifacts/$h/")
	if [ -n "$time" ]; then
		args+=("-max_total_time=$time")
	else
		args+=("-runs=$runs" -seed=1)
	fi
	log=$build/artifacts/$h/last-run.log
	start=$(date +%s.%N)
	"$bin" "${args[@]}" "$corpus" >"$log" 2>&1
	rc=$?
	secs=$(echo "$(date +%s.%N) - $start" | bc)
	after=$(find "$corpus" -type f | wc -l)
	execs=$(stat "$log" number_of_executed_units)
	# libFuzzer's own average divides by whole seconds: compute it here.
	rate=$(echo "${execs:-0} / ($secs + 0.001)" | bc)
	covl=$(grep -E '(DONE|INITED|NEW|pulse|REDUCE) +cov:' "$log" | tail -n 1)
	cov=$(echo "$covl" | sed -nE 's/.* cov: ([0-9]+).*/\1/p')
	ft=$(echo "$covl" | sed -nE 's/.* ft: ([0-9]+).*/\1/p')
	summary=$(printf '%s execs in %.1f s (%s/s), cov %s ft %s, corpus %s -> %s' \
		"${execs:-?}" "$secs" "${rate:-?}" "${cov:-?}" "${ft:-?}" \
		"$before" "$after")
	if [ $rc = 0 ]; then
		echo "fuzz_$h: $summary, no property violated"
	else
		failed=1
		echo "fuzz_$h: FAILED (exit $rc) after $summary"
		grep -E '==xiw-fuzz==|ERROR: |SUMMARY|Test unit written' "$log" | head -n 8
		echo "log: $log"
	fi
done

if [ $coverage = 1 ] && [ -x "$build/fuzz_ddp_hdr_cov" ]; then
	prof=$(command -v llvm-profdata-14 || command -v llvm-profdata)
	cov=$(command -v llvm-cov-14 || command -v llvm-cov)
	if [ -z "$prof" ] || [ -z "$cov" ]; then
		echo "coverage: llvm-profdata/llvm-cov not found, skipped"
	else
		out=$build/coverage
		rm -rf "$out"; mkdir -p "$out"
		objs=()
		for h in "${harnesses[@]}"; do
			dir=${keep:+$keep/$h}
			[ -n "$dir" ] || dir=$here/corpus/$h
			LLVM_PROFILE_FILE=$out/$h.profraw "$build/fuzz_${h}_cov" \
				-runs=0 "$dir" >/dev/null 2>&1
			objs+=(-object "$build/fuzz_${h}_cov")
		done
		"$prof" merge -sparse "$out"/*.profraw -o "$out/all.profdata"
		echo "source coverage of kernel/xiw_wire.h by the corpus" \
			"(harnesses: ${harnesses[*]}):"
		# (harness-local functions of the same name in several
		# binaries draw a "mismatched data" warning: not xiw_wire.h's)
		"$cov" report -instr-profile "$out/all.profdata" "${objs[@]:1}" \
			"$top/kernel/xiw_wire.h" 2>&1 | grep -v 'mismatched data' |
			sed -n '1,2p;$p' | sed -E 's|^/.*/kernel/|kernel/|'
		"$cov" show -format=html -output-dir "$out/html" \
			-instr-profile "$out/all.profdata" "${objs[@]:1}" \
			"$top/kernel/xiw_wire.h" >/dev/null 2>&1 &&
			echo "annotated source: $out/html/index.html"
	fi
fi
exit $failed
