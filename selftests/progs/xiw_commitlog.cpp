// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// xiw_commitlog: a remote append-only log, committed record by record,
// between two rdma_cm ends of one process (two xiw devices when --src
// names another device's address), in three modes:
//
//   push   per commit: RDMA Write of the record, Flush of the record
//          (persistent when the log is on device-dax, else global
//          visibility), Atomic Write of the tail (records committed),
//          Flush of the tail. One signaled WR, the last Flush: its
//          completion is the commit. No CPU at the target: it registers
//          the log (XIWDV_ACCESS_FLUSH_PERSISTENT or _GLOBAL | REMOTE_WRITE)
//          and waits.
//   send   the same log done with Send/Recv: the record goes in a Send; a
//          target thread copies it into the log, writes the CPU cache back
//          (clflush + sfence on device-dax; a store fence on DRAM), stores
//          the tail, writes it back, and answers with an 8-byte Send. The
//          answer is the commit.
//   write  what works without the commit extensions (the plumbing): RDMA
//          Write of the record, RDMA Write of the tail, RDMA Read of the
//          tail (its value must be the new tail). Nothing is flushed.
//
// Usage:
//   xiw_commitlog run --addr A --port P [--src B] [--mode push|send|write]
//                 [-n N] [--size S] [--seed X] [--dax PATH] [--depth D]
//                 [--spin] [--hold]
//   xiw_commitlog check --dax PATH -n N --size S --seed X
//
// run: N commits of S-byte records (record i's bytes follow from X and i),
// up to D (default 1) in flight, each timed from its post to its
// completion (push, write) or answer (send); then the log is checked where
// it lies (the tail is N and every record is intact). Prints
//   "commitlog mode=M mem=dram|pmem n=N size=S depth=D median_us=..
//    p99_us=.. rate=../s"
// and "ok ..."/"FAIL ..." lines. --dax PATH: the log is a MAP_SHARED
// mapping of a device-dax namespace; else DRAM. --hold: after the check,
// print "HOLD committed N" and wait for a signal with everything still
// registered (a test powers the VM off then). --spin: poll the CQs
// instead of sleeping on completion events.
//
// check: after a reboot, the log on PATH must hold N intact records and
// the tail N (as "run" left it); "ok"/"FAIL" lines, exit 0 only if so.
//
// Log layout: bytes 0-7 the tail (records committed, little endian,
// x86-64); record i at kRecOff + i * slot, slot = header + S rounded up to
// 64 bytes; the header holds seq i, the seed, S and an FNV-1a of the
// payload.
#include "verbs_side.h"

#include <infiniband/xiwdv.h>
#include <rdma/rdma_cma.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
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
#include <string>
#include <thread>
#include <vector>

