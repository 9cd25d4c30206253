#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 900
# description: the Debian packages of make deb (xiw-dkms, libxiw1, libxiw-dev) install with dpkg, the DKMS postinst installs xiw.ko (built on the host by make dkms-tarball; XIW_DKMS_GUEST_BUILD=1: in the guest), the installed provider, header, pkg-config file and man pages work, and purging leaves nothing behind
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

# A real dpkg install: the guest root is the host's under an overlay whose
# upper layer is a tmpfs (selftests/README.md), so dpkg, its maintainer
# scripts (dkms build and install) and triggers change the guest only.
# A scratch root (dpkg --root) would skip exactly what matters here: the
# postinst's DKMS build and libibverbs finding the provider in /etc.
[ "$(cat /run/xiw/root-rw 2>/dev/null)" = 1 ] ||
	skip "the guest root is not writable (no overlay): a dpkg install cannot run"
need_cmd dpkg
need_cmd dkms
need_cmd pkg-config
deb=$XIW_BUILD/deb
ver=$(sed -n '1s/^xiw (\([^)]*\)).*/\1/p' "$XIW_ROOT/debian/changelog")
arch=$(dpkg --print-architecture)
debs=("$deb/xiw-dkms_${ver}_all.deb" "$deb/libxiw1_${ver}_$arch.deb" "$deb/libxiw-dev_${ver}_$arch.deb")
for d in "${debs[@]}"; do
	[ -f "$d" ] || fail "no $d: run 'make deb' (make check does)"
done
kver=$(uname -r)
xiw_unload	# the build tree's xiw.ko from an earlier test of this boot
unset RDMAV_DRIVERS	# from here on, libibverbs must find the installed provider

# The DKMS compile: under TCG the postinst's build of xiw.ko takes ~10
# minutes, so by default the module compiled on the host by "make
# dkms-tarball" (make check runs it: make dkms-install for this kernel
# against the same headers, then dkms mktarball) goes where the DKMS
# postinst looks for a prebuilt tarball (its TARBALL_ROOT,
# /usr/share/xiw-dkms/xiw-VERSION.dkms.tar.gz): the postinst then loads it
# (dkms ldtarball) instead of "dkms add" + build, and installs it as
# usual. XIW_DKMS_GUEST_BUILD=1 lets the postinst compile here (slow).
if [ "${XIW_DKMS_GUEST_BUILD:-0}" != 1 ]; then
	tarball=$XIW_BUILD/dkms/xiw-$ver-$kver.dkms.tar.gz
	[ -f "$tarball" ] ||
		fail "no $tarball: run 'make dkms-tarball' (make check does), or XIW_DKMS_GUEST_BUILD=1"
	mkdir -p /usr/share/xiw-dkms
	cp "$tarball" "/usr/share/xiw-dkms/xiw-$ver.dkms.tar.gz"
	defer rm -f "/usr/share/xiw-dkms/xiw-$ver.dkms.tar.gz"
fi

# The man-db trigger would re-index the man pages under TCG: not our test
# (what "man-db/auto-update false" does; the guest's copy only).
rm -f /var/lib/man-db/auto-update

pkgs=(xiw-dkms libxiw1 libxiw-dev)
defer dpkg --purge "${pkgs[@]}"
t0=$(now_us)
DEBIAN_FRONTEND=noninteractive dpkg -i "${debs[@]}" >dpkg-install.log 2>&1 ||
	{ tail -n 40 dpkg-install.log; fail "dpkg -i failed"; }
log "dpkg -i (with the DKMS postinst): $(( ($(now_us) - t0) / 1000000 )) s"
for p in "${pkgs[@]}"; do
	expect_eq "$(dpkg-query -W -f='${Status} ${Version}' "$p")" "install ok installed $ver" "$p"
