#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 2vm
# timeout: 300
# description: NVMe-oF over xiw between the two VMs with the link flapping under fio (64 MiB of sequential 64 KiB writes with crc32c verify headers, rate-limited to span the flaps): a 4 s blackout of the link (every frame dropped both ways, the NICs stay up), the host's netdev down 3 s and up, the target's netdev down 3 s and up; nvme-rdma recovers each time (reconnect_delay=1) with no I/O error, fio's verify of everything read back passes, and the target's null_blk holds what the host reads (sha256), the reads' data sent copied (tx_zcopy=auto copies kernel WRs of 64 KiB or less: tx_zcopy_kernel_bytes stays 0); recovery times logged
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$XIW_SELFTESTS/nvmet_lib.sh"
#
# Two kinds of flap, because xiw meets them differently:
# * a blackout of the fabric (a cable pulled behind a switch, a switch
#   reboot): the hosts' NICs stay up and TCP just loses every segment.
#   b drops everything it sends and receives (tc clsact, matchall drop
#   on ingress and egress) for 4 s; the connections outlive it
#   (llp_timeout_ms is 30 s) and TCP retransmits once it ends. The
#   NVMe keep-alive (5 s) may or may not expire; either way I/O goes on.
# * a netdev going down and up on one host (ip link set down: an
#   administrator, a NIC reset, carrier handling in a bond): xiw moves
#   every QP of the device to ERROR and aborts its connections
#   (Documentation/security.md 3.11), so nvme-rdma must reconnect. On
#   the host's side it notices at once; on the target's side the RST is
#   lost with the link and the host learns when its retransmissions hit
#   the target after the link is back.
# virtio-net has no carrier switch a guest can flip, so a carrier loss
# is modelled by the blackout.

need_cmd fio dd sha256sum tc ip
xiw_load
xiw_link_add xiw0 "$XIW_NETDEV"
wait_port_state xiw0 PORT_ACTIVE 5
nqn=xiw-ulp-flap
MB=64
DEV=$XIW_NETDEV

if [ "$XIW_ROLE" = a ]; then
	nvmet_target "$XIW_LOCAL_IP" $nqn 0
	z0=$(xiw_counter tx_zcopy_kernel_bytes) b0=$(xiw_counter tx_bytes)
	xiw_barrier target-up 60
	# b flaps the link twice itself, then a takes its own netdev down
	xiw_barrier flap3 200
	t0=$(now_us)
	netdev_flap "$DEV" 3
	log "target's netdev down for $(( ($(now_us) - t0) / 1000 )) ms"
	xiw_barrier flap3-done 200
	want=$(xiw_sync nvme-written - 200) || fail "the host VM is gone"
	# fio's verify and dd read everything back: nvmet sent it in
	# rdma_rw's RDMA Writes of at most six pages, which tx_zcopy=auto
	# copies (it lends messages of more than 64 KiB only)
	zk=$(( $(xiw_counter tx_zcopy_kernel_bytes) - z0 ))
	sent=$(( $(xiw_counter tx_bytes) - b0 ))
	log "target: $sent bytes sent, $zk bytes of kernel payload lent to TCP"
	[ "$sent" -ge $((2 * MB * 1048576)) ] ||
		fail "the target sent $sent bytes for two reads of $MB MiB"
	expect_eq "$zk" 0 "kernel payload lent under tx_zcopy=auto (WRs of 64 KiB or less)"
	expect_eq "$(nvmet_stored_sha $MB)" "$want" \
		"sha256 of what the target's null_blk stored"
	# the target stays until the host has disconnected: a host deleting
	# its controller after the target went waits for the admin timeout
	xiw_barrier host-done 120
	exit 0
fi

