#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 2vm
# timeout: 450
# description: rdma-core, perftest and libfabric applications between two VMs on xiw, server on a then on b: rping -v -V (every ping's data checked on both ends), ucmatose, rdma_server/rdma_client, perftest -R send/write/read bandwidth at 2 B (server on a) and 1 MiB (server on b) and latency at 2 B (a) and 64 KiB (b) (every row checked), fi_pingpong over libfabric's verbs provider (MSG endpoints, every size, data checked)
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$XIW_SELFTESTS/perftest_lib.sh"

need_cmd rping ucmatose rdma_server rdma_client fi_pingpong ib_send_bw \
	ib_write_bw ib_read_bw ib_send_lat ib_write_lat ib_read_lat ss
xiw_load
xiw_need_provider
xiw_link_add xiw0 "$XIW_NETDEV"
wait_port_state xiw0 PORT_ACTIVE 5

# pair NAME SERVER_ROLE "SERVER CMD" "CLIENT CMD": one server/client run
# between the VMs (both VMs call it alike); the commands see $LOCAL (the
# server's address), $PEER (the client's peer) and $PORT. Output:
# NAME-srv.log/.err (stdout/stderr: kept apart, rping's lines would mix)
# on the server's VM, NAME-cli.log/.err on the client's; the caller
# checks the ones it has ($LOG, $ERR).
port=7900
pair() {
	local name=$1 srole=$2 scmd=$3 ccmd=$4 srv
	port=$((port + 1))
	if [ "$XIW_ROLE" = "$srole" ]; then
		LOG=$name-srv.log ERR=$name-srv.err
		LOCAL=$XIW_LOCAL_IP PORT=$port eval "run_timeout 100 $scmd" \
			>"$LOG" 2>"$ERR" &
		srv=$!
		wait_for 10 eval "ss -Htln | grep -q ':$port '" ||
			fail "$name: server not listening: $(cat "$LOG" "$ERR")"
		xiw_barrier "$name-listen" 30
		wait "$srv" || { [[ $scmd == rping* ]] && rping_race "$LOG" "$ERR"; } || {
			sed 's/^/#   /' "$LOG" "$ERR" | cut -c 1-200
			fail "$name: server failed"
		}
	else
		LOG=$name-cli.log ERR=$name-cli.err
		xiw_barrier "$name-listen" 30
		PEER=$XIW_PEER_IP PORT=$port eval "run_timeout 100 $ccmd" \
			>"$LOG" 2>"$ERR" || { [[ $ccmd == rping* ]] && rping_race "$LOG" "$ERR"; } || {
			sed 's/^/#   /' "$LOG" "$ERR" | cut -c 1-200
			fail "$name: client failed"
		}
	fi
	xiw_barrier "$name-end" 100
}

# rping_expect SIZE COUNT: what rping -v prints for ping 0 .. COUNT-1 of
# SIZE bytes: "rdma-ping-N: ", then the letters 'A' (65) .. 'z' (122) round
# and round from 65 + N % 58, SIZE - 1 bytes in all (rping's client fills
# its buffer so; the server reads it with RDMA Read and prints it, writes
# it back with RDMA Write, the client compares (-V) and prints it).
rping_expect() {
	awk -v size="$1" -v count="$2" 'BEGIN {
		for (c = 65; c <= 122; c++)
			abc = abc sprintf("%c", c)
		all = abc
		while (length(all) < size + 58)
			all = all all
		for (p = 0; p < count; p++) {
			s = "rdma-ping-" p ": "
			print s substr(all, p % 58 + 1, size - 1 - length(s))
		}
	}'
}

