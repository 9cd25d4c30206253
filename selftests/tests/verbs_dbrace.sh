#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 300
# description: QP doorbell object lifetime: threads racing to allocate (and to replace a closed) doorbell get exactly one, doorbell writes while destroy_qp runs, ENXIO after it; unconnected and connected QPs with RDMA Writes in flight; KFENCE and refcount clean
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

P=$(need_prog xiw_dbrace)
xiw_loopback 192.0.2.1
log "KFENCE sample interval: $(cat /sys/module/kfence/parameters/sample_interval 2>/dev/null || echo off) ms"

rounds=${XIW_DBRACE_ROUNDS:-300}
conn=${XIW_DBRACE_CONN_ROUNDS:-12}
run_timeout 240 "$P" xiw0 --rounds "$rounds" --threads 4 \
	--connect 192.0.2.1 7811 --conn-rounds "$conn" >dbrace.log 2>&1 ||
	fail "xiw_dbrace: $(grep -m3 -E '^FAIL|:' dbrace.log | tr '\n' ' ')"
log "$(grep -vE '^ok' dbrace.log)"
expect_nomatch "$(cat dbrace.log)" '^FAIL' "xiw_dbrace"

# Nothing left behind: every QP and every doorbell went with its process.
wait_for 10 eval "[ -z \"\$(rdma res show qp 2>/dev/null | grep -v 'qpn 1 ')\" ]" ||
	fail "QPs left: $(rdma res show qp)"
log ok
