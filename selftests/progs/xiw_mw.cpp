// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// xiw_mw: memory windows through rdma-core, between two QPs of one process
// on one device (verbs_mw.sh).
//
// The "owner" has the memory: one PD for the whole run (allocated on the
// listener's device context, so every accepted QP can use it), MRs
// registered with IBV_ACCESS_MW_BIND over page-aligned buffers filled with
// a known byte, and the windows. The "peer" is the other end of each
// connection (a PD, CQ, QP and 8 KiB buffer of its own), which reaches
// the owner's memory only through the windows' rkeys. Every check looks
// at the data (what a Read returns, what an atomic returned, every byte of
// the owner's buffer including a guard page either side: nothing a test
// did not mean to change may change) and at the exact status, opcode,
// wc_flags, invalidated_rkey and vendor_err of each completion, and the
// errno of each verb.
//
// A refused access ends its connection (Terminate, both QPs in ERROR), so
// every refusal runs on a connection of its own. An RDMA Write completes
// at the requester when it is sent (RFC 5040: no response), so a Write is
// always followed by a Read of the same window on the same stream: the
// Read completes REM_ACCESS_ERR with the Write's Terminate in vendor_err
// (0x11cc: DDP tagged buffer error, code cc: 00 invalid STag, 01 base or
// bounds, 02 STag not associated with the stream; 0x0102: RDMAP access
// rights violation) or flushed, and for an accepted Write it returns the
// data written.
//
// Cases (one function each below): the device's capabilities; type 2
// windows bound with IBV_WR_BIND_MW (ibv_post_send and ibv_wr_bind_mw):
// Write, Read, FetchAdd, CmpSwap inside the window, and a Write, Read or
// atomic just outside it but inside the MR refused with the MR's bytes
// unchanged (a window grants exactly its own range); the window's rights,
// not the MR's; a type 2 window through another QP than the one it was
// bound through; local invalidation (IBV_WR_LOCAL_INV) and remote
// invalidation (Send with Invalidate: IBV_WC_WITH_INV, invalidated_rkey);
// rebinding under a new key in the same place (the old one refused: only
// the key tells them apart), the same key, a bound type 2 window; type 1 windows with ibv_bind_mw() (rkey advanced, rebind,
// unbind with length 0, valid on every QP of the PD, not invalidatable by
// a peer); deregistering an MR under a bound window (EBUSY, the MR still
// works) and deallocating a bound window; a window on a zero-based MR;
// bind errors (IBV_WC_MW_BIND_ERR, the QP in ERROR) and a bind the post
// refuses (EINVAL); a window's rkey as a local lkey (LOC_PROT_ERR);
// rounds of Writes streamed through a window while it is invalidated and
// rebound, or (type 1) rebound elsewhere or in place; and a process that
// exits with windows bound.
//
// rdma-core's own memory window tests (tests/test_mr.py, class MWTest;
// Debian's python3-pyverbs ships them under /usr/share/doc/rdma-core/tests)
// connect RC QPs by hand over IB/RoCE GIDs (modify_qp to RTR), which an
// iWARP device cannot do: it connects through rdma_cm only. What they
// check is mirrored here: the
// allocation and deallocation of type 1 and type 2 windows, a window type
// the verbs do not know refused (test_reg_mw_wrong_type), Writes through a
// bound type 1 and type 2 window (test_mw_type1/2, with the rights pyverbs
// passes: IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE), refused after
// a type 1 rebind of length 0, a local invalidation, a remote invalidation
// and the window's deallocation (test_invalidate_mw_type1,
// test_mw_type2_invalidate_local/_remote/_dealloc).
//
//   xiw_mw ADDR PORT [RACE_ROUNDS]
//
// RACE_ROUNDS (default 32) rounds of the type 2 race, two thirds of that
// of the type 1 race.
//
// One line per check ("ok ..." or "FAIL ..."), then a summary; exit 0 if
// all passed, 1 if one failed, 2 on a setup error.
#include "checks.h"
#include "verbs_side.h"

#include <infiniband/xiwdv.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace {

using cm_pair::die;
using checks::check;
using checks::hex;

constexpr size_t kPage = 4096;
constexpr uint8_t kFill = 0x5c;		// the owner's bytes
constexpr unsigned kRW = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
constexpr unsigned kRWA = kRW | IBV_ACCESS_REMOTE_ATOMIC;
constexpr int kMrMw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND;
constexpr int kMrAll = kMrMw | IBV_ACCESS_REMOTE_READ |
		       IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;

// vendor_err of a peer's Terminate: layer << 12 | type << 8 | code
constexpr uint32_t kDdpInvStag = 0x1100, kDdpBounds = 0x1101,
		   kDdpNotAssoc = 0x1102;
constexpr uint32_t kRdmapInvStag = 0x0100, kRdmapBounds = 0x0101,
		   kRdmapAccess = 0x0102;

ibv_pd *g_pd;			// the owner's
ibv_mr *g_olmr;			// owner-local buffer (receives, SGEs)
std::vector<uint8_t> g_olbuf(8192);
uint8_t g_seed = 1;
// connections made, and the time spent connecting and tearing down
int g_conns;
std::chrono::steady_clock::duration g_connect_t, g_close_t;

std::string hx(uint64_t v)
{
	char b[32];

	std::snprintf(b, sizeof(b), "%#" PRIx64, v);
	return b;
}

std::string st(const ibv_wc &wc)
{
	char b[160];

	std::snprintf(b, sizeof(b),
		      "wr_id %" PRIu64 " status %s vendor_err %#x opcode %d",
		      wc.wr_id, ibv_wc_status_str(wc.status), wc.vendor_err,
		      wc.opcode);
	return b;
}

void pattern(uint8_t *p, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = uint8_t(seed + i * 13 + (i >> 8));
}

// An owner buffer: @pages pages at p(), a guard page of kFill either
// side, and what every byte should hold.
struct Mem {
	uint8_t *raw = nullptr;
	size_t pages = 0;
	std::vector<uint8_t> want;
	// the tagged offset by which the peer names p()[0]: its virtual
	// address, 0 through a zero-based MR
	uint64_t tag0 = 0;

	explicit Mem(size_t n) : pages(n)
	{
		raw = (uint8_t *)std::aligned_alloc(kPage, (n + 2) * kPage);
		if (!raw)
			die("aligned_alloc");
		std::memset(raw, kFill, (n + 2) * kPage);
		want.assign((n + 2) * kPage, kFill);
		tag0 = va(0);
	}
	~Mem() { std::free(raw); }
	Mem(const Mem &) = delete;

	uint8_t *p() const { return raw + kPage; }
	uint64_t va(size_t off) const { return (uintptr_t)p() + off; }
	uint64_t at(size_t off) const { return tag0 + off; }
	void expect(size_t off, const void *d, size_t n)
	{
		std::memcpy(want.data() + kPage + off, d, n);
	}
	// the memory holds want; else *diff says where not
	bool same(std::string *diff) const
	{
		for (size_t i = 0; i < want.size(); i++) {
			if (raw[i] != want[i]) {
				char b[96];
				std::snprintf(b, sizeof(b),
					      "(byte p%+zd is %#04x, want %#04x)",
					      (ssize_t)i - (ssize_t)kPage,
					      raw[i], want[i]);
				*diff = b;
				return false;
			}
		}
		diff->clear();
		return true;
	}
	// check: the memory holds want; @what is followed by where not
	void check_same(const std::string &what) const
	{
		std::string diff;
		bool ok = same(&diff);

		check(ok, what + diff);
	}
};

ibv_mr *reg(Mem &m, int access, size_t off = 0, size_t len = 0)
{
	ibv_mr *mr = ibv_reg_mr(g_pd, m.p() + off,
				len ? len : m.pages * kPage - off, access);

	if (!mr)
		die("ibv_reg_mr");
	return mr;
}

// ibv_dereg_mr() of an MR under a bound window: EBUSY. If it succeeds
// anyway, *@mr is gone and set to nullptr (nothing may use it again).
void dereg_busy(ibv_mr **mr, const std::string &what)
{
	int rv = ibv_dereg_mr(*mr);

	check(rv == EBUSY, what + ": ibv_dereg_mr of the MR under the bound "
	      "window fails with EBUSY: " + std::to_string(rv));
	if (!rv)
		*mr = nullptr;
}

ibv_mw *alloc(ibv_mw_type t, ibv_pd *pd = g_pd)
{
	ibv_mw *mw = ibv_alloc_mw(pd, t);

	if (!mw)
		die("ibv_alloc_mw");
	return mw;
}

bool qp_in_error(ibv_qp *qp, int ms = 5000)
{
	for (int i = 0; i < ms / 10; i++) {
		ibv_qp_attr qa{};
		ibv_qp_init_attr qi{};

		if (ibv_query_qp(qp, &qa, IBV_QP_STATE, &qi))
			die("ibv_query_qp");
		if (qa.qp_state == IBV_QPS_ERR)
			return true;
		std::this_thread::sleep_for(std::chrono::milliseconds(10));
	}
	return false;
}

// One connection: the owner's QP on g_pd (its own CQ), the peer's Side.
struct Conn {
	cm_pair::Side cli;		// the peer
	rdma_cm_id *sid = nullptr;	// the owner's end
	ibv_cq *scq = nullptr;
	ibv_qp_ex *sqx = nullptr;
	bool open_ = false;

	explicit Conn(cm_pair::Pair &pair)
	{
		rdma_conn_param p{};
		cm_pair::SideOpts co;

		p.initiator_depth = 4;
		p.responder_resources = 4;
		co.depth = 64;
		co.recv_depth = 8;
		co.mem_bytes = 32768;
		co.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE |
				    IBV_QP_EX_WITH_RDMA_READ |
				    IBV_QP_EX_WITH_SEND |
				    IBV_QP_EX_WITH_SEND_WITH_INV |
				    IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |
				    IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP;
		auto t0 = std::chrono::steady_clock::now();
		cli.id = pair.connect(
			[&](rdma_cm_id *c) { cli.setup(c, co); },
			[&](rdma_cm_id *c) { setup_owner(c); }, p, p, &sid);
		open_ = true;
		g_conns++;
		g_connect_t += std::chrono::steady_clock::now() - t0;
	}
	~Conn() { close(); }

