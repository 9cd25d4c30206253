#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 2vm
# timeout: 300
# description: interop with upstream siw across two VMs (xiw on a, siw on b), both roles: MPA revision 1 and 2, CRC by both sides' policies (incl. siw's strict reject), p2p RTR, private data both ways, reject with private data, each agreement proven by rping data both ways (-V); operations siw lacks (atomics, Immediate Data, Flush, Atomic Write, Verify) fail cleanly with the Terminate siw must send
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
#
# Every case of the matrix below runs the same way: one VM listens with
# xiw_cm_tool, the other connects to it; a (xiw) checks its side and its
# kernel log ("connected:" / "accepted: rev R crc C ..."), b (siw) checks
# its side; then an rping with the same parameters moves verified data both
# ways. siw's MPA policy is varied through the module parameters that
# selftests/build-siw.sh gives the siw it builds.

T=$(need_prog xiw_cm_tool)
U=$(need_prog xiw_unsup)
TG=$(need_prog xiw_target)
need_cmd python3 rping ss
xiw_need_provider
siw_2vm_up
params=$IW_PARAMS
if [ "$XIW_ROLE" = a ]; then
	xiw_dyndbg
fi

# cm_case NAME DIR XREV XCRC XP2P SREV SCRCREQ SSTRICT SP2P EXPECT
#   DIR xs: xiw (a) connects to siw (b); sx: siw connects to xiw.
#   X*: xiw's mpa_rev, mpa_crc (0 off unless asked, 1 ask, 2 require),
#   mpa_p2p; S*: siw's mpa_version, mpa_crc_required, mpa_crc_strict,
#   peer_to_peer. EXPECT: "rev R crc C rtr T" as xiw logs it (T: 0 none,
#   1 Write, 2 Read, "any"), or "reject".
port=7600
cm_case() {
	local name=$1 dir=$2 xrev=$3 xcrc=$4 xp2p=$5 srev=$6 sreq=$7 \
		sstrict=$8 sp2p=$9 expect=${10} srv server_role rv=0
	port=$((port + 1))
	if [ "$XIW_ROLE" = a ]; then
		echo "$xrev" >"$params/mpa_rev"
		echo "$xcrc" >"$params/mpa_crc"
		echo "$xp2p" >"$params/mpa_p2p"
		kmsg_mark "$name"
	else
		echo "$srev" >"$params/mpa_version"
		echo "$sreq" >"$params/mpa_crc_required"
		echo "$sstrict" >"$params/mpa_crc_strict"
		echo "$sp2p" >"$params/peer_to_peer"
	fi
	server_role=b
	[ "$dir" = sx ] && server_role=a
	if [ "$XIW_ROLE" = $server_role ]; then
		"$T" server "$XIW_LOCAL_IP" $port accept 1 >srv.log 2>&1 &
		srv=$!
		wait_for 10 grep -q listening srv.log || fail "$name: no listener: $(cat srv.log)"
		xiw_barrier "$name-listen" 30
		xiw_barrier "$name-client-done" 60
		if [ "$expect" = reject ]; then
			# The MPA exchange failed. A responder refused by the
			# initiator's policy after its Reply (no RTR asked)
			# saw ESTABLISHED: then it must see the disconnect.
			# Otherwise its ULP never heard of the request.
			if grep -q ESTABLISHED srv.log; then
				wait_for 10 grep -q DISCONNECTED srv.log ||
					fail "$name: server side left connected: $(cat srv.log)"
			fi
			kill "$srv" 2>/dev/null || true
			wait "$srv" 2>/dev/null || true
		else
			run_timeout 20 tail --pid="$srv" -f /dev/null ||
				fail "$name: server did not end: $(cat srv.log)"
			wait "$srv" || fail "$name: server failed: $(cat srv.log)"
			expect_match "$(cat srv.log)" 'CONNECT_REQUEST status=0 pd="hello xiw"' "$name: request private data"
			expect_match "$(cat srv.log)" 'DISCONNECTED' "$name: disconnect"
		fi
		log "$name server: $(tr '\n' '|' <srv.log)"
	else
		xiw_barrier "$name-listen" 30
		run_timeout 30 "$T" client "$XIW_PEER_IP" $port "$XIW_LOCAL_IP" >cli.log 2>&1 || rv=$?
		xiw_barrier "$name-client-done" 60
		log "$name client (rv $rv): $(tr '\n' '|' <cli.log)"
		if [ "$expect" = reject ]; then
			expect_nomatch "$(cat cli.log)" 'ESTABLISHED' "$name: client established"
			expect_match "$(cat cli.log)" 'REJECTED|CONNECT_ERROR|UNREACHABLE' "$name: client told"
		else
			[ $rv = 0 ] || fail "$name: client failed ($rv): $(cat cli.log)"
			expect_match "$(cat cli.log)" 'ESTABLISHED status=0 pd="welcome"' "$name: accept private data"
		fi
	fi
	if [ "$XIW_ROLE" = a ]; then
		local k
		k=$(kmsg_since | grep -E 'connected: rev|accepted: rev' || true)
		log "$name xiw: ${k:-(no connection)}"
		if [ "$expect" = reject ]; then
			expect_nomatch "$k" "connected: rev" "$name: xiw initiator connected"
		elif [ "${expect##* }" = any ]; then
			expect_match "$k" "${expect% any}" "$name: xiw's view"
		else
			expect_match "$k" "$expect\$" "$name: xiw's view"
		fi
	fi
	xiw_barrier "$name-end" 30
	# xiw's log line is its own account. Agreement is proven with data
	# crossing a connection made under the same parameters, both ways:
	# rping's RDMA Read (siw's or xiw's data to the server) and RDMA
	# Write (back to the client), checked by the client (-V). A side that
	# expects CRCs the other does not send, or another MPA revision's
	# framing, ends that in a Terminate. With MPA revision 1 siw gives
	# its QP no ORD (no RFC 6581 block: it takes IRD/ORD 0/0), so it
	# cannot be the rping server, which issues the RDMA Reads: then
	# the server is xiw, siw the client (siw connects to xiw).
	local dsrv=$server_role
	[ "$xrev" != 1 ] && [ "$srev" != 1 ] || dsrv=a
	[ "$expect" = reject ] || rping_2vm "$name-data" "$dsrv" 1000 3
}

