# SPDX-License-Identifier: GPL-2.0
#
# xiw: software iWARP RNIC. Top-level build and test driver.
#
#   make            build xiw.ko and user space (provider, tests, tools)
#   make ktest      build the kernel API test module (selftests/kmod)
#   make demo       install what is missing, build, boot the VM, show xiw
#   make check      install what is missing, build, run every test
#   make check T=name   run one VM test
#   make check T=name REPEAT=N   run it N times in a row
#   make check-long the VM bench's self-check, the long sweeps
#                   (selftests/tests-long/apps_*), 1000 QPs between two
#                   VMs with traffic (cm_scale_long_2vm), applications,
#                   MPI, siw and ULPs across two and three VMs
#   make -C selftests install INSTALL_PATH=DIR   the tests as a kselftest
#                   tree for DIR/run_kselftest.sh (selftests/README.md)
#   make bench      perftest on xiw, siw and rxe plus raw TCP, side by side;
#                   xiw_commitlog on DRAM and persistent memory
#   make fuzz       libFuzzer harnesses, FUZZ_TIME seconds each (FUZZ=names)
#   make mutate     the mutation check: every patch of selftests/mutations/
#                   applied to a scratch copy, built, its named tests run;
#                   each must be caught for the reason its Expect: line
#                   gives, after a baseline run of the tests on the clean
#                   tree (M=NN runs the one(s) numbered NN)
#   make fuzz-live  the wire fuzzer against xiw.ko in the VM (fuzz_wire),
#                   FUZZ_TIME seconds (FUZZ_SEED=n)
#   make soak       SOAK_QPS QPs (1000) with mixed traffic for SOAK_TIME
#                   seconds (600) in the VM; slab, page and socket counts
#                   back to the baseline afterwards (tests-long/dp_soak.sh)
#   make install    install xiw.ko, libxiw and its libibverbs.d entry
#   make dkms-install   xiw.ko under DKMS (rebuilt on kernel updates)
#   make dkms-uninstall
#   make deb        Debian packages xiw-dkms, libxiw1, libxiw-dev in build/deb/
#   make upstream   the kernel patch series against linux-source-6.12 in
#                   build/upstream/kernel/ and the rdma-core series against
#                   rdma-core 56.1 in build/upstream/rdma-core-patches/;
#                   make upstream-check checks
#                   each patch (checkpatch --strict, W=1 C=1 M= build)
#   make kernel61   xiw.ko and xiw_ktest.ko for Debian 12's 6.1 kernel
#                   (build/kver/6.1.0-N-amd64/)
#   make check-6.1  W=1 build for 6.1, then VM tests booting 6.1 with it
#                   (CHECK61_TESTS, or T=...); make check runs it too
#
# KDIR defaults to the newest installed Debian 6.12 kernel headers.
# KVER=RELEASE builds for another installed kernel (/lib/modules/RELEASE/build)
# in build/kver/RELEASE/, so kernel/'s 6.12 objects stay as they are; every
# module target (kernel, ktest, w1, sparse, clean) takes it:
#   make kernel ktest KVER=6.1.0-56-amd64     make w1 KVER=6.1.0-56-amd64

BUILD ?= $(CURDIR)/build
KVER ?=
# The newest Debian 6.1 kernel with headers (make deps installs one).
KVER61 ?= $(lastword $(sort $(notdir $(patsubst %/build/Makefile,%,\
	$(wildcard /lib/modules/6.1.0-*-amd64/build/Makefile)))))
ifneq ($(KVER),)
KDIR := /lib/modules/$(KVER)/build
# A tree of symlinks to the sources, laid out as the repository is
# (kernel/, selftests/kmod/, include/), for Kbuild to build in.
KTREE := $(BUILD)/kver/$(KVER)
else
KDIR ?= $(lastword $(sort $(wildcard /usr/src/linux-headers-6.12.*+deb12-amd64)))
KTREE := $(CURDIR)
endif
JOBS ?= $(shell nproc)
T ?=
FUZZ_TIME ?= 60
SOAK_TIME ?= 600
SOAK_QPS ?= 1000
FUZZ ?=
REPEAT ?=

