#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A stand-in for selftests/run.sh in mutate.sh's self-check: prints the
# run.sh output of tap/NAME.tap, NAME the mutation being judged
# ($XIW_MUTATION; the baseline's: tap/baseline.tap, or
# tap/baseline-$XIW_FAKE_BASELINE.tap). Exit status: that of a "# exit: N"
# line, else 1 if a test failed, else 0 (run.sh's). Options and test
# names are taken and ignored, but for -o's directory, created.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
while [ $# -gt 0 ]; do
	case $1 in
	-o) mkdir -p "$2"; shift ;;
	-e) shift ;;
	esac
	shift
done
n=${XIW_MUTATION:?}
[ "$n" != 00-baseline ] || n=baseline${XIW_FAKE_BASELINE:+-$XIW_FAKE_BASELINE}
f=$here/tap/$n.tap
[ -f "$f" ] || { echo "fake-run.sh: no $f" >&2; exit 2; }
grep -v '^# exit: ' "$f"
rc=$(sed -n 's/^# exit: //p' "$f")
[ -n "$rc" ] || { grep -q '^not ok ' "$f" && rc=1 || rc=0; }
exit "$rc"
