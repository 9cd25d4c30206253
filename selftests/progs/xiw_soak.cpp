// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// xiw_soak: many connected QPs with mixed traffic for a long time.
//
// NQPS QPs (NQPS / 2 rdma_cm connections, both ends in this process,
// over ADDR:PORT) each get their own PD, CQ and 8 KiB MR (local write,
// remote write, read and atomic). Every QP keeps up to 4 signaled work
// requests outstanding, chosen in turn from Send (256 bytes carrying a
// sequence number; only when the peer has a receive posted, counted in
// this process), RDMA Write (1 KiB), RDMA Read (1 KiB), Fetch&Add and
// Compare&Swap on an 8-byte counter of its own in the peer's MR. For
// SECS seconds every completion is checked: status success, Sends
// arrive in order with the expected sequence number and every byte of
// their payload (a pattern of the sequence number and offset), every
// Fetch&Add returns the counter's previous value (one atomic at a time
// per QP, so the values are known), a Compare&Swap with the right compare
// value swaps. Writes and Reads carry data that is checked too: each
// Write puts a pattern of its own round (QP, round number) into the
// peer's MR, and the next Read reads that range back (the Write placed
// before the Read Request is served: one stream, in order; no next Write
// until the read-back completed) and must return exactly that pattern;
// the other Reads (every other one) read a range of the peer's MR that
// holds a fixed pattern of the peer's. Then every connection is disconnected and
// everything destroyed.
//
// Prints "connected N QPs in T s", a progress line every 30 s and at the
// end "ops N (send N write N read N fadd N cswap N), errors N", "payloads
// checked: writes N reads N sends N" and "teardown ok". Exit 1 on any error.
//
// Usage: xiw_soak ADDR PORT NQPS SECS
#include "verbs_side.h"

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using cm_pair::die;
using cm_pair::Side;
using cm_pair::SideOpts;
using Clock = std::chrono::steady_clock;

// One QP's 8 KiB buffer.
constexpr size_t kMem = 8192;
constexpr size_t kSrc = 0;		// Send sources, 4 x 256 bytes
constexpr size_t kWriteSrc = 1024;	// Write source, 1 KiB
constexpr size_t kReadDst = 2048;	// Read lands here, 1 KiB
constexpr size_t kRecv = 3072;		// 8 receive buffers of 256 bytes
constexpr size_t kWriteDst = 5120;	// the peer's Writes, 1 KiB
constexpr size_t kReadSrc = 6144;	// the peer's Reads, 1 KiB, fixed
constexpr size_t kAtomic = 7168;	// counter for the peer's atomics
constexpr size_t kAtomicRes = 7176;	// this QP's atomic results
constexpr size_t kRw = 1024;		// Write and Read length
constexpr uint32_t kRecvs = 8, kMsg = 256, kWin = 4;

enum Op : uint32_t { SEND, WRITE, READ, FADD, CSWAP, NOPS, RECV = 7 };
const char *const kOpName[] = { "send", "write", "read", "fadd", "cswap" };

struct Qp {
	Side s;
	Qp *peer = nullptr;
	uint32_t idx = 0;
	uint32_t outstanding = 0;
	uint32_t recv_posted = 0;	// receives posted and not consumed
	uint32_t next_op = 0;
	uint64_t send_seq = 0, recv_seq = 0;
	bool atomic_busy = false;
	uint64_t atomics = 0;
	uint64_t atomic_expect = 0;	// the peer's counter, as we know it
	uint64_t writes = 0;		// Write rounds posted
	bool write_unread = false;	// the last Write is not read back yet
	bool read_busy = false;		// a Read is outstanding
	bool read_back = false;		// ... of the last Write
	uint64_t reads = 0;		// Reads posted
};

uint64_t ops[NOPS], errors, checked_writes, checked_reads, checked_sends;

// Byte @i of Write round @k of QP @q, and of the fixed range of QP @q.
// Byte @i (8 and up) of Send @seq: every byte differs from its
// neighbours and from the same byte of the Sends around it.
uint8_t send_byte(uint64_t seq, size_t i)
{
	return uint8_t(seq * 29 + i * 13 + (seq >> 8));
}

uint8_t write_byte(uint32_t q, uint64_t k, size_t i)
{
	return uint8_t(k * 131 + i * 7 + q * 17 + (i >> 8));
}