KMAKE = $(MAKE) -C $(KDIR) M=$(KTREE)/kernel CONFIG_RDMA_XIW=m
# xiw_ktest.ko links to xiw.ko's exported kernel API.
KTEST_MAKE = $(MAKE) -C $(KDIR) M=$(KTREE)/selftests/kmod \
	KBUILD_EXTRA_SYMBOLS=$(KTREE)/kernel/Module.symvers

.PHONY: check-packages check-long all kernel ktest user deps check check-host check-vm demo bench install \
	clean checkpatch sparse w1 lint fuzz fuzz-live soak fuzz-corpus dkms-src dkms-install \
	dkms-uninstall deb dkms-tarball ktree kernel61 check-6.1 mutate \
	upstream upstream-check

all: kernel ktest user

kernel: ktree
	@test -n "$(KDIR)" || { echo "no 6.12 kernel headers: run 'make deps'"; exit 1; }
	$(KMAKE) -j$(JOBS) modules

# The kernel ULP test of the xiw kernel API, loaded by the VM test kapi_loopback.
ktest: kernel
	$(KTEST_MAKE) -j$(JOBS) modules

# W=1 and sparse (C=2 checks every file, even if it is up to date).
w1: ktree
	$(KMAKE) -j$(JOBS) W=1 modules
	$(KTEST_MAKE) -j$(JOBS) W=1 modules
sparse: ktree
	$(KMAKE) -j$(JOBS) C=2 modules
	$(KTEST_MAKE) -j$(JOBS) C=2 modules

# Both at once (make check): one compile of every file with W=1 and
# sparse, in a fresh tree of links of its own (build/lint/), so the
# modules the tests load are neither rebuilt with other flags nor
# rebuilt after, and no object left by an earlier run hides a warning.
LINT_TREE := $(BUILD)/lint/$(or $(KVER),default)
lint:
	@test -n "$(KDIR)" && test -e $(KDIR)/Makefile || { echo "no kernel headers ($(KDIR)): run 'make deps'"; exit 1; }
	@rm -rf $(LINT_TREE)
	$(call link_tree,$(LINT_TREE))
	$(MAKE) -C $(KDIR) M=$(LINT_TREE)/kernel CONFIG_RDMA_XIW=m -j$(JOBS) W=1 C=2 modules
	$(MAKE) -C $(KDIR) M=$(LINT_TREE)/selftests/kmod \
		KBUILD_EXTRA_SYMBOLS=$(LINT_TREE)/kernel/Module.symvers -j$(JOBS) W=1 C=2 modules

