#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 120
# description: deleting the netdev while a process has xiw0 open does not hang
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

# The process is still alive (its verbs now fail) and exits cleanly.
kill "$pp" 2>/dev/null || true
wait "$pp" 2>/dev/null || true
log "netdev removal with an open user context ok"
