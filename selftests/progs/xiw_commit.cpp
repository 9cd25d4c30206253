// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// xiw_commit: RDMA Flush, Atomic Write and Verify (draft-talpey-rdma-commit)
// between a server and a client process over rdma_cm - two xiw devices of
// one VM, or two VMs - through rdma-core and xiwdv.h. The client names one
// case per connection in its connect private data; the server registers
// its MR for that case (rights, digest), fills it with a known pattern,
// answers with the MR in the accept private data, and once the client has
// gone checks its own memory: what had to land is there, byte-exact, and
// nothing else changed.
//
//   xiw_commit server ADDR PORT --conns N [--timeout S]
//   xiw_commit client ADDR PORT --case NAME [--src ADDR]
//
// Cases (client side / server side):
//   caps              device_cap_flags_ex bits 38/39/40 on both devices
//   awrite            ibv_wr_atomic_write and ibv_post_send's
//                     IBV_WR_ATOMIC_WRITE: IBV_WC_ATOMIC_WRITE, the 8 bytes
//                     read back and in the server's memory, neighbours
//                     untouched
//   flush             Flush global of a range, of 0 bytes at the MR's end,
//                     of the whole MR: IBV_WC_FLUSH; memory unchanged
//   chain             120 x (Write 4 KiB record -> Flush -> Atomic Write
//                     tail): a server thread watches the tail and, each
//                     time it sees it move, finds that record complete
//   verify            Write then Verify (crc32c, the MR's default): digest
//                     returned = crc32c computed here, the right hash
//                     supplied succeeds, no digest buffer (no SGE set, or
//                     ibv_wr_set_sge_list with 0 SGEs)
//   verify-sha256     the same on an MR registered with xiwdv_reg_mr(SHA256)
//   verify-wrong      right hash, then a wrong one followed by an Atomic
//                     Write: IBV_WC_REM_OP_ERR vendor_err 0x02ff, the Atomic
//                     Write flushed (never executed), QP in ERROR
//   awrite-misaligned refused by the contract: ibv_wr_complete and
//                     ibv_post_send EINVAL, memory untouched, QP still works
//   awrite-noright    Atomic Write to an MR without REMOTE_WRITE:
//                     IBV_WC_REM_ACCESS_ERR 0x0102
//   flush-noright     Flush to an MR without a flush right: REM_ACCESS_ERR
//   flush-persistent  IBV_ACCESS_FLUSH_PERSISTENT on DRAM: registration
//                     EINVAL on both sides; Flush P to the server's
//                     global-only MR: REM_ACCESS_ERR 0x0102
//   verify-oob        Verify past the MR's end: REM_ACCESS_ERR 0x0101
//   verify-hashlen    a 4-byte hash (sha256's first 4 bytes) for an MR
//                     whose digest is sha256: REM_OP_ERR 0x02ff
//   flush-badstag     Flush of the whole MR of an STag that does not
//                     exist: REM_ACCESS_ERR 0x0100 (invalid STag)
//   order-verify      5 x (Write 256 KiB, Verify of it - long enough for the
//                     responder's exec work - then an Atomic Write into
//                     the middle of it): the digest never includes the
//                     Atomic Write's bytes, which land after it
// In the peer-error cases a second WR posted behind the failing one must
// complete with IBV_WC_WR_FLUSH_ERR and must not reach the server's memory.
//
// One line per check ("ok ..." or "FAIL ..."), then "N passed, N failed";
// exit 0 if all passed, 1 if one failed, 2 on a setup error. The server
// prints "listening" once it accepts connections.
#include "checks.h"
#include "digests.h"
#include "verbs_side.h"

#include <infiniband/xiwdv.h>

#include <endian.h>
#include <poll.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace {

using cm_pair::die;

using checks::check;
using checks::failures;
using checks::passes;

using checks::hex;

// ---- what both sides know -------------------------------------------------

constexpr size_t kMem = 512 * 1024;	// the server's MR
constexpr uint32_t kMagic = 0x58434d54;	// "XCMT"
constexpr int kAll = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		     IBV_ACCESS_REMOTE_READ | XIWDV_ACCESS_FLUSH_GLOBAL;

// The server's memory before the client does anything.
uint8_t pat(size_t i)
{
	return uint8_t(i * 131 + (i >> 11) + 0x5a);
}

// What the client writes for Verify.
uint8_t wpat(size_t i)
{
	return uint8_t((i * 7 + (i >> 8)) ^ 0x3c);
}

// Atomic Write targets and values.
constexpr size_t kAw1 = 64, kAw2 = 128, kAwMis = 196, kAwBehind = 256;
constexpr uint64_t kV1 = 0x0102030405060708ULL, kV2 = 0xf1e2d3c4b5a69788ULL,
		   kVBehind = 0xdeadbeefcafef00dULL;

// Verify: the client writes kVerLen bytes of wpat at kVerOff.
constexpr size_t kVerOff = 8192, kVerLen = 64 * 1024;

// order-verify: kBig bytes of big(round, i) at 0, the Atomic Write of
// kBigVal + round at kBigAw, kBigRounds rounds.
constexpr size_t kBig = 256 * 1024, kBigAw = 128 * 1024;
constexpr int kBigRounds = 5;
constexpr uint64_t kBigVal = 0x5555aaaa00000000ULL;
uint8_t big(int round, size_t i)
{
	return uint8_t(i * 29 + (i >> 10) + round * 71);
}