# link_tree DIR: (re)link the source files in DIR, laid out as the
# repository is; links to files that are gone are dropped.
define link_tree
	@mkdir -p $(1)/kernel $(1)/selftests/kmod
	@ln -sfn $(CURDIR)/include $(1)/include
	@ln -sf $(addprefix $(CURDIR)/,$(XIW_KSRC)) $(1)/kernel/
	@ln -sf $(CURDIR)/selftests/kmod/Kbuild \
		$(filter-out %.mod.c,$(wildcard $(CURDIR)/selftests/kmod/*.c)) $(1)/selftests/kmod/
	@# Only sources are links: modpost must not write through one (*.mod.c).
	@find $(1)/kernel $(1)/selftests/kmod \( -xtype l -o -type l -name '*.mod.c' \) -delete
endef

# KVER=...: check the kernel exists, then (re)link the source files in
# $(KTREE).
ktree:
ifneq ($(KVER),)
	@test -e $(KDIR)/Makefile || { echo "no headers for $(KVER) ($(KDIR)): install linux-headers-$(KVER)"; exit 1; }
	$(call link_tree,$(KTREE))
endif

# Debian 12's default kernel, 6.1 (make deps installs it): xiw.ko and
# xiw_ktest.ko in build/kver/$(KVER61)/.
kernel61:
	@test -n "$(KVER61)" || { echo "no 6.1 kernel headers (/lib/modules/6.1.0-*-amd64/build): run 'make deps'"; exit 1; }
	@$(MAKE) --no-print-directory ktest KVER=$(KVER61)

# The VM tests of "make check-6.1" (and of make check's 6.1 part): device,
# verbs objects, rping, atomics, Flush/Atomic Write/Verify from user space
# and from a kernel ULP, zero-copy TX. About 2 minutes under TCG.
CHECK61_TESTS ?= link_basic verbs_objects apps_rping atomic_contention commit_ops kapi_loopback kapi_qpsteal dp_zcopy
check-6.1: deps
	@bash scripts/need.sh vm
	@$(MAKE) --no-print-directory user >/dev/null
	@test -n "$(KVER61)" || { echo "no 6.1 kernel headers (/lib/modules/6.1.0-*-amd64/build): run 'make deps'"; exit 1; }
	@if [ -n "$(CHECK_DKMS)" ]; then \
		$(MAKE) --no-print-directory dkms-tarball DKMS_VM_KVER=$(KVER61) >/dev/null || \
		echo "make dkms-tarball DKMS_VM_KVER=$(KVER61) failed (see $(BUILD)/dkms/$(KVER61).log): pkg_dkms will fail"; fi
	@KVER61=$(KVER61) bash scripts/check.sh --kver61 $(or $(T),$(CHECK61_TESTS))

# The TRACE_EVENT() layout of the tracepoint header (one macro argument a
# line, TP_STRUCT__entry( and TP_fast_assign( opening blocks) is what every
# trace header in the kernel uses; only those two checks are off for it.
# Version checks are what the compatibility header is for.
CHECKPATCH = perl /usr/src/linux-source-6.12/scripts/checkpatch.pl --no-tree \
	--strict --quiet --ignore FILE_PATH_CHANGES,SPDX_LICENSE_TAG
checkpatch:
	@$(CHECKPATCH) \
		-f $(filter-out %.mod.c,$(wildcard kernel/*.c selftests/kmod/*.c)) \
		$(filter-out kernel/xiw_trace.h kernel/xiw_compat.h,$(wildcard kernel/*.h)) \
		include/uapi/rdma/xiw-abi.h include/uapi/rdma/xiw-sqe.h
	@$(CHECKPATCH) --ignore OPEN_ENDED_LINE,PARENTHESIS_ALIGNMENT \
		-f kernel/xiw_trace.h
	@$(CHECKPATCH) --ignore LINUX_VERSION_CODE,CONSTANT_COMPARISON \
		-f kernel/xiw_compat.h

user:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build $(BUILD) -j$(JOBS)

# need.sh says in plain words what is missing and what to do about it:
# "host" before deps.sh (can it install anything here?), "vm" after it
# (kernel image readable, qemu, busybox, memory, disk).
deps:
	@bash scripts/need.sh host
	@bash scripts/deps.sh

# The package tests (selftests/tests-long/pkg_*.sh) take ~15 minutes under
# TCG, so they have a target of their own, check-packages; pkg_deb installs
# the packages of "make deb", both load the module of "make dkms-tarball".
# They can also be named: make check T=selftests/tests-long/pkg_deb.sh.
# check-packages then runs pkg_dkms again in a VM booting Debian 12's 6.1
# (make check-6.1 T=selftests/tests-long/pkg_dkms.sh, with the DKMS
# tarball built for 6.1).
CHECK_DEB = $(filter pkg_deb%,$(notdir $(T)))
CHECK_DKMS = $(filter pkg_d%,$(notdir $(T)))
PKG_TESTS = selftests/tests-long/pkg_dkms.sh selftests/tests-long/pkg_deb.sh

check-packages: deps
	@rc=0; $(MAKE) --no-print-directory check T="$(PKG_TESTS)" || rc=1; \
	$(MAKE) --no-print-directory check-6.1 T=selftests/tests-long/pkg_dkms.sh || rc=1; \
	exit $$rc

# Long VM tests that sweep rather than find (make check covers the same
# paths with data checked): perftest -a from 2 B to 8 MiB, ~4 minutes;
# 1000 QPs between two VMs with 2.6 GB of verified traffic. And the
# application and ULP runs across VMs whose paths make check covers in
# one VM (moved out to keep make check under 45 minutes, about 20
# minutes under TCG): rdma-core tools, perftest and libfabric between two
# VMs, Open MPI in one VM, in two and in three, siw's data path and
# connection setup between two VMs, NVMe-oF and NFS between two VMs, NFS
# through a link flap, NVMe-oF multipath and two NFS clients in three
# VMs, 256 QPs between two VMs, the wire against tshark's dissectors.
# check-long also runs the VM bench's self-check (XIW_CHECK_SELFCHECK).
LONG_TESTS = selftests/tests-long/apps_perftest_sweep.sh \
	selftests/tests-long/cm_scale_long_2vm.sh \
	selftests/tests-long/apps_2vm.sh selftests/tests-long/apps_mpi.sh \
	selftests/tests-long/apps_mpi_2vm.sh selftests/tests-long/siw_data_2vm.sh \
	selftests/tests-long/ulp_2vm.sh selftests/tests-long/siw_cm_2vm.sh \
	selftests/tests-long/cm_scale_2vm.sh selftests/tests-long/wire_tshark.sh \
	selftests/tests-long/ulp_nfs_flap_2vm.sh \
	selftests/tests-long/apps_mpi_3vm.sh \
	selftests/tests-long/ulp_nfs_twoclients_3vm.sh \
	selftests/tests-long/ulp_nvme_multipath_3vm.sh

check-long: deps
	@$(MAKE) --no-print-directory check T="$(LONG_TESTS)" XIW_CHECK_SELFCHECK=1

# Phase times: each phase appends "NAME SECONDS" to $(BUILD)/phases;
# check.sh adds its own and prints them with the ten slowest VM tests.
check:
	@mkdir -p $(BUILD) && : >$(BUILD)/phases
	@t=$$(date +%s); $(MAKE) --no-print-directory deps && \
		echo "deps $$(( $$(date +%s) - t ))" >>$(BUILD)/phases
	@bash scripts/need.sh vm
	@t=$$(date +%s); $(MAKE) --no-print-directory all && \
		echo "build $$(( $$(date +%s) - t ))" >>$(BUILD)/phases
	@if [ -n "$(CHECK_DEB)" ]; then \
		$(MAKE) --no-print-directory deb LINTIAN=0 >/dev/null || \
		echo "make deb failed (see $(BUILD)/deb/build.log): pkg_deb will fail"; fi
	@if [ -n "$(CHECK_DKMS)" ]; then \
		$(MAKE) --no-print-directory dkms-tarball >/dev/null || \
		echo "make dkms-tarball failed (see $(BUILD)/dkms/KVER.log): pkg_dkms and pkg_deb will fail"; fi
	@XIW_PHASES_CONT=1 XIW_CHECK_SELFCHECK=$(XIW_CHECK_SELFCHECK) REPEAT=$(REPEAT) CHECK61_TESTS="$(CHECK61_TESTS)" KVER61=$(KVER61) \
		bash scripts/check.sh $(T)

bench: deps
	@bash scripts/need.sh vm
	@$(MAKE) --no-print-directory all >/dev/null
	@bash scripts/bench.sh

demo: deps
	@bash scripts/need.sh vm
	@$(MAKE) --no-print-directory all >/dev/null
	@bash scripts/demo.sh

# Long fuzzing runs (the harnesses are built by "make user" when clang-14
# and libFuzzer are installed); the grown corpus stays in build/fuzz/corpus.
fuzz: user
	@test ! -d $(BUILD)/fuzz || cmake --build $(BUILD)/fuzz --target xiw_fuzz_cov -j$(JOBS) >/dev/null
	@bash selftests/fuzz/run.sh --build $(BUILD)/fuzz --time $(FUZZ_TIME) \
		--keep $(BUILD)/fuzz/corpus --coverage $(FUZZ)

# The mutation check (selftests/mutate.sh, Documentation/testing.md
# "Mutation check"): not part of make check. It needs the worktree's own
# build (progs for the VM tests) and the VM; each mutation is built in
# $(BUILD)/mutate/. M=NN (or a patch name) runs the ones given.
M ?=
mutate: deps
	@bash scripts/need.sh vm
	@$(MAKE) --no-print-directory all >/dev/null
	@# the multipath tests' targets are siw (selftests/tests-long/)
	@bash selftests/build-siw.sh >/dev/null
	@JOBS=$(JOBS) XIW_BUILD=$(BUILD) bash selftests/mutate.sh $(M)

# The live-module wire fuzzer (VM test fuzz_wire) for FUZZ_TIME seconds;
# make check runs it for 75 s.
FUZZ_SEED ?= 1
fuzz-live: deps
	@bash scripts/need.sh vm
	@$(MAKE) --no-print-directory all >/dev/null
	@XIW_WIREFUZZ_TIME=$(FUZZ_TIME) XIW_WIREFUZZ_SEED=$(FUZZ_SEED) \
		XIW_TEST_TIMEOUT=$$(( $(FUZZ_TIME) + 180 )) \
		bash scripts/check.sh fuzz_wire

# The soak (selftests/tests-long/dp_soak.sh): its timeout is the traffic time
# plus the setup and teardown of the connections and the measurements.
soak: deps
	@bash scripts/need.sh vm
	@$(MAKE) --no-print-directory all >/dev/null
	@XIW_SOAK_TIME=$(SOAK_TIME) XIW_SOAK_QPS=$(SOAK_QPS) \
		XIW_TEST_TIMEOUT=$$(( $(SOAK_TIME) + 600 )) \
		bash scripts/check.sh selftests/tests-long/dp_soak.sh

# Regenerate the committed seed corpus from the wire encoders.
fuzz-corpus: user
	@rm -rf $(BUILD)/fuzz/gen && $(BUILD)/fuzz/xiw_fuzz_gencorpus $(BUILD)/fuzz/gen
	@for d in $(BUILD)/fuzz/gen/*; do \
		h=selftests/fuzz/corpus/$${d##*/}; mkdir -p $$h; \
		find $$h -type f ! -name 'crash-*' -delete; cp $$d/* $$h/; done

install: all
	$(KMAKE) modules_install
	cmake --install $(BUILD)

clean:
	$(KMAKE) clean
	$(KTEST_MAKE) clean
	rm -rf $(BUILD)

# --- DKMS and Debian packages (Documentation/packaging.md) -------------------
# The version is debian/changelog's; dkms.conf carries #MODULE_VERSION#.
XIW_VERSION := $(shell sed -n '1s/^xiw (\([^)-]*\).*/\1/p' $(CURDIR)/debian/changelog)
DKMS ?= dkms
DKMS_FLAGS ?=
DKMS_SRC ?= $(DESTDIR)/usr/src/xiw-$(XIW_VERSION)
# Kernels to build for: every one with headers (/lib/modules/K/build),
# or DKMS_KERNELS="K ...". Those dkms.conf excludes (BUILD_EXCLUSIVE_KERNEL)
# are skipped.
DKMS_KERNELS ?= $(foreach k,$(wildcard /lib/modules/*/build/Makefile),$(notdir $(patsubst %/build/Makefile,%,$(k))))
XIW_KSRC = $(filter-out %.mod.c,$(wildcard kernel/*.c)) $(wildcard kernel/*.h) kernel/Kbuild kernel/Kconfig

# The DKMS source tree: dkms.conf, kernel/ and the headers it includes
# from include/ (uapi/rdma/xiw-abi.h, xiw-sqe.h; rdma/xiw_kapi.h).
XIW_KINC_UAPI = $(wildcard include/uapi/rdma/xiw*.h)
XIW_KINC_RDMA = $(wildcard include/rdma/xiw*.h)
dkms-src:
	@test -n "$(XIW_VERSION)" || { echo "no version in debian/changelog"; exit 1; }
	rm -rf $(DKMS_SRC)
	install -d $(DKMS_SRC)/kernel $(DKMS_SRC)/include/uapi/rdma $(DKMS_SRC)/include/rdma
	install -m 0644 $(XIW_KSRC) $(DKMS_SRC)/kernel/
	install -m 0644 $(XIW_KINC_UAPI) $(DKMS_SRC)/include/uapi/rdma/
	install -m 0644 $(XIW_KINC_RDMA) $(DKMS_SRC)/include/rdma/
	sed 's/#MODULE_VERSION#/$(XIW_VERSION)/' dkms.conf >$(DKMS_SRC)/dkms.conf
	chmod 0644 $(DKMS_SRC)/dkms.conf

dkms-install:
	@command -v $(DKMS) >/dev/null || { echo "no dkms: apt-get install dkms (make deps does)"; exit 1; }
	@test -n "$(DKMS_KERNELS)" || { echo "no kernel headers in /lib/modules/*/build: install linux-headers-$$(uname -r)"; exit 1; }
	-$(DKMS) remove $(DKMS_FLAGS) xiw/$(XIW_VERSION) --all >/dev/null 2>&1
	$(MAKE) --no-print-directory dkms-src
	$(DKMS) add $(DKMS_FLAGS) xiw/$(XIW_VERSION)
	@for k in $(DKMS_KERNELS); do \
		echo "dkms: xiw/$(XIW_VERSION) for $$k"; \
		$(DKMS) install $(DKMS_FLAGS) xiw/$(XIW_VERSION) -k $$k; rc=$$?; \
		case $$rc in 0) ;; 77) echo "dkms: $$k skipped (not a kernel xiw supports)";; \
		*) exit $$rc;; esac; \
	done

