# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# What both halves of `make upstream` (scripts/upstream.sh for Linux,
# scripts/upstream-rdma.sh for rdma-core) do to their tree: make it once
# from a source tarball, and commit a patch of the series. Sourced; the
# caller sets TREE (the git tree), OUT (where it lives) and UP_NAME (its
# messages' prefix).

say() { printf '%s\n' "$*" >&2; }
die() { say "$UP_NAME: $*"; exit 1; }

# tree_from_tarball TARBALL TOPDIR MESSAGE: unless TREE is already a git
# tree with the tag xiw-base, unpack TARBALL (its one top directory
# TOPDIR, a glob) into TREE and commit it as MESSAGE, tagged xiw-base.
tree_from_tarball() {
	local tmp=$OUT/${TREE##*/}.tmp
	[ -d "$TREE/.git" ] && git -C "$TREE" rev-parse -q --verify xiw-base >/dev/null &&
		return 0
	say "unpacking $1 into $TREE"
	rm -rf "$TREE" "$tmp"
	mkdir -p "$tmp"
	tar -C "$tmp" -xf "$1"
	# shellcheck disable=SC2086 # TOPDIR is a glob
	mv "$tmp"/$2 "$TREE"
	rmdir "$tmp"
	git -C "$TREE" init -q
	# a tree of tens of thousands of loose objects: no repacking behind
	# our back
	git -C "$TREE" config gc.auto 0
	git -C "$TREE" add -f -A .
	git -C "$TREE" commit -q -m "$3"
	git -C "$TREE" tag xiw-base
}

# commit SUBJECT: commit what is staged (or added) in TREE; the body is
# read from stdin, Signed-off-by is added from the identity git has in
# the repository (its own or the global one)
commit() {
	local body root
	body=$(cat)
	root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
	git -C "$TREE" -c user.name="$(git -C "$root" config user.name)" \
		-c user.email="$(git -C "$root" config user.email)" \
		commit -q -s -F - <<<"$1"$'\n\n'"$body"
}
