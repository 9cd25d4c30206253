#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 300
# description: per-QP counters (rdma statistic qp): manual mode - the client QP of a running rping bound by hand counts exactly the FPDUs and bytes xiw_fpdu_tx/rx traced for that QP while bound, its tx + rx equal the port's growth meanwhile; the port's counters never go back on bind, unbind or QP destruction, a QP bound later keeps counting after the other's unbind; auto mode (auto type on) binds both rdma_cm QPs of a new rping into one counter that holds every FPDU of the connection (= the port's growth); at the end the port counted every traced FPDU once, sysfs agrees
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

need_cmd rping rdma
xiw_loopback

tr=/sys/kernel/tracing
[ -d $tr/events/xiw ] || mount -t tracefs tracefs $tr 2>/dev/null || true
[ -d $tr/events/xiw ] || fail "no events/xiw in tracefs"
inst=$tr/instances/xiw_obs_qpstat
mkdir $inst
defer rmdir $inst
defer eval "echo 0 >$inst/events/xiw/enable"
echo 16384 >$inst/buffer_size_kb
echo 1 >$inst/events/xiw/xiw_fpdu_tx/enable
echo 1 >$inst/events/xiw/xiw_fpdu_rx/enable

hwc=/sys/class/infiniband/xiw0/ports/1/hw_counters
# rdma -j prints an array of flat objects on one line (a counter's
# "lqpn" is the one array inside). jq takes 0.6 s to start under TCG and
# this test polls, so sed and grep read it: jrows puts one object per
# line, jsel ERE keeps the objects that match (none is no error), jnum
# KEY prints KEY's number (or array) of each.
jrows() { sed -e 's/^\[//' -e 's/\]$//' -e 's/},{/}\n{/g'; }
jsel() { grep -E "$1" || true; }
jnum() {
	sed -n -e "s/.*\"$1\":\[\([0-9,]*\)\].*/\1/p; t" \
		-e "s/.*\"$1\":\(-\{0,1\}[0-9]\{1,\}\).*/\1/p"
}
# port NAME: a port counter as rdma(8) shows it (driver value + counters)
port() { rdma -j statistic show link xiw0/1 | jrows | head -n 1 | jnum "$1"; }
# ctr CNTN NAME: a value of rdma counter CNTN
ctr() { rdma -j statistic qp show link xiw0/1 | jrows | jsel "\"cntn\":$1[,}]" | jnum "$2"; }
# cntn_of QPN: the counter QPN is bound to (empty: none)
cntn_of() {
	rdma -j statistic qp show link xiw0/1 | jrows |
		jsel "\"lqpn\":\[([0-9]+,)*$1[],]" | jnum cntn
}
ncounters() { rdma -j statistic qp show link xiw0/1 | jrows | jsel '"cntn":' | wc -l; }
# quiet: wait until the port's FPDU counters stop moving (a stopped
# rping leaves at most its window in flight)
quiet() {
	local a b
	for _ in $(seq 50); do
		a=$(cat $hwc/tx_fpdus)/$(cat $hwc/rx_fpdus)
		sleep 0.2
		b=$(cat $hwc/tx_fpdus)/$(cat $hwc/rx_fpdus)
		[ "$a" != "$b" ] || return 0
	done
	fail "traffic does not stop: $a $b"
}
# no_drop WHAT: the port's tx_fpdus and tx_bytes did not go back
last=0 lastb=0
no_drop() {
	local now nowb
	now=$(port tx_fpdus) nowb=$(port tx_bytes)
	[ "$now" -ge "$last" ] || fail "port tx_fpdus went back from $last to $now ($1)"
	[ "$nowb" -ge "$lastb" ] || fail "port tx_bytes went back from $lastb to $nowb ($1)"
	last=$now lastb=$nowb
}
# mark NAME: a marker line in the trace; traced DIR QPN FROM [TO]: the
# "FPDUs bytes" of xiw_fpdu_DIR events of QP QPN between two markers.
# An FPDU's bytes on the wire: the MPA length field (2), the ULPDU (len),
# pad to a multiple of 4, the CRC field (4).
mark() { echo "XIWMARK $1" >$inst/trace_marker; }
traced() {
	awk -v d="xiw_fpdu_$1:" -v q="qpn=$2" -v from="XIWMARK $3" -v to="XIWMARK ${4:-none}" '
		index($0, from) { on = 1; next }
		index($0, to) { on = 0 }
		on && index($0, " " d " ") && index($0, " " q " ") {
			for (i = 1; i <= NF; i++) if ($i ~ /^len=/) l = substr($i, 5) + 0
			n++; b += 2 + l + (4 - (2 + l) % 4) % 4 + 4
		}
		END { print n + 0, b + 0 }' $inst/trace
}
tx_start=$(cat $hwc/tx_fpdus)
no_drop "start"