dkms-uninstall:
	@command -v $(DKMS) >/dev/null || { echo "no dkms"; exit 1; }
	$(DKMS) remove $(DKMS_FLAGS) xiw/$(XIW_VERSION) --all
	rm -rf $(DKMS_SRC)

# For the VM tests (pkg_dkms, pkg_deb): "make dkms-install" into scratch
# DKMS trees under build/dkms/KVER for the kernel the test VM boots
# (DKMS_VM_KVER: the newest 6.12 unless given, e.g. DKMS_VM_KVER=$(KVER61)),
# then a DKMS tarball (source + module) that the guest loads with "dkms
# ldtarball": the module compiles here at native speed (under TCG it takes
# ~10 min). A private mount namespace gives DKMS a throw-away
# /var/lib/dkms, so its signing key is not created on the host.
DKMS_VM_KVER ?= $(shell ls -1 /boot/vmlinuz-6.12.* 2>/dev/null | sed 's|^/boot/vmlinuz-||' | sort -V | tail -n 1)
DKMS_BENCH = $(BUILD)/dkms
DKMS_BENCH_K = $(DKMS_BENCH)/$(DKMS_VM_KVER)
DKMS_BENCH_FLAGS = --dkmstree $(DKMS_BENCH_K)/tree --sourcetree $(DKMS_BENCH_K)/src \
	--installtree $(DKMS_BENCH_K)/lib --no-depmod