uint8_t fixed_byte(uint32_t q, size_t i)
{
	return uint8_t(q * 29 + i * 3 + 0x5a + (i >> 8));
}

void error(const std::string &what)
{
	if (errors++ < 20)
		std::printf("FAIL %s\n", what.c_str());
}

uint64_t wrid(const Qp &q, Op op) { return (uint64_t(q.idx) << 8) | op; }

void post_recv(Qp &q, uint32_t slot)
{
	ibv_sge sge{ uint64_t(uintptr_t(q.s.mem.data() + kRecv + kMsg * slot)),
		     kMsg, q.s.mr->lkey };
	ibv_recv_wr wr{}, *bad;
	wr.wr_id = (uint64_t(q.idx) << 8) | RECV | (uint64_t(slot) << 40);
	wr.sg_list = &sge;
	wr.num_sge = 1;
	if (ibv_post_recv(q.s.id->qp, &wr, &bad))
		die("ibv_post_recv");
	q.recv_posted++;
}

// Post the next operation of @q if it has room; false if nothing fits.
bool post_one(Qp &q)
{
	if (q.outstanding >= kWin)
		return false;
	Qp &p = *q.peer;
	uint8_t *m = q.s.mem.data();
	uint64_t raddr = uint64_t(uintptr_t(p.s.mem.data()));
	ibv_sge sge{ uint64_t(uintptr_t(m + kSrc)), 0, q.s.mr->lkey };
	ibv_send_wr wr{}, *bad;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	// in turn Send, Write, Read, an atomic (Fetch&Add and
	// Compare&Swap alternating)
	for (uint32_t tries = 0; tries < 4; tries++) {
		Op op = Op(q.next_op++ % 4);
		if (op == FADD)
			op = q.atomics % 2 ? CSWAP : FADD;
		switch (op) {
		case SEND:
			if (!p.recv_posted)
				continue;	// iWARP: a Send needs a receive
			p.recv_posted--;
			// a slot per WR of the window: a Send's source is
			// not written again before it completed
			sge.addr = uint64_t(uintptr_t(m + kSrc + kMsg * (q.send_seq % kWin)));
			std::memcpy(m + kSrc + kMsg * (q.send_seq % kWin), &q.send_seq, 8);
			for (size_t i = 8; i < kMsg; i++)
				m[kSrc + kMsg * (q.send_seq % kWin) + i] =
					send_byte(q.send_seq, i);
			q.send_seq++;
			sge.length = kMsg;
			wr.opcode = IBV_WR_SEND;
			break;
		case WRITE:
			// a new round once the last one was read back
			if (q.write_unread)
				continue;
			q.writes++;
			for (size_t i = 0; i < kRw; i++)
				m[kWriteSrc + i] = write_byte(q.idx, q.writes, i);
			q.write_unread = true;
			sge.addr = uint64_t(uintptr_t(m + kWriteSrc));
			sge.length = kRw;
			wr.opcode = IBV_WR_RDMA_WRITE;
			wr.wr.rdma.remote_addr = raddr + kWriteDst;
			wr.wr.rdma.rkey = p.s.mr->rkey;
			break;
		case READ:
			if (q.read_busy)
				continue;
			// the last Write back (every other Read), else the
			// peer's fixed range
			q.read_busy = true;
			q.read_back = q.write_unread && !(q.reads++ % 2);
			std::memset(m + kReadDst, 0, kRw);
			sge.addr = uint64_t(uintptr_t(m + kReadDst));
			sge.length = kRw;
			wr.opcode = IBV_WR_RDMA_READ;
			wr.wr.rdma.remote_addr = raddr + (q.read_back ? kWriteDst : kReadSrc);
			wr.wr.rdma.rkey = p.s.mr->rkey;
			break;
		case FADD:
		case CSWAP:
			if (q.atomic_busy)
				continue;
			q.atomic_busy = true;
			q.atomics++;
			sge.addr = uint64_t(uintptr_t(m + kAtomicRes));
			sge.length = 8;
			wr.opcode = op == FADD ? IBV_WR_ATOMIC_FETCH_AND_ADD :
						 IBV_WR_ATOMIC_CMP_AND_SWP;
			wr.wr.atomic.remote_addr = raddr + kAtomic;
			wr.wr.atomic.rkey = p.s.mr->rkey;
			// Fetch&Add adds 1; Compare&Swap adds 2 the other way
			wr.wr.atomic.compare_add = op == FADD ? 1 : q.atomic_expect;
			wr.wr.atomic.swap = q.atomic_expect + 2;
			break;
		default:
			continue;
		}
		wr.wr_id = wrid(q, op);
		if (ibv_post_send(q.s.id->qp, &wr, &bad))
			die("ibv_post_send");
		q.outstanding++;
		return true;
	}
	return false;
}

