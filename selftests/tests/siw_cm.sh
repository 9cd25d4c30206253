#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 150
# description: iWARP CM interop with siw (both directions): MPA v2 IRD/ORD, p2p RTR, CRC (agreement proven with rping data both ways, with and without CRC), private data, reject with private data, disconnect
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

need_cmd rping ss
T=$(need_prog xiw_cm_tool)
xiw_load
xiw_need_provider

siw_load

dummy_add d0
dummy_add d1
ip addr add 10.77.2.1/24 dev d0
ip addr add 10.77.2.2/24 dev d1
xiw_link_add xiw0 d0
rdma_link_add siw0 siw d1
wait_port_state xiw0 PORT_ACTIVE 5

params=/sys/module/$XIW_MOD/parameters
for p in mpa_crc mpa_p2p; do
	defer eval "echo $(cat "$params/$p") > $params/$p"
done
xiw_dyndbg

port=7300
# server ADDR MODE [COUNT]: xiw_cm_tool server in the background ($srv,
# srv.log) once it listens.
server() {
	port=$((port + 1))
	"$T" server "$1" "$port" "$2" "${3:-1}" >srv.log 2>&1 &
	srv=$!
	wait_for 10 grep -q listening srv.log || fail "server does not listen: $(cat srv.log)"
}
# client ADDR SRC [wait]: xiw_cm_tool client, output in cli.log; then the
# server ends. SRC picks the device: 10.77.2.1 = xiw0, 10.77.2.2 = siw0.
client() {
	run_timeout 20 "$T" client "$1" "$port" "$2" ${3:-} >cli.log 2>&1 ||
		fail "client failed: $(cat cli.log)"
	run_timeout 20 tail --pid="$srv" -f /dev/null || fail "server did not end: $(cat srv.log)"
	wait "$srv" || fail "server failed: $(cat srv.log)"
	log "client: $(tr '\n' '|' <cli.log)"
	log "server: $(tr '\n' '|' <srv.log)"
}

# rping_both: data over connections both ways (Send, RDMA Read, RDMA
# Write, checked with -V), xiw client then siw client
server_rping() {
	rping -s -a "$1" -p $((port + 1)) -C 3 -V >rps.log 2>&1 &
	rps=$!
	wait_listen $((port + 1)) 10 $rps
}
rping_both() {
	local pair rv
	for pair in "10.77.2.2 10.77.2.1" "10.77.2.1 10.77.2.2"; do
		set -- $pair
		server_rping "$1"
		rv=0
		run_timeout 20 rping -c -a "$1" -I "$2" -p $((port + 1)) -C 3 -V >rpc.log 2>&1 ||
			rping_race rpc.log || rv=$?
		wait "$rps" || rping_race rps.log || rv=$?
		port=$((port + 1))
		[ $rv = 0 ] || fail "rping $2 -> $1 ($*) failed ($rv): $(tail -n 5 rpc.log rps.log)"
	done
}

# xiw initiator -> siw responder: p2p offered, siw picks the Write RTR.
kmsg_mark x2s
server 10.77.2.2 accept
client 10.77.2.2 10.77.2.1
# IRD 4 / ORD 2 asked (rdma_cm: responder_resources 4, initiator_depth 2)
expect_match "$(cat srv.log)" 'CONNECT_REQUEST status=0 pd="hello xiw" ird=2 ord=4' "siw got our private data and IRD/ORD"
expect_match "$(cat cli.log)" 'ESTABLISHED status=0 pd="welcome"' "siw's private data"
expect_match "$(cat cli.log)" 'DISCONNECTED' "disconnect"
expect_match "$(kmsg_since)" 'connected: rev 2 crc 0 ird [0-9]+ ord [0-9]+ rtr 2' "xiw: MPA v2, Write RTR"

