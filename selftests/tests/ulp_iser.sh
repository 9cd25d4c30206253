#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 420
# description: iSER over xiw: LIO target (ib_isert, configfs) with a 64 MiB fileio LUN and open-iscsi's iser transport (iscsiadm -I iser: discovery, login): a pattern written with O_DIRECT at an offset is in the backing file at that offset, one written into the backing file is read back; ext4 on the LUN, files written with checksums, the target's image checked by e2fsck and debugfs, logout, login again, every file read back and compared; the session is iser, its QPs are xiw0's and xiw's counters carried the data; no iSER or xiw error in the kernel log but libiscsi's "detected conn error (1011)" inside a logout (the target's disconnect racing iscsid's stop_conn); ib_iser and ib_isert unload
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$XIW_SELFTESTS/iser_lib.sh"

need_cmd iscsiadm iscsid unshare mkfs.ext4 e2fsck debugfs sha256sum dd cmp
xiw_loopback 192.0.2.1
IQN=iqn.2003-01.org.xiw:ulp-iser
PORTAL=192.0.2.1:3260
IMG=$XIW_TEST_TMP/lun.img
HW=/sys/class/infiniband/xiw0/ports/1/hw_counters

# the kernel log of this test from here on: iSER errors fail it
echo "ulp_iser: start $$" >/dev/kmsg
iser_kmsg() { dmesg | sed -n "/ulp_iser: start $$\$/,\$p" | sed 1d; }
# A logout races the target's disconnect with iscsid's stop_conn: once
# the Logout PDU is out, a DISCONNECTED event that reaches ib_iser first
# makes libiscsi report "detected conn error (1011)"
# (ISCSI_ERR_CONN_FAILED) for the session being logged out, whatever the
# transport. Between these marks, and only there, that line is expected.
logout_mark() { echo "ulp_iser: logout $1 $$" >/dev/kmsg; }
# iser_errors: the kernel log's iSER and xiw errors outside of that race.
iser_errors() {
	iser_kmsg | awk -v pid=$$ '
		$0 ~ "ulp_iser: logout begin " pid "$" { in_logout = 1; next }
		$0 ~ "ulp_iser: logout end " pid "$" { in_logout = 0; next }
		in_logout && /connection[0-9]+:0: detected conn error \(1011\)$/ {
			next
		}
		/iser: |isert: |conn error|Terminate/'
}

iser_target 192.0.2.1 3260 "$IQN" "$IMG" 64
iser_initiator_up
tx0=$(cat $HW/tx_bytes)

# Discovery (SendTargets) over iSER: the portal has no TCP listener in
# init_net, so a TCP discovery would find nothing.
# The discovery session logs out at its end.
logout_mark begin
run_timeout 60 iscsiadm -m discovery -t sendtargets -p "$PORTAL" -I iser \
	>disc.log 2>&1 || fail "discovery over iser: $(cat disc.log)"
logout_mark end
expect_match "$(cat disc.log)" "^$PORTAL,1 $IQN\$"

# iser_login: log in over iser, wait for the LUN; sets DISK.
iser_login() {
	run_timeout 60 iscsiadm -m node -T "$IQN" -p "$PORTAL" -I iser --login \
		>login.log 2>&1 || fail "login over iser: $(cat login.log)"
	wait_for 20 iser_disk || fail "no disk after login: $(iscsiadm -m session -P 3 2>&1)"
	DISK=$(iser_disk)
	wait_for 10 test -b "$DISK" || fail "no block device $DISK"
	local s
	s=$(iscsiadm -m session 2>&1)
	expect_match "$s" "^iser: \[[0-9]+\] $PORTAL,1 $IQN"
	expect_match "$(iscsiadm -m session -P 1 2>&1)" "Iface Transport: iser"
	log "session: $s, disk $DISK ($(($(blockdev --getsize64 "$DISK") / 1048576)) MiB)"
}
iser_logout() {
	logout_mark begin
	run_timeout 60 iscsiadm -m node -T "$IQN" -p "$PORTAL" -u >logout.log 2>&1 ||
		fail "logout: $(cat logout.log)"
	wait_gone 20 test -b "$DISK" || fail "$DISK still there after logout"
	logout_mark end
}