void complete(std::vector<Qp> &qps, const ibv_wc &wc)
{
	uint32_t idx = uint32_t((wc.wr_id >> 8) & 0xffffffu);
	uint32_t op = uint32_t(wc.wr_id & 0xff);
	if (idx >= qps.size())
		return error("completion of unknown wr_id " + std::to_string(wc.wr_id));
	Qp &q = qps[idx];
	if (wc.status != IBV_WC_SUCCESS)
		return error("QP " + std::to_string(idx) + " op " +
			     std::to_string(op) + ": " + ibv_wc_status_str(wc.status));
	uint8_t *m = q.s.mem.data();
	if (op == RECV) {
		uint32_t slot = uint32_t(wc.wr_id >> 40);
		const uint8_t *b = m + kRecv + kMsg * slot;
		uint64_t seq;
		size_t i = 8;
		std::memcpy(&seq, b, 8);
		while (i < kMsg && b[i] == send_byte(seq, i))
			i++;
		if (wc.byte_len != kMsg || seq != q.recv_seq || i < kMsg)
			error("QP " + std::to_string(idx) + ": Send " +
			      std::to_string(seq) + " (" + std::to_string(wc.byte_len) +
			      " bytes, first wrong byte " + std::to_string(i) +
			      "), expected " + std::to_string(q.recv_seq));
		else
			checked_sends++;
		q.recv_seq++;
		// the sender took it from recv_posted: post it again
		post_recv(q, slot);
		return;
	}
	q.outstanding--;
	if (op < NOPS)
		ops[op]++;
	if (op == READ) {
		const uint8_t *d = m + kReadDst;
		size_t i;

		for (i = 0; i < kRw; i++)
			if (d[i] != (q.read_back ? write_byte(q.idx, q.writes, i) :
						   fixed_byte(q.peer->idx, i)))
				break;
		if (i < kRw) {
			char b[160];

			std::snprintf(b, sizeof(b),
				      "QP %u: Read of %s: byte %zu is 0x%02x, want 0x%02x",
				      q.idx, q.read_back ? "the last Write" : "the fixed range",
				      i, d[i], q.read_back ? write_byte(q.idx, q.writes, i) :
							     fixed_byte(q.peer->idx, i));
			error(b);
		}
		if (q.read_back) {
			checked_writes++;
			q.write_unread = false;
		}
		checked_reads++;
		q.read_busy = false;
	}
	if (op == FADD || op == CSWAP) {
		uint64_t old;
		std::memcpy(&old, m + kAtomicRes, 8);
		if (old != q.atomic_expect)
			error("QP " + std::to_string(idx) + ": " + kOpName[op] +
			      " returned " + std::to_string(old) + ", expected " +
			      std::to_string(q.atomic_expect));
		q.atomic_expect = old + (op == FADD ? 1 : 2);
		q.atomic_busy = false;
	}
}

} // namespace

