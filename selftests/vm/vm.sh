#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Boot one xiw test VM (qemu, TCG or KVM) on the host kernel and run a script.
#
#   selftests/vm/vm.sh [options] SCRIPT [ARG...]
#
# SCRIPT is an absolute path on the host; the guest sees the whole host root
# read-only (plus a RAM overlay, so it may write anywhere without touching the
# host), so SCRIPT, the repo and the build tree are at the same paths inside.
# /tmp, /run and /var/tmp are empty tmpfs in the guest, except for the
# directories the guest needs from there: the repo, SCRIPT's directory,
# $XIW_BUILD, $XIW_KO's directory, absolute directories given with -e and
# $XIW_VM_KEEP (colon-separated) are bind-mounted back into place (so a
# checkout under /tmp works).
#
# Options:
#   -o, --out DIR       host dir shared writable with the guest as /xiw-out
#                       (created; default: a new dir under build/vm/runs/)
#   -t, --timeout SEC   hard limit for the whole VM, boot included (default 600)
#   -n, --net MODE:PORT virtio-net NIC on a 127.0.0.1 socket link to another VM:
#                       MODE is listen or connect (start the listener first);
#                       a PORT that starts with / is a Unix socket's path
#                       (qemu's stream netdev; run.sh's default);
#                       or mcast:GROUP:PORT: a shared segment of any number
#                       of VMs, UDP multicast GROUP:PORT on the host's lo
#                       (every VM of one segment gets the same GROUP:PORT;
#                       each also receives its own frames back)
#   -m, --mac MAC       MAC of that NIC (default 52:54:00:77:00:01)
#   -d, --disk FILE     a virtio-blk disk (/dev/vda in the guest) on the raw
#                       host FILE, shareable: several VMs given the same FILE
#                       write to it at once (share-rw; qemu's writes go
#                       through the host's page cache, which every VM's qemu
#                       reads, so they see each other's data)
#   -e, --env VAR=VAL   export VAR in the guest before SCRIPT runs (repeatable)
#   -p, --pmem FILE:SIZE  an emulated NVDIMM of SIZE (qemu size, e.g. 512M;
#                       a multiple of 2M) backed by the host file FILE (created
#                       sparse if missing, kept as it is otherwise: boot again
#                       on the same FILE to find what the last boot stored);
#                       128 KiB of it is the label area. FILE must not be
#                       under /tmp when it should outlive the host's tmpfs.
#   -a, --append STR    extra kernel command line
#   -c, --console FILE  console log (default OUT/console.log)
#   -v, --verbose       also copy the console to stderr as it comes
#
# Environment: KERNEL (vmlinuz path), XIW_KVER, XIW_VM_MEM (MiB, 2048),
# XIW_VM_SMP (2), XIW_KFENCE (KFENCE sample interval in ms, 1; 0 = off),
# XIW_VM_DIR (initramfs cache dir, <repo>/build/vm), XIW_QEMU
# (qemu-system-x86_64), XIW_VM_ACCEL (tcg; kvm only when asked, see below),
# XIW_VM_CPU (max,erms=off,fsrm=off; host with kvm), XIW_VM_MITIGATIONS
# (1: the kernel's CPU vulnerability mitigations under TCG too), XIW_VM_APPEND (extra kernel command line,
# as -a; e.g. slab_debug=U,kmalloc-8 to find who allocates a cache's objects).
#
# Exit status: the guest script's exit status; 124 when the hard timeout
# fired; 125 when the guest ended without reporting (panic, triple fault,
# qemu error, stopped). The guest powers off by itself when SCRIPT returns.
# While it runs, OUT/qemu.pid holds a pid to TERM to stop the VM.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)

out='' timeout=600 net='' disk='' mac=52:54:00:77:00:01 append=${XIW_VM_APPEND:+ $XIW_VM_APPEND} console='' verbose=0 pmem=''
envs=()
while [ $# -gt 0 ]; do
	case $1 in
	-o|--out) out=$2; shift 2 ;;
	-t|--timeout) timeout=$2; shift 2 ;;
	-n|--net) net=$2; shift 2 ;;
	-m|--mac) mac=$2; shift 2 ;;
	-d|--disk) disk=$2; shift 2 ;;
	-e|--env) envs+=("$2"); shift 2 ;;
	-p|--pmem) pmem=$2; shift 2 ;;
	-a|--append) append="$append $2"; shift 2 ;;
	-c|--console) console=$2; shift 2 ;;
	-v|--verbose) verbose=1; shift ;;
	-h|--help) sed -n '3,/^set -e/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//;$d'; exit 0 ;;
	--) shift; break ;;
	-*) echo "vm.sh: unknown option $1" >&2; exit 2 ;;
	*) break ;;
	esac