// chain: the tail at 0, round k (1 .. kRounds) writes its record to slot
// k, kRec bytes of rec(k, i).
constexpr int kRounds = 120, kBatch = 4;
constexpr size_t kRec = 4096;
constexpr size_t slot(int k)
{
	return size_t(k) * kRec;
}
uint8_t rec(int k, size_t i)
{
	return uint8_t(k * 13 + i * 3 + (i >> 7));
}
static_assert(slot(kRounds) + kRec <= kMem);

struct Hello {
	uint32_t magic;
	char name[28];
} __attribute__((packed));

struct Reply {
	uint32_t magic;
	uint32_t rkey;
	uint64_t addr;
	uint64_t len;
} __attribute__((packed));

struct CaseDef {
	int access;
	enum xiwdv_digest digest;
};

const std::map<std::string, CaseDef> kCases = {
	{ "caps", { kAll, XIWDV_DIGEST_DEFAULT } },
	{ "awrite", { kAll, XIWDV_DIGEST_DEFAULT } },
	{ "flush", { kAll, XIWDV_DIGEST_DEFAULT } },
	{ "chain", { kAll, XIWDV_DIGEST_DEFAULT } },
	{ "verify", { kAll, XIWDV_DIGEST_DEFAULT } },
	{ "verify-sha256", { kAll, XIWDV_DIGEST_SHA256 } },
	{ "verify-wrong", { kAll, XIWDV_DIGEST_DEFAULT } },
	{ "awrite-misaligned", { kAll, XIWDV_DIGEST_DEFAULT } },
	{ "awrite-noright", { IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
			      XIWDV_ACCESS_FLUSH_GLOBAL,
			      XIWDV_DIGEST_DEFAULT } },
	{ "flush-noright", { IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			     IBV_ACCESS_REMOTE_READ, XIWDV_DIGEST_DEFAULT } },
	{ "flush-persistent", { kAll, XIWDV_DIGEST_DEFAULT } },
	{ "verify-oob", { kAll, XIWDV_DIGEST_DEFAULT } },
	{ "verify-hashlen", { kAll, XIWDV_DIGEST_SHA256 } },
	{ "flush-badstag", { kAll, XIWDV_DIGEST_DEFAULT } },
	{ "order-verify", { kAll, XIWDV_DIGEST_DEFAULT } },
};

void caps(ibv_context *ctx, const std::string &who)
{
	ibv_device_attr_ex a{};

	if (ibv_query_device_ex(ctx, nullptr, &a))
		die("ibv_query_device_ex");
	check(a.device_cap_flags_ex & XIWDV_DEVICE_FLUSH_GLOBAL,
	      who + " caps: flush global (bit 38)");
	check(a.device_cap_flags_ex & XIWDV_DEVICE_FLUSH_PERSISTENT,
	      who + " caps: flush persistent (bit 39)");
	check(a.device_cap_flags_ex & XIWDV_DEVICE_ATOMIC_WRITE,
	      who + " caps: atomic write (bit 40)");
}

// IBV_ACCESS_FLUSH_PERSISTENT on DRAM must be refused with EINVAL, by
// ibv_reg_mr and by xiwdv_reg_mr.
void persistent_on_dram(ibv_pd *pd, void *buf, const std::string &who)
{
	const int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			XIWDV_ACCESS_FLUSH_PERSISTENT;

	errno = 0;
	ibv_mr *mr = ibv_reg_mr(pd, buf, 4096, acc);
	int err = errno;
	check(!mr && err == EINVAL, who + ": ibv_reg_mr with "
	      "IBV_ACCESS_FLUSH_PERSISTENT on DRAM fails, errno " +
	      std::to_string(err));
	if (mr)
		ibv_dereg_mr(mr);
	errno = 0;
	mr = xiwdv_reg_mr(pd, buf, 4096, acc, XIWDV_DIGEST_SHA256);
	err = errno;
	check(!mr && err == EINVAL, who + ": xiwdv_reg_mr with "
	      "IBV_ACCESS_FLUSH_PERSISTENT on DRAM fails, errno " +
	      std::to_string(err));
	if (mr)
		ibv_dereg_mr(mr);
}

// The next event on @ch within @ms (nullptr on timeout).
rdma_cm_event *next_event(rdma_event_channel *ch, int ms)
{
	pollfd p{ ch->fd, POLLIN, 0 };
	rdma_cm_event *ev;

	if (poll(&p, 1, ms) <= 0)
		return nullptr;
	if (rdma_get_cm_event(ch, &ev))
		die("rdma_get_cm_event");
	return ev;
}

// ---- server -----------------------------------------------------------------

// The chain watcher: each time the tail moves, the record it names must be
// complete in memory.
struct Watcher {
	const uint8_t *mem;
	std::atomic<bool> stop{ false };
	uint64_t seen = 0, bad = 0, backwards = 0, last = 0;
	std::string first_bad;
	std::thread t;

	void run()
	{
		auto *tail = reinterpret_cast<const uint64_t *>(mem);

		while (!stop.load(std::memory_order_relaxed)) {
			uint64_t v = __atomic_load_n(tail, __ATOMIC_ACQUIRE);

			if (v == last) {
				std::this_thread::yield();
				continue;
			}
			/* before the first commit: the pattern's bytes */
			if ((seen && v < last) || v > kRounds) {
				backwards++;
				last = v;
				continue;
			}
			last = v;
			seen++;
			int k = int(v);
			for (size_t i = 0; i < kRec; i++) {
				if (mem[slot(k) + i] != rec(k, i)) {
					if (!bad++)
						first_bad = "tail " +
							std::to_string(k) +
							": record byte " +
							std::to_string(i) +
							" not there yet";
					break;
				}
			}
		}
	}
};

