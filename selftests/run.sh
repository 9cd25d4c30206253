#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# xiw VM test runner (host side). Prints TAP.
#
#   selftests/run.sh [options] [TEST...]
#
#   TEST          a test name (selftests/tests/NAME.sh, else
#                 selftests/tests-long/NAME.sh), NAME.sh, or a path to a
#                 test script; none = every test in selftests/tests/
#   --list        list the tests (name, topology, timeout) and exit
#   --selfcheck   run the bench's own fixtures (selftests/selfcheck/) and
#                 check that each gets the verdict it expects
#   -o DIR        where results go (default $XIW_BUILD/selftests/runs/DATE,
#                 with $XIW_BUILD/selftests/latest pointing at it)
#   -e VAR=VAL    export VAR=VAL in the guests (repeatable)
#   -r N          run each selected test N times in a row (in the same boot),
#                 as NAME.1 ... NAME.N; each run is a TAP line of its own
#   -v            copy the guest consoles to stderr while they run
#
# Test protocol (details in selftests/README.md):
#   * A test is a bash script selftests/tests/NAME.sh that sources
#     selftests/lib.sh and exits 0 (pass), 4 (skip) or anything else (fail).
#   * Header comments: "# topology: 1vm|2vm|3vm" (default 1vm), "# timeout: SEC"
#     (default 120), "# description: ...", and for fixtures "# expect: ok|fail|skip"
#     and "# expect-reason: ERE" (matched against the TAP reason).
#   * All 1vm tests share ONE VM boot, run one after the other, each in its
#     own session with its own timeout; all 2vm tests share ONE pair of VMs
#     (same script on both, XIW_ROLE=a|b, barrier before and after each test);
#     all 3vm tests share ONE boot of three VMs (XIW_ROLE=a|b|c, one shared
#     network segment; a VM b or c may power itself off inside a test and
#     is booted again to finish it: lib.sh's xiw_vm_power_cycle).
#     A VM that crashes or hangs fails the test it was in; the tests after
#     it run in a new boot (of the pair), up to XIW_MAX_REBOOTS boots (3).
#     A crash of class emulator (crash_class) instead has the test run
#     once more in that new boot (rerun_plan).
#   * "# pmem: SIZE" (an emulated NVDIMM backed by a file in the run's dir)
#     or "# boots: 2" (lib.sh's xiw_power_off ends boot 1; the VM boots
#     again on the same NVDIMM file and the test runs once more with
#     XIW_BOOT=2): a 1vm test that runs in a VM of its own, after the
#     shared 1vm boot; its module_unload is module_unload_NAME.
#   * A test fails if it exits non-zero (4 = skip), times out, or if the
#     kernel log written while it ran has a splat (WARNING:, BUG:, Oops,
#     KFENCE, refcount_t, list corruption, UBSAN, KASAN, hung task, RCU
#     stall, Call Trace:, ...) or the kernel got a new B/D/W/L taint, or
#     when a deferred cleanup command failed or it left RDMA links or
#     netdevs behind. Its "# retry: ..." lines are shown under its TAP line.
#   * After the tests of each boot, "module_unload" (2vm: "module_unload_2vm",
#     3vm: "module_unload_3vm")
#     rmmods xiw if it is loaded (a failure = a leak) and scans the log again;
#     it is skipped when xiw was never loaded.
#   * A skip says why: exit status 4 without a "SKIP: why" line in the
#     test's log fails. A skip of a test not on the allow-list
#     (selftests/skip-allow.txt, or $XIW_SKIP_ALLOW; the selfcheck's:
#     selftests/selfcheck/skip-allow.txt) fails too.
#   * Output: TAP version 13 on stdout, the last line "N passed, N failed,
#     N skipped"; exit status 1 if any test failed.
#
# Environment: XIW_BUILD (default <repo>/build), XIW_KO (default
# <repo>/kernel/xiw.ko), KERNEL / XIW_KVER (kernel to boot; with XIW_KVER
# the modules default to those of "make kernel ktest KVER=$XIW_KVER":
# XIW_KO=$XIW_BUILD/kver/$XIW_KVER/kernel/xiw.ko, XIW_KTEST_KO likewise;
# the kernel XIW_KO was built for must be the one booted), XIW_KFENCE,
# XIW_VM_MEM, XIW_VM_SMP (see vm/vm.sh), XIW_VM_SMP_2VM (the vCPUs of each
# VM of the 2vm topology: XIW_VM_SMP if set, else 1; two 2-vCPU TCG VMs on
# a 2-core host run four vCPU threads on two cores, and booted and ran
# the 2vm tests about a quarter slower), XIW_VM_SMP_3VM (likewise for the
# three VMs of the 3vm topology, default 1), XIW_VM_MEM_3VM (MiB of each of
# them, default 1536), XIW_UNLOAD_MODULES (default xiw),
# XIW_VM_BOOT_S (boot allowance added to the VM's hard timeout, default 240),
# XIW_TEST_TIMEOUT (a floor for every selected test's timeout, seconds).
# Every other XIW_* variable is passed on to the guests (XIW_KO_PARAMS,
# XIW_MOD, XIW_LINK_TYPE, XIW_LINK_CYCLES, ...; see selftests/README.md).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
export XIW_ROOT=$repo
export XIW_BUILD=${XIW_BUILD:-$repo/build}
case $XIW_BUILD in /*) ;; *) XIW_BUILD=$PWD/$XIW_BUILD ;; esac
if [ -n "${XIW_KVER:-}" ]; then
	export XIW_KO=${XIW_KO:-$XIW_BUILD/kver/$XIW_KVER/kernel/xiw.ko}
	export XIW_KTEST_KO=${XIW_KTEST_KO:-$XIW_BUILD/kver/$XIW_KVER/selftests/kmod/xiw_ktest.ko}
fi
export XIW_KO=${XIW_KO:-$repo/kernel/xiw.ko}
case $XIW_KO in /*) ;; *) XIW_KO=$PWD/$XIW_KO ;; esac

list=0 selfcheck=0 verbose=0 outdir= repeat=1
guest_env=()
names=()
while [ $# -gt 0 ]; do
	case $1 in
	--list|-l) list=1 ;;
	--selfcheck) selfcheck=1 ;;
	-o) outdir=$2; shift ;;
	-e) guest_env+=("$2"); shift ;;
	-r) repeat=$2; shift
	    [[ $repeat =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: -r needs a count >= 1" >&2; exit 2; } ;;
	-v) verbose=1 ;;
	-h|--help) sed -n '3,/^set -uo/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//;$d'; exit 0 ;;
	-*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
	*) names+=("$1") ;;
	esac
	shift
done

testdir=$here/tests
[ $selfcheck = 1 ] && testdir=$here/selfcheck

# header FILE KEY DEFAULT
header() {
	local v
	v=$(sed -n "1,30s/^# *$2: *//p" "$1" | head -n 1 | tr -d '[:space:]')
	echo "${v:-$3}"
}

