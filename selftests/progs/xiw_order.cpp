// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// xiw_order: the responder executes Sends, RDMA Writes, RFC 7306 atomics
// and Atomic Writes in the order it receives them (IBA C9-28: "the
// responder executes SEND, RDMA WRITE and ATOMIC requests in the order
// received"; RFC 7306 atomics are there so that such applications "work
// interchangeably over iWARP").
//
// server ADDR PORT --rounds N [--timeout SEC]
//   Listens (rdma_cm), registers a 2 MiB region with REMOTE_ATOMIC |
//   REMOTE_READ | REMOTE_WRITE | LOCAL_WRITE and tells the client where it
//   is in the accept private data. Word X (offset 0) belongs to the
//   client's fadd rounds, word TAIL (offset 64) to its Atomic Writes, the
//   rest is a bulk area the client reads. Keeps receives posted; on every
//   Send completion (8 bytes: round i) checks that TAIL already holds at
//   least i (the Atomic Write posted before the Send). A Send of ~0 ends
//   the test: "ok notify: N rounds" or "FAIL notify: K of N rounds ...".
//
// client ADDR PORT --rounds N
//   Part 1, N rounds, each posted as one list without waiting:
//   FetchAdd(X, +5), RDMA Write(X = 0), RDMA Read(X); every other round
//   behind an RDMA Read of 512 KiB of the bulk area first (so that the
//   responder is still busy answering it when the rest arrives). Each
//   round: the FetchAdd returns 0 and the Read returns 0 (an RNIC that
//   executes the FetchAdd after the Write leaves 5).
//   Part 2, N rounds: Atomic Write(TAIL = i), Send(i), every other round
//   behind a 512 KiB Read too; the server checks TAIL on each Send.
//   Then Send(~0) and the server's verdict.
//
// Lines "ok ..." / "FAIL ..."; exit 0 only when every check passed; every
// round runs even after a failure, so the counts give the failure rate.
#include <infiniband/verbs.h>
#include <netdb.h>
#include <rdma/rdma_cma.h>

#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "verbs_side.h"

namespace {

using cm_pair::die;

constexpr uint32_t kMagic = 0x5849'4f52;	// "XIOR"
constexpr size_t kRegion = 2 << 20;
constexpr size_t kOffX = 0, kOffTail = 64, kOffBulk = 4096;
constexpr uint32_t kBulk = 512 * 1024;
constexpr uint64_t kEnd = ~0ULL;
constexpr int kRecvs = 256;

struct Info {
	uint32_t magic;
	uint32_t rkey;
	uint64_t addr;
};

int failures;

void report(bool ok, const std::string &what)
{
	std::printf("%s %s\n", ok ? "ok" : "FAIL", what.c_str());
	std::fflush(stdout);
	if (!ok)
		failures++;
}

int arg_int(int argc, char **argv, const char *name, int def)
{
	for (int i = 4; i + 1 < argc; i++)
		if (!std::strcmp(argv[i], name))
			return std::atoi(argv[i + 1]);
	return def;
}

rdma_cm_event *next_event(rdma_event_channel *ch, rdma_cm_event_type type)
{
	return cm_pair::expect(ch, type);
}

// ---- server ---------------------------------------------------------------

int server(const char *addr, const char *port, int rounds, int timeout)
{
	rdma_event_channel *ch = rdma_create_event_channel();
	addrinfo hints{}, *ai;
	rdma_cm_id *lid;
	cm_pair::SideT<uint64_t> s;
	cm_pair::SideOpts o;

	hints.ai_socktype = SOCK_STREAM;
	if (!ch || getaddrinfo(addr, port, &hints, &ai) ||
	    rdma_create_id(ch, &lid, nullptr, RDMA_PS_TCP) ||
	    rdma_bind_addr(lid, ai->ai_addr) || rdma_listen(lid, 1))
		die("listen");
	std::printf("listening\n");
	std::fflush(stdout);
	rdma_cm_event *ev = next_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	o.depth = 16;
	o.recv_depth = kRecvs;
	o.mem_bytes = kRegion;
	o.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	s.setup(ev->id, o);
	// receive buffers: 8 bytes each, after the bulk area
	uint64_t *rbuf = &s.mem[(kOffBulk + kBulk) / 8];
	for (int i = 0; i < kRecvs; i++)
		s.post_recv(i, &rbuf[i], 8);
	Info info{ kMagic, s.mr->rkey, (uintptr_t)s.mem.data() };
	rdma_conn_param p{};
	p.responder_resources = 8;
	p.initiator_depth = 8;
	p.private_data = &info;
	p.private_data_len = sizeof(info);
	if (rdma_accept(s.id, &p))
		die("rdma_accept");
	rdma_ack_cm_event(ev);
	rdma_ack_cm_event(next_event(ch, RDMA_CM_EVENT_ESTABLISHED));

	volatile uint64_t *tail = &s.mem[kOffTail / 8];
	auto end = std::chrono::steady_clock::now() +
		   std::chrono::seconds(timeout);
	int seen = 0, bad = 0;
	std::string first;
	bool done = false;

	while (!done && std::chrono::steady_clock::now() < end) {
		ibv_wc wc;
		int k = ibv_poll_cq(s.cq, 1, &wc);

		if (k < 0)
			die("ibv_poll_cq");
		if (!k)
			continue;
		// TAIL first: nothing after the completion may help it
		uint64_t t = *tail;

		if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV) {
			report(false, std::string("notify: completion ") +
				      ibv_wc_status_str(wc.status) +
				      " opcode " + std::to_string(wc.opcode));
			break;
		}
		uint64_t i = rbuf[wc.wr_id];

		if (i == kEnd) {
			done = true;
			break;
		}
		seen++;
		if (t < i) {
			if (!bad)
				first = "round " + std::to_string(i) +
					": TAIL " + std::to_string(t);
			bad++;
		}
		s.post_recv(wc.wr_id, &rbuf[wc.wr_id], 8);
	}
	if (!done)
		report(false, "notify: no end of test within " +
			      std::to_string(timeout) + " s (" +
			      std::to_string(seen) + " notifications)");
	report(seen == rounds, "notify: " + std::to_string(seen) + " of " +
			       std::to_string(rounds) + " notifications");
	report(!bad, bad ? "notify: " + std::to_string(bad) + " of " +
			   std::to_string(seen) +
			   " rounds saw a Send before its Atomic Write (first: " +
			   first + ")" :
			   "notify: every Send found its Atomic Write stored");
	rdma_disconnect(s.id);
	return failures ? 1 : 0;
}

