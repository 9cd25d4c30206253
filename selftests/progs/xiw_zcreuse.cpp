// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// xiw_zcreuse: a completion means the buffer is free.
//
// One process connects two QPs through rdma_cm (cm_pair.h) and sends ROUNDS
// messages of SIZE bytes, all from ONE source buffer that it reuses as the
// verbs rules allow: round i fills the buffer with pattern(i), posts the
// message, waits for a signaled completion that comes after it, then at
// once overwrites the whole buffer with a scribble pattern before the next
// round. If the provider reports that completion while TCP still references
// the buffer's pages (queued behind a netem delay, or held for a
// retransmission after a loss), the peer receives scribble bytes: every
// byte of every message is checked at the peer.
//
// The rounds cycle through four ways a consumer learns that its buffer is
// free: an unsignaled RDMA Write followed by a signaled 8-byte Write; an
// unsignaled Send followed by the same; a signaled RDMA Write; a signaled
// Send. Writes land in their own slot of the peer's sink region, Sends in
// their own receive buffer. A final Send orders after every placement.
//
// Prints one "ok"/"FAIL" line per check and a throughput figure; exit
// status 0 only if every byte arrived as sent.
//
// Usage: xiw_zcreuse ADDR PORT [ROUNDS [SIZE]]
#include "cm_pair.h"

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

namespace {

using cm_pair::die;

constexpr uint64_t kScribble = 0xa5a5a5a5a5a5a5a5ULL;

// Word w of round r: never equal to the scribble, different per round.
uint64_t pattern(uint32_t round, size_t w)
{
	return (uint64_t(round + 1) << 40) ^ (uint64_t(w) * 0x9e3779b1ULL) ^
	       0x1122334455667788ULL;
}

struct Side {
	rdma_cm_id *id = nullptr;
	ibv_pd *pd = nullptr;
	ibv_cq *cq = nullptr;
	ibv_mr *mr = nullptr;
	std::vector<uint64_t> mem;

