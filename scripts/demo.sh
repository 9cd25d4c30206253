#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make demo: boot the test VM, run scripts/demo-guest.sh in it, print the
# report. Needs the build (make) and the tools from make deps.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${BUILD:-$PWD/build}/demo
rm -rf "$out"
mkdir -p "$out"
echo "xiw demo: booting a test VM (qemu, $(nproc) cores, no KVM needed)..."
start=$(date +%s)
XIW_BUILD=${BUILD:-$PWD/build} bash selftests/vm/vm.sh -t 600 -o "$out" \
	-e XIW_BUILD="${BUILD:-$PWD/build}" "$PWD/scripts/demo-guest.sh"
rc=$?
if [ -s "$out/demo.txt" ]; then
	cat "$out/demo.txt"
else
	echo "no report; console log:"; tail -n 40 "$out/console.log" 2>/dev/null
fi
echo
echo "demo $([ $rc = 0 ] && echo succeeded || echo FAILED) in $(( $(date +%s) - start )) s"
exit $rc
