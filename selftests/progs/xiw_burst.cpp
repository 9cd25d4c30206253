// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// xiw_burst: bursts of small WRs of mixed types, posted one by one without
// polling in between (the provider's XIW_DOORBELL_SQ_BATCH doorbell, the
// kernel's TX batch: many FPDUs per sendmsg, answered per RX pass), and
// every effect checked end to end (dp_burst.sh):
//
//   - signaled completions arrive exactly in posting order, each with its
//     wr_id, opcode, status and byte length, and nothing else arrives;
//   - FetchAdd originals are 0, 1, 2, ... in posting order and CmpSwaps
//     (compare k, swap k + 1) all match: atomics execute once, in order;
//   - each Read returns what an earlier Write of the same burst put there
//     (a Read after a Write on one QP sees it);
//   - the peer receives the Sends in posting order with their bytes;
//   - the peer's memory holds every Write's bytes.
//
// With --depth Q below the burst the client's SQ is shallower than what
// it keeps posted: the kernel takes a WQE out of the ring as soon as a
// completion slot is free, so WQEs wait in the ring for completion slots
// (TX must be woken by the completion that frees one), and a post that
// finds the ring full is retried, still without polling, until the
// kernel has taken a slot (10 s at most).
//
// Both ends live in this process (cm_pair.h), on ADDR:PORT.
//
//   xiw_burst ADDR PORT [--rounds R] [--burst B] [--ord D] [--depth Q]
//             [--seed S]
//
// Prints "ok WHAT" / "FAIL WHAT" lines and "rate N WRs/s"; exit 0 if every
// check passed, 1 if one failed, 2 on a setup error.
#include "checks.h"
#include "cm_pair.h"
#include "verbs_side.h"

#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using checks::check;
using cm_pair::die;

