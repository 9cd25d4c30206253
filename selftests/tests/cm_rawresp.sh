#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 120
# description: iWARP CM, xiw responder vs a raw MPA initiator: p2p RTR choice and timeout, rev 1, markers, bad rev/key/PD_Length, truncation, MPA timeout, IPv6
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$XIW_SELFTESTS/cm_raw_lib.sh"

# --- xiw as responder (rping server) ---------------------------------------
rport=7200
rping -s -P -d -a 10.77.1.1 -p $rport >srv.log 2>&1 &
srv=$!
defer eval 'kill "$srv" 2>/dev/null || true'
rping -s -P -d -a fd00:77:1::1 -p $rport >srv6.log 2>&1 &
srv6=$!
defer eval 'kill "$srv6" 2>/dev/null || true'
defer eval 'tail -n 20 srv.log srv6.log >&2'
wait_for 20 eval "[ \$(ss -Hltn 'sport = :$rport' | wc -l) = 2 ]" || fail "rping servers do not listen"

# speak ADDR MODE: raw initiator to the rping server; output in peer.log
speak() {
	run_timeout 15 "$P" connect "$1" "$rport" "$2" >peer.log 2>&1 || fail "raw peer $2: $(cat peer.log)"
	log "peer $2: $(tr '\n' '|' <peer.log)"
}

kmsg_mark good
speak 10.77.1.1 good
peer=$(cat peer.log)
# p2p: responder picks the zero-length Write RTR, IRD/ORD from the ULP
expect_match "$peer" 'reply key=MPA ID Rep Frame flags=0x10 rev=2 pd=4 ird=0x80.. ord=0x80..' "enhanced reply"
# no RTR comes: the responder gives up after mpa_timeout_resp_ms
ms=$(sed -n 's/^closed after \([0-9]*\) ms.*/\1/p' peer.log)
[ -n "$ms" ] && [ "$ms" -ge 1300 ] && [ "$ms" -le 8000 ] ||
	fail "RTR timeout 1500 ms: peer saw the close after '$ms' ms"
expect_match "$(kmsg_since)" 'accepted: rev 2 crc 0 ird [0-9]+ ord [0-9]+ rtr 2' "kernel log"
expect_match "$(kmsg_since)" 'event 3 status 0' "ESTABLISHED before CLOSE"

kmsg_mark rev1
speak 10.77.1.1 rev1
expect_match "$(cat peer.log)" 'reply key=MPA ID Rep Frame flags=0x00 rev=1 pd=0' "rev 1 reply"
wait_for 5 eval "kmsg_since | grep -q 'event 5 status'" || fail "no CLOSE after the peer's FIN"
expect_match "$(kmsg_since)" 'event 4 status' "DISCONNECT after the peer's FIN"

kmsg_mark markers2
speak 10.77.1.1 markers
expect_match "$(cat peer.log)" 'reply key=MPA ID Rep Frame flags=0x30 rev=2' "reject reply to markers"
expect_match "$(kmsg_since)" 'request asks for markers' "kernel log"

kmsg_mark badrev
speak 10.77.1.1 badrev
expect_match "$(cat peer.log)" 'reply key=MPA ID Rep Frame flags=0x20 rev=1' "reject reply to revision 3"
expect_match "$(kmsg_since)" 'request revision 3 unsupported' "kernel log"

kmsg_mark badkey2
speak 10.77.1.1 badkey
expect_match "$(cat peer.log)" 'closed after' "close after a bad key"
expect_match "$(kmsg_since)" 'bad MPA key' "kernel log"

kmsg_mark pdlen
speak 10.77.1.1 pdlen
expect_match "$(cat peer.log)" 'closed after' "close after PD_Length 600"
expect_match "$(kmsg_since)" 'PD_Length 600 > 512' "kernel log"

kmsg_mark trunc
speak 10.77.1.1 trunc
wait_for 5 eval "kmsg_since | grep -q 'stream ended in MPA frame (10 bytes)'" ||
	fail "truncated request not reported"

kmsg_mark silent2
speak fd00:77:1::1 silent
ms=$(sed -n 's/^closed after \([0-9]*\) ms.*/\1/p' peer.log)
[ -n "$ms" ] && [ "$ms" -ge 1300 ] && [ "$ms" -le 8000 ] ||
	fail "responder timeout 1500 ms: peer saw the close after '$ms' ms"

kill "$srv" "$srv6"
wait "$srv" "$srv6" 2>/dev/null || true
# every endpoint is gone: no cm_id left, nothing in the CM's hands
wait_for 10 eval "[ -z \"\$(rdma res show cm_id 2>/dev/null | grep xiw0)\" ]" ||
	fail "cm_ids left: $(rdma res show cm_id)"
log "ok"