iser_login
# Both ends of the session are kernel QPs on xiw0 (target and initiator
# on one device), in RTS.
qps=$(rdma resource show qp link xiw0/1 2>&1)
nrts=$(grep -c 'state RTS' <<<"$qps" || true)
[ "$nrts" -ge 2 ] || fail "no iSER QPs in RTS on xiw0: $qps"
log "QPs on xiw0: $(tr '\n' ';' <<<"$qps")"

# Block level, both directions, at offsets the file system will not need
# to be checked against: a pattern written through the initiator with
# O_DIRECT lands in the backing file at the same offset; one written into
# the backing file is read through the initiator (O_DIRECT, no cache).
head -c 1048576 /dev/urandom >pat1
head -c 1048576 /dev/urandom >pat2
run_timeout 60 dd if=pat1 of="$DISK" bs=64k seek=$((9 * 16 + 3)) oflag=direct \
	conv=fsync status=none || fail "O_DIRECT write through iSER failed"
dd if="$IMG" bs=64k skip=$((9 * 16 + 3)) count=16 status=none | cmp - pat1 ||
	fail "the backing file does not hold the pattern written through iSER"
dd if=pat2 of="$IMG" bs=64k seek=$((20 * 16)) conv=notrunc,fsync status=none
run_timeout 60 dd if="$DISK" bs=64k skip=$((20 * 16)) count=16 iflag=direct \
	status=none | cmp - pat2 ||
	fail "the pattern of the backing file read through iSER differs"
log "1 MiB at 9.1875 MiB written and found in the backing file;" \
    "1 MiB at 20 MiB of the backing file read back"

# A file system on the LUN, files with known checksums.
run_timeout 120 mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 \
	"$DISK" || fail "mkfs.ext4 on the iSER LUN failed"
mkdir mnt
mount -t ext4 "$DISK" mnt
defer eval '! mountpoint -q '"$PWD"'/mnt || umount '"$PWD"'/mnt'
head -c $((16 * 1048576)) /dev/urandom >mnt/big
mkdir mnt/small
for i in $(seq 1 24); do
	head -c $((i * 4093 + i % 7)) /dev/urandom >"mnt/small/f$i"
done
(cd mnt && find . -type f -print0 | sort -z | xargs -0 sha256sum) >sums
expect_eq "$(wc -l <sums)" 25 "files written"
umount mnt
iser_logout

# What the target stored: a clean ext4 image holding the same files.
run_timeout 60 e2fsck -fn "$IMG" >fsck.log 2>&1 ||
	fail "e2fsck of the target's image: $(tail -5 fsck.log)"
got=$(debugfs -R "cat /big" "$IMG" 2>/dev/null | sha256sum)
expect_eq "${got%% *}" "$(awk '$2 == "./big" { print $1 }' sums)" \
	"sha256 of /big in the target's image"
got=$(debugfs -R "cat /small/f17" "$IMG" 2>/dev/null | sha256sum)
expect_eq "${got%% *}" "$(awk '$2 == "./small/f17" { print $1 }' sums)" \
	"sha256 of /small/f17 in the target's image"

# Log in again (the device is new: no page cache), mount, compare.
iser_login
mount -t ext4 "$DISK" mnt
(cd mnt && sha256sum --quiet -c ../sums) >check.log 2>&1 ||
	fail "files read back after a new login differ: $(head -5 check.log)"
umount mnt
iser_logout

tx=$(( $(cat $HW/tx_bytes) - tx0 ))
log "xiw0 sent $((tx / 1048576)) MiB for the session" \
    "($(cat $HW/tx_fpdus) FPDUs, $(cat $HW/terminates_sent) Terminates)"
# 16 MiB of file data crossed twice, plus ext4's metadata and journal
[ "$tx" -gt $((32 * 1048576)) ] ||
	fail "xiw0 sent only $tx bytes: the data did not go over xiw"
expect_eq "$(cat $HW/terminates_sent)" 0 "Terminates sent by xiw0"
races=$(iser_kmsg | grep -c 'detected conn error (1011)$' || true)
log "logouts that lost the race to the target's disconnect: $races"
errs=$(iser_errors)
[ -z "$errs" ] || fail "iSER or xiw reported errors: $(head -5 <<<"$errs")"