	void setup_owner(rdma_cm_id *id)
	{
		ibv_qp_init_attr_ex a{};

		scq = ibv_create_cq(id->verbs, 128, nullptr, nullptr, 0);
		if (!scq)
			die("owner cq");
		a.qp_type = IBV_QPT_RC;
		a.send_cq = scq;
		a.recv_cq = scq;
		a.cap.max_send_wr = 32;
		a.cap.max_recv_wr = 8;
		a.cap.max_send_sge = 1;
		a.cap.max_recv_sge = 1;
		a.cap.max_inline_data = 32;
		a.pd = g_pd;
		a.comp_mask = IBV_QP_INIT_ATTR_PD |
			      IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		a.send_ops_flags = IBV_QP_EX_WITH_BIND_MW |
				   IBV_QP_EX_WITH_LOCAL_INV |
				   IBV_QP_EX_WITH_SEND |
				   IBV_QP_EX_WITH_RDMA_WRITE;
		if (rdma_create_qp_ex(id, &a))
			die("owner rdma_create_qp_ex (memory window send ops)");
		sqx = ibv_qp_to_qp_ex(id->qp);
		if (!sqx)
			die("ibv_qp_to_qp_ex");
	}

	void close()
	{
		if (!open_)
			return;
		auto t0 = std::chrono::steady_clock::now();
		open_ = false;
		rdma_disconnect(cli.id);
		cli.teardown();
		rdma_destroy_qp(sid);
		ibv_destroy_cq(scq);
		rdma_destroy_id(sid);
		g_close_t += std::chrono::steady_clock::now() - t0;
	}

	ibv_qp *oqp() const { return sid->qp; }

	// Up to @n owner completions within @ms.
	std::vector<ibv_wc> owner_poll(size_t n, int ms = 20000)
	{
		std::vector<ibv_wc> out;
		auto end = std::chrono::steady_clock::now() +
			   std::chrono::milliseconds(ms);

		while (out.size() < n && std::chrono::steady_clock::now() < end) {
			ibv_wc wc;
			int k = ibv_poll_cq(scq, 1, &wc);

			if (k < 0)
				die("ibv_poll_cq");
			if (k)
				out.push_back(wc);
			else
				std::this_thread::sleep_for(
					std::chrono::microseconds(100));
		}
		return out;
	}

	ibv_wc owner_one(const std::string &what)
	{
		auto wc = owner_poll(1);

		if (wc.empty()) {
			std::fprintf(stderr, "%s: no owner completion\n",
				     what.c_str());
			std::exit(2);
		}
		return wc[0];
	}

	ibv_wc peer_one(const std::string &what)
	{
		auto wc = cli.poll(1, 20000);

		if (wc.empty()) {
			std::fprintf(stderr, "%s: no peer completion\n",
				     what.c_str());
			std::exit(2);
		}
		return wc[0];
	}

	// IBV_WR_BIND_MW through ibv_post_send: ibv_post_send's result.
	int post_bind(ibv_mw *mw, uint32_t rkey, ibv_mr *mr, uint64_t addr,
		      uint64_t len, unsigned access, uint64_t wr_id = 77)
	{
		ibv_send_wr wr{}, *bad = nullptr;

		wr.wr_id = wr_id;
		wr.opcode = IBV_WR_BIND_MW;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.bind_mw.mw = mw;
		wr.bind_mw.rkey = rkey;
		wr.bind_mw.bind_info.mr = mr;
		wr.bind_mw.bind_info.addr = addr;
		wr.bind_mw.bind_info.length = len;
		wr.bind_mw.bind_info.mw_access_flags = access;
		int rv = ibv_post_send(oqp(), &wr, &bad);
		if (rv && bad != &wr)
			check(false, "ibv_post_send failed without bad_wr at the WR");
		return rv;
	}

	int post_local_inv(uint32_t rkey, uint64_t wr_id = 78)
	{
		ibv_send_wr wr{}, *bad = nullptr;

		wr.wr_id = wr_id;
		wr.opcode = IBV_WR_LOCAL_INV;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.invalidate_rkey = rkey;
		return ibv_post_send(oqp(), &wr, &bad);
	}

	void owner_recv(uint64_t wr_id)
	{
		ibv_sge s{ (uintptr_t)g_olbuf.data(), 256, g_olmr->lkey };
		ibv_recv_wr wr{}, *bad;

		wr.wr_id = wr_id;
		wr.sg_list = &s;
		wr.num_sge = 1;
		if (ibv_post_recv(oqp(), &wr, &bad))
			die("owner ibv_post_recv");
	}
};

// A successful bind: the post, then IBV_WC_SUCCESS / IBV_WC_BIND_MW.
bool bind_ok(Conn &c, ibv_mw *mw, uint32_t rkey, ibv_mr *mr, uint64_t addr,
	     uint64_t len, unsigned access, const std::string &what)
{
	int rv = c.post_bind(mw, rkey, mr, addr, len, access);

	if (rv) {
		check(false, what + ": ibv_post_send IBV_WR_BIND_MW: " +
		      std::strerror(rv));
		return false;
	}
	ibv_wc wc = c.owner_one(what);
	bool ok = wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_BIND_MW &&
		  wc.wr_id == 77;
	check(ok, what + ": bind completes SUCCESS, IBV_WC_BIND_MW: " + st(wc));
	return ok;
}

// A completion IBV_WC_MW_BIND_ERR of the owner's WR @wr_id, the owner's
// QP in ERROR.
void owner_bind_err(Conn &c, uint64_t wr_id, const std::string &what)
{
	ibv_wc wc = c.owner_one(what);

	check(wc.status == IBV_WC_MW_BIND_ERR && wc.wr_id == wr_id,
	      what + ": completes IBV_WC_MW_BIND_ERR: " + st(wc));
	check(qp_in_error(c.oqp()), what + ": the owner's QP in ERROR");
}

void bind_err(Conn &c, ibv_mw *mw, uint32_t rkey, ibv_mr *mr, uint64_t addr,
	      uint64_t len, unsigned access, const std::string &what)
{
	int rv = c.post_bind(mw, rkey, mr, addr, len, access);

	if (rv) {
		check(false, what + ": ibv_post_send IBV_WR_BIND_MW: " +
		      std::strerror(rv));
		return;
	}
	owner_bind_err(c, 77, what);
}

bool local_inv_ok(Conn &c, uint32_t rkey, const std::string &what)
{
	int rv = c.post_local_inv(rkey);

	if (rv) {
		check(false, what + ": ibv_post_send IBV_WR_LOCAL_INV: " +
		      std::strerror(rv));
		return false;
	}
	ibv_wc wc = c.owner_one(what);
	bool ok = wc.status == IBV_WC_SUCCESS &&
		  wc.opcode == IBV_WC_LOCAL_INV && wc.wr_id == 78;
	check(ok, what + ": completes SUCCESS, IBV_WC_LOCAL_INV: " + st(wc));
	return ok;
}

// After a refusal: both QPs in ERROR, the owner's memory as it was.
void refused_after(Conn &c, const Mem &m, const std::string &what)
{
	check(qp_in_error(c.cli.id->qp), what + ": the peer's QP in ERROR");
	check(qp_in_error(c.oqp()), what + ": the owner's QP in ERROR");
	m.check_same(what + ": the owner's memory unchanged ");
}

// What a probe expects: the access accepted, or refused with the
// peer's Terminate @vendor in vendor_err.
struct Expect {
	bool ok;
	uint32_t vendor;
};
constexpr Expect kAccepted{ true, 0 };
constexpr Expect refused(uint32_t vendor) { return { false, vendor }; }

// A refused Read or atomic: its completion @wc is REM_ACCESS_ERR with
// @e's Terminate, then refused_after().
void access_refused(Conn &c, const Mem &m, const ibv_wc &wc, Expect e,
		    const std::string &what)
{
	check(wc.status == IBV_WC_REM_ACCESS_ERR && wc.vendor_err == e.vendor,
	      what + ": " + st(wc) + " (want remote access error " +
	      hx(e.vendor) + ")");
	refused_after(c, m, what);
}

// The peer's signaled Write of @len bytes at @src to @raddr through
// @rkey (wr_id 1), then its Read of @rlen bytes at @raddr into @sink
// (wr_id 2) on the same stream; their completions, 2 unless one is late.
std::vector<ibv_wc> write_then_read(Conn &c, uint8_t *src, uint32_t len,
				    uint8_t *sink, uint32_t rlen,
				    uint64_t raddr, uint32_t rkey)
{
	ibv_sge s1{ (uintptr_t)src, len, c.cli.mr->lkey };
	ibv_sge s2{ (uintptr_t)sink, rlen, c.cli.mr->lkey };
	ibv_send_wr w{}, r{}, *bad;

	w.wr_id = 1;
	w.opcode = IBV_WR_RDMA_WRITE;
	w.sg_list = &s1;
	w.num_sge = 1;
	w.send_flags = IBV_SEND_SIGNALED;
	w.wr.rdma.remote_addr = raddr;
	w.wr.rdma.rkey = rkey;
	w.next = &r;
	r = w;
	r.wr_id = 2;
	r.opcode = IBV_WR_RDMA_READ;
	r.sg_list = &s2;
	r.next = nullptr;
	if (ibv_post_send(c.cli.id->qp, &w, &bad))
		die("post write+read");
	return c.cli.poll(2, 20000);
}

