#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 120
# description: deleting the netdev while a process has xiw0 open does not hang; the process lives on, its verbs fail, it exits by itself
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

need_cmd rdma ip ibv_rc_pingpong ss
xiw_load
xiw_need_provider
modprobe dummy numdummies=0 2>/dev/null || true

ip link add d0 type dummy
defer netdev_del d0
ip link set d0 up
rdma link add xiw0 type "$XIW_LINK_TYPE" netdev d0
defer rdma_link_del xiw0

# A verbs process with PD, MR, CQ, QP, posted receives and mapped rings,
# waiting for its peer on TCP port 18515.
ibv_rc_pingpong -d xiw0 -g 0 -p 18515 >pp.log 2>&1 &
pp=$!
defer eval "kill -9 $pp 2>/dev/null || true"
wait_for 20 sh -c "ss -ltn | grep -q ':18515 '" ||
	fail "ibv_rc_pingpong did not get to listen: $(cat pp.log)"
kill -0 "$pp" || fail "ibv_rc_pingpong died: $(cat pp.log)"

# ib_core revokes the process's context instead of waiting for it.
start=$(now_us)
run_timeout 30 ip link del d0 || fail "ip link del d0 hung or failed"
log "ip link del took $(( ($(now_us) - start) / 1000 )) ms with a process attached"
wait_gone 10 ib_dev_exists xiw0 || fail "xiw0 still registered"
no_stray_devices xiw

# The process is still alive. Its peer's address (lid:qpn:psn:gid, 52
# bytes with the NUL) makes it modify its QP, which must fail now that
# the device is gone; it then exits 1 by itself: not hung, no signal.
kill -0 "$pp" || fail "ibv_rc_pingpong died with the netdev: $(cat pp.log)"
exec {fd}<>/dev/tcp/127.0.0.1/18515
printf '0000:000001:000001:00000000000000000000000000000000\0' >&"$fd"
rc=0
run_timeout 20 tail --pid="$pp" -f /dev/null || rc=$?
exec {fd}>&-
[ $rc = 0 ] || fail "ibv_rc_pingpong did not end after its peer's address: $(cat pp.log)"
rc=0
wait "$pp" || rc=$?
log "ibv_rc_pingpong exited $rc: $(tr '\n' '|' <pp.log)"
expect_eq "$rc" 1 "ibv_rc_pingpong's exit status"
expect_match "$(cat pp.log)" "Couldn't connect to remote QP|Failed to modify QP" "its QP modify fails"
log "netdev removal with an open user context ok"
