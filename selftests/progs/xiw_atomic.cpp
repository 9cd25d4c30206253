// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// xiw_atomic: RFC 7306 atomics and Immediate Data under contention.
//
// server ADDR PORT --conns N --errconns N --imm M --expect-a A --expect-b B
//        [--local-min K] [--dump FILE] [--timeout SEC]
//   Listens (rdma_cm), registers one 1 MiB region with REMOTE_ATOMIC |
//   REMOTE_READ | REMOTE_WRITE | LOCAL_WRITE and one 4 KiB region without
//   REMOTE_ATOMIC, posts M+1 zero-SGE receives per connection and tells
//   every client where they are in the accept private data. From the first
//   worker connection on, a local CPU thread does what the clients do on
//   the same words with __atomic builtins: FetchAdd(+1) counter A, and
//   take the spinlock, increment counter B non-atomically, release, until
//   every worker is gone (and at least K times). Checks each
//   RECV_RDMA_WITH_IMM: immediates in order per connection, byte_len the
//   Write's length, the written data already in memory; a zero-length
//   Write with Immediate last (byte_len 0). Error connections must raise
//   the documented responder async event. At the end: A == expect-a +
//   local FetchAdds, B == expect-b + local acquisitions, the lock free,
//   the CmpSwap-mismatch word, the misaligned target and the
//   no-atomic region untouched. --dump: the local FetchAdd originals.
//
// client ADDR PORT --threads T --iters N --locks L --imm M [--dump FILE]
//   T threads, each with its own rdma_cm connection and QP: N FetchAdd(+1)
//   on A (up to ORD outstanding; originals unique and ascending), in L+1
//   chunks with one acquisition of the CmpSwap spinlock (0 -> my id)
//   between chunks, around RDMA Read B / RDMA Write B+1 and a CmpSwap
//   release (my id -> 0, must return my id), one CmpSwap that
//   does not match (returns the word, leaves it), M RDMA Writes with
//   Immediate (immediate = sequence, data encodes it) and one zero-length
//   Write with Immediate. --dump: every FetchAdd original, one a line.
//   --ord D asks for an ORD of D (1..8, default 8) and --window W keeps
//   up to W FetchAdds posted (1..60, default 8): with W > D the WRs
//   beyond ORD wait in the provider's SQ for a free ORD slot (each must
//   still go out, complete in posting order, and execute in order).
//
// errors ADDR PORT
//   RFC 7306 section 8: a FetchAdd on a target that is not 8-byte aligned,
//   and a CmpSwap on a region without remote-atomic right, each on its
//   own connection: the requester's WR must fail with the documented
//   status, its QP go to ERROR with the documented async event.
//
// Lines "ok ..." / "FAIL ..."; exit 0 only when every check passed. A
// completion missing for 20 s fails with the TCP state of every
// connection (ss), and says whether the CQ held it without an event.
#include <endian.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr uint32_t kMagic = 0x58494154;	// "XIAT"
constexpr size_t kRegion = 1 << 20;
constexpr size_t kOffA = 0, kOffLock = 64, kOffB = 128, kOffCs = 192;
constexpr size_t kOffMis = 256;		// 16 bytes, target kOffMis + 4
constexpr size_t kOffImm = 4096;	// imm slots: (conn * M + seq) * kSlot
constexpr size_t kSlot = 2048;
constexpr uint64_t kCsVal = 0x1122334455667788ULL;
constexpr uint64_t kMisVal = 0x0123456789abcdefULL;
constexpr uint64_t kNaVal = 0xa5a5a5a5a5a5a5a5ULL;
constexpr uint32_t kMaxConns = 32;
constexpr uint32_t kMaxImm = 255;
constexpr uint32_t kImmLast = 0xffffff;	// zero-length Write w/ Imm
constexpr int kDepth = 8;		// IRD/ORD asked for

// Expected outcome of the section 8 cases (what xiw does, see atomic_contention.sh).
// Requester: the Terminate completes the WR with the IBA chapter 9 status
// of its class and its layer/type/code as vendor_err; its QP raises
// QP_FATAL. Misaligned: RDMAP / Remote Operation / catastrophic error
// localized to the stream (0x0207) on the wire, RFC 7306's code, which
// for an atomic completes as the IBA's invalid request; no right:
// RDMAP / Remote Protection / access rights violation (0x0102).
constexpr ibv_wc_status kMisWcStatus = IBV_WC_REM_INV_REQ_ERR;
constexpr uint32_t kMisVendorErr = 0x0207;
constexpr ibv_wc_status kNaWcStatus = IBV_WC_REM_ACCESS_ERR;
constexpr uint32_t kNaVendorErr = 0x0102;
constexpr ibv_event_type kErrReqEvent = IBV_EVENT_QP_FATAL;
// Responder: misaligned = RDMAP Remote Operation Error -> QP_REQ_ERR;
// no remote-atomic right = RDMAP Remote Protection Error -> QP_ACCESS_ERR.
constexpr ibv_event_type kMisRespEvent = IBV_EVENT_QP_REQ_ERR;
constexpr ibv_event_type kNaRespEvent = IBV_EVENT_QP_ACCESS_ERR;

enum Kind : uint32_t { kWorker = 1, kErrMisaligned = 2, kErrNoAtomic = 3 };

// Client -> server (connect private data), host order (same-arch peers).
struct Hello {
	uint32_t magic;
	uint32_t kind;
} __attribute__((packed));

// Server -> client (accept private data).
struct Info {
	uint32_t magic;
	uint32_t conn;		// 0..kMaxConns-1, unique per server
	uint64_t addr;
	uint32_t rkey;
	uint32_t rkey_na;	// region without REMOTE_ATOMIC
	uint64_t addr_na;
	uint32_t imm;		// Write-with-Imm slots per connection
} __attribute__((packed));

std::atomic<int> failures;
std::mutex out_mu;
const char *prog = "xiw_atomic";

