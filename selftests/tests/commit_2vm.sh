#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 2vm
# timeout: 150
# description: RDMA Flush, Atomic Write and Verify between two VMs (xiw on both): xiw_unsup on a posts each after an RDMA Write to an xiw_target on b and must succeed; b's region holds exactly the Writes and the Atomic Write's 8 bytes; the Verify's crc32c equals one computed here over the Written bytes; then the other way round
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

U=$(need_prog xiw_unsup)
TG=$(need_prog xiw_target)
xiw_load
xiw_need_provider
xiw_link_add xiw0 "$XIW_NETDEV"
wait_port_state xiw0 PORT_ACTIVE 5

ops=(flush awrite verify)

# fnv1a of the 4 KiB region after xiw_unsup's Writes (64 bytes: u64
# 0x5858585858585858 + i, little endian, twice) and @1 (awrite or not)
want_fnv() {
	python3 -c '
import struct, sys
b = bytearray(b"".join(struct.pack("<Q", 0x5858585858585858 + i) for i in range(8)) + bytes(4096 - 64))
if sys.argv[1] == "awrite":
    b[64:72] = struct.pack("<Q", 0x0123456789abcdef)
h = 0xcbf29ce484222325
for c in b:
    h = ((h ^ c) * 0x100000001b3) & 0xffffffffffffffff
print("%016x" % h)' "$1"
}

# crc32c (Castagnoli) of those 64 bytes, as the digest's bytes (LE)
want_crc() {
	python3 -c '
import struct
b = b"".join(struct.pack("<Q", 0x5858585858585858 + i) for i in range(8))
c = 0xffffffff
for x in b:
    c ^= x
    for _ in range(8):
        c = (c >> 1) ^ 0x82f63b78 if c & 1 else c >> 1
print(struct.pack("<I", c ^ 0xffffffff).hex())'
}

target() {
	"$TG" --bind "$XIW_LOCAL_IP" --port $1 --conns ${#ops[@]} --timeout 120 >tgt.log 2>&1 &
	tgt=$!
	defer eval "kill $tgt 2>/dev/null || true"
	wait_for 10 grep -q LISTENING tgt.log || fail "xiw_target: $(cat tgt.log)"
	xiw_barrier "listen-$1" 30
	xiw_barrier "done-$1" 120
	run_timeout 30 tail --pid="$tgt" -f /dev/null || fail "xiw_target did not end: $(tail -n 5 tgt.log)"
	wait "$tgt" || fail "xiw_target: $(tail -n 20 tgt.log)"
	expect_eq "$(grep -c 'DISCONNECTED' tgt.log)" ${#ops[@]} "target disconnects"
	expect_noline_status
	local i=1 op
	for op in "${ops[@]}"; do
		expect_match "$(cat tgt.log)" "^MEM id=$i rw_fnv=$(want_fnv $op) ro_intact=1\$" \
			"$op: the target's region holds exactly what was sent"
		i=$((i + 1))
	done
	log "target $1: $(grep -E '^MEM' tgt.log | tr '\n' '|')"
}

# no error completion (receives flushed at the disconnect, status 5,
# aside) and no asynchronous event at the target
expect_noline_status() {
	local bad='^ASYNC |status=([1-46-9]|[0-9]{2})'

	if grep -qE "$bad" tgt.log; then
		fail "target saw an error: $(grep -E "$bad" tgt.log | head -3)"
	fi
}

initiator() {
	xiw_barrier "listen-$1" 30
	local op
	for op in "${ops[@]}"; do
		run_timeout 40 "$U" "$XIW_PEER_IP" $1 "$XIW_LOCAL_IP" $op --expect ok >u.log 2>&1 ||
			fail "$op towards xiw: $(tr '\n' '|' <u.log)"
		log "$op: $(tr '\n' '|' <u.log)"
		expect_match "$(cat u.log)" '^ok$' "$op: xiw_unsup ok"
		[ $op = verify ] &&
			expect_match "$(cat u.log)" "^DIGEST $(want_crc)\$" "verify: the target's crc32c"
	done
	xiw_barrier "done-$1" 120
}

if [ "$XIW_ROLE" = b ]; then
	target 7700
	initiator 7701
else
	initiator 7700
	target 7701
fi
log ok