// The server's view of one connection's memory after the client left.
void server_check(const std::string &cname, const uint8_t *m,
		  const Watcher *w)
{
	auto unchanged = [&](size_t from, size_t to, std::vector<std::pair<
			     size_t, size_t>> skip = {}) {
		for (size_t i = from; i < to; i++) {
			bool s = false;

			for (auto &r : skip)
				s |= i >= r.first && i < r.second;
			if (!s && m[i] != pat(i))
				return i;
		}
		return to;
	};
	auto u64at = [&](size_t off) {
		uint64_t v;

		std::memcpy(&v, m + off, 8);
		return v;
	};
	const std::string p = "server " + cname + ": ";

	if (cname == "awrite") {
		check(u64at(kAw1) == kV1 && u64at(kAw2) == kV2,
		      p + "both Atomic Write values in memory");
		size_t at = unchanged(0, kMem, { { kAw1, kAw1 + 8 },
						 { kAw2, kAw2 + 8 } });
		check(at == kMem, p + "nothing else changed (first change at " +
		      std::to_string(at) + ")");
	} else if (cname == "chain") {
		check(w->bad == 0, p + "tail seen " + std::to_string(w->seen) +
		      " times, record always complete" +
		      (w->bad ? " - " + w->first_bad : ""));
		check(w->backwards == 0 && w->seen >= 1,
		      p + "tail only moved forward and was seen moving");
		bool all = u64at(0) == uint64_t(kRounds);
		for (int k = 1; k <= kRounds && all; k++)
			for (size_t i = 0; i < kRec; i++)
				all &= m[slot(k) + i] == rec(k, i);
		check(all, p + "final tail " + std::to_string(u64at(0)) +
		      " and all records in place");
	} else if (cname == "order-verify") {
		const int r = kBigRounds;
		bool ok = u64at(kBigAw) == kBigVal + r;
		for (size_t i = 0; i < kBig && ok; i++)
			ok = (i >= kBigAw && i < kBigAw + 8) || m[i] == big(r, i);
		size_t at = ok ? unchanged(kBig, kMem) : 0;
		check(ok && at == kMem, p + "the last round's data and Atomic "
		      "Write, the rest unchanged");
	} else if (cname == "verify" || cname == "verify-sha256") {
		bool ok = true;
		for (size_t i = 0; i < kVerLen; i++)
			ok &= m[kVerOff + i] == wpat(i);
		check(ok, p + "the written range holds what was verified");
		size_t at = unchanged(0, kMem, { { kVerOff, kVerOff + kVerLen } });
		check(at == kMem, p + "nothing else changed");
	} else if (cname == "awrite-misaligned") {
		check(u64at(kAw1) == kV1, p + "the aligned Atomic Write landed");
		size_t at = unchanged(0, kMem, { { kAw1, kAw1 + 8 } });
		check(at == kMem, p + "misaligned target untouched (first "
		      "change at " + std::to_string(at) + ")");
	} else if (cname == "verify-wrong") {
		bool ok = true;
		for (size_t i = 0; i < kVerLen; i++)
			ok &= m[kVerOff + i] == wpat(i);
		check(ok, p + "the written range is there");
		size_t at = unchanged(0, kMem, { { kVerOff, kVerOff + kVerLen } });
		check(at == kMem, p + "the Atomic Write behind the failed "
		      "Verify never landed (first change at " +
		      std::to_string(at) + ")");
	} else {
		// caps, flush, the peer refusals: not one byte changed
		size_t at = unchanged(0, kMem);
		check(at == kMem, p + "memory unchanged (first change at " +
		      std::to_string(at) + ")");
	}
}

