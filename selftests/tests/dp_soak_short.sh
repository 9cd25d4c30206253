#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 300
# description: the short form of make soak (selftests/tests-long/dp_soak.sh): 200 QPs (100 rdma_cm connections) with mixed traffic (Send/Recv, Write, Read, Fetch&Add, Compare&Swap, results checked: each Write's round pattern read back, Reads of a fixed pattern, every byte of every Send) for 20 s, then slab objects, free pages, vmalloc areas, TCP sockets and rdma resources back to the baseline within the soak's tolerances
# its own figures, whatever make soak's environment says
export XIW_SOAK_QPS=200 XIW_SOAK_TIME=20 XIW_SOAK_PORT=7610
. "$(dirname "${BASH_SOURCE[0]}")/../tests-long/dp_soak.sh"
# Write, Read and Send payloads were checked, not only completions: each
# Write's round pattern read back, the peer's fixed range read, every
# byte of every Send received (xiw_soak)
[[ $(cat soak.log) =~ payloads\ checked:\ writes\ ([0-9]+)\ reads\ ([0-9]+)\ sends\ ([0-9]+) ]] ||
	fail "xiw_soak: no 'payloads checked' line"
[ "${BASH_REMATCH[1]}" -gt 0 ] && [ "${BASH_REMATCH[2]}" -gt "${BASH_REMATCH[1]}" ] &&
	[ "${BASH_REMATCH[3]}" -gt 0 ] ||
	fail "xiw_soak checked ${BASH_REMATCH[1]} Writes, ${BASH_REMATCH[2]} Reads and ${BASH_REMATCH[3]} Sends"
log "payloads checked: ${BASH_REMATCH[1]} Writes read back, ${BASH_REMATCH[2]} Reads, ${BASH_REMATCH[3]} Sends byte by byte"