# name          dir xrev xcrc xp2p  srev sreq sstrict sp2p  expect
cm_case v2       xs 2 0 1  2 0 0 0  "rev 2 crc 0 ird [0-9]+ ord [0-9]+ rtr any"
cm_case v2r      sx 2 0 1  2 0 0 0  "rev 2 crc 0 ird 2 ord 2 rtr 0"
cm_case v2p2p    sx 2 0 1  2 0 0 1  "rev 2 crc 0 ird 2 ord 2 rtr any"
cm_case nop2p    xs 2 0 0  2 0 0 0  "rev 2 crc 0 ird [0-9]+ ord [0-9]+ rtr 0"
cm_case v1       xs 1 0 1  2 0 0 0  "rev 1 crc 0 any"
cm_case v1r      sx 2 0 1  1 0 0 0  "rev 1 crc 0 any"
cm_case crcask   xs 2 1 1  2 0 0 0  "rev 2 crc 1 any"
cm_case crcaskr  sx 2 1 1  2 0 0 0  "rev 2 crc 1 any"
cm_case crcsiw   xs 2 0 1  2 1 0 0  "rev 2 crc 0 any"	# siw answers C only in kind
cm_case crcsiwr  sx 2 0 1  2 1 0 0  "rev 2 crc 1 any"
cm_case crcreq   xs 2 2 1  2 0 0 0  "rev 2 crc 1 any"
cm_case crcreqr  sx 2 2 1  2 0 0 0  "rev 2 crc 1 any"
cm_case crcv1    xs 1 1 1  2 1 0 0  "rev 1 crc 1 any"
cm_case strict   xs 2 0 1  2 0 1 0  "rev 2 crc 0 any"
cm_case strictr  sx 2 0 1  2 0 1 0  "rev 2 crc 0 any"
cm_case strictx  xs 2 1 1  2 0 1 0  reject
cm_case strictxr sx 2 1 1  2 0 1 0  reject

# Both sides back to their defaults.
if [ "$XIW_ROLE" = a ]; then
	echo 2 >"$params/mpa_rev"
	echo 0 >"$params/mpa_crc"
	echo 1 >"$params/mpa_p2p"
else
	echo 2 >"$params/mpa_version"
	echo 0 >"$params/mpa_crc_required"
	echo 0 >"$params/mpa_crc_strict"
	echo 0 >"$params/peer_to_peer"
fi