DKMS_TARBALL = $(DKMS_BENCH)/xiw-$(XIW_VERSION)-$(DKMS_VM_KVER).dkms.tar.gz
dkms-tarball:
	@test -n "$(DKMS_VM_KVER)" || { echo "no /boot/vmlinuz-6.12.*: make deps"; exit 1; }
	@test -e /lib/modules/$(DKMS_VM_KVER)/build/Makefile || { echo "no headers for $(DKMS_VM_KVER)"; exit 1; }
	@command -v $(DKMS) >/dev/null || { echo "no dkms: apt-get install dkms (make deps does)"; exit 1; }
	rm -rf $(DKMS_BENCH_K) $(DKMS_TARBALL)
	mkdir -p $(DKMS_BENCH_K)/tree $(DKMS_BENCH_K)/src $(DKMS_BENCH_K)/lib/$(DKMS_VM_KVER)
	@ns=; unshare -m true 2>/dev/null && [ -d /var/lib/dkms ] && ns="unshare -m"; \
	$$ns sh -c '[ -z "$$1" ] || mount -t tmpfs dkms /var/lib/dkms || exit 1; \
		$(MAKE) --no-print-directory dkms-install DKMS_KERNELS=$(DKMS_VM_KVER) \
			DKMS_SRC=$(DKMS_BENCH_K)/src/xiw-$(XIW_VERSION) DKMS_FLAGS="$(DKMS_BENCH_FLAGS)" && \
		$(DKMS) mktarball $(DKMS_BENCH_FLAGS) xiw/$(XIW_VERSION) -k $(DKMS_VM_KVER) \
			--archive $(DKMS_TARBALL)' \
		dkms-tarball "$$ns" >$(DKMS_BENCH_K).log 2>&1 || { tail -n 30 $(DKMS_BENCH_K).log; exit 1; }
	@ls $(DKMS_TARBALL)