namespace {

using cm_pair::die;
using Clock = std::chrono::steady_clock;

constexpr size_t kRecOff = 4096;
constexpr size_t kHdr = 32;
constexpr uint32_t kMagic = 0x474f4c43;	// "CLOG"
constexpr size_t kDaxAlign = 2 << 20;

struct RecHdr {
	uint32_t magic;
	uint32_t size;
	uint64_t seq;
	uint64_t seed;
	uint64_t fnv;
};
static_assert(sizeof(RecHdr) == kHdr);

enum class Mode { push, send, write };

struct Opts {
	std::string addr, port, src, dax;
	Mode mode = Mode::push;
	uint64_t n = 1000, seed = 1;
	uint32_t size = 64, depth = 1;
	bool spin = false, hold = false;
};

int failures;

void check(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void check(bool ok, const char *fmt, ...)
{
	va_list ap;

	std::printf("%s ", ok ? "ok" : "FAIL");
	va_start(ap, fmt);
	std::vprintf(fmt, ap);
	va_end(ap);
	std::printf("\n");
	std::fflush(stdout);
	if (!ok)
		failures++;
}

size_t slot_of(uint32_t size) { return (kHdr + size + 63) & ~size_t(63); }
size_t log_bytes(uint64_t n, uint32_t size) { return kRecOff + n * slot_of(size); }

uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

uint64_t fnv1a(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return h;
}

// Record @seq as it must look in the log: header and S payload bytes.
void make_record(uint8_t *dst, uint64_t seed, uint64_t seq, uint32_t size)
{
	RecHdr h{ kMagic, size, seq, seed, 0 };
	uint8_t *pl = dst + kHdr;

	for (uint32_t j = 0; j < size; j += 8) {
		uint64_t v = mix(seed ^ mix(seq) ^ j);

		std::memcpy(pl + j, &v, std::min<uint32_t>(8, size - j));
	}
	h.fnv = fnv1a(pl, size);
	std::memcpy(dst, &h, kHdr);
}

// The log at @log must hold @n records and the tail @n. Returns the
// number of problems (the first few are printed).
int verify(const uint8_t *log, uint64_t n, uint64_t seed, uint32_t size)
{
	std::vector<uint8_t> want(kHdr + size);
	uint64_t tail = __atomic_load_n((const uint64_t *)log, __ATOMIC_ACQUIRE);
	int bad = 0;

	check(tail == n, "tail %" PRIu64 " (expected %" PRIu64 ")", tail, n);
	bad += tail != n;
	for (uint64_t i = 0; i < n; i++) {
		const uint8_t *r = log + kRecOff + i * slot_of(size);

		make_record(want.data(), seed, i, size);
		if (!std::memcmp(r, want.data(), want.size()))
			continue;
		if (++bad <= 5) {
			RecHdr h;

			std::memcpy(&h, r, kHdr);
			check(false, "record %" PRIu64 " differs (magic %#x seq %" PRIu64
			      " seed %#" PRIx64 " size %u)", i, h.magic, h.seq,
			      h.seed, h.size);
		}
	}
	if (bad > 5)
		check(false, "%d records differ in all", bad - (tail != n));
	if (!bad)
		check(true, "log: %" PRIu64 " records of %u bytes and the tail intact",
		      n, size);
	return bad;
}

// Write the CPU cache lines of [p, p + n) back (device-dax: persistence
// of CPU stores is the writer's job), then order them.
void writeback(const void *p, size_t n, bool pmem)
{
	if (pmem) {
		uintptr_t a = (uintptr_t)p & ~uintptr_t(63);

		for (; a < (uintptr_t)p + n; a += 64)
			__builtin_ia32_clflush((const void *)a);
		__builtin_ia32_sfence();
	} else {
		std::atomic_thread_fence(std::memory_order_seq_cst);
	}
}

// The log's memory: a device-dax mapping or DRAM.
struct LogMem {
	uint8_t *p = nullptr;
	size_t len = 0;
	bool pmem = false;

	void map(const std::string &dax, size_t need)
	{
		if (dax.empty()) {
			len = (need + 4095) & ~size_t(4095);
			p = (uint8_t *)std::aligned_alloc(4096, len);
			if (!p)
				die("aligned_alloc");
			std::memset(p, 0, len);
			return;
		}
		int fd = open(dax.c_str(), O_RDWR);

		if (fd < 0)
			die(dax.c_str());
		len = (need + kDaxAlign - 1) & ~(kDaxAlign - 1);
		void *m = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED,
			       fd, 0);
		if (m == MAP_FAILED)
			die("mmap of the dax device");
		close(fd);
		p = (uint8_t *)m;
		pmem = true;
	}
};

// Block for the next completion of @s's CQ (or spin).
ibv_wc next_wc(cm_pair::Side &s, ibv_comp_channel *ch, bool spin, int ms = 20000)
{
	ibv_wc wc;
	auto end = Clock::now() + std::chrono::milliseconds(ms);

	for (;;) {
		int k = ibv_poll_cq(s.cq, 1, &wc);

		if (k < 0)
			die("ibv_poll_cq");
		if (k)
			break;
		if (Clock::now() > end) {
			std::fprintf(stderr, "FAIL no completion in %d ms\n", ms);
			std::exit(2);
		}
		if (spin)
			continue;
		if (ibv_req_notify_cq(s.cq, 0))
			die("ibv_req_notify_cq");
		k = ibv_poll_cq(s.cq, 1, &wc);
		if (k < 0)
			die("ibv_poll_cq");
		if (k)
			break;
		pollfd pf{ ch->fd, POLLIN, 0 };
		if (poll(&pf, 1, 1000) > 0) {
			ibv_cq *cq;
			void *ctx;

			if (ibv_get_cq_event(ch, &cq, &ctx))
				die("ibv_get_cq_event");
			ibv_ack_cq_events(cq, 1);
		}
	}
	if (wc.status != IBV_WC_SUCCESS) {
		std::fprintf(stderr, "FAIL wr_id %" PRIu64 " opcode %d: %s (vendor_err %#x)\n",
			     wc.wr_id, wc.opcode, ibv_wc_status_str(wc.status),
			     wc.vendor_err);
		std::exit(2);
	}
	return wc;
}

struct Region {
	uint64_t addr;
	uint32_t rkey;
} __attribute__((packed));

double pct(std::vector<double> v, double q)
{
	if (v.empty())
		return 0;
	std::sort(v.begin(), v.end());
	size_t i = (size_t)(q * (double)v.size());
	return v[std::min(i, v.size() - 1)];
}

const char *mode_name(Mode m)
{
	return m == Mode::push ? "push" : m == Mode::send ? "send" : "write";
}

bool has_cap(ibv_context *ctx, uint64_t bit)
{
	ibv_device_attr_ex a{};

	return !ibv_query_device_ex(ctx, nullptr, &a) &&
	       (a.device_cap_flags_ex & bit);
}

volatile sig_atomic_t stop_hold;
void on_signal(int) { stop_hold = 1; }

int run(const Opts &o)
{
	size_t need = log_bytes(o.n, o.size), slot = slot_of(o.size);
	size_t rec_len = kHdr + o.size;
	LogMem log;

	log.map(o.dax, need);
	if (log.len < need)
		die("log too small");
	// The target creates an empty log: tail 0, written back.
	__atomic_store_n((uint64_t *)log.p, 0, __ATOMIC_RELEASE);
	writeback(log.p, 8, log.pmem);

	const uint8_t ftype = log.pmem ? XIWDV_FLUSH_PERSISTENT : XIWDV_FLUSH_GLOBAL;
	cm_pair::Pair pair(o.addr.c_str(), o.port.c_str(),
			   o.src.empty() ? nullptr : o.src.c_str());
	cm_pair::Side req, tgt;
	ibv_comp_channel *rch = nullptr, *tch = nullptr;
	rdma_conn_param p{}, a{};

	// two Flushes of every commit in flight use the ORD (Read-like)
	p.responder_resources = (uint8_t)std::max(4u, 2 * o.depth);
	p.initiator_depth = p.responder_resources;
	a = p;
	pair.connect(
		[&](rdma_cm_id *id) {
			cm_pair::SideOpts so;

			rch = ibv_create_comp_channel(id->verbs);
			if (!rch)
				die("ibv_create_comp_channel");
			so.channel = rch;
			so.depth = 4 * o.depth + 4;	// 4 WRs per commit
			so.recv_depth = o.depth + 2;
			so.mem_bytes = o.depth * (slot + 64);
			so.access = IBV_ACCESS_LOCAL_WRITE;
			so.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE |
					    IBV_QP_EX_WITH_RDMA_READ |
					    IBV_QP_EX_WITH_SEND;
			if (o.mode == Mode::push) {
				uint64_t want = XIWDV_DEVICE_ATOMIC_WRITE |
					(log.pmem ? XIWDV_DEVICE_FLUSH_PERSISTENT :
						    XIWDV_DEVICE_FLUSH_GLOBAL);

				if (!has_cap(id->verbs, want)) {
					std::printf("SKIP push mode: the device does not report "
						    "%s Flush and Atomic Write\n",
						    log.pmem ? "persistent" : "global");
					std::exit(4);
				}
				so.send_ops_flags |= IBV_QP_EX_WITH_ATOMIC_WRITE;
			}
			req.setup(id, so);
		},
		[&](rdma_cm_id *id) {
			cm_pair::SideOpts so;

			tch = ibv_create_comp_channel(id->verbs);
			if (!tch)
				die("ibv_create_comp_channel");
			so.channel = tch;
			so.depth = 2 * o.depth + 4;
			so.recv_depth = o.depth + 2;
			so.ext_mem = log.p;
			so.mem_bytes = log.len;
			so.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				    IBV_ACCESS_REMOTE_READ;
			if (o.mode == Mode::push) {
				so.access |= log.pmem ? XIWDV_ACCESS_FLUSH_PERSISTENT :
							XIWDV_ACCESS_FLUSH_GLOBAL;
				so.reg_mr = [](ibv_pd *pd, void *b, size_t l, int acc) {
					return xiwdv_reg_mr(pd, b, l, acc,
							    XIWDV_DIGEST_DEFAULT);
				};
			}
			tgt.setup(id, so);
		},
		p, a, &tgt.id);

	// The requester's staging, one per commit in flight (commit i uses
	// i % depth): a record, the tail to write, the tail read, the answer.
	struct Stage {
		uint8_t *rec;
		uint64_t *tail_src, *tail_rd;
		uint8_t *ack;
		Clock::time_point t0;
	};
	std::vector<Stage> st(o.depth);
	for (uint32_t k = 0; k < o.depth; k++) {
		uint8_t *b = req.mem.data() + k * (slot + 64);

		st[k] = { b, (uint64_t *)(b + slot), (uint64_t *)(b + slot + 8),
			  b + slot + 16, {} };
	}
	uint64_t raddr = (uintptr_t)log.p;
	uint32_t rkey = tgt.mr->rkey;

	// send mode: the target thread and its receive buffers (in its own
	// registered memory: a second MR on the target side).
	std::vector<uint8_t> tbuf;
	ibv_mr *tmr = nullptr;
	std::thread target;
	std::atomic<int> tfail{ 0 };
	const int kRecvs = (int)o.depth + 1;	// a receive for every Send in flight

	if (o.mode == Mode::send) {
		tbuf.assign(kRecvs * slot + kRecvs * 8, 0);
		tmr = ibv_reg_mr(tgt.pd, tbuf.data(), tbuf.size(), IBV_ACCESS_LOCAL_WRITE);
		if (!tmr)
			die("ibv_reg_mr (target receive buffers)");
		auto post_recv = [&](int k) {
			ibv_sge sge{ (uintptr_t)&tbuf[k * slot], (uint32_t)slot, tmr->lkey };
			ibv_recv_wr wr{}, *bad;

			wr.wr_id = k;
			wr.sg_list = &sge;
			wr.num_sge = 1;
			if (ibv_post_recv(tgt.id->qp, &wr, &bad))
				die("ibv_post_recv (target)");
		};
		for (int k = 0; k < kRecvs; k++)
			post_recv(k);
		target = std::thread([&, post_recv] {
			uint64_t done = 0;

			while (done < o.n) {
				ibv_wc wc = next_wc(tgt, tch, o.spin);

				if (wc.opcode == IBV_WC_SEND)
					continue;	// an answer went out
				if (wc.opcode != IBV_WC_RECV || wc.byte_len != rec_len) {
					tfail++;
					std::fprintf(stderr, "FAIL target: opcode %d byte_len %u\n",
						     wc.opcode, wc.byte_len);
					return;
				}
				const uint8_t *r = &tbuf[wc.wr_id * slot];
				RecHdr h;

				std::memcpy(&h, r, kHdr);
				if (h.magic != kMagic || h.seq != done) {
					tfail++;
					std::fprintf(stderr, "FAIL target: record seq %" PRIu64
						     " where %" PRIu64 " was due\n", h.seq, done);
					return;
				}
				uint8_t *dst = log.p + kRecOff + done * slot;

				std::memcpy(dst, r, rec_len);
				writeback(dst, rec_len, log.pmem);
				__atomic_store_n((uint64_t *)log.p, done + 1, __ATOMIC_RELEASE);
				writeback(log.p, 8, log.pmem);
				done++;
				post_recv((int)wc.wr_id);
				// its own answer buffer: earlier answers may be in flight
				uint64_t *reply = (uint64_t *)&tbuf[kRecvs * slot +
								    (done % kRecvs) * 8];
				*reply = done;
				ibv_sge sge{ (uintptr_t)reply, 8, tmr->lkey };
				ibv_send_wr wr{}, *bad;

				wr.wr_id = 1000 + done;
				wr.opcode = IBV_WR_SEND;
				wr.sg_list = &sge;
				wr.num_sge = 1;
				wr.send_flags = IBV_SEND_SIGNALED;
				if (ibv_post_send(tgt.id->qp, &wr, &bad))
					die("ibv_post_send (target)");
			}
			// the last answer's completion
			next_wc(tgt, tch, o.spin);
		});
	}

	std::vector<double> lat;
	lat.reserve(o.n);
	auto t_all = Clock::now();
	uint64_t posted = 0, done = 0;
	bool broken = false;

	// post commit @i (its stage i % depth is free)
	auto post = [&](uint64_t i) {
		Stage &g = st[i % o.depth];
		ibv_qp_ex *q = req.qpx;
		uint64_t roff = kRecOff + i * slot;

		make_record(g.rec, o.seed, i, o.size);
		*g.tail_src = i + 1;
		*g.tail_rd = 0;
		g.t0 = Clock::now();
		if (o.mode == Mode::send) {
			ibv_sge sge{ (uintptr_t)g.ack, 8, req.mr->lkey };
			ibv_recv_wr rw{}, *rbad;

			rw.wr_id = i;
			rw.sg_list = &sge;
			rw.num_sge = 1;
			if (ibv_post_recv(req.id->qp, &rw, &rbad))
				die("ibv_post_recv");
		}
		ibv_wr_start(q);
		q->wr_id = i;
		q->wr_flags = 0;
		switch (o.mode) {
		case Mode::push:
			ibv_wr_rdma_write(q, rkey, raddr + roff);
			ibv_wr_set_sge(q, req.mr->lkey, (uintptr_t)g.rec, (uint32_t)rec_len);
			xiwdv_wr_flush(q, rkey, raddr + roff, rec_len, ftype,
				       XIWDV_FLUSH_RANGE);
			ibv_wr_atomic_write(q, rkey, raddr, g.tail_src);
			q->wr_flags = IBV_SEND_SIGNALED;
			xiwdv_wr_flush(q, rkey, raddr, 8, ftype, XIWDV_FLUSH_RANGE);
			break;
		case Mode::write:
			ibv_wr_rdma_write(q, rkey, raddr + roff);
			ibv_wr_set_sge(q, req.mr->lkey, (uintptr_t)g.rec, (uint32_t)rec_len);
			ibv_wr_rdma_write(q, rkey, raddr);
			ibv_wr_set_sge(q, req.mr->lkey, (uintptr_t)g.tail_src, 8);
			q->wr_flags = IBV_SEND_SIGNALED;
			ibv_wr_rdma_read(q, rkey, raddr);
			ibv_wr_set_sge(q, req.mr->lkey, (uintptr_t)g.tail_rd, 8);
			break;
		case Mode::send:
			q->wr_flags = IBV_SEND_SIGNALED;
			ibv_wr_send(q);
			ibv_wr_set_sge(q, req.mr->lkey, (uintptr_t)g.rec, (uint32_t)rec_len);
			break;
		}
		if (int e = ibv_wr_complete(q)) {
			errno = e;
			die("ibv_wr_complete");
		}
	};

	// Commits complete in order: the signaled WR of one QP's send queue
	// (push, write), the target's answers (send).
	uint64_t sends_done = 0;
	while (done < o.n && !broken) {
		while (posted < o.n && posted - done < o.depth &&
		       (o.mode != Mode::send || posted - sends_done < o.depth))
			post(posted++);
		ibv_wc wc = next_wc(req, rch, o.spin);
		Stage &g = st[done % o.depth];

		if (o.mode == Mode::send) {
			if (wc.opcode == IBV_WC_SEND) {
				sends_done++;
				continue;
			}
			uint64_t got;

			std::memcpy(&got, st[wc.wr_id % o.depth].ack, 8);
			if (wc.opcode != IBV_WC_RECV || wc.wr_id != done || got != done + 1) {
				check(false, "commit %" PRIu64 ": answer opcode %d for %" PRIu64
				      " says %" PRIu64, done, wc.opcode, wc.wr_id, got);
				broken = true;
				break;
			}
		} else {
			if (wc.wr_id != done) {
				check(false, "commit %" PRIu64 ": completion of wr_id %" PRIu64,
				      done, wc.wr_id);
				broken = true;
				break;
			}
			if (o.mode == Mode::push && wc.opcode != XIWDV_WC_FLUSH) {
				check(false, "commit %" PRIu64 ": completion opcode %d, not Flush",
				      done, wc.opcode);
				broken = true;
				break;
			}
			// later commits' tails may be placed before the Read runs
			if (o.mode == Mode::write && *g.tail_rd < done + 1) {
				check(false, "commit %" PRIu64 ": the tail read back is %" PRIu64,
				      done, *g.tail_rd);
				broken = true;
				break;
			}
		}
		lat.push_back(std::chrono::duration<double, std::micro>(Clock::now() - g.t0).count());
		done++;
	}
	// send mode: the last Sends' own completions
	while (o.mode == Mode::send && !broken && sends_done < o.n) {
		ibv_wc wc = next_wc(req, rch, o.spin);

		if (wc.opcode == IBV_WC_SEND)
			sends_done++;
	}
	double secs = std::chrono::duration<double>(Clock::now() - t_all).count();

	if (target.joinable())
		target.join();
	if (tfail)
		failures++;
	std::printf("commitlog mode=%s mem=%s n=%zu size=%u depth=%u median_us=%.1f p99_us=%.1f rate=%.0f/s\n",
		    mode_name(o.mode), log.pmem ? "pmem" : "dram", lat.size(), o.size, o.depth,
		    pct(lat, 0.5), pct(lat, 0.99), secs > 0 ? (double)lat.size() / secs : 0.0);
	check(lat.size() == o.n, "%zu of %" PRIu64 " commits completed", lat.size(), o.n);
	verify(log.p, o.n, o.seed, o.size);
	std::fflush(stdout);
	if (o.hold && !failures) {
		signal(SIGTERM, on_signal);
		signal(SIGINT, on_signal);
		std::printf("HOLD committed %" PRIu64 "\n", o.n);
		std::fflush(stdout);
		while (!stop_hold)
			pause();
	}
	rdma_disconnect(req.id);
	if (tmr)
		ibv_dereg_mr(tmr);
	req.teardown();
	tgt.teardown();
	if (rch)
		ibv_destroy_comp_channel(rch);
	if (tch)
		ibv_destroy_comp_channel(tch);
	return failures ? 1 : 0;
}

int check_cmd(const Opts &o)
{
	LogMem log;

	if (o.dax.empty())
		die("check needs --dax");
	log.map(o.dax, log_bytes(o.n, o.size));
	return verify(log.p, o.n, o.seed, o.size) ? 1 : 0;
}

[[noreturn]] void usage()
{
	std::fprintf(stderr,
		"usage: xiw_commitlog run --addr A --port P [--src B] [--mode push|send|write]\n"
		"                     [-n N] [--size S] [--seed X] [--dax PATH] [--depth D]\n"
		"                     [--spin] [--hold]\n"
		"       xiw_commitlog check --dax PATH -n N --size S --seed X\n");
	std::exit(2);
}

} // namespace

