# SPDX-License-Identifier: GPL-2.0
# iSCSI Extensions for RDMA (iSER) on xiw for the VM tests (sourced after
# lib.sh): an LIO target with the isert transport, set up through configfs
# (no targetcli), exporting a fileio LUN, and open-iscsi's iser transport
# (iscsid, iscsiadm -I iser) as the initiator.
#
# LIO gives every network portal an iSCSI/TCP listener on the portal's
# address and port; writing 1 to the portal's "iser" attribute adds the
# iSER listener (an rdma_cm listen) on the same address and port. On an
# iWARP device that uses the host's TCP port space (xiw, siw) that listen
# binds a TCP socket to the address and port the TCP listener already
# holds and gets EADDRINUSE. iser_target therefore creates the portal from
# a network namespace of its own (unshare -n, address bound with
# ip_nonlocal_bind): LIO opens its TCP listener in the namespace of the
# process that creates the portal, the isert listener is in init_net (its
# rdma_cm ID is created there), so the two never meet; the namespace lives
# as long as the TCP listener holds it.

LIO_CFG=/sys/kernel/config/target

# iser_target ADDR PORT IQN FILE SIZE_MB: target IQN on ADDR:PORT over iSER
# only, LUN 0 = fileio backstore on FILE (created, SIZE_MB MiB), no
# authentication, any initiator (demo mode, writable). iser_target_down
# undoes it (also at exit).
iser_target() {
	local addr=$1 port=$2 iqn=$3 file=$4 mb=$5 tpg np
	modprobe target_core_mod || fail "no target_core_mod"
	modprobe target_core_file || fail "no target_core_file"
	modprobe iscsi_target_mod || fail "no iscsi_target_mod"
	modprobe ib_isert || fail "no ib_isert (Debian's kernel has it)"
	mountpoint -q /sys/kernel/config ||
		mount -t configfs none /sys/kernel/config
	ISER_IQN=$iqn ISER_NP="$addr:$port"
	defer iser_target_down
	truncate -s "${mb}M" "$file"
	mkdir -p "$LIO_CFG/core/fileio_0/xiwdisk"
	echo "fd_dev_name=$file,fd_dev_size=$((mb * 1048576))" \
		>"$LIO_CFG/core/fileio_0/xiwdisk/control"
	echo 1 >"$LIO_CFG/core/fileio_0/xiwdisk/enable"
	mkdir -p "$LIO_CFG/iscsi/$iqn/tpgt_1"
	tpg=$LIO_CFG/iscsi/$iqn/tpgt_1
	mkdir "$tpg/lun/lun_0"
	ln -s "$LIO_CFG/core/fileio_0/xiwdisk" "$tpg/lun/lun_0/xiwdisk"
	echo 0 >"$tpg/attrib/authentication"
	echo 1 >"$tpg/attrib/generate_node_acls"
	echo 1 >"$tpg/attrib/cache_dynamic_acls"
	echo 0 >"$tpg/attrib/demo_mode_write_protect"
	np=$tpg/np/$addr:$port
	unshare -n sh -c "sysctl -qw net.ipv4.ip_nonlocal_bind=1 && mkdir '$np'" ||
		fail "cannot create the portal $addr:$port"
	echo 1 >"$np/iser" || fail "isert cannot listen on $addr:$port over xiw"
	expect_eq "$(cat "$np/iser")" 1 "portal $addr:$port iser"
	echo 1 >"$tpg/enable"
}

# iser_target_down: remove the target, its backstore and modules (idempotent).
iser_target_down() {
	local iqn=${ISER_IQN:-} tpg
	[ -n "$iqn" ] || return 0
	tpg=$LIO_CFG/iscsi/$iqn/tpgt_1
	if [ -d "$tpg" ]; then
		echo 0 >"$tpg/enable"
		if [ -d "$tpg/np/$ISER_NP" ]; then
			echo 0 >"$tpg/np/$ISER_NP/iser"
			rmdir "$tpg/np/$ISER_NP"
		fi
		rm -f "$tpg/lun/lun_0/xiwdisk"
		[ ! -d "$tpg/lun/lun_0" ] || rmdir "$tpg/lun/lun_0"
		rmdir "$tpg" "$LIO_CFG/iscsi/$iqn"
	fi
	[ ! -d "$LIO_CFG/iscsi" ] || rmdir "$LIO_CFG/iscsi"
	[ ! -d "$LIO_CFG/core/fileio_0/xiwdisk" ] ||
		rmdir "$LIO_CFG/core/fileio_0/xiwdisk"
	[ ! -d "$LIO_CFG/core/fileio_0" ] || rmdir "$LIO_CFG/core/fileio_0"
	ISER_IQN=
	# target_core_mod loads every backstore module when it starts
	local m
	for m in ib_isert iscsi_target_mod target_core_file target_core_iblock \
		 target_core_pscsi target_core_user target_core_mod; do
		[ ! -d "/sys/module/$m" ] || modprobe -r "$m"
	done
}

# iser_initiator_up: iscsid running (its own log iscsid.log), ib_iser and
# sd_mod loaded (no udev in the VM to load sd_mod when the LUN appears).
# iser_initiator_down undoes it.
iser_initiator_up() {
	modprobe ib_iser || fail "no ib_iser (Debian's kernel has it)"
	modprobe sd_mod || fail "no sd_mod"
	# iscsiadm's lock directory (systemd's tmpfiles makes it on a host)
	mkdir -p /run/lock/iscsi
	[ -s /etc/iscsi/initiatorname.iscsi ] ||
		echo "InitiatorName=iqn.2005-03.org.open-iscsi:xiw-test" \
			>/etc/iscsi/initiatorname.iscsi
	# a session of its own: iscsid's shutdown (SIGTERM) signals its whole
	# process group, which would otherwise be the test's
	setsid iscsid -f >iscsid.log 2>&1 &
	ISCSID_PID=$!
	defer iser_initiator_down
	wait_for 20 iscsid_answers ||
		fail "iscsid does not answer: $(iscsiadm -m session 2>&1 || true) $(cat iscsid.log)"
}

# iscsid_answers: iscsiadm reaches iscsid (it says "No active sessions"
# and exits 21 when there are none, "can not connect" while iscsid starts)
iscsid_answers() {
	local o
	o=$(iscsiadm -m session 2>&1) || true
	grep -qE 'No active sessions|^[a-z]+: \[' <<<"$o"
}

iser_initiator_down() {
	[ -n "${ISCSID_PID:-}" ] || return 0
	iscsiadm -m node -u >/dev/null 2>&1 || true
	iscsiadm -m node -o delete >/dev/null 2>&1 || true
	kill "$ISCSID_PID" 2>/dev/null || true
	wait_gone 10 kill -0 "$ISCSID_PID" || fail "iscsid does not stop"
	ISCSID_PID=
	modprobe -r ib_iser
}

# iser_disk: the block device (/dev/sdX) of the one iSCSI session's LUN 0.
iser_disk() {
	local b
	for b in /sys/class/iscsi_session/session*/device/target*/*:0/block/*; do
		[ -e "$b" ] && { echo "/dev/${b##*/}"; return 0; }
	done
	return 1
}
