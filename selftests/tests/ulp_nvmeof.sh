#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 600
# description: data path: NVMe-oF (nvmet-rdma + nvme-rdma) over xiw, 64 MiB of random data written, read back and hashed on the host and in the target's null_blk, with 2 I/O queues (xiw's fast registrations, remote invalidations (Send with Invalidate) and local ones by a Read with Invalidate's response (nvmet-rdma's rdma_rw reads on iWARP) counted with kprobes, each must occur; Local Invalidates are counted apart), then again with the target on a shared receive queue and kernel posts sent inline (kernel_tx_inline=1), nvme-rdma's posts from queue_rq's RCU section among them, sent from the post itself (tx_fpdus_from_post grows)
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$XIW_SELFTESTS/nvmet_lib.sh"

need_cmd ip dd sha256sum
xiw_load
dummy_add d0
ip addr add 192.0.2.1/24 dev d0
xiw_link_add xiw0 d0
wait_port_state xiw0 PORT_ACTIVE 5

# Count what nvme-rdma and nvmet-rdma make xiw do: fast registrations
# (IB_WR_REG_MR) and invalidations of an STag, remote (an incoming Send
# with Invalidate), by the last Read Response of a Read with Invalidate
# (nvmet-rdma's rdma_rw reads into an MR it registered; both come from
# RX: xiw_rx.c, xiw_rx_resp.c) or by a Local Invalidate WR (xiw_tx_sq.c).
# On x86-64 at xiw_stag_invalidate's entry, its 4th argument (remote) is in
# %cx and the return address, in the function that called it, on top of
# the stack.
TR=/sys/kernel/tracing
mountpoint -q $TR || mount -t tracefs none $TR
kprobes_off() {
	echo 0 >$TR/events/xiw_t/enable
	echo '!hist:keys=remote,caller.sym' >$TR/events/xiw_t/inval/trigger
	echo '!hist:keys=common_pid' >$TR/events/xiw_t/frmr/trigger
	echo -:xiw_t/inval >>$TR/kprobe_events
	echo -:xiw_t/frmr >>$TR/kprobe_events
}
echo "p:xiw_t/frmr $XIW_MOD:xiw_stag_fast_reg" >>$TR/kprobe_events
echo "p:xiw_t/inval $XIW_MOD:xiw_stag_invalidate remote=%cx:u8 caller=+0(\$stack):x64" >>$TR/kprobe_events
defer kprobes_off
echo 'hist:keys=common_pid' >$TR/events/xiw_t/frmr/trigger
echo 'hist:keys=remote,caller.sym' >$TR/events/xiw_t/inval/trigger
echo 1 >$TR/events/xiw_t/enable
# hits EVENT [ERE]: the hit count of the keys of EVENT's histogram whose
# line matches ERE (every key when it is empty)
hits() {
	awk -v re="${2:-}" '/^\{ / { l = $0; gsub(/[ \t]+/, " ", l)
		if (re == "" || l ~ re)
			for (i = 1; i <= NF; i++) if ($i == "hitcount:") n += $(i + 1) }
		END { print n + 0 }' $TR/events/xiw_t/$1/hist
}

nvmet_target 192.0.2.1 xiw-dp-nvmeof 0
nvme_host_connect 192.0.2.1 xiw-dp-nvmeof nr_io_queues=2,queue_size=64
nvme_rw_check "${XIW_NVME_MB:-64}"
expect_eq "$(nvmet_stored_sha "${XIW_NVME_MB:-64}")" "$NVME_RW_SHA" \
	"sha256 of what the target's null_blk stored"
frmr=$(hits frmr) rinv=$(hits inval 'remote: 1,')
rdinv=$(hits inval 'remote: 0,.* xiw_rx_')
lwr=$(hits inval 'remote: 0,.* (xiw_tx_|xiw_sched_)')
all=$(hits inval)
log "xiw: $frmr fast registrations; invalidations: $rinv remote, $rdinv by a Read with Invalidate, $lwr by a Local Invalidate WR"
[ "$((rinv + rdinv + lwr))" = "$all" ] ||
	fail "invalidations from an unknown caller ($all in all): $(grep -v '^#' $TR/events/xiw_t/inval/hist)"
[ "$frmr" -gt 0 ] && [ "$rinv" -gt 0 ] && [ "$rdinv" -gt 0 ] ||
	fail "NVMe-oF did not use fast registration, Send with Invalidate and Read with Invalidate: $(cat $TR/events/xiw_t/*/hist | grep -v '^#')"
nvme_host_disconnect
nvmet_target_down

# The target's receive queues on one SRQ (its limit event armed), and
# kernel posts sent inline by a poster that may sleep (kernel_tx_inline,
# the other of the two TX modes; the first round had the default).
kti=/sys/module/$XIW_MOD/parameters/kernel_tx_inline
[ -w "$kti" ] || fail "no writable $kti"
kti_off() { [ ! -w "$kti" ] || echo 0 >"$kti"; }
echo 1 >"$kti"
defer kti_off
p0=$(xiw_counter tx_fpdus_from_post)
nvmet_target 192.0.2.1 xiw-dp-nvmeof 1
nvme_host_connect 192.0.2.1 xiw-dp-nvmeof nr_io_queues=2
srqs=$(rdma res show srq 2>/dev/null | grep -c "dev xiw0" || true)
[ "$srqs" -ge 1 ] || fail "target uses no SRQ on xiw0: $(rdma res show srq)"
nvme_rw_check 32
expect_eq "$(nvmet_stored_sha 32)" "$NVME_RW_SHA" "sha256 of what the target's null_blk stored (SRQ)"
# nvme-rdma's queue_rq posts inside blk-mq's RCU section: xiw sends
# those WRs from the post itself (xiw_sched_from_post())
grown=$(( $(xiw_counter tx_fpdus_from_post) - p0 ))
log "SRQ round, kernel_tx_inline=1: $srqs SRQ(s) on xiw0, $grown FPDUs sent from posts that may not sleep"
[ "$grown" -gt 0 ] ||
	fail "no FPDU sent from a post that may not sleep: nvme-rdma's posts in queue_rq went to the TX work"
nvme_host_disconnect
nvmet_target_down