namespace {

constexpr uint32_t kSlot = 64;		// bytes per Write/Send/Read slot
constexpr uint32_t kMaxBurst = 120;
constexpr uint32_t kDepth = 128;	// SQ depth: a whole burst fits
uint32_t sq_depth = kDepth;		// --depth

// Server memory: two atomic counters, the Write slots, the recv buffers.
constexpr size_t kSrvA = 0, kSrvC = 8, kSrvWrite = 4096,
		 kSrvRecv = kSrvWrite + kMaxBurst * kSlot,
		 kSrvBytes = kSrvRecv + kMaxBurst * kSlot;
// Client memory: Write/Send sources, Read sinks, atomic results.
constexpr size_t kCliSrc = 0, kCliSink = kMaxBurst * kSlot,
		 kCliRes = 2 * kMaxBurst * kSlot,
		 kCliBytes = kCliRes + kMaxBurst * 8;

enum Op { WRITE, READ, SEND, FADD, CSWAP, NOPS };

struct Wr {
	Op op;
	uint32_t len;
	int src;		// READ: the WRITE whose slot it reads
	bool signaled;
};

cm_pair::Side cli, srv;

const char *op_name(Op op)
{
	static const char *n[] = { "Write", "Read", "Send", "FetchAdd",
				   "CmpSwap" };
	return n[op];
}

ibv_wc_opcode wc_op(Op op)
{
	switch (op) {
	case WRITE: return IBV_WC_RDMA_WRITE;
	case READ: return IBV_WC_RDMA_READ;
	case SEND: return IBV_WC_SEND;
	case FADD: return IBV_WC_FETCH_ADD;
	default: return IBV_WC_COMP_SWAP;
	}
}

uint8_t pattern(uint32_t round, uint32_t i, uint32_t k)
{
	return uint8_t(round * 131 + i * 7 + k * 13 + 1);
}

// One WR's slot: the first LEN bytes the pattern of Write SRC, the rest PAD.
bool slot_ok(uint32_t round, const char *what, uint32_t i, uint32_t src,
	     const uint8_t *got, uint32_t len, uint8_t pad)
{
	for (uint32_t k = 0; k < kSlot; k++) {
		uint8_t want = k < len ? pattern(round, src, k) : pad;

		if (got[k] != want) {
			std::printf("# round %u %s %u (pattern of Write %u) byte %u: %#x, want %#x\n",
				    round, what, i, src, k, got[k], want);
			return false;
		}
	}
	return true;
}

struct Totals {
	uint64_t fadds = 0, cswaps = 0, wrs = 0;
	bool ok = true;
};

// Post one WR, with the WR id = its index in the burst.
void post(const Wr &w, uint32_t i, uint64_t raddr, uint32_t rkey,
	  const Totals &t)
{
	uint8_t *cm = (uint8_t *)cli.mem.data();
	ibv_sge sge{};
	ibv_send_wr wr{}, *bad;

	wr.wr_id = i;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = w.signaled ? IBV_SEND_SIGNALED : 0;
	sge.lkey = cli.mr->lkey;
	switch (w.op) {
	case WRITE:
		wr.opcode = IBV_WR_RDMA_WRITE;
		sge.addr = (uintptr_t)(cm + kCliSrc + i * kSlot);
		sge.length = w.len;
		wr.wr.rdma.remote_addr = raddr + kSrvWrite + i * kSlot;
		wr.wr.rdma.rkey = rkey;
		break;
	case READ:
		wr.opcode = IBV_WR_RDMA_READ;
		sge.addr = (uintptr_t)(cm + kCliSink + i * kSlot);
		sge.length = w.len;
		wr.wr.rdma.remote_addr = raddr + kSrvWrite + w.src * kSlot;
		wr.wr.rdma.rkey = rkey;
		break;
	case SEND:
		wr.opcode = IBV_WR_SEND;
		sge.addr = (uintptr_t)(cm + kCliSrc + i * kSlot);
		sge.length = w.len;
		break;
	case FADD:
	case CSWAP:
		wr.opcode = w.op == FADD ? IBV_WR_ATOMIC_FETCH_AND_ADD :
					   IBV_WR_ATOMIC_CMP_AND_SWP;
		sge.addr = (uintptr_t)(cm + kCliRes + i * 8);
		sge.length = 8;
		wr.wr.atomic.remote_addr = raddr + (w.op == FADD ? kSrvA : kSrvC);
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = w.op == FADD ? 1 : t.cswaps;
		wr.wr.atomic.swap = t.cswaps + 1;
		break;
	default:
		break;
	}
	// A full SQ ring (--depth below the burst) frees as the kernel
	// takes WQEs; only a post that never gets a slot is an error.
	auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
	int rv;

	while ((rv = ibv_post_send(cli.id->qp, &wr, &bad)) == ENOMEM &&
	       sq_depth < kDepth && std::chrono::steady_clock::now() < until)
		;
	if (rv) {
		errno = rv;
		die("ibv_post_send");
	}
}

// One burst of @n WRs; returns false after a failed check.
bool burst(uint32_t round, uint32_t n, std::mt19937 &rng, uint64_t raddr,
	   uint32_t rkey, Totals &t)
{
	uint8_t *cm = (uint8_t *)cli.mem.data();
	uint8_t *sm = (uint8_t *)srv.mem.data();
	std::vector<Wr> wrs(n);
	std::vector<uint64_t> fadd_want(n), cswap_want(n);
	std::vector<int> writes;
	uint32_t sends = 0;
	bool ok = true;

	// Choose the WRs; Reads only of a slot a Write of this burst filled.
	for (uint32_t i = 0; i < n; i++) {
		Wr &w = wrs[i];

		w.op = Op(rng() % NOPS);
		if (w.op == READ && writes.empty())
			w.op = WRITE;
		w.len = 1 + rng() % kSlot;
		w.signaled = rng() % 3 == 0 || i == n - 1;
		if (w.op == READ) {
			w.src = writes[rng() % writes.size()];
			w.len = wrs[w.src].len;
		}
		if (w.op == WRITE)
			writes.push_back(i);
		if (w.op == SEND) {
			srv.post_recv(sends, sm + kSrvRecv + sends * kSlot,
				      kSlot);
			sends++;
		}
		if (w.op == WRITE || w.op == SEND)
			for (uint32_t k = 0; k < kSlot; k++)
				cm[kCliSrc + i * kSlot + k] =
					pattern(round, i, k);
		if (w.op == READ || w.op == FADD || w.op == CSWAP)
			std::memset(cm + (w.op == READ ? kCliSink + i * kSlot :
						     kCliRes + i * 8),
				    0xee, w.op == READ ? kSlot : 8);
	}
	std::memset(sm + kSrvWrite, 0, kMaxBurst * kSlot);

	// Post them one by one, no poll in between.
	for (uint32_t i = 0; i < n; i++) {
		post(wrs[i], i, raddr, rkey, t);
		if (wrs[i].op == FADD)
			fadd_want[i] = t.fadds++;
		if (wrs[i].op == CSWAP)
			cswap_want[i] = t.cswaps++;
	}
	t.wrs += n;

	// The signaled completions, in posting order, and nothing else.
	std::vector<uint32_t> want;
	for (uint32_t i = 0; i < n; i++)
		if (wrs[i].signaled)
			want.push_back(i);
	auto wcs = cli.poll(want.size(), want.size() * 50 + 5000);
	auto extra = cli.poll(1, 2);
	wcs.insert(wcs.end(), extra.begin(), extra.end());
	if (wcs.size() != want.size()) {
		std::printf("# round %u: %zu completions, want %zu\n", round,
			    wcs.size(), want.size());
		ok = false;
	}
	for (size_t k = 0; k < wcs.size() && k < want.size(); k++) {
		const ibv_wc &wc = wcs[k];
		const Wr &w = wrs[want[k]];
		uint32_t blen = w.op == FADD || w.op == CSWAP ? 8 : w.len;

		if (wc.status != IBV_WC_SUCCESS || wc.wr_id != want[k] ||
		    wc.opcode != wc_op(w.op) ||
		    ((w.op == READ || w.op == FADD || w.op == CSWAP) &&
		     wc.byte_len != blen)) {
			std::printf("# round %u completion %zu: wr_id %" PRIu64
				    " (want %u, %s) status %s opcode %d (want %d) byte_len %u (want %u)\n",
				    round, k, wc.wr_id, want[k], op_name(w.op),
				    ibv_wc_status_str(wc.status), wc.opcode,
				    wc_op(w.op), wc.byte_len, blen);
			ok = false;
			break;
		}
	}
	if (!ok)
		return false;

	// Every effect.
	for (uint32_t i = 0; i < n && ok; i++) {
		const Wr &w = wrs[i];
		uint64_t got;

		switch (w.op) {
		case WRITE:
			ok = slot_ok(round, "Write", i, i,
				     sm + kSrvWrite + i * kSlot, w.len, 0);
			break;
		case READ:
			ok = slot_ok(round, "Read", i, w.src,
				     cm + kCliSink + i * kSlot, w.len, 0xee);
			break;
		case FADD:
		case CSWAP:
			std::memcpy(&got, cm + kCliRes + i * 8, 8);
			if (got != (w.op == FADD ? fadd_want[i] :
						   cswap_want[i])) {
				std::printf("# round %u %s %u: original %" PRIu64 ", want %" PRIu64 "\n",
					    round, op_name(w.op), i, got,
					    w.op == FADD ? fadd_want[i] :
							   cswap_want[i]);
				ok = false;
			}
			break;
		default:
			break;
		}
	}

	// The Sends, in order, on the peer.
	auto rwcs = srv.poll(sends, 5000 + sends * 50);
	extra = srv.poll(1, 2);
	rwcs.insert(rwcs.end(), extra.begin(), extra.end());
	if (rwcs.size() != sends) {
		std::printf("# round %u: %zu receives, want %u\n", round,
			    rwcs.size(), sends);
		ok = false;
	}
	uint32_t r = 0;
	for (uint32_t i = 0; i < n && ok && r < rwcs.size(); i++) {
		if (wrs[i].op != SEND)
			continue;
		const ibv_wc &wc = rwcs[r];
		bool good = wc.status == IBV_WC_SUCCESS && wc.wr_id == r &&
			    wc.opcode == IBV_WC_RECV &&
			    wc.byte_len == wrs[i].len;

		for (uint32_t k = 0; good && k < wrs[i].len; k++)
			good = sm[kSrvRecv + r * kSlot + k] ==
			       pattern(round, i, k);
		if (!good) {
			std::printf("# round %u receive %u (Send %u): wr_id %" PRIu64 " status %s byte_len %u (want %u) or bytes differ\n",
				    round, r, i, wc.wr_id,
				    ibv_wc_status_str(wc.status), wc.byte_len,
				    wrs[i].len);
			ok = false;
		}
		r++;
	}
	return ok;
}

} // namespace

