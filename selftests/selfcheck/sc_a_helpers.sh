#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# topology: 1vm
# timeout: 60
# expect: ok
# description: lib.sh helpers behave
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

expect_eq "$(echo a)" a
expect_ne a b
expect_match $'x\nfoo=12\ny' '^foo=[0-9]+$'
expect_nomatch "abc" 'z'
expect_fail false
expect_fail ip link show nonexistent-dev0
expect_ok true
t0=$(date +%s)
if run_timeout 1 sleep 10; then fail "run_timeout did not stop sleep"; fi
[ $(( $(date +%s) - t0 )) -lt 5 ] || fail "run_timeout too slow"
touch "$XIW_TEST_TMP/flag"
wait_for 3 test -e "$XIW_TEST_TMP/flag" || fail "wait_for missed an existing file"
if wait_for 1 test -e "$XIW_TEST_TMP/never"; then fail "wait_for invented a file"; fi
# wait_listen: a listener is found; a server that ended, or nothing
# listening in time, fails with the server's log shown first.
python3 -c 'import socket, time; s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", 7999)); s.listen(); time.sleep(30)' &
lp=$!
wait_listen 7999 10 $lp
kill $lp
echo "server says: bind failed" >"$XIW_TEST_TMP/srv.log"
out=$( (wait_listen 7998 10 "$(sh -c 'echo $$')" "$XIW_TEST_TMP/srv.log") 2>&1) &&
	fail "wait_listen passed for a server that had ended"
expect_match "$out" '^#   server says: bind failed$'
expect_match "$out" '^FAIL: the server .* ended without listening on TCP port 7998$'
out=$( (wait_listen 7998 1 "" "$XIW_TEST_TMP/srv.log") 2>&1) &&
	fail "wait_listen passed with nothing listening"
expect_match "$out" '^#   server says: bind failed$'
expect_match "$out" '^FAIL: nothing listens on TCP port 7998 after 1s$'
# defer runs at exit: a dummy netdev must be gone after the test (checked by
# sc_cleanup_check, which runs next).
dummy_add scdummy0
ip link show scdummy0 >/dev/null
# A leftover background process is killed by the runner.
sleep 1000 &
echo $! >/tmp/sc-leftover.pid
# Environment the runner promises.
[ -n "$XIW_TEST_NAME" ] && [ -d "$XIW_TEST_TMP" ] && [ -d "$XIW_TEST_OUT" ] || fail "env"
[ "$XIW_ROLE" = single ] || fail "role $XIW_ROLE"
[ -w /tmp ] && [ -w /run ] && [ -w /etc ] || fail "tmpfs/overlay not writable"
[ -e /sys/kernel/debug/kfence/stats ] || fail "no debugfs/kfence"
grep -q 'kfence.sample_interval=' /proc/cmdline || fail "kfence not on the command line"
mountpoint -q /sys/kernel/config || fail "no configfs"
ls /dev/fd/ >/dev/null
log "helpers ok"
