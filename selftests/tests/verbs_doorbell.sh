#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 150
# description: SQ doorbell file: one per QP (EEXIST), unknown QP refused, ENXIO after destroy_qp, closed before or after its QP, survives rdma link del and kill -9; libxiw uses it; its cost and rate against the legacy write() doorbell reported (not judged)
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

B=$(need_prog xiw_dbbench)
xiw_loopback 192.0.2.1

# Rules and cost. libxiw must leave the doorbell file to xiw_dbbench.
XIW_LEGACY_DOORBELL=1 run_timeout 60 "$B" 192.0.2.1 7801 --iters 20000 \
	>rules.log 2>&1 || fail "xiw_dbbench: $(grep -v '^ok' rules.log)"
log "$(grep -E '^cost' rules.log); $(grep -E '^report' rules.log)"
expect_nomatch "$(cat rules.log)" '^FAIL' "rules"

# The rate of 8-byte RDMA Writes posted one by one, each with a doorbell:
# through the file (libxiw's default) and through the legacy write().
run_timeout 60 "$B" 192.0.2.1 7802 --rate-only --iters 20000 >rate-file.log 2>&1 ||
	fail "rate with the doorbell file: $(cat rate-file.log)"
XIW_LEGACY_DOORBELL=1 run_timeout 60 "$B" 192.0.2.1 7803 --rate-only --iters 20000 \
	>rate-legacy.log 2>&1 || fail "rate with the legacy doorbell: $(cat rate-legacy.log)"
expect_match "$(cat rate-file.log)" 'doorbell=file' "libxiw uses the doorbell file"
expect_match "$(cat rate-legacy.log)" 'doorbell=legacy' "XIW_LEGACY_DOORBELL=1"
log "file: $(cat rate-file.log); legacy: $(cat rate-legacy.log)"

# A process with an open doorbell file while its device is deleted: the
# delete completes (the context is revoked), the doorbell then fails
# cleanly, the process exits.
XIW_LEGACY_DOORBELL=1 run_timeout 60 "$B" 192.0.2.1 7804 --iters 200 --hold held \
	>hold.log 2>&1 &
pid=$!
wait_for 30 test -e held || fail "xiw_dbbench --hold: $(cat hold.log)"
run_timeout 30 rdma link delete xiw0 || fail "rdma link delete with an open doorbell file"
rm held
wait "$pid" || fail "after the device went: $(cat hold.log)"
expect_match "$(cat hold.log)" '^ok doorbell after the device is gone' "doorbell after rdma link del"

# kill -9 with open doorbell files: everything is released.
xiw_link_add xiw0 d0
wait_port_state xiw0 PORT_ACTIVE 5
"$B" 192.0.2.1 7805 --rate-only --iters 100000000 >kill.log 2>&1 &
pid=$!
# kill it once its doorbell file is open (the writes follow at once)
wait_for 30 eval "ls -l /proc/$pid/fd | grep -q 'anon_inode:\[xiw_doorbell\]'" ||
	fail "xiw_dbbench opened no doorbell file: $(cat kill.log)"
kill -9 "$pid"
wait "$pid" 2>/dev/null || true
wait_for 10 eval "[ -z \"\$(rdma res show qp 2>/dev/null | grep -v 'qpn 1 ')\" ]" ||
	fail "QPs left after kill -9: $(rdma res show qp)"
log ok