int server(const char *addr, const char *port, int conns, int timeout_s)
{
	rdma_event_channel *ch = rdma_create_event_channel();
	rdma_cm_id *lid;
	addrinfo hints{}, *ai;
	std::deque<rdma_cm_event *> pending;
	const int ms = timeout_s * 1000;

	hints.ai_socktype = SOCK_STREAM;
	if (!ch || getaddrinfo(addr, port, &hints, &ai))
		die("event channel / address");
	if (rdma_create_id(ch, &lid, nullptr, RDMA_PS_TCP) ||
	    rdma_bind_addr(lid, ai->ai_addr) || rdma_listen(lid, 4))
		die("rdma listen");
	freeaddrinfo(ai);
	std::printf("listening\n");

	auto take = [&](rdma_cm_event_type type, rdma_cm_id *id) {
		for (auto it = pending.begin(); it != pending.end(); ++it)
			if ((*it)->event == type && (!id || (*it)->id == id)) {
				rdma_cm_event *ev = *it;

				pending.erase(it);
				return ev;
			}
		for (;;) {
			rdma_cm_event *ev = next_event(ch, ms);

			if (!ev)
				return (rdma_cm_event *)nullptr;
			if (ev->event == type && (!id || ev->id == id))
				return ev;
			if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
				pending.push_back(ev);
			else
				rdma_ack_cm_event(ev);
		}
	};

	for (int n = 0; n < conns; n++) {
		rdma_cm_event *ev = take(RDMA_CM_EVENT_CONNECT_REQUEST, nullptr);

		if (!ev) {
			check(false, "server: connection " +
			      std::to_string(n + 1) + " of " +
			      std::to_string(conns) + " never came");
			break;
		}
		Hello h{};
		std::memcpy(&h, ev->param.conn.private_data,
			    std::min<size_t>(sizeof(h),
					     ev->param.conn.private_data_len));
		h.name[sizeof(h.name) - 1] = 0;
		std::string cname = h.name;
		auto def = kCases.find(cname);
		if (be32toh(h.magic) != kMagic || def == kCases.end()) {
			std::fprintf(stderr, "unknown case '%s'\n", h.name);
			rdma_reject(ev->id, nullptr, 0);
			rdma_ack_cm_event(ev);
			failures++;
			continue;
		}
		rdma_cm_id *id = ev->id;
		cm_pair::Side srv;
		cm_pair::SideOpts so;
		std::vector<uint8_t> buf(kMem);
		so.mem_bytes = kMem;
		so.ext_mem = buf.data();
		so.access = def->second.access;
		auto digest = def->second.digest;
		so.reg_mr = [digest](ibv_pd *pd, void *b, size_t l, int a) {
			return digest == XIWDV_DIGEST_DEFAULT ?
				ibv_reg_mr(pd, b, l, a) :
				xiwdv_reg_mr(pd, b, l, a, digest);
		};
		for (size_t i = 0; i < kMem; i++)
			buf[i] = pat(i);
		srv.setup(id, so);
		if (cname == "caps")
			caps(id->verbs, "server");
		if (cname == "flush-persistent")
			persistent_on_dram(srv.pd, buf.data(), "server");

		Reply r{ htobe32(kMagic), htobe32(srv.mr->rkey),
			 htobe64((uintptr_t)buf.data()), htobe64(kMem) };
		rdma_conn_param p{};
		p.responder_resources = 8;
		p.initiator_depth = 8;
		p.private_data = &r;
		p.private_data_len = sizeof(r);
		if (rdma_accept(id, &p))
			die("rdma_accept");
		rdma_ack_cm_event(ev);
		ev = take(RDMA_CM_EVENT_ESTABLISHED, id);
		if (!ev)
			die("no ESTABLISHED");
		rdma_ack_cm_event(ev);

		Watcher w;
		w.mem = buf.data();
		/* the tail before any commit: not a move */
		std::memcpy(&w.last, buf.data(), sizeof(w.last));
		if (cname == "chain")
			w.t = std::thread([&w] { w.run(); });
		ev = take(RDMA_CM_EVENT_DISCONNECTED, id);
		if (w.t.joinable()) {
			w.stop = true;
			w.t.join();
		}
		if (!ev) {
			check(false, "server " + cname + ": no disconnect in " +
			      std::to_string(timeout_s) + " s");
		} else {
			rdma_ack_cm_event(ev);
		}
		server_check(cname, buf.data(), &w);
		rdma_disconnect(id);
		srv.teardown();
	}
	rdma_destroy_id(lid);
	for (auto *ev : pending)
		rdma_ack_cm_event(ev);
	rdma_destroy_event_channel(ch);
	std::printf("%d passed, %d failed\n", passes, failures);
	return failures ? 1 : 0;
}

// ---- client -----------------------------------------------------------------

struct Client {
	cm_pair::Side c;
	rdma_event_channel *ch = nullptr;
	uint64_t raddr = 0, rlen = 0;
	uint32_t rkey = 0;

	void open(const char *addr, const char *port, const char *src,
		  const std::string &cname)
	{
		addrinfo hints{}, *ai, *sai = nullptr;
		rdma_cm_id *id;
		rdma_cm_event *ev;

		hints.ai_socktype = SOCK_STREAM;
		ch = rdma_create_event_channel();
		if (!ch || getaddrinfo(addr, port, &hints, &ai) ||
		    (src && getaddrinfo(src, nullptr, &hints, &sai)))
			die("event channel / address");
		if (rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP) ||
		    rdma_resolve_addr(id, sai ? sai->ai_addr : nullptr,
				      ai->ai_addr, 2000))
			die("rdma_resolve_addr");
		rdma_ack_cm_event(cm_pair::expect(ch,
				  RDMA_CM_EVENT_ADDR_RESOLVED));
		if (rdma_resolve_route(id, 2000))
			die("rdma_resolve_route");
		rdma_ack_cm_event(cm_pair::expect(ch,
				  RDMA_CM_EVENT_ROUTE_RESOLVED));
		freeaddrinfo(ai);
		if (sai)
			freeaddrinfo(sai);

		cm_pair::SideOpts o;
		o.mem_bytes = kBig + 4096;
		o.depth = 32;
		o.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE |
				   IBV_QP_EX_WITH_RDMA_READ |
				   IBV_QP_EX_WITH_ATOMIC_WRITE;
		o.access = IBV_ACCESS_LOCAL_WRITE;
		c.setup(id, o);

