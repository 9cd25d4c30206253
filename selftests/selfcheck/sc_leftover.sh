#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 30
# expect: fail
# expect-reason: ^left behind .* net:scleft0
# description: a netdev a passing test leaves behind fails it (the runner removes it)
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

modprobe dummy numdummies=0 2>/dev/null || true
ip link add scleft0 type dummy
log "passing, but scleft0 stays"