int main(int argc, char **argv)
{
	if (argc < 5) {
		std::fprintf(stderr, "usage: %s ADDR PORT NQPS SECS\n", argv[0]);
		return 2;
	}
	uint32_t nqps = uint32_t(std::strtoul(argv[3], nullptr, 0)) & ~1u;
	long secs = std::strtol(argv[4], nullptr, 0);
	if (nqps < 2 || nqps > (1u << 24))
		return std::fprintf(stderr, "NQPS: 2 .. 2^24\n"), 2;
	cm_pair::Pair pair(argv[1], argv[2]);
	std::vector<Qp> qps(nqps);
	SideOpts o;
	o.depth = kWin + 2;
	o.recv_depth = kRecvs;
	o.mem_bytes = kMem;
	o.access |= IBV_ACCESS_REMOTE_ATOMIC;
	rdma_conn_param p{};
	p.initiator_depth = 2;
	p.responder_resources = 2;

	auto t0 = Clock::now();
	for (uint32_t c = 0; c < nqps / 2; c++) {
		Qp &a = qps[2 * c], &b = qps[2 * c + 1];
		rdma_cm_id *passive;
		a.idx = 2 * c;
		b.idx = 2 * c + 1;
		a.peer = &b;
		b.peer = &a;
		auto setup = [&](Qp &q) {
			return [&q, &o](rdma_cm_id *id) {
				q.s.setup(id, o);
				for (size_t i = 0; i < kRw; i++)
					q.s.mem[kReadSrc + i] = fixed_byte(q.idx, i);
				for (uint32_t i = 0; i < kRecvs; i++)
					post_recv(q, i);
			};
		};
		pair.connect(setup(a), setup(b), p, p, &passive);
		if ((c + 1) % 100 == 0) {
			std::printf("connected %u\n", 2 * (c + 1));
			std::fflush(stdout);
		}
	}
	double tc = std::chrono::duration<double>(Clock::now() - t0).count();
	std::printf("connected %u QPs in %.1f s\n", nqps, tc);
	std::fflush(stdout);

	auto start = Clock::now(), end = start + std::chrono::seconds(secs);
	auto next_report = start + std::chrono::seconds(30);
	bool draining = false;
	ibv_wc wc[32];
	for (;;) {
		auto now = Clock::now();
		if (!draining && now >= end)
			draining = true;	// let the outstanding WRs finish
		if (now >= next_report) {
			uint64_t sum = 0;
			for (uint64_t v : ops)
				sum += v;
			std::printf("%ld s: ops %llu, errors %llu\n",
				    long(std::chrono::duration_cast<std::chrono::seconds>(now - start).count()),
				    (unsigned long long)sum, (unsigned long long)errors);
			std::fflush(stdout);
			next_report += std::chrono::seconds(30);
		}
		bool busy = false, pending = false;
		for (Qp &q : qps) {
			int n = ibv_poll_cq(q.s.cq, 32, wc);
			if (n < 0)
				die("ibv_poll_cq");
			for (int i = 0; i < n; i++)
				complete(qps, wc[i]);
			busy |= n > 0;
			if (!draining)
				while (post_one(q))
					busy = true;
			pending |= q.outstanding > 0;
		}
		if (errors > 100 || (draining && !pending) ||
		    (draining && now > end + std::chrono::seconds(60)))
			break;
		if (!busy)
			usleep(200);
	}
	uint64_t sum = 0;
	for (uint64_t v : ops)
		sum += v;
	uint32_t left = 0;
	for (Qp &q : qps)
		left += q.outstanding;
	if (left)
		error(std::to_string(left) + " WRs not completed 60 s after the end");
	std::printf("ops %llu (send %llu write %llu read %llu fadd %llu cswap %llu) in %ld s, errors %llu\n",
		    (unsigned long long)sum, (unsigned long long)ops[SEND],
		    (unsigned long long)ops[WRITE], (unsigned long long)ops[READ],
		    (unsigned long long)ops[FADD], (unsigned long long)ops[CSWAP],
		    secs, (unsigned long long)errors);
	std::printf("payloads checked: writes %llu reads %llu sends %llu\n",
		    (unsigned long long)checked_writes,
		    (unsigned long long)checked_reads,
		    (unsigned long long)checked_sends);
	std::fflush(stdout);

	// graceful close of every connection, then every object
	for (uint32_t c = 0; c < nqps / 2; c++)
		rdma_disconnect(qps[2 * c].s.id);
	uint32_t seen = 0;
	auto limit = Clock::now() + std::chrono::seconds(120);
	while (seen < nqps && Clock::now() < limit) {
		for (rdma_event_channel *ch : { pair.cch, pair.sch }) {
			rdma_cm_event *ev;
			int fl = fcntl(ch->fd, F_GETFL);
			fcntl(ch->fd, F_SETFL, fl | O_NONBLOCK);
			while (!rdma_get_cm_event(ch, &ev)) {
				if (ev->event == RDMA_CM_EVENT_DISCONNECTED)
					seen++;
				rdma_ack_cm_event(ev);
			}
			fcntl(ch->fd, F_SETFL, fl);
		}
		usleep(10000);
	}
	if (seen < nqps)
		error("only " + std::to_string(seen) + " of " + std::to_string(nqps) +
		      " ends saw DISCONNECTED");
	for (Qp &q : qps)
		q.s.teardown();
	if (errors)
		return std::printf("%llu errors\n", (unsigned long long)errors), 1;
	std::printf("teardown ok\n");
	return 0;
}
