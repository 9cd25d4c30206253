#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 150
# description: IPv6 end to end on xiw: rping (Send, Read, Write, data verified) to a specific and to a wildcard [::] server (also at an address added after the listen), ucmatose with 4 connections at once, NVMe-oF with nvmet on [::] and 16 MiB written and read back; xiw's own log shows the IPv6 4-tuples
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$XIW_SELFTESTS/nvmet_lib.sh"

need_cmd rping ss ucmatose
xiw_load
xiw_need_provider
A=fd00:77:9::1
B=fd00:77:9::2
dummy_add d0
dummy_add d1
ip -6 addr add $A/64 dev d0 nodad
ip -6 addr add $B/64 dev d1 nodad
xiw_link_add xiw0 d0
xiw_link_add xiw1 d1
wait_port_state xiw0 PORT_ACTIVE 5
wait_port_state xiw1 PORT_ACTIVE 5

xiw_dyndbg

port=7800
# ping SERVER_ADDR CLIENT_ADDR SIZE: rping server on SERVER_ADDR (:: =
# wildcard), client bound to CLIENT_ADDR towards DST (the server's device)
ping() {
	local dst=$1
	[ "$1" != :: ] || dst=$2
	port=$((port + 1))
	run_timeout 60 rping -s -a "$1" -p $port -C 5 -S "$3" -V >srv.log 2>&1 &
	srv=$!
	wait_listen $port 20 $srv
	run_timeout 60 rping -c -a "$dst" -I "$2" -p $port -C 5 -S "$3" -V \
		>cli.log 2>&1 || rping_race cli.log ||
		fail "rping $2 -> [$1]:$port ($3 bytes): $(tail -n 3 cli.log srv.log)"
	wait $srv || rping_race srv.log || fail "rping server [$1]: $(tail -n 3 srv.log)"
	log "rping over IPv6 $2 -> [$1]:$port, $3 bytes: ok"
}

# specific address: xiw1 -> xiw0 (through lo)
kmsg_mark spec
ping $A $B 100
ping $A $B 65000
expect_match "$(kmsg_since)" "xiw1: .*\[$B\]:[0-9]+ -> \[$A\]:$port" "xiw1 connected over IPv6"
expect_match "$(kmsg_since)" "xiw0: .*listening on \[$A\]:$port" "xiw0 listened on the IPv6 address"
# wildcard: one socket per device, bound to its netdev
kmsg_mark wild
ping :: $A 4096
expect_match "$(kmsg_since)" "xiw0: .*shared socket for \[::\]:$port dev $(cat /sys/class/net/d0/ifindex)" \
	"xiw0's wildcard socket bound to d0"
expect_match "$(kmsg_since)" "xiw0: .*\[$A\]:[0-9]+ -> \[$A\]:$port" "xiw0 connected over IPv6"

# an address added to d0 while a [::] server listens is served
port=$((port + 1))
run_timeout 60 rping -s -a :: -p $port -C 3 -V >srv.log 2>&1 &
srv=$!
wait_listen $port 20 $srv
ip -6 addr add fd00:77:9::11/64 dev d0 nodad
run_timeout 30 rping -c -a fd00:77:9::11 -I fd00:77:9::11 -p $port -C 3 -V >cli.log 2>&1 ||
	rping_race cli.log ||
	fail "rping to an address added after the listen: $(tail -n 3 cli.log srv.log)"
wait $srv || rping_race srv.log || fail "rping server [::]: $(tail -n 3 srv.log)"

# Several connections at once: ucmatose (rdmacm-utils), 4 RC
# connections from xiw1 to xiw0, 50 Sends of 4 KiB each way on each.
# (perftest 4.5 cannot: its rdma_cm server binds an IPv4 address only.)
kmsg_mark ucma
port=$((port + 1))
run_timeout 60 ucmatose -f ipv6 -b $A -p $port -c 4 -C 50 -S 4096 >srv.log 2>&1 &
srv=$!
wait_listen $port 20 $srv
t0=$(now_us)
run_timeout 60 ucmatose -f ipv6 -s $A -b $B -p $port -c 4 -C 50 -S 4096 >cli.log 2>&1 ||
	fail "ucmatose over IPv6: $(tail -n 5 cli.log srv.log)"
wait $srv || fail "ucmatose server: $(tail -n 5 srv.log)"
t1=$(now_us)
expect_match "$(cat cli.log)" 'test complete' "ucmatose client"
expect_match "$(cat srv.log)" 'test complete' "ucmatose server"
n=$(kmsg_since | grep -cE "xiw1: .*\[$B\]:[0-9]+ -> \[$A\]:$port") || true
expect_eq "$n" 4 "IPv6 connections xiw1 -> xiw0"
log "ucmatose: 4 connections, 2 x 4 x 50 x 4 KiB over IPv6 in $(((t1 - t0) / 1000)) ms"

# NVMe-oF: nvmet-rdma listens on [::] (IPv6 only), the host connects
# to xiw0's address
kmsg_mark nvme
nvmet_target :: xiw-net-ipv6
nvme_host_connect $A xiw-net-ipv6 nr_io_queues=1,queue_size=32
nvme_rw_check 16
expect_eq "$(nvmet_stored_sha 16)" "$NVME_RW_SHA" "sha256 of what the target's null_blk stored"
expect_match "$(kmsg_since)" "\[$A\]:[0-9]+ -> \[$A\]:4420" "nvme-rdma connected over IPv6"
nvme_host_disconnect
nvmet_target_down

wait_for 10 eval "[ -z \"\$(rdma res show cm_id 2>/dev/null)\" ]" ||
	fail "cm_ids left: $(rdma res show cm_id)"
log ok
