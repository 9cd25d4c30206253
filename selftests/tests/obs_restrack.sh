#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 240
# description: rdma resource show qp/cq/mr/pd -dd -j on a live connection (xiw_target and an rdma_cm client over one device): xiw's driver details have the right values - QP state RTS, MPA revision 2, CRC off and then on (mpa_crc), IRD/ORD as asked, the TCP 4-tuple mirrored between the two QPs and as ss shows it, SQ/RQ depths and the 16 receives the target posted; CQ depth and use; MR rights, Flush rights, length, STag state, digest; the PD that holds QP and MRs; nothing of xiw0 is left once the processes end
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

need_cmd rdma ss jq
T=$(need_prog xiw_target)
C=$(need_prog xiw_cm_tool)
xiw_loopback
crc0=$(cat /sys/module/xiw/parameters/mpa_crc)
defer eval "echo $crc0 >/sys/module/xiw/parameters/mpa_crc"

# res TYPE: `rdma resource show TYPE` of xiw0 with driver details, as JSON
# (iproute2 6.1 filters cq/mr/pd by device only through jq)
res() { rdma -j -dd resource show "$1" | jq -c '[.[] | select(.ifname == "xiw0")]'; }

# object FILE COMM: the one object of process COMM in FILE into obj
# (KEY -> value; "!count" -> N when FILE has N != 1 such objects), with
# one jq (a jq start costs half a second under TCG; one per key took 36 s
# of this test)
declare -A obj
object() {
	local line
	obj=()
	while IFS= read -r line; do
		obj[${line%%=*}]=${line#*=}
	done < <(jq -r --arg c "$2" '[.[] | select(.comm == $c)] |
		if length == 1 then .[0] | to_entries[] | "\(.key)=\(.value)"
		else "!count=\(length)" end' "$1")
}

# value KEY: KEY of the object loaded by object() ("count=N" if FILE did
# not have exactly one, "null" if it has no KEY)
value() {
	if [ -n "${obj[!count]:-}" ]; then
		echo "count=${obj[!count]}"
	else
		echo "${obj[$1]-null}"
	fi
}

# field FILE COMM KEY: KEY of the one object of process COMM in FILE
field() {
	object "$1" "$2"
	value "$3"
}

# expect_fields FILE COMM KEY=VALUE...
expect_fields() {
	local f=$1 c=$2 kv
	shift 2
	object "$f" "$c"
	for kv in "$@"; do
		expect_eq "$(value "${kv%%=*}")" "${kv#*=}" "$c ${f%.json} ${kv%%=*}"
	done
}

round() {
	local crc=$1 port=$2 tpid cpid tsrc tdst csrc cdst established pdn
	echo "$crc" >/sys/module/xiw/parameters/mpa_crc
	"$T" --bind 192.0.2.1 --port "$port" --conns 1 --timeout 100 >tgt.log 2>&1 &
	tpid=$!
	defer eval "kill $tpid 2>/dev/null || true"
	wait_for 20 grep -q LISTENING tgt.log || fail "xiw_target: $(cat tgt.log)"
	# the client waits for the target's disconnect: the connection stays
	"$C" client 192.0.2.1 "$port" 192.0.2.1 wait >cli.log 2>&1 &
	cpid=$!
	defer eval "kill $cpid 2>/dev/null || true"
	wait_for 20 grep -q ESTABLISHED cli.log || fail "client: $(cat cli.log)"
	wait_for 20 grep -q CONNECTED tgt.log || fail "target: $(cat tgt.log)"

	res qp >qp.json
	res cq >cq.json
	res mr >mr.json
	res pd >pd.json
	established=$(ss -Htn state established "( sport = :$port or dport = :$port )")
	log "mpa_crc=$crc: $(jq -c '.[] | {comm, lqpn, state, drv_src, drv_dst, drv_crc, drv_ird, drv_ord}' qp.json)"
	expect_eq "$(jq length qp.json)" 2 "QPs on xiw0"

	local c=$([ "$crc" = 0 ] && echo off || echo on)
	expect_fields qp.json xiw_target state=RTS drv_xiw_state=rts \
		drv_mpa_rev=2 drv_crc=$c drv_ird=4 drv_ord=4 \
		drv_sq_depth=16 drv_sq_posted=0 drv_rq_depth=16 drv_rq_posted=16 \
		drv_sq_inflight=0 drv_orq_used=0 drv_irq_used=0 drv_dp=ok
	# the client asked for IRD 4 / ORD 2 and a 4-deep SQ and RQ
	expect_fields qp.json xiw_cm_tool state=RTS drv_xiw_state=rts \
		drv_mpa_rev=2 drv_crc=$c drv_ird=4 drv_ord=2 \
		drv_sq_depth=4 drv_sq_posted=0 drv_rq_depth=4 drv_rq_posted=0 \
		drv_dp=ok

	# the 4-tuple: mirrored between the two ends, and TCP's own
	tsrc=$(field qp.json xiw_target drv_src)
	tdst=$(field qp.json xiw_target drv_dst)
	csrc=$(field qp.json xiw_cm_tool drv_src)
	cdst=$(field qp.json xiw_cm_tool drv_dst)
	expect_eq "$tsrc" "192.0.2.1:$port" "target's source address"
	expect_eq "$cdst" "$tsrc" "client's destination = target's source"
	expect_eq "$csrc" "$tdst" "client's source = target's destination"
	expect_match "$established" "$tsrc +$tdst" "ss has the target's 4-tuple"
	expect_match "$established" "$csrc +$cdst" "ss has the client's 4-tuple"

	# CQs: the target's one (64 entries), the client's send and recv CQs
	expect_fields cq.json xiw_target cqe=64 drv_cq_depth=64 drv_cq_used=0 \
		drv_overflow=0 drv_owner=user
	expect_eq "$(jq '[.[] | select(.comm == "xiw_cm_tool" and .drv_cq_depth == 4 and .drv_cq_used == 0)] | length' cq.json)" \
		2 "client CQs"

	# MRs of the target: rw (4 KiB, global Flush), ro (4 KiB), receives
	expect_eq "$(jq -c '[.[] | select(.comm == "xiw_target") |
		[.mrlen, .drv_type, .drv_rights, .drv_atomic, .drv_flush_global,
		 .drv_persistent, .drv_stag, .drv_digest]] | sort' mr.json)" \
		'[[4096,"user","r","no","no","no","valid","crc32c"],[4096,"user","rw","no","yes","no","valid","crc32c"],[65536,"user","local","no","no","no","valid","crc32c"]]' \
		"target MRs"

	# PD: the one of the target's QP holds the QP and the three MRs
	pdn=$(field qp.json xiw_target pdn)
	expect_eq "$(jq --argjson p "$pdn" '.[] | select(.pdn == $p) | .users' pd.json)" 4 "users of the target's PD"
	expect_eq "$(jq --argjson p "$pdn" '[.[] | select(.pdn == $p)] | .[0].comm' pd.json)" '"xiw_target"' "owner of PD $pdn"

	kill $tpid $cpid
	wait $tpid $cpid || true
	for t in qp cq mr pd; do
		wait_for 10 eval "[ \"\$(res $t)\" = '[]' ]" || fail "$t left on xiw0: $(res $t)"
	done
}

round 0 7481
round 2 7482
