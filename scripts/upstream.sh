#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The kernel half of `make upstream`: xiw as a patch series against the
# Linux 6.12 source Debian ships (linux-source-6.12).
#
#   scripts/upstream.sh series   unpack the tarball into OUT/linux once
#                                (a git tree, tag xiw-base = the tarball),
#                                commit the series of
#                                scripts/upstream/kernel-series.sh on branch
#                                xiw, git format-patch it into OUT/kernel/
#   scripts/upstream.sh check    for each patch: checkpatch.pl --strict of
#                                that tree, then its build: the objects the
#                                patch adds (W=1 C=1) before the driver is
#                                hooked, `make W=1 C=1 M=drivers/infiniband/
#                                sw/xiw` from the hook on. Summary in
#                                OUT/kernel/check.txt; exit 1 on any error.
#
# OUT is build/upstream (UPSTREAM_OUT=...). The tree is prepared once
# (Debian's /boot/config-6.12.*, olddefconfig, what modules_prepare makes,
# and Debian's Module.symvers so that modpost knows the kernel's exports;
# see prepare()): a full kernel build is far too slow for a check, an M=
# build on a prepared tree compiles exactly what the series adds.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${UPSTREAM_OUT:-$ROOT/build/upstream}
TARBALL=${KSRC_TARBALL:-/usr/src/linux-source-6.12.tar.xz}
TREE=$OUT/linux
PATCHES=$OUT/kernel
SERIES=$ROOT/scripts/upstream/kernel-series.sh
UP=$ROOT/scripts/upstream
DRV=drivers/infiniband/sw/xiw
JOBS=${JOBS:-$(nproc)}
# sparse is what C=1 runs; without it the check says so and builds W=1.
CHECK_C=$(command -v sparse >/dev/null && echo 1 || echo 0)

UP_NAME=upstream	# tree.sh's die() prefix
. "$UP/tree.sh"

tree_init() {
	[ -f "$TARBALL" ] || die "no $TARBALL: install linux-source-6.12"
	local ver
	ver=$(dpkg-query -W -f '${Version}' linux-source-6.12 2>/dev/null || echo unknown)
	tree_from_tarball "$TARBALL" 'linux-source-*' \
		"Linux 6.12 (Debian linux-source-6.12 $ver)"
}

# --- the verbs of kernel-series.sh ---------------------------------------

