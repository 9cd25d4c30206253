#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# pmem: 16G
# timeout: 300
# description: long Flush P and Verify on a ~15.4 GiB device-dax MR (region Flushes by xiw and by a raw peer sending Data Sink Length 0, a range of almost 4 GiB at an unaligned start, a Verify of almost 4 GiB): no soft lockup at watchdog_thresh 1, and ibv_dereg_mr, rdma_disconnect and QP destroy of the target in the midst of them each return within 400 ms, the requests ending in successes, then one Terminate naming the STag, then flushes
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

F=$(need_prog xiw_flushstall)
xiw_two_devices
t0=$(now_us)
dax=$(pmem_devdax 16000M)
log "devdax namespace in $(( ($(now_us) - t0) / 1000 )) ms"
# what the namespace holds after its own memmap, in whole 2 MiB pages
dmib=$(( ($(cat "/sys/bus/dax/devices/${dax##*/}/size") >> 21) << 1 ))
# a region Flush covers the whole MR, a range one less than 4 GiB
mib=${XIW_FLUSHSTALL_MIB:-$dmib}
rmib=$(( mib < 4000 ? mib : 4000 ))
(( mib <= dmib )) || fail "--mib $mib: the namespace has $dmib MiB"
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
# a CPU held 2 s without a schedule is a soft lockup (the runner fails it)
thresh=$(sysctl -n kernel.watchdog_thresh)
defer sysctl -q kernel.watchdog_thresh="$thresh"
sysctl -q kernel.watchdog_thresh=1
# below the 500 ms after which a deregistration ends the connections still
# holding the region (XIW_MR_DRAIN_MS): the teardown must not need that
bound=${XIW_FLUSHSTALL_BOUND_MS:-400}

# every case runs whatever an earlier one found; the failures are told
# together at the end
fails=()
bad() { log "failed: $*"; fails+=("$*"); }

port=7500
run_case() {
	local tag=$1; shift
	port=$((port + 1))
	rc=0
	run_timeout 150 "$F" 192.0.2.1 $port 192.0.2.2 --dax "$dax" --bound-ms "$bound" "$@" >"$tag.log" 2>&1 || rc=$?
	sed "s/^/# $tag: /" "$tag.log"
	[ $rc = 0 ] || bad "$tag: $(grep -E '^FAIL|usage|: ' "$tag.log" | tr '\n' ' ' || tail -n 1 "$tag.log")"
}
# region Flushes run to the end: each writes the whole MR back
w0=$(xiw_commit_stat flush_wb_bytes)
run_case region-all --case region --mib "$mib" --count 1 --after-ms -1
wb=$(( $(xiw_commit_stat flush_wb_bytes) - w0 ))
[ "$wb" = $(( mib << 20 )) ] || bad "region-all: $wb bytes written back, $(( mib << 20 )) wanted"
# the target goes away 100 ms into them
run_case region --case region --mib "$mib" --count 16 --after-ms 100
run_case range --case range --mib "$rmib" --count 2 --after-ms 100
run_case verify --case verify --mib "$rmib" --count 2 --after-ms 100

# A raw peer: 4 region Flushes with Data Sink Length 0 on the wire (an
# xiw requester sends 2^32 - 1 there), to a region of ~15.4 GiB that
# xiw_target registered. Once the first is answered the target
# deregisters the region (the Terminate then ends the connection; if it
# did not, the target disconnects).
T=$(need_prog xiw_target)
B=$(need_prog xiw_badpeer)
run_timeout 200 "$T" --bind 192.0.2.1 --port 7520 --conns 1 --timeout 180 \
	--big "$dax:$mib" --dereg-on dereg.now --disconnect-on disc.now >tgt.log 2>&1 &
tpid=$!
defer eval "kill $tpid 2>/dev/null || true"
wait_for 60 grep -q '^LISTENING' tgt.log || fail "xiw_target: $(tail -n 1 tgt.log)"
big=$(sed -n 's/^BIG stag=\(0x[0-9a-f]*\) addr=\(0x[0-9a-f]*\) .*/\1:\2/p' tgt.log)
[ -n "$big" ] || fail "xiw_target told no region: $(tail -n 1 tgt.log)"
run_timeout 150 "$B" 192.0.2.1 7520 --case flush-region --foreign "$big" \
	--timeout 60000 >raw.log 2>&1 &
bpid=$!
defer eval "kill $bpid 2>/dev/null || true"
# the first Flush Response (the peer prints it FLRESP)
wait_for 90 grep -q '^FLRESP ' raw.log || fail "no Flush Response: $(tail -n 2 raw.log | tr '\n' ' ')"
touch dereg.now
wait_for 60 grep -q '^DEREG big ' tgt.log || fail "no DEREG from xiw_target"
touch disc.now
wait "$tpid" || bad "xiw_target: $(tail -n 1 tgt.log)"
wait "$bpid" || bad "xiw_badpeer: $(tail -n 1 raw.log)"
sed 's/^/# target: /' tgt.log
sed 's/^/# raw peer: /' raw.log
ms=$(sed -n 's/^DEREG big ms=\([0-9]*\) rc=0$/\1/p' tgt.log)
[ -n "$ms" ] || bad "raw peer: dereg of the region failed: $(grep '^DEREG big' tgt.log)"
(( ${ms:-0} < bound )) || bad "raw peer: ibv_dereg_mr of the region took $ms ms (bound $bound ms)"
# answers: the Flushes executed, then the Terminate of the one the
# deregistration cut short: RDMAP, Remote Protection, invalid STag
n=$(grep -c '^FLRESP ' raw.log)
(( n >= 1 && n < 4 )) || bad "raw peer: $n Flush Responses"
term=$(grep '^TERM' raw.log || true)
[[ $term == "TERM layer=0 type=1 code=0x00 "* && $term != *$'\n'* ]] ||
	bad "raw peer: not one Terminate RDMAP / Remote Protection / invalid STag: ${term:-none}"
log "raw peer: $n region Flushes answered, then ${term:-no Terminate}; dereg $(sed -n 's/^DEREG big \(ms=[0-9]*\).*/\1/p' tgt.log)"
(( ${#fails[@]} == 0 )) || fail "${fails[*]}"
