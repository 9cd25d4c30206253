# SPDX-License-Identifier: GPL-2.0
# make bench's devices, sourced by its 1vm tests (perf_table.sh,
# perf_sweep.sh, nvmeof_bench.sh): xiw, siw (built by build-siw.sh) and
# rxe, each on a dummy netdev with an address of its own (traffic goes
# through lo). Sets addr[], devs (those whose module loaded), dev_up and
# dev_down. Devices take turns (see the note on devs below).
xiw_load
xiw_need_provider
siw_ko=${XIW_SIW_KO:-$XIW_BUILD/siw/siw.ko}
if [ -f "$siw_ko" ] && [ ! -d /sys/module/siw ]; then
	for m in $(modinfo -F depends "$siw_ko" | tr , ' '); do modprobe "$m"; done
	insmod "$siw_ko" && defer rmmod siw
fi
modprobe rdma_rxe && defer modprobe -r rdma_rxe

# one dummy netdev and address per device; traffic goes through lo
declare -A addr=([xiw0]=192.0.2.1 [siw0]=192.0.2.2 [rxe0]=192.0.2.3)
i=0
for dev in xiw0 siw0 rxe0; do
	dummy_add "d$i"
	ip addr add "${addr[$dev]}/24" dev "d$i"
	i=$((i + 1))
done
# Devices take turns: a wildcard rdma_cm listen covers every device, and
# siw's device-bound wildcard socket cannot share a port with xiw's
# (see Documentation/interop.md), so only the measured one exists.
devs=(xiw0)
[ -d /sys/module/siw ] && devs+=(siw0)
[ -d /sys/module/rdma_rxe ] && devs+=(rxe0)
declare -A netdev=([xiw0]=d0 [siw0]=d1 [rxe0]=d2) type=([xiw0]=xiw [siw0]=siw [rxe0]=rxe)
# sourced after bench_lib.sh (bench_dev_up, bench_dev_down)
dev_up() { bench_dev_up "$1" "${netdev[$1]}"; }
dev_down() { bench_dev_down "$1"; }
