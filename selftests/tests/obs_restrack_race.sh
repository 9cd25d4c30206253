#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 300
# description: rdma resource show qp/cq/mr/srq -dd -j as an unprivileged user in a loop while xiw_objects creates and destroys PDs, MRs, CQs, SRQs and QPs beside one object of each kind held alive (XIW_RESTRACK_RACE_S seconds, 20 by default): no kernel report (KFENCE guards one slab allocation per 1 ms sample interval, of any cache, so a dump that reads a freed object is seen only when that object was one of the sampled few: its silence is weak evidence; a NULL or poisoned pointer followed oopses without it), dumps of each kind saw xiw's driver details of a live object of that kind (the held one at least), every dump succeeded
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

need_cmd rdma setpriv
prog=$(need_prog xiw_objects)
xiw_load
xiw_need_provider
dummy_add d0
xiw_link_add xiw0 d0
wait_port_state xiw0 PORT_ACTIVE 5

secs=${XIW_RESTRACK_RACE_S:-20}
# One object of each kind lives through the whole race, so that every
# dump has a live object of its kind to fill xiw's details of however
# short the cycling objects' lives are on a slow host (a CI run once saw
# none of 31 qp dumps catch a cycling QP); the cycling ones are on the
# same restrack lists and race the dumps that walk them.
"$prog" --dev xiw0 --hold $((secs + 20)) >hold.out 2>&1 &
holder=$!
defer eval "kill $holder 2>/dev/null || true"
wait_for 20 grep -qx held hold.out || fail "xiw_objects --hold: $(cat hold.out)"
# The objects: cycles until the time is up (each cycle creates and
# destroys every kind of object the dumps show).
(
	end=$((SECONDS + secs))
	while [ $SECONDS -lt $end ]; do
		"$prog" --dev xiw0 --cycles 20 >/dev/null || exit 1
	done
) &
maker=$!
defer eval "kill $maker 2>/dev/null || true"

# The dumps, as nobody: ib_core holds only a restrack reference on each
# object while xiw fills its driver details.
# Each kind's own detail key: a dump of that kind that shows it ran
# xiw's fill for a live object.
declare -A key=([qp]=drv_sq_depth [cq]=drv_cq_depth [mr]=drv_rights [srq]=drv_srq_depth)
declare -A seen_of=([qp]=0 [cq]=0 [mr]=0 [srq]=0)
dumps=0 seen=0 failed=0
while kill -0 "$maker" 2>/dev/null; do
	for t in qp cq mr srq; do
		if out=$(setpriv --reuid=65534 --regid=65534 --clear-groups \
			rdma -j -dd resource show "$t" 2>&1); then
			dumps=$((dumps + 1))
			if [[ $out == *"${key[$t]}"* ]]; then
				seen=$((seen + 1))
				seen_of[$t]=$((seen_of[$t] + 1))
			fi
		else
			failed=$((failed + 1))
			log "dump of $t failed: $out"
		fi
	done
done
rc=0
wait "$maker" || rc=$?
kill -TERM "$holder" 2>/dev/null || true
wait "$holder" 2>/dev/null || true
log "$dumps dumps ($seen with xiw's details of a live object: qp ${seen_of[qp]}, cq ${seen_of[cq]}, mr ${seen_of[mr]}, srq ${seen_of[srq]}), $failed failed, over ${secs}s of object cycles"
[ "$rc" = 0 ] || fail "xiw_objects failed (exit $rc)"
[ "$failed" = 0 ] || fail "$failed dumps failed"
for t in qp cq mr srq; do
	[ "${seen_of[$t]}" -gt 0 ] || fail "no $t dump saw a live xiw $t's driver details (${key[$t]})"
done
