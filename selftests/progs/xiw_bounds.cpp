// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// xiw_bounds: memory bounds checked to the byte, through rdma-core and
// xiwdv.h between two QPs of one process (dp_bounds.sh).
//
// The responder registers two regions over one page-aligned buffer:
//
//   E = [P + 1, P + 4096)   its end 8-byte aligned
//   U = [P,     P + 4095)   its end one byte short of alignment
//
// and every operation is run twice: once ending exactly at a region's end
// (it succeeds and the data is checked: the bytes moved, the bytes next to
// them untouched), once ending one byte past it (the peer refuses it: the
// WR completes IBV_WC_REM_ACCESS_ERR with the peer's Terminate in
// vendor_err, 0x0101 RDMAP base or bounds violation, 0x1101 its DDP
// tagged-buffer form for a Write; the responder's memory is untouched; the
// QP goes to ERROR). An aligned 8-byte atomic cannot end one byte past an
// aligned end: FetchAdd, CmpSwap and Atomic Write go one byte past U's
// end, at P + 4088, and end exactly at E's. Write, Read, Flush and Verify
// go one byte past E's end (P + 4033, 64 bytes). The local side too: a
// Write whose source SGE, and a Read whose sink SGE, ends one byte past
// the local region completes IBV_WC_LOC_PROT_ERR, and nothing reaches the
// wire.
//
//   xiw_bounds ADDR PORT
//
// One line per check ("ok ..." or "FAIL ..."), then a summary; exit 0 if
// all passed, 1 if one failed, 2 on a setup error.
#include "checks.h"
#include "digests.h"
#include "verbs_side.h"

#include <infiniband/xiwdv.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>

namespace {

using cm_pair::die;
using checks::check;
using checks::hex;

constexpr size_t kPage = 4096;
constexpr int kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
			XIWDV_ACCESS_FLUSH_GLOBAL;
constexpr uint8_t kFill = 0x5c;		// the responder's bytes
constexpr uint64_t kWord = 0x0102030405060708ULL;

struct Conn {
	cm_pair::SideT<uint8_t> cli, srv;
	uint8_t *rbuf = nullptr;	// responder: 3 pages, P = rbuf + 4096
	uint8_t *lbuf = nullptr;	// requester: 3 pages, L = lbuf + 4096
	ibv_mr *mr_e = nullptr, *mr_u = nullptr;	// responder's E and U
	ibv_mr *lmr = nullptr;		// requester: [L, L + 4096)

	void open(cm_pair::Pair &pair)
	{
		rdma_conn_param p{};
		rdma_cm_id *pass;
		cm_pair::SideOpts co, so;

		p.initiator_depth = 4;
		p.responder_resources = 4;
		co.depth = 16;
		co.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE |
				    IBV_QP_EX_WITH_RDMA_READ |
				    IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |
				    IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
				    IBV_QP_EX_WITH_ATOMIC_WRITE;
		so = co;
		so.access = kAccess;
		cli.id = pair.connect([&](rdma_cm_id *c) { cli.setup(c, co); },
				      [&](rdma_cm_id *c) { srv.setup(c, so); },
				      p, p, &pass);
		rbuf = (uint8_t *)std::aligned_alloc(kPage, 3 * kPage);
		lbuf = (uint8_t *)std::aligned_alloc(kPage, 3 * kPage);
		if (!rbuf || !lbuf)
			die("aligned_alloc");
		std::memset(rbuf, kFill, 3 * kPage);
		std::memset(lbuf, 0, 3 * kPage);
		mr_e = ibv_reg_mr(srv.pd, P() + 1, kPage - 1, kAccess);
		mr_u = ibv_reg_mr(srv.pd, P(), kPage - 1, kAccess);
		lmr = ibv_reg_mr(cli.pd, L(), kPage, IBV_ACCESS_LOCAL_WRITE);
		if (!mr_e || !mr_u || !lmr)
			die("ibv_reg_mr");
	}

	uint8_t *P() const { return rbuf + kPage; }
	uint8_t *L() const { return lbuf + kPage; }
	uint64_t ra(size_t off) const { return (uintptr_t)P() + off; }

	// Post what @build adds between wr_start and wr_complete, signaled;
	// its local buffer: @len bytes at @laddr with @lkey (none if 0).
	int post(const std::function<void()> &build, uint64_t laddr = 0,
		 uint32_t len = 0, uint32_t lkey = 0)
	{
		ibv_wr_start(cli.qpx);
		cli.qpx->wr_id = 1;
		cli.qpx->wr_flags = IBV_SEND_SIGNALED;
		build();
		if (len)
			ibv_wr_set_sge(cli.qpx, lkey ? lkey : lmr->lkey, laddr,
				       len);
		return ibv_wr_complete(cli.qpx);
	}

