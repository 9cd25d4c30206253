# SPDX-License-Identifier: GPL-2.0
# NVMe over Fabrics (RDMA) on xiw for the VM tests (sourced after lib.sh):
# an nvmet-rdma target with one null_blk namespace, an nvme-rdma host, and
# a write/read-back check. The target and host can live in different VMs.
# NVME_TRANSPORT=tcp (set before nvmet_target and nvme_host_connect) makes
# them nvmet-tcp and nvme-tcp instead, for make bench's comparison.

NVMET_CFG=/sys/kernel/config/nvmet
NVME_TRANSPORT=${NVME_TRANSPORT:-rdma}

# nvmet_target ADDR NQN [use_srq]: target on ADDR:4420 (IPv4, or IPv6 when
# ADDR has a colon) exporting a fresh memory-backed null_blk (1 GiB), over
# NVME_TRANSPORT (use_srq: rdma only). nvmet_target_down undoes it (also
# at exit). Set before the call, for one subsystem behind two targets
# (native multipath, ulp_nvme_multipath_3vm):
#   NVMET_DEVICE=/dev/...  the namespace's block device instead of null_blk
#                          (the bdev backend: bios straight to the device)
#   NVMET_NS_UUID=UUID     the namespace's UUID, and its NGUID made of it
#   NVMET_SERIAL=STR       the subsystem's serial number
#   NVMET_CNTLID=MIN-MAX   the range of the controller IDs this target gives
#                          (a host refuses a second controller of a
#                          subsystem with an ID it has already)
nvmet_target() {
	local addr=$1 nqn=$2 srq=${3:-0} c=$NVMET_CFG fam=ipv4 dev=${NVMET_DEVICE:-/dev/nullb0}
	if [ -z "${NVMET_DEVICE:-}" ]; then
		modprobe null_blk nr_devices=1 gb=1 memory_backed=1 || fail "no null_blk"
		NVMET_NULLB=1
	fi
	NVMET_TRTYPE=$NVME_TRANSPORT
	if [ "$NVMET_TRTYPE" = rdma ]; then
		modprobe nvmet-rdma use_srq="$srq" || fail "modprobe nvmet-rdma failed (Debian's kernel has it)"
		[ "$(cat /sys/module/nvmet_rdma/parameters/use_srq)" = \
		  "$([ "$srq" = 1 ] && echo Y || echo N)" ] ||
			fail "nvmet-rdma use_srq is not $srq"
	else
		modprobe "nvmet-$NVMET_TRTYPE" ||
			fail "modprobe nvmet-$NVMET_TRTYPE failed (Debian's kernel has it)"
	fi
	mountpoint -q /sys/kernel/config ||
		mount -t configfs none /sys/kernel/config
	NVMET_NQN=$nqn
	defer nvmet_target_down
	mkdir "$c/subsystems/$nqn"
	echo 1 >"$c/subsystems/$nqn/attr_allow_any_host"
	[ -z "${NVMET_SERIAL:-}" ] || echo "$NVMET_SERIAL" >"$c/subsystems/$nqn/attr_serial"
	if [ -n "${NVMET_CNTLID:-}" ]; then
		echo "${NVMET_CNTLID%-*}" >"$c/subsystems/$nqn/attr_cntlid_min"
		echo "${NVMET_CNTLID#*-}" >"$c/subsystems/$nqn/attr_cntlid_max"
	fi
	mkdir "$c/subsystems/$nqn/namespaces/1"
	echo -n "$dev" >"$c/subsystems/$nqn/namespaces/1/device_path"
	if [ -n "${NVMET_NS_UUID:-}" ]; then
		echo "$NVMET_NS_UUID" >"$c/subsystems/$nqn/namespaces/1/device_uuid"
		echo "${NVMET_NS_UUID//-/}" >"$c/subsystems/$nqn/namespaces/1/device_nguid"
	fi
	echo 1 >"$c/subsystems/$nqn/namespaces/1/enable"
	mkdir "$c/ports/1"
	echo "$NVMET_TRTYPE" >"$c/ports/1/addr_trtype"
	case $addr in *:*) fam=ipv6 ;; esac
	echo $fam >"$c/ports/1/addr_adrfam"
	echo "$addr" >"$c/ports/1/addr_traddr"
	echo 4420 >"$c/ports/1/addr_trsvcid"
	ln -s "$c/subsystems/$nqn" "$c/ports/1/subsystems/$nqn"
}

# nvmet_target_down: remove the target and its modules (idempotent).
nvmet_target_down() {
	local c=$NVMET_CFG nqn=${NVMET_NQN:-}
	[ -n "$nqn" ] || return 0
	rm -f "$c/ports/1/subsystems/$nqn"
	rmdir "$c/ports/1" 2>/dev/null || true
	[ -d "$c/subsystems/$nqn" ] && {
		echo 0 >"$c/subsystems/$nqn/namespaces/1/enable"
		rmdir "$c/subsystems/$nqn/namespaces/1"
		rmdir "$c/subsystems/$nqn"
	}
	NVMET_NQN=
	modprobe -r "nvmet-$NVMET_TRTYPE" nvmet
	[ -z "${NVMET_NULLB:-}" ] || modprobe -r null_blk
	NVMET_NULLB=
}