		Hello h{ htobe32(kMagic), {} };
		std::snprintf(h.name, sizeof(h.name), "%s", cname.c_str());
		rdma_conn_param p{};
		p.initiator_depth = 8;
		p.responder_resources = 8;
		p.private_data = &h;
		p.private_data_len = sizeof(h);
		if (rdma_connect(id, &p))
			die("rdma_connect");
		ev = cm_pair::expect(ch, RDMA_CM_EVENT_ESTABLISHED);
		Reply r{};
		if (ev->param.conn.private_data_len < sizeof(r))
			die("accept private data too short");
		std::memcpy(&r, ev->param.conn.private_data, sizeof(r));
		rdma_ack_cm_event(ev);
		if (be32toh(r.magic) != kMagic)
			die("accept private data: not xiw_commit's");
		rkey = be32toh(r.rkey);
		raddr = be64toh(r.addr);
		rlen = be64toh(r.len);
	}

	void close()
	{
		rdma_disconnect(c.id);
		c.teardown();
		rdma_destroy_event_channel(ch);
	}

	// Post what @build adds between wr_start and wr_complete, every WR
	// signaled unless @build changes wr_flags.
	int post(const std::function<void()> &build)
	{
		ibv_wr_start(c.qpx);
		c.qpx->wr_id = 1;
		c.qpx->wr_flags = IBV_SEND_SIGNALED;
		build();
		return ibv_wr_complete(c.qpx);
	}

	ibv_wc one(int ms = 30000)
	{
		auto wc = c.poll(1, ms);

		if (wc.empty())
			die("no completion");
		return wc[0];
	}

	// @len bytes of the server's memory at @off into the local buffer at
	// @loff, by RDMA Read.
	void read(size_t off, size_t len, size_t loff)
	{
		if (post([&] {
			ibv_wr_rdma_read(c.qpx, rkey, raddr + off);
			ibv_wr_set_sge(c.qpx, c.mr->lkey,
				       (uintptr_t)&c.mem[loff], len);
		}))
			die("post read");
		ibv_wc wc = one();
		if (wc.status != IBV_WC_SUCCESS)
			die("read back");
	}

	void write_wpat()
	{
		for (size_t i = 0; i < kVerLen; i++)
			c.mem[i] = wpat(i);
		if (post([&] {
			c.qpx->wr_flags = 0;
			ibv_wr_rdma_write(c.qpx, rkey, raddr + kVerOff);
			ibv_wr_set_sge(c.qpx, c.mr->lkey,
				       (uintptr_t)c.mem.data(), kVerLen);
		}))
			die("post write");
	}

	bool in_error()
	{
		ibv_qp_attr qa{};
		ibv_qp_init_attr qi{};

		if (ibv_query_qp(c.id->qp, &qa, IBV_QP_STATE, &qi))
			die("ibv_query_qp");
		return qa.qp_state == IBV_QPS_ERR;
	}
};

void status_is(const ibv_wc &wc, unsigned opcode, const std::string &what)
{
	check(wc.status == IBV_WC_SUCCESS && wc.opcode == opcode,
	      what + ": status " + ibv_wc_status_str(wc.status) +
	      ", opcode " + std::to_string(wc.opcode) + " (want " +
	      std::to_string(opcode) + ")");
}

void case_awrite(Client &cl)
{
	if (cl.post([&] { ibv_wr_atomic_write(cl.c.qpx, cl.rkey,
					      cl.raddr + kAw1, &kV1); }))
		die("post atomic write");
	status_is(cl.one(), IBV_WC_ATOMIC_WRITE, "Atomic Write (ibv_qp_ex)");
	// ibv_post_send's form: the 8 bytes in the buffer of the one SGE
	std::memcpy(&cl.c.mem[0], &kV2, 8);
	if (cl.c.post(IBV_WR_ATOMIC_WRITE, 2, &cl.c.mem[0], 8, true,
		      cl.raddr + kAw2, cl.rkey))
		die("ibv_post_send atomic write");
	status_is(cl.one(), IBV_WC_ATOMIC_WRITE, "Atomic Write (ibv_post_send)");
	// read back 16 bytes around each: the value and untouched neighbours
	cl.read(kAw1 - 4, 16, 1024);
	cl.read(kAw2 - 4, 16, 1040);
	auto around = [&](size_t loff, size_t off, uint64_t v) {
		uint8_t want[16];

		for (size_t i = 0; i < 16; i++)
			want[i] = pat(off - 4 + i);
		std::memcpy(want + 4, &v, 8);
		return !std::memcmp(&cl.c.mem[loff], want, 16);
	};
	check(around(1024, kAw1, kV1), "Atomic Write (ibv_qp_ex) read back: " +
	      hex(&cl.c.mem[1024], 16));
	check(around(1040, kAw2, kV2), "Atomic Write (ibv_post_send) read "
	      "back: " + hex(&cl.c.mem[1040], 16));
}

void case_flush(Client &cl)
{
	if (cl.post([&] { xiwdv_wr_flush(cl.c.qpx, cl.rkey, cl.raddr + 4096,
					 8192, XIWDV_FLUSH_GLOBAL,
					 XIWDV_FLUSH_RANGE); }))
		die("post flush");
	status_is(cl.one(), XIWDV_WC_FLUSH, "Flush global of 8 KiB");
	if (cl.post([&] { xiwdv_wr_flush(cl.c.qpx, cl.rkey,
					 cl.raddr + cl.rlen, 0,
					 XIWDV_FLUSH_GLOBAL,
					 XIWDV_FLUSH_RANGE); }))
		die("post flush 0");
	status_is(cl.one(), XIWDV_WC_FLUSH, "Flush of 0 bytes at the MR's end");
	if (cl.post([&] { xiwdv_wr_flush(cl.c.qpx, cl.rkey, 0, 0,
					 XIWDV_FLUSH_GLOBAL,
					 XIWDV_FLUSH_MR); }))
		die("post flush mr");
	status_is(cl.one(), XIWDV_WC_FLUSH, "Flush of the whole MR");
	// three at once, only the last signaled
	if (cl.post([&] {
		cl.c.qpx->wr_flags = 0;
		xiwdv_wr_flush(cl.c.qpx, cl.rkey, cl.raddr, 64,
			       XIWDV_FLUSH_GLOBAL, XIWDV_FLUSH_RANGE);
		xiwdv_wr_flush(cl.c.qpx, cl.rkey, 0, 0, XIWDV_FLUSH_GLOBAL,
			       XIWDV_FLUSH_MR);
		cl.c.qpx->wr_flags = IBV_SEND_SIGNALED;
		xiwdv_wr_flush(cl.c.qpx, cl.rkey, cl.raddr + kMem - 64, 64,
			       XIWDV_FLUSH_GLOBAL, XIWDV_FLUSH_RANGE);
	}))
		die("post flush x3");
	status_is(cl.one(), XIWDV_WC_FLUSH, "three Flushes, the last signaled");
}

