#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 200
# description: data path interop with siw: rping (Send, Read, Write, verified data) xiw <-> siw, without and with MPA CRC; then at an MSS of 1448 (lo's MTU 1500) with CRC on, xiw's FPDUs one segment long and sixteen (fpdu_segments=16: siw must take FPDUs longer than its MSS; xiw0's tx_fpdus fall to at most a quarter)
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

need_cmd rping ip ss
xiw_load
xiw_need_provider
siw_load
params=/sys/module/$XIW_MOD/parameters
defer eval "echo $(cat "$params/mpa_crc") > $params/mpa_crc"
defer eval "echo $(cat "$params/fpdu_segments") > $params/fpdu_segments"

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

# A real link's MSS: FPDUs of one segment (RFC 5044's MULPDU) and of
# sixteen, which siw must reassemble from several segments; siw's own stay
# one segment long. Both roles, data verified.
defer ip link set lo mtu "$(cat /sys/class/net/lo/mtu)"
ip link set lo mtu 1500
crc=2
echo $crc >"$params/mpa_crc"
declare -A fpdus
for n in 1 16; do
	echo $n >"$params/fpdu_segments"
	f0=$(xiw_counter tx_fpdus)
	ping 10.77.3.2 10.77.3.1 65000	# xiw client, siw server
	ping 10.77.3.1 10.77.3.2 65000	# siw client, xiw server
	fpdus[$n]=$(( $(xiw_counter tx_fpdus) - f0 ))
	log "MSS 1448, fpdu_segments=$n: xiw0 sent ${fpdus[$n]} FPDUs"
done
[ "${fpdus[16]}" -le $(( fpdus[1] / 4 )) ] ||
	fail "fpdu_segments=16 did not lengthen xiw's FPDUs: ${fpdus[16]} FPDUs against ${fpdus[1]} with 1"
