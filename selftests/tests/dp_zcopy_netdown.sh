#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 180
# description: the netdev goes down while the network stack below TCP holds a zero-copy Write's pages (netem delays its segments 30 s): ip link set down returns within 10 s (the flush waits for the pages a bounded time under RTNL), the Write does not complete while its pages are held, nor does a Write posted after it in ERROR; once the queued segments are freed both complete with WR_FLUSH_ERR in order and the peer never sees bytes written after the completion
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

ZC=$(need_prog xiw_zcreuse)
need_cmd tc
xiw_loopback
P=/sys/module/$XIW_MOD/parameters
echo 1 >"$P/tx_zcopy"
defer sh -c "echo 0 > $P/tx_zcopy"
modprobe sch_netem || fail "modprobe sch_netem"

# The Write's segments wait in lo's qdisc (the connection runs over lo)
# with references to its pages, which tcp_abort() cannot free; d0 going
# down fails the QPs of xiw0 (NETDEV_GOING_DOWN, under RTNL). RESTORE
# deletes the qdisc, which frees what it holds.
rc=0
run_timeout 120 "$ZC" 192.0.2.1 7491 --flush \
	"tc qdisc add dev lo root netem delay 30s limit 100000" \
	"tc qdisc del dev lo root" 65536 "ip link set d0 down" \
	>zc.log 2>&1 || rc=$?
sed 's/^/# /' zc.log
tc qdisc show dev lo | grep -q netem && tc qdisc del dev lo root
ms=$(sed -n 's/^# close command took \([0-9]*\) ms$/\1/p' zc.log)
[ -n "$ms" ] || fail "no close time: $(grep -m1 -E '^FAIL|command|die' zc.log)"
[ "$ms" -le 10000 ] ||
	fail "ip link set d0 down took $ms ms with zero-copy pages held below TCP"
log "ip link set d0 down took $ms ms"
[ "$rc" = 0 ] || fail "$(grep -m1 -E '^FAIL|command|die' zc.log)"
expect_match "$(cat zc.log)" "^ok the held Write and the later one completed after RESTORE, in order, " "completions"
expect_match "$(cat zc.log)" "^ok flushed zero-copy Write" "peer's sink"
