#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 120
# description: iWARP CM, xiw initiator vs a raw MPA peer: reject+pdata, markers, bad key, timeouts (connect, MPA, FIN), CRC/rev/p2p policy, IPv6
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$XIW_SELFTESTS/cm_raw_lib.sh"

# --- xiw as initiator -------------------------------------------------------
kmsg_mark reject
peer_listen reject
client
peer=$(cat peer.log)
# the request: rev 2, enhanced, IRD/ORD block with P2P and Write|Read RTR
expect_match "$peer" 'request key=MPA ID Req Frame flags=0x10 rev=2 pd=4 ird=0x80.. ord=0xc0..' "request"
expect_match "$(cat cli.log)" 'RDMA_CM_EVENT_REJECTED' "rping after a reject"
expect_match "$(kmsg_since)" 'rejected by the peer, pd 7' "kernel log"
expect_match "$(kmsg_since)" 'event 2 status -104 pd 7' "CONNECT_REPLY upcall"
expect_nomatch "$peer" 'reset' "close after a reject (graceful)"

kmsg_mark markers
peer_listen markers
client
expect_match "$(cat cli.log)" 'RDMA_CM_EVENT_REJECTED' "rping, reply with markers"
expect_match "$(kmsg_since)" 'reply asks for markers' "kernel log"

kmsg_mark badkey
peer_listen badkey
client
expect_match "$(cat cli.log)" 'RDMA_CM_EVENT_REJECTED' "rping, reply with a bad key"
expect_match "$(kmsg_since)" 'bad MPA key' "kernel log"

kmsg_mark silent
peer_listen silent
client
expect_match "$(cat cli.log)" 'RDMA_CM_EVENT_UNREACHABLE' "rping, peer never replies"
ms=$(sed -n 's/^closed after \([0-9]*\) ms.*/\1/p' peer.log)
[ -n "$ms" ] && [ "$ms" -ge 1300 ] && [ "$ms" -le 6000 ] ||
	fail "initiator timeout 1500 ms: peer saw the close after '$ms' ms"
expect_match "$(kmsg_since)" 'event 2 status -110' "CONNECT_REPLY -ETIMEDOUT"

# Graceful close (rdma_disconnect: FIN) to a peer that never sends its FIN:
# the connection is reset after mpa_timeout_resp_ms.
T=$(need_prog xiw_cm_tool)
kmsg_mark hold
peer_listen accept-hold
run_timeout 15 "$T" client 10.77.1.1 "$port" 10.77.1.1 >cli.log 2>&1 ||
	fail "rdma_cm client: $(cat cli.log)"
wait "$peer_pid" || fail "raw peer: $(cat peer.log)"
expect_match "$(cat cli.log)" 'ESTABLISHED status=0 pd="ok"' "connected to the raw peer"
expect_match "$(cat cli.log)" 'DISCONNECTED' "disconnect"
expect_match "$(kmsg_since)" 'graceful close: FIN' "FIN sent"
expect_match "$(kmsg_since)" 'CLOSING: xiw_cep_timed_out' "no FIN from the peer: timer"

# TCP connect never completes (SYN into a dummy netdev): -ETIMEDOUT too.
ip route add 10.77.9.0/24 dev d0
kmsg_mark synlost
run_timeout 8 rping -c -d -a 10.77.9.9 -p 7199 -C 1 >cli.log 2>&1 || true
expect_match "$(cat cli.log)" 'RDMA_CM_EVENT_UNREACHABLE' "rping, SYN lost"
expect_match "$(kmsg_since)" 'CONNECTING: xiw_cep_timed_out' "timeout while connecting"

# CRC policy: 2 = require; a reply without C is refused.
echo 2 >"$params/mpa_crc"
kmsg_mark crc2
peer_listen accept
client
expect_match "$(cat peer.log)" 'request key=MPA ID Req Frame flags=0x50 ' "request with C"
expect_match "$(cat cli.log)" 'RDMA_CM_EVENT_REJECTED' "rping, mpa_crc=2 and no C in the reply"
expect_match "$(kmsg_since)" 'mpa_crc=2 requires it' "kernel log"
# revision 1, no p2p: no RFC 6581 block
echo 0 >"$params/mpa_crc"
echo 1 >"$params/mpa_rev"
peer_listen reject
client
expect_match "$(cat peer.log)" 'request key=MPA ID Req Frame flags=0x00 rev=1 pd=0 ' "rev 1 request"
echo 2 >"$params/mpa_rev"
echo 0 >"$params/mpa_p2p"
peer_listen reject
client
expect_match "$(cat peer.log)" 'flags=0x10 rev=2 pd=4 ird=0x00.. ord=0x00..' "request without p2p"
echo 1 >"$params/mpa_p2p"
# IPv6
peer_listen reject fd00:77:1::1
client fd00:77:1::1
expect_match "$(cat cli.log)" 'RDMA_CM_EVENT_REJECTED' "rping over IPv6"

wait_for 10 eval "[ -z \"\$(rdma res show cm_id 2>/dev/null | grep xiw0)\" ]" ||
	fail "cm_ids left: $(rdma res show cm_id)"
log "ok"