// The peer Writes @len bytes at offset @off of @m through @rkey and
// reads them back.
// Accepted: both succeed, the Read returns the Write's bytes, the
// owner's memory holds exactly them. Refused: the Read completes
// REM_ACCESS_ERR with @e's Terminate (the Write's) or flushed, then
// refused_after().
void write_probe(Conn &c, Mem &m, uint32_t rkey, size_t off, uint32_t len,
		 Expect e, const std::string &what)
{
	uint8_t *src = c.cli.mem.data(), *sink = c.cli.mem.data() + 4096;

	pattern(src, len, g_seed += 17);
	std::memset(sink, 0, len);
	auto wc = write_then_read(c, src, len, sink, len, m.at(off), rkey);
	if (wc.size() != 2) {
		check(false, what + ": " + std::to_string(wc.size()) +
		      " completions of 2");
		return;
	}
	if (e.ok) {
		check(wc[0].wr_id == 1 && wc[0].status == IBV_WC_SUCCESS &&
		      wc[0].opcode == IBV_WC_RDMA_WRITE && wc[1].wr_id == 2 &&
		      wc[1].status == IBV_WC_SUCCESS &&
		      wc[1].opcode == IBV_WC_RDMA_READ && wc[1].byte_len == len,
		      what + ": Write and Read back succeed: " + st(wc[0]) +
		      "; " + st(wc[1]));
		check(!std::memcmp(src, sink, len),
		      what + ": the Read returns the bytes written: " +
		      hex(sink, 8) + " (wrote " + hex(src, 8) + ")");
		m.expect(off, src, len);
		m.check_same(what +
			     ": the owner's memory holds exactly the Write ");
		return;
	}
	char b[80];
	std::snprintf(b, sizeof(b), " (want remote access error %#x or flushed)",
		      e.vendor);
	check(wc[1].wr_id == 2 &&
	      ((wc[1].status == IBV_WC_REM_ACCESS_ERR &&
		wc[1].vendor_err == e.vendor) ||
	       wc[1].status == IBV_WC_WR_FLUSH_ERR),
	      what + ": the Read after the Write: " + st(wc[1]) + b +
	      "; the Write: " + st(wc[0]));
	refused_after(c, m, what);
}

// The peer Reads @len bytes at offset @off of @m through @rkey:
// accepted: SUCCESS and those bytes; refused: access_refused().
void read_probe(Conn &c, Mem &m, uint32_t rkey, size_t off, uint32_t len,
		Expect e, const std::string &what)
{
	uint8_t *sink = c.cli.mem.data() + 4096;

	std::memset(sink, 0, len);
	if (c.cli.post(IBV_WR_RDMA_READ, 3, sink, len, true, m.at(off), rkey))
		die("post read");
	ibv_wc wc = c.peer_one(what);
	if (!e.ok)
		return access_refused(c, m, wc, e, what);
	check(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RDMA_READ &&
	      wc.byte_len == len && !std::memcmp(sink, m.p() + off, len),
	      what + ": " + st(wc) + ", data " + hex(sink, 8) +
	      " (memory " + hex(m.p() + off, 8) + ")");
}

// FetchAdd of @add at offset @off of @m through @rkey: accepted: it
// returns the old word and the memory holds the sum; refused:
// access_refused().
void fadd_probe(Conn &c, Mem &m, uint32_t rkey, size_t off, uint64_t add,
		Expect e, const std::string &what)
{
	uint8_t *res = c.cli.mem.data() + 4096;
	ibv_sge s{ (uintptr_t)res, 8, c.cli.mr->lkey };
	ibv_send_wr wr{}, *bad;
	uint64_t old, got;

	std::memcpy(&old, m.p() + off, 8);
	std::memset(res, 0, 8);
	wr.wr_id = 4;
	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.atomic.remote_addr = m.at(off);
	wr.wr.atomic.rkey = rkey;
	wr.wr.atomic.compare_add = add;
	if (ibv_post_send(c.cli.id->qp, &wr, &bad))
		die("post fetchadd");
	ibv_wc wc = c.peer_one(what);
	if (!e.ok)
		return access_refused(c, m, wc, e, what);
	uint64_t now = old + add;

	std::memcpy(&got, res, 8);
	check(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_FETCH_ADD &&
	      got == old,
	      what + ": " + st(wc) + ", returned " + hx(got) + " (was " +
	      hx(old) + ")");
	m.expect(off, &now, 8);
	m.check_same(what + ": the memory holds the sum ");
}

// The peer sends 8 bytes with Send with Invalidate of @rkey (through
// ibv_post_send, or ibv_wr_send_inv with @wr_api) to a receive the owner
// posts first (wr_id 9). The owner's receive completion; the peer's in
// *@pwc (SUCCESS expected only when the invalidation is accepted).
ibv_wc send_inv(Conn &c, uint32_t rkey, bool wr_api, const std::string &what,
		ibv_wc *pwc)
{
	uint8_t *src = c.cli.mem.data();

	c.owner_recv(9);
	std::memcpy(src, "inv-sent", 8);
	if (wr_api) {
		ibv_wr_start(c.cli.qpx);
		c.cli.qpx->wr_id = 5;
		c.cli.qpx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_send_inv(c.cli.qpx, rkey);
		ibv_wr_set_sge(c.cli.qpx, c.cli.mr->lkey, (uintptr_t)src, 8);
		if (ibv_wr_complete(c.cli.qpx))
			die("ibv_wr_complete send_inv");
	} else {
		ibv_sge s{ (uintptr_t)src, 8, c.cli.mr->lkey };
		ibv_send_wr wr{}, *bad;

		wr.wr_id = 5;
		wr.opcode = IBV_WR_SEND_WITH_INV;
		wr.sg_list = &s;
		wr.num_sge = 1;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.invalidate_rkey = rkey;
		if (ibv_post_send(c.cli.id->qp, &wr, &bad))
			die("post send_inv");
	}
	ibv_wc wc = c.owner_one(what);
	auto p = c.cli.poll(1, 10000);
	if (p.empty()) {	// reported by the caller's check
		*pwc = ibv_wc{};
		pwc->wr_id = UINT64_MAX;
		pwc->status = IBV_WC_GENERAL_ERR;
	} else {
		*pwc = p[0];
	}
	return wc;
}

// A Send with Invalidate of @rkey the owner refuses (a window the
// peer may not invalidate): the receive completes REM_INV_REQ_ERR and
// the connection ends, both QPs in ERROR.
void send_inv_refused(Conn &c, uint32_t rkey, const std::string &what)
{
	ibv_wc pwc;
	ibv_wc wc = send_inv(c, rkey, false, what, &pwc);

	check(wc.status == IBV_WC_REM_INV_REQ_ERR && wc.wr_id == 9,
	      what + ": the receive completes REM_INV_REQ_ERR: " + st(wc) +
	      "; the Send: " + st(pwc));
	check(qp_in_error(c.cli.id->qp) && qp_in_error(c.oqp()),
	      what + ": both QPs in ERROR");
}

// One case of a type 2 window: the window (of @pd), its first key k
// (ibv_inc_rkey() of the allocation's), and a connection of its own.
// The connection ends before the window is deallocated.
struct Win2 {
	ibv_mw *mw;
	uint32_t k;
	Conn c;

	explicit Win2(cm_pair::Pair &pair, ibv_pd *pd = g_pd)
		: mw(alloc(IBV_MW_TYPE_2, pd)), k(ibv_inc_rkey(mw->rkey)),
		  c(pair)
	{
	}
	~Win2()
	{
		if (mw)
			dealloc();
	}
	Win2(const Win2 &) = delete;

	// bind_ok() under k
	bool bind(ibv_mr *mr, uint64_t addr, uint64_t len, unsigned access,
		  const std::string &what)
	{
		return bind_ok(c, mw, k, mr, addr, len, access, what);
	}
	// ends the connection; ibv_dealloc_mw's result
	int dealloc()
	{
		c.close();
		int rv = ibv_dealloc_mw(mw);
		mw = nullptr;
		return rv;
	}
};

// ---- the cases -----------------------------------------------------------

// The device offers windows; allocation, types, deallocation. False if
// it offers none: nothing else can run.
bool device_caps(ibv_context *ctx)
{
	ibv_device_attr_ex ax{};
	const uint64_t caps = IBV_DEVICE_MEM_WINDOW | IBV_DEVICE_MEM_WINDOW_TYPE_2B;

	if (ibv_query_device_ex(ctx, nullptr, &ax))
		die("ibv_query_device_ex");
	check(ax.orig_attr.max_mw > 0,
	      "ibv_query_device: max_mw " + std::to_string(ax.orig_attr.max_mw) +
	      " > 0");
	check((ax.orig_attr.device_cap_flags & caps) == caps,
	      "ibv_query_device: device_cap_flags " +
	      hx(ax.orig_attr.device_cap_flags) +
	      " has IBV_DEVICE_MEM_WINDOW | IBV_DEVICE_MEM_WINDOW_TYPE_2B");

	errno = 0;
	ibv_mw *w1 = ibv_alloc_mw(g_pd, IBV_MW_TYPE_1);
	int e1 = errno;
	ibv_mw *w2 = ibv_alloc_mw(g_pd, IBV_MW_TYPE_2);
	int e2 = errno;
	check(w1 && w1->type == IBV_MW_TYPE_1 && w1->pd == g_pd && w1->rkey,
	      std::string("ibv_alloc_mw type 1: ") +
	      (w1 ? "rkey " + hx(w1->rkey) : std::strerror(e1)));
	check(w2 && w2->type == IBV_MW_TYPE_2 && w2->pd == g_pd && w2->rkey,
	      std::string("ibv_alloc_mw type 2: ") +
	      (w2 ? "rkey " + hx(w2->rkey) : std::strerror(e2)));
	if (!w1 || !w2) {
		check(false, "the kernel offers no memory windows "
		      "(XIW_FEATURE_MW): nothing else can run");
		return false;
	}
	// STags of one space: distinct indices (bits 8..31)
	check((w1->rkey >> 8) != (w2->rkey >> 8),
	      "two windows have STags of different indices: " + hx(w1->rkey) +
	      ", " + hx(w2->rkey));
	errno = 0;
	ibv_mw *w3 = ibv_alloc_mw(g_pd, (ibv_mw_type)3);
	int e3 = errno;
	check(!w3 && e3 == EINVAL,
	      "ibv_alloc_mw of type 3 fails with EINVAL: " +
	      std::string(w3 ? "allocated" : std::strerror(e3)));
	if (w3)
		ibv_dealloc_mw(w3);
	check(ibv_dealloc_mw(w1) == 0, "ibv_dealloc_mw of an unbound type 1 window");
	check(ibv_dealloc_mw(w2) == 0, "ibv_dealloc_mw of an unbound type 2 window");
	return true;
}