	void setup(rdma_cm_id *cid, size_t words, uint32_t depth)
	{
		id = cid;
		mem.assign(words, 0);
		pd = ibv_alloc_pd(id->verbs);
		cq = ibv_create_cq(id->verbs, 2 * depth + 8, nullptr, nullptr,
				   0);
		if (!pd || !cq)
			die("pd/cq");
		ibv_qp_init_attr a{};
		a.qp_type = IBV_QPT_RC;
		a.send_cq = cq;
		a.recv_cq = cq;
		a.cap.max_send_wr = depth + 8;
		a.cap.max_recv_wr = depth + 8;
		a.cap.max_send_sge = 1;
		a.cap.max_recv_sge = 1;
		if (rdma_create_qp(id, pd, &a))
			die("rdma_create_qp");
		mr = ibv_reg_mr(pd, mem.data(), mem.size() * sizeof(uint64_t),
				IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
		if (!mr)
			die("ibv_reg_mr");
	}

	// One completion, checked for success (spins; allow 60 s in TCG).
	ibv_wc poll()
	{
		auto end = std::chrono::steady_clock::now() +
			   std::chrono::seconds(60);
		ibv_wc wc{};

		while (std::chrono::steady_clock::now() < end) {
			int n = ibv_poll_cq(cq, 1, &wc);

			if (n < 0)
				die("ibv_poll_cq");
			if (!n)
				continue;
			if (wc.status != IBV_WC_SUCCESS) {
				std::fprintf(stderr,
					     "xiw_zcreuse: wr_id %" PRIu64 ": %s\n",
					     wc.wr_id,
					     ibv_wc_status_str(wc.status));
				std::exit(2);
			}
			return wc;
		}
		std::fprintf(stderr, "xiw_zcreuse: no completion in 60 s\n");
		std::exit(2);
	}
};

void post_send(Side &s, ibv_wr_opcode op, uint64_t wr_id, const void *buf,
	       uint32_t len, bool signaled, uint64_t raddr, uint32_t rkey)
{
	ibv_sge sge{ (uintptr_t)buf, len, s.mr->lkey };
	ibv_send_wr wr{}, *bad;

	wr.wr_id = wr_id;
	wr.opcode = op;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = signaled ? IBV_SEND_SIGNALED : 0;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	if (ibv_post_send(s.id->qp, &wr, &bad))
		die("ibv_post_send");
}

void post_recv(Side &s, uint64_t wr_id, void *buf, uint32_t len)
{
	ibv_sge sge{ (uintptr_t)buf, len, s.mr->lkey };
	ibv_recv_wr wr{}, *bad;

	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	if (ibv_post_recv(s.id->qp, &wr, &bad))
		die("ibv_post_recv");
}

} // namespace

int main(int argc, char **argv)
{
	if (argc < 3) {
		std::fprintf(stderr, "usage: %s ADDR PORT [ROUNDS [SIZE]]\n",
			     argv[0]);
		return 2;
	}
	const uint32_t rounds = argc > 3 ? std::atoi(argv[3]) : 64;
	const uint32_t size = argc > 4 ? std::atoi(argv[4]) : 65536;
	const size_t words = size / sizeof(uint64_t);
	if (!rounds || size < 4096 || size % 8) {
		std::fprintf(stderr, "ROUNDS >= 1, SIZE >= 4096 and a multiple of 8\n");
		return 2;
	}

	Side srv, cli;
	cm_pair::Pair pair(argv[1], argv[2]);
	rdma_conn_param p{};
	p.responder_resources = 1;
	p.initiator_depth = 1;
	rdma_cm_id *passive;
	// srv: a sink slot and a receive buffer per round, plus the token.
	// cli: the one reused source buffer, then the 8-byte token.
	pair.connect([&](rdma_cm_id *id) { cli.setup(id, words + 1, 2 * rounds); },
		     [&](rdma_cm_id *id) {
			     srv.setup(id, 2 * words * rounds + 1, 2 * rounds);
		     },
		     p, p, &passive);

	uint64_t *src = cli.mem.data();
	uint64_t *tok = src + words;
	uint64_t *sink = srv.mem.data();			// Write slots
	uint64_t *rbuf = sink + words * rounds;		// Send buffers
	uint64_t *stok = rbuf + words * rounds;
	const uint64_t raddr = (uintptr_t)sink;
	const uint32_t rkey = srv.mr->rkey;

	uint32_t sends = 0;
	for (uint32_t r = 0; r < rounds; r++)
		if (r % 2)
			post_recv(srv, r, rbuf + words * r, size);
	post_recv(srv, rounds, stok, 8);			// final Send
	for (uint32_t r = 0; r < rounds; r++)
		sends += r % 2;

	auto t0 = std::chrono::steady_clock::now();
	uint32_t recvd = 0;
	for (uint32_t r = 0; r < rounds; r++) {
		const bool send = r % 2;
		const bool self_signaled = r % 4 >= 2;
		const ibv_wr_opcode op = send ? IBV_WR_SEND : IBV_WR_RDMA_WRITE;

		for (size_t w = 0; w < words; w++)
			src[w] = pattern(r, w);
		post_send(cli, op, r, src, size, self_signaled,
			  raddr + uint64_t(r) * size, rkey);
		if (!self_signaled) {
			// a later signaled WR: 8 bytes into the token word
			*tok = r;
			post_send(cli, IBV_WR_RDMA_WRITE, 1000000 + r, tok, 8,
				  true, (uintptr_t)stok, rkey);
		}
		ibv_wc wc = cli.poll();
		if (wc.wr_id != (self_signaled ? r : 1000000 + r)) {
			std::fprintf(stderr, "round %u: completion wr_id %" PRIu64 "\n",
				     r, wc.wr_id);
			return 2;
		}
		// The buffer is free: reuse it at once.
		for (size_t w = 0; w < words; w++)
			src[w] = kScribble;
		// Keep the receive CQ drained (no overflow).
		ibv_wc rwc;
		while (ibv_poll_cq(srv.cq, 1, &rwc) > 0) {
			if (rwc.status != IBV_WC_SUCCESS) {
				std::fprintf(stderr, "receive: %s\n",
					     ibv_wc_status_str(rwc.status));
				return 2;
			}
			recvd++;
		}
	}
	// A last Send: placed after every earlier message of the stream.
	*tok = 0x5eed;
	post_send(cli, IBV_WR_SEND, 2000000, tok, 8, true, 0, 0);
	cli.poll();
	while (recvd < sends + 1) {
		ibv_wc rwc = srv.poll();
		(void)rwc;
		recvd++;
	}
	double secs = std::chrono::duration<double>(
			      std::chrono::steady_clock::now() - t0).count();

	int failures = 0;
	for (uint32_t r = 0; r < rounds; r++) {
		const uint64_t *got = (r % 2 ? rbuf : sink) + words * r;
		size_t bad = 0, scribbled = 0, first = words;

		for (size_t w = 0; w < words; w++) {
			if (got[w] == pattern(r, w))
				continue;
			bad++;
			scribbled += got[w] == kScribble;
			if (first == words)
				first = w;
		}
		if (bad) {
			failures++;
			std::printf("FAIL round %u (%s, %s): %zu of %zu words wrong, %zu of them the scribble written after the completion, first at byte %zu\n",
				    r, r % 2 ? "Send" : "RDMA Write",
				    r % 4 >= 2 ? "signaled" : "unsignaled, later signaled Write",
				    bad, words, scribbled, first * 8);
		}
	}
	std::printf("%s %u messages of %u bytes from one reused buffer, every byte checked at the peer (%.1f MB/s)\n",
		    failures ? "FAIL" : "ok", rounds, size,
		    rounds * double(size) / secs / 1e6);

	rdma_disconnect(cli.id);
	rdma_destroy_qp(cli.id);
	rdma_destroy_qp(passive);
	ibv_dereg_mr(cli.mr);
	ibv_dereg_mr(srv.mr);
	ibv_destroy_cq(cli.cq);
	ibv_destroy_cq(srv.cq);
	ibv_dealloc_pd(cli.pd);
	ibv_dealloc_pd(srv.pd);
	rdma_destroy_id(cli.id);
	rdma_destroy_id(passive);
	return failures ? 1 : 0;
}
