#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The self-check of selftests/mutate.sh's verdicts (mutate.sh --selfcheck,
# make check): the fixture patches here change target.txt only, so
# nothing is built; fake-run.sh stands in for run.sh and fake-host.sh for
# the host test binary, each printing the output that tap/NAME.tap or
# host/NAME.txt gives for mutation NAME. Checked: every fixture's verdict
# and detail (expect.txt), the summary line and exit status, a failing
# baseline (a named test fails or skips on the clean tree, and the host
# tests' failure) stopping the run with exit status 3, -B; and that every
# real mutation (selftests/mutations/) applies to the tree. Prints TAP and
# "N passed, N failed"; a scratch tree in a temporary directory.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mutate=$here/../../mutate.sh
tmp=$(mktemp -d /tmp/xiw-mutate-selfcheck.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

export XIW_BUILD=$tmp XIW_MUTATIONS=$here XIW_MUTATE_RUN=$here/fake-run.sh \
	XIW_MUTATE_HOST=$here/fake-host.sh XIW_MUTATE_FILES=selftests/selfcheck/mutate
unset XIW_FAKE_BASELINE

i=0 np=0 nf=0
t() {	# WHAT OK(0|1) [DETAIL]
	i=$((i + 1))
	if [ "$2" = 0 ]; then
		np=$((np + 1)); echo "ok $i - $1"
	else
		nf=$((nf + 1)); echo "not ok $i - $1${3:+ ($3)}"
	fi
}
echo "TAP version 13"

# 1. Every fixture, with a passing baseline.
out=$(bash "$mutate" 2>&1); rc=$?
echo "$out" >"$tmp/all.out"
n=0 k=0 s=0 e=0
while read -r name want re; do
	[ -n "$name" ] && [[ $name != \#* ]] || continue
	n=$((n + 1))
	case $want in KILLED) k=$((k + 1)) ;; SURVIVED) s=$((s + 1)) ;; *) e=$((e + 1)) ;; esac
	l=$(grep -E "^mutate: $name: [A-Z]+ \([0-9]+ s\) " <<<"$out" | tail -n 1)
	got=$(sed -E 's/^mutate: [^:]+: ([A-Z]+) .*/\1/' <<<"$l")
	detail=$(sed -E 's/^mutate: [^:]+: [A-Z]+ \([0-9]+ s\) //' <<<"$l")
	if [ "$got" = "$want" ] && grep -qE -- "$re" <<<"$detail"; then
		t "$name: $want, /$re/" 0
	else
		t "$name: $want, /$re/" 1 "got: ${l:-no verdict line}"
	fi
done <"$here/expect.txt"
t "the baseline ran once, before the mutations" \
	"$(grep -cE '^mutate: baseline passed' <<<"$out" | grep -qx 1; echo $?)"
sum="mutate: $n mutations: $k killed, $s survived, $e error in "
t "summary line '$sum...'" "$(grep -qF -- "$sum" <<<"$out"; echo $?)" \
	"$(grep '^mutate: [0-9]* mutations' <<<"$out")"
t "exit status 1 when a mutation survived or errored" "$([ $rc = 1 ]; echo $?)" "exit $rc"

# 2. The baseline fails: a named test fails or skips on the clean tree.
out=$(XIW_FAKE_BASELINE=fail bash "$mutate" 2>&1); rc=$?
t "a failing baseline: exit status 3" "$([ $rc = 3 ]; echo $?)" "exit $rc"
t "a failing baseline: says which test and why" \
	"$(grep -q "fx_a: failed: value: got '5', expected '0'" <<<"$out" &&
	   grep -q 'fx_b: skipped: no second device' <<<"$out" &&
	   grep -q 'host: exit 1, failed: RxCheck.DdpVersion' <<<"$out"; echo $?)" \
	"$(grep -v '^mutate: sync' <<<"$out" | head -n 5 | tr '\n' ' ')"
t "a failing baseline: no mutation is judged" \
	"$(! grep -qE '^mutate: [0-9]+-[^:]+: (KILLED|SURVIVED|ERROR)' <<<"$out"; echo $?)"

# 3. -B: no baseline.
out=$(XIW_FAKE_BASELINE=fail bash "$mutate" -B 01 13 2>&1); rc=$?
t "-B: no baseline, the mutations judged, exit status 0" \
	"$([ $rc = 0 ] && ! grep -q 'baseline' <<<"$out" &&
	   grep -q '^mutate: 2 mutations: 2 killed, 0 survived, 0 error' <<<"$out"; echo $?)" \
	"exit $rc: $(tail -n 1 <<<"$out")"

# 4. The real mutations apply to this tree as mutate.sh applies them: a
# patch whose context moved away would only show as an ERROR in a long
# make mutate run (six did, unnoticed, after code and tests moved).
root=$(cd "$here/../../.." && pwd)
bad=
for p in "$root"/selftests/mutations/*.patch; do
	patch -p1 -d "$root" --dry-run -s -f <"$p" >/dev/null 2>&1 ||
		bad+=" $(basename "$p" .patch)"
done
t "every patch of selftests/mutations/ applies to the tree" \
	"$([ -z "$bad" ]; echo $?)" "does not apply:$bad"

echo "1..$i"
echo "$np passed, $nf failed"
[ $nf = 0 ]