// Type 2: bind, then every operation inside the window; the window is
// [p + 4096, p + 8192) of a 4-page MR whose own rights are only local.
void type2_inside(cm_pair::Pair &pair)
{
	const std::string t = "type 2 inside: ";
	Mem m(4);
	ibv_mr *mr = reg(m, kMrMw);
	{
		Win2 w(pair);
		Conn &c = w.c;

		if (w.bind(mr, m.va(4096), 4096, kRWA, t + "bind")) {
			write_probe(c, m, w.k, 4096 + 100, 512, kAccepted,
				    t + "Write of 512 bytes");
			write_probe(c, m, w.k, 4096, 4096, kAccepted,
				    t + "Write of the whole window");
			write_probe(c, m, w.k, 8192 - 64, 64, kAccepted,
				    t + "Write ending at the window's end");
			read_probe(c, m, w.k, 4096 + 64, 1024, kAccepted,
				   t + "Read of 1 KiB");
			fadd_probe(c, m, w.k, 8192 - 8, 0x10001, kAccepted,
				   t + "FetchAdd on the window's last word");
			dereg_busy(&mr, t + "refused dereg");
			write_probe(c, m, w.k, 4096 + 8, 16, kAccepted,
				    t + "the window works after the refused dereg");
			check(ibv_dealloc_mw(w.mw) == 0,
			      t + "ibv_dealloc_mw of the bound window");
			w.mw = nullptr;
			write_probe(c, m, w.k, 4096 + 8, 16, refused(kDdpInvStag),
				    t + "Write after dealloc_mw");
		}
	}
	check(mr && ibv_dereg_mr(mr) == 0,
	      t + "ibv_dereg_mr after the window was deallocated");
}

// Type 2: accesses just outside the window, inside the MR under it; one
// connection each (a refusal ends it). @what, @off, @len, op.
void type2_outside(cm_pair::Pair &pair)
{
	const std::string t = "type 2 outside: ";
	Mem m(4);
	ibv_mr *mr = reg(m, kMrMw);
	struct Case {
		const char *what;
		int op;		// 0 Write, 1 Read, 2 FetchAdd
		size_t off;
		uint32_t len;
		uint32_t vendor;
	} cases[] = {
		{ "Write crossing the window's end by one byte", 0, 8192 - 63, 64,
		  kDdpBounds },
		{ "Write right after the window", 0, 8192, 64, kDdpBounds },
		{ "Write ending right before the window", 0, 4096 - 64, 64,
		  kDdpBounds },
		{ "Write of one byte before the window", 0, 4095, 1, kDdpBounds },
		{ "Read crossing the window's end", 1, 8192 - 63, 64,
		  kRdmapBounds },
		{ "FetchAdd right after the window", 2, 8192, 8, kRdmapBounds },
	};

	for (auto &cs : cases) {
		Win2 w(pair);
		std::string what = t + cs.what;

		if (w.bind(mr, m.va(4096), 4096, kRWA, what + ": bind")) {
			if (cs.op == 0)
				write_probe(w.c, m, w.k, cs.off, cs.len,
					    refused(cs.vendor), what);
			else if (cs.op == 1)
				read_probe(w.c, m, w.k, cs.off, cs.len,
					   refused(cs.vendor), what);
			else
				fadd_probe(w.c, m, w.k, cs.off, 1,
					   refused(cs.vendor), what);
		}
		check(w.dealloc() == 0, what + ": dealloc_mw");
	}
	check(ibv_dereg_mr(mr) == 0, t + "dereg_mr");
}

// The window's rights, not the MR's: the MR has every remote right.
void rights(cm_pair::Pair &pair)
{
	const std::string t = "rights: ";
	Mem m(4);
	ibv_mr *mr = reg(m, kMrAll);

	{	// REMOTE_READ only: Read works, Write refused
		Win2 w(pair);

		if (w.bind(mr, m.va(4096), 4096, IBV_ACCESS_REMOTE_READ,
			   t + "read-only window: bind")) {
			read_probe(w.c, m, w.k, 4096, 256, kAccepted,
				   t + "read-only window: Read");
			// the MR's own rkey still allows a Write
			write_probe(w.c, m, mr->rkey, 4096 + 512, 64, kAccepted,
				    t + "the MR's own rkey: Write");
			write_probe(w.c, m, w.k, 4096, 64, refused(kRdmapAccess),
				    t + "read-only window: Write");
		}
	}
	{	// READ | WRITE without ATOMIC: an atomic refused
		Win2 w(pair);

		if (w.bind(mr, m.va(4096), 4096, kRW,
			   t + "window without REMOTE_ATOMIC: bind")) {
			write_probe(w.c, m, w.k, 4096 + 64, 64, kAccepted,
				    t + "window without REMOTE_ATOMIC: Write");
			fadd_probe(w.c, m, w.k, 4096, 1, refused(kRdmapAccess),
				   t + "window without REMOTE_ATOMIC: FetchAdd");
		}
	}
	{	// WRITE only (and LOCAL_WRITE, as pyverbs passes it): Read refused
		Win2 w(pair);

		if (w.bind(mr, m.va(4096), 4096,
			   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE,
			   t + "write-only window (with LOCAL_WRITE): bind"))
			read_probe(w.c, m, w.k, 4096, 64, refused(kRdmapAccess),
				   t + "write-only window: Read");
	}
	check(ibv_dereg_mr(mr) == 0, t + "dereg_mr");
}

// A type 2 window is reached only through the QP it was bound through,
// and only that QP's peer may invalidate it.
void type2_other_qp(cm_pair::Pair &pair)
{
	const std::string t = "type 2 on another QP: ";
	Mem m(4);
	ibv_mr *mr = reg(m, kMrMw);
	Win2 a(pair);

	if (a.bind(mr, m.va(4096), 4096, kRW, t + "bind through QP A")) {
		{
			Conn b(pair);

			write_probe(b, m, a.k, 4096, 64, refused(kDdpNotAssoc),
				    t + "Write through QP B");
		}
		{
			Conn b(pair);

			send_inv_refused(b, a.k,
					 t + "Send with Invalidate through QP B");
		}
		write_probe(a.c, m, a.k, 4096 + 128, 64, kAccepted,
			    t + "the window still works through QP A");
	}
	a.dealloc();
	check(ibv_dereg_mr(mr) == 0, t + "dereg_mr");
}

// Remote invalidation of a type 2 window by the peer of the QP it was
// bound through: the receive says which STag it invalidated.
void remote_inv(cm_pair::Pair &pair)
{
	const std::string t = "remote invalidate: ";
	Mem m(4);
	ibv_mr *mr = reg(m, kMrMw);
	ibv_mw *mw = alloc(IBV_MW_TYPE_2);
	uint32_t k = ibv_inc_rkey(mw->rkey);

	for (int api = 0; api < 2; api++) {
		std::string v = t + (api ? "ibv_wr_send_inv: " : "IBV_WR_SEND_WITH_INV: ");
		Conn c(pair);
		ibv_wc pwc;

		if (!bind_ok(c, mw, k, mr, m.va(4096), 4096, kRW, v + "bind"))
			break;
		write_probe(c, m, k, 4096 + 256 * api, 64, kAccepted,
			    v + "Write before");
		ibv_wc wc = send_inv(c, k, api, v + "Send with Invalidate", &pwc);
		check(wc.status == IBV_WC_SUCCESS && wc.wr_id == 9 &&
		      wc.opcode == IBV_WC_RECV && wc.byte_len == 8 &&
		      wc.wc_flags == IBV_WC_WITH_INV && wc.invalidated_rkey == k &&
		      !std::memcmp(g_olbuf.data(), "inv-sent", 8),
		      v + "the receive: " + st(wc) + " byte_len " +
		      std::to_string(wc.byte_len) + " wc_flags " +
		      hx(wc.wc_flags) + " invalidated_rkey " +
		      hx(wc.invalidated_rkey) + " (want IBV_WC_WITH_INV, " +
		      hx(k) + ")");
		check(pwc.status == IBV_WC_SUCCESS && pwc.opcode == IBV_WC_SEND,
		      v + "the peer's Send: " + st(pwc));
		if (api)	// the invalidation released the MR
			check(ibv_dereg_mr(mr) == 0,
			      v + "ibv_dereg_mr of the MR after the remote invalidation");
		write_probe(c, m, k, 4096, 64, refused(kDdpInvStag),
			    v + "Write after");
		k = ibv_inc_rkey(k);
	}
	check(ibv_dealloc_mw(mw) == 0, t + "dealloc_mw");
}