void case_chain(Client &cl)
{
	// a batch's records, one local buffer each, rewritten only once the
	// batch completed
	std::vector<uint8_t> recs(kBatch * kRec);
	ibv_mr *rmr = ibv_reg_mr(cl.c.pd, recs.data(), recs.size(),
				 IBV_ACCESS_LOCAL_WRITE);
	int done = 0;

	if (!rmr)
		die("ibv_reg_mr records");
	for (int k = 1; k <= kRounds; k += kBatch) {
		for (int j = 0; j < kBatch && k + j <= kRounds; j++)
			for (size_t i = 0; i < kRec; i++)
				recs[j * kRec + i] = rec(k + j, i);
		if (cl.post([&] {
			for (int j = 0; j < kBatch && k + j <= kRounds; j++) {
				uint64_t tail = uint64_t(k + j);

				cl.c.qpx->wr_flags = 0;
				ibv_wr_rdma_write(cl.c.qpx, cl.rkey,
						  cl.raddr + slot(k + j));
				ibv_wr_set_sge(cl.c.qpx, rmr->lkey,
					       (uintptr_t)&recs[j * kRec],
					       kRec);
				xiwdv_wr_flush(cl.c.qpx, cl.rkey,
					       cl.raddr + slot(k + j), kRec,
					       XIWDV_FLUSH_GLOBAL,
					       XIWDV_FLUSH_RANGE);
				if (j == kBatch - 1 || k + j == kRounds)
					cl.c.qpx->wr_flags = IBV_SEND_SIGNALED;
				ibv_wr_atomic_write(cl.c.qpx, cl.rkey,
						    cl.raddr, &tail);
			}
		}))
			die("post chain");
		ibv_wc wc = cl.one();
		if (wc.status != IBV_WC_SUCCESS ||
		    wc.opcode != IBV_WC_ATOMIC_WRITE) {
			status_is(wc, IBV_WC_ATOMIC_WRITE, "chain round " +
				  std::to_string(k));
			break;
		}
		done = std::min(k + kBatch - 1, kRounds);
	}
	check(done == kRounds, "chain: " + std::to_string(done) + " of " +
	      std::to_string(kRounds) + " Write+Flush+Atomic Write rounds "
	      "completed");
	cl.read(0, 8, 0);
	uint64_t t;
	std::memcpy(&t, &cl.c.mem[0], 8);
	check(t == uint64_t(kRounds), "chain: the tail read back is " +
	      std::to_string(t));
	ibv_dereg_mr(rmr);
}

// Verify on the MR's digest: @sha256 picks the reference computed here.
void case_verify(Client &cl, bool sha)
{
	const size_t dlen = sha ? 32 : 4;
	const std::string n = sha ? "Verify sha256" : "Verify crc32c";
	auto ref = [&](size_t off, size_t len) {
		return sha ? digests::sha256(&cl.c.mem[off], len) :
			     digests::crc32c_bytes(&cl.c.mem[off], len);
	};

	if (sha) {
		auto abc = digests::sha256(
			reinterpret_cast<const uint8_t *>("abc"), 3);
		check(hex(abc.data(), 32) ==
		      "ba7816bf8f01cfea414140de5dae2223"
		      "b00361a396177a9cb410ff61f20015ad",
		      "sha256 here: the FIPS 180-2 'abc' vector");
	}
	// Write then Verify in one batch: the digest covers what was placed
	cl.write_wpat();
	uint8_t *dg = &cl.c.mem[kVerLen];
	std::memset(dg, 0, 64);
	if (cl.post([&] {
		xiwdv_wr_verify(cl.c.qpx, cl.rkey, cl.raddr + kVerOff, kVerLen,
				nullptr, 0);
		ibv_wr_set_sge(cl.c.qpx, cl.c.mr->lkey, (uintptr_t)dg, 64);
	}))
		die("post verify");
	ibv_wc wc = cl.one();
	status_is(wc, XIWDV_WC_VERIFY, n + " of 64 KiB after the Write");
	auto want = ref(0, kVerLen);
	check(wc.byte_len == dlen && !std::memcmp(dg, want.data(), dlen),
	      n + ": digest " + hex(dg, dlen) + ", here " +
	      hex(want.data(), dlen) + ", byte_len " +
	      std::to_string(wc.byte_len));
	// an unaligned piece of it
	std::memset(dg, 0, 64);
	if (cl.post([&] {
		xiwdv_wr_verify(cl.c.qpx, cl.rkey, cl.raddr + kVerOff + 101,
				1001, nullptr, 0);
		ibv_wr_set_sge(cl.c.qpx, cl.c.mr->lkey, (uintptr_t)dg, dlen);
	}))
		die("post verify 1001");
	wc = cl.one();
	want = ref(101, 1001);
	check(wc.status == IBV_WC_SUCCESS && wc.byte_len == dlen &&
	      !std::memcmp(dg, want.data(), dlen),
	      n + " of 1001 bytes at an odd offset: " + hex(dg, dlen) +
	      ", here " + hex(want.data(), dlen));
	// the right hash supplied, no digest buffer
	want = ref(0, kVerLen);
	if (cl.post([&] {
		xiwdv_wr_verify(cl.c.qpx, cl.rkey, cl.raddr + kVerOff, kVerLen,
				want.data(), uint8_t(dlen));
	}))
		die("post verify hash");
	wc = cl.one();
	status_is(wc, XIWDV_WC_VERIFY, n + " with the right hash");
	check(wc.byte_len == dlen, n + " with the right hash: byte_len " +
	      std::to_string(wc.byte_len));
	// no hash, the digest discarded: an SGE list of 0 entries
	std::memset(dg, 0xa5, 64);
	if (cl.post([&] {
		xiwdv_wr_verify(cl.c.qpx, cl.rkey, cl.raddr + kVerOff, 4096,
				nullptr, 0);
		ibv_wr_set_sge_list(cl.c.qpx, 0, nullptr);
	}))
		die("post verify no sge");
	wc = cl.one();
	bool kept = true;
	for (int i = 0; i < 64; i++)
		kept &= dg[i] == 0xa5;
	check(wc.status == IBV_WC_SUCCESS && wc.opcode == XIWDV_WC_VERIFY &&
	      wc.byte_len == dlen && kept,
	      n + " with 0 SGEs: status " + ibv_wc_status_str(wc.status) +
	      ", byte_len " + std::to_string(wc.byte_len) +
	      ", nothing written here");
	check(!cl.in_error(), n + ": QP not in ERROR");
}

