#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 30
# expect: fail
# expect-reason: ^exit status 4 \(skip\) without a 'SKIP: why' line$
# description: exit status 4 without saying why (no lib.sh) fails (the VM runner)
# Without lib.sh: the runner itself must refuse the skip.
echo "no reason given"
exit 4