# rping_pair SERVER_ROLE SIZE COUNT: rping -v -V, every printed ping
# compared with rping_expect (client: "ping data: ", server: "server ping
# data: ").
rping_pair() {
	local srole=$1 size=$2 count=$3 name=rping-$1-$2 pre bad
	pair "$name" "$srole" "rping -s -v -V -a \$LOCAL -p \$PORT -C $count -S $size" \
		"rping -c -v -V -a \$PEER -p \$PORT -C $count -S $size"
	pre='ping data: '
	[ "$XIW_ROLE" != "$srole" ] || pre="server $pre"
	rping_expect "$size" "$count" >"$name.want"
	grep "^$pre" "$LOG" | cut -c $((${#pre} + 1))- >"$name.got" || true
	if ! cmp -s "$name.want" "$name.got"; then
		bad=$(diff "$name.want" "$name.got" | head -n 4 | cut -c 1-120) || true
		cp "$name.want" "$name.got" "$LOG" "$ERR" "$XIW_TEST_OUT/" || true
		fail "$name ($LOG): $(wc -l <"$name.got") of $count pings, data not as sent: $bad"
	fi
	expect_nomatch "$(cat "$ERR")" 'mismatch|error|fail' "$name: $ERR"
	log "$name: $count pings of $size bytes, every one as sent ($LOG)"
}

# fi_pingpong over the verbs provider, MSG endpoints, every size of its
# -S all (0, 1, 2, 3, 4, 6, 8, ... 4m, 6m: 47 rows), data checked (-c)
FI_ITERS=3
fi_rows() {
	local rows
	rows=$(awk -v n="$FI_ITERS" '$2 == n && $3 == "=" n && $7 > 0 { print $1 }' "$LOG")
	[ "$(echo $rows)" = "$(echo $FI_SIZES)" ] || {
		sed 's/^/#   /' "$LOG"
		fail "fi_pingpong: rows '$(echo $rows)', expected '$(echo $FI_SIZES)'"
	}
}
FI_SIZES="0 1 2 3 4 6 8 12 16 24 32 48 64 96 128 192 256 384 512 768 1k 1.5k 2k 3k 4k 6k 8k 12k 16k 24k 32k 48k 64k 96k 128k 192k 256k 384k 512k 768k 1m 1.5m 2m 3m 4m 6m"

for srole in a b; do
	rping_pair $srole 64 50
	rping_pair $srole 4096 20
	rping_pair $srole 65535 8

	# ucmatose: 4 connections, 50 messages of 1000 bytes each way
	pair "ucmatose-$srole" $srole \
		'ucmatose -b $LOCAL -p $PORT -c 4 -C 50 -S 1000' \
		'ucmatose -s $PEER -p $PORT -c 4 -C 50 -S 1000'
	expect_match "$(cat "$LOG" "$ERR")" 'data transfers complete' "ucmatose $LOG"
	expect_match "$(cat "$LOG" "$ERR")" 'return status 0' "ucmatose $LOG"
	log "ucmatose, server on $srole: 4 connections, 50 x 1000 bytes each way: complete, status 0 ($LOG)"

	# rdma_server / rdma_client: librdmacm's rdma_* verbs helpers
	pair "rdmacm-$srole" $srole 'rdma_server -s $LOCAL -p $PORT' \
		'rdma_client -s $PEER -p $PORT'
	expect_match "$(cat "$LOG" "$ERR")" 'rdma_(server|client): end 0' "$LOG"
	log "rdma_server/rdma_client, server on $srole: end 0 ($LOG)"

	pair "fi_pingpong-$srole" $srole \
		"fi_pingpong -p verbs -e msg -B \$PORT -I $FI_ITERS -S all -c" \
		"fi_pingpong -p verbs -e msg -P \$PORT -I $FI_ITERS -S all -c \$PEER"
	fi_rows
	log "fi_pingpong, server on $srole ($LOG): $(awk -v n="$FI_ITERS" '$2 == n && ($1 == "1" || $1 == "4k" || $1 == "64k" || $1 == "4m") { printf "%s: %s MB/s %s us/xfer; ", $1, $6, $7 }' "$LOG")"

	# perftest with -R: every report row checked (perftest_check)
	# Two sizes per test: the smallest with the server on a, one of many
	# FPDUs (1 MiB for bandwidth, 64 KiB for latency) with the server on
	# b, so every tool serves on both VMs (the stacks are the same: both
	# roles of every size would only repeat it); make check-long sweeps
	# every size in one VM, make bench measures.
	for t in ib_send_bw ib_write_bw ib_read_bw ib_send_lat ib_write_lat ib_read_lat; do
		case $srole:$t in
		a:*) s=2 n=100 ;;
		b:*_bw) s=1048576 n=10 ;;
		b:*) s=65536 n=10 ;;
		esac
		perftest_2vm_rows $srole xiw0 $t -s $s -n $n
		[ -z "$PERFTEST_ROWS" ] ||
			log "$t -s $s -n $n, server on $srole: $PERFTEST_ROWS"
	done
done

wait_for 10 eval "[ -z \"\$(rdma res show cm_id 2>/dev/null)\" ]" ||
	fail "cm_ids left: $(rdma res show cm_id)"
log ok