# --- select the tests ------------------------------------------------------------
files=()
if [ ${#names[@]} = 0 ]; then
	for f in "$testdir"/*.sh; do [ -e "$f" ] && files+=("$f"); done
else
	for n in "${names[@]}"; do
		if [ -f "$n" ]; then f=$(cd "$(dirname "$n")" && pwd)/$(basename "$n")
		elif [ -f "$testdir/$n" ]; then f=$testdir/$n
		elif [ -f "$testdir/$n.sh" ]; then f=$testdir/$n.sh
		elif [ $selfcheck = 0 ] && [ -f "$here/tests-long/$n.sh" ]; then
			f=$here/tests-long/$n.sh
		else echo "run.sh: no test '$n' in $testdir" >&2; exit 2
		fi
		files+=("$f")
	done
fi
t1=() t2=() t4=()	# "name<TAB>timeout<TAB>path" per topology (t4: 3vm)
t3=()		# own VM: "name<TAB>timeout<TAB>path<TAB>pmem size or -<TAB>boots"
declare -A expect=() expect_reason=()
for f in "${files[@]}"; do
	n=$(basename "$f" .sh)
	expect_reason[$n]=$(sed -n '1,30s/^# *expect-reason: *//p' "$f" | head -n 1)
	topo=$(header "$f" topology 1vm)
	to=$(header "$f" timeout 120)
	# XIW_TEST_TIMEOUT=SEC raises every selected test's timeout to at
	# least SEC (long runs of a test that reads its length from the
	# environment, e.g. make fuzz-live)
	if [[ ${XIW_TEST_TIMEOUT:-} =~ ^[0-9]+$ ]] && [ "$XIW_TEST_TIMEOUT" -gt "$to" ]; then
		to=$XIW_TEST_TIMEOUT
	fi
	expect[$n]=$(header "$f" expect ok)
	pm=$(header "$f" pmem -)
	sd=$(header "$f" shared-disk -)
	if [ "$sd" != - ]; then
		[ "$topo" = 3vm ] || { echo "run.sh: $f: shared-disk goes with topology 3vm only" >&2; exit 2; }
		[[ $sd =~ ^[0-9]+[MG]$ ]] || { echo "run.sh: $f: shared-disk size '$sd' (e.g. 64M)" >&2; exit 2; }
		sd=${sd/G/*1024}; sd=$(( ${sd%M} ))
		[ "$sd" -le "${disk3_mb:-0}" ] || disk3_mb=$sd
	fi
	boots=$(header "$f" boots 1)
	case $boots in 1|2) ;; *) echo "run.sh: $f: boots must be 1 or 2" >&2; exit 2 ;; esac
	if [ "$pm" != - ] || [ "$boots" != 1 ]; then
		[ "$topo" = 1vm ] || { echo "run.sh: $f: pmem/boots go with topology 1vm only" >&2; exit 2; }
		[[ $pm =~ ^(-|[0-9]+[MG])$ ]] || { echo "run.sh: $f: pmem size '$pm' (e.g. 512M)" >&2; exit 2; }
		t3+=("$n"$'\t'"$to"$'\t'"$f"$'\t'"$pm"$'\t'"$boots")
		continue
	fi
	case $topo in
	1vm) t1+=("$n"$'\t'"$to"$'\t'"$f") ;;
	2vm) t2+=("$n"$'\t'"$to"$'\t'"$f") ;;
	3vm) t4+=("$n"$'\t'"$to"$'\t'"$f") ;;
	*) echo "run.sh: $f: unknown topology '$topo'" >&2; exit 2 ;;
	esac
done
if [ $list = 1 ]; then
	for l in "${t1[@]}" "${t2[@]}" "${t4[@]}" "${t3[@]}"; do
		IFS=$'\t' read -r n to f pm boots <<<"$l"
		topo=$(header "$f" topology 1vm)
		[ -z "${pm:-}" ] || [ "$pm" = - ] || topo+="+pmem"
		[ "${boots:-1}" = 1 ] || topo+="+reboot"
		printf '%-24s %-16s %4ss  %s\n' "$n" "$topo" "$to" \
			"$(sed -n '1,30s/^# *description: *//p' "$f" | head -n 1)"
	done
	exit 0
fi
[ ${#files[@]} -gt 0 ] || { echo "run.sh: no tests" >&2; exit 2; }
# -r N: every test N times in a row, as NAME.1 .. NAME.N
if [ "$repeat" -gt 1 ]; then
	[ $selfcheck = 0 ] || { echo "run.sh: -r does not go with --selfcheck" >&2; exit 2; }
	expand() {
		local l n rest k
		for l; do
			n=${l%%$'\t'*} rest=${l#*$'\t'}
			for ((k = 1; k <= repeat; k++)); do
				printf '%s\n' "$n.$k"$'\t'"$rest"
			done
		done
	}
	[ ${#t1[@]} = 0 ] || mapfile -t t1 < <(expand "${t1[@]}")
	[ ${#t2[@]} = 0 ] || mapfile -t t2 < <(expand "${t2[@]}")
	[ ${#t3[@]} = 0 ] || mapfile -t t3 < <(expand "${t3[@]}")
	[ ${#t4[@]} = 0 ] || mapfile -t t4 < <(expand "${t4[@]}")
fi

# Each test runs through selftests/Makefile's run_tests (kselftest's
# runner) in the VM; its layout under the build tree is made here, once.
make -s --no-print-directory -C "$here" ksft_stage BUILD="$XIW_BUILD" || exit 2

# --- results dir -------------------------------------------------------------------
if [ -z "$outdir" ]; then
	outdir=$XIW_BUILD/selftests/runs/$(date +%Y%m%d-%H%M%S)-$$
	mkdir -p "$outdir"
	ln -sfn "$outdir" "$XIW_BUILD/selftests/latest"
	# Keep the last 20 runs.
	find "$XIW_BUILD/selftests/runs" -mindepth 1 -maxdepth 1 -type d -printf '%T@ %p\n' |
		sort -rn | tail -n +21 | cut -d' ' -f2- | while read -r old; do rm -rf "$old"; done
fi
mkdir -p "$outdir"
outdir=$(cd "$outdir" && pwd)
run_id=$(date +%s)-$$

# A module built for another kernel than the one booted cannot load:
# say so here rather than in every test.
boot_kver=${XIW_KVER:-}
[ -n "$boot_kver" ] || [ -z "${KERNEL:-}" ] || boot_kver=${KERNEL##*/vmlinuz-}
[ -n "$boot_kver" ] || boot_kver=$(ls -1 /boot/vmlinuz-6.12.* 2>/dev/null |
	sed 's|^/boot/vmlinuz-||' | sort -V | tail -n 1)
for ko in "$XIW_KO" "${XIW_KTEST_KO:-$repo/selftests/kmod/xiw_ktest.ko}"; do
	[ -f "$ko" ] && [ -n "$boot_kver" ] || continue
	vm=$(modinfo -F vermagic "$ko" 2>/dev/null | cut -d' ' -f1)
	if [ -n "$vm" ] && [ "$vm" != "$boot_kver" ]; then
		echo "run.sh: $ko is built for $vm, the VM boots $boot_kver" \
			"(make kernel ktest KVER=$boot_kver, then XIW_KVER=$boot_kver or XIW_KO=...)" >&2
		exit 2
	fi
done

# The initramfs is built (or found in its cache) once, up front.
if ! "$here/vm/mkinitramfs.sh" >/dev/null; then
	echo "run.sh: cannot build the VM initramfs" >&2
	exit 1
fi

# --- TAP output ------------------------------------------------------------------------
n_total=$(( ${#t1[@]} + ${#t2[@]} + ${#t4[@]} + (${#t1[@]} > 0) + (${#t2[@]} > 0) + (${#t4[@]} > 0) + 2 * ${#t3[@]} ))
tapno=0 n_pass=0 n_fail=0 n_skip=0
declare -A verdict=() reasons=()
pfx=	# "# " in selfcheck mode: the inner TAP becomes comments
echo "TAP version 13"
[ $selfcheck = 1 ] && pfx="# "
echo "${pfx}1..$n_total"

# retries NAME: the "# retry: ..." lines of NAME's logs in the VM dirs of
# the group being reported ($emit_dirs), as TAP comments ([a]/[b]/[c]),
# its "# tool: ..." lines (a named tool-side failure that was not held
# against the test, e.g. lib.sh's rping_status) and its "# left: ..." line
# (processes the test left running, killed by the guest's runner); sets
# n_retries (the retries only).
emit_dirs=()
retries() {
	local d side lines
	n_retries=0 retry_lines=
	for d in "${emit_dirs[@]}"; do
		side=
		[ ${#emit_dirs[@]} -gt 1 ] && side="[$(basename "$d")] "
		lines=$(grep -E '^# (retry|tool|left): ' "$d/tests/$1.log" 2>/dev/null | sed "s/^# /${pfx}# $side/")
		[ -n "$lines" ] || continue
		n_retries=$(( n_retries + $(grep -c '# retry: ' <<<"$lines" || true) ))
		retry_lines+="$lines"$'\n'
	done
}

# The skip allow-list: a skip of a test not on it is a failure. Lines
# "NAME | SKIP-REASON-ERE | why it may skip" (NAME a bash pattern; a
# skip matches when its reason matches the ERE); "#" comments. The
# selfcheck's fixtures have a list of their own.
skip_allow=${XIW_SKIP_ALLOW:-$here/skip-allow.txt}
[ $selfcheck = 0 ] || skip_allow=${XIW_SKIP_ALLOW:-$here/selfcheck/skip-allow.txt}
allow_pat=() allow_re=()
if [ -f "$skip_allow" ]; then
	while IFS='|' read -r a_n a_re _; do
		a_n=${a_n//[[:space:]]/}
		[ -n "$a_n" ] && [[ $a_n != \#* ]] || continue
		a_re=${a_re#"${a_re%%[![:space:]]*}"} a_re=${a_re%"${a_re##*[![:space:]]}"}
		allow_pat+=("$a_n") allow_re+=("$a_re")
	done <"$skip_allow"
elif [ -n "${XIW_SKIP_ALLOW:-}" ]; then
	echo "run.sh: no skip allow-list $skip_allow" >&2; exit 2
fi
# skip_allowed NAME REASON: NAME (without -r's ".K") may skip for REASON.
skip_allowed() {
	local n=$1 i
	[[ $n =~ ^(.*)\.[0-9]+$ ]] && n=${BASH_REMATCH[1]}
	for i in "${!allow_pat[@]}"; do
		# shellcheck disable=SC2053 # a pattern on purpose
		[[ $n == ${allow_pat[i]} ]] || continue
		[ -z "${allow_re[i]}" ] || grep -qE -- "${allow_re[i]}" <<<"$2" || continue
		return 0
	done
	return 1
}

# emit NAME STATUS SECONDS REASON LOGFILE...
emit() {
	local name=$1 st=$2 secs=$3 reason=$4 f n_retries retry_lines rnote=
	shift 4
	if [ "$st" = skip ] && ! skip_allowed "$name" "$reason"; then
		st=fail
		reason="skip not on the allow-list (${skip_allow#"$repo"/}): ${reason:-no reason}"
	fi
	tapno=$((tapno + 1))
	verdict[$name]=$st reasons[$name]=$reason
	retries "$name"
	case $n_retries in
	0) ;;
	1) rnote=", 1 retry" ;;
	*) rnote=", $n_retries retries" ;;
	esac
	[ -z "${emu_rerun[$name]:-}" ] ||
		rnote+=", run again after an emulator fault in the boot before (${emu_rerun[$name]})"
	case $st in
	ok) n_pass=$((n_pass + 1)); echo "${pfx}ok $tapno - $name # ${secs}s$rnote"
	    printf '%s' "$retry_lines" ;;
	skip) n_skip=$((n_skip + 1)); echo "${pfx}ok $tapno - $name # SKIP ${reason:-skipped}"
	      printf '%s' "$retry_lines" ;;
	*) n_fail=$((n_fail + 1))
	   echo "${pfx}not ok $tapno - $name # ${secs}s${reason:+ $reason}$rnote"
	   printf '%s' "$retry_lines"
	   for f in "$@"; do
		[ -s "$f" ] || continue
		case $f in
		*/console.log)
			# Once per VM: from the first splat, else the end.
			[ -z "${shown[$f]:-}" ] || { echo "${pfx}# (console: see above)"; continue; }
			shown[$f]=1
			echo "${pfx}# ---- ${f#"$outdir"/} ----"
			console_excerpt "$f" | sed "s/^/${pfx}# /" ;;
		*)
			echo "${pfx}# ---- tail of ${f#"$outdir"/} ----"
			tail -n 25 "$f" | sed "s/^/${pfx}# /" ;;
		esac
	   done ;;
	esac
}

declare -A shown=()
splat_re='Kernel panic|BUG:|Oops|WARNING:|general protection|kernel BUG|KFENCE|Call Trace:|hung_task|blocked for more than'
# console_excerpt FILE: 40 lines from a little before the first kernel splat
# (else the last 25 lines).
console_excerpt() {
	local n
	n=$(tr -d '\r' <"$1" | grep -nE -- "$splat_re" | grep -v 'Command line:' |
		head -n 1 | cut -d: -f1)
	if [ -n "$n" ]; then
		tr -d '\r' <"$1" | sed -n "$(( n > 3 ? n - 3 : 1 )),$(( n + 36 ))p"
	else
		tr -d '\r' <"$1" | tail -n 25
	fi
}

# vm_timeout PLANLINES...: hard limit for one boot.
vm_timeout() {
	local s=${XIW_VM_BOOT_S:-240} l to
	for l; do
		IFS=$'\t' read -r _ to _ <<<"$l"
		s=$(( s + to + 30 ))
	done
	echo $s
}

[ $selfcheck = 1 ] && : "${XIW_UNLOAD_MODULES:=configfs}"
# The guests get every XIW_* variable of the host, then the -e ones.
envargs=()
while IFS= read -r v; do
	case $v in XIW_VM_*|XIW_KVER|XIW_QEMU|XIW_KFENCE) continue ;; esac
	envargs+=(-e "$v=${!v}")
done < <(compgen -e | grep '^XIW_')
envargs+=(-e "XIW_ROOT=$repo" -e "XIW_RUN_ID=$run_id"
	-e "XIW_UNLOAD_MODULES=${XIW_UNLOAD_MODULES:-${XIW_MOD:-xiw}}")
for kv in "${guest_env[@]}"; do envargs+=(-e "$kv"); done

# follow: print results as the guests write them. Args: OUT dirs of the VMs
# of one group; TAP lines are emitted when every VM has a result for a test.
declare -A printed=()
follow_once() {
	local d name st secs reason line all_st all_reason all_secs missing logs
	local first=$1
	emit_dirs=("$@")
	while IFS=$'\t' read -r name st secs reason; do
		[ -n "$name" ] && [ -z "${printed[$name]:-}" ] || continue
		all_st=$st all_reason='' all_secs=$secs missing=0 logs=()
		for d in "$@"; do
			line=$(awk -F'\t' -v n="$name" '$1 == n' "$d/results" 2>/dev/null | tail -n 1)
			[ -n "$line" ] || { missing=1; break; }
			IFS=$'\t' read -r _ st secs reason <<<"$line"
			local side=
			[ $# -gt 1 ] && side="[$(basename "$d")] "
			case $st in
			fail) all_st=fail; all_reason="${all_reason:+$all_reason; }$side$reason"
			      logs+=("$d/tests/$name.log") ;;
			skip) [ "$all_st" = fail ] || all_st=skip
			      all_reason="${all_reason:+$all_reason; }$side$reason" ;;
			esac
			[ "${secs%.*}" -gt "${all_secs%.*}" ] 2>/dev/null && all_secs=$secs
		done
		[ $missing = 0 ] || continue
		printed[$name]=1
		emit "$name" "$all_st" "$all_secs" "$all_reason" "${logs[@]}"
	done < <(cat "$first/results" 2>/dev/null)
}

# finish_group NAMES -- OUTDIRS: tests without a result from every VM failed
# (crash, hang, stopped); say what each VM has.
finish_group() {
	local names=() dirs=() n d why line st reason side
	while [ "$1" != -- ]; do names+=("$1"); shift; done
	shift
	dirs=("$@")
	follow_once "${dirs[@]}"
	emit_dirs=("${dirs[@]}")
	for n in "${names[@]}"; do
		[ -z "${printed[$n]:-}" ] || continue
		printed[$n]=1
		why='' tails=()
		for d in "${dirs[@]}"; do
			side=
			[ ${#dirs[@]} -gt 1 ] && side="[$(basename "$d")] "
			line=$(awk -F'\t' -v n="$n" '$1 == n' "$d/results" 2>/dev/null | tail -n 1)
			if [ -n "$line" ]; then
				IFS=$'\t' read -r _ st _ reason <<<"$line"
				why+="${why:+; }$side$st${reason:+: $reason}"
				[ "$st" != fail ] || tails+=("$d/tests/$n.log")
				continue
			fi
			if [ -s "$d/vm-status" ] && [ "$(cat "$d/vm-status")" = 124 ]; then
				why+="${why:+; }${side}no result: the VM hit its hard timeout"
			elif [ -f "$d/power-cycle" ] && [ ! -f "$d/done" ]; then
				why+="${why:+; }${side}no result: powered off by the test (xiw_vm_power_cycle), not booted again after a peer VM died"
			elif [ -f "$d/peer-died" ] && [ ! -f "$d/done" ]; then
				why+="${why:+; }${side}no result: stopped after the peer VM died"
			else
				why+="${why:+; }${side}no result: the VM crashed, hung or was killed$(crash_summary "$d")"
			fi
			[ -f "$d/done" ] || tails+=("$d/console.log")
			[ -s "$d/tests/$n.log" ] && tails+=("$d/tests/$n.log")
		done
		emit "$n" fail 0 "$why" "${tails[@]}"
	done
}

# The lines that open a kernel's report of its crash (crash_summary,
# stale_int3).
report_re='Oops|BUG|PANIC|Kernel panic|double fault|general protection'

# crash_summary OUTDIR: what the console and qemu say of a VM that died
# mid-suite, as " (...)" or nothing: the first Oops/BUG/panic line, the
# function it hit, whether any frame of the trace is xiw's (or siw's),
# qemu's own assertion, and a class (crash_class) that tells whose the
# crash most likely is. The console log stays the evidence.
crash_summary() {
	local con=$1/console.log first rip frames q

	first=$(tr -d '\r' <"$con" 2>/dev/null | grep -v 'ommand line:' |
		grep -m1 -E "$report_re" |
		sed -E 's/^\[ *[0-9.]+\] //' | cut -c1-100)
	rip=$(tr -d '\r' <"$con" 2>/dev/null | grep -m1 -E 'RIP: [0-9]+:' |
		sed -E 's/.*RIP: [0-9]+://; s/ .*//')
	frames=$(tr -d '\r' <"$con" 2>/dev/null |
		grep -oE '\[(xiw|siw)\]' | sort -u | tr -d '[]' | tr '\n' ',')
	q=$(qemu_assertion "$1")
	[ -n "$first$q" ] || return 0
	printf ' (%s%s; module frames in the trace: %s%s; class: %s)' \
		"${first:-no kernel report}" "${rip:+ at $rip}" "${frames%,}" \
		"${q:+; qemu: $q}" "$(crash_class "$1" "$frames" "$q")" |
		sed 's/trace: )/trace: none)/; s/trace: ;/trace: none;/'
}

# qemu_assertion OUTDIR: qemu's own assertion message, if it aborted so.
qemu_assertion() {
	grep -m1 -E 'Assertion' "$1/qemu.log" 2>/dev/null | cut -c1-100
}

# stale_int3 CONSOLE: when the first report is "Oops: int3", the byte
# the trap was taken on as the code dump shows it (the one before the
# <..> one: an int3's RIP is the next byte) if it is not 0xcc, else
# nothing. A CPU cannot trap on an int3 that memory does not hold once
# text_poke_bp() has synchronised every CPU; TCG did (CI, ulp_nvmeof:
# "Code: ... eb <5a>" at ttwu_do_activate+0x8d, a tracepoint's jump).
stale_int3() {
	tr -d '\r' <"$1" 2>/dev/null | grep -v 'ommand line:' | awk -v re="$report_re" '
		!rep && $0 ~ re {
			rep = 1; if ($0 !~ /Oops: int3/) exit }
		rep && /Code: / {
			for (i = 2; i <= NF; i++)
				if ($i ~ /^</ && $(i - 1) ~ /^[0-9a-f][0-9a-f]$/) {
					if ($(i - 1) != "cc") print $(i - 1)
					exit
				}
			exit
		}'
}

# crash_class OUTDIR FRAMES QEMU_ASSERTION: whose crash it most likely is.
#   emulator   qemu asserted, or the first register dump holds an RFLAGS
#              no x86 CPU can push (bit 1 clear, or a reserved bit set:
#              3, 5, 15, 22-63), as a double fault from TCG does
#              or an int3 Oops whose code dump shows the byte it trapped
#              on as anything but int3 (0xcc): the vCPU ran a stale
#              translation of text that text_poke_bp() had already
#              finished patching (stale_int3)
#   stack      the kernel saw a stack guard page hit (a stack overflow)
#   xiw, siw   a frame of that module is in the trace (xiw first)
#   kernel     none of these (sysrq, another subsystem)
crash_class() {
	local con=$1/console.log fl byte
	if [ -n "$3" ]; then
		echo emulator
		return
	fi
	fl=$(tr -d '\r' <"$con" 2>/dev/null | grep -m1 -oE 'EFLAGS: [0-9a-f]+' |
		sed 's/EFLAGS: //')
	if [ -n "$fl" ] && [ ${#fl} -le 16 ] &&
		(( (0x$fl & 0x2) == 0 || (0x$fl & 0xffffffffffc08028) != 0 )); then
		echo "emulator (RFLAGS $fl)"
	elif byte=$(stale_int3 "$con") && [ -n "$byte" ]; then
		echo "emulator (int3 on $byte)"
	elif grep -q 'stack guard page was hit' "$con" 2>/dev/null; then
		echo stack
	elif [[ ",$2" == *,xiw,* ]]; then
		echo xiw
	elif [[ ",$2" == *,siw,* ]]; then
		echo siw
	else
		echo kernel
	fi
}

plan_names() {
	local l
	for l; do echo "${l%%$'\t'*}"; done
}

# stop_vm OUTDIR: stop a running VM (vm.sh leaves OUTDIR/qemu.pid).
stop_vm() {
	local p
	p=$(cat "$1/qemu.pid" 2>/dev/null) || return 0
	[ -n "$p" ] && kill -TERM "$p" 2>/dev/null
	return 0
}
vm_dirs=()
on_signal() {
	local d
	for d in "${vm_dirs[@]}"; do stop_vm "$d"; done
	echo "run.sh: interrupted" >&2
	exit 130
}
trap on_signal INT TERM HUP

verbose_opt=()
[ $verbose = 1 ] && verbose_opt=(-v)
start_all=$(date +%s)
# host_busy_s: CPU seconds the host spent busy since boot, all CPUs
host_busy_s() {
	awk -v hz="$(getconf CLK_TCK)" '$1 == "cpu" {
		printf "%.2f\n", ($2 + $3 + $4 + $7 + $8 + $9) / hz; exit }' /proc/stat
}
host_busy0=$(host_busy_s)

# boot_s OUTDIR: guest uptime when its suite started.
boot_s() {
	tr -d '\r' <"$1/console.log" 2>/dev/null |
		sed -n 's/^xiw-suite.*uptime \([0-9.]*\) s$/\1/p' | head -n 1
}

# boot_failed OUTDIR: the guest died before its suite started (xiw was never
# loaded: an emulator or early-boot failure, e.g. TCG's occasional int3 Oops
# in patched kernel text, or a qemu assertion).
boot_failed() {
	[ "$(cat "$1/vm-status")" != 0 ] && [ -z "$(boot_s "$1")" ]
}
# boot_again OUTDIR: keep the failed boot as OUTDIR.boot1 and say so.
boot_again() {
	local why
	# (not the command line's panic=-1)
	why=$(cat "$1/console.log" "$1"/[abc]/console.log 2>/dev/null | tr -d '\r' | grep -v 'ommand line:' |
		grep -m1 -E 'Oops|BUG|panic|Kernel panic|KVM internal error' || true)
	# qemu's own end (TCG once asserted in its MSI-X table emulation
	# while the kernel was still decompressing) is in qemu.log
	[ -n "$why" ] || why=$(grep -m1 -E 'Assertion|qemu-system' "$1/qemu.log" 2>/dev/null || true)
	echo "# ${1#"$outdir"/}: the guest died before its suite started (${why:-no console}); booting once more (${1#"$outdir"/}.boot1 keeps the failed boot)"
	rm -rf "$1.boot1"
	mv "$1" "$1.boot1"
}

# crash_index DIR... -- PLANLINE...: when a VM of a group ended without
# reaching its end (no DIR/done: a crash, a hang, or stopped because its
# peer died), the index among the PLANLINEs of the test it died in (the
# first one without a result from every VM). Prints nothing when every
# VM got to its end or every test has its results.
MAX_SEGMENTS=${XIW_MAX_REBOOTS:-3}
crash_index() {
	local dirs=() d l n have crashed=0 i=0
	while [ "$1" != -- ]; do dirs+=("$1"); shift; done
	shift
	for d in "${dirs[@]}"; do [ -f "$d/done" ] || crashed=1; done
	[ $crashed = 1 ] || return 0
	for l; do
		n=${l%%$'\t'*} have=1
		for d in "${dirs[@]}"; do
			awk -F'\t' -v n="$n" '$1 == n { f = 1 } END { exit !f }' \
				"$d/results" 2>/dev/null || have=0
		done
		[ $have = 1 ] || { echo "$i"; return 0; }
		i=$((i + 1))
	done
}

# emulator_fault DIR...: the crash class (crash_class) of the first VM of
# the group that ended without reaching its end if that class is
# "emulator ..." (qemu asserted, or the register dump holds an RFLAGS no
# x86 CPU can hold); nothing otherwise.
emulator_fault() {
	local d cls
	for d; do
		[ -f "$d/done" ] && continue
		cls=$(crash_class "$d" "" "$(qemu_assertion "$d")")
		[[ $cls == emulator* ]] && { echo "$cls"; return 0; }
	done
}

# rerun_plan DIR... -- PLANLINE...: after a VM of the group ended early,
# sets victim (the test it died in) and rest (the plan lines for the next
# boot: those after the victim; both empty when nothing is left to run).
# A victim of an emulator fault leads rest, to run once more: such a
# fault says nothing of the test, the same policy as boot_again's for a
# guest that dies before its suite starts. Once per run
# (XIW_EMULATOR_RERUNS, 1), never in the group's last boot, and never
# twice for one test: a test that faults so again fails.
emu_reruns=${XIW_EMULATOR_RERUNS:-1}
declare -A emu_rerun=()
rerun_plan() {
	local dirs=() lines i cls
	while [ "$1" != -- ]; do dirs+=("$1"); shift; done
	shift
	lines=("$@")
	rest=() victim='' rerun_why='' rerun_name=''
	i=$(crash_index "${dirs[@]}" -- "${lines[@]}")
	[ -n "$i" ] || return 0
	victim=${lines[i]%%$'\t'*}
	rest=("${lines[@]:i + 1}")
	[ "$emu_reruns" -gt 0 ] && [ "$seg" != "$MAX_SEGMENTS" ] &&
		[ -z "${emu_rerun[$victim]:-}" ] || return 0
	cls=$(emulator_fault "${dirs[@]}")
	[ -n "$cls" ] || return 0
	rest=("${lines[i]}" "${rest[@]}")
	emu_reruns=$((emu_reruns - 1))
	emu_rerun[$victim]=$cls rerun_name=$victim
	rerun_why=" of an emulator fault (class: $cls); booting again to run $victim once more and the $(( ${#rest[@]} - 1 )) tests after it"
}

# host_tsc_khz: the host's TSC frequency in kHz, from its kernel log (the
# refined calibration, else the first one), else nothing. Under TCG a
# guest's TSC is the host's. A guest calibrates it against the PIT, and
# under load that count goes wrong: with three VMs booting at once one
# took the PIT's 136.5 MHz over the HPET's 2594 MHz ("PIT calibration
# deviates from HPET"), and with tsc=reliable its clocks then ran 19
# times fast (a soft lockup "stuck for 24s" after a second, every timeout
# cut short), and a busy host made a two-VM bench's clock run 2.9 times
# fast (perf_2vm's clock_ratio). tsc_early_khz= gives every guest the
# host's figure instead (XIW_VM_TSC_KHZ overrides it; empty: calibrate).
host_tsc_khz() {
	local l
	l=$(dmesg 2>/dev/null | grep -E 'tsc: (Refined TSC clocksource calibration|Detected) [0-9.]+ MHz' |
		sort -t: -k2 | tail -n 1)	# "Refined" sorts after "Detected"
	[[ $l =~ ([0-9]+)\.([0-9]{3})\ MHz ]] || return 0
	echo "${BASH_REMATCH[1]}${BASH_REMATCH[2]}"
}
vm_tsc=${XIW_VM_TSC_KHZ-$(host_tsc_khz)}
tsc_opt=()
[ -z "$vm_tsc" ] || tsc_opt=(-a "tsc_early_khz=$vm_tsc")

# --- one VM: every 1vm test -------------------------------------------------------------
# A VM that dies mid-suite fails the test it died in; the tests after it
# run in a new boot (1vm.2, ...; at most $MAX_SEGMENTS boots in all).
if [ ${#t1[@]} -gt 0 ]; then
	g0=$(date +%s)
	plan=("${t1[@]}")
	rerun_name=
	for seg in $(seq "$MAX_SEGMENTS"); do
	d=$outdir/1vm
	[ "$seg" = 1 ] || d+=".$seg"
	for boot in 1 2; do
	rm -rf "$d"; mkdir -p "$d"
	vm_dirs=("$d")
	printf '%s\n' "${plan[@]}" >"$d/plan"
	"$here/vm/vm.sh" "${verbose_opt[@]}" "${tsc_opt[@]}" -o "$d" -t "$(vm_timeout "${plan[@]}")" \
		"${envargs[@]}" -e XIW_EMULATOR_RERUN="$rerun_name" -e XIW_ROLE=single "$here/vm/guest-suite.sh" \
		>"$d/vm.out" 2>&1 &
	vpid=$!
	while kill -0 $vpid 2>/dev/null; do
		follow_once "$d"
		sleep 1
	done
	wait $vpid; echo $? >"$d/vm-status"
	boot_failed "$d" && [ $boot = 1 ] && { boot_again "$d"; continue; }
	break
	done
	rerun_plan "$d" -- "${plan[@]}"
	mapfile -t nl < <(plan_names "${plan[@]}")
	if [ ${#rest[@]} = 0 ] || [ "$seg" = "$MAX_SEGMENTS" ]; then
		finish_group "${nl[@]}" module_unload -- "$d"
		break
	fi
	mapfile -t nl < <(plan_names "${plan[@]:0:$(( ${#plan[@]} - ${#rest[@]} ))}")
	finish_group "${nl[@]}" -- "$d"
	echo "# ${d#"$outdir"/}: the VM died in $victim${rerun_why:-; booting again for the ${#rest[@]} tests after it}"
	plan=("${rest[@]}")
	done
	echo "# 1vm: $(( $(date +%s) - g0 )) s, tests started $(boot_s "$d") s after the kernel"
fi

# --- tests in a VM of their own: "# pmem:" (an NVDIMM), "# boots: 2" -----------------------
# own_boot DIR PLANLINE BOOT: one boot of the VM of one test, in DIR; the
# NVDIMM file is DIR/pmem.img (created sparse by vm.sh on the first boot).
own_boot() {
	local d=$1 l=$2 b=$3 n to f pm boots popt=() vpid
	IFS=$'\t' read -r n to f pm boots <<<"$l"
	mkdir -p "$d"
	printf '%s\t%s\t%s\n' "$n" "$to" "$f" >"$d/plan"
	[ "$pm" = - ] || popt=(-p "$d/pmem.img:$pm")
	vm_dirs=("$d")
	"$here/vm/vm.sh" "${verbose_opt[@]}" "${tsc_opt[@]}" -o "$d" -t "$(vm_timeout "$l")" "${popt[@]}" \
		"${envargs[@]}" -e XIW_ROLE=single -e XIW_BOOT="$b" -e XIW_BOOTS="$boots" \
		-e XIW_UNLOAD_NAME="module_unload_$n" "$here/vm/guest-suite.sh" >"$d/vm.out" 2>&1 &
	vpid=$!
	while kill -0 $vpid 2>/dev/null; do
		# boot 1 of two: its result is judged when it ends
		[ "$boots" = 2 ] && [ "$b" = 1 ] || follow_once "$d"
		sleep 1
	done
	wait $vpid; echo $? >"$d/vm-status"
}
# own_stash DIR SUB: move the files of the boot that ended into DIR/SUB;
# the NVDIMM file, the tests' state and earlier stashes stay.
own_stash() {
	local f
	mkdir -p "$1/$2"
	for f in "$1"/*; do
		case ${f##*/} in pmem.img|state|boot1|boot*-died) continue ;; esac
		mv "$f" "$1/$2/"
	done
}
for l in "${t3[@]}"; do
	IFS=$'\t' read -r n to f pm boots <<<"$l"
	g0=$(date +%s)
	d=$outdir/own/$n
	rm -rf "$d"
	for b in 1 2; do
		[ "$b" -le "$boots" ] || break
		for attempt in 1 2; do
			own_boot "$d" "$l" "$b"
			boot_failed "$d" && [ $attempt = 1 ] || break
			echo "# own/$n: boot $b died before its suite started; booting it once more (own/$n/boot$b-died keeps it)"
			own_stash "$d" "boot$b-died"
		done
		[ "$b" = 1 ] && [ "$boots" = 2 ] || break
		res=$(awk -F'\t' -v n="$n" '$1 == n' "$d/results" 2>/dev/null | tail -n 1)
		if [ -z "$res" ] && [ -f "$d/tests/$n.poweroff" ]; then
			own_stash "$d" boot1
			continue
		fi
		# Boot 1 ended some other way: a failure or skip stands as it
		# is; a pass without the power-off is a failure (boot 2, the
		# half that checks, never ran).
		if [ "$(cut -f2 <<<"$res")" = ok ]; then
			printf '%s\tfail\t%s\t%s\n' "$n" "$(cut -f3 <<<"$res")" \
				"boot 1 ended without xiw_power_off: boot 2 never ran" >>"$d/results"
		fi
		break
	done
	finish_group "$n" "module_unload_$n" -- "$d"
	[ "${verdict[$n]}" != ok ] || rm -f "$d/pmem.img"
	note="# own/$n: $(( $(date +%s) - g0 )) s"
	[ "$pm" = - ] || note+=", NVDIMM $pm"
	[ "$boots" = 1 ] || note+=", $boots boots"
	echo "$note"
done

# --- two VMs on a private link: every 2vm test --------------------------------------------
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
if [ ${#t2[@]} -gt 0 ]; then
	g0=$(date +%s)
	smp2=${XIW_VM_SMP_2VM:-${XIW_VM_SMP:-1}}
	plan=("${t2[@]}")
	rerun_name=
	for seg in $(seq "$MAX_SEGMENTS"); do
	pd=$outdir/2vm
	[ "$seg" = 1 ] || pd+=".$seg"
	da=$pd/a db=$pd/b
	for boot in 1 2; do
	rm -rf "$pd"; mkdir -p "$da" "$db"
	vm_dirs=("$da" "$db")
	printf '%s\n' "${plan[@]}" >"$da/plan"
	cp "$da/plan" "$db/plan"
	to=$(vm_timeout "${plan[@]}")
	# The link: a Unix socket (vm.sh says why), or 127.0.0.1 TCP with
	# XIW_VM_LINK=tcp. Its path must fit sun_path (108 bytes): /tmp.
	linkdir=
	if [ "${XIW_VM_LINK:-unix}" = tcp ]; then
		port=$(free_port)
	else
		linkdir=$(mktemp -d /tmp/xiw-link.XXXXXX)
		port=$linkdir/link
	fi
	XIW_VM_SMP=$smp2 "$here/vm/vm.sh" "${verbose_opt[@]}" "${tsc_opt[@]}" -o "$da" -t "$to" -n "listen:$port" -m 52:54:00:77:00:01 \
		"${envargs[@]}" -e XIW_EMULATOR_RERUN="$rerun_name" -e XIW_ROLE=a -e XIW_LOCAL_IP=10.77.0.1 -e XIW_PEER_IP=10.77.0.2 \
		"$here/vm/guest-suite.sh" >"$da/vm.out" 2>&1 &
	pa=$!
	# B connects once A's qemu listens (qemu starts in well under a
	# second; 60 s allows for a loaded host). If A's qemu ended or never
	# listened, B is started all the same: its connect fails, and the
	# dead-VM handling below reports the pair.
	a_listens=0
	for _ in $(seq 600); do
		case $port in
		/*) ss -Hlx 2>/dev/null | grep -qF " $port " && a_listens=1 ;;
		*) ss -Hltn "sport = :$port" 2>/dev/null | grep -q . && a_listens=1 ;;
		esac
		[ $a_listens = 0 ] || break
		kill -0 $pa 2>/dev/null || break
		sleep 0.1
	done
	[ $a_listens = 1 ] ||
		echo "run.sh: VM a's qemu is not listening on $port (it ended, or 60 s passed): VM b cannot connect" >&2
	XIW_VM_SMP=$smp2 "$here/vm/vm.sh" "${verbose_opt[@]}" "${tsc_opt[@]}" -o "$db" -t "$to" -n "connect:$port" -m 52:54:00:77:00:02 \
		"${envargs[@]}" -e XIW_EMULATOR_RERUN="$rerun_name" -e XIW_ROLE=b -e XIW_LOCAL_IP=10.77.0.2 -e XIW_PEER_IP=10.77.0.1 \
		"$here/vm/guest-suite.sh" >"$db/vm.out" 2>&1 &
	pb=$!
	# When one VM dies before its end (no OUT/done), tell the other
	# (OUT/peer-died: its barriers give up, it runs module_unload_2vm and
	# ends); stop it after a grace period if it does not.
	while kill -0 $pa 2>/dev/null || kill -0 $pb 2>/dev/null; do
		follow_once "$da" "$db"
		for pair in "$pa $da $db" "$pb $db $da"; do
			read -r p dead other <<<"$pair"
			if ! kill -0 "$p" 2>/dev/null && [ ! -f "$dead/done" ] && [ ! -f "$other/peer-died" ]; then
				date +%s >"$other/peer-died"
			fi
		done
		for other in "$da" "$db"; do
			if [ -f "$other/peer-died" ] &&
			   [ $(( $(date +%s) - $(cat "$other/peer-died") )) -ge ${XIW_PEER_GRACE_S:-90} ]; then
				stop_vm "$other"
			fi
		done
		sleep 1
	done
	wait $pa; echo $? >"$da/vm-status"
	wait $pb; echo $? >"$db/vm-status"
	[ -z "$linkdir" ] || rm -rf "$linkdir"
	if [ $boot = 1 ] && { boot_failed "$da" || boot_failed "$db"; }; then
		boot_again "$pd"
		mkdir -p "$da" "$db"
		continue
	fi
	break
	done
	rerun_plan "$da" "$db" -- "${plan[@]}"
	mapfile -t nl < <(plan_names "${plan[@]}")
	if [ ${#rest[@]} = 0 ] || [ "$seg" = "$MAX_SEGMENTS" ]; then
		finish_group "${nl[@]}" module_unload_2vm -- "$da" "$db"
		break
	fi
	mapfile -t nl < <(plan_names "${plan[@]:0:$(( ${#plan[@]} - ${#rest[@]} ))}")
	finish_group "${nl[@]}" -- "$da" "$db"
	echo "# ${pd#"$outdir"/}: a VM died in $victim${rerun_why:-; booting the pair again for the ${#rest[@]} tests after it}"
	plan=("${rest[@]}")
	done
	echo "# 2vm: $(( $(date +%s) - g0 )) s, tests started $(boot_s "$da") s / $(boot_s "$db") s after the kernels"
fi

# --- three VMs on one segment: every 3vm test -----------------------------------------------
# The segment is qemu's socket netdev in multicast mode on the host's lo
# (vm.sh -n mcast:GROUP:PORT): a group and port of this run's own, so that
# runs side by side never see each other's frames. Roles a, b, c:
# 10.77.0.1-3/24, MACs 52:54:00:77:00:01-03; a is the hub of the syncs.
# A VM b or c that powers itself off inside a test (lib.sh's
# xiw_vm_power_cycle, OUT/power-cycle) stays off for the seconds it asked
# for and is booted again (OUT/cycleK keeps the boot that ended); its
# suite resumes in that test (XIW_RESUME) while the others run on.
declare -A ip3=([a]=10.77.0.1 [b]=10.77.0.2 [c]=10.77.0.3)
declare -A mac3=([a]=52:54:00:77:00:01 [b]=52:54:00:77:00:02 [c]=52:54:00:77:00:03)
# vm3_start ROLE DIR TIMEOUT [-e VAR=VAL...]: VM ROLE of the group in the
# background (vpid), on segment $mcast
vm3_start() {
	local r=$1 d=$2 to=$3 peer=${ip3[a]}
	shift 3
	[ "$r" != a ] || peer=${ip3[b]}
	# no_timer_check: three TCG VMs booting at once on two cores
	# made the kernel's IO-APIC timer check fail ("IO-APIC + timer
	# doesn't work!", a panic at 0.004 s) in the first run
	XIW_VM_SMP=$smp3 XIW_VM_MEM=$mem3 "$here/vm/vm.sh" "${verbose_opt[@]}" -o "$d" -t "$to" \
		-a no_timer_check "${tsc_opt[@]}" "${disk3[@]}" \
		-n "mcast:$mcast" -m "${mac3[$r]}" "${envargs[@]}" -e XIW_EMULATOR_RERUN="$rerun_name" -e XIW_ROLE="$r" -e XIW_TOPOLOGY=3vm \
		-e XIW_LOCAL_IP="${ip3[$r]}" -e XIW_PEER_IP="$peer" \
		-e XIW_IP_A="${ip3[a]}" -e XIW_IP_B="${ip3[b]}" -e XIW_IP_C="${ip3[c]}" \
		"$@" "$here/vm/guest-suite.sh" >>"$d/vm.out" 2>&1 &
	vpid=$!
}
if [ ${#t4[@]} -gt 0 ]; then
	g0=$(date +%s)
	smp3=${XIW_VM_SMP_3VM:-1}
	mem3=${XIW_VM_MEM_3VM:-1536}
	n_cycles=0
	plan=("${t4[@]}")
	rerun_name=
	for seg in $(seq "$MAX_SEGMENTS"); do
	pd=$outdir/3vm
	[ "$seg" = 1 ] || pd+=".$seg"
	dirs3=("$pd/a" "$pd/b" "$pd/c")
	for boot in 1 2; do
	rm -rf "$pd"; mkdir -p "${dirs3[@]}"
	vm_dirs=("${dirs3[@]}")
	for d in "${dirs3[@]}"; do printf '%s\n' "${plan[@]}" >"$d/plan"; done
	to=$(vm_timeout "${plan[@]}")
	# "# shared-disk: SIZE" (the largest of the plan): one sparse raw
	# file, /dev/vda in each of the three VMs (vm.sh -d), the same file
	# again after a power cycle; deleted with the group's end
	disk3=()
	if [ -n "${disk3_mb:-}" ]; then
		truncate -s "${disk3_mb}M" "$pd/shared-disk.img"
		disk3=(-d "$pd/shared-disk.img")
	fi
	mcast=230.77.$((RANDOM % 256)).$((RANDOM % 254 + 1)):$((20000 + RANDOM % 20000))
	unset pid3 off3 cyc3
	declare -A pid3=() off3=() cyc3=()
	for r in a b c; do
		vm3_start "$r" "$pd/$r" "$to"
		pid3[$r]=$vpid
	done
	while :; do
		follow_once "${dirs3[@]}"
		alive=0
		for r in a b c; do
			d=$pd/$r p=${pid3[$r]}
			if [ -n "$p" ] && ! kill -0 "$p" 2>/dev/null; then
				st=0
				wait "$p" || st=$?
				echo "$st" >"$d/vm-status"
				pid3[$r]=
				if [ -f "$d/power-cycle" ] && [ ! -f "$d/done" ]; then
					off3[$r]=$(date +%s)
					IFS=$'\t' read -r pc_name pc_no pc_sec pc_boot <"$d/power-cycle"
					echo "# ${d#"$outdir"/}: powered off by $pc_name (its boot $pc_boot), back in $pc_sec s"
				elif [ ! -f "$d/done" ]; then
					# a VM died: the others give up their syncs
					for o in a b c; do
						[ "$o" = "$r" ] || [ -f "$pd/$o/peer-died" ] ||
							date +%s >"$pd/$o/peer-died"
					done
				fi
			fi
			if [ -n "${off3[$r]:-}" ]; then
				IFS=$'\t' read -r pc_name pc_no pc_sec pc_boot <"$d/power-cycle"
				others=0
				for o in a b c; do [ "$o" = "$r" ] || [ -z "${pid3[$o]}" ] || others=1; done
				if [ -f "$d/peer-died" ] || [ $others = 0 ]; then
					# the group is lost, or the others ended
					# (a test that never waits for it): it
					# stays off
					off3[$r]=
				elif [ $(( $(date +%s) - off3[$r] )) -ge "$pc_sec" ]; then
					t_off=${off3[$r]} k=$(( ${cyc3[$r]:-0} + 1 ))
					cyc3[$r]=$k n_cycles=$((n_cycles + 1))
					mkdir -p "$d/cycle$k"
					mv "$d/console.log" "$d/qemu.log" "$d/vm.out" "$d/vm-status" \
						"$d/power-cycle" "$d/cycle$k/" 2>/dev/null
					vm3_start "$r" "$d" "$(vm_timeout "${plan[@]:$((pc_no - 1))}")" \
						-e XIW_RESUME="$pc_no" -e XIW_RESUME_BOOT=$((pc_boot + 1))
					pid3[$r]=$vpid off3[$r]=
					echo "# ${d#"$outdir"/}: booted again after $(( $(date +%s) - t_off )) s off, resuming $pc_name"
				fi
			fi
			[ -z "${pid3[$r]}" ] && [ -z "${off3[$r]:-}" ] || alive=1
			if [ -n "${pid3[$r]}" ] && [ -f "$d/peer-died" ] &&
			   [ $(( $(date +%s) - $(cat "$d/peer-died") )) -ge ${XIW_PEER_GRACE_S:-90} ]; then
				stop_vm "$d"
			fi
		done
		[ $alive = 1 ] || break
		sleep 1
	done
	# A VM that died before its suite started, before any result: the
	# group boots once more (a VM booted again after a power cycle that
	# dies so is a dead VM like any other)
	if [ $boot = 1 ] && [ ! -s "$pd/a/results" ] && [ ! -s "$pd/b/results" ] &&
	   [ ! -s "$pd/c/results" ] &&
	   { boot_failed "$pd/a" || boot_failed "$pd/b" || boot_failed "$pd/c"; }; then
		boot_again "$pd"
		mkdir -p "${dirs3[@]}"
		continue
	fi
	break
	done
	rm -f "$pd/shared-disk.img"
	rerun_plan "${dirs3[@]}" -- "${plan[@]}"
	mapfile -t nl < <(plan_names "${plan[@]}")
	if [ ${#rest[@]} = 0 ] || [ "$seg" = "$MAX_SEGMENTS" ]; then
		finish_group "${nl[@]}" module_unload_3vm -- "${dirs3[@]}"
		break
	fi
	mapfile -t nl < <(plan_names "${plan[@]:0:$(( ${#plan[@]} - ${#rest[@]} ))}")
	finish_group "${nl[@]}" -- "${dirs3[@]}"
	echo "# ${pd#"$outdir"/}: a VM died in $victim${rerun_why:-; booting the three again for the ${#rest[@]} tests after it}"
	plan=("${rest[@]}")
	done
	echo "# 3vm: $(( $(date +%s) - g0 )) s, $n_cycles power cycles, tests started $(boot_s "$pd/a") s / $(boot_s "$pd/b") s / $(boot_s "$pd/c") s after the kernels"
fi

elapsed=$(( $(date +%s) - start_all ))

# What else the host ran meanwhile: its busy CPU time less the runner's own
# and its children's (the VMs, reaped by now; bash's `times`). On a host
# with as many cores as the VMs have vCPUs, another process takes CPU time
# from the VMs, and every latency they measure grows by the host's
# scheduling delays (an MPI ping-pong went from 0.33 to 6 ms while one
# make -j2 ran): bench figures of such a run are not figures of xiw.
host_other() {
	local busy own cpus pct
	busy=$(awk -v a="$host_busy0" -v b="$(host_busy_s)" 'BEGIN { printf "%.1f", b - a }')
	# (`times` in this shell: in a pipe or $(...) it would be a subshell's)
	times >"$outdir/host-times"
	own=$(awk '{ for (i = 1; i <= 2; i++) { split($i, t, /[ms]/); s += t[1] * 60 + t[2] } }
		END { printf "%.1f", s }' "$outdir/host-times")
	cpus=$(nproc)
	pct=$(awk -v b="$busy" -v o="$own" -v c="$cpus" -v e="$elapsed" 'BEGIN {
		x = b - o; if (x < 0) x = 0; printf "%.0f", (e > 0 ? 100 * x / (c * e) : 0) }')
	echo "# host CPU: ${busy} s busy, ${own} s of them this run's (VMs included); other processes ${pct}% of ${cpus} CPUs"
	[ "$pct" -lt "${XIW_HOST_OTHER_WARN:-10}" ] ||
		echo "# host CPU: other processes were busy during this run: its timings are not comparable"
}
host_other

# --- selfcheck: compare the verdicts with the fixtures' expectations ---------------------------
if [ $selfcheck = 1 ]; then
	echo "# inner: $n_pass passed, $n_fail failed, $n_skip skipped"
	declare -A want=()
	for n in "${!expect[@]}"; do want[$n]=${expect[$n]}; done
	# configfs is mounted in every VM: unloading it must fail.
	[ ${#t1[@]} -gt 0 ] && want[module_unload]=${XIW_SELFCHECK_UNLOAD:-fail}
	[ ${#t2[@]} -gt 0 ] && want[module_unload_2vm]=${XIW_SELFCHECK_UNLOAD:-fail}
	[ ${#t4[@]} -gt 0 ] && want[module_unload_3vm]=${XIW_SELFCHECK_UNLOAD:-fail}
	for l in "${t3[@]}"; do
		want[module_unload_${l%%$'\t'*}]=${XIW_SELFCHECK_UNLOAD:-fail}
	done
	names_sorted=$(printf '%s\n' "${!verdict[@]}" | sort)
	echo "1..$(wc -l <<<"$names_sorted")"
	i=0 p=0 f=0
	# The survivor of the peer crash still reports its rmmod failure.
	[ ${#t2[@]} -gt 0 ] && expect_reason[module_unload_2vm]='rmmod configfs failed'
	[ ${#t4[@]} -gt 0 ] && expect_reason[module_unload_3vm]='rmmod configfs failed'
	for n in $names_sorted; do
		i=$((i + 1))
		what="expected ${want[$n]:-ok}, got ${verdict[$n]}"
		re=${expect_reason[$n]:-}
		[ -z "$re" ] || what+=", reason /$re/"
		if [ "${verdict[$n]}" = "${want[$n]:-ok}" ] &&
		   { [ -z "$re" ] || grep -qE -- "$re" <<<"${reasons[$n]}"; }; then
			p=$((p + 1)); echo "ok $i - $n: $what"
		else
			f=$((f + 1)); echo "not ok $i - $n: $what (reason: ${reasons[$n]})"
		fi
	done
	echo "# results in $outdir (${elapsed}s)"
	echo "$p passed, $f failed"
	[ $f = 0 ]
	exit
fi

echo "# results in $outdir (${elapsed}s)"
echo "$n_pass passed, $n_fail failed, $n_skip skipped"
[ $n_fail = 0 ]
