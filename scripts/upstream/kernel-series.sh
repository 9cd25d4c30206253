# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# The kernel series that `make upstream` writes: which repository file goes
# where in a Linux tree, patch by patch, and each patch's message. This is
# the only place that maps the repository to the kernel tree; it is sourced
# by scripts/upstream.sh, which defines the verbs used here:
#
#   drv FILE...       kernel/FILE -> drivers/infiniband/sw/xiw/FILE; a .c
#                     file is also added to xiw-y in the driver's Makefile
#   put SRC DST       repository file SRC -> tree path DST
#   hook              drivers/infiniband/{Kconfig,sw/Makefile} and the
#                     driver's Kconfig: the patch that turns the build on
#   maintainers       the MAINTAINERS entry (scripts/upstream/MAINTAINERS)
#   docs              Documentation/infiniband/xiw.rst and the index
#   selftests         tools/testing/selftests/drivers/infiniband/xiw/
#   commit SUBJECT    commits what the verbs above staged; the body is read
#                     from stdin, Signed-off-by is added from git config
#
# Patches before `hook` add files the kernel build does not see yet, so
# every patch of the series leaves the tree building; the check
# (scripts/upstream.sh check) still compiles each patch's objects (W=1, C=1)
# when it is applied, and the whole module from `hook` on.

put include/uapi/rdma/xiw-abi.h include/uapi/rdma/xiw-abi.h
put include/uapi/rdma/xiw-sqe.h include/uapi/rdma/xiw-sqe.h
commit "RDMA/xiw: add the user ABI headers" <<'MSG'
xiw is a software iWARP RNIC: MPA/DDP/RDMAP (RFC 5040, 5041, 5044, 6581)
over kernel TCP sockets, with the RFC 7306 atomics and the RDMA Flush,
Atomic Write and Verify operations of draft-talpey-rdma-commit.

Its user ABI comes first so that the rest of the series can be read
against it: xiw-abi.h has the udata of the uverbs commands (context,
CQ, QP, SRQ, MR and the doorbell object) and the layout of the rings
user space maps; xiw-sqe.h has the work queue and completion queue
entries written to those rings. The rdma-core provider uses both.
MSG

drv xiw.h xiw_compat.h xiw_wire.h xiw_dp.h xiw_tx.h xiw_rx.h xiw_cm.h \
	xiw_commit.h xiw_sched.h xiw_stats.h xiw_restrack.h xiw_trace.h
put include/rdma/xiw_kapi.h include/rdma/xiw_kapi.h
drv xiw_main.c xiw_verbs.c xiw_queue.c xiw_cq.c xiw_srq.c
commit "RDMA/xiw: add the device, verbs, queues, CQs and SRQs" <<'MSG'
The core of the driver: module init and exit, the rdma_link_ops that
create one ib_device per Ethernet netdev ("rdma link add xiw0 type xiw
netdev eth0") and follow the netdev's state, the device, port and
context verbs, the rings in the user ABI layout that user space maps,
completion queues and shared receive queues.

The driver's internal headers come with it: xiw.h (objects and
locking rules), xiw_wire.h (the wire format), the data path, CM,
scheduler and commit interfaces used by the following patches, and
include/rdma/xiw_kapi.h, the calls a kernel ULP may use beyond the
verbs. xiw_compat.h bridges the kernel APIs that differ before 6.12
for the out-of-tree build; on this tree every block of it is empty.

The driver's Makefile lists the objects added so far; it is hooked
into drivers/infiniband/ at the end of the series.
MSG

drv xiw_mem.c xiw_mw.c xiw_stag.c
commit "RDMA/xiw: add memory regions and memory windows" <<'MSG'
Registration verbs (user MRs through ib_umem, DMA MRs, fast
registration of kernel MRs) and the STag space in xiw_mem.c, memory
windows type 1 and 2 in xiw_mw.c, and in xiw_stag.c what the data path
does with an STag on every tagged operation: the lookups and checks,
fast registration, window binds and invalidation. xiw_stag.c calls
nothing of the data path, so the engines added next only depend on it.

STag lookups run under RCU on the receive path; a region is freed only
after a grace period, so a placement that found the STag never touches
freed memory.
MSG