done
expect_eq "$(dpkg --audit 2>&1)" "" "dpkg --audit"
kre=$(printf '%s' "$kver" | sed 's/[.+]/\\&/g')	# as an ERE
expect_match "$(dkms status xiw)" "^xiw/${ver%%-*}, $kre, x86_64: installed"
f=$(modinfo -n xiw) || fail "modprobe cannot find xiw after installing xiw-dkms"
log "module: $f"
expect_match "$f" "^/lib/modules/$kre/updates/dkms/xiw\.ko"

# The device, through the packaged module and provider only.
defer xiw_unload
dummy_add d0
xiw_link_add xiw0 d0	# autoloads xiw (rdma-link-xiw) with modprobe
wait_port_state xiw0 PORT_ACTIVE 10
out=$(ibv_devinfo -d xiw0)
echo "$out" | grep -E 'hca_id|transport|state'
expect_match "$out" 'transport:[[:space:]]+iWARP'
expect_match "$out" 'PORT_ACTIVE'

# libxiw-dev: header, pkg-config, -lxiw, the direct verbs against xiw0.
cat >dv.c <<'EOF'
#include <stdio.h>
#include <string.h>
#include <infiniband/xiwdv.h>

int main(void)
{
	struct ibv_device **l = ibv_get_device_list(NULL);
	int i, found = 0;

	for (i = 0; l && l[i]; i++) {
		struct ibv_context *c = ibv_open_device(l[i]);

		if (!c)
			continue;
		printf("%s xiw=%d\n", ibv_get_device_name(l[i]), xiwdv_is_xiw_context(c));
		if (!strcmp(ibv_get_device_name(l[i]), "xiw0") && xiwdv_is_xiw_context(c))
			found = 1;
		ibv_close_device(c);
	}
	ibv_free_device_list(l);
	return found ? 0 : 1;
}
EOF
expect_eq "$(pkg-config --modversion libxiw)" "1.0.0" "libxiw.pc version"
# shellcheck disable=SC2046 # pkg-config prints words
gcc -Wall -Werror -o dv dv.c $(pkg-config --cflags --libs libxiw) ||
	fail "cannot build against libxiw-dev"
./dv || fail "xiwdv_is_xiw_context did not recognize xiw0 through the installed provider"
# (/lib is /usr/lib on a merged-/usr system: ldd may print either)
expect_match "$(ldd ./dv)" "libxiw\.so\.1 => (/usr)?/lib/$(gcc -print-multiarch)/libxiw\.so\.1"
for m in xiwdv.7 xiwdv_poll_cq.3 xiwdv_wr_masked_atomic_cmp_swp.3; do
	p=$(man -w "${m##*.}" "${m%.*}" 2>/dev/null) || fail "man page $m not found"
	log "man $m: $p"
done
rdma link delete xiw0
xiw_unload

# Purge: nothing of xiw may be left (DKMS trees, module, provider, conffile).
DEBIAN_FRONTEND=noninteractive dpkg --purge "${pkgs[@]}" >dpkg-purge.log 2>&1 ||
	{ tail -n 40 dpkg-purge.log; fail "dpkg --purge failed"; }
rm -f "/usr/share/xiw-dkms/xiw-$ver.dkms.tar.gz"	# ours, not the package's
rmdir /usr/share/xiw-dkms 2>/dev/null || true
for p in "${pkgs[@]}"; do
	st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	case $st in ''|*' not-installed') ;; *) fail "$p after purge: $st" ;; esac
done
left=$(ls -d /usr/src/xiw-* /var/lib/dkms/xiw /lib/modules/"$kver"/updates/dkms/xiw.ko* \
	/etc/libibverbs.d/xiw.driver /usr/lib/*/libxiw.so* /usr/lib/*/libibverbs/libxiw-rdmav34.so \
	/usr/include/infiniband/xiwdv.h /usr/lib/*/pkgconfig/libxiw.pc /usr/share/xiw-dkms \
	/usr/share/man/man7/xiwdv.7* /usr/share/doc/xiw-dkms 2>/dev/null || true)
expect_eq "$left" "" "files left after purge"
expect_fail modinfo -n xiw
expect_eq "$(dpkg --audit 2>&1)" "" "dpkg --audit after purge"
log "installed, used and purged cleanly"
