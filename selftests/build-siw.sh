#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build siw.ko (the kernel's Soft-iWARP, off in Debian's kernel) from
# linux-source-6.12 into $XIW_BUILD/siw, as an interop peer for the
# siw_* VM tests. Nothing of siw is part of xiw.
#
# Upstream siw fixes its MPA policy at build time (const globals in
# siw_main.c). The copy built here turns the four that interop tests must
# vary into writable module parameters, nothing else:
#   mpa_crc_required  initiator sets C; responder demands it (bool)
#   mpa_crc_strict    reject a peer whose CRC choice differs (bool)
#   peer_to_peer      initiator offers RFC 6581 RTR (bool)
#   mpa_version       MPA revision the initiator requests (1 or 2)
# (/sys/module/siw/parameters/*, defaults as upstream: N, N, N, 2),
# plus the fix of one accept race, below.
#
#   selftests/build-siw.sh        prints the path of siw.ko
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
XIW_BUILD=${XIW_BUILD:-$here/../build}
KDIR=${KDIR:-$(ls -d /usr/src/linux-headers-6.12.*+deb12-amd64 | sort | tail -n 1)}
SRC=${SIW_SRC:-/usr/src/linux-source-6.12/drivers/infiniband/sw/siw}
out=$XIW_BUILD/siw
if [ -f "$out/siw.ko" ] && [ "$out/siw.ko" -nt "$SRC/siw_cm.c" ] &&
	[ "$out/siw.ko" -nt "${BASH_SOURCE[0]}" ]; then
	echo "$out/siw.ko"
	exit 0
fi
[ -d "$SRC" ] || { echo "no siw sources at $SRC" >&2; exit 1; }
rm -rf "$out"
mkdir -p "$out"
cp "$SRC"/*.[ch] "$out/"
for v in mpa_crc_required mpa_crc_strict peer_to_peer; do
	sed -i "s/^extern const bool $v;/extern bool $v;/" "$out/siw.h"
	sed -i "s/^const bool $v;/bool $v;\nmodule_param($v, bool, 0644);/" \
		"$out/siw_main.c"
done
sed -i 's/^u_char mpa_version = MPA_REVISION_2;/&\nmodule_param(mpa_version, byte, 0644);/' \
	"$out/siw_main.c"
n=$(grep -c '^module_param(' "$out/siw_main.c")
[ "$n" = 4 ] || { echo "siw_main.c: expected 4 module_param lines, got $n" >&2; exit 1; }
# One fix of an upstream race (Documentation/interop.md, "The siw the bench
# builds"): siw_accept() sends the MPA Reply and only then hands the
# socket's data_ready to the QP (or to the RTR handler). FPDUs that
# arrive in between - the initiator's RTR and its first Send, which a
# fast initiator sends at once - are left queued under the CM's upcall,
# which ignores them; siw waits for the RTR forever, the responder's
# cm_id stays in CONN_RECV, and the close that follows reaches iw_cm as
# IW_CM_EVENT_CLOSE in that state: "kernel BUG at iwcm.c:964". The copy
# hands the socket over before the Reply goes out.
python3 - "$out/siw_cm.c" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
old = """	rv = siw_send_mpareqrep(cep, params->private_data,
				params->private_data_len);
	if (rv != 0)
		goto error;

	if (wait_for_peer_rts) {
		siw_sk_assign_rtr_upcalls(cep);
	} else {
		siw_qp_socket_assoc(cep, qp);
		rv = siw_cm_upcall(cep, IW_CM_EVENT_ESTABLISHED, 0);
		if (rv)
			goto error;
	}
"""
new = """	if (wait_for_peer_rts)
		siw_sk_assign_rtr_upcalls(cep);
	else
		siw_qp_socket_assoc(cep, qp);

	rv = siw_send_mpareqrep(cep, params->private_data,
				params->private_data_len);
	if (rv != 0)
		goto error;

	if (!wait_for_peer_rts) {
		rv = siw_cm_upcall(cep, IW_CM_EVENT_ESTABLISHED, 0);
		if (rv)
			goto error;
	}
"""
if s.count(old) != 1:
    sys.exit("siw_cm.c: siw_accept() is not as expected: the accept race fix does not apply")
open(p, "w").write(s.replace(old, new))
PY
echo 'obj-m += siw.o' >"$out/Kbuild"
echo 'siw-y := siw_cm.o siw_cq.o siw_main.o siw_mem.o siw_qp.o siw_qp_rx.o siw_qp_tx.o siw_verbs.o' >>"$out/Kbuild"
make -s -C "$KDIR" M="$out" CONFIG_RDMA_SIW=m modules >"$out/build.log" 2>&1 ||
	{ tail -n 20 "$out/build.log" >&2; exit 1; }
echo "$out/siw.ko"
