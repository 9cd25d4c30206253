#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 120
# description: a user process names an idle kernel ULP QP (xiw_ktest role=idle: rdma_create_qp, INIT, never connected) in rdma_connect and in rdma_accept (librdmacm, no QP of its own, conn_param.qp_num): both calls fail, the kernel QP stays in INIT and unconnected (checked by the module at rmmod and by rdma res), xiw's debug log says why; a kernel ULP still connects its own QPs (kapi_loopback)
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

LC=$(need_prog xiw_lifecycle)
need_cmd insmod rmmod modinfo modprobe dmesg rdma
KT=${XIW_KTEST_KO:-$XIW_SELFTESTS/kmod/xiw_ktest.ko}
[ "$XIW_MOD" = xiw ] || skip "the kernel test module is xiw's own"
[ -f "$KT" ] || fail "test module not built: $KT (make ktest)"
xiw_loopback
for m in $(modinfo -F depends "$KT" | tr , ' '); do
	[ "$m" = "$XIW_MOD" ] || modprobe "$m" || fail "modprobe $m failed"
done

# the refusal's reason is a debug message of xiw_cm.c
dyn=/sys/kernel/debug/dynamic_debug/control
if [ -w $dyn ]; then
	echo 'module xiw file xiw_cm.c +p' >$dyn
	defer eval "echo 'module xiw file xiw_cm.c -p' >$dyn"
fi

mark="kapi_qpsteal-$RANDOM-$RANDOM"
echo "$mark" >/dev/kmsg
run_timeout 60 insmod "$KT" role=idle client_addr=192.0.2.1 ||
	fail "insmod xiw_ktest role=idle: $(dmesg | sed -n "/$mark/,\$p" | grep xiw_ktest | tail -n3)"
defer eval '[ ! -d /sys/module/xiw_ktest ] || rmmod xiw_ktest'
qpn=$(cat /sys/module/xiw_ktest/parameters/idle_qpn)
[ -n "$qpn" ] && [ "$qpn" != 0 ] || fail "no idle QP number"
log "kernel QP $qpn: $(rdma res show qp lqpn "$qpn" 2>&1)"
rdma res show qp lqpn "$qpn" | grep -q 'state INIT' || fail "idle QP $qpn not in INIT before the attack"

# The thief: connect, then accept, naming QP $qpn, no QP of its own.
rc=0
run_timeout 60 "$LC" thief 192.0.2.1 7498 "$qpn" >kthief.log 2>&1 || rc=$?
sed 's/^/# /' kthief.log
expect_nomatch "$(cat kthief.log)" '^FAIL' "thief"
[ "$rc" = 0 ] || fail "thief exited $rc: $(grep -m1 -E 'FAIL|die|rdma' kthief.log)"
[ "$(grep -c '^ok' kthief.log)" = 2 ] || fail "thief: not both checks ran"

st=$(rdma res show qp lqpn "$qpn" 2>&1)
log "kernel QP $qpn after: $st"
grep -q 'state INIT' <<<"$st" || fail "kernel QP $qpn left INIT: $st"
rmmod xiw_ktest
out=$(dmesg | sed -n "/$mark/,\$p")
expect_match "$(grep 'xiw_ktest: ' <<<"$out")" 'xiw_ktest: PASS idle_untouched$' "xiw_ktest at rmmod"
if [ -w $dyn ]; then
	expect_match "$out" "connect: QP $qpn is a kernel QP" "xiw's reason for the connect"
	expect_match "$out" "accept: QP $qpn is a kernel QP" "xiw's reason for the accept"
fi
log "connect and accept naming a kernel QP refused, the QP untouched"
