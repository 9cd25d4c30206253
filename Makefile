# SPDX-License-Identifier: GPL-2.0
#
# xiw: software iWARP RNIC. Top-level build and test driver.
#
#   make            build xiw.ko and user space (provider, tests, tools)
#   make demo       install what is missing, build, boot the VM, show xiw
#   make check      install what is missing, build, run every test
#   make check T=name   run one VM test
#   make bench      perftest on xiw, siw and rxe plus raw TCP, side by side
#   make install    install xiw.ko, libxiw and its libibverbs.d entry
#
# KDIR defaults to the newest installed Debian 6.12 kernel headers.

KDIR ?= $(lastword $(sort $(wildcard /usr/src/linux-headers-6.12.*+deb12-amd64)))
BUILD ?= $(CURDIR)/build
JOBS ?= $(shell nproc)
T ?=

KMAKE = $(MAKE) -C $(KDIR) M=$(CURDIR)/kernel CONFIG_RDMA_XIW=m

.PHONY: all kernel user deps check check-host check-vm demo bench install \
	clean checkpatch sparse w1

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
		include/uapi/rdma/xiw-abi.h

user:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build $(BUILD) -j$(JOBS)

# need.sh says in plain words what is missing and what to do about it:
# "host" before deps.sh (can it install anything here?), "vm" after it
# (kernel image readable, qemu, busybox, memory, disk).
deps:
	@bash scripts/need.sh host
	@bash scripts/deps.sh

check: deps
	@bash scripts/need.sh vm
	@$(MAKE) --no-print-directory all
	@bash scripts/check.sh $(T)

bench: deps
	@bash scripts/need.sh vm
	@$(MAKE) --no-print-directory all >/dev/null
	@bash scripts/bench.sh

demo: deps
	@bash scripts/need.sh vm
	@$(MAKE) --no-print-directory all >/dev/null
	@bash scripts/demo.sh

install: all
	$(KMAKE) modules_install
	cmake --install $(BUILD)

clean:
	$(KMAKE) clean
	rm -rf $(BUILD)