# --- manual mode --------------------------------------------------------------
# rping itself in the background (not under timeout(1)): SIGSTOP must
# reach it.
rping -s -a 192.0.2.1 -C 100000 -S 64 >srv.log 2>&1 &
srv=$!
defer eval "kill -CONT $srv 2>/dev/null; kill $srv 2>/dev/null; wait $srv 2>/dev/null || true"
wait_listen 7174 20 $srv
rping -c -a 192.0.2.1 -C 100000 -S 64 >cli.log 2>&1 &
cli=$!
defer eval "kill -CONT $cli 2>/dev/null; kill $cli 2>/dev/null; wait $cli 2>/dev/null || true"
qps() { rdma -j resource show qp link xiw0 | jrows | jsel '"state":"RTS"' | jnum lqpn | sort -n | xargs; }
wait_for 20 eval '[ "$(qps | wc -w)" = 2 ]' || fail "rping QPs: $(rdma resource show qp link xiw0)"
# the client's QP is the one whose process is the client
q1=$(rdma -j resource show qp link xiw0 | jrows | jsel "\"pid\":${cli}[,}]" | jnum lqpn)
q2=$(rdma -j resource show qp link xiw0 | jrows | jsel "\"pid\":${srv}[,}]" | jsel '"state":"RTS"' | jnum lqpn)
[[ $q1 =~ ^[0-9]+$ && $q2 =~ ^[0-9]+$ ]] || fail "client QP '$q1', server QP '$q2': $(rdma resource show qp link xiw0)"
wait_for 20 eval '[ "$(cat $hwc/tx_fpdus)" -gt $((tx_start + 100)) ]' || fail "rping sends nothing"
no_drop "rping running"

# stop the client: traffic ends; bind the client's QP; let it run; stop
kill -STOP $cli
quiet
p0=$(port tx_fpdus) b0=$(port tx_bytes)
no_drop "quiet"
expect_eq "$(port rx_fpdus)" "$p0" "port rx_fpdus = tx_fpdus when quiet"
expect_eq "$(ncounters)" 0 "counters before bind"
rdma statistic qp bind link xiw0/1 lqpn "$q1"
mark bind1
no_drop "QP $q1 bound"
c1=$(cntn_of "$q1")
[[ $c1 =~ ^[0-9]+$ ]] || fail "no counter for QP $q1: $(rdma statistic qp show link xiw0/1)"
expect_eq "$(ctr "$c1" tx_fpdus)/$(ctr "$c1" rx_fpdus)" 0/0 "counter $c1 right after bind"
expect_eq "$(cntn_of "$q2")" "" "QP $q2 (not bound)"
kill -CONT $cli
wait_for 30 eval '[ "$(ctr $c1 tx_fpdus)" -gt 200 ]' ||
	fail "bound QP $q1 does not count: $(rdma statistic qp show link xiw0/1)"
no_drop "traffic while bound"
kill -STOP $cli
quiet
mark stop1
p1=$(port tx_fpdus) b1=$(port tx_bytes)
t1=$(ctr "$c1" tx_fpdus) r1=$(ctr "$c1" rx_fpdus)
tb1=$(ctr "$c1" tx_bytes) rb1=$(ctr "$c1" rx_bytes)
log "while QP $q1 was bound: port tx +$((p1 - p0)) FPDUs +$((b1 - b0)) B; counter $c1: tx $t1 FPDUs $tb1 B, rx $r1 FPDUs $rb1 B"
expect_eq "$(port rx_fpdus)" "$p1" "port rx_fpdus = tx_fpdus when quiet"
# exactly what QP q1 sent and received while bound, as traced
expect_eq "$t1 $tb1" "$(traced tx "$q1" bind1 stop1)" "counter $c1 tx FPDUs and bytes = QP $q1's xiw_fpdu_tx"
expect_eq "$r1 $rb1" "$(traced rx "$q1" bind1 stop1)" "counter $c1 rx FPDUs and bytes = QP $q1's xiw_fpdu_rx"
# one device: what QP q1 received, QP q2 sent; the port counted both QPs
expect_eq $((t1 + r1)) $((p1 - p0)) "QP $q1's tx + rx FPDUs = the port's tx FPDUs meanwhile"
expect_eq $((tb1 + rb1)) $((b1 - b0)) "QP $q1's tx + rx bytes = the port's tx bytes meanwhile"
# the other counters of this QP: no Terminate, no CRC error
expect_eq "$(ctr "$c1" terminates_sent)/$(ctr "$c1" rx_crc_errors)" 0/0 "counter $c1 errors"

