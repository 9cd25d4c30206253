#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# pmem: 512M
# boots: 2
# timeout: 240
# description: a remote commit log on emulated persistent memory (device-dax MR): xiw1 commits N records to xiw0 (Write + Flush(persistent) + Atomic Write of the tail + Flush), the VM's power is cut (sysrq b) while the target still holds its MR, boots again on the same NVDIMM file, and every committed record and the tail are there; a kprobe on arch_wb_cache_pmem shows the persistent Flushes wrote back exactly the committed ranges, and global Flushes nothing
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

CL=$(need_prog xiw_commitlog)
state=$XIW_TEST_STATE/params
# wb_probe_on: count what the kernel's write-back routine is given
# (arch_wb_cache_pmem(addr, size), exported, called by xiw_commit.c for a
# persistent Flush): a kprobe event with its size argument, recorded in a
# tracefs instance of our own. wb_bytes: the sizes recorded so far.
tr=/sys/kernel/tracing
wb_probe_on() {
	if [ ! -d $tr/events ]; then
		mount -t tracefs tracefs $tr || fail "no tracefs"
		defer umount $tr
	fi
	echo 'p:xiwwb/wb arch_wb_cache_pmem addr=%di:x64 size=%si:u64' >>$tr/kprobe_events ||
		fail "kprobe on arch_wb_cache_pmem: $(cat $tr/error_log 2>/dev/null | tail -n 3)"
	defer eval "echo '-:xiwwb/wb' >>$tr/kprobe_events"
	wbi=$tr/instances/xiw_pmem_wb
	mkdir $wbi
	defer rmdir $wbi
	echo 4096 >$wbi/buffer_size_kb
	echo 1 >$wbi/events/xiwwb/wb/enable
	defer eval "echo 0 >$wbi/events/xiwwb/wb/enable"
}
wb_bytes() {
	awk '/ wb: / { for (i = 1; i <= NF; i++) if ($i ~ /^size=/) { sub("size=", "", $i); t += $i; n++ } }
	     END { printf "%d %d\n", t, n }' $wbi/trace
}
wb_clear() { : >$wbi/trace; }
# wb_ranges N SIZE: where the write-backs went. The log (xiw_commitlog's
# layout) holds the 8-byte tail at its start and record i (a 32-byte
# header and SIZE bytes) at 4096 + i * slot, slot = 32 + SIZE rounded up
# to 64. Each commit must write back its record's range once and the
# tail once: N calls of 8 bytes at one address T, and for every i one
# call of 32 + SIZE bytes at T + 4096 + i * slot (device-dax memory is
# linear in the kernel's map, a record never crosses a page). Prints
# "ok" or the first range that differs.
wb_ranges() {
	local n=$1 size=$2 slot t='' a z l i k
	local -A got=()
	slot=$(( (32 + size + 63) & ~63 ))
	while read -r l; do
		[[ $l =~ addr=0x([0-9a-f]+)\ size=([0-9]+) ]] || continue
		a=$((16#${BASH_REMATCH[1]})) z=${BASH_REMATCH[2]}
		[ -n "$t" ] || [ "$z" != 8 ] || t=$a
		got["$a $z"]=$(( ${got["$a $z"]:-0} + 1 ))
	done < <(grep ' wb: ' $wbi/trace)
	[ -n "$t" ] || { echo "no 8-byte write-back (the tail)"; return; }
	[ "${got["$t 8"]:-0}" = "$n" ] ||
		{ echo "the tail written back ${got["$t 8"]:-0} times, not $n"; return; }
	unset 'got[$t 8]'
	for ((i = 0; i < n; i++)); do
		k="$((t + 4096 + i * slot)) $((32 + size))"
		[ "${got[$k]:-0}" = 1 ] ||
			{ echo "record $i written back ${got[$k]:-0} times"; return; }
		unset 'got[$k]'
	done
	for k in "${!got[@]}"; do
		read -r a z <<<"$k"
		echo "a write-back of $z bytes at the tail's address $(( a - t )) (${got[$k]} times), no range of a commit"
		return
	done
	echo ok
}

case ${XIW_BOOT:-} in
1)
	xiw_two_devices
	wb_probe_on
	dax=$(pmem_devdax 256M)
	N=${XIW_PMEM_COMMITS:-200} size=448
	seed=$(( (RANDOM << 30) | (RANDOM << 15) | RANDOM ))
	# push needs Flush and Atomic Write (device caps, provider); without
	# them the plumbing alone: plain Writes of record and tail, then a
	# Read of the tail
	for mode in push write; do
		rm -f cl.log
		if [ $mode = push ]; then
			p0=$(xiw_commit_stat flush_persistent) w0=$(xiw_commit_stat flush_wb_bytes)
			a0=$(xiw_commit_stat atomic_writes)
			wb_clear
		fi
		run_timeout 150 "$CL" run --addr 192.0.2.1 --src 192.0.2.2 --port 7490 \
			--mode $mode --dax "$dax" -n "$N" --size $size --seed "$seed" \
			--hold >cl.log 2>&1 &
		pid=$!
		defer eval "kill $pid 2>/dev/null || true"
		wait_for 120 grep -q -e '^HOLD ' -e '^SKIP ' cl.log || true
		if grep -q '^SKIP ' cl.log; then
			why=$(sed -n 's/^SKIP //p' cl.log | head -n 1)
			log "$why"
			wait "$pid" || true
			continue
		fi
		break
	done
	sed 's/^/# /' cl.log
	grep -q "^HOLD committed $N\$" cl.log || fail "xiw_commitlog: $(grep -m1 FAIL cl.log || tail -n 1 cl.log)"
	expect_match "$(cat cl.log)" "^commitlog mode=$mode mem=pmem n=$N " "xiw_commitlog"
	# requester on xiw1, target on xiw0, both QPs still there
	qps=$(rdma res show qp 2>/dev/null || true)
	expect_match "$qps" 'xiw0/' "rdma res show qp"
	expect_match "$qps" 'xiw1/' "rdma res show qp"
	if [ $mode = push ]; then
		# The write-back ran: per commit a Flush P of the record (32-byte
		# header + payload) and one of the 8-byte tail, each range's
		# cache lines written back (arch_wb_cache_pmem) before the answer
		expect_eq $(( $(xiw_commit_stat flush_persistent) - p0 )) $((2 * N)) "Flush P executed"
		expect_eq $(( $(xiw_commit_stat flush_wb_bytes) - w0 )) $((N * (32 + size + 8))) "bytes written back"
		expect_eq $(( $(xiw_commit_stat atomic_writes) - a0 )) "$N" "Atomic Writes executed"
		log "responder: $((2 * N)) Flush P, $(( $(xiw_commit_stat flush_wb_bytes) - w0 )) bytes written back, $N Atomic Writes"
		# ... and the kernel's write-back routine was given exactly
		# those bytes (the kprobe, not xiw's own count): the record and
		# tail ranges of every commit, nothing less
		read -r wb nwb < <(wb_bytes)
		expect_eq "$wb" $((N * (32 + size + 8))) "bytes given to arch_wb_cache_pmem (kprobe, $nwb calls)"
		# ... at the places of the records and the tail, not only
		# their number
		expect_eq "$(wb_ranges "$N" "$size")" ok "write-back ranges (kprobe)"
		log "arch_wb_cache_pmem: $nwb calls, $wb bytes"
		# a global (non-persistent) Flush writes nothing back: the
		# commit operations of xiw_commitops (DRAM MRs, Flush global)
		wb_clear
		fl0=$(xiw_counter flushes_executed)
		run_timeout 150 "$(need_prog xiw_commitops)" 192.0.2.1 7494 >co.log 2>&1 ||
			fail "xiw_commitops: $(grep -m1 -v '^ok ' co.log || true)"
		fl1=$(xiw_counter flushes_executed)
		[ $((fl1 - fl0)) -ge 20 ] || fail "global Flushes executed: $fl0 -> $fl1"
		read -r wb nwb < <(wb_bytes)
		expect_eq "$wb" 0 "bytes given to arch_wb_cache_pmem by $((fl1 - fl0)) global Flushes ($nwb calls)"
	fi
	printf 'mode=%q N=%q size=%q seed=%q dax=%q why=%q\n' "$mode" "$N" "$size" "$seed" \
		"$dax" "${why:-}" >"$state"
	sync
	xiw_power_off ;;
2)
	[ -s "$state" ] || fail "no parameters from boot 1"
	# shellcheck disable=SC1090
	eval "$(cat "$state")"
	log "boot 1 committed $N records ($mode mode, seed $seed)"
	dax=$(pmem_devdax)
	out=$("$CL" check --dax "$dax" -n "$N" --size "$size" --seed "$seed" 2>&1) ||
		fail "after the power-off: $(grep -m1 FAIL <<<"$out")"
	log "$out"
	# the check can fail: one record more than committed, another seed
	expect_fail "$CL" check --dax "$dax" -n $((N + 1)) --size "$size" --seed "$seed" >/dev/null
	expect_fail "$CL" check --dax "$dax" -n "$N" --size "$size" --seed $((seed + 1)) >/dev/null
	# the namespace, written before an unclean power-off, is an MR again:
	# a short new log over the old one
	xiw_two_devices
	run_timeout 60 "$CL" run --addr 192.0.2.1 --src 192.0.2.2 --port 7491 --mode "$mode" \
		--dax "$dax" -n 20 --size "$size" --seed $((seed + 2)) >cl2.log 2>&1 ||
		fail "a new log on the namespace after the reboot: $(grep -m1 FAIL cl2.log || tail -n 1 cl2.log)"
	expect_match "$(cat cl2.log)" "^ok log: 20 records of $size bytes and the tail intact" "new log"
	[ "$mode" = push ] ||
		skip "$N records written with plain Writes survived the power-off; no push: $why" ;;
*)	fail "XIW_BOOT=${XIW_BOOT:-unset}" ;;
esac