# nvme_host_connect ADDR NQN [OPTIONS]: connect over NVME_TRANSPORT (xiw
# for rdma); sets NVME_CTRL (sysfs) and NVME_NS (/dev/nvmeXn1), and checks
# the controller's transport. nvme_host_disconnect undoes it.
nvme_host_connect() {
	local addr=$1 nqn=$2 opts=${3:-} t=$NVME_TRANSPORT d
	modprobe "nvme-$t" || fail "modprobe nvme-$t failed (Debian's kernel has it)"
	echo "transport=$t,traddr=$addr,trsvcid=4420,nqn=$nqn${opts:+,$opts}" \
		>/dev/nvme-fabrics || fail "nvme-$t connect to $addr failed"
	NVME_CTRL=
	for d in /sys/class/nvme/nvme*; do
		[ "$(cat "$d/subsysnqn")" = "$nqn" ] && NVME_CTRL=$d
	done
	[ -n "$NVME_CTRL" ] || fail "no controller for $nqn"
	NVME_HOST_TRTYPE=$t
	defer nvme_host_disconnect
	expect_eq "$(cat "$NVME_CTRL/transport")" "$t" "transport of ${NVME_CTRL##*/}"
	# The namespace's name is the subsystem's instance (nvme-subsysN,
	# multipath), not the controller's: after an earlier connection the
	# old subsystem may not be gone yet, so nvme0 can have nvme1n1.
	wait_for 10 nvme_ns_of "$nqn" ||
		fail "no namespace block device of $nqn: $(ls /sys/block | grep nvme | tr '\n' ' ')"
	NVME_NS=/dev/$(nvme_ns_of "$nqn")
	[ -b "$NVME_NS" ] || fail "no block device $NVME_NS"
}

# nvme_ns_of NQN: the name of the block device of namespace 1 of the
# subsystem NQN (its device, the subsystem or the controller, says which;
# a multipath path's hidden disk, nvmeXcYn1, is not it)
nvme_ns_of() {
	local b
	for b in /sys/block/nvme*n1; do
		case ${b##*/} in nvme*c*) continue ;; esac
		[ "$(cat "$b/device/subsysnqn" 2>/dev/null)" = "$1" ] &&
			{ echo "${b##*/}"; return 0; }
	done
	return 1
}

nvme_host_disconnect() {
	[ -n "${NVME_CTRL:-}" ] || return 0
	[ -e "$NVME_CTRL/delete_controller" ] &&
		echo 1 >"$NVME_CTRL/delete_controller"
	wait_for 10 eval "[ ! -e $NVME_CTRL ]" || fail "controller not deleted"
	NVME_CTRL=
	modprobe -r "nvme-$NVME_HOST_TRTYPE"
}

# nvmet_stored_sha MB: SHA-256 of the first MB MiB the target's null_blk
# holds (read with O_DIRECT: nvmet's bios bypass the page cache), for a
# comparison with NVME_RW_SHA on the target's side.
nvmet_stored_sha() {
	local s
	s=$(run_timeout 120 dd if=/dev/nullb0 bs=1M count="$1" iflag=direct \
		status=none | sha256sum) || fail "cannot read the target's /dev/nullb0"
	echo "${s%% *}"
}

# nvme_rw_check MB: write MB MiB of random data with O_DIRECT, read it back
# (O_DIRECT, so it crosses the wire again), compare SHA-256; logs MB/s.
# NVME_RW_SHA is the hash of what was written.
nvme_rw_check() {
	local mb=$1 want got t0 t1 t2
	head -c $((mb * 1048576)) /dev/urandom >nvme-data
	want=$(sha256sum <nvme-data)
	NVME_RW_SHA=${want%% *}
	t0=$(now_us)
	run_timeout 300 dd if=nvme-data of="$NVME_NS" bs=1M oflag=direct \
		status=none || fail "write through NVMe-oF failed"
	t1=$(now_us)
	rm nvme-data
	got=$(run_timeout 300 dd if="$NVME_NS" bs=1M count="$mb" iflag=direct \
		status=none | sha256sum) || fail "read through NVMe-oF failed"
	t2=$(now_us)
	expect_eq "$got" "$want" "sha256 of the $mb MiB read back"
	log "$mb MiB written ($((mb * 1000000 / (t1 - t0))) MB/s), read back" \
	    "and hashed ($((mb * 1000000 / (t2 - t1))) MB/s): equal"
}

# --- native multipath: one subsystem, a controller (path) per target ---------

# nvme_path_connect ADDR NQN [OPTIONS]: one more controller of subsystem NQN,
# to the target on ADDR (nvme-$NVME_TRANSPORT); prints its sysfs directory
# (/sys/class/nvme/nvmeN). Deleted at exit (nvme_path_delete).
nvme_path_connect() {
	local addr=$1 nqn=$2 opts=${3:-} t=$NVME_TRANSPORT d
	modprobe "nvme-$t" || fail "modprobe nvme-$t failed (Debian's kernel has it)"
	echo "transport=$t,traddr=$addr,trsvcid=4420,nqn=$nqn${opts:+,$opts}" \
		>/dev/nvme-fabrics || fail "nvme-$t connect to $addr failed"
	d=$(nvme_path_of "$addr" "$nqn") || fail "no controller of $nqn at $addr"
	defer nvme_path_delete "$d"
	echo "$d"
}

# nvme_path_of ADDR NQN: the sysfs directory of the controller of NQN whose
# target address is ADDR
nvme_path_of() {
	local d
	for d in /sys/class/nvme/nvme*; do
		[ "$(cat "$d/subsysnqn" 2>/dev/null)" = "$2" ] || continue
		[[ $(cat "$d/address" 2>/dev/null) == *"traddr=$1,"* ]] || continue
		echo "$d"
		return 0
	done
	return 1
}

# nvme_path_delete CTRLDIR: delete that controller unless it is gone.
nvme_path_delete() {
	[ -e "$1/delete_controller" ] || return 0
	echo 1 >"$1/delete_controller" 2>/dev/null || true
	wait_for 30 eval "[ ! -e $1 ]" || { echo "controller ${1##*/} not deleted"; return 1; }
}