done
[ $# -ge 1 ] || { echo "usage: vm.sh [options] SCRIPT [ARG...] (--help)" >&2; exit 2; }
script=$1; shift
case $script in /*) ;; *) script=$(cd "$(dirname "$script")" && pwd)/$(basename "$script") ;; esac
[ -r "$script" ] || { echo "vm.sh: no script $script" >&2; exit 2; }

# The guest mounts tmpfs on /tmp, /run and /var/tmp. Host directories under
# them that the guest needs are bind-mounted back over those tmpfs by the
# initramfs (xiw_keep= on the kernel command line).
keep_cand=("$repo" "$(dirname "$script")")
[ -z "${XIW_BUILD:-}" ] || keep_cand+=("$XIW_BUILD")
[ -z "${XIW_KO:-}" ] || keep_cand+=("$(dirname "$XIW_KO")")
for kv in "${envs[@]}"; do
	case ${kv#*=} in /*) [ -d "${kv#*=}" ] && keep_cand+=("${kv#*=}") ;; esac
done
IFS=: read -r -a kx <<<"${XIW_VM_KEEP:-}"
keep_cand+=("${kx[@]}")
keep=()
for d in "${keep_cand[@]}"; do
	[ -n "$d" ] && [ -d "$d" ] || continue
	d=$(cd "$d" && pwd)
	case $d in /tmp|/run|/var/tmp)
		echo "vm.sh: $d itself cannot be kept in the guest (it is a tmpfs there); use a directory below it" >&2
		exit 2 ;;
	/tmp/*|/run/*|/var/tmp/*) ;;
	*) continue ;;
	esac
	case $d in *[[:space:],]*)
		echo "vm.sh: $d: a path with blanks or commas cannot be passed to the guest" >&2
		exit 2 ;;
	esac
	keep+=("$d")
done
if [ ${#keep[@]} -gt 0 ]; then
	# Parents first; a directory inside a kept one needs no mount of its own.
	mapfile -t keep < <(printf '%s\n' "${keep[@]}" | LC_ALL=C sort -u |
		awk '{ for (i = 1; i <= n; i++) if (index($0 "/", k[i] "/") == 1) next; k[++n] = $0; print }')
	append="$append xiw_keep=$(IFS=,; echo "${keep[*]}")"
fi

# Kernel: KERNEL, else XIW_KVER (e.g. 6.1.0-56-amd64, Debian 12's 6.1),
# else the newest 6.12.
if [ -z "${KERNEL:-}" ]; then
	if [ -n "${XIW_KVER:-}" ]; then
		KERNEL=/boot/vmlinuz-$XIW_KVER
	else
		KERNEL=$(ls -1 /boot/vmlinuz-6.12.* 2>/dev/null | sort -V | tail -n 1 || true)
	fi
fi
[ -r "${KERNEL:-/nonexistent}" ] || { echo "vm.sh: no readable kernel (${KERNEL:-none}); set KERNEL=" >&2; exit 2; }
export KERNEL
initrd=$("$here/mkinitramfs.sh")

if [ -z "$out" ]; then
	mkdir -p "$repo/build/vm/runs"
	out=$(mktemp -d "$repo/build/vm/runs/vm-$(date +%Y%m%d-%H%M%S)-XXXX")
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
console=${console:-$out/console.log}
: >"$console"

# Arguments and environment travel through the out dir (no quoting limits).
{
	for kv in "${envs[@]}"; do
		printf 'export %s=%q\n' "${kv%%=*}" "${kv#*=}"
	done
	printf 'XIW_VM_ARGS=('; [ $# = 0 ] || printf ' %q' "$@"; printf ' )\n'
} >"$out/vm.env"

# TCG unless asked: the bench's machines have no KVM, and some that show a
# /dev/kvm (nested virtualization) fail inside the guest ("KVM internal
# error ... emulation failure" on BMI2 instructions), after which qemu
# stops the guest instead of exiting. XIW_VM_ACCEL=kvm uses -cpu host.
# Under TCG the CPU is "max" without ERMS and FSRM: with them the kernel
# and glibc copy with `rep movsb`, which TCG executes a byte per loop
# iteration (iperf3 over lo in a guest: 341 Mbit/s with them, 1,904
# without; reading a tmpfs file 7 times faster), where real CPUs move
# cache lines; without them they copy with `rep movsq` or vector loops.
accel=${XIW_VM_ACCEL:-tcg}
cpu=${XIW_VM_CPU:-max,erms=off,fsrm=off}
[ "$accel" = kvm ] && cpu=${XIW_VM_CPU:-host}

mem=${XIW_VM_MEM:-2048}
machine="q35,accel=$accel"
memopt=("$mem")
pmemopt=()
if [ -n "$pmem" ]; then
	pfile=${pmem%:*} psize=${pmem##*:}
	[ "$pfile" != "$pmem" ] && [ -n "$pfile" ] ||
		{ echo "vm.sh: --pmem FILE:SIZE" >&2; exit 2; }
	case $psize in
	*[0-9]M) pmib=${psize%M} ;;
	*[0-9]G) pmib=$(( ${psize%G} * 1024 )) ;;
	*) echo "vm.sh: --pmem size $psize: give it in M or G (e.g. 512M)" >&2; exit 2 ;;
	esac
	[[ $pmib =~ ^[0-9]+$ ]] && [ $((pmib % 2)) = 0 ] && [ "$pmib" -ge 16 ] ||
		{ echo "vm.sh: --pmem size $psize: a multiple of 2M, at least 16M" >&2; exit 2; }
	case $pfile in /*) ;; *) pfile=$PWD/$pfile ;; esac
	case $pfile in *,*) echo "vm.sh: --pmem $pfile: a comma cannot be passed to qemu" >&2; exit 2 ;; esac
	mkdir -p "$(dirname "$pfile")"
	# A new file is sparse; an existing one must have the size (labels
	# and data of an earlier boot live in it).
	if [ ! -e "$pfile" ]; then
		truncate -s "${pmib}M" "$pfile"
	elif [ "$(stat -c %s "$pfile")" != $((pmib * 1048576)) ]; then
		echo "vm.sh: $pfile is not $psize" >&2; exit 2
	fi
	machine+=",nvdimm=on"
	memopt=("$mem,slots=2,maxmem=$((mem + pmib + 1024))M")
	# shellcheck disable=SC2054 # commas inside qemu option values
	pmemopt=(-object "memory-backend-file,id=pmem0,share=on,mem-path=$pfile,size=${pmib}M,align=2M"
		-device nvdimm,id=nv0,memdev=pmem0,label-size=128K)
fi

# shellcheck disable=SC2054 # commas inside qemu option values
qemu=("${XIW_QEMU:-qemu-system-x86_64}"
	-machine "$machine" -cpu "$cpu"
	-m "${memopt[@]}" -smp "${XIW_VM_SMP:-2}" "${pmemopt[@]}"
	-nodefaults -no-user-config -display none -no-reboot -monitor none
	-serial "file:$console"
	-kernel "$KERNEL" -initrd "$initrd"
	-virtfs local,path=/,mount_tag=root,security_model=none,readonly=on,multidevs=remap
	-virtfs "local,path=$out,mount_tag=out,security_model=none"
)
if [ -n "$net" ]; then
	mode=${net%%:*} port=${net#*:}
	case $mode in listen|connect|mcast) ;; *) echo "vm.sh: --net listen:PORT, connect:PORT or mcast:GROUP:PORT" >&2; exit 2 ;; esac
	case $mode:$port in
	mcast:*)
		# qemu's socket netdev in multicast mode: one UDP datagram
		# per frame to GROUP:PORT over 127.0.0.1, which every VM
		# of the segment (and this one: qemu turns multicast
		# loopback on) receives. No flow control: a frame lost to a
		# full socket buffer is TCP's to resend.
		[[ $port =~ ^2(2[4-9]|3[0-9])\.[0-9]+\.[0-9]+\.[0-9]+:[0-9]+$ ]] ||
			{ echo "vm.sh: --net mcast:GROUP:PORT with GROUP in 224.0.0.0/4 ($port)" >&2; exit 2; }
		qemu+=(-netdev "socket,id=n0,mcast=$port,localaddr=127.0.0.1") ;;
	*:/*)	# A Unix stream socket: reliable and flow-controlled like TCP,
		# but without Nagle's algorithm and delayed ACKs, which on a
		# 127.0.0.1 TCP link held every frame queued behind an
		# unacknowledged one for up to 40 ms (qemu's socket netdev does
		# not set TCP_NODELAY): 1 MiB took 320 ms between the VMs.
		[ "$mode" = listen ] && srv=on || srv=off
		qemu+=(-netdev "stream,id=n0,server=$srv,addr.type=unix,addr.path=$port") ;;
	*:*)	qemu+=(-netdev "socket,id=n0,$mode=127.0.0.1:$port") ;;
	esac
	qemu+=(-device "virtio-net-pci,netdev=n0,romfile=,mac=$mac")
else
	qemu+=(-nic none)
fi
if [ -n "$disk" ]; then
	[ -f "$disk" ] || { echo "vm.sh: --disk $disk: no such file" >&2; exit 2; }
	case $disk in *,*) echo "vm.sh: --disk $disk: a comma cannot be passed to qemu" >&2; exit 2 ;; esac
	# shellcheck disable=SC2054 # commas inside qemu option values
	qemu+=(-drive "file=$disk,format=raw,if=none,id=sd0"
		-device virtio-blk-pci,drive=sd0,share-rw=on,romfile=)
fi
# Kernel command line: see selftests/README.md for the reasons.
cmdline="console=ttyS0 earlyprintk=serial,ttyS0 quiet panic=-1 log_buf_len=8M printk.devkmsg=on"
cmdline+=" kfence.sample_interval=${XIW_KFENCE:-1} sysctl.kernel.hung_task_timeout_secs=60"
# Under TCG the vCPUs' TSCs are the host's clock, but a vCPU that qemu
# does not run for a while makes the clocksource watchdog see a skew: the
# guest marks the TSC unstable and falls back to hpet (6.1 does it at boot,
# 6.12 now and then during a run, e.g. at 14.9 s in one make check). Clock
# reads then become slow and noisy, and perftest's clock calibration fails
# every time until the VM reboots. tsc=reliable turns that watchdog off.
cmdline+=" tsc=reliable"
# No Spectre mitigations under TCG, where they guard nothing (the guest
# shares its emulated CPU with no one) and retpolines and return thunks
# are emulated like any other code: 200 process starts took 17.0 s with
# them, 14.8 s without (XIW_VM_MITIGATIONS=1 keeps them).
[ "$accel" != tcg ] || [ "${XIW_VM_MITIGATIONS:-0}" = 1 ] || cmdline+=" mitigations=off"
cmdline+=" xiw_script=$script$append"

rc=0 t0=$SECONDS
# In the background so that OUT/qemu.pid can stop the VM (TERM to timeout,
# which passes it on to qemu).
timeout -k 10 "$timeout" "${qemu[@]}" -append "$cmdline" </dev/null \
	>"$out/qemu.log" 2>&1 &
qpid=$!
echo $qpid >"$out/qemu.pid"
# -v: the console as it comes; tail reads the file once more after
# qemu's timeout has ended, then exits by itself
tailpid=
if [ $verbose = 1 ]; then
	tail -n +1 -F --pid=$qpid "$console" >&2 2>/dev/null &
	tailpid=$!
fi
trap 'kill -TERM $qpid 2>/dev/null' INT TERM HUP
wait $qpid || rc=$?
while kill -0 $qpid 2>/dev/null; do wait $qpid || rc=$?; done	# a trapped signal interrupts wait
rm -f "$out/qemu.pid"
[ -z "$tailpid" ] || wait "$tailpid" 2>/dev/null || true
if [ $rc = 124 ] || [ $rc = 137 ]; then
	echo "vm.sh: VM killed after ${timeout}s (console: $console)" >&2
	exit 124
fi
if [ $rc = 143 ]; then
	echo "vm.sh: VM stopped (TERM) after $((SECONDS - t0)) s (console: $console)" >&2
	exit 125
fi
if [ $rc != 0 ]; then
	echo "vm.sh: qemu failed ($rc):" >&2
	sed 's/^/  /' "$out/qemu.log" >&2
	exit 125
fi
grc=$(tr -d '\r' <"$console" | sed -n 's/^xiw-vm-exit: //p' | tail -n 1)
case $grc in
[0-9]*) exit "$grc" ;;
*) echo "vm.sh: the guest did not report an exit status; qemu exited 0 after $((SECONDS - t0)) s (console: $console)" >&2
   exit 125 ;;
esac
