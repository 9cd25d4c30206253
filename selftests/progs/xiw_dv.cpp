// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// xiw_dv: the xiwdv.h direct verbs end to end over one xiw device.
//
// One process connects two QPs through rdma_cm (passive and active side on
// ADDR:PORT) and checks, against the RFC 7306 reference code that the
// kernel and the host unit tests share (kernel/xiw_wire.h):
//  - masked FetchAdd: field carries stop at the field MSBs;
//  - masked CmpSwap: only the compare-mask bits are compared, only the
//    swap-mask bits are replaced, nothing is written on a mismatch;
//  - the plain ibv_wr_atomic_* forms;
//  - RDMA Write with a 64-bit immediate, Immediate Data alone (with SE),
//    and the 32-bit verbs immediate: values, byte_len, data visible first.
// Every check prints one line; the exit status is 0 only if all passed.
//
// Usage: xiw_dv ADDR PORT
#include "verbs_side.h"
#include "kcompat.h"
#include "xiw_wire.h"

#include <infiniband/xiwdv.h>
#include <rdma/rdma_cma.h>

#include <arpa/inet.h>
#include <netdb.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

int failures;

using cm_pair::die;

void check(bool ok, const char *what, uint64_t got, uint64_t want)
{
	std::printf("%s %s: got %#" PRIx64 " want %#" PRIx64 "\n",
		    ok ? "ok" : "FAIL", what, got, want);
	if (!ok)
		failures++;
}

struct Region {
	uint64_t addr;
	uint32_t rkey;
} __attribute__((packed));

// The shared test-connection end (verbs_side.h) with this program's
// buffer layout and helpers.
struct Side : cm_pair::SideT<uint64_t> {
	void setup(rdma_cm_id *cid)
	{
		cm_pair::SideOpts o;

		o.cq_entries = 64;
		o.mem_bytes = 512 * sizeof(uint64_t);
		o.access |= IBV_ACCESS_REMOTE_ATOMIC;
		o.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
				   IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
				   IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
		SideT::setup(cid, o);
	}

	void post_recv(uint64_t wr_id)
	{
		ibv_sge sge{ (uintptr_t)&mem[500], 8, mr->lkey };
		ibv_recv_wr wr{}, *bad;

		wr.wr_id = wr_id;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		if (ibv_post_recv(id->qp, &wr, &bad))
			die("ibv_post_recv");
	}

	// One completion (spins; the VM is slow, allow 10 s).
	ibv_wc poll(uint64_t *imm64)
	{
		ibv_wc wc{};
		for (long i = 0; i < 100000000L; i++) {
			int n = xiwdv_poll_cq(cq, 1, &wc, imm64);
			if (n < 0)
				die("xiwdv_poll_cq");
			if (n)
				return wc;
		}
		std::fprintf(stderr, "xiw_dv: no completion\n");
		std::exit(2);
	}
};

Side srv, cli;
Region peer;

// One masked/unmasked atomic from cli on srv.mem[0]; returns the result.
template <typename Post>
uint64_t atomic_op(uint64_t orig, Post post, ibv_wc_opcode op, uint64_t *after)
{
	volatile uint64_t *word = &srv.mem[0];

	*word = orig;
	cli.mem[1] = 0xdeadbeefdeadbeefULL;
	ibv_wr_start(cli.qpx);
	cli.qpx->wr_id = 7;
	cli.qpx->wr_flags = IBV_SEND_SIGNALED;
	post();
	ibv_wr_set_sge(cli.qpx, cli.mr->lkey, (uintptr_t)&cli.mem[1], 8);
	if (int rv = ibv_wr_complete(cli.qpx)) {
		errno = rv;
		die("ibv_wr_complete");
	}
	ibv_wc wc = cli.poll(nullptr);
	if (wc.status != IBV_WC_SUCCESS || wc.opcode != op) {
		std::printf("FAIL atomic completion: status %d opcode %d\n",
			    wc.status, wc.opcode);
		failures++;
	}
	*after = *word;
	return cli.mem[1];
}