// In one batch on the owner's QP: the WR @add_wr adds, unsignaled
// (wr_id @wr_id), and a signaled Send of the 6 bytes of @msg (wr_id
// @wr_id + 1) to the peer's receive @recv_id at @rbuf. Only the Send
// completes at the owner, and the peer's receive has @msg.
void owner_batch(Conn &c, uint64_t wr_id, const std::function<void()> &add_wr,
		 const char (&msg)[6], uint64_t recv_id, const uint8_t *rbuf,
		 const std::string &what)
{
	ibv_wr_start(c.sqx);
	c.sqx->wr_id = wr_id;
	c.sqx->wr_flags = 0;
	add_wr();
	c.sqx->wr_id = wr_id + 1;
	c.sqx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(c.sqx);
	ibv_wr_set_inline_data(c.sqx, (void *)msg, 6);
	int rv = ibv_wr_complete(c.sqx);
	check(rv == 0, what + ": ibv_wr_complete " + std::to_string(rv));
	ibv_wc wc = c.owner_one(what);
	check(wc.status == IBV_WC_SUCCESS && wc.wr_id == wr_id + 1 &&
	      wc.opcode == IBV_WC_SEND,
	      what + ": only the Send completes: " + st(wc));
	wc = c.peer_one(what);
	check(wc.status == IBV_WC_SUCCESS && wc.wr_id == recv_id &&
	      wc.byte_len == 6 && !std::strcmp((const char *)rbuf, msg),
	      what + ": the peer has the Send: " + st(wc));
}

// Local invalidation: ibv_post_send; then ibv_wr_bind_mw and
// ibv_wr_local_inv unsignaled, each in a batch with a Send that tells the
// peer (the send queue's order: the window is bound, then invalid, by the
// time the peer has the Send); then invalidations of an unbound window
// and of a stale key.
void local_inv(cm_pair::Pair &pair)
{
	const std::string t = "local invalidate: ";
	Mem m(4);
	ibv_mr *mr = reg(m, kMrMw), *mr2 = reg(m, kMrMw);
	ibv_mw *mw = alloc(IBV_MW_TYPE_2);
	uint32_t k = ibv_inc_rkey(mw->rkey);

	{
		Conn c(pair);

		if (bind_ok(c, mw, k, mr, m.va(4096), 4096, kRW, t + "bind")) {
			write_probe(c, m, k, 4096, 64, kAccepted,
				    t + "Write before");
			local_inv_ok(c, k, t + "IBV_WR_LOCAL_INV");
			check(ibv_dereg_mr(mr) == 0,
			      t + "ibv_dereg_mr of the MR after the invalidation");
			write_probe(c, m, k, 4096, 64, refused(kDdpInvStag),
				    t + "Write after");
		}
	}
	k = ibv_inc_rkey(k);
	{
		Conn c(pair);
		ibv_mw_bind_info bi{ mr2, m.va(8192), 4096, kRW };
		uint8_t *rbuf = c.cli.mem.data() + 6144;

		c.cli.post_recv(21, rbuf, 64);
		c.cli.post_recv(22, rbuf + 64, 64);
		owner_batch(c, 11, [&] { ibv_wr_bind_mw(c.sqx, mw, k, &bi); },
			    "bound", 21, rbuf,
			    t + "batch ibv_wr_bind_mw + Send");
		write_probe(c, m, k, 8192 + 64, 128, kAccepted,
			    t + "Write through the window the Send announced");

		owner_batch(c, 13, [&] { ibv_wr_local_inv(c.sqx, k); },
			    "gone!", 22, rbuf + 64,
			    t + "batch ibv_wr_local_inv + Send");
		write_probe(c, m, k, 8192 + 64, 128, refused(kDdpInvStag),
			    t + "Write after the Send announcing the invalidation");
	}
	{	// the window is unbound: invalidating it again fails
		Conn c(pair);

		if (!c.post_local_inv(k))
			owner_bind_err(c, 78, t + "IBV_WR_LOCAL_INV of an unbound window");
		else
			check(false, t + "post of the second invalidation");
	}
	{	// a stale key of a bound window
		Conn c(pair);
		uint32_t k2 = ibv_inc_rkey(k);

		if (bind_ok(c, mw, k2, mr2, m.va(8192), 4096, kRW,
			    t + "bind under a new key")) {
			if (!c.post_local_inv(k))
				owner_bind_err(c, 78, t + "IBV_WR_LOCAL_INV with the old key");
		}
	}
	check(ibv_dealloc_mw(mw) == 0, t + "dealloc_mw of the bound window");
	check(ibv_dereg_mr(mr2) == 0, t + "dereg_mr after dealloc_mw");
}

// Rebinding: the old key refused, the new one works; the same key as the
// current one, the allocation key, and a bound type 2 window refused.
void rebind(cm_pair::Pair &pair)
{
	const std::string t = "rebind: ";
	Mem m(4);
	ibv_mr *mr = reg(m, kMrMw);

	{
		Win2 w(pair);
		uint32_t k1 = w.k, k2 = ibv_inc_rkey(k1);

		if (w.bind(mr, m.va(4096), 4096, kRW, t + "bind k1") &&
		    local_inv_ok(w.c, k1, t + "invalidate k1") &&
		    bind_ok(w.c, w.mw, k2, mr, m.va(4096), 4096, kRW,
			    t + "bind k2 = ibv_inc_rkey(k1) in the same place")) {
			write_probe(w.c, m, k2, 4096, 256, kAccepted,
				    t + "Write through k2");
			write_probe(w.c, m, k1, 4096, 64, refused(kDdpInvStag),
				    t + "Write through the old k1");
		}
	}
	{
		Win2 w(pair);

		if (w.bind(mr, m.va(4096), 4096, kRW, t + "bind") &&
		    local_inv_ok(w.c, w.k, t + "invalidate"))
			bind_err(w.c, w.mw, w.k, mr, m.va(4096), 4096, kRW,
				 t + "bind again under the same key");
	}
	{
		Win2 w(pair);

		bind_err(w.c, w.mw, w.mw->rkey, mr, m.va(4096), 4096, kRW,
			 t + "first bind under the allocation's key");
	}
	{
		Win2 w(pair);

		if (w.bind(mr, m.va(4096), 4096, kRW, t + "bind"))
			bind_err(w.c, w.mw, ibv_inc_rkey(w.k), mr, m.va(8192), 4096,
				 kRW, t + "bind of a bound type 2 window");
	}
	m.check_same(t + "the owner's memory holds only the Writes ");
	check(ibv_dereg_mr(mr) == 0, t + "dereg_mr");
}

// ibv_bind_mw() of a type 1 window through @qp: its result, the
// completion, mw->rkey advanced.
bool bind1(Conn &c, ibv_mw *mw, ibv_mr *mr, uint64_t addr, uint64_t len,
	   unsigned access, const std::string &what)
{
	ibv_mw_bind b{};
	uint32_t old = mw->rkey;

	b.wr_id = 31;
	b.send_flags = IBV_SEND_SIGNALED;
	b.bind_info.mr = mr;
	b.bind_info.addr = addr;
	b.bind_info.length = len;
	b.bind_info.mw_access_flags = access;
	int rv = ibv_bind_mw(c.oqp(), mw, &b);
	if (rv) {
		check(false, what + ": ibv_bind_mw: " + std::strerror(rv));
		return false;
	}
	check(mw->rkey == ibv_inc_rkey(old),
	      what + ": mw->rkey " + hx(mw->rkey) + " is ibv_inc_rkey(" +
	      hx(old) + ")");
	ibv_wc wc = c.owner_one(what);
	bool ok = wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_BIND_MW &&
		  wc.wr_id == 31;
	check(ok, what + ": completes SUCCESS, IBV_WC_BIND_MW: " + st(wc));
	return ok;
}

// bind1() of the type 1 window @mw, bound at offset @from of @m, again
// over [@to, @to + 4096): a Write of 256 bytes at @at through the new
// key lands, one of 64 bytes at @from through the key before is refused.
void rebind1(Conn &c, Mem &m, ibv_mw *mw, ibv_mr *mr, size_t from, size_t to,
	     size_t at, const std::string &what)
{
	uint32_t old = mw->rkey;

	if (!bind1(c, mw, mr, m.va(to), 4096, kRW, what))
		return;
	write_probe(c, m, mw->rkey, at, 256, kAccepted,
		    what + ": Write through the new key");
	write_probe(c, m, old, from, 64, refused(kDdpInvStag),
		    what + ": Write through the old key where the window was");
}