int usage(const char *me)
{
	std::fprintf(stderr, "usage: %s ADDR PORT [--rounds R] [--burst B (1..%u)] [--ord D (1..16)] [--depth Q (1..%u)] [--seed S]\n",
		     me, kMaxBurst, kDepth);
	return 2;
}

int main(int argc, char **argv)
{
	uint32_t rounds = 40, n = 100, ord = 4, seed = 1;

	if (argc < 3 || argc % 2 == 0)
		return usage(argv[0]);
	for (int i = 3; i + 1 < argc; i += 2) {
		std::string k = argv[i];
		long v = std::strtol(argv[i + 1], nullptr, 0);

		if (k == "--rounds" && v >= 1)
			rounds = v;
		else if (k == "--burst" && v >= 1 && v <= kMaxBurst)
			n = v;
		else if (k == "--ord" && v >= 1 && v <= 16)
			ord = v;
		else if (k == "--depth" && v >= 1 && v <= kDepth)
			sq_depth = v;
		else if (k == "--seed")
			seed = v;
		else
			return usage(argv[0]);
	}

	cm_pair::Pair pair(argv[1], argv[2]);
	cm_pair::SideOpts co, so;
	rdma_conn_param p{}, a{};
	struct {
		uint64_t addr;
		uint32_t rkey;
	} peer{}, reg{};

	co.depth = sq_depth;
	co.recv_depth = kDepth;
	co.mem_bytes = kCliBytes;
	co.cq_entries = 2 * kDepth;
	so.depth = kMaxBurst + 8;
	so.mem_bytes = kSrvBytes;
	so.cq_entries = 2 * kDepth;
	so.access |= IBV_ACCESS_REMOTE_ATOMIC;
	p.initiator_depth = ord;
	p.responder_resources = ord;
	a.initiator_depth = ord;
	a.responder_resources = ord;
	a.private_data = &reg;
	a.private_data_len = sizeof(reg);
	pair.connect([&](rdma_cm_id *id) { cli.setup(id, co); },
		     [&](rdma_cm_id *id) {
			     srv.setup(id, so);
			     reg.addr = (uintptr_t)srv.mem.data();
			     reg.rkey = srv.mr->rkey;
		     },
		     p, a, &srv.id, &peer, sizeof(peer));

	std::mt19937 rng(seed);
	Totals t;
	auto t0 = std::chrono::steady_clock::now();
	uint32_t done = 0;

	for (; done < rounds; done++)
		if (!burst(done, n, rng, peer.addr, peer.rkey, t))
			break;
	double s = std::chrono::duration<double>(
			   std::chrono::steady_clock::now() - t0).count();

	check(done == rounds, std::to_string(done) + " of " +
				      std::to_string(rounds) + " bursts of " +
				      std::to_string(n) +
				      " WRs: completions in order, every effect as posted");
	uint64_t a_end, c_end;
	std::memcpy(&a_end, (uint8_t *)srv.mem.data() + kSrvA, 8);
	std::memcpy(&c_end, (uint8_t *)srv.mem.data() + kSrvC, 8);
	check(a_end == t.fadds && c_end == t.cswaps,
	      "counters " + std::to_string(a_end) + " / " +
		      std::to_string(c_end) + " = FetchAdds " +
		      std::to_string(t.fadds) + " / CmpSwaps " +
		      std::to_string(t.cswaps));
	std::printf("rate %.0f WRs/s (%" PRIu64 " WRs in %.3f s, ORD %u, SQ depth %u)\n",
		    t.wrs / s, t.wrs, s, ord, sq_depth);
	cli.teardown();
	srv.teardown();
	return checks::failures ? 1 : 0;
}