drv xiw_qp.c xiw_flush.c xiw_doorbell.c xiw_cm.c
commit "RDMA/xiw: add queue pairs and the iWARP connection manager" <<'MSG'
Queue pairs: create, modify, query and destroy, the iWARP QP state
machine, and posting work requests from kernel consumers. User QPs
ring a doorbell object instead of a system call per post.

The connection manager implements the iw_cm_verbs: listen, connect,
accept and reject over kernel TCP sockets, the MPA request/reply
exchange (RFC 5044, with the enhanced connection setup of RFC 6581),
and the teardown of a connection with its QP.
MSG

drv xiw_dp.c xiw_llp.c xiw_sched.c xiw_tx.c xiw_tx_sq.c xiw_tx_resp.c xiw_tx_zc.c \
	xiw_tx_pages.c
commit "RDMA/xiw: add the data path core and the transmit engine" <<'MSG'
The data path core owns a connection's data path state and its
transitions (running, draining, terminated). The transmit engine
frames FPDUs (MPA markers and CRC, DDP and RDMAP headers) and pushes
them to the TCP socket: the requester side takes work requests from
the send queue, the responder side answers Read Requests and atomics
in order, and TX copies into a QP's own pages or, when asked, sends
the consumer's pages zero copy with completions deferred until TCP
has released them. The scheduler decides who runs TX and where.
MSG

drv xiw_rx.c xiw_rx_req.c xiw_rx_resp.c
commit "RDMA/xiw: add the receive engine" <<'MSG'
The receive engine parses FPDUs in the socket's data_ready callback
and places tagged and untagged payloads directly into registered
memory, validating every STag, offset and length against the peer's
rights before a byte is written; a violation ends the connection with
the Terminate message RFC 5040 names for it. Its stream core handles
Writes and Sends itself; the responder side checks the peer's Read
Requests, atomics and commit requests, executes atomics at receipt and
queues the requests for TX to answer, and the requester side matches
the peer's responses against the outstanding requests and completes
their work requests.
MSG

drv xiw_commit.c
commit "RDMA/xiw: add RDMA Flush, Atomic Write and Verify" <<'MSG'
The responder's side of the RDMA commit extensions
(draft-talpey-rdma-commit): a Flush makes the preceding writes to a
region globally visible, or persistent on a persistent memory MR; an
Atomic Write stores 64 bits as one CPU store; a Verify digests a
range (crc32c or sha256) and compares it with the requester's value.
Peers that do not know these opcodes (siw) answer them with a
Terminate, which the requester reports as a completion error.
MSG

drv xiw_stats.c xiw_restrack.c xiw_trace.c
commit "RDMA/xiw: add counters, resource tracking and tracepoints" <<'MSG'
Device counters as ib_core hw stats ("rdma statistic show link
xiw0/1"), driver details for "rdma resource show qp|cq|mr|srq -dd",
and tracepoints for connection state, Terminate messages and the data
path's slow paths.
MSG

hook
commit "RDMA/xiw: hook the driver into the build" <<'MSG'
Add CONFIG_RDMA_XIW and build drivers/infiniband/sw/xiw. The driver
depends on INFINIBAND_VIRT_DMA like the other software devices, and on
64BIT: atomics and Atomic Write are single 64-bit CPU stores.
MSG

maintainers
commit "MAINTAINERS: add an entry for the xiw driver" <<'MSG'
xiw is maintained by its authors on linux-rdma.
MSG

docs
commit "RDMA/xiw: document the driver" <<'MSG'
Add Documentation/infiniband/xiw.rst: what xiw is, how devices are
created, the operations it supports beyond siw, its module parameters
and observability, and how it is tested.
MSG

selftests
commit "selftests: xiw: add device link tests" <<'MSG'
Tests of the device life cycle that need only the module, iproute2's
rdma tool and dummy netdevs: add and delete links, refused link
requests, a netdev removed under a device, and the port state
following the netdev. They use the kselftest framework's lib.mk and
skip when the module cannot be loaded. The data path tests need test
programs built against rdma-core and live with the driver's own
repository (see the README).
MSG