// Type 1 windows: ibv_bind_mw(), valid on every QP of the PD, rebound in
// one step (the old key refused), unbound with length 0; a peer cannot
// invalidate one, nor can a local invalidation.
void type1(cm_pair::Pair &pair)
{
	const std::string t = "type 1: ";
	Mem m(4);
	ibv_mr *mr = reg(m, kMrMw);
	ibv_mw *w1 = alloc(IBV_MW_TYPE_1), *w2 = alloc(IBV_MW_TYPE_2);
	const size_t A = 4096, B = 8192;

	{
		Conn c(pair);

		if (!bind1(c, w1, mr, m.va(A), 4096, kRWA, t + "ibv_bind_mw")) {
			c.close();
			ibv_dealloc_mw(w1);
			ibv_dealloc_mw(w2);
			ibv_dereg_mr(mr);
			return;
		}
		write_probe(c, m, w1->rkey, A, 1024, kAccepted, t + "Write");
		fadd_probe(c, m, w1->rkey, A + 2048, 3, kAccepted,
			   t + "FetchAdd");

		// the type rules of the verbs, refused at the call
		ibv_mw_bind b{};
		b.bind_info = { mr, m.va(A), 4096, kRW };
		int rv = ibv_bind_mw(c.oqp(), w2, &b);
		check(rv == EINVAL, t + "ibv_bind_mw of a type 2 window: " +
		      std::to_string(rv) + " (want EINVAL)");
		rv = c.post_bind(w1, ibv_inc_rkey(w1->rkey), mr, m.va(A), 4096, kRW);
		check(rv == EINVAL, t + "IBV_WR_BIND_MW of a type 1 window: " +
		      std::to_string(rv) + " (want EINVAL)");
		ibv_wr_start(c.sqx);
		c.sqx->wr_id = 40;
		c.sqx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_bind_mw(c.sqx, w1, ibv_inc_rkey(w1->rkey), &b.bind_info);
		rv = ibv_wr_complete(c.sqx);
		check(rv == EINVAL, t + "ibv_wr_bind_mw of a type 1 window: " +
		      std::to_string(rv) + " (want EINVAL)");
		dereg_busy(&mr, t + "refused dereg");
		if (!mr)
			die("the MR is gone");
		{
			Conn c2(pair);

			write_probe(c2, m, w1->rkey, A + 1024, 64, kAccepted,
				    t + "Write through another QP of the PD");
		}
		rebind1(c, m, w1, mr, A, A, A + 256, t + "rebind in place");
	}
	{	// the QP it was bound through is gone: it still works
		Conn c(pair);

		write_probe(c, m, w1->rkey, A + 512, 64, kAccepted,
			    t + "Write after the binding QP's connection ended");
		rebind1(c, m, w1, mr, A, B, B, t + "rebind elsewhere");
	}
	{
		Conn c(pair);
		uint32_t ka = w1->rkey;
		ibv_mw_bind b{};
		b.wr_id = 32;
		b.send_flags = IBV_SEND_SIGNALED;
		int rv = ibv_bind_mw(c.oqp(), w1, &b);	// no MR, length 0
		ibv_wc wc = c.owner_one(t + "unbind");
		check(rv == 0 && wc.status == IBV_WC_SUCCESS &&
		      wc.opcode == IBV_WC_BIND_MW && wc.wr_id == 32,
		      t + "ibv_bind_mw of length 0 (unbind): " + std::to_string(rv) +
		      ", " + st(wc));
		write_probe(c, m, ka, B, 64, refused(kDdpInvStag),
			    t + "Write through the key before the unbind");
	}
	{
		Conn c(pair);

		write_probe(c, m, w1->rkey, B, 64, refused(kDdpInvStag),
			    t + "Write through the unbound window's key");
	}
	{	// a peer cannot invalidate a type 1 window
		Conn c(pair);

		if (bind1(c, w1, mr, m.va(A), 4096, kRW, t + "bind again"))
			send_inv_refused(c, w1->rkey,
					 t + "Send with Invalidate of a type 1 window");
	}
	{	// nor a local invalidation; the window stays valid
		Conn c(pair);

		write_probe(c, m, w1->rkey, A + 8, 64, kAccepted,
			    t + "Write after the refused remote invalidation");
		if (!c.post_local_inv(w1->rkey))
			owner_bind_err(c, 78, t + "IBV_WR_LOCAL_INV of a type 1 window");
	}
	{
		Conn c(pair);

		write_probe(c, m, w1->rkey, A + 16, 64, kAccepted,
			    t + "Write after the refused local invalidation");
		// rdma-core's test_invalidate_mw_type1: rebind with length 0,
		// MR given
		if (bind1(c, w1, mr, m.va(A), 0, 0, t + "unbind with the MR given")) {
			check(ibv_dereg_mr(mr) == 0,
			      t + "ibv_dereg_mr after the unbind");
			mr = nullptr;
		}
	}
	check(ibv_dealloc_mw(w1) == 0, t + "dealloc_mw");
	ibv_dealloc_mw(w2);
	if (mr)
		ibv_dereg_mr(mr);
}

// A window on a zero-based MR: tagged offsets are the MR's, from 0.
void zero_based(cm_pair::Pair &pair)
{
	const std::string t = "zero-based MR: ";
	Mem m(4);
	ibv_mr *mr = ibv_reg_mr_iova(g_pd, m.p(), 4 * kPage, 0, kMrMw);

	if (!mr)
		die("ibv_reg_mr_iova");
	m.tag0 = 0;
	{
		Win2 w(pair);

		if (w.bind(mr, 4096, 4096, kRW, t + "bind at 4096")) {
			write_probe(w.c, m, w.k, 4096, 256, kAccepted,
				    t + "Write at 4096 lands at buffer + 4096");
			write_probe(w.c, m, w.k, 8192 - 64, 64, kAccepted,
				    t + "Write ending at 8192");
			read_probe(w.c, m, w.k, 4096 + 8, 64, kAccepted,
				   t + "Read at 4104");
			write_probe(w.c, m, w.k, 8192, 64, refused(kDdpBounds),
				    t + "Write at 8192");
		}
	}
	{
		Win2 w(pair);

		bind_err(w.c, w.mw, w.k, mr, m.va(4096), 4096, kRW,
			 t + "bind at the buffer's virtual address (outside the MR)");
	}
	check(ibv_dereg_mr(mr) == 0, t + "dereg_mr");
}

// Binds the kernel refuses (IBV_WC_MW_BIND_ERR, the QP in ERROR), one
// connection each, with the accepted binds next to them; and the one
// the post refuses.
void bind_errors(cm_pair::Pair &pair)
{
	const std::string t = "bind errors: ";
	Mem m(4);
	ibv_mr *mr = reg(m, kMrMw);
	ibv_mr *nobind = reg(m, kMrAll & ~IBV_ACCESS_MW_BIND);
	ibv_mr *nolw = reg(m, IBV_ACCESS_MW_BIND);
	ibv_mr *flush = reg(m, kMrMw | XIWDV_ACCESS_FLUSH_GLOBAL);
	ibv_pd *pd2 = ibv_alloc_pd(g_pd->context);
	if (!pd2)
		die("ibv_alloc_pd");
	ibv_mr *other = ibv_reg_mr(pd2, m.p(), 4 * kPage, kMrMw);
	if (!other)
		die("ibv_reg_mr pd2");
	struct Case {
		std::string what;
		ibv_mr *mr;
		uint64_t addr, len;
		unsigned access;
		bool ok;
		bool other_pd_mw;
	} cases[] = {
		{ "MR without IBV_ACCESS_MW_BIND", nobind, m.va(0), 4096, kRW,
		  false, false },
		{ "REMOTE_WRITE on an MR without LOCAL_WRITE", nolw, m.va(0), 4096,
		  IBV_ACCESS_REMOTE_WRITE, false, false },
		{ "REMOTE_ATOMIC on an MR without LOCAL_WRITE", nolw, m.va(0),
		  4096, IBV_ACCESS_REMOTE_ATOMIC, false, false },
		{ "REMOTE_READ on an MR without LOCAL_WRITE", nolw, m.va(0), 4096,
		  IBV_ACCESS_REMOTE_READ, true, false },
		{ "a range one byte past the MR's end", mr, m.va(3 * kPage + 1),
		  4096, kRW, false, false },
		{ "a range starting one byte before the MR", mr, m.va(0) - 1, 4096,
		  kRW, false, false },
		{ "a range whose end wraps", mr, m.va(4096), UINT64_MAX, kRW,
		  false, false },
		{ "the whole MR", mr, m.va(0), 4 * kPage, kRW, true, false },
		{ "a window of another PD", mr, m.va(0), 4096, kRW, false, true },
		{ "an MR of another PD", other, m.va(0), 4096, kRW, false, false },
		{ "a Flush right the MR lacks", mr, m.va(0), 4096,
		  kRW | XIWDV_ACCESS_FLUSH_GLOBAL, false, false },
		{ "a Flush right the MR has", flush, m.va(0), 4096,
		  kRW | XIWDV_ACCESS_FLUSH_GLOBAL, true, false },
	};

	for (auto &cs : cases) {
		Win2 w(pair, cs.other_pd_mw ? pd2 : g_pd);
		std::string what = t + cs.what;

		if (!cs.ok)
			bind_err(w.c, w.mw, w.k, cs.mr, cs.addr, cs.len, cs.access,
				 what);
		else if (w.bind(cs.mr, cs.addr, cs.len, cs.access, what))
			read_probe(w.c, m, w.k, cs.addr - m.va(0), 64,
				   cs.access & IBV_ACCESS_REMOTE_READ ?
				   kAccepted : refused(kRdmapAccess),
				   what + ": Read through the window");
		check(w.dealloc() == 0, what + ": dealloc_mw");
	}
	{	// refused at the post: the QP goes on
		Win2 w(pair);
		struct {
			unsigned flag;
			const char *what;
		} extra[] = {
			{ IBV_ACCESS_ZERO_BASED, "IBV_ACCESS_ZERO_BASED" },
			{ IBV_ACCESS_MW_BIND, "IBV_ACCESS_MW_BIND as a window right" },
		};

		for (auto &x : extra) {
			int rv = w.c.post_bind(w.mw, w.k, mr, m.va(0), 4096,
					       kRW | x.flag);

			check(rv == EINVAL, t + x.what + ": ibv_post_send " +
			      std::to_string(rv) + " (want EINVAL)");
		}
		check(w.c.owner_poll(1, 200).empty(),
		      t + "nothing posted, nothing completes");
		if (w.bind(mr, m.va(0), 4096, kRW,
			   t + "a good bind after the refused ones"))
			write_probe(w.c, m, w.k, 64, 64, kAccepted,
				    t + "Write after the refused binds");
	}
	m.check_same(t + "the owner's memory holds only the Writes ");
	for (ibv_mr *x : { mr, nobind, nolw, flush, other })
		if (ibv_dereg_mr(x))
			check(false, t + "dereg_mr");
	ibv_dealloc_pd(pd2);
}