// After a failure reported by the peer: the WR behind it is flushed.
void peer_error(Client &cl, const std::string &what, unsigned want_status,
		uint32_t want_vendor, const std::function<void()> &build)
{
	if (cl.post([&] {
		build();
		ibv_wr_atomic_write(cl.c.qpx, cl.rkey, cl.raddr + kAwBehind,
				    &kVBehind);
	}))
		die(("post " + what).c_str());
	auto wc = cl.c.poll(2, 30000);
	if (wc.size() != 2)
		die("completions of the failed WR and the one behind it");
	char b[200];
	std::snprintf(b, sizeof(b),
		      "%s: status %s vendor_err %#06x (want %s %#06x)",
		      what.c_str(), ibv_wc_status_str(wc[0].status),
		      wc[0].vendor_err,
		      ibv_wc_status_str((ibv_wc_status)want_status),
		      want_vendor);
	check(wc[0].status == want_status && wc[0].vendor_err == want_vendor,
	      b);
	check(wc[1].status == IBV_WC_WR_FLUSH_ERR,
	      what + ": the Atomic Write behind it: " +
	      ibv_wc_status_str(wc[1].status));
	check(cl.in_error(), what + ": requester QP in ERROR");
}

void case_verify_wrong(Client &cl)
{
	cl.write_wpat();
	auto right = digests::crc32c_bytes(cl.c.mem.data(), kVerLen);
	if (cl.post([&] {
		xiwdv_wr_verify(cl.c.qpx, cl.rkey, cl.raddr + kVerOff, kVerLen,
				right.data(), 4);
	}))
		die("post verify right");
	status_is(cl.one(), XIWDV_WC_VERIFY, "Verify with the right crc32c");
	auto wrong = right;
	wrong[0] ^= 1;
	peer_error(cl, "Verify with a wrong crc32c", IBV_WC_REM_OP_ERR, 0x02ff,
		   [&] {
		xiwdv_wr_verify(cl.c.qpx, cl.rkey, cl.raddr + kVerOff, kVerLen,
				wrong.data(), 4);
	});
}

// Write, a long Verify of it, an Atomic Write into it, in one batch: the
// responder digests in its exec work and the Atomic Write waits for it.
void case_order_verify(Client &cl)
{
	uint8_t *dg = &cl.c.mem[kBig];

	for (int r = 1; r <= kBigRounds; r++) {
		uint64_t v = kBigVal + r;

		for (size_t i = 0; i < kBig; i++)
			cl.c.mem[i] = big(r, i);
		auto want = digests::crc32c_bytes(cl.c.mem.data(), kBig);
		std::memset(dg, 0, 4);
		if (cl.post([&] {
			cl.c.qpx->wr_flags = 0;
			ibv_wr_rdma_write(cl.c.qpx, cl.rkey, cl.raddr);
			ibv_wr_set_sge(cl.c.qpx, cl.c.mr->lkey,
				       (uintptr_t)cl.c.mem.data(), kBig);
			cl.c.qpx->wr_flags = IBV_SEND_SIGNALED;
			xiwdv_wr_verify(cl.c.qpx, cl.rkey, cl.raddr, kBig,
					nullptr, 0);
			ibv_wr_set_sge(cl.c.qpx, cl.c.mr->lkey, (uintptr_t)dg,
				       4);
			ibv_wr_atomic_write(cl.c.qpx, cl.rkey,
					    cl.raddr + kBigAw, &v);
		}))
			die("post order-verify");
		auto wc = cl.c.poll(2, 30000);
		if (wc.size() != 2)
			die("order-verify completions");
		check(wc[0].status == IBV_WC_SUCCESS &&
		      wc[0].opcode == XIWDV_WC_VERIFY &&
		      wc[1].status == IBV_WC_SUCCESS &&
		      wc[1].opcode == IBV_WC_ATOMIC_WRITE &&
		      !std::memcmp(dg, want.data(), 4),
		      "round " + std::to_string(r) + ": Verify " +
		      ibv_wc_status_str(wc[0].status) + " digest " +
		      hex(dg, 4) + " (of the Write alone " +
		      hex(want.data(), 4) + "), Atomic Write " +
		      ibv_wc_status_str(wc[1].status));
	}
}