void masked_fadd(uint64_t orig, uint64_t add, uint64_t msbs, uint64_t want)
{
	uint64_t after, got = atomic_op(orig, [&] {
		xiwdv_wr_masked_atomic_fetch_add(cli.qpx, peer.rkey, peer.addr,
						 add, msbs);
	}, IBV_WC_FETCH_ADD, &after);
	char what[96];

	std::snprintf(what, sizeof(what), "masked FetchAdd %#" PRIx64 " + %#"
		      PRIx64 " fields %#" PRIx64, orig, add, msbs);
	check(got == orig, what, got, orig);
	check(after == want && after == xiw_masked_fadd(orig, add, msbs),
	      what, after, want);
}

void masked_cswap(uint64_t orig, uint64_t cmp, uint64_t cmask, uint64_t swap,
		  uint64_t smask, uint64_t want)
{
	uint64_t after, got = atomic_op(orig, [&] {
		xiwdv_wr_masked_atomic_cmp_swp(cli.qpx, peer.rkey, peer.addr,
					       cmp, cmask, swap, smask);
	}, IBV_WC_COMP_SWAP, &after);
	char what[128];

	std::snprintf(what, sizeof(what), "masked CmpSwap %#" PRIx64 " cmp %#"
		      PRIx64 "/%#" PRIx64 " swap %#" PRIx64 "/%#" PRIx64,
		      orig, cmp, cmask, swap, smask);
	check(got == orig, what, got, orig);
	check(after == want &&
	      after == xiw_masked_cswap(orig, cmp, cmask, swap, smask),
	      what, after, want);
}

void connect(cm_pair::Pair &pair)
{
	rdma_conn_param p{}, a{};
	Region r{};

	p.responder_resources = 4;
	p.initiator_depth = 4;
	a = p;
	a.private_data = &r;
	a.private_data_len = sizeof(r);
	pair.connect([](rdma_cm_id *id) { cli.setup(id); },
		     [&r](rdma_cm_id *id) {
			     srv.setup(id);
			     for (int i = 0; i < 8; i++)
				     srv.post_recv(100 + i);
			     r = { (uintptr_t)srv.mem.data(), srv.mr->rkey };
		     },
		     p, a, &srv.id, &peer, sizeof(peer));
}