	ibv_wc one(const std::string &what, int ms = 20000)
	{
		auto wc = cli.poll(1, ms);

		if (wc.empty()) {
			std::fprintf(stderr, "%s: no completion\n", what.c_str());
			std::exit(2);
		}
		return wc[0];
	}

	// The responder's buffer holds kFill except @n bytes at @off that
	// must be @want (nullptr: nothing written).
	bool rmem_is(size_t off, const uint8_t *want, size_t n,
		     std::string *diff) const
	{
		for (size_t i = 0; i < 3 * kPage; i++) {
			size_t r = i - kPage;	// offset from P
			bool in = want && i >= kPage && r >= off && r < off + n;
			uint8_t w = in ? want[r - off] : kFill;

			if (rbuf[i] != w) {
				char b[96];
				std::snprintf(b, sizeof(b),
					      "byte P%+zd is %#04x, want %#04x",
					      (ssize_t)i - (ssize_t)kPage,
					      rbuf[i], w);
				*diff = b;
				return false;
			}
		}
		return true;
	}

	void close()
	{
		rdma_disconnect(cli.id);
		ibv_dereg_mr(mr_e);
		ibv_dereg_mr(mr_u);
		ibv_dereg_mr(lmr);
		cli.teardown();
		srv.teardown();
		std::free(rbuf);
		std::free(lbuf);
	}
};

std::string st(const ibv_wc &wc)
{
	char b[128];

	std::snprintf(b, sizeof(b), "status %s vendor_err %#x opcode %d",
		      ibv_wc_status_str(wc.status), wc.vendor_err, wc.opcode);
	return b;
}

std::string pattern(uint8_t *p, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = uint8_t(seed + i * 13);
	return hex(p, n < 8 ? n : 8);
}

// Everything that ends exactly at a region's end, on one connection.
void exact(cm_pair::Pair &pair)
{
	Conn c;
	std::string diff;
	uint8_t want[64];

	c.open(pair);
	const uint64_t e_end = c.ra(kPage);	// E's end (P + 4096)

	// Write 64 bytes ending at E's end; the local source ends at L's end
	pattern(c.L() + kPage - 64, 64, 0x21);
	if (c.post([&] { ibv_wr_rdma_write(c.cli.qpx, c.mr_e->rkey, e_end - 64); },
		   (uintptr_t)c.L() + kPage - 64, 64))
		die("post write");
	ibv_wc wc = c.one("write");
	check(wc.status == IBV_WC_SUCCESS, "Write ending at the region's end: " + st(wc));
	check(c.rmem_is(kPage - 64, c.L() + kPage - 64, 64, &diff),
	      "Write ending at the region's end: the 64 bytes, nothing else " + diff);

	// Read them back into the last 64 bytes of L (sink ends at L's end)
	std::memset(c.L() + kPage - 64, 0, 64);
	std::memcpy(want, c.P() + kPage - 64, 64);
	if (c.post([&] { ibv_wr_rdma_read(c.cli.qpx, c.mr_e->rkey, e_end - 64); },
		   (uintptr_t)c.L() + kPage - 64, 64))
		die("post read");
	wc = c.one("read");
	check(wc.status == IBV_WC_SUCCESS, "Read ending at the region's end: " + st(wc));
	check(!std::memcmp(c.L() + kPage - 64, want, 64) && c.L()[kPage - 65] == 0,
	      "Read ending at the region's end: the sink holds the 64 bytes: " +
	      hex(c.L() + kPage - 64, 8));

	// FetchAdd on the last 8 bytes of E
	uint64_t orig;
	std::memcpy(&orig, c.P() + kPage - 8, 8);
	if (c.post([&] { ibv_wr_atomic_fetch_add(c.cli.qpx, c.mr_e->rkey, e_end - 8, 5); },
		   (uintptr_t)c.L(), 8))
		die("post fetchadd");
	wc = c.one("fetchadd");
	uint64_t got, now;
	std::memcpy(&got, c.L(), 8);
	std::memcpy(&now, c.P() + kPage - 8, 8);
	check(wc.status == IBV_WC_SUCCESS && got == orig && now == orig + 5,
	      "FetchAdd on the region's last 8 bytes: " + st(wc) +
	      ", original " + hex(c.L(), 8) + ", memory " + hex(c.P() + kPage - 8, 8));

	// CmpSwap on them
	if (c.post([&] { ibv_wr_atomic_cmp_swp(c.cli.qpx, c.mr_e->rkey, e_end - 8,
					      orig + 5, kWord); },
		   (uintptr_t)c.L(), 8))
		die("post cmpswap");
	wc = c.one("cmpswap");
	std::memcpy(&got, c.L(), 8);
	std::memcpy(&now, c.P() + kPage - 8, 8);
	check(wc.status == IBV_WC_SUCCESS && got == orig + 5 && now == kWord,
	      "CmpSwap on the region's last 8 bytes: " + st(wc) +
	      ", memory " + hex(c.P() + kPage - 8, 8));

	// Atomic Write on them
	const uint8_t v[8] = { 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8 };
	if (c.post([&] { ibv_wr_atomic_write(c.cli.qpx, c.mr_e->rkey, e_end - 8, v); }))
		die("post atomic write");
	wc = c.one("atomic write");
	check(wc.status == IBV_WC_SUCCESS && !std::memcmp(c.P() + kPage - 8, v, 8) &&
	      c.P()[kPage] == kFill,
	      "Atomic Write on the region's last 8 bytes: " + st(wc) +
	      ", memory " + hex(c.P() + kPage - 8, 9));

	// Flush of the last 64 bytes
	if (c.post([&] { xiwdv_wr_flush(c.cli.qpx, c.mr_e->rkey, e_end - 64, 64,
				       XIWDV_FLUSH_GLOBAL, XIWDV_FLUSH_RANGE); }))
		die("post flush");
	wc = c.one("flush");
	check(wc.status == IBV_WC_SUCCESS && wc.opcode == XIWDV_WC_FLUSH,
	      "Flush ending at the region's end: " + st(wc));

	// Verify (crc32c) of the last 64 bytes: the digest of those bytes
	auto dig = digests::crc32c_bytes(c.P() + kPage - 64, 64);
	std::memset(c.L(), 0, 32);
	if (c.post([&] { xiwdv_wr_verify(c.cli.qpx, c.mr_e->rkey, e_end - 64, 64,
					nullptr, 0); },
		   (uintptr_t)c.L(), 32))
		die("post verify");
	wc = c.one("verify");
	check(wc.status == IBV_WC_SUCCESS && wc.byte_len == 4 &&
	      !std::memcmp(c.L(), dig.data(), 4),
	      "Verify ending at the region's end: " + st(wc) + ", digest " +
	      hex(c.L(), 4) + " (here " + hex(dig.data(), 4) + ")");

	// U: the same, 8-aligned end minus one: its last aligned word ends 7
	// bytes short, a 1-byte Write at its very end lands
	c.L()[0] = 0xee;
	if (c.post([&] { ibv_wr_rdma_write(c.cli.qpx, c.mr_u->rkey, c.ra(kPage - 2)); },
		   (uintptr_t)c.L(), 1))
		die("post write u");
	wc = c.one("write u");
	check(wc.status == IBV_WC_SUCCESS && c.P()[kPage - 2] == 0xee &&
	      c.P()[kPage - 1] == v[7],
	      "1-byte Write at U's last byte: " + st(wc));
	c.close();
}

// One access that ends one byte past a region, on a connection of its
// own: the requester's completion (@status, @vendor), the QP in ERROR,
// the responder's memory untouched.
void past(cm_pair::Pair &pair, const std::string &what, unsigned status,
	  uint32_t vendor, const std::function<int(Conn &)> &post)
{
	Conn c;
	std::string diff;

	c.open(pair);
	pattern(c.lbuf, 3 * kPage, 0x37);
	int rv = post(c);
	if (rv) {
		check(false, what + ": posted: ibv_wr_complete " + std::to_string(rv));
		c.close();
		return;
	}
	ibv_wc wc = c.one(what);
	char b[96];
	std::snprintf(b, sizeof(b), " (want %s vendor_err %#x)",
		      ibv_wc_status_str((ibv_wc_status)status), vendor);
	check(wc.status == status && wc.vendor_err == vendor,
	      what + ": " + st(wc) + b);
	ibv_qp_attr qa{};
	ibv_qp_init_attr qi{};
	ibv_query_qp(c.cli.id->qp, &qa, IBV_QP_STATE, &qi);
	check(qa.qp_state == IBV_QPS_ERR, what + ": requester QP in ERROR");
	// the responder has seen and refused it (or never got it) by now
	check(c.rmem_is(0, nullptr, 0, &diff), what + ": responder memory untouched " + diff);
	c.close();
}

// A Write one byte past the end: the Write itself completes when sent
// (RFC 5040: no response), so a Read follows it on the stream: the
// responder refuses the Write before it sees the Read, and the Read
// completes in error: REM_ACCESS_ERR with the Write's Terminate (0x1101),
// or flushed (the Terminate completed the Write's place in the stream).
void write_past(cm_pair::Pair &pair)
{
	const std::string what = "Write one byte past the end";
	Conn c;
	std::string diff;

	c.open(pair);
	pattern(c.lbuf, 3 * kPage, 0x37);
	ibv_wr_start(c.cli.qpx);
	c.cli.qpx->wr_id = 1;
	c.cli.qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(c.cli.qpx, c.mr_e->rkey, c.ra(kPage - 63));
	ibv_wr_set_sge(c.cli.qpx, c.lmr->lkey, (uintptr_t)c.L(), 64);
	c.cli.qpx->wr_id = 2;
	ibv_wr_rdma_read(c.cli.qpx, c.mr_e->rkey, c.ra(0));
	ibv_wr_set_sge(c.cli.qpx, c.lmr->lkey, (uintptr_t)c.L() + 1024, 64);
	if (ibv_wr_complete(c.cli.qpx))
		die("post write past");
	auto wc = c.cli.poll(2, 20000);
	if (wc.size() != 2) {
		check(false, what + ": " + std::to_string(wc.size()) + " completions of 2");
		c.close();
		return;
	}
	check(wc[1].wr_id == 2 &&
	      ((wc[1].status == IBV_WC_REM_ACCESS_ERR && wc[1].vendor_err == 0x1101) ||
	       wc[1].status == IBV_WC_WR_FLUSH_ERR),
	      what + ": the Read after it: " + st(wc[1]) +
	      " (want remote access error vendor_err 0x1101, or flushed; the Write: " +
	      st(wc[0]) + ")");
	ibv_qp_attr qa{};
	ibv_qp_init_attr qi{};
	ibv_query_qp(c.cli.id->qp, &qa, IBV_QP_STATE, &qi);
	check(qa.qp_state == IBV_QPS_ERR, what + ": requester QP in ERROR");
	ibv_query_qp(c.srv.id->qp, &qa, IBV_QP_STATE, &qi);
	check(qa.qp_state == IBV_QPS_ERR, what + ": responder QP in ERROR");
	check(c.rmem_is(0, nullptr, 0, &diff), what + ": responder memory untouched " + diff);
	c.close();
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
	exact(pair);

	const unsigned acc = IBV_WC_REM_ACCESS_ERR;
	// RFC 5041 7.2 (DDP, tagged buffer): layer 1, type 1, code 1 base
	// or bounds; RFC 5040 7.2 (RDMAP): layer 0, type 1, code 1
	write_past(pair);
	past(pair, "Read one byte past the end (source)", acc, 0x0101, [](Conn &c) {
		return c.post([&] { ibv_wr_rdma_read(c.cli.qpx, c.mr_e->rkey,
						     c.ra(kPage - 63)); },
			      (uintptr_t)c.L(), 64);
	});
	past(pair, "FetchAdd one byte past the end", acc, 0x0101, [](Conn &c) {
		return c.post([&] { ibv_wr_atomic_fetch_add(c.cli.qpx, c.mr_u->rkey,
							    c.ra(kPage - 8), 5); },
			      (uintptr_t)c.L(), 8);
	});
	past(pair, "CmpSwap one byte past the end", acc, 0x0101, [](Conn &c) {
		return c.post([&] { ibv_wr_atomic_cmp_swp(c.cli.qpx, c.mr_u->rkey,
							  c.ra(kPage - 8),
							  (uint64_t)kFill * 0x0101010101010101ULL,
							  kWord); },
			      (uintptr_t)c.L(), 8);
	});
	past(pair, "Atomic Write one byte past the end", acc, 0x0101, [](Conn &c) {
		static const uint64_t v = kWord;

		return c.post([&] { ibv_wr_atomic_write(c.cli.qpx, c.mr_u->rkey,
							c.ra(kPage - 8), &v); });
	});
	past(pair, "Flush one byte past the end", acc, 0x0101, [](Conn &c) {
		return c.post([&] { xiwdv_wr_flush(c.cli.qpx, c.mr_e->rkey,
						   c.ra(kPage - 63), 64,
						   XIWDV_FLUSH_GLOBAL,
						   XIWDV_FLUSH_RANGE); });
	});
	past(pair, "Verify one byte past the end", acc, 0x0101, [](Conn &c) {
		return c.post([&] { xiwdv_wr_verify(c.cli.qpx, c.mr_e->rkey,
						    c.ra(kPage - 63), 64,
						    nullptr, 0); },
			      (uintptr_t)c.L(), 32);
	});
	// local: the SGE ends one byte past L's end
	past(pair, "Write whose source ends one byte past the local region",
	     IBV_WC_LOC_PROT_ERR, 0, [](Conn &c) {
		return c.post([&] { ibv_wr_rdma_write(c.cli.qpx, c.mr_e->rkey,
						      c.ra(64)); },
			      (uintptr_t)c.L() + kPage - 63, 64);
	});
	past(pair, "Read whose sink ends one byte past the local region",
	     IBV_WC_LOC_PROT_ERR, 0, [](Conn &c) {
		return c.post([&] { ibv_wr_rdma_read(c.cli.qpx, c.mr_e->rkey,
						     c.ra(64)); },
			      (uintptr_t)c.L() + kPage - 63, 64);
	});
	return checks::summary();
}
