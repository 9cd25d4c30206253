# SPDX-License-Identifier: GPL-2.0
#
# xiw: software iWARP RNIC. Top-level build and test driver.
#
#   make            build xiw.ko and user space (provider, tests, tools)
#   make demo       install what is missing, build, boot the VM, show xiw
#   make check      install what is missing, build, run every test
#   make check T=name   run one VM test
#   make check T=name REPEAT=N   run it N times in a row
#   make bench      perftest on xiw, siw and rxe plus raw TCP, side by side
#   make fuzz       libFuzzer harnesses, FUZZ_TIME seconds each (FUZZ=names)
#   make install    install xiw.ko, libxiw and its libibverbs.d entry
#
# KDIR defaults to the newest installed Debian 6.12 kernel headers.

KDIR ?= $(lastword $(sort $(wildcard /usr/src/linux-headers-6.12.*+deb12-amd64)))
BUILD ?= $(CURDIR)/build
JOBS ?= $(shell nproc)
T ?=
FUZZ_TIME ?= 60
FUZZ ?=
REPEAT ?=

KMAKE = $(MAKE) -C $(KDIR) M=$(CURDIR)/kernel CONFIG_RDMA_XIW=m

.PHONY: all kernel user deps check check-host check-vm demo bench install \
	clean checkpatch sparse w1 fuzz fuzz-corpus

all: kernel user

kernel:
	@test -n "$(KDIR)" || { echo "no 6.12 kernel headers: run 'make deps'"; exit 1; }
	$(KMAKE) -j$(JOBS) modules

# W=1 and sparse (C=2 checks every file, even if it is up to date).
w1:
	$(KMAKE) -j$(JOBS) W=1 modules
sparse:
	$(KMAKE) -j$(JOBS) C=2 modules

checkpatch:
	@perl /usr/src/linux-source-6.12/scripts/checkpatch.pl --no-tree \
		--strict --quiet --ignore FILE_PATH_CHANGES,SPDX_LICENSE_TAG \
		-f $(filter-out %.mod.c,$(wildcard kernel/*.c)) kernel/*.h \
		include/uapi/rdma/xiw-abi.h include/uapi/rdma/xiw-sqe.h

user:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build $(BUILD) -j$(JOBS)

deps:
	@bash scripts/deps.sh

check: deps
	@$(MAKE) --no-print-directory all
	@REPEAT=$(REPEAT) bash scripts/check.sh $(T)

bench: deps
	@$(MAKE) --no-print-directory all >/dev/null
	@bash scripts/bench.sh

demo: deps
	@$(MAKE) --no-print-directory all >/dev/null
	@bash scripts/demo.sh

# Long fuzzing runs (the harnesses are built by "make user" when clang-14
# and libFuzzer are installed); the grown corpus stays in build/fuzz/corpus.
fuzz: user
	@test ! -d $(BUILD)/fuzz || cmake --build $(BUILD)/fuzz --target xiw_fuzz_cov -j$(JOBS) >/dev/null
	@bash selftests/fuzz/run.sh --build $(BUILD)/fuzz --time $(FUZZ_TIME) \
		--keep $(BUILD)/fuzz/corpus --coverage $(FUZZ)

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
	rm -rf $(BUILD)