void case_awrite_misaligned(Client &cl)
{
	int rv = cl.post([&] { ibv_wr_atomic_write(cl.c.qpx, cl.rkey,
						   cl.raddr + kAwMis, &kV1); });
	check(rv == EINVAL, "misaligned Atomic Write (ibv_qp_ex): "
	      "ibv_wr_complete " + std::to_string(rv));
	std::memcpy(&cl.c.mem[0], &kV2, 8);
	rv = cl.c.post(IBV_WR_ATOMIC_WRITE, 2, &cl.c.mem[0], 8, true,
		       cl.raddr + kAwMis + 2, cl.rkey);
	check(rv == EINVAL, "misaligned Atomic Write (ibv_post_send): " +
	      std::to_string(rv));
	rv = cl.c.post(IBV_WR_ATOMIC_WRITE, 3, &cl.c.mem[0], 4, true,
		       cl.raddr + kAw1, cl.rkey);
	check(rv == EINVAL, "Atomic Write of 4 bytes (ibv_post_send): " +
	      std::to_string(rv));
	check(cl.c.poll(1, 200).empty(), "no completion for the refused ones");
	if (cl.post([&] { ibv_wr_atomic_write(cl.c.qpx, cl.rkey,
					      cl.raddr + kAw1, &kV1); }))
		die("post aligned atomic write");
	status_is(cl.one(), IBV_WC_ATOMIC_WRITE,
		  "aligned Atomic Write after the refused ones");
	check(!cl.in_error(), "QP not in ERROR");
}

int client(const char *addr, const char *port, const char *src,
	   const std::string &cname)
{
	Client cl;

	cl.open(addr, port, src, cname);
	if (cname == "caps") {
		caps(cl.c.id->verbs, "client");
	} else if (cname == "awrite") {
		case_awrite(cl);
	} else if (cname == "flush") {
		case_flush(cl);
	} else if (cname == "chain") {
		case_chain(cl);
	} else if (cname == "verify") {
		case_verify(cl, false);
	} else if (cname == "verify-sha256") {
		case_verify(cl, true);
	} else if (cname == "verify-wrong") {
		case_verify_wrong(cl);
	} else if (cname == "awrite-misaligned") {
		case_awrite_misaligned(cl);
	} else if (cname == "awrite-noright") {
		peer_error(cl, "Atomic Write without REMOTE_WRITE",
			   IBV_WC_REM_ACCESS_ERR, 0x0102, [&] {
			ibv_wr_atomic_write(cl.c.qpx, cl.rkey,
					    cl.raddr + kAw1, &kV1);
		});
	} else if (cname == "flush-noright") {
		peer_error(cl, "Flush without the flush right",
			   IBV_WC_REM_ACCESS_ERR, 0x0102, [&] {
			xiwdv_wr_flush(cl.c.qpx, cl.rkey, cl.raddr, 4096,
				       XIWDV_FLUSH_GLOBAL, XIWDV_FLUSH_RANGE);
		});
	} else if (cname == "flush-persistent") {
		persistent_on_dram(cl.c.pd, &cl.c.mem[0], "client");
		peer_error(cl, "Flush P to a global-only MR",
			   IBV_WC_REM_ACCESS_ERR, 0x0102, [&] {
			xiwdv_wr_flush(cl.c.qpx, cl.rkey, cl.raddr, 4096,
				       XIWDV_FLUSH_PERSISTENT,
				       XIWDV_FLUSH_RANGE);
		});
	} else if (cname == "order-verify") {
		case_order_verify(cl);
	} else if (cname == "verify-hashlen") {
		std::vector<uint8_t> p(4096);
		for (size_t i = 0; i < p.size(); i++)
			p[i] = pat(kVerOff + i);
		auto h = digests::sha256(p.data(), p.size());
		peer_error(cl, "Verify sha256 with a 4-byte hash",
			   IBV_WC_REM_OP_ERR, 0x02ff, [&] {
			xiwdv_wr_verify(cl.c.qpx, cl.rkey, cl.raddr + kVerOff,
					4096, h.data(), 4);
		});
	} else if (cname == "flush-badstag") {
		peer_error(cl, "Flush of the MR of an invalid STag",
			   IBV_WC_REM_ACCESS_ERR, 0x0100, [&] {
			xiwdv_wr_flush(cl.c.qpx, cl.rkey ^ 0x80, 0, 0,
				       XIWDV_FLUSH_GLOBAL, XIWDV_FLUSH_MR);
		});
	} else if (cname == "verify-oob") {
		peer_error(cl, "Verify past the MR's end",
			   IBV_WC_REM_ACCESS_ERR, 0x0101, [&] {
			xiwdv_wr_verify(cl.c.qpx, cl.rkey,
					cl.raddr + cl.rlen - 32, 64, nullptr,
					0);
		});
	}
	cl.close();
	std::printf("%d passed, %d failed\n", passes, failures);
	return failures ? 1 : 0;
}

[[noreturn]] void usage(const char *me)
{
	std::fprintf(stderr,
		     "usage: %s server ADDR PORT --conns N [--timeout S]\n"
		     "       %s client ADDR PORT --case NAME [--src ADDR]\n"
		     "cases:", me, me);
	for (auto &c : kCases)
		std::fprintf(stderr, " %s", c.first.c_str());
	std::fprintf(stderr, "\n");
	std::exit(2);
}

} // namespace

int main(int argc, char **argv)
{
	setvbuf(stdout, nullptr, _IOLBF, 0);
	if (argc < 4)
		usage(argv[0]);
	std::string role = argv[1], cname;
	const char *src = nullptr;
	int conns = 0, timeout_s = 60;

	for (int i = 4; i < argc; i++) {
		std::string a = argv[i];

		if (i + 1 >= argc)
			usage(argv[0]);
		if (a == "--conns")
			conns = std::atoi(argv[++i]);
		else if (a == "--timeout")
			timeout_s = std::atoi(argv[++i]);
		else if (a == "--case")
			cname = argv[++i];
		else if (a == "--src")
			src = argv[++i];
		else
			usage(argv[0]);
	}
	if (role == "server" && conns > 0)
		return server(argv[2], argv[3], conns, timeout_s);
	if (role == "client" && kCases.count(cname))
		return client(argv[2], argv[3], src, cname);
	usage(argv[0]);
}
