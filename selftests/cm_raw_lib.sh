# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Common setup of the raw-MPA-peer CM tests (tests/cm_raw*.sh), sourced
# after lib.sh: xiw0 on d0 (10.77.1.1, fd00:77:1::1), short MPA timers,
# dynamic debug on, and helpers to run the raw peer (xiw_mpa_peer) and an
# rping client against it and to read the kernel log since a mark.

need_cmd rping ss
P=$(need_prog xiw_mpa_peer)
xiw_load
xiw_need_provider
dummy_add d0
ip addr add 10.77.1.1/24 dev d0
ip -6 addr add fd00:77:1::1/64 dev d0 nodad
xiw_link_add xiw0 d0
wait_port_state xiw0 PORT_ACTIVE 5

params=/sys/module/$XIW_MOD/parameters
for p in mpa_timeout_init_ms mpa_timeout_resp_ms mpa_crc mpa_rev mpa_p2p; do
	defer eval "echo $(cat "$params/$p") > $params/$p"
done
echo 1500 >"$params/mpa_timeout_init_ms"
echo 1500 >"$params/mpa_timeout_resp_ms"
xiw_dyndbg

port=7100
# peer_listen MODE [ADDR]: raw MPA responder in the background ($peer_pid,
# output in peer.log), once it listens.
peer_listen() {
	port=$((port + 1))
	"$P" listen "${2:-10.77.1.1}" "$port" "$1" >peer.log 2>&1 &
	peer_pid=$!
	wait_for 5 grep -q listening peer.log || fail "raw peer does not listen"
}
# client [ADDR]: rping client on xiw0 to the raw peer; its log in cli.log.
client() {
	run_timeout "${CLI_T:-8}" rping -c -d -a "${1:-10.77.1.1}" -p "$port" -C 1 >cli.log 2>&1 || true
	wait "$peer_pid" || fail "raw peer failed: $(cat peer.log)"
	log "peer: $(tr '\n' '|' <peer.log)"
	log "rping: $(grep cma_event cli.log | tr '\n' '|')"
}