# The driver's Makefile, written from kernel/Kbuild's header and the
# objects added so far (the out-of-tree include paths dropped: in a tree
# the headers are where the compiler looks anyway).
DRV_OBJS=()
drv_makefile() {
	{
		echo "# SPDX-License-Identifier: GPL-2.0"
		echo
		echo "obj-\$(CONFIG_RDMA_XIW) += xiw.o"
		echo
		echo "# define_trace.h includes xiw_trace.h from this directory"
		echo "CFLAGS_xiw_trace.o := -I\$(src)"
		echo
		printf 'xiw-y := \\\n'
		local i n=${#DRV_OBJS[@]}
		for ((i = 0; i < n; i++)); do
			if ((i < n - 1)); then
				printf '\t%s \\\n' "${DRV_OBJS[i]}"
			else
				printf '\t%s\n' "${DRV_OBJS[i]}"
			fi
		done
	} >"$TREE/$DRV/Makefile"
	git -C "$TREE" add -f "$DRV/Makefile"
}

put() {
	mkdir -p "$(dirname "$TREE/$2")"
	cp "$ROOT/$1" "$TREE/$2"
	git -C "$TREE" add -f "$2"
}

drv() {
	local f objs_changed=0
	for f in "$@"; do
		put "kernel/$f" "$DRV/$f"
		if [[ $f == *.c ]]; then
			DRV_OBJS+=("${f%.c}.o")
			objs_changed=1
		fi
	done
	# Kbuild's order, so the final Makefile lists what kernel/Kbuild does
	if ((objs_changed)); then
		local kb o sorted=()
		kb=$(sed -n 's/^[[:space:]]*\(xiw_[a-z_]*\.o\).*/\1/p' "$ROOT/kernel/Kbuild")
		for o in $kb; do
			[[ " ${DRV_OBJS[*]} " == *" $o "* ]] && sorted+=("$o")
		done
		DRV_OBJS=("${sorted[@]}")
		drv_makefile
	fi
}

hook() {
	local kc=drivers/infiniband/Kconfig mk=drivers/infiniband/sw/Makefile
	# The driver's Kconfig is the repository's, as kernel/Kconfig
	put kernel/Kconfig "$DRV/Kconfig"
	grep -q 'sw/xiw/Kconfig' "$TREE/$kc" ||
		sed -i '/^source "drivers\/infiniband\/sw\/siw\/Kconfig"$/a source "drivers/infiniband/sw/xiw/Kconfig"' \
			"$TREE/$kc"
	grep -q 'sw/xiw/Kconfig' "$TREE/$kc" || die "no siw line in $kc"
	grep -q 'xiw/' "$TREE/$mk" ||
		printf 'obj-$(CONFIG_RDMA_XIW)\t\t\t+= xiw/\n' >>"$TREE/$mk"
	git -C "$TREE" add -f "$kc" "$mk"
	# every object of kernel/Kbuild is in the Makefile by now
	local kb
	kb=$(sed -n 's/^[[:space:]]*\(xiw_[a-z_]*\.o\).*/\1/p' "$ROOT/kernel/Kbuild" | tr '\n' ' ')
	[ "$kb" = "${DRV_OBJS[*]} " ] ||
		die "kernel/Kbuild has objects the series does not add: $kb"
}

maintainers() {
	local m=MAINTAINERS entry
	entry=$(sed -e "s/@NAME@/$(git config user.name)/" \
		-e "s/@EMAIL@/$(git config user.email)/" "$UP/MAINTAINERS")
	grep -q '^F:	drivers/infiniband/sw/xiw/' "$TREE/$m" && return 0
	# after SOFT-IWARP DRIVER (siw), before SOFT-ROCE DRIVER (rxe)
	awk -v entry="$entry" '
		/^SOFT-ROCE DRIVER \(rxe\)$/ && !done { print entry; print ""; done = 1 }
		{ print }
		END { if (!done) exit 1 }' "$TREE/$m" >"$TREE/$m.new" ||
		die "no SOFT-ROCE entry in MAINTAINERS"
	mv "$TREE/$m.new" "$TREE/$m"
	git -C "$TREE" add -f "$m"
}

docs() {
	local idx=Documentation/infiniband/index.rst
	put scripts/upstream/xiw.rst Documentation/infiniband/xiw.rst
	grep -q '^   xiw$' "$TREE/$idx" ||
		sed -i 's/^   user_verbs$/   user_verbs\n   xiw/' "$TREE/$idx"
	grep -q '^   xiw$' "$TREE/$idx" || die "no user_verbs in $idx"
	git -C "$TREE" add -f "$idx"
}

# The tests that need no test program: the link life cycle. They source
# lib.sh from ../ in the repository; here the directory is flat.
SELFTESTS=(link_basic link_cycles link_errors link_netdev_removal link_port_state)
selftests() {
	local d=tools/testing/selftests/drivers/infiniband/xiw t
	put scripts/upstream/selftests.mk "$d/Makefile"
	put scripts/upstream/selftests.README "$d/README"
	put selftests/lib.sh "$d/lib.sh"
	put selftests/settings "$d/settings"
	{
		echo "CONFIG_INFINIBAND=m"
		echo "CONFIG_INFINIBAND_USER_ACCESS=m"
		echo "CONFIG_RDMA_XIW=m"
		echo "CONFIG_DUMMY=m"
	} >"$TREE/$d/config"
	git -C "$TREE" add -f "$d/config"
	# in the default TARGETS, in order
	local sm=tools/testing/selftests/Makefile
	grep -q '^TARGETS += drivers/infiniband/xiw$' "$TREE/$sm" ||
		sed -i 's|^TARGETS += drivers/dma-buf$|&\nTARGETS += drivers/infiniband/xiw|' "$TREE/$sm"
	grep -q '^TARGETS += drivers/infiniband/xiw$' "$TREE/$sm" || die "no drivers/dma-buf in $sm"
	git -C "$TREE" add -f "$sm"
	for t in "${SELFTESTS[@]}"; do
		sed 's|^\. "$(dirname "${BASH_SOURCE\[0\]}")/\.\./lib\.sh"$|. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"|' \
			"$ROOT/selftests/tests/$t.sh" >"$TREE/$d/$t.sh"
		chmod 755 "$TREE/$d/$t.sh"
		grep -q '/lib.sh"$' "$TREE/$d/$t.sh" || die "$t.sh: no lib.sh line"
		git -C "$TREE" add -f "$d/$t.sh"
	done
}

series() {
	tree_init
	git -C "$TREE" checkout -q -f -B xiw xiw-base
	# untracked files of an earlier run; build outputs (ignored) stay
	git -C "$TREE" clean -q -f -d
	# shellcheck source=upstream/kernel-series.sh
	. "$SERIES"
	rm -rf "$PATCHES"
	git -C "$TREE" format-patch -q -o "$PATCHES" xiw-base..xiw
	ls "$PATCHES"
}

# --- the check -------------------------------------------------------------

# Debian's headers and kbuild packages of the same release: the kernel's
# own `make olddefconfig modules_prepare` needs flex and bison (kconfig's
# and genksyms' parsers), which this machine does not have. Their host
# tools and generated headers are what modules_prepare makes from this
# source and config, so the tree takes them, and Debian's kconfig binary
# (`conf`) runs olddefconfig and syncconfig on the tree's own Kconfig.
HDRS=$(find /usr/src -maxdepth 1 -name 'linux-headers-6.12.*-amd64' | sort -V | tail -1)
KREL=${HDRS##*/linux-headers-}
KBUILD=$(readlink -f "$HDRS/scripts/..")
# Debian built 6.12 with x86_64-linux-gnu-gcc-12 and without Rust
KCC=x86_64-linux-gnu-gcc-12
KMAKE=(make -C "$TREE" CC="$KCC" -j"$JOBS")

kconf() {
	(cd "$TREE" && env srctree=. ARCH=x86 SRCARCH=x86 KERNELVERSION="${KREL%%+*}" \
		CC="$KCC" LD=ld HOSTCC=gcc HOSTCXX=g++ RUSTC=false BINDGEN=false \
		PAHOLE=pahole AR=ar NM=nm OBJCOPY=objcopy READELF=readelf \
		CC_VERSION_TEXT="$($KCC --version | head -1)" \
		"$KBUILD/scripts/kconfig/conf" -s "--$1" Kconfig)
}

prepare() {
	local f
	[ -n "$HDRS" ] && [ -f "/boot/config-$KREL" ] ||
		die "no linux-headers-6.12.*-amd64 with its /boot/config"
	# every check starts from Debian's config, without xiw
	cp "/boot/config-$KREL" "$TREE/.config"
	if [ ! -x "$TREE/scripts/mod/modpost" ]; then
		mkdir -p "$TREE/include/generated" "$TREE/arch/x86/include/generated"
		cp -a "$HDRS/include/generated/." "$TREE/include/generated/"
		cp -a "$HDRS/arch/x86/include/generated/." "$TREE/arch/x86/include/generated/"
		cp "$HDRS/arch/x86/module.lds" "$TREE/arch/x86/module.lds"
		for f in scripts/basic/fixdep scripts/mod/modpost scripts/mod/modpost.real-lsb-64 \
			scripts/genksyms/genksyms scripts/sign-file tools/objtool/objtool \
			tools/objtool/objtool.real-x86 tools/bpf/resolve_btfids/resolve_btfids; do
			mkdir -p "$(dirname "$TREE/$f")"
			cp -a "$KBUILD/$f" "$TREE/$f"
		done
	fi
	kconf olddefconfig
	kconf syncconfig
}

# Debian's exports of the same kernel, so that modpost checks every
# symbol xiw.ko imports (without it modpost only warns).
symvers() {
	local s
	s=$(ls -d /usr/src/linux-headers-6.12.*-amd64 2>/dev/null | sort -V | tail -1)
	[ -f "$s/Module.symvers" ] && cp "$s/Module.symvers" "$TREE/Module.symvers"
}

# Counts of checkpatch's summary line "total: E errors, W warnings, C checks"
checkpatch_counts() {
	sed -n 's/^total: \([0-9]*\) errors, \([0-9]*\) warnings, \([0-9]*\) checks.*/\1 \2 \3/p'
}

check() {
	local commits c i=0 n subj log cp res t0 t1 objs o fail=0 hooked
	[ -d "$TREE/.git" ] || die "no $TREE: run 'scripts/upstream.sh series' first"
	commits=$(git -C "$TREE" rev-list --reverse xiw-base..xiw)
	n=$(wc -w <<<"$commits")
	git -C "$TREE" checkout -q -f xiw-base
	t0=$(date +%s)
	prepare
	t1=$(date +%s)
	mkdir -p "$PATCHES"
	log=$PATCHES/check.log
	: >"$log"
	{
		echo "# prepare (Debian $KREL tools and config, olddefconfig): $((t1 - t0)) s"
		printf '%-3s %-62s %-9s %s\n' "#" "subject" "E/W/C" "build"
	} >"$PATCHES/check.txt"
	for c in $commits; do
		i=$((i + 1))
		git -C "$TREE" checkout -q -f "$c"
		subj=$(git -C "$TREE" log -1 --format=%s "$c")
		say "[$i/$n] $subj"
		echo "=== [$i/$n] $subj" >>"$log"
		cp=$(git -C "$TREE" format-patch -1 --stdout "$c" |
			(cd "$TREE" && ./scripts/checkpatch.pl --strict -q - 2>>"$log" || true) |
			tee -a "$log" | checkpatch_counts)
		[ -n "$cp" ] || cp="0 0 0"
		read -r ce cw cc <<<"$cp"
		((ce == 0)) || fail=1
		res=-
		if git -C "$TREE" diff-tree --no-commit-id --name-only -r "$c" |
			grep -q "^$DRV/\|^include/.*xiw\|^drivers/infiniband/Kconfig\|^drivers/infiniband/sw/Makefile"; then
			hooked=0
			grep -q 'sw/xiw/Kconfig' "$TREE/drivers/infiniband/Kconfig" && hooked=1
			t0=$(date +%s)
			if ((hooked)); then
				# the Kconfig symbol exists now: configure it as a user would
				"$TREE/scripts/config" --file "$TREE/.config" --module RDMA_XIW
				kconf olddefconfig >>"$log" 2>&1
				kconf syncconfig >>"$log" 2>&1
				grep -q '^CONFIG_RDMA_XIW=m$' "$TREE/.config" ||
					{ echo "CONFIG_RDMA_XIW not =m after olddefconfig" >>"$log"; res=FAIL; }
				symvers
				if [ "$res" != FAIL ] && "${KMAKE[@]}" W=1 C=$CHECK_C M=$DRV \
					>"$PATCHES/build.out" 2>&1 && [ -f "$TREE/$DRV/xiw.ko" ]; then
					res=module
				else
					res=FAIL
				fi
			elif [ -f "$TREE/$DRV/Makefile" ]; then
				# not hooked yet: compile the objects present, W=1 C=1
				objs=$(sed -n 's/^[[:space:]]*\(xiw_[a-z_]*\.o\).*/\1/p' "$TREE/$DRV/Makefile")
				if "${KMAKE[@]}" W=1 C=$CHECK_C M=$DRV CONFIG_RDMA_XIW=m \
					$objs >"$PATCHES/build.out" 2>&1; then
					res="$(wc -w <<<"$objs") objs"
				else
					res=FAIL
				fi
			else
				res=uapi
				# a header-only patch: make headers (the tree's sanitized
				# uapi in usr/include, as user space sees it), then each
				# uapi header of the patch compiles alone with the flags
				# of the kernel's own header test (usr/include/Makefile,
				# CONFIG_UAPI_HEADER_TEST), warning-free
				: >"$PATCHES/build.out"
				"${KMAKE[@]}" -s headers >>"$PATCHES/build.out" 2>&1 || res=FAIL
				for o in $(git -C "$TREE" diff-tree --no-commit-id --name-only -r "$c" |
					grep '^include/uapi/.*\.h$'); do
					echo "#include <${o#include/uapi/}>" |
						gcc -fsyntax-only -std=c90 -Wall \
						-Werror=implicit-function-declaration -nostdinc -isystem \
						"$(gcc -print-file-name=include)" -I"$TREE/usr/include" \
						-x c - >>"$PATCHES/build.out" 2>&1 || res=FAIL
				done
			fi
			t1=$(date +%s)
			cat "$PATCHES/build.out" >>"$log" 2>/dev/null || true
			# W=1/C=1 findings are warnings in the output: a clean build has none
			if [ "$res" != FAIL ] && grep -q 'warning:\|error:' "$PATCHES/build.out" 2>/dev/null; then
				res="$res, $(grep -c 'warning:\|error:' "$PATCHES/build.out") warnings"
				fail=1
			fi
			[ "$res" != FAIL ] || fail=1
			res="$res $((t1 - t0)) s"
		fi
		printf '%-3s %-62s %-9s %s\n' "$i" "$subj" "$ce/$cw/$cc" "$res" >>"$PATCHES/check.txt"
	done
	git -C "$TREE" checkout -q -f xiw
	cat "$PATCHES/check.txt"
	return $fail
}

case ${1:-series} in
series) series ;;
check) check ;;
all) series && check ;;
*) die "usage: $0 series|check|all" ;;
esac
