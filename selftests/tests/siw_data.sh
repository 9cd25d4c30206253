#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 200
# description: data path interop with siw: rping (Send, Read, Write, verified data) xiw <-> siw, without and with MPA CRC
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

need_cmd rping ip ss
xiw_load
xiw_need_provider
siw_load
params=/sys/module/$XIW_MOD/parameters
defer eval "echo $(cat "$params/mpa_crc") > $params/mpa_crc"

dummy_add d0
dummy_add d1
ip addr add 10.77.3.1/24 dev d0
ip addr add 10.77.3.2/24 dev d1
xiw_link_add xiw0 d0
rdma_link_add siw0 siw d1
wait_port_state xiw0 PORT_ACTIVE 5

port=7400
# ping SERVER_ADDR CLIENT_ADDR SIZE: rping server on SERVER_ADDR, client
# bound to CLIENT_ADDR, data verified (-V).
ping() {
	port=$((port + 1))
	run_timeout 60 rping -s -a "$1" -p $port -C 10 -S "$3" >srv.log 2>&1 &
	srv=$!
	wait_listen $port 20 $srv
	run_timeout 60 rping -c -a "$1" -I "$2" -p $port -C 10 -S "$3" -V \
		>cli.log 2>&1 || rping_race cli.log || {
		cat cli.log srv.log
		fail "rping $2 -> $1 ($3 bytes, mpa_crc=$crc) failed"
	}
	wait $srv || rping_race srv.log || { cat srv.log; fail "rping server $1 failed"; }
	log "rping $2 -> $1, $3 bytes, mpa_crc=$crc: ok"
}

for crc in 0 2; do
	echo $crc >"$params/mpa_crc"
	ping 10.77.3.2 10.77.3.1 100	# xiw client, siw server
	ping 10.77.3.1 10.77.3.2 100	# siw client, xiw server
	ping 10.77.3.2 10.77.3.1 65000
	ping 10.77.3.1 10.77.3.2 65000
done