// ---- client ---------------------------------------------------------------

struct Client {
	cm_pair::SideT<uint64_t> c;
	Info info{};

	void connect(const char *addr, const char *port)
	{
		rdma_event_channel *ch = rdma_create_event_channel();
		addrinfo hints{}, *ai;
		rdma_cm_id *id;
		cm_pair::SideOpts o;

		hints.ai_socktype = SOCK_STREAM;
		if (!ch || getaddrinfo(addr, port, &hints, &ai) ||
		    rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP) ||
		    rdma_resolve_addr(id, nullptr, ai->ai_addr, 2000))
			die("rdma_resolve_addr");
		rdma_ack_cm_event(next_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
		if (rdma_resolve_route(id, 2000))
			die("rdma_resolve_route");
		rdma_ack_cm_event(next_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
		o.depth = 16;
		o.mem_bytes = kRegion;
		c.setup(id, o);
		rdma_conn_param p{};
		p.responder_resources = 8;
		p.initiator_depth = 8;
		if (rdma_connect(id, &p))
			die("rdma_connect");
		rdma_cm_event *ev = next_event(ch, RDMA_CM_EVENT_ESTABLISHED);
		if (ev->param.conn.private_data_len < sizeof(info))
			die("accept private data");
		std::memcpy(&info, ev->param.conn.private_data, sizeof(info));
		rdma_ack_cm_event(ev);
		if (info.magic != kMagic)
			die("accept private data: magic");
	}

	// Post @n WRs as one list; wait for their @n completions, in order.
	std::vector<ibv_wc> run(ibv_send_wr *wr, int n)
	{
		ibv_send_wr *bad;

		for (int i = 0; i < n; i++) {
			wr[i].wr_id = i;
			wr[i].send_flags |= IBV_SEND_SIGNALED;
			wr[i].next = i + 1 < n ? &wr[i + 1] : nullptr;
		}
		if (ibv_post_send(c.id->qp, wr, &bad))
			die("ibv_post_send");
		std::vector<ibv_wc> wc;
		while ((int)wc.size() < n) {
			auto got = c.poll(n - wc.size(), 20000);

			if (got.empty())
				die("no completion in 20 s");
			wc.insert(wc.end(), got.begin(), got.end());
		}
		for (int i = 0; i < n; i++)
			if (wc[i].status != IBV_WC_SUCCESS ||
			    wc[i].wr_id != (uint64_t)i) {
				std::fprintf(stderr, "WR %d: wr_id %" PRIu64 " %s\n",
					     i, wc[i].wr_id,
					     ibv_wc_status_str(wc[i].status));
				std::exit(2);
			}
		return wc;
	}

	void bulk_read(ibv_send_wr &wr, ibv_sge &sge)
	{
		sge = { (uintptr_t)&c.mem[kOffBulk / 8], kBulk, c.mr->lkey };
		wr = {};
		wr.opcode = IBV_WR_RDMA_READ;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.wr.rdma.remote_addr = info.addr + kOffBulk;
		wr.wr.rdma.rkey = info.rkey;
	}

	// FetchAdd(X, +5), Write(X = 0), Read(X) [behind a bulk Read]
	void fadd_rounds(int rounds)
	{
		uint64_t *orig = &c.mem[0], *zero = &c.mem[1], *rd = &c.mem[2];
		int bad_read = 0, bad_orig = 0, n;
		std::string first;

		for (int r = 0; r < rounds; r++) {
			ibv_send_wr wr[4]{};
			ibv_sge sge[4];

			n = 0;
			*orig = ~0ULL;
			*zero = 0;
			*rd = ~0ULL;
			if (r & 1)
				bulk_read(wr[n], sge[n]), n++;
			sge[n] = { (uintptr_t)orig, 8, c.mr->lkey };
			wr[n].opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
			wr[n].wr.atomic.remote_addr = info.addr + kOffX;
			wr[n].wr.atomic.rkey = info.rkey;
			wr[n].wr.atomic.compare_add = 5;
			wr[n].sg_list = &sge[n];
			wr[n++].num_sge = 1;
			sge[n] = { (uintptr_t)zero, 8, c.mr->lkey };
			wr[n].opcode = IBV_WR_RDMA_WRITE;
			wr[n].wr.rdma.remote_addr = info.addr + kOffX;
			wr[n].wr.rdma.rkey = info.rkey;
			wr[n].sg_list = &sge[n];
			wr[n++].num_sge = 1;
			sge[n] = { (uintptr_t)rd, 8, c.mr->lkey };
			wr[n].opcode = IBV_WR_RDMA_READ;
			wr[n].wr.rdma.remote_addr = info.addr + kOffX;
			wr[n].wr.rdma.rkey = info.rkey;
			wr[n].sg_list = &sge[n];
			wr[n++].num_sge = 1;
			run(wr, n);
			if (*rd || *orig) {
				if (!bad_read && !bad_orig)
					first = "round " + std::to_string(r) +
						": Read " + std::to_string(*rd) +
						", FetchAdd original " +
						std::to_string(*orig);
				bad_read += *rd != 0;
				bad_orig += *orig != 0;
			}
		}
		report(!bad_read && !bad_orig,
		       bad_read || bad_orig ?
		       "fadd_write_read: Read(X) != 0 in " +
		       std::to_string(bad_read) + ", FetchAdd original != 0 in " +
		       std::to_string(bad_orig) + " of " +
		       std::to_string(rounds) + " rounds (first: " + first + ")" :
		       "fadd_write_read: " + std::to_string(rounds) +
		       " rounds, X == 0 after FetchAdd(X, +5), Write(X = 0)");
	}

	void send(uint64_t *v, ibv_send_wr &wr, ibv_sge &sge)
	{
		sge = { (uintptr_t)v, 8, c.mr->lkey };
		wr = {};
		wr.opcode = IBV_WR_SEND;
		wr.sg_list = &sge;
		wr.num_sge = 1;
	}

	// Atomic Write(TAIL = i), Send(i) [behind a bulk Read]
	void awrite_rounds(int rounds)
	{
		uint64_t *val = &c.mem[3], *note = &c.mem[4];

		for (int r = 1; r <= rounds; r++) {
			ibv_send_wr wr[3]{};
			ibv_sge sge[3];
			int n = 0;

			*val = r;
			*note = r;
			if (r & 1)
				bulk_read(wr[n], sge[n]), n++;
			// the 8 bytes are stored as they are (host order)
			sge[n] = { (uintptr_t)val, 8, c.mr->lkey };
			wr[n].opcode = IBV_WR_ATOMIC_WRITE;
			wr[n].wr.rdma.remote_addr = info.addr + kOffTail;
			wr[n].wr.rdma.rkey = info.rkey;
			wr[n].sg_list = &sge[n];
			wr[n++].num_sge = 1;
			send(note, wr[n], sge[n]);
			n++;
			run(wr, n);
		}
		report(true, "awrite_send: " + std::to_string(rounds) +
			     " rounds posted and completed");
		ibv_send_wr wr{};
		ibv_sge sge;
		c.mem[5] = kEnd;
		send(&c.mem[5], wr, sge);
		run(&wr, 1);
	}
};

int client(const char *addr, const char *port, int rounds)
{
	Client cl;

	cl.connect(addr, port);
	cl.fadd_rounds(rounds);
	cl.awrite_rounds(rounds);
	// the server's verdict comes from the server; let it see the end
	std::this_thread::sleep_for(std::chrono::milliseconds(200));
	rdma_disconnect(cl.c.id);
	return failures ? 1 : 0;
}

} // namespace

int main(int argc, char **argv)
{
	if (argc < 4) {
		std::fprintf(stderr,
			     "usage: %s server|client ADDR PORT [--rounds N] [--timeout SEC]\n",
			     argv[0]);
		return 2;
	}
	int rounds = arg_int(argc, argv, "--rounds", 200);
	std::string mode = argv[1];

	if (mode == "server")
		return server(argv[2], argv[3], rounds,
			      arg_int(argc, argv, "--timeout", 180));
	if (mode == "client")
		return client(argv[2], argv[3], rounds);
	std::fprintf(stderr, "unknown mode %s\n", argv[1]);
	return 2;
}