# Debian packages from a clean copy of the tracked (and new, unignored)
# files: build/deb/xiw-VERSION/, then dpkg-buildpackage; the .debs, .dsc,
# .changes and the lintian report land in build/deb/.
DEB_DIR = $(BUILD)/deb
LINTIAN ?= 1
deb:
	@for t in dpkg-buildpackage dh dh_dkms; do command -v $$t >/dev/null || \
		{ echo "no $$t: apt-get install dpkg-dev debhelper dh-dkms (make deps does)"; exit 1; }; done
	@git rev-parse --is-inside-work-tree >/dev/null 2>&1 || \
		{ echo "make deb copies the files git tracks: run it in a git checkout"; exit 1; }
	rm -rf $(DEB_DIR) && mkdir -p $(DEB_DIR)/xiw-$(XIW_VERSION)
	git ls-files -z --cached --others --exclude-standard | \
		grep -zv '^build/' | xargs -0 tar -cf - | tar -C $(DEB_DIR)/xiw-$(XIW_VERSION) -xf -
	cd $(DEB_DIR)/xiw-$(XIW_VERSION) && dpkg-buildpackage -us -uc -j$(JOBS) >../build.log 2>&1 || \
		{ tail -n 40 ../build.log; exit 1; }
	@if [ "$(LINTIAN)" != 0 ] && command -v lintian >/dev/null; then \
		lintian --allow-root --info --display-info --pedantic $(DEB_DIR)/xiw_$(XIW_VERSION)_*.changes \
			>$(DEB_DIR)/lintian.txt 2>&1; \
		echo "lintian: $$(grep -c . $(DEB_DIR)/lintian.txt) lines in $(DEB_DIR)/lintian.txt"; \
		cat $(DEB_DIR)/lintian.txt; fi
	@ls -1 $(DEB_DIR)/*.deb

# The series for upstream (Documentation/upstream.md): the kernel series
# against linux-source-6.12 and the rdma-core series against rdma-core
# 56.1 (its tarball fetched from Debian's archive once), then their checks
# patch by patch (slow: each kernel patch's objects, then the whole
# module, with W=1 and sparse; rdma-core built with -Werror after each,
# and the tree's tools and libraries used on xiw in a VM).
upstream:
	scripts/upstream.sh series
	scripts/upstream-rdma.sh series

upstream-check: upstream
	scripts/upstream.sh check
	scripts/upstream-rdma.sh check
	@# the provider of the rdma-core tree at work on xiw.ko in a VM
	@$(MAKE) --no-print-directory check T=selftests/tests-long/upstream_rdma_core.sh
