#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A stand-in for the host test binary (xiw_wire_tests) in mutate.sh's
# self-check: prints host/NAME.txt for mutation $XIW_MUTATION (the
# baseline's: host/baseline.txt, or host/baseline-$XIW_FAKE_BASELINE.txt)
# and exits with the status of its "# exit: N" line, else 0. GoogleTest
# options are ignored.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
n=${XIW_MUTATION:?}
[ "$n" != 00-baseline ] || n=baseline${XIW_FAKE_BASELINE:+-$XIW_FAKE_BASELINE}
f=$here/host/$n.txt
[ -f "$f" ] || { echo "fake-host.sh: no $f" >&2; exit 2; }
grep -v '^# exit: ' "$f"
rc=$(sed -n 's/^# exit: //p' "$f")
exit "${rc:-0}"