int main(int argc, char **argv)
{
	Opts o;

	setvbuf(stdout, nullptr, _IOLBF, 0);
	if (argc < 2)
		usage();
	std::string cmd = argv[1];
	for (int i = 2; i < argc; i++) {
		std::string k = argv[i];
		auto val = [&]() -> const char * {
			if (i + 1 >= argc)
				usage();
			return argv[++i];
		};

		if (k == "--addr")
			o.addr = val();
		else if (k == "--port")
			o.port = val();
		else if (k == "--src")
			o.src = val();
		else if (k == "--dax")
			o.dax = val();
		else if (k == "-n")
			o.n = std::strtoull(val(), nullptr, 0);
		else if (k == "--size")
			o.size = (uint32_t)std::strtoul(val(), nullptr, 0);
		else if (k == "--seed")
			o.seed = std::strtoull(val(), nullptr, 0);
		else if (k == "--depth")
			o.depth = (uint32_t)std::strtoul(val(), nullptr, 0);
		else if (k == "--spin")
			o.spin = true;
		else if (k == "--hold")
			o.hold = true;
		else if (k == "--mode") {
			std::string m = val();

			if (m == "push")
				o.mode = Mode::push;
			else if (m == "send")
				o.mode = Mode::send;
			else if (m == "write")
				o.mode = Mode::write;
			else
				usage();
		} else
			usage();
	}
	if (!o.n || !o.size || o.size > 4096 || !o.depth || o.depth > 32)
		usage();
	if (cmd == "check")
		return check_cmd(o);
	if (cmd != "run" || o.addr.empty() || o.port.empty())
		usage();
	return run(o);
}
