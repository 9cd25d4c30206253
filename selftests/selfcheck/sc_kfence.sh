#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 30
# expect: fail
# expect-reason: kernel: BUG: KFENCE
# description: a KFENCE report fails a test
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

echo "BUG: KFENCE: use-after-free read in xiw_bench_selfcheck" >/dev/kmsg
