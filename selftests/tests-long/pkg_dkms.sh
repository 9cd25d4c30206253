#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 900
# description: DKMS: xiw.ko built by make dkms-install against the installed headers of the booted kernel (6.12, or Debian 12's 6.1 under make check-6.1; host side, XIW_DKMS_GUEST_BUILD=1: in the guest) is installed by dkms, autoloaded by rdma link add, the device works; make dkms-uninstall removes it all
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

# The guest root is the host's, read-only over 9p, under an overlay whose
# upper layer is a tmpfs (selftests/README.md): /usr/src, /var/lib/dkms and
# /lib/modules are writable here and nothing reaches the host, so DKMS
# works on its default trees. Without the overlay (read-only root), DKMS
# gets trees on the test's tmpfs instead.
#
# The compile: under TCG one DKMS build of xiw.ko takes ~10 minutes, so by
# default it runs on the host: "make dkms-tarball" (make check runs it) is
# "make dkms-install" into scratch DKMS trees for this kernel, against the
# same installed headers, and "dkms mktarball" (for 6.1: make dkms-tarball
# DKMS_VM_KVER=6.1.0-N-amd64, which make check-6.1 runs when this test is
# named); here "dkms ldtarball" loads
# that source + module and "dkms install" installs it. XIW_DKMS_GUEST_BUILD=1
# runs the whole "make dkms-install" here instead (slow).
need_cmd dkms
need_cmd make
kver=$(uname -r)
[ -e "/lib/modules/$kver/build/Makefile" ] || fail "no kernel headers for $kver"
log "kernel $kver"
xiw_need_provider
ver=$(sed -n '1s/^xiw (\([^)-]*\).*/\1/p' "$XIW_ROOT/debian/changelog")
[ -n "$ver" ] || fail "no version in debian/changelog"
tarball=$XIW_BUILD/dkms/xiw-$ver-$kver.dkms.tar.gz
guest_build=${XIW_DKMS_GUEST_BUILD:-0}
[ "$guest_build" = 1 ] || [ -f "$tarball" ] ||
	fail "no $tarball: run 'make dkms-tarball' (make check does), or XIW_DKMS_GUEST_BUILD=1"
kre=$(printf '%s' "$kver" | sed 's/[.+]/\\&/g')	# as an ERE

# Another test of this boot may have loaded the build tree's xiw.ko.
xiw_unload

mk=(make -C "$XIW_ROOT" --no-print-directory DKMS_KERNELS="$kver")
dflags=()
if [ "$(cat /run/xiw/root-rw 2>/dev/null)" = 1 ]; then
	scratch=0 srcdir=/usr/src
	modfile=/lib/modules/$kver/updates/dkms/xiw.ko
else
	scratch=1
	t=$XIW_TEST_TMP srcdir=$XIW_TEST_TMP/src
	mkdir -p "$t/dkms" "$t/src" "$t/modules/$kver"
	dflags=(--dkmstree "$t/dkms" --sourcetree "$t/src" --installtree "$t/modules" --no-depmod)
	mk+=(DKMS_SRC="$t/src/xiw-$ver" DKMS_FLAGS="${dflags[*]}")
	modfile=$t/modules/$kver/updates/dkms/xiw.ko
	log "read-only root: DKMS trees in $t"
fi

# Cleanup, last in first out: link, module, DKMS.
# At exit, uninstall what the test did not (a failure midway): the test's
# own "make dkms-uninstall" at the end leaves nothing for it to do, and
# dkms remove of a module it does not know fails.
dkms_cleanup() {
	[ -n "$(dkms status "${dflags[@]}" xiw 2>/dev/null)" ] ||
		[ -e "$srcdir/xiw-$ver" ] || return 0
	"${mk[@]}" dkms-uninstall
}
defer dkms_cleanup
t0=$(now_us)
if [ "$guest_build" = 1 ]; then
	"${mk[@]}" dkms-install >dkms-install.log 2>&1 ||
		{ tail -n 30 dkms-install.log; fail "make dkms-install failed"; }
	log "make dkms-install (compiled in the guest): $(( ($(now_us) - t0) / 1000000 )) s"
else
	{ dkms ldtarball "${dflags[@]}" --archive "$tarball" &&
	  dkms install "${dflags[@]}" "xiw/$ver" -k "$kver"; } >dkms-install.log 2>&1 ||
		{ tail -n 30 dkms-install.log; fail "dkms ldtarball/install failed"; }
	log "dkms ldtarball + install of the host's build: $(( ($(now_us) - t0) / 1000000 )) s"
	expect_match "$(cat "$srcdir/xiw-$ver/dkms.conf")" "PACKAGE_VERSION=\"$ver\""
fi
grep -E '^(dkms:|Building|Signing|Installing|Loading)' dkms-install.log || true

st=$(dkms status "${dflags[@]}" xiw)
log "dkms status: $st"
expect_match "$st" "^xiw/$ver, $kre, x86_64: installed"
f=$(ls "$modfile"* 2>/dev/null | head -n 1)
[ -n "$f" ] || fail "no $modfile* after the DKMS install"
log "module: $f"
expect_match "$(modinfo -F vermagic "$f")" "^$kre "

# Load it the way a host does: rdma link add autoloads rdma-link-xiw
# through modprobe (depmod ran), or insmod from the scratch tree.
defer xiw_unload
dummy_add d0
if [ $scratch = 0 ]; then
	expect_eq "$(modinfo -n xiw)" "$f" "modprobe's xiw.ko"
	xiw_link_add xiw0 d0
else
	for m in $(modinfo -F depends "$f" | tr , ' '); do modprobe "$m"; done
	insmod "$f"
	xiw_link_add xiw0 d0
fi
[ -d /sys/module/xiw ] || fail "xiw not loaded"
# (xiw has no MODULE_VERSION, so no /sys/module/xiw/srcversion: the
# build tree's module was unloaded above, modprobe resolves to $f.)
wait_port_state xiw0 PORT_ACTIVE 10
out=$(ibv_devinfo -d xiw0)
echo "$out" | grep -E 'hca_id|transport|state'
expect_match "$out" 'transport:[[:space:]]+iWARP'
expect_match "$out" 'PORT_ACTIVE'
need_prog xiw_objects
xiw_objects --dev xiw0 --cycles 2 >objects.log 2>&1 ||
	{ cat objects.log; fail "xiw_objects on the DKMS module failed"; }
log "verbs objects on the DKMS-built xiw0: ok"
rdma link delete xiw0
xiw_unload

"${mk[@]}" dkms-uninstall >dkms-uninstall.log 2>&1 ||
	{ cat dkms-uninstall.log; fail "make dkms-uninstall failed"; }
[ -z "$(ls "$modfile"* 2>/dev/null)" ] || fail "$modfile still there after dkms-uninstall"
st=$(dkms status "${dflags[@]}" xiw)
expect_eq "$st" "" "dkms status after dkms-uninstall"
if [ $scratch = 0 ]; then
	[ ! -e "/usr/src/xiw-$ver" ] || fail "/usr/src/xiw-$ver still there"
	expect_fail modinfo -n xiw
fi
log "dkms-uninstall: module, DKMS tree and source gone"
