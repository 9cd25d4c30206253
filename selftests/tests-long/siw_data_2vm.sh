#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 2vm
# timeout: 600
# description: data path interop with upstream siw across two VMs (xiw on a, siw on b), both roles: rping with verified data (CRC off and on), perftest send/write/read bandwidth and latency with -R, NVMe-oF with the target on one stack and the host on the other, both ways
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$XIW_SELFTESTS/nvmet_lib.sh"
. "$XIW_SELFTESTS/perftest_lib.sh"

need_cmd rping dd sha256sum
xiw_need_provider
siw_2vm_up
dev=$IW_DEV params=$IW_PARAMS

# crc_policy 0|1: CRC off on both sides, or required by both.
crc_policy() {
	if [ "$XIW_ROLE" = a ]; then
		echo $(($1 * 2)) >"$params/mpa_crc"
	else
		echo "$1" >"$params/mpa_crc_required"
	fi
}

for crc in 0 1; do
	crc_policy $crc
	rping_2vm "rping-crc$crc-small-xs" b 64 20
	rping_2vm "rping-crc$crc-small-sx" a 64 20
	rping_2vm "rping-crc$crc-big-xs" b 65000 10
	rping_2vm "rping-crc$crc-big-sx" a 65000 10
done
crc_policy 0

# perftest with -R: server on one VM, client on the other, both ways.
[ -n "${XIW_SIW_NO_PERFTEST:-}" ] ||
for srole in b a; do
	for t in ib_send_bw ib_write_bw ib_read_bw; do
		r=$(perftest_2vm "$srole" "$dev" "$t" -s 65536 -n 100)
		log "$t 64 KiB, server on $srole: $r"
	done
	for t in ib_send_lat ib_write_lat ib_read_lat; do
		r=$(perftest_2vm "$srole" "$dev" "$t" -s 8 -n 200)
		log "$t 8 B, server on $srole: $r"
	done
done

# NVMe-oF: target on one stack, host on the other. The host writes random
# data and reads it back; the target hashes what landed in its null_blk.
# 16 MiB in 1 MiB direct I/Os over two I/O queues: whatever siw sends
# between these VMs moves at 3-7 MB/s (siw to siw too, perf_2vm), so the
# 64 MiB of before took ~45 s of every make check and covered nothing more.
MB=${XIW_SIW_NVME_MB:-16}
nvme_round() {
	local name=$1 trole=$2 nqn=xiw-siw-$1 want got
	if [ "$XIW_ROLE" = "$trole" ]; then
		nvmet_target "$XIW_LOCAL_IP" "$nqn" 0
		xiw_barrier "$name-target-up" 60
		want=$(xiw_sync "$name-written" - 400)
		got=$(dd if=/dev/nullb0 bs=1M count="$MB" status=none | sha256sum | cut -d' ' -f1)
		expect_eq "$got" "$want" "$name: sha256 of what the target stored"
		xiw_barrier "$name-host-done" 400
		nvmet_target_down
	else
		xiw_barrier "$name-target-up" 60
		nvme_host_connect "$XIW_PEER_IP" "$nqn" nr_io_queues=2
		nvme_rw_check "$MB"
		xiw_sync "$name-written" "$NVME_RW_SHA" 400 >/dev/null
		nvme_host_disconnect
		xiw_barrier "$name-host-done" 400
	fi
	log "$name: $MB MiB through NVMe-oF, target on $trole: ok"
}
nvme_round nvme-xiw-target a
nvme_round nvme-siw-target b

wait_for 10 eval "[ -z \"\$(rdma res show cm_id 2>/dev/null)\" ]" ||
	fail "cm_ids left: $(rdma res show cm_id)"
log ok