# b: the NVMe-oF host, fio, and the flaps of its own link
xiw_barrier target-up 60
nvme_host_connect "$XIW_PEER_IP" $nqn nr_io_queues=2,reconnect_delay=1,ctrl_loss_tmo=60
ctrl=${NVME_CTRL##*/}
blk=/sys/block/${NVME_NS##*/}
kmsg0=$(dmesg | wc -l)

# sectors read + written on the namespace so far
io_sectors() { awk '{ print $3 + $7 }' "$blk/stat"; }
fio_running() { kill -0 "$fio" 2>/dev/null; }

# recovered TAG T0 [WHAT]: I/O moves again and the controller is live;
# logs the time since T0 (WHAT, default: the end of the outage) and the
# controller's states seen
recovered() {
	local s0 t1 st seen=''
	s0=$(io_sectors)
	t1=$(( $(now_us) + 60000000 ))
	while :; do
		st=$(cat "$NVME_CTRL/state" 2>/dev/null || echo gone)
		case " $seen " in *" $st "*) ;; *) seen="$seen $st" ;; esac
		[ "$st" = live ] && [ "$(io_sectors)" -gt "$s0" ] && break
		# fio may end (its last I/O done) before the outage ends
		[ "$st" = live ] && ! fio_running && break
		[ "$(now_us)" -lt $t1 ] || fail "$1: no I/O 60 s after the link came back (controller$seen)"
		sleep 0.1
	done
	log "$1: I/O again $(( ($(now_us) - $2) / 1000 )) ms after ${3:-the link came back} (controller:$seen)$(fio_running || echo ', fio had ended')"
}

fio --name=flap --filename="$NVME_NS" --direct=1 --ioengine=libaio \
	--iodepth=8 --rw=write --bs=64k --size=${MB}m --rate=2m \
	--verify=crc32c --verify_fatal=1 --do_verify=1 \
	--output=fio.log >fio.out 2>&1 &
fio=$!
defer eval "kill $fio 2>/dev/null || true"
wait_for 30 eval '[ "$(io_sectors)" -ge 8192 ]' || fail "fio writes nothing: $(cat fio.out)"

# 1. blackout: every frame dropped both ways for 4 s
fio_running || fail "fio ended before the flaps"
link_blackout "$DEV" 4
recovered blackout "$(now_us)"
sleep 1

# 2. the host's netdev down for 3 s, then up
fio_running || log "fio had ended before the host's netdev went down"
netdev_flap "$DEV" 3
t_up=$FLAP_UP_US
recovered host-down "$t_up"
sleep 1

# 3. the target's netdev down for 3 s (a), then up
fio_running || log "fio had ended before the target's netdev went down"
xiw_barrier flap3 60
t_dn=$(now_us)
xiw_barrier flap3-done 60
recovered target-down "$t_dn" "the target's netdev went down for 3 s"

# fio: every write done, every block read back and verified
wait_for 120 eval '! fio_running' || fail "fio still running 120 s after the flaps: $(cat fio.out)"
rc=0
wait "$fio" || rc=$?
sed 's/^/# /' fio.log
[ "$rc" = 0 ] || fail "fio exit $rc: $(grep -m3 -iE 'err|verify' fio.log fio.out | tr '\n' '|')"
expect_match "$(cat fio.log)" 'err= 0' "fio: no I/O error"
expect_match "$(cat fio.log)" "WRITE: bw=.*io=${MB}\.0MiB" "fio wrote every block"
expect_match "$(cat fio.log)" "READ: bw=.*io=${MB}\.0MiB" "fio read every block back (verify)"
reconnects=$(dmesg | tail -n +"$((kmsg0 + 1))" | grep -c "$ctrl: Successfully reconnected" || true)
log "nvme-rdma reconnected $reconnects times; fio wrote and verified $MB MiB"
[ "$reconnects" -ge 2 ] || fail "$reconnects reconnects: each netdev down must abort the connection"

# what the host reads is what the target stored
got=$(run_timeout 120 dd if="$NVME_NS" bs=1M count=$MB iflag=direct status=none | sha256sum) ||
	fail "read back through NVMe-oF failed"
xiw_sync nvme-written "${got%% *}" 200 >/dev/null || fail "the target VM is gone"
nvme_host_disconnect
xiw_barrier host-done 120