# reject with private data, both ways
for dir in xs sx; do
	port=$((port + 1))
	server_role=b
	[ $dir = sx ] && server_role=a
	if [ "$XIW_ROLE" = $server_role ]; then
		"$T" server "$XIW_LOCAL_IP" $port reject 1 >srv.log 2>&1 &
		srv=$!
		wait_for 10 grep -q listening srv.log || fail "no listener"
		xiw_barrier "rej-$dir" 30
		run_timeout 20 tail --pid="$srv" -f /dev/null || fail "reject server did not end"
		wait "$srv" || fail "reject server: $(cat srv.log)"
	else
		xiw_barrier "rej-$dir" 30
		run_timeout 30 "$T" client "$XIW_PEER_IP" $port "$XIW_LOCAL_IP" >cli.log 2>&1 ||
			fail "reject client: $(cat cli.log)"
		expect_match "$(cat cli.log)" 'REJECTED status=[0-9-]+ pd="no thanks"' "reject private data ($dir)"
	fi
	xiw_barrier "rej-$dir-end" 30
done

# Operations siw does not have: xiw (a) posts them to an xiw_target on siw
# (b). siw must terminate (RDMAP, Remote Operation Error, invalid opcode),
# xiw must complete the WR in error, raise the QP's fatal event and end the
# connection; siw's target sees the disconnect; nothing hangs. A control
# RDMA Write connection proves the target still serves afterwards: its data
# must be in the target's region.
if [ "$XIW_ROLE" = b ]; then
	"$TG" --bind "$XIW_LOCAL_IP" --port 7690 --conns 8 --timeout 200 >tgt.log 2>&1 &
	tgt=$!
	wait_for 10 grep -q LISTENING tgt.log || fail "xiw_target: $(cat tgt.log)"
	xiw_barrier unsup-listen 30
	xiw_barrier unsup-done 200
	run_timeout 30 tail --pid="$tgt" -f /dev/null || fail "xiw_target did not end: $(tail -n 5 tgt.log)"
	wait "$tgt" || fail "xiw_target: $(tail -n 20 tgt.log)"
	expect_eq "$(grep -c 'DISCONNECTED' tgt.log)" 8 "target disconnects"
	log "target: $(grep -E 'QPSTATE|MEM' tgt.log | tr '\n' '|')"
	# The control connection (the 8th, id 8) wrote xiw_unsup's 64-byte
	# pattern (u64 0x5858585858585858 + i, i = 0..7, little-endian) twice
	# at the start of its zeroed 4 KiB region: its FNV-1a must be that.
	want=$(python3 -c '
import struct
b = b"".join(struct.pack("<Q", 0x5858585858585858 + i) for i in range(8)) + bytes(4096 - 64)
h = 0xcbf29ce484222325
for c in b:
    h = ((h ^ c) * 0x100000001b3) & 0xffffffffffffffff
print("%016x" % h)')
	expect_match "$(cat tgt.log)" "^MEM id=8 rw_fnv=$want ro_intact=1\$" \
		"the control RDMA Write's data in siw's target region"
else
	xiw_barrier unsup-listen 30
	for op in fadd cswap write-imm imm flush awrite verify write; do
		kmsg_mark "$op"
		run_timeout 40 "$U" "$XIW_PEER_IP" 7690 "$XIW_LOCAL_IP" $op >u.log 2>&1 ||
			fail "$op towards siw: $(cat u.log)"
		log "$op: $(tr '\n' '|' <u.log)"
		[ $op = write ] && continue
		# RDMAP / Remote Operation Error / Invalid RDMAP OpCode, in
		# siw's encoding: its little-endian bitfield puts Layer in the
		# low nibble of the first byte, so RFC 5040 readers (xiw,
		# Wireshark) see Layer 2 (LLP), EType 0 (Documentation/interop.md).
		# Atomic Write (RDMAP control 0xC0): siw sees opcode 0 (Write)
		# with RDMAP version 3 and refuses the version (code 0x5).
		code=0x6
		[ $op = awrite ] && code=0x5
		expect_match "$(kmsg_since)" "Terminate received: layer 2 type 0 code $code\$" "$op: siw's Terminate (RDMAP, remote operation, invalid opcode or version)"
		case $op in
		fadd|cswap|flush|awrite|verify) expect_match "$(cat u.log)" 'WC wr_id=2 op=- status=' "$op: failed completion" ;;
		esac
		expect_match "$(cat u.log)" 'ASYNC local work queue catastrophic error' "$op: fatal QP event"
	done
	xiw_barrier unsup-done 200
fi

wait_for 10 eval "[ -z \"\$(rdma res show cm_id 2>/dev/null)\" ]" ||
	fail "cm_ids left: $(rdma res show cm_id)"
wait_for 10 eval "[ -z \"\$(rdma res show qp 2>/dev/null | grep -v 'qpn 1 ')\" ]" ||
	fail "QPs left: $(rdma res show qp)"
log ok
