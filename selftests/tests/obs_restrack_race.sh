#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 300
# description: rdma resource show qp/cq/mr/srq -dd -j as an unprivileged user in a loop while xiw_objects creates and destroys PDs, MRs, CQs, SRQs and QPs (XIW_RESTRACK_RACE_S seconds, 45 by default; KFENCE samples every allocation): no kernel report, the dumps saw xiw's driver details of live objects, every dump succeeded
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

need_cmd rdma setpriv
prog=$(need_prog xiw_objects)
xiw_load
xiw_need_provider
dummy_add d0
xiw_link_add xiw0 d0
wait_port_state xiw0 PORT_ACTIVE 5

secs=${XIW_RESTRACK_RACE_S:-45}
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
dumps=0 seen=0 failed=0
while kill -0 "$maker" 2>/dev/null; do
	for t in qp cq mr srq; do
		if out=$(setpriv --reuid=65534 --regid=65534 --clear-groups \
			rdma -j -dd resource show "$t" 2>&1); then
			dumps=$((dumps + 1))
			case $out in *cq_depth*|*sq_depth*|*srq_depth*|*'"rights"'*)
				seen=$((seen + 1)) ;; esac
		else
			failed=$((failed + 1))
			log "dump of $t failed: $out"
		fi
	done
done
rc=0
wait "$maker" || rc=$?
log "$dumps dumps ($seen with xiw's details of a live object), $failed failed, over ${secs}s of object cycles"
[ "$rc" = 0 ] || fail "xiw_objects failed (exit $rc)"
[ "$failed" = 0 ] || fail "$failed dumps failed"
[ "$seen" -gt 0 ] || fail "no dump saw a live xiw object's driver details"