# siw initiator -> xiw responder: siw asks for no RTR.
kmsg_mark s2x
server 10.77.2.1 accept-close
client 10.77.2.1 10.77.2.2 wait
expect_match "$(cat srv.log)" 'CONNECT_REQUEST status=0 pd="hello xiw" ird=2 ord=4' "xiw got siw's private data and IRD/ORD"
expect_match "$(cat cli.log)" 'ESTABLISHED status=0 pd="welcome"' "siw got ours"
expect_match "$(kmsg_since)" 'accepted: rev 2 crc 0 ird 2 ord 2 rtr 0' "xiw: MPA v2 responder"

# abortive close: the xiw side dies while connected (RST), siw sees it
kmsg_mark abort
server 10.77.2.1 accept
"$T" client 10.77.2.1 "$port" 10.77.2.2 wait >cli.log 2>&1 &
cli=$!
wait_for 10 grep -q ESTABLISHED srv.log || fail "no connection: $(cat srv.log cli.log)"
kill -9 "$srv"
wait "$srv" 2>/dev/null || true
run_timeout 15 tail --pid="$cli" -f /dev/null || fail "siw side not told: $(cat cli.log)"
wait "$cli" || fail "siw client: $(cat cli.log)"
expect_match "$(cat cli.log)" 'DISCONNECTED' "siw side after the abort"
expect_match "$(kmsg_since)" 'xiw_cep_close: status 0 peer 0 abortive 1' "xiw: abortive close"
# and the other way: siw's side dies, xiw reports the peer's close
kmsg_mark peerabort
server 10.77.2.2 accept
"$T" client 10.77.2.2 "$port" 10.77.2.1 wait >cli.log 2>&1 &
cli=$!
wait_for 10 grep -q ESTABLISHED cli.log || fail "no connection: $(cat srv.log cli.log)"
kill -9 "$srv"
wait "$srv" 2>/dev/null || true
run_timeout 15 tail --pid="$cli" -f /dev/null || fail "xiw side not told: $(cat cli.log)"
wait "$cli" || fail "xiw client: $(cat cli.log)"
expect_match "$(cat cli.log)" 'DISCONNECTED' "xiw side after the peer's abort"
expect_match "$(kmsg_since)" 'event 4 status' "DISCONNECT upcall"

# reject with private data, both ways
server 10.77.2.2 reject
client 10.77.2.2 10.77.2.1
expect_match "$(cat cli.log)" 'REJECTED status=[0-9-]+ pd="no thanks"' "siw's reject private data"
kmsg_mark rej
server 10.77.2.1 reject
client 10.77.2.1 10.77.2.2
expect_match "$(cat cli.log)" 'REJECTED status=[0-9-]+ pd="no thanks"' "xiw's reject private data at siw"
expect_match "$(kmsg_since)" 'reject, pd 9' "xiw_reject"

# CRC requested by xiw; siw (CRC off by default) must follow.
echo 1 >"$params/mpa_crc"
kmsg_mark crc
server 10.77.2.2 accept
client 10.77.2.2 10.77.2.1
expect_match "$(kmsg_since)" 'connected: rev 2 crc 1 ' "CRC negotiated with siw"
# xiw's log line is its own account: data both ways under the same
# policy proves siw agrees (a side checking CRCs the other does not send
# ends the connection in a Terminate, and rping fails)
kmsg_mark crcdata
rping_both
expect_match "$(kmsg_since)" 'connected: rev 2 crc 1 ' "xiw initiator with CRC (rping)"
expect_match "$(kmsg_since)" 'accepted: rev 2 crc 1 ' "xiw responder with CRC (rping)"
echo 0 >"$params/mpa_crc"

# without p2p: no RTR
echo 0 >"$params/mpa_p2p"
kmsg_mark nop2p
server 10.77.2.2 accept
client 10.77.2.2 10.77.2.1
expect_match "$(kmsg_since)" 'connected: rev 2 crc 0 ird [0-9]+ ord [0-9]+ rtr 0' "no RTR"
echo 1 >"$params/mpa_p2p"

# and without CRC
rping_both

wait_for 10 eval "[ -z \"\$(rdma res show cm_id 2>/dev/null)\" ]" ||
	fail "cm_ids left: $(rdma res show cm_id)"
log ok
