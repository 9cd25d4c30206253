#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make demo, the part that runs inside the test VM: create xiw0 on a dummy
# netdev and show what it is and that it works. The report goes to
# /xiw-out/demo.txt, which scripts/demo.sh prints on the host.
. "$(dirname "${BASH_SOURCE[0]}")/../selftests/lib.sh"

exec > >(tee /xiw-out/demo.txt) 2>&1
step() { printf '\n--- %s\n' "$*"; }
show() { printf '$ %s\n' "$*"; "$@"; }

xiw_load
xiw_need_provider
cd "$XIW_TEST_TMP" 2>/dev/null || cd /tmp
dummy_add d0
ip addr add 192.0.2.1/24 dev d0
step "create an xiw device on the dummy netdev d0"
show rdma link add xiw0 type xiw netdev d0
show rdma link show
show ibv_devices
step "what the device reports (rdma-core ibv_devinfo through libxiw)"
show ibv_devinfo -v -d xiw0 | grep -E 'hca_id|transport|fw_ver|node_guid|vendor_id|max_qp:|max_qp_wr|max_sge:|max_cqe:|max_mr:|max_mr_size|max_srq:|atomic_cap|state:|active_mtu|link_layer|GID'
step "the port follows the netdev"
ip link set d0 down
printf 'd0 down: %s\n' "$(ibv_devinfo -d xiw0 | grep -m1 'state:' | xargs)"
ip link set d0 up
wait_for 5 sh -c "ibv_devinfo -d xiw0 | grep -q PORT_ACTIVE"
printf 'd0 up:   %s\n' "$(ibv_devinfo -d xiw0 | grep -m1 'state:' | xargs)"
step "verbs objects from user space: PD, MR, CQ, QP, SRQ (mmap'd rings)"
show xiw_objects --dev xiw0 --cycles 20
step "rping: Send, RDMA Read and RDMA Write, data verified (5 iterations)"
# (wait with PIDs: a bare wait would also wait for the tee of the report)
rping -s -a 192.0.2.1 -p 7470 -C 5 -S 64 -V >rping-srv.txt 2>&1 &
srv=$!
wait_for 5 sh -c "ss -Htln | grep -q ':7470 '"
show rping -c -a 192.0.2.1 -p 7470 -C 5 -S 64 -V -v
wait $srv
step "bandwidth: perftest ib_write_bw over rdma_cm, 64 KiB messages"
ib_write_bw -R -d xiw0 -p 7471 -s 65536 -n 500 >bw-srv.txt 2>&1 &
srv=$!
wait_for 5 sh -c "ss -Htln | grep -q ':7471 '"
ib_write_bw -R -d xiw0 -p 7471 -s 65536 -n 500 192.0.2.1 2>&1 |
	grep -E '#bytes|^ 65536' || echo "(perftest could not report: clock calibration noise under TCG)"
wait $srv || true
step "a remote atomic counter (RFC 7306): 2 clients x 2 QPs FetchAdd and take a CmpSwap lock, a local CPU thread too"
xiw_atomic server 192.0.2.1 7472 --conns 4 --errconns 0 --imm 4 \
	--expect-a 400 --expect-b 20 --local-min 5 --timeout 60 >atomic-srv.txt 2>&1 &
srv=$!
wait_for 5 grep -q listening atomic-srv.txt
pids=()
for p in 1 2; do
	xiw_atomic client 192.0.2.1 7472 --threads 2 --iters 100 --locks 5 \
		--imm 4 >atomic-cli$p.txt 2>&1 &
	pids+=($!)
done
wait "${pids[@]}" $srv || true
grep -E '^(ok|FAIL) counter' atomic-srv.txt
step "remove the device and unload the module"
show rdma link delete xiw0
show rmmod xiw
if dmesg | grep -E 'WARNING:|BUG:|Oops|KFENCE|refcount_t' ; then
	echo "kernel log: NOT clean"
	exit 1
fi
echo "kernel log: clean (no WARNING/BUG/Oops/KFENCE/refcount reports)"
