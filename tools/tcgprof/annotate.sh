#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# annotate.sh BLOCKS KO [TOP]: the per-block counts of insn_profile
# (insn-DEV-ROW-blocks.txt, "INSNS/op function+0xOFF [module]") as source
# lines of the module KO (built with debug info, as kernel/Makefile does):
# the instructions per op of every line a counted block starts at, the
# hottest TOP (default 40) first, each with the function it was inlined
# into. A block counts whole at its first instruction's line, so a line
# stands for the straight-line code that follows it up to the next branch.
set -euo pipefail
blocks=${1:?usage: annotate.sh BLOCKS KO [TOP]}
ko=${2:?usage: annotate.sh BLOCKS KO [TOP]}
top=${3:-40}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# "section value name" of every function in KO (values are section offsets)
objdump -t "$ko" | awk '$3 == "F" || $2 == "F" {
	# objdump -t: VALUE FLAGS... SECTION SIZE NAME; F is among the flags
	n = NF; print $(n - 2), $1, $n }' >"$tmp/syms"

# "insns section offset func+off" per block, the offset within its section
awk 'function hex(h,   i, v) { v = 0; h = tolower(h); sub(/^0x/, "", h)
		for (i = 1; i <= length(h); i++)
			v = v * 16 + index("0123456789abcdef", substr(h, i, 1)) - 1
		return v }
	FNR == NR { sec[$3] = $1; val[$3] = hex($2); next }
	{ split($2, p, "+"); f = p[1]; o = hex(p[2])
	  if (!(f in sec)) { printf "%s %s %s %s\n", $1, "-", 0, $2; next }
	  printf "%s %s 0x%x %s\n", $1, sec[f], val[f] + o, $2 }' \
	"$tmp/syms" "$blocks" >"$tmp/rows"

# one addr2line per section, the addresses in order: the innermost
# frame's line (where the code is) and the outermost frame's function
: >"$tmp/lines"
for s in $(awk '$2 != "-" { print $2 }' "$tmp/rows" | sort -u); do
	awk -v s="$s" '$2 == s' "$tmp/rows" >"$tmp/rows.$s"
	awk '{ print $3 }' "$tmp/rows.$s" |
		addr2line -e "$ko" -j "$s" -f -i -a |
		awk '{ sub(/ \(discriminator [0-9]+\)/, "") }
			/^0x/ { if (a) print a, loc, fn; a = $1; fn = ""; loc = ""; n = 0; next }
			{ n++; if (n % 2) fn = $0; else if (n == 2) loc = $0 }
			END { if (a) print a, loc, fn }' >"$tmp/a2l.$s"
	# join on the order: addr2line answers every address once
	paste -d' ' "$tmp/rows.$s" "$tmp/a2l.$s" |
		awk '{ sub(".*/", "", $6); print $1, $6, $7, $4 }' >>"$tmp/lines"
done
awk '$2 == "-" { print $1, "?", "?", $4 }' "$tmp/rows" >>"$tmp/lines"

echo "# instructions per op by source line (block start), $blocks"
echo "# INSNS  FILE:LINE  (OUTERMOST FUNCTION)  BLOCKS"
awk '{ k = $2 " (" $3 ")"; n[k] += $1; b[k] = b[k] " " $4 }
	END { for (k in n) printf "%8.1f  %s %s\n", n[k], k, b[k] }' \
	"$tmp/lines" | sort -rn | head -n "$top"