// A window's rkey is no lkey: the owner's Write from its memory, with
// the MR's lkey and then with the window's rkey as the SGE's key.
void rkey_as_lkey(cm_pair::Pair &pair)
{
	const std::string t = "rkey as lkey: ";
	Mem m(4);
	ibv_mr *mr = reg(m, kMrMw);
	Win2 w(pair);
	Conn &c = w.c;
	uint32_t k = w.k;

	if (w.bind(mr, m.va(4096), 4096, kRW, t + "bind")) {
		uint8_t *dst = c.cli.mem.data() + 2048;

		for (int i = 0; i < 2; i++) {
			ibv_sge s{ m.va(4096), 64, i ? k : mr->lkey };
			ibv_send_wr wr{}, snd{}, *bad;

			std::memset(dst, 0, 64);
			wr.wr_id = 50 + i;
			wr.opcode = IBV_WR_RDMA_WRITE;
			wr.sg_list = &s;
			wr.num_sge = 1;
			wr.send_flags = IBV_SEND_SIGNALED;
			wr.wr.rdma.remote_addr = (uintptr_t)dst;
			wr.wr.rdma.rkey = c.cli.mr->rkey;
			if (!i) {
				// a Send after it: the peer has the Write's
				// bytes once it has the Send
				c.cli.post_recv(23, c.cli.mem.data() + 6144, 64);
				snd.wr_id = 52;
				snd.opcode = IBV_WR_SEND;
				snd.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
				snd.sg_list = &s;
				snd.num_sge = 0;
				wr.next = &snd;
			}
			if (ibv_post_send(c.oqp(), &wr, &bad))
				die("post owner write");
			ibv_wc wc = c.owner_one(t + "owner Write");
			if (!i) {
				ibv_wc sw = c.owner_one(t + "owner Send");
				ibv_wc rw = c.peer_one(t + "peer receive");

				check(wc.status == IBV_WC_SUCCESS &&
				      wc.opcode == IBV_WC_RDMA_WRITE &&
				      sw.status == IBV_WC_SUCCESS &&
				      rw.status == IBV_WC_SUCCESS && rw.wr_id == 23,
				      t + "the MR's lkey: " + st(wc) + "; " + st(rw));
				check(!std::memcmp(dst, m.p() + 4096, 64),
				      t + "the MR's lkey: the peer has the bytes");
			} else {
				check(wc.status == IBV_WC_LOC_PROT_ERR && wc.wr_id == 51,
				      t + "the window's rkey: " + st(wc) +
				      " (want IBV_WC_LOC_PROT_ERR)");
				check(qp_in_error(c.oqp()), t + "the owner's QP in ERROR");
				check(dst[0] == 0 && !std::memcmp(dst, dst + 1, 63),
				      t + "the window's rkey: nothing reached the peer");
			}
		}
	}
	w.dealloc();
	ibv_dereg_mr(mr);
}

// ---- binds racing remote access ------------------------------------------

// One round of the race: the peer streams kRaceWrites Writes of 512
// bytes (slots of the window [base, base + 4096), each Write a pattern of
// its own) through @key, unsignaled, then a signaled Read through it;
// @owner_op (the invalidation or the rebind, signaled) is posted, by
// @round % 4, among the Writes, 100 or 600 us after the last, or once the
// Read is complete (the Writes then all landed). Returns the Read's
// completion; the owner's one in *@owc. What each slot may hold
// afterwards (its bytes now, or those of a Write aimed at it) goes to
// @cand.
constexpr int kRaceWrites = 24;
constexpr size_t kSlot = 512, kSlots = 8;
using Cands = std::vector<std::vector<std::vector<uint8_t>>>;

ibv_wc race_round(Conn &c, Mem &m, uint32_t key, size_t base, int round,
		  const std::function<void()> &owner_op, ibv_wc *owc,
		  Cands &cand, bool *stuck)
{
	uint8_t *src = c.cli.mem.data();	// Write i's bytes at i * kSlot
	std::vector<ibv_send_wr> w(kRaceWrites + 1);
	std::vector<ibv_sge> s(kRaceWrites + 1);
	int split = (round / 4 * 7 + 3) % (kRaceWrites + 1);
	ibv_send_wr *bad;

	cand.assign(kSlots, {});
	for (size_t i = 0; i < kSlots; i++)
		cand[i].emplace_back(m.p() + base + i * kSlot,
				     m.p() + base + (i + 1) * kSlot);
	for (int i = 0; i <= kRaceWrites; i++) {
		size_t slot = (i * 5 + split) % kSlots;
		uint8_t *b = src + i * kSlot;

		s[i] = { (uintptr_t)b, (uint32_t)kSlot, c.cli.mr->lkey };
		w[i].wr_id = 100 + i;
		w[i].opcode = IBV_WR_RDMA_WRITE;
		w[i].sg_list = &s[i];
		w[i].num_sge = 1;
		w[i].wr.rdma.rkey = key;
		w[i].wr.rdma.remote_addr = m.va(base + slot * kSlot);
		w[i].next = i + 1 == split || i == kRaceWrites ? nullptr :
								 &w[i + 1];
		if (i < kRaceWrites) {
			pattern(b, kSlot, uint8_t(g_seed + 31 * i));
			cand[slot].emplace_back(b, b + kSlot);
		}
	}
	// the final Read: 8 bytes of the window's start
	s[kRaceWrites].length = 8;
	w[kRaceWrites].opcode = IBV_WR_RDMA_READ;
	w[kRaceWrites].send_flags = IBV_SEND_SIGNALED;
	w[kRaceWrites].wr.rdma.remote_addr = m.va(base);
	g_seed += 7;

	// when the owner's WR goes: among the Writes, some time after them,
	// or once the peer's Read is complete
	int mode = round % 4;
	if (split > 0 && ibv_post_send(c.cli.id->qp, &w[0], &bad))
		die("post race writes");
	if (mode == 0)
		owner_op();
	if (ibv_post_send(c.cli.id->qp, &w[split], &bad))
		die("post race writes");
	if (mode == 1 || mode == 2) {
		auto until = std::chrono::steady_clock::now() +
			     std::chrono::microseconds(mode == 1 ? 100 : 600);
		while (std::chrono::steady_clock::now() < until)
			;
		owner_op();
	}
	// the peer: the Read's completion; flushed Writes before it
	ibv_wc rwc{};
	bool seen = false;
	auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
	while (!seen && std::chrono::steady_clock::now() < end) {
		auto wc = c.cli.poll(1, 100);

		if (wc.empty())
			continue;
		if (wc[0].wr_id == 100 + (uint64_t)kRaceWrites) {
			rwc = wc[0];
			seen = true;
		} else if (wc[0].status != IBV_WC_WR_FLUSH_ERR) {
			*stuck = true;	// an unsignaled Write completing otherwise
		}
	}
	if (!seen) {
		*stuck = true;
		rwc.status = IBV_WC_GENERAL_ERR;
	}
	if (mode == 3)
		owner_op();
	*owc = c.owner_one("race: the owner's WR");
	return rwc;
}

// The window [base, base + 4096) of @m: every slot holds one of its
// candidates (the bytes it had, or those of a Write aimed at it), and
// nothing else of @m changed; then the window's bytes are what @m expects.
bool race_memory_ok(Mem &m, size_t base, const Cands &cand,
		    std::string *why)
{
	std::string diff;

	for (size_t i = 0; i < kSlots; i++) {
		const uint8_t *b = m.p() + base + i * kSlot;
		bool any = false;

		for (auto &c : cand[i])
			any |= !std::memcmp(b, c.data(), kSlot);
		if (!any) {
			*why = "slot " + std::to_string(i) +
			       " holds bytes no Write carried (or a part of one): " +
			       hex(b, 8);
			return false;
		}
		m.expect(base + i * kSlot, b, kSlot);
	}
	if (!m.same(&diff)) {
		*why = "memory outside the window changed " + diff;
		return false;
	}
	return true;
}

// A Write through @key (an old key) and a Read after it: true if the
// stream is refused (the Read REM_ACCESS_ERR invalid STag, or flushed)
// and both QPs end in ERROR; the memory is checked by the caller.
bool old_key_refused(Conn &c, Mem &m, uint32_t key, size_t off,
		     std::string *why)
{
	uint8_t *src = c.cli.mem.data() + 28 * kSlot;

	pattern(src, 64, 0xee);
	auto wc = write_then_read(c, src, 64, src + 64, 8, m.va(off), key);
	for (auto &x : wc) {
		if (x.wr_id != 2)
			continue;
		if ((x.status == IBV_WC_REM_ACCESS_ERR &&
		     x.vendor_err == kDdpInvStag) ||
		    x.status == IBV_WC_WR_FLUSH_ERR) {
			if (qp_in_error(c.oqp()))
				return true;
			*why = "old key: the owner's QP is not in ERROR";
			return false;
		}
		*why = "old key " + hx(key) + ": the Read after the Write: " + st(x);
		return false;
	}
	*why = "old key: no completion of the Read";
	return false;
}

struct RaceTally {
	int landed = 0, cut = 0, bad_owner = 0, bad_peer = 0, bad_mem = 0,
	    old_ok = 0, old_checked = 0;
	std::string why;

	// the peer's Read of round: landed, cut (refused after the owner's
	// WR), or anything else
	void stream(const ibv_wc &rwc, bool stuck)
	{
		if (rwc.status == IBV_WC_SUCCESS)
			landed++;
		else if ((rwc.status == IBV_WC_REM_ACCESS_ERR &&
			  (rwc.vendor_err == kDdpInvStag ||
			   rwc.vendor_err == kRdmapInvStag)) ||
			 rwc.status == IBV_WC_WR_FLUSH_ERR)
			cut++;
		else
			stuck = true;
		if (stuck) {
			bad_peer++;
			why = "the peer's Read: " + st(rwc);
		}
	}

	// a round's end: its stream, and the memory of the window at @base
	void round(const ibv_wc &rwc, bool stuck, Mem &m, size_t base,
		   const Cands &cand)
	{
		stream(rwc, stuck);
		if (!race_memory_ok(m, base, cand, &why))
			bad_mem++;
	}