# the server's QP bound too, the client's unbound: the port never goes back
rdma statistic qp bind link xiw0/1 lqpn "$q2"
no_drop "QP $q2 bound"
c2=$(cntn_of "$q2")
[[ $c2 =~ ^[0-9]+$ ]] || fail "no counter for QP $q2: $(rdma statistic qp show link xiw0/1)"
expect_ne "$c2" "$c1" "QP $q2's counter (manual bind: a new one)"
rdma statistic qp unbind link xiw0/1 cntn "$c1" lqpn "$q1"
no_drop "QP $q1 unbound"
expect_eq "$(cntn_of "$q1")" "" "QP $q1 after unbind"
expect_eq "$(port tx_fpdus)" "$p1" "port tx_fpdus after bind/unbind while quiet"
v2=$(ctr "$c2" tx_fpdus)
kill -CONT $cli
wait_for 30 eval '[ "$(ctr $c2 tx_fpdus)" -gt $((v2 + 100)) ]' ||
	fail "bound QP $q2 did not count on: $(rdma statistic qp show link xiw0/1)"
no_drop "traffic, QP $q2 bound"
kill $cli $srv
wait $cli $srv 2>/dev/null || true
wait_for 10 eval '[ "$(ncounters)" = 0 ]' ||
	fail "counters left: $(rdma statistic qp show link xiw0/1)"
quiet
no_drop "QPs destroyed"

# --- auto mode: rdma_cm QPs bound at INIT ---------------------------------------
# One rule, "type": every new RC QP of the port goes to one counter. The
# client is stopped before the values are read, so the QPs (and their
# counter) exist and nothing moves.
rdma statistic qp set link xiw0/1 auto type on
defer rdma statistic qp set link xiw0/1 auto off
expect_match "$(rdma statistic qp mode link xiw0/1)" 'qp auto type on' "auto mode"
quiet
pa=$(port tx_fpdus) ba=$(port tx_bytes)
mark auto
rping -s -a 192.0.2.1 -C 100000 -S 64 >srv2.log 2>&1 &
srv=$!
wait_listen 7174 20 $srv
rping -c -a 192.0.2.1 -C 100000 -S 64 >cli2.log 2>&1 &
cli=$!
wait_for 20 eval '[ "$(ncounters)" -ge 1 ] && [ "$(qps | wc -w)" = 2 ]' ||
	fail "auto mode bound no QP: $(rdma statistic qp show link xiw0/1)"
read -r qa qb <<<"$(qps)"
ca=$(cntn_of "$qa")
[[ $ca =~ ^[0-9]+$ ]] || fail "QP $qa not bound in auto mode: $(rdma statistic qp show link xiw0/1)"
expect_eq "$(cntn_of "$qb")" "$ca" "QP $qb's counter (auto type: the same as QP $qa's)"
wait_for 30 eval '[ "$(ctr $ca tx_fpdus)" -gt 200 ]' ||
	fail "auto counter does not count: $(rdma statistic qp show link xiw0/1)"
kill -STOP $cli
quiet
mark stopa
ta=$(ctr "$ca" tx_fpdus) ra=$(ctr "$ca" rx_fpdus)
log "auto: $(rdma statistic qp show link xiw0/1)"
# both ends of the connection in one counter, bound before their first FPDU
expect_eq "$ta" "$ra" "auto counter: tx = rx FPDUs (both ends in it)"
expect_eq "$ta" $(($(port tx_fpdus) - pa)) "auto counter tx FPDUs = the port's growth"
expect_eq "$(ctr "$ca" tx_bytes)" $(($(port tx_bytes) - ba)) "auto counter tx bytes = the port's growth"
read -r na _ <<<"$(traced tx "$qa" auto stopa)"
read -r nb _ <<<"$(traced tx "$qb" auto stopa)"
expect_eq "$ta" $((na + nb)) "auto counter tx FPDUs = both QPs' xiw_fpdu_tx"
kill -CONT $cli
kill $cli $srv
wait $cli $srv 2>/dev/null || true
wait_for 10 eval '[ "$(ncounters)" = 0 ]' ||
	fail "counters left: $(rdma statistic qp show link xiw0/1)"
quiet
no_drop "auto counter released"

# every FPDU counted once on the port: its tx_fpdus grew by the events
# traced, whatever was bound and unbound meanwhile
echo 0 >$inst/events/xiw/enable
for c in /sys/kernel/tracing/instances/xiw_obs_qpstat/per_cpu/cpu*/stats; do
	expect_match "$(cat "$c")" '^overrun: 0$' "trace overrun ($c)"
done
expect_eq "$(grep -c ' xiw_fpdu_tx: ' $inst/trace)" $(($(port tx_fpdus) - tx_start)) \
	"xiw_fpdu_tx events = port tx_fpdus growth"
expect_eq "$(cat $hwc/tx_fpdus)" "$(port tx_fpdus)" "sysfs hw_counters = rdma statistic"
