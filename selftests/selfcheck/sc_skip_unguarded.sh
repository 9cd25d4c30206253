#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 30
# expect: fail
# expect-reason: ^sc_skip_unguarded\.sh:[0-9]+: `\( ?exit 4 ?\)` exited 4$
# description: an unguarded command that exits 4 fails the test (lib.sh), not a skip
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

(exit 4)
echo "not reached"