	// the owner's WR @what completed SUCCESS with @opcode; else counted
	bool owner_ok(const ibv_wc &owc, ibv_wc_opcode opcode,
		      const std::string &what)
	{
		if (owc.status == IBV_WC_SUCCESS && owc.opcode == opcode)
			return true;
		bad_owner++;
		why = what + ": " + st(owc);
		return false;
	}

	// after a stream that landed whole: a Write through the old key @key
	// at offset @off of @m is refused and changes nothing
	void old_key(Conn &c, Mem &m, uint32_t key, size_t off)
	{
		std::string diff;

		old_checked++;
		if (old_key_refused(c, m, key, off, &why))
			old_ok++;
		if (!m.same(&diff)) {
			bad_mem++;
			why = "the old key's Write changed memory " + diff;
		}
	}

	void report(const std::string &t, int rounds, const char *owner_op,
		    const char *old_key)
	{
		check(!bad_owner, t + std::to_string(rounds) + " rounds: every " +
		      owner_op + " completed SUCCESS " + why);
		check(!bad_peer, t + "every stream ended with its Read SUCCESS, "
		      "REM_ACCESS_ERR invalid STag (0x1100/0x0100) or flushed, "
		      "its unsignaled Writes only flushed " + why);
		check(!bad_mem, t + "every Write landed whole inside its window "
		      "or not at all, nothing else changed " + why);
		check(old_ok == old_checked,
		      t + "a Write through the old key " + old_key +
		      " was refused (" + std::to_string(old_ok) +
		      " of " + std::to_string(old_checked) +
		      " rounds whose stream was not cut) " + why);
		std::printf("# %s%d rounds: %d streams landed whole before the "
			    "owner's WR took effect, %d cut by it\n",
			    t.c_str(), rounds, landed, cut);
	}
};

// Type 2: each round binds the window under a new key through a new
// connection (invalidating the previous round's binding first through
// it), and the peer streams Writes through it while the owner invalidates
// it. When the stream landed whole, the owner binds the window again in
// the same place under the next key: a Write through the old key is
// refused (only the key tells the two STags apart).
void race_type2(cm_pair::Pair &pair, int rounds)
{
	const std::string t = "race type 2: ";
	Mem m(4);
	ibv_mr *mr = reg(m, kMrMw);
	ibv_mw *mw = alloc(IBV_MW_TYPE_2);
	uint32_t k = mw->rkey;
	bool bound = false;	// under k, by the previous round
	RaceTally rt;

	for (int r = 0; r < rounds && !rt.bad_owner; r++) {
		Conn c(pair);
		Cands cand;
		bool stuck = false;
		// the owner's WR (@post_rv: its post's result): it
		// completes SUCCESS with @opcode
		auto owner_wr = [&](int post_rv, ibv_wc_opcode opcode,
				    const char *what) {
			if (post_rv)
				die("post of the owner's WR");
			return rt.owner_ok(c.owner_one(t + what), opcode, what);
		};

		// any QP of the PD invalidates locally
		if (bound && !owner_wr(c.post_local_inv(k), IBV_WC_LOCAL_INV,
				       "invalidation of the previous binding"))
			break;
		k = ibv_inc_rkey(k);
		if (!owner_wr(c.post_bind(mw, k, mr, m.va(4096), 4096, kRW),
			      IBV_WC_BIND_MW, "bind"))
			break;
		bound = false;
		ibv_wc owc;
		ibv_wc rwc = race_round(c, m, k, 4096, r,
					[&] {
						if (c.post_local_inv(k))
							die("post local inv");
					}, &owc, cand, &stuck);
		rt.owner_ok(owc, IBV_WC_LOCAL_INV, "invalidation");
		rt.round(rwc, stuck, m, 4096, cand);
		if (rwc.status == IBV_WC_SUCCESS) {
			uint32_t k2 = ibv_inc_rkey(k);

			if (!owner_wr(c.post_bind(mw, k2, mr, m.va(4096), 4096,
						  kRW),
				      IBV_WC_BIND_MW, "bind in place"))
				break;
			rt.old_key(c, m, k, 4096);
			k = k2;
			bound = true;
		}
	}
	rt.report(t, rounds, "bind and invalidation",
		  "once the window was bound again in place under the next key");
	check(ibv_dealloc_mw(mw) == 0, t + "dealloc_mw");
	check(ibv_dereg_mr(mr) == 0, t + "dereg_mr");
}

// Type 1: each round the peer streams Writes through the window's
// current key and range while the owner rebinds it (ibv_bind_mw, new
// key), in even rounds to the other of [4096, 8192) and [8192, 12288), in
// odd ones in place; Writes through the old key land only in the old
// range, and after the rebind completes one is refused.
void race_type1(cm_pair::Pair &pair, int rounds)
{
	const std::string t = "race type 1: ";
	Mem m(4);
	ibv_mr *mr = reg(m, kMrMw);
	ibv_mw *mw = alloc(IBV_MW_TYPE_1);
	size_t base = 4096;
	RaceTally rt;

	{
		Conn c(pair);

		if (!bind1(c, mw, mr, m.va(base), 4096, kRW, t + "first bind"))
			rt.bad_owner++;
	}
	for (int r = 0; r < rounds && !rt.bad_owner; r++) {
		Conn c(pair);
		Cands cand;
		bool stuck = false;
		uint32_t k = mw->rkey;
		// even rounds move the window, odd ones rebind it in place
		size_t next = r % 2 ? base : base == 4096 ? 8192 : 4096;
		ibv_wc owc;
		ibv_wc rwc = race_round(c, m, k, base, r,
					[&] {
			ibv_mw_bind b{};

			b.wr_id = 31;
			b.send_flags = IBV_SEND_SIGNALED;
			b.bind_info = { mr, m.va(next), 4096, kRW };
			if (ibv_bind_mw(c.oqp(), mw, &b))
				die("ibv_bind_mw");
		}, &owc, cand, &stuck);
		if (rt.owner_ok(owc, IBV_WC_BIND_MW, "rebind") &&
		    mw->rkey != ibv_inc_rkey(k)) {
			rt.bad_owner++;
			rt.why = "rebind: " + st(owc) + ", mw->rkey " + hx(mw->rkey);
		}
		rt.round(rwc, stuck, m, base, cand);
		if (rwc.status == IBV_WC_SUCCESS)
			rt.old_key(c, m, k, base);
		base = next;
	}
	rt.report(t, rounds, "rebind",
		  "once the rebind completed (half of them in place)");
	ibv_dealloc_mw(mw);
	check(ibv_dereg_mr(mr) == 0, t + "dereg_mr after dealloc_mw of the bound window");
}

// The process ends with a type 1 and a type 2 window bound over an MR,
// on a live connection, nothing released: the kernel's cleanup of the
// context must cope (the test then finds nothing of xiw0 left, and the
// module unloads).
void exit_bound(cm_pair::Pair &pair)
{
	const std::string t = "exit with bound windows: ";
	static Mem m(2);
	ibv_mr *mr = reg(m, kMrMw);
	ibv_mw *w2 = alloc(IBV_MW_TYPE_2), *w1 = alloc(IBV_MW_TYPE_1);
	Conn *c = new Conn(pair);	// never closed

	if (bind_ok(*c, w2, ibv_inc_rkey(w2->rkey), mr, m.va(0), 4096, kRW,
		    t + "type 2 bind") &&
	    bind1(*c, w1, mr, m.va(4096), 4096, kRW, t + "type 1 bind"))
		dereg_busy(&mr, t + "refused dereg");
}

} // namespace

int main(int argc, char **argv)
{
	setvbuf(stdout, nullptr, _IOLBF, 0);
	if (argc < 3 || argc > 4) {
		std::fprintf(stderr, "usage: %s ADDR PORT [RACE_ROUNDS]\n", argv[0]);
		return 2;
	}
	int rounds = argc == 4 ? std::atoi(argv[3]) : 32;
	cm_pair::Pair pair(argv[1], argv[2]);

	if (!pair.lid->verbs)
		die("the listener has no device");
	g_pd = ibv_alloc_pd(pair.lid->verbs);
	if (!g_pd)
		die("ibv_alloc_pd");
	g_olmr = ibv_reg_mr(g_pd, g_olbuf.data(), g_olbuf.size(),
			    IBV_ACCESS_LOCAL_WRITE);
	if (!g_olmr)
		die("ibv_reg_mr");
	if (device_caps(pair.lid->verbs)) {
		// each case with the time it took
		auto run = [&](const char *name,
			       const std::function<void()> &f) {
			auto t0 = std::chrono::steady_clock::now();

			f();
			std::printf("# %s: %lld ms\n", name, (long long)
				    std::chrono::duration_cast<std::chrono::milliseconds>(
					    std::chrono::steady_clock::now() - t0).count());
		};
		run("type2_inside", [&] { type2_inside(pair); });
		run("type2_outside", [&] { type2_outside(pair); });
		run("rights", [&] { rights(pair); });
		run("type2_other_qp", [&] { type2_other_qp(pair); });
		run("remote_inv", [&] { remote_inv(pair); });
		run("local_inv", [&] { local_inv(pair); });
		run("rebind", [&] { rebind(pair); });
		run("type1", [&] { type1(pair); });
		run("zero_based", [&] { zero_based(pair); });
		run("bind_errors", [&] { bind_errors(pair); });
		run("rkey_as_lkey", [&] { rkey_as_lkey(pair); });
		run("race_type2", [&] { race_type2(pair, rounds); });
		run("race_type1", [&] { race_type1(pair, rounds * 2 / 3); });
		run("exit_bound", [&] { exit_bound(pair); });
		std::printf("# %d connections: %lld ms connecting, %lld ms tearing down\n",
			    g_conns, (long long)std::chrono::duration_cast<
				    std::chrono::milliseconds>(g_connect_t).count(),
			    (long long)std::chrono::duration_cast<
				    std::chrono::milliseconds>(g_close_t).count());
	}
	return checks::summary();
}
