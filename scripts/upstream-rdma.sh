#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The rdma-core half of `make upstream`: libxiw as a patch series against
# rdma-core 56.1, the release of Debian's archive whose source tarball it
# serves (bookworm's 44.0 has its .dsc there but not its orig.tar.gz).
#
#   scripts/upstream-rdma.sh series   fetch the tarball once (checked
#                                     against RC_SHA256), unpack it into
#                                     OUT/rdma-core (a git tree, tag
#                                     xiw-base), commit the series on
#                                     branch xiw, git format-patch it into
#                                     OUT/rdma-core-patches/
#   scripts/upstream-rdma.sh check    configure the tree at xiw-base
#                                     (CMake, Ninja, -Werror as rdma-core's
#                                     CI builds, pyverbs with Debian's
#                                     Cython, in place so that the VM test
#                                     upstream_rdma_core runs its tools,
#                                     libraries and tests/), build it,
#                                     then apply the
#                                     patches one by one and build after
#                                     each; then check the provider the
#                                     tree built: it exports exactly the
#                                     symbols of its map, registers through
#                                     PROVIDER_DRIVER() and loads with the
#                                     tree's libibverbs (its use on a
#                                     device: the VM test). Summary in
#                                     OUT/rdma-core-patches/check.txt;
#                                     exit 1 on any error.
#
# The provider in the tree is userspace/libxiw with what only an
# out-of-tree build needs taken out: xiw_pabi.h (the private ABI
# declarations rdma-core's own <infiniband/driver.h> and kern-abi.h give
# in the tree) and the constructor that refuses a libibverbs of another
# layout (PROVIDER_DRIVER() registers it; the tree's libibverbs is the
# one it is built with); the rdma-core 45+ code paths (ibv_wr_flush) are
# the only ones kept. The source stays the repository's: the series is
# made from it every time.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${UPSTREAM_OUT:-$ROOT/build/upstream}
RC_VER=56.1
RC_URL=${RC_URL:-http://deb.debian.org/debian/pool/main/r/rdma-core/rdma-core_$RC_VER.orig.tar.gz}
RC_SHA256=63ce7f2baa7242c2dbc76375dac957c420187dd27f8c5e148efc07971ee522a8
TARBALL=$OUT/rdma-core_$RC_VER.orig.tar.gz
TREE=$OUT/rdma-core
PATCHES=$OUT/rdma-core-patches
SRC=$ROOT/userspace/libxiw
UAPI=$ROOT/include/uapi/rdma
BLD=$OUT/rdma-core-build
UP_RC=$ROOT/scripts/upstream/rdma-core
JOBS=${JOBS:-$(nproc)}

UP_NAME=upstream-rdma	# tree.sh's die() prefix
. "$ROOT/scripts/upstream/tree.sh"

fetch() {
	if [ ! -f "$TARBALL" ]; then
		mkdir -p "$OUT"
		say "fetching $RC_URL"
		curl -fsS -m 300 -o "$TARBALL.part" "$RC_URL" ||
			die "cannot fetch $RC_URL"
		mv "$TARBALL.part" "$TARBALL"
	fi
	echo "$RC_SHA256  $TARBALL" | sha256sum -c --quiet - ||
		die "$TARBALL: not the rdma-core $RC_VER tarball (sha256)"
}

tree_init() {
	fetch
	tree_from_tarball "$TARBALL" "rdma-core-$RC_VER" \
		"rdma-core $RC_VER (Debian's rdma-core_$RC_VER.orig.tar.gz)"
}

# in_tree FILE: FILE of userspace/libxiw as the tree has it: the
# out-of-tree conditionals resolved (XIW_HAVE_WR_FLUSH is 1: rdma-core
# 45+), xiw_pabi.h replaced by driver.h, XIW_NAME_MATCH by
# VERBS_NAME_MATCH, the registration constructor (and the libibverbs
# layout check that only it calls) by PROVIDER_DRIVER().
in_tree() {
	awk '
	# #if/#ifndef XIW_HAVE_WR_FLUSH or XIW_IBVERBS_VERSION: keep the
	# branch rdma-core 56 takes (other directives nest and pass through)
	function ours(l) { return l ~ /^#if(ndef)? +XIW_(HAVE_WR_FLUSH|IBVERBS_VERSION)([^A-Za-z0-9_]|$)/ }
	/^\/\*$/ { held = $0; next }
	held != "" {
		if ($0 ~ /^ \* PABI 34 covers/) { skip_reg = 1; held = ""; next }
		print held; held = ""
	}
	skip_reg {
		if ($0 ~ /^static void __attribute__\(\(constructor\)\) xiw_register_driver/) reg_fn = 1
		if (reg_fn && $0 == "}") { print "PROVIDER_DRIVER(xiw, xiw_dev_ops);"; skip_reg = 0; reg_fn = 0 }
		next
	}
	ours($0) {
		depth++; want[depth] = ($0 ~ /^#ifndef/) ? 0 : 1; on[depth] = want[depth]; base[depth] = nest; next
	}
	depth && /^#if/ { nest++; if (on[depth]) print; next }
	depth && /^#else/ && nest == base[depth] { on[depth] = !want[depth]; next }
	depth && /^#endif/ {
		if (nest == base[depth]) { depth--; next }
		nest--; if (on[depth]) print; next
	}
	depth && !on[depth] { next }
	/^#include <dlfcn\.h>$/ { next }
	/^#include "xiw_pabi\.h"$/ { print "#include <infiniband/driver.h>"; next }
	{ gsub(/XIW_NAME_MATCH\(/, "VERBS_NAME_MATCH("); print }
	END { if (held != "") print held }
	' "$SRC/$1"
}

# edit FILE AWK: rewrite a tree file through an awk program
edit() {
	local f=$TREE/$1
	awk "$2" "$f" >"$f.new" && mv "$f.new" "$f"
}

series() {
	local f
	tree_init
	# the tree is this script's: what a check or a hand left there goes
	git -C "$TREE" am --abort >/dev/null 2>&1 || true
	git -C "$TREE" reset -q --hard
	git -C "$TREE" checkout -q -B xiw xiw-base
	git -C "$TREE" reset -q --hard xiw-base
	git -C "$TREE" clean -q -fdx

	# 1. the kernel's user ABI headers, as kernel-headers/update copies
	# them from a kernel tree
	cp "$UAPI/xiw-abi.h" "$UAPI/xiw-sqe.h" "$TREE/kernel-headers/rdma/"
	edit kernel-headers/CMakeLists.txt '
		!done && /^  rdma\/vmw_pvrdma-abi\.h$/ {
			print "  rdma/xiw-abi.h"; print "  rdma/xiw-sqe.h"; done = 1 }
		{ print }'
	grep -q 'rdma/xiw-abi.h' "$TREE/kernel-headers/CMakeLists.txt" ||
		die "kernel-headers/CMakeLists.txt: no place for the xiw headers"
	git -C "$TREE" add -A
	commit "Update kernel headers" <<'MSG'
To the kernel series "RDMA/xiw: add the user ABI headers": xiw-abi.h
(the driver data of the uverbs commands, the ring layout user space
maps) and xiw-sqe.h (the send and receive queue and completion entries
written to those rings).
MSG

	# 2. the provider
	mkdir -p "$TREE/providers/xiw/man"
	for f in xiw.c xiw.h xiw_qp_ex.c xiw_ring.c xiwdv.h; do
		in_tree "$f" >"$TREE/providers/xiw/$f"
	done
	grep -q '^PROVIDER_DRIVER(xiw, xiw_dev_ops);$' "$TREE/providers/xiw/xiw.c" ||
		die "xiw.c: the registration constructor was not found"
	if grep -n 'XIW_HAVE_WR_FLUSH\|XIW_IBVERBS_VERSION\|xiw_pabi\|verbs_register_driver_34\|dladdr' \
		"$TREE"/providers/xiw/*.[ch] >&2; then
		die "an out-of-tree part is left in providers/xiw"
	fi
	cp "$SRC"/man/*.[37] "$TREE/providers/xiw/man/"
	cat >"$TREE/providers/xiw/CMakeLists.txt" <<'EOF'
rdma_shared_provider(xiw libxiw.map
	1 1.0.${PACKAGE_VERSION}
	xiw.c
	xiw_qp_ex.c
	xiw_ring.c
)

publish_headers(infiniband
	xiwdv.h
)

rdma_pkg_config("xiw" "libibverbs" "${CMAKE_THREAD_LIBS_INIT}")
EOF
	cat >"$TREE/providers/xiw/libxiw.map" <<'EOF'
/* Export symbols should be added below according to
   Documentation/versioning.md document. */
XIWDV_1.0 {
	global:
EOF
	grep -ohE '^XIW_EXPORT [^(]*[^a-z0-9_]xiwdv_[a-z0-9_]+\(' "$SRC"/*.c |
		sed -E 's/.*[^a-z0-9_](xiwdv_[a-z0-9_]+)\($/\t\t\1;/' | sort -u >>"$TREE/providers/xiw/libxiw.map"
	printf '\tlocal: *;\n};\n' >>"$TREE/providers/xiw/libxiw.map"
	{
		echo "rdma_man_pages("
		(cd "$SRC/man" && ls -1 ./*.[37]) | sed 's|^\./|  |'
		echo ")"
	} >"$TREE/providers/xiw/man/CMakeLists.txt"
	edit CMakeLists.txt '
		{ print }
		/^add_subdirectory\(providers\/siw\)$/ {
			print "add_subdirectory(providers/xiw)"
			print "add_subdirectory(providers/xiw/man)" }'
	edit libibverbs/verbs.h '
		{ print }
		/^extern const struct verbs_device_ops verbs_provider_vmw_pvrdma;$/ {
			print "extern const struct verbs_device_ops verbs_provider_xiw;" }'
	edit MAINTAINERS '
		{ print }
		/^F:\tproviders\/vmw_pvrdma\/$/ {
			print ""
			print "XIW SOFT IWARP USERSPACE PROVIDER (for xiw.ko)"
			print "M:\tSeed fb0a6d37 maintainers <maintainers@users.noreply.a-seed-fb0a6d37.example>"
			print "S:\tSupported"
			print "F:\tproviders/xiw/" }'
	edit README.md '
		{ print }
		/^ - vmw_pvrdma\.ko$/ { print " - xiw.ko" }'
	edit debian/ibverbs-providers.install '
		{ print }
		/^usr\/lib\/\*\/libmlx5\.so\.\*$/ { print "usr/lib/*/libxiw.so.*" }'
	for f in CMakeLists.txt libibverbs/verbs.h MAINTAINERS README.md debian/ibverbs-providers.install; do
		grep -q 'xiw' "$TREE/$f" || die "$f: the xiw line has no place"
	done
	git -C "$TREE" add -A
	commit "providers/xiw: Add the xiw software iWARP provider" <<'MSG'
xiw is a software iWARP RNIC (drivers/infiniband/sw/xiw): MPA, DDP and
RDMAP over kernel TCP sockets, with the RFC 7306 atomics (FetchAdd and
CmpSwap with masks), RDMA Write with Immediate, and RDMA Flush, Atomic
Write and Verify of draft-talpey-rdma-commit.

Its send, receive and completion queues are rings the kernel lays out
(rdma/xiw-sqe.h) and the provider maps, so posting and polling take no
system call; a doorbell write wakes the kernel's transmitter only when
it sleeps. Extensions are reached through ibv_qp_ex (ibv_wr_flush,
ibv_wr_atomic_write) and xiwdv.h: masked atomics, 64-bit immediate
data, Verify, and a polling entry point for the xiw-specific
completion fields.

The kernel driver has no driver id of its own yet: a device matches by
its name (xiw*) or, under another name, by the node description the
driver sets.
MSG

	# 3. pyverbs bindings of xiwdv.h and their tests
	# (scripts/upstream/rdma-core/: code that lives in the tree only)
	mkdir -p "$TREE/pyverbs/providers/xiw"
	cp "$UP_RC"/pyverbs/* "$TREE/pyverbs/providers/xiw/"
	cp "$UP_RC"/tests/test_xiwdv.py "$TREE/tests/"
	edit pyverbs/CMakeLists.txt '
		{ print }
		/^add_subdirectory\(providers\/efa\)$/ { efa = 1 }
		efa && /^endif\(\)$/ { print "add_subdirectory(providers/xiw)"; efa = 0 }'
	edit tests/CMakeLists.txt '
		{ print }
		/^  test_tag_matching\.py$/ { print "  test_xiwdv.py" }'
	for f in pyverbs/CMakeLists.txt tests/CMakeLists.txt; do
		grep -q 'xiw' "$TREE/$f" || die "$f: the xiw line has no place"
	done
	git -C "$TREE" add -A
	commit "pyverbs/xiw: Add the xiw direct verbs and their tests" <<'MSG'
XiwContext opens an xiw device (and refuses any other), XiwMR registers
a region with the digest its Verify requests compute (xiwdv_reg_mr),
and the xiwdv work requests of ibv_qp_ex (masked FetchAdd and CmpSwap,
RDMA Write with 64-bit immediate data, Flush, Verify) take a QPEx.

tests/test_xiwdv.py registers regions with each digest and the Flush
rights, checks that an unknown digest is refused with EINVAL, and that
XiwContext opens xiw devices only.
MSG

	rm -rf "$PATCHES"
	mkdir -p "$PATCHES"
	git -C "$TREE" format-patch -q -o "$PATCHES" xiw-base..xiw
	say "upstream-rdma: $(ls "$PATCHES" | wc -l) patches in $PATCHES"
}

check() {
	local p bad=0 sum=$PATCHES/check.txt log
	[ -d "$PATCHES" ] && ls "$PATCHES"/*.patch >/dev/null 2>&1 ||
		die "no series in $PATCHES: scripts/upstream-rdma.sh series first"
	git -C "$TREE" am --abort >/dev/null 2>&1 || true
	git -C "$TREE" checkout -q --detach xiw-base
	git -C "$TREE" clean -q -fdx
	rm -rf "$BLD"
	mkdir -p "$BLD"
	: >"$sum"
	say "upstream-rdma: configuring and building rdma-core $RC_VER at xiw-base"
	log=$BLD/base.log
	if ! (cd "$BLD" && cmake -GNinja -DIN_PLACE=1 -DENABLE_WERROR=1 -DNO_MAN_PAGES=1 \
		-DPYTHON_EXECUTABLE=/usr/bin/python3 "$TREE" && ninja -j"$JOBS") >"$log" 2>&1; then
		tail -n 30 "$log" >&2
		die "rdma-core $RC_VER does not build at xiw-base here ($log)"
	fi
	echo "xiw-base: builds" >>"$sum"
	for p in "$PATCHES"/*.patch; do
		log=$BLD/$(basename "$p" .patch).log
		if ! git -C "$TREE" am -q "$p" >"$log" 2>&1; then
			echo "$(basename "$p"): does not apply" >>"$sum"
			bad=1; break
		fi
		if (cd "$BLD" && ninja -j"$JOBS") >>"$log" 2>&1 &&
		   ! grep -q 'warning:' "$log"; then
			echo "$(basename "$p"): builds, no warning" >>"$sum"
		else
			grep -m5 -E 'warning:|error:|FAILED' "$log" >&2 || true
			echo "$(basename "$p"): build failed or warned ($log)" >>"$sum"
			bad=1
		fi
	done
	if [ $bad = 0 ]; then
		# the provider the tree built: its exports are the map's, it
		# names libibverbs' private ABI of this tree, it loads
		local so
		so=$(ls "$BLD"/lib/libxiw.so.1.* 2>/dev/null | head -n 1)
		if [ -z "$so" ]; then
			echo "no lib/libxiw.so.1.* in the build" >>"$sum"; bad=1
		else
			local want got
			want=$(grep -oE 'xiwdv_[a-z0-9_]+' "$TREE/providers/xiw/libxiw.map" | sort -u)
			got=$(nm -D --defined-only "$so" | awk '{ print $3 }' | grep -v '^XIWDV_' |
				sed 's/@.*//' | sort -u)
			if [ "$want" = "$got" ]; then
				echo "libxiw: exports exactly the $(wc -l <<<"$want") xiwdv symbols of libxiw.map" >>"$sum"
			else
				echo "libxiw: exports differ from libxiw.map: $(diff <(echo "$want") <(echo "$got") | grep '^[<>]' | tr '\n' ' ')" >>"$sum"
				bad=1
			fi
			if nm -D "$so" | grep -q 'verbs_register_driver_'; then
				echo "libxiw: registers through PROVIDER_DRIVER()" >>"$sum"
			else
				echo "libxiw: no verbs_register_driver_* reference" >>"$sum"; bad=1
			fi
			if LD_LIBRARY_PATH=$BLD/lib python3 -c 'import ctypes, sys; ctypes.CDLL(sys.argv[1])' "$so"; then
				echo "libxiw: loads with the tree's libibverbs" >>"$sum"
			else
				echo "libxiw: does not load" >>"$sum"; bad=1
			fi
		fi
	fi
	cat "$sum"
	[ $bad = 0 ]
}

case ${1:-} in
series) series ;;
check) check ;;
*) die "usage: $0 series|check" ;;
esac
