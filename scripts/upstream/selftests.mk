# SPDX-License-Identifier: GPL-2.0
#
# Device life cycle tests of the xiw driver. They run as root, load xiw
# (modprobe) and create devices on dummy netdevs; they skip when the
# module or a tool they need is missing. See README.

TEST_PROGS := \
	link_basic.sh \
	link_cycles.sh \
	link_errors.sh \
	link_netdev_removal.sh \
	link_port_state.sh \
# end of TEST_PROGS

TEST_FILES := lib.sh

include ../../../lib.mk