void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void say(const char *fmt, ...)
{
	std::lock_guard<std::mutex> g(out_mu);
	va_list ap;

	va_start(ap, fmt);
	std::vprintf(fmt, ap);
	va_end(ap);
	std::fflush(stdout);
}

[[noreturn]] void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
[[noreturn]] void die(const char *fmt, ...)
{
	int e = errno;
	char buf[256];
	va_list ap;

	va_start(ap, fmt);
	std::vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	say("FAIL %s: %s (errno %s)\n", prog, buf, std::strerror(e));
	std::exit(2);
}

bool check(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool check(bool ok, const char *fmt, ...)
{
	char buf[256];
	va_list ap;

	va_start(ap, fmt);
	std::vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	say("%s %s\n", ok ? "ok" : "FAIL", buf);
	if (!ok)
		failures++;
	return ok;
}

uint32_t imm_len(uint32_t seq)
{
	return 8 * (1 + (seq * 37) % (kSlot / 8));	// 8 .. kSlot bytes
}

uint64_t imm_word(uint32_t conn, uint32_t seq, uint32_t k)
{
	return (uint64_t)conn << 48 | (uint64_t)seq << 24 | k;
}

// ---------------------------------------------------------------------
// Completion queue with a channel: block instead of spinning (TCG).
struct Cq {
	ibv_comp_channel *ch = nullptr;
	ibv_cq *cq = nullptr;

	void create(ibv_context *ctx, int n)
	{
		ch = ibv_create_comp_channel(ctx);
		if (!ch)
			die("ibv_create_comp_channel");
		cq = ibv_create_cq(ctx, n, nullptr, ch, 0);
		if (!cq)
			die("ibv_create_cq");
		int fl = fcntl(ch->fd, F_GETFL);
		fcntl(ch->fd, F_SETFL, fl | O_NONBLOCK);
	}

	// Up to max completions; 0 after timeout_ms without one.
	int wait(ibv_wc *wc, int max, int timeout_ms)
	{
		for (;;) {
			int n = ibv_poll_cq(cq, max, wc);

			if (n)
				return n < 0 ? (die("ibv_poll_cq"), 0) : n;
			if (ibv_req_notify_cq(cq, 0))
				die("ibv_req_notify_cq");
			n = ibv_poll_cq(cq, max, wc);
			if (n)
				return n < 0 ? (die("ibv_poll_cq"), 0) : n;
			pollfd p = { ch->fd, POLLIN, 0 };
			if (poll(&p, 1, timeout_ms) == 0) {
				// armed, no event: is a completion there anyway?
				n = ibv_poll_cq(cq, max, wc);
				if (n > 0)
					check(false, "completion without a CQ "
					      "event after %d ms (lost "
					      "notification)", timeout_ms);
				return n > 0 ? n : 0;
			}
			drain();
		}
	}

	void drain()
	{
		ibv_cq *c;
		void *ctx;

		while (!ibv_get_cq_event(ch, &c, &ctx))
			ibv_ack_cq_events(c, 1);
	}

	void destroy()
	{
		if (cq)
			ibv_destroy_cq(cq);
		if (ch)
			ibv_destroy_comp_channel(ch);
		cq = nullptr;
		ch = nullptr;
	}
};

rdma_cm_event *cm_wait(rdma_event_channel *ch, int timeout_ms)
{
	pollfd p = { ch->fd, POLLIN, 0 };
	rdma_cm_event *ev;

	if (poll(&p, 1, timeout_ms) <= 0)
		return nullptr;
	if (rdma_get_cm_event(ch, &ev))
		die("rdma_get_cm_event");
	return ev;
}

rdma_cm_event *cm_expect(rdma_event_channel *ch, rdma_cm_event_type t)
{
	rdma_cm_event *ev = cm_wait(ch, 30000);

	if (!ev)
		die("no %s", rdma_event_str(t));
	if (ev->event != t) {
		errno = -ev->status;
		die("%s instead of %s (status %d)", rdma_event_str(ev->event),
		    rdma_event_str(t), ev->status);
	}
	return ev;
}

sockaddr_storage resolve(const char *host, const char *port)
{
	addrinfo hints{}, *ai;
	sockaddr_storage ss{};

	hints.ai_family = AF_INET;
	if (getaddrinfo(host, port, &hints, &ai))
		die("getaddrinfo %s", host);
	std::memcpy(&ss, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);
	return ss;
}

// ---------------------------------------------------------------------
// Client side: one rdma_cm connection with its own QP, CQ and buffer.
struct Client {
	rdma_event_channel *ech = nullptr;
	rdma_cm_id *id = nullptr;
	ibv_pd *pd = nullptr;
	Cq cq;
	ibv_mr *mr = nullptr;
	uint64_t *buf = nullptr;	// result words, then Write sources
	size_t words = 0;
	Info info{};
	const char *who = "";

	void connect(const sockaddr_storage &dst, Kind kind, size_t nwords,
		     int ord = kDepth)
	{
		ech = rdma_create_event_channel();
		if (!ech || rdma_create_id(ech, &id, nullptr, RDMA_PS_TCP))
			die("rdma_create_id");
		if (rdma_resolve_addr(id, nullptr, (sockaddr *)&dst, 5000))
			die("rdma_resolve_addr");
		rdma_ack_cm_event(cm_expect(ech, RDMA_CM_EVENT_ADDR_RESOLVED));
		if (rdma_resolve_route(id, 5000))
			die("rdma_resolve_route");
		rdma_ack_cm_event(cm_expect(ech, RDMA_CM_EVENT_ROUTE_RESOLVED));
		pd = ibv_alloc_pd(id->verbs);
		if (!pd)
			die("ibv_alloc_pd");
		cq.create(id->verbs, 256);
		ibv_qp_init_attr a{};
		a.send_cq = cq.cq;
		a.recv_cq = cq.cq;
		a.qp_type = IBV_QPT_RC;
		a.cap.max_send_wr = 64;
		a.cap.max_recv_wr = 4;
		a.cap.max_send_sge = 1;
		a.cap.max_recv_sge = 1;
		if (rdma_create_qp(id, pd, &a))
			die("rdma_create_qp");
		words = nwords;
		buf = static_cast<uint64_t *>(std::aligned_alloc(4096,
					(words * 8 + 4095) & ~size_t(4095)));
		if (!buf)
			die("aligned_alloc");
		std::memset(buf, 0, words * 8);
		mr = ibv_reg_mr(pd, buf, words * 8, IBV_ACCESS_LOCAL_WRITE);
		if (!mr)
			die("ibv_reg_mr");
		Hello h = { kMagic, kind };
		rdma_conn_param p{};
		p.private_data = &h;
		p.private_data_len = sizeof(h);
		p.initiator_depth = (uint8_t)ord;
		p.responder_resources = kDepth;
		if (rdma_connect(id, &p))
			die("rdma_connect");
		rdma_cm_event *ev = cm_expect(ech, RDMA_CM_EVENT_ESTABLISHED);
		if (ev->param.conn.private_data_len < sizeof(Info))
			die("accept private data too short");
		std::memcpy(&info, ev->param.conn.private_data, sizeof(info));
		rdma_ack_cm_event(ev);
		if (info.magic != kMagic)
			die("bad accept private data");
	}

	void post(ibv_send_wr *wr)
	{
		ibv_send_wr *bad;

		errno = ibv_post_send(id->qp, wr, &bad);
		if (errno)
			die("ibv_post_send");
	}

	void atomic(ibv_wr_opcode op, uint64_t raddr, uint32_t rkey,
		    uint64_t cmp_add, uint64_t swap, size_t res, uint64_t wr_id)
	{
		ibv_sge sge = { (uintptr_t)&buf[res], 8, mr->lkey };
		ibv_send_wr wr{};

		wr.wr_id = wr_id;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = op;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = cmp_add;
		wr.wr.atomic.swap = swap;
		post(&wr);
	}

	// One completion; it must be a success of opcode @op.
	ibv_wc one(ibv_wc_opcode op, const char *what)
	{
		ibv_wc wc{};

		if (!cq.wait(&wc, 1, 20000)) {
			// where is it stuck: TCP queues of every connection
			say("FAIL %s: %s: no completion in 20 s\n", who, what);
			if (std::system("ss -tinoH state established >&2"))
				say("(ss failed)\n");
			die("%s: %s: no completion in 20 s", who, what);
		}
		if (wc.status != IBV_WC_SUCCESS || wc.opcode != op) {
			errno = 0;
			die("%s: %s: completion status %s (%d) opcode %d",
			    who, what, ibv_wc_status_str(wc.status), wc.status,
			    wc.opcode);
		}
		return wc;
	}

	void disconnect()
	{
		rdma_disconnect(id);
		rdma_cm_event *ev = cm_wait(ech, 10000);
		if (ev)
			rdma_ack_cm_event(ev);
	}

	void destroy()
	{
		rdma_destroy_qp(id);
		ibv_dereg_mr(mr);
		cq.destroy();
		ibv_dealloc_pd(pd);
		rdma_destroy_id(id);
		rdma_destroy_event_channel(ech);
		std::free(buf);
	}
};

struct ClientOpts {
	int threads = 2, iters = 100, locks = 20, imm = 32;
	int ord = kDepth, window = kDepth;
	FILE *dump = nullptr;
};

void client_thread(const sockaddr_storage &dst, const ClientOpts &o,
		   int t)
{
	Client c;
	const size_t n = o.iters;
	// results: [0, n) FetchAdd, n lock, n+1 read, n+2 write, n+3
	// release, n+4 mismatch; Write sources from n+8 (kSlot each)
	const size_t r_lock = n, r_read = n + 1, r_wr = n + 2, r_rel = n + 3,
		     r_cs = n + 4, r_imm = n + 8;
	char who[32];

	c.connect(dst, kWorker, r_imm + o.imm * (kSlot / 8), o.ord);
	std::snprintf(who, sizeof(who), "conn %u", c.info.conn);
	c.who = who;
	const uint64_t base = c.info.addr;
	const uint32_t rkey = c.info.rkey;
	const uint64_t me = c.info.conn + 1;	// lock owner id, never 0
	if (o.imm > (int)c.info.imm)
		die("%s: server has %u imm slots, want %d", who, c.info.imm,
		    o.imm);

	// 1+2. FetchAdd(+1) on A, up to kDepth outstanding (ORD), in chunks;
	// after each chunk one acquisition of the CmpSwap spinlock around a
	// non-atomic Read/Write increment of B. Spread over the whole run,
	// the lock meets the other QPs and the local CPU.
	using clk = std::chrono::steady_clock;
	clk::duration fadd_t{}, lock_t{};
	uint64_t spins = 0;
	auto take_lock = [&](int i) {
		// a holder that died keeps the lock: give up after 15 s
		auto give_up = clk::now() + std::chrono::seconds(15);
		for (;;) {
			c.atomic(IBV_WR_ATOMIC_CMP_AND_SWP, base + kOffLock, rkey,
				 0, me, r_lock, 1);
			c.one(IBV_WC_COMP_SWAP, "lock");
			if (c.buf[r_lock] == 0)
				break;
			spins++;
			if (clk::now() > give_up) {
				errno = 0;
				die("%s: lock %d held by %#" PRIx64 " for 15 s",
				    who, i, c.buf[r_lock]);
			}
		}
		ibv_sge rs = { (uintptr_t)&c.buf[r_read], 8, c.mr->lkey };
		ibv_send_wr rd{};
		rd.wr_id = 2;
		rd.sg_list = &rs;
		rd.num_sge = 1;
		rd.opcode = IBV_WR_RDMA_READ;
		rd.send_flags = IBV_SEND_SIGNALED;
		rd.wr.rdma.remote_addr = base + kOffB;
		rd.wr.rdma.rkey = rkey;
		c.post(&rd);
		c.one(IBV_WC_RDMA_READ, "read B");
		c.buf[r_wr] = c.buf[r_read] + 1;
		// Write B+1 (unsignaled), then release: the Atomic Request is
		// executed only after the Write is placed (RFC 7306 5.4 rule 5)
		ibv_sge ws = { (uintptr_t)&c.buf[r_wr], 8, c.mr->lkey };
		ibv_sge us = { (uintptr_t)&c.buf[r_rel], 8, c.mr->lkey };
		ibv_send_wr wr{}, un{};
		wr.wr_id = 3;
		wr.sg_list = &ws;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_RDMA_WRITE;
		wr.wr.rdma.remote_addr = base + kOffB;
		wr.wr.rdma.rkey = rkey;
		wr.next = &un;
		un.wr_id = 4;
		un.sg_list = &us;
		un.num_sge = 1;
		un.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
		un.send_flags = IBV_SEND_SIGNALED;
		un.wr.atomic.remote_addr = base + kOffLock;
		un.wr.atomic.rkey = rkey;
		un.wr.atomic.compare_add = me;
		un.wr.atomic.swap = 0;
		c.post(&wr);
		c.one(IBV_WC_COMP_SWAP, "unlock");
		if (c.buf[r_rel] != me)
			check(false, "%s: lock %d released but held by %#" PRIx64,
			      who, i, c.buf[r_rel]);
	};
	const size_t chunk = n / (o.locks + 1) + 1;
	size_t posted = 0, done = 0;
	int locked = 0;
	while (done < n || locked < o.locks) {
		auto t0 = clk::now();
		size_t end = std::min(n, done + chunk);
		while (done < end) {
			while (posted < end &&
			       posted - done < (size_t)o.window) {
				c.atomic(IBV_WR_ATOMIC_FETCH_AND_ADD, base + kOffA,
					 rkey, 1, 0, posted, posted);
				posted++;
			}
			ibv_wc wc[kDepth];
			int k = c.cq.wait(wc, kDepth, 20000);
			if (!k)
				die("%s: FetchAdd: no completion", who);
			for (int i = 0; i < k; i++) {
				if (wc[i].status != IBV_WC_SUCCESS ||
				    wc[i].opcode != IBV_WC_FETCH_ADD ||
				    wc[i].wr_id != done) {
					errno = 0;
					die("%s: FetchAdd %zu: status %s opcode %d "
					    "wr_id %" PRIu64, who, done,
					    ibv_wc_status_str(wc[i].status),
					    wc[i].opcode, (uint64_t)wc[i].wr_id);
				}
				done++;
			}
		}
		auto t1 = clk::now();
		fadd_t += t1 - t0;
		if (locked < o.locks) {
			take_lock(locked++);
			lock_t += clk::now() - t1;
		}
	}
	double fadd_us = std::chrono::duration<double, std::micro>(fadd_t)
		.count() / (n ? n : 1);
	double lock_us = std::chrono::duration<double, std::micro>(lock_t)
		.count() / (o.locks ? o.locks : 1);
	std::vector<uint64_t> orig(c.buf, c.buf + n);
	std::sort(orig.begin(), orig.end());
	bool uniq = std::adjacent_find(orig.begin(), orig.end()) == orig.end();
	// plausible: every original below the largest possible total
	bool sane = n == 0 || orig.back() < (1ULL << 32);
	check(uniq && sane, "%s: %zu FetchAdd originals unique (%" PRIu64
	      "..%" PRIu64 "), %.0f us each", who, n, n ? orig.front() : 0,
	      n ? orig.back() : 0, fadd_us);
	// within one QP the responder executes in order: ascending originals
	bool ordered = true;
	for (size_t i = 1; i < n; i++)
		ordered &= c.buf[i] > c.buf[i - 1];
	check(ordered, "%s: FetchAdd originals ascend in posting order", who);
	if (o.dump) {
		std::lock_guard<std::mutex> g(out_mu);
		for (size_t i = 0; i < n; i++)
			std::fprintf(o.dump, "%" PRIu64 "\n", c.buf[i]);
	}
	check(true, "%s: %d lock acquisitions, %" PRIu64 " failed CmpSwaps, "
	      "%.0f us per critical section", who, o.locks, spins, lock_us);

	// 3. A CmpSwap that does not match returns the word, changes nothing.
	c.buf[r_cs] = 0;
	c.atomic(IBV_WR_ATOMIC_CMP_AND_SWP, base + kOffCs, rkey, kCsVal ^ 1,
		 0xdeadbeefULL + me, r_cs, 5);
	c.one(IBV_WC_COMP_SWAP, "mismatch");
	check(c.buf[r_cs] == kCsVal, "%s: mismatching CmpSwap returned %#"
	      PRIx64 " (want %#" PRIx64 ")", who, c.buf[r_cs], kCsVal);

	// 4. Write with Immediate stream: imm = conn << 24 | seq, the data
	//    encodes conn and seq; signaled every 8th and the last.
	for (int s = 0; s < o.imm; s++) {
		uint64_t *src = &c.buf[r_imm + s * (kSlot / 8)];
		uint32_t len = imm_len(s);
		for (uint32_t k = 0; k < len / 8; k++)
			src[k] = imm_word(c.info.conn, s, k);
		ibv_sge ss = { (uintptr_t)src, len, c.mr->lkey };
		ibv_send_wr w{};
		w.wr_id = 100 + s;
		w.sg_list = &ss;
		w.num_sge = 1;
		w.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
		w.imm_data = htobe32(c.info.conn << 24 | s);
		bool sig = s % 8 == 7 || s == o.imm - 1;
		w.send_flags = sig ? IBV_SEND_SIGNALED : 0;
		w.wr.rdma.remote_addr = base + kOffImm +
			((uint64_t)c.info.conn * c.info.imm + s) * kSlot;
		w.wr.rdma.rkey = rkey;
		c.post(&w);
		if (sig)
			c.one(IBV_WC_RDMA_WRITE, "write with imm");
	}
	// zero-length: only Immediate Data on the wire
	ibv_send_wr z{};
	z.wr_id = 99;
	z.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	z.imm_data = htobe32(c.info.conn << 24 | kImmLast);
	z.send_flags = IBV_SEND_SIGNALED;
	z.wr.rdma.remote_addr = base + kOffImm;
	z.wr.rdma.rkey = rkey;
	c.post(&z);
	c.one(IBV_WC_RDMA_WRITE, "zero-length write with imm");
	check(true, "%s: %d Writes with Immediate + 1 zero-length sent", who,
	      o.imm);
	c.disconnect();
	c.destroy();
	(void)t;
}

// ---------------------------------------------------------------------
// The section 8 error cases, each on its own connection.
const char *ev_name(ibv_event_type t)
{
	return ibv_event_type_str(t);
}

void error_case(const sockaddr_storage &dst, Kind kind)
{
	Client c;
	const bool mis = kind == kErrMisaligned;
	const char *what = mis ? "misaligned FetchAdd" :
			   "CmpSwap without remote-atomic right";

	c.connect(dst, kind, 8);
	c.who = what;
	c.buf[0] = 0x5555;
	if (mis)
		c.atomic(IBV_WR_ATOMIC_FETCH_AND_ADD,
			 c.info.addr + kOffMis + 4, c.info.rkey, 1, 0, 0, 1);
	else
		c.atomic(IBV_WR_ATOMIC_CMP_AND_SWP, c.info.addr_na,
			 c.info.rkey_na, kNaVal, 7, 0, 1);
	ibv_wc wc{};
	if (!c.cq.wait(&wc, 1, 20000))
		die("%s: no completion", what);
	const ibv_wc_status want = mis ? kMisWcStatus : kNaWcStatus;
	const uint32_t want_vendor = mis ? kMisVendorErr : kNaVendorErr;

	check(wc.status == want, "%s: requester WC status %s (%d), want %s",
	      what, ibv_wc_status_str(wc.status), wc.status,
	      ibv_wc_status_str(want));
	check(wc.vendor_err == want_vendor,
	      "%s: requester vendor_err %#x, want %#x (the Terminate)", what,
	      wc.vendor_err, want_vendor);
	check(c.buf[0] == 0x5555, "%s: result buffer untouched (%#" PRIx64
	      ")", what, c.buf[0]);
	// The QP is in ERROR as soon as its consumer can know of the
	// failure: queried right after the completion, before the event.
	ibv_qp_attr qa{};
	ibv_qp_init_attr qi{};
	ibv_query_qp(c.id->qp, &qa, IBV_QP_STATE, &qi);
	check(qa.qp_state == IBV_QPS_ERR, "%s: requester QP state %d right "
	      "after the completion (ERR %d)", what, qa.qp_state, IBV_QPS_ERR);

	// the requester's async event
	ibv_context *ctx = c.id->verbs;
	pollfd p = { ctx->async_fd, POLLIN, 0 };
	int fl = fcntl(ctx->async_fd, F_GETFL);
	fcntl(ctx->async_fd, F_SETFL, fl | O_NONBLOCK);
	bool got = false;
	auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
	while (!got && std::chrono::steady_clock::now() < end) {
		ibv_async_event ae;
		if (poll(&p, 1, 200) <= 0 || ibv_get_async_event(ctx, &ae))
			continue;
		if (ae.element.qp == c.id->qp) {
			check(ae.event_type == kErrReqEvent,
			      "%s: requester async event %s, want %s", what,
			      ev_name(ae.event_type), ev_name(kErrReqEvent));
			got = true;
		}
		ibv_ack_async_event(&ae);
	}
	if (!got)
		check(false, "%s: no requester async event", what);
	qa = {};
	ibv_query_qp(c.id->qp, &qa, IBV_QP_STATE, &qi);
	check(qa.qp_state == IBV_QPS_ERR, "%s: requester QP state %d (ERR %d)",
	      what, qa.qp_state, IBV_QPS_ERR);
	// a WR posted now is flushed
	c.atomic(IBV_WR_ATOMIC_FETCH_AND_ADD, c.info.addr + kOffA, c.info.rkey,
		 1, 0, 0, 2);
	if (c.cq.wait(&wc, 1, 10000))
		check(wc.status == IBV_WC_WR_FLUSH_ERR && wc.wr_id == 2,
		      "%s: later WR flushed (%s)", what,
		      ibv_wc_status_str(wc.status));
	else
		check(false, "%s: later WR not flushed", what);
	rdma_cm_event *ev = cm_wait(c.ech, 10000);
	check(ev && ev->event == RDMA_CM_EVENT_DISCONNECTED,
	      "%s: requester CM event %s", what,
	      ev ? rdma_event_str(ev->event) : "none");
	if (ev)
		rdma_ack_cm_event(ev);
	c.destroy();
}

// ---------------------------------------------------------------------
// Server.
struct ServerOpts {
	int conns = 1, errconns = 0, imm = 32, local_min = 100, timeout = 120;
	uint64_t expect_a = 0, expect_b = 0;
	FILE *dump = nullptr;
};

struct Conn {
	rdma_cm_id *id = nullptr;
	uint32_t idx = 0;
	Kind kind = kWorker;
	uint32_t next_imm = 0;	// next expected sequence
	bool gone = false;
	ibv_event_type resp_event = IBV_EVENT_COMM_EST;
	bool got_event = false;
};

struct Server {
	ServerOpts o;
	rdma_event_channel *ech = nullptr;
	rdma_cm_id *lid = nullptr;
	ibv_context *ctx = nullptr;
	ibv_pd *pd = nullptr;
	Cq cq;
	ibv_mr *mr = nullptr, *mr_na = nullptr;
	uint64_t *mem = nullptr, *na = nullptr;
	std::vector<Conn *> conns;
	std::map<uint32_t, Conn *> by_qpn;
	int workers_gone = 0, errs_gone = 0, workers_seen = 0;
	std::atomic<bool> workers_done{false};
	std::thread local;
	uint64_t local_fadds = 0, local_locks = 0, local_spins = 0;
	std::vector<uint64_t> local_orig;

	uint64_t *word(size_t off) { return &mem[off / 8]; }

	void setup_device(ibv_context *c)
	{
		ctx = c;
		pd = ibv_alloc_pd(ctx);
		if (!pd)
			die("ibv_alloc_pd");
		cq.create(ctx, 4096);
		mr = ibv_reg_mr(pd, mem, kRegion, IBV_ACCESS_LOCAL_WRITE |
				IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE |
				IBV_ACCESS_REMOTE_ATOMIC);
		mr_na = ibv_reg_mr(pd, na, 4096, IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_WRITE);
		if (!mr || !mr_na)
			die("ibv_reg_mr");
		int fl = fcntl(ctx->async_fd, F_GETFL);
		fcntl(ctx->async_fd, F_SETFL, fl | O_NONBLOCK);
	}

	// The local CPU does the clients' work on the same words.
	void local_work()
	{
		uint64_t *a = word(kOffA), *lock = word(kOffLock);
		volatile uint64_t *b = word(kOffB);
		const uint64_t me = 0xc0ffee;
		auto stuck = std::chrono::steady_clock::now();

		while (!workers_done.load() || local_locks < (uint64_t)o.local_min) {
			local_orig.push_back(__atomic_fetch_add(a, 1,
							       __ATOMIC_SEQ_CST));
			local_fadds++;
			for (;;) {
				uint64_t exp = 0;
				if (__atomic_compare_exchange_n(lock, &exp, me,
						false, __ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
					break;
				// a remote holder needs a round trip or two:
				// leave the CPU to the data path meanwhile
				if (++local_spins % 8) {
					sched_yield();
					continue;
				}
				usleep(100);
				// every worker is gone and the lock still held
				if (!workers_done.load())
					stuck = std::chrono::steady_clock::now();
				else if (std::chrono::steady_clock::now() - stuck >
					 std::chrono::seconds(5)) {
					check(false, "local: lock left held by %#"
					      PRIx64, exp);
					return;
				}
			}
			uint64_t v = *b;
			// widen the window a remote writer would hit
			for (int k = 0; k < 200; k++)
				asm volatile("" ::: "memory");
			*b = v + 1;
			uint64_t exp = me;
			if (!__atomic_compare_exchange_n(lock, &exp, 0, false,
					__ATOMIC_RELEASE, __ATOMIC_RELAXED))
				check(false, "local: lock stolen by %#" PRIx64, exp);
			local_locks++;
			usleep(200);
		}
	}

	void on_request(rdma_cm_event *ev)
	{
		rdma_cm_id *id = ev->id;
		Hello h{};

		if (ev->param.conn.private_data_len >= sizeof(h))
			std::memcpy(&h, ev->param.conn.private_data, sizeof(h));
		if (h.magic != kMagic ||
		    conns.size() >= (size_t)(o.conns + o.errconns) ||
		    (h.kind == kWorker && workers_seen >= o.conns)) {
			check(false, "unexpected connection request");
			rdma_reject(id, nullptr, 0);
			return;
		}
		if (!ctx)
			setup_device(id->verbs);
		ibv_qp_init_attr a{};
		a.send_cq = cq.cq;
		a.recv_cq = cq.cq;
		a.qp_type = IBV_QPT_RC;
		a.cap.max_send_wr = 8;
		a.cap.max_recv_wr = o.imm + 1;
		a.cap.max_send_sge = 1;
		a.cap.max_recv_sge = 1;
		if (rdma_create_qp(id, pd, &a))
			die("rdma_create_qp");
		auto *c = new Conn;
		c->id = id;
		c->idx = conns.size();
		c->kind = (Kind)h.kind;
		conns.push_back(c);
		by_qpn[id->qp->qp_num] = c;
		if (c->kind == kWorker)
			workers_seen++;
		// zero-SGE receives: Immediate Data consumes one each
		for (int i = 0; i <= o.imm; i++) {
			ibv_recv_wr r{}, *bad;
			r.wr_id = i;
			if (ibv_post_recv(id->qp, &r, &bad))
				die("ibv_post_recv");
		}
		Info info = { kMagic, c->idx, (uintptr_t)mem, mr->rkey,
			      mr_na->rkey, (uintptr_t)na, (uint32_t)o.imm };
		rdma_conn_param p{};
		p.private_data = &info;
		p.private_data_len = sizeof(info);
		p.responder_resources = std::min<int>(
			ev->param.conn.initiator_depth, kDepth);
		p.initiator_depth = std::min<int>(
			ev->param.conn.responder_resources, kDepth);
		if (rdma_accept(id, &p))
			die("rdma_accept");
	}

	Conn *conn_of(rdma_cm_id *id)
	{
		for (auto *c : conns)
			if (c->id == id)
				return c;
		return nullptr;
	}

	void on_cm(rdma_cm_event *ev)
	{
		Conn *c;

		switch (ev->event) {
		case RDMA_CM_EVENT_CONNECT_REQUEST:
			on_request(ev);
			break;
		case RDMA_CM_EVENT_ESTABLISHED:
			c = conn_of(ev->id);
			if (c && c->kind == kWorker && !local.joinable())
				local = std::thread([this] { local_work(); });
			break;
		case RDMA_CM_EVENT_DISCONNECTED:
			c = conn_of(ev->id);
			if (!c || c->gone)
				break;
			c->gone = true;
			if (c->kind == kWorker)
				workers_gone++;
			else
				errs_gone++;
			break;
		case RDMA_CM_EVENT_TIMEWAIT_EXIT:
			break;
		default:
			check(false, "server CM event %s (status %d)",
			      rdma_event_str(ev->event), ev->status);
			c = conn_of(ev->id);
			if (c && !c->gone) {
				c->gone = true;
				c->kind == kWorker ? workers_gone++ : errs_gone++;
			}
			break;
		}
		rdma_ack_cm_event(ev);
	}

	void on_async()
	{
		ibv_async_event ae;

		while (!ibv_get_async_event(ctx, &ae)) {
			Conn *c = nullptr;
			if (ae.event_type <= IBV_EVENT_PATH_MIG_ERR ||
			    ae.event_type == IBV_EVENT_QP_LAST_WQE_REACHED) {
				auto it = by_qpn.find(ae.element.qp->qp_num);
				if (it != by_qpn.end())
					c = it->second;
			}
			if (c && !c->got_event) {
				c->got_event = true;
				c->resp_event = ae.event_type;
			}
			if (!c || c->kind == kWorker)
				check(false, "server async event %s on %s",
				      ibv_event_type_str(ae.event_type),
				      c ? "a worker QP" : "the device");
			ibv_ack_async_event(&ae);
		}
	}

	void on_wc(const ibv_wc &wc)
	{
		auto it = by_qpn.find(wc.qp_num);
		if (it == by_qpn.end()) {
			check(false, "completion of unknown QP %u", wc.qp_num);
			return;
		}
		Conn *c = it->second;
		if (wc.status == IBV_WC_WR_FLUSH_ERR)
			return;	// error connections, or teardown
		if (wc.status != IBV_WC_SUCCESS ||
		    wc.opcode != IBV_WC_RECV_RDMA_WITH_IMM ||
		    !(wc.wc_flags & IBV_WC_WITH_IMM) || c->kind != kWorker) {
			check(false, "conn %u: receive status %s opcode %d flags "
			      "%#x", c->idx, ibv_wc_status_str(wc.status),
			      wc.opcode, wc.wc_flags);
			return;
		}
		uint32_t imm = be32toh(wc.imm_data), s = c->next_imm++;
		if ((int)s < o.imm) {
			uint32_t len = imm_len(s);
			if (imm != (c->idx << 24 | s) || wc.byte_len != len) {
				check(false, "conn %u: imm %#x byte_len %u, want "
				      "%#x %u", c->idx, imm, wc.byte_len,
				      c->idx << 24 | s, len);
				return;
			}
			const uint64_t *d = word(kOffImm +
				((uint64_t)c->idx * o.imm + s) * kSlot);
			for (uint32_t k = 0; k < len / 8; k++) {
				uint64_t v = __atomic_load_n(&d[k],
							     __ATOMIC_ACQUIRE);
				if (v != imm_word(c->idx, s, k)) {
					check(false, "conn %u: imm %u arrived "
					      "before its data (word %u = %#"
					      PRIx64 ")", c->idx, s, k, v);
					return;
				}
			}
		} else if ((int)s == o.imm) {
			check(imm == (c->idx << 24 | kImmLast) && wc.byte_len == 0,
			      "conn %u: zero-length Write with Immediate: imm "
			      "%#x byte_len %u", c->idx, imm, wc.byte_len);
		} else {
			check(false, "conn %u: extra immediate %#x", c->idx, imm);
		}
	}

	void poll_cq()
	{
		ibv_wc wc[32];
		int n;

		cq.drain();
		while ((n = ibv_poll_cq(cq.cq, 32, wc)) > 0)
			for (int i = 0; i < n; i++)
				on_wc(wc[i]);
		if (ibv_req_notify_cq(cq.cq, 0))
			die("ibv_req_notify_cq");
		while ((n = ibv_poll_cq(cq.cq, 32, wc)) > 0)
			for (int i = 0; i < n; i++)
				on_wc(wc[i]);
	}

	void loop()
	{
		auto end = std::chrono::steady_clock::now() +
			   std::chrono::seconds(o.timeout);

		while (workers_gone < o.conns || errs_gone < o.errconns) {
			if (std::chrono::steady_clock::now() > end)
				die("timeout: %d/%d workers, %d/%d error "
				    "connections done", workers_gone, o.conns,
				    errs_gone, o.errconns);
			pollfd p[3] = { { ech->fd, POLLIN, 0 },
					{ ctx ? ctx->async_fd : -1, POLLIN, 0 },
					{ ctx ? cq.ch->fd : -1, POLLIN, 0 } };
			if (poll(p, 3, 500) < 0)
				die("poll");
			if (p[0].revents) {
				rdma_cm_event *ev;
				if (rdma_get_cm_event(ech, &ev))
					die("rdma_get_cm_event");
				on_cm(ev);
			}
			if (ctx) {
				on_async();
				poll_cq();
			}
		}
		workers_done = true;
		if (local.joinable())
			local.join();
		// completions of the last immediates may still be queued
		auto until = std::chrono::steady_clock::now() +
			     std::chrono::seconds(10);
		for (;;) {
			bool all = true;
			if (ctx) {
				poll_cq();
				on_async();
			}
			for (auto *c : conns)
				all &= c->kind != kWorker ||
				       c->next_imm == (uint32_t)o.imm + 1;
			for (auto *c : conns)
				all &= c->kind == kWorker || c->got_event;
			if (all || std::chrono::steady_clock::now() > until)
				break;
			usleep(10000);
		}
	}

	void verify()
	{
		uint64_t a = *word(kOffA), b = *word(kOffB);

		check(a == o.expect_a + local_fadds, "counter A = %" PRIu64
		      " (clients %" PRIu64 " + local %" PRIu64 ")", a,
		      o.expect_a, local_fadds);
		check(b == o.expect_b + local_locks, "counter B = %" PRIu64
		      " (client acquisitions %" PRIu64 " + local %" PRIu64
		      ", local lock spins %" PRIu64 ")", b, o.expect_b,
		      local_locks, local_spins);
		check(*word(kOffLock) == 0, "lock free at the end (%#" PRIx64 ")",
		      *word(kOffLock));
		check(*word(kOffCs) == kCsVal, "CmpSwap-mismatch word unchanged "
		      "(%#" PRIx64 ")", *word(kOffCs));
		check(*word(kOffMis) == kMisVal && *word(kOffMis + 8) == kMisVal,
		      "misaligned-target words untouched (%#" PRIx64 " %#" PRIx64
		      ")", *word(kOffMis), *word(kOffMis + 8));
		bool na_ok = true;
		for (size_t i = 0; i < 4096 / 8; i++)
			na_ok &= na[i] == kNaVal;
		check(na_ok, "region without remote-atomic right untouched");
		for (auto *c : conns) {
			if (c->kind == kWorker) {
				check(c->next_imm == (uint32_t)o.imm + 1,
				      "conn %u: %u of %d+1 immediates, in order, "
				      "data visible first", c->idx, c->next_imm,
				      o.imm);
				continue;
			}
			ibv_event_type want = c->kind == kErrMisaligned ?
					      kMisRespEvent : kNaRespEvent;
			check(c->got_event && c->resp_event == want,
			      "conn %u (%s): responder async event %s, want %s",
			      c->idx, c->kind == kErrMisaligned ? "misaligned" :
			      "no remote-atomic right",
			      c->got_event ? ibv_event_type_str(c->resp_event) :
			      "none", ibv_event_type_str(want));
		}
		if (o.dump)
			for (uint64_t v : local_orig)
				std::fprintf(o.dump, "%" PRIu64 "\n", v);
	}

	void teardown()
	{
		for (auto *c : conns) {
			rdma_destroy_qp(c->id);
			rdma_destroy_id(c->id);
			delete c;
		}
		if (mr)
			ibv_dereg_mr(mr);
		if (mr_na)
			ibv_dereg_mr(mr_na);
		cq.destroy();
		if (pd)
			ibv_dealloc_pd(pd);
		rdma_destroy_id(lid);
		rdma_destroy_event_channel(ech);
	}
};

int run_server(const sockaddr_storage &addr, const ServerOpts &o)
{
	Server s;

	s.o = o;
	if (o.conns + o.errconns > (int)kMaxConns || o.imm > (int)kMaxImm ||
	    kOffImm + (size_t)(o.conns + o.errconns) * o.imm * kSlot > kRegion)
		die("too many connections or immediates");
	s.mem = static_cast<uint64_t *>(std::aligned_alloc(4096, kRegion));
	s.na = static_cast<uint64_t *>(std::aligned_alloc(4096, 4096));
	if (!s.mem || !s.na)
		die("aligned_alloc");
	std::memset(s.mem, 0, kRegion);
	*s.word(kOffCs) = kCsVal;
	*s.word(kOffMis) = kMisVal;
	*s.word(kOffMis + 8) = kMisVal;
	for (size_t i = 0; i < 4096 / 8; i++)
		s.na[i] = kNaVal;
	s.ech = rdma_create_event_channel();
	if (!s.ech || rdma_create_id(s.ech, &s.lid, nullptr, RDMA_PS_TCP))
		die("rdma_create_id");
	if (rdma_bind_addr(s.lid, (sockaddr *)&addr) || rdma_listen(s.lid, 16))
		die("rdma_bind_addr/listen");
	if (s.lid->verbs)
		s.setup_device(s.lid->verbs);
	say("listening\n");
	s.loop();
	s.verify();
	s.teardown();
	return failures ? 1 : 0;
}

void usage()
{
	std::fprintf(stderr,
		"usage: xiw_atomic server ADDR PORT [--conns N] [--errconns N] "
		"[--imm M] [--expect-a A] [--expect-b B] [--local-min K] "
		"[--dump FILE] [--timeout SEC]\n"
		"       xiw_atomic client ADDR PORT [--threads T] [--iters N] "
		"[--locks L] [--imm M] [--ord D] [--window W] [--dump FILE]\n"
		"       xiw_atomic errors ADDR PORT\n");
	std::exit(2);
}

} // namespace

int main(int argc, char **argv)
{
	if (argc < 4)
		usage();
	std::string mode = argv[1];
	sockaddr_storage addr = resolve(argv[2], argv[3]);
	ServerOpts so;
	ClientOpts co;
	FILE *dump = nullptr;

	for (int i = 4; i < argc; i++) {
		std::string k = argv[i];
		if (i + 1 >= argc)
			usage();
		const char *v = argv[++i];
		if (k == "--dump") {
			dump = std::fopen(v, "w");
			if (!dump)
				die("%s", v);
			continue;
		}
		uint64_t n = std::strtoull(v, nullptr, 0);
		if (k == "--conns") so.conns = n;
		else if (k == "--errconns") so.errconns = n;
		else if (k == "--imm") so.imm = co.imm = n;
		else if (k == "--expect-a") so.expect_a = n;
		else if (k == "--expect-b") so.expect_b = n;
		else if (k == "--local-min") so.local_min = n;
		else if (k == "--timeout") so.timeout = n;
		else if (k == "--threads") co.threads = n;
		else if (k == "--iters") co.iters = n;
		else if (k == "--locks") co.locks = n;
		else if (k == "--ord" && n >= 1 && n <= (uint64_t)kDepth)
			co.ord = n;
		else if (k == "--window" && n >= 1 && n <= 60)
			co.window = n;
		else usage();
	}
	so.dump = co.dump = dump;
	int rc;
	if (mode == "server") {
		prog = "server";
		rc = run_server(addr, so);
	} else if (mode == "client") {
		prog = "client";
		std::vector<std::thread> ts;
		for (int t = 0; t < co.threads; t++)
			ts.emplace_back(client_thread, std::cref(addr),
					std::cref(co), t);
		for (auto &t : ts)
			t.join();
		rc = failures ? 1 : 0;
	} else if (mode == "errors") {
		prog = "errors";
		error_case(addr, kErrMisaligned);
		error_case(addr, kErrNoAtomic);
		rc = failures ? 1 : 0;
	} else {
		usage();
	}
	if (dump)
		std::fclose(dump);
	return rc;
}
