#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 300
# description: the short form of make soak (selftests/tests-long/dp_soak.sh): 200 QPs (100 rdma_cm connections) with mixed traffic (Send/Recv, Write, Read, Fetch&Add, Compare&Swap, results checked) for 20 s, then slab objects, free pages, vmalloc areas, TCP sockets and rdma resources back to the baseline within the soak's tolerances
# its own figures, whatever make soak's environment says
export XIW_SOAK_QPS=200 XIW_SOAK_TIME=20 XIW_SOAK_PORT=7610
. "$(dirname "${BASH_SOURCE[0]}")/../tests-long/dp_soak.sh"