void immediates()
{
	uint64_t imm = 0;

	// Write with a 64-bit immediate: data first, then the completion.
	for (int i = 0; i < 8; i++)
		cli.mem[8 + i] = 0x1111111111111111ULL * (i + 1);
	ibv_wr_start(cli.qpx);
	cli.qpx->wr_flags = IBV_SEND_SIGNALED;
	xiwdv_wr_rdma_write_imm64(cli.qpx, peer.rkey, peer.addr + 64,
				  0x0123456789abcdefULL);
	ibv_wr_set_sge(cli.qpx, cli.mr->lkey, (uintptr_t)&cli.mem[8], 64);
	// Immediate Data alone, with SE.
	cli.qpx->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED;
	xiwdv_wr_imm64(cli.qpx, 0xfedcba9876543210ULL);
	// The verbs form: 32 bits.
	cli.qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write_imm(cli.qpx, peer.rkey, peer.addr + 128,
			      htobe32(0xa5a5f00dU));
	ibv_wr_set_sge(cli.qpx, cli.mr->lkey, (uintptr_t)&cli.mem[8], 24);
	if (int rv = ibv_wr_complete(cli.qpx)) {
		errno = rv;
		die("ibv_wr_complete (imm)");
	}
	for (int i = 0; i < 3; i++) {
		ibv_wc wc = cli.poll(nullptr);
		check(wc.status == IBV_WC_SUCCESS, "immediate sender status",
		      wc.status, IBV_WC_SUCCESS);
	}

	ibv_wc wc = srv.poll(&imm);
	check(wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM &&
	      (wc.wc_flags & IBV_WC_WITH_IMM), "write_imm64 opcode",
	      wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	check(imm == 0x0123456789abcdefULL, "write_imm64 value", imm,
	      0x0123456789abcdefULL);
	check(wc.imm_data == htobe32(0x89abcdefU), "write_imm64 imm_data",
	      be32toh(wc.imm_data), 0x89abcdefU);
	check(wc.byte_len == 64, "write_imm64 byte_len", wc.byte_len, 64);
	check(std::memcmp(&srv.mem[8], &cli.mem[8], 64) == 0,
	      "write_imm64 data visible at the completion", srv.mem[15],
	      cli.mem[15]);

	wc = srv.poll(&imm);
	check(wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM, "imm64 alone opcode",
	      wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	check(imm == 0xfedcba9876543210ULL, "imm64 alone value", imm,
	      0xfedcba9876543210ULL);
	check(wc.byte_len == 0, "imm64 alone byte_len", wc.byte_len, 0);

	wc = srv.poll(&imm);
	check(wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM &&
	      be32toh(wc.imm_data) == 0xa5a5f00dU, "verbs write_imm imm_data",
	      be32toh(wc.imm_data), 0xa5a5f00dU);
	check(imm == 0xa5a5f00dU, "verbs write_imm 64-bit value", imm,
	      0xa5a5f00dU);
	check(wc.byte_len == 24, "verbs write_imm byte_len", wc.byte_len, 24);
}

} // namespace

int main(int argc, char **argv)
{
	setvbuf(stdout, nullptr, _IOLBF, 0);
	if (argc != 3) {
		std::fprintf(stderr, "usage: %s ADDR PORT\n", argv[0]);
		return 2;
	}
	cm_pair::Pair pair(argv[1], argv[2]);
	connect(pair);
	check(xiwdv_is_xiw_context(cli.id->verbs), "xiwdv_is_xiw_context", 1,
	      1);

	// Masked FetchAdd (RFC 7306 5.1.1): expectations written out.
	masked_fadd(0x00000000ffffffffULL, 1, 0, 0x0000000100000000ULL);
	masked_fadd(0x00000000ffffffffULL, 1, 0x8000000080000000ULL, 0);
	masked_fadd(0x7fffffff7fffffffULL, 0x0000000100000001ULL,
		    0x8000000080000000ULL, 0x8000000080000000ULL);
	masked_fadd(0x00ff00ff00ff00ffULL, 0x0001000100010001ULL,
		    0x8080808080808080ULL, 0x0000000000000000ULL);
	masked_fadd(0xffffffffffffffffULL, 1, 0x8000000000000000ULL, 0);
	masked_fadd(0xaaaaaaaaaaaaaaaaULL, 0xffffffffffffffffULL, ~0ULL,
		    0x5555555555555555ULL);
	// Masked CmpSwap (5.1.2).
	masked_cswap(0x1234567890abcdefULL, 0x12340000ffffffffULL,
		     0xffff000000000000ULL, 0xffffffffffffffffULL,
		     0x00000000000000ffULL, 0x1234567890abcdffULL);
	masked_cswap(0x1234567890abcdefULL, 0x99990000ULL,
		     0xffff0000ULL, 0, ~0ULL, 0x1234567890abcdefULL);
	masked_cswap(0x1234567890abcdefULL, 0, 0, 0x55ULL, 0xffULL,
		     0x1234567890abcd55ULL);

	// The plain verbs forms.
	uint64_t after, got;
	got = atomic_op(40, [] {
		ibv_wr_atomic_fetch_add(cli.qpx, peer.rkey, peer.addr, 2);
	}, IBV_WC_FETCH_ADD, &after);
	check(got == 40 && after == 42, "FetchAdd 40 + 2", after, 42);
	got = atomic_op(7, [] {
		ibv_wr_atomic_cmp_swp(cli.qpx, peer.rkey, peer.addr, 7, 9);
	}, IBV_WC_COMP_SWAP, &after);
	check(got == 7 && after == 9, "CmpSwap 7 -> 9", after, 9);
	got = atomic_op(8, [] {
		ibv_wr_atomic_cmp_swp(cli.qpx, peer.rkey, peer.addr, 7, 9);
	}, IBV_WC_COMP_SWAP, &after);
	check(got == 8 && after == 8, "CmpSwap miss leaves 8", after, 8);

	immediates();

	std::printf("%s: %d failure(s)\n", failures ? "FAIL" : "ok", failures);
	rdma_disconnect(cli.id);
	return failures ? 1 : 0;
}
