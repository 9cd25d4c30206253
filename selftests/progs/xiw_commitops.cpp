// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// xiw_commitops: the draft-talpey-rdma-commit operations through rdma-core
// and xiwdv.h between two QPs of one process, checked in the responder's
// memory:
//
//   caps          device_cap_flags_ex bits 38/39/40
//   Atomic Write  ibv_wr_atomic_write and ibv_post_send's form: the 8
//                 bytes land as they are, IBV_WC_ATOMIC_WRITE
//   Flush         global, of a range, of 0 bytes, of the whole MR
//   chain         Write(record) + Flush + Atomic Write(tail) in one batch,
//                 only the last signaled: once it completes, the record
//                 and the tail are both in the responder's memory
//   Verify        crc32c and sha256 (xiwdv_reg_mr) digests against ones
//                 computed here; the right hash supplied; no digest buffer
//   refused here  a misaligned Atomic Write, a Flush without a type, a
//                 hash longer than 32 bytes: ibv_wr_complete() EINVAL;
//                 IBV_ACCESS_FLUSH_PERSISTENT on DRAM: ibv_reg_mr EINVAL
//   refused there one connection each: the WR completes with the status
//                 of the peer's Terminate and its code in vendor_err, the
//                 QP goes to ERROR: Atomic Write to a read-only MR, Flush
//                 without the flush right, persistent Flush with only the
//                 global right, Verify out of bounds, Verify with a wrong
//                 hash (memory misaligned behind an aligned IOVA cannot
//                 be registered from user space - uverbs wants equal page
//                 offsets - dp_hostile sends that Atomic Write raw)
//
//   xiw_commitops ADDR PORT [--poison-dax PATH GO]
//
// --poison-dax: Verify as a scrub of persistent memory (poison_dax() below).
//
// One line per check ("ok ..." or "FAIL ..."), then a summary; exit 0
// if all passed, 1 if one failed, 2 on a setup error.
#include "checks.h"
#include "digests.h"
#include "verbs_side.h"

#include <infiniband/xiwdv.h>

#include <array>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

using cm_pair::die;
using digests::crc32c_bytes;
using digests::sha256;

using checks::check;
using checks::failures;
using checks::passes;

using checks::hex;

// ---- one connection -----------------------------------------------------

constexpr size_t kMem = 64 * 1024;
constexpr int kAll = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		     IBV_ACCESS_REMOTE_READ | XIWDV_ACCESS_FLUSH_GLOBAL;

struct Conn {
	cm_pair::SideT<uint8_t> cli, srv;

	void open(cm_pair::Pair &pair, int srv_access = kAll,
		  void *srv_mem = nullptr, size_t srv_bytes = 0)
	{
		rdma_conn_param p{};
		rdma_cm_id *pass;
		cm_pair::SideOpts co, so;

		p.initiator_depth = 4;
		p.responder_resources = 4;
		co.mem_bytes = kMem;
		co.depth = 32;
		co.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE |
				    IBV_QP_EX_WITH_ATOMIC_WRITE;
		so = co;
		so.access = srv_access;
		if (srv_mem) {
			so.ext_mem = srv_mem;
			so.mem_bytes = srv_bytes;
		}
		cli.id = pair.connect([&](rdma_cm_id *c) { cli.setup(c, co); },
				      [&](rdma_cm_id *c) { srv.setup(c, so); },
				      p, p, &pass);
	}

	uint64_t base = 0;	// the server MR's address, if not srv.mem

	uint64_t raddr(size_t off) const
	{
		return (base ? base : (uintptr_t)srv.mem.data()) + off;
	}

	// Post what @build adds between wr_start and wr_complete.
	template <typename F> int post(F build)
	{
		ibv_wr_start(cli.qpx);
		cli.qpx->wr_id = 1;
		cli.qpx->wr_flags = IBV_SEND_SIGNALED;
		build();
		return ibv_wr_complete(cli.qpx);
	}

	ibv_wc one(int ms = 20000)
	{
		auto wc = cli.poll(1, ms);

		if (wc.empty())
			die("no completion");
		return wc[0];
	}

	void close()
	{
		rdma_disconnect(cli.id);
		cli.teardown();
		srv.teardown();
	}
};

void caps(ibv_context *ctx)
{
	ibv_device_attr_ex a{};

	if (ibv_query_device_ex(ctx, nullptr, &a))
		die("ibv_query_device_ex");
	check(a.device_cap_flags_ex & XIWDV_DEVICE_FLUSH_GLOBAL,
	      "caps: flush global (bit 38)");
	check(a.device_cap_flags_ex & XIWDV_DEVICE_FLUSH_PERSISTENT,
	      "caps: flush persistent (bit 39)");
	check(a.device_cap_flags_ex & XIWDV_DEVICE_ATOMIC_WRITE,
	      "caps: atomic write (bit 40)");
}

void status_is(const ibv_wc &wc, unsigned opcode, const std::string &what)
{
	check(wc.status == IBV_WC_SUCCESS && wc.opcode == opcode,
	      what + ": status " + ibv_wc_status_str(wc.status) +
	      ", opcode " + std::to_string(wc.opcode) + " (want " +
	      std::to_string(opcode) + ")");
}

void good_ops(cm_pair::Pair &pair)
{
	Conn c;

	c.open(pair);
	caps(c.cli.id->verbs);
	ibv_qp_attr qa{};
	ibv_qp_init_attr qi{};
	ibv_query_qp(c.cli.id->qp, &qa, IBV_QP_MAX_QP_RD_ATOMIC |
		     IBV_QP_MAX_DEST_RD_ATOMIC, &qi);
	check(qa.max_rd_atomic == 4 && qa.max_dest_rd_atomic == 4,
	      "ibv_query_qp: the negotiated ORD " +
	      std::to_string(qa.max_rd_atomic) + " and IRD " +
	      std::to_string(qa.max_dest_rd_atomic) + " (4, 4)");

	// Atomic Write, the ibv_qp_ex form: bytes as they are
	const uint8_t v[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	std::memset(c.srv.mem.data(), 0xee, 256);
	if (c.post([&] { ibv_wr_atomic_write(c.cli.qpx, c.srv.mr->rkey,
					     c.raddr(64), v); }))
		die("post atomic write");
	status_is(c.one(), IBV_WC_ATOMIC_WRITE, "Atomic Write");
	check(!std::memcmp(&c.srv.mem[64], v, 8) && c.srv.mem[63] == 0xee &&
	      c.srv.mem[72] == 0xee,
	      "Atomic Write: exactly the 8 bytes at the target: " +
	      hex(&c.srv.mem[60], 16));

	// ... and ibv_post_send's form (the 8 bytes in the one SGE)
	{
		const uint8_t w[8] = { 9, 10, 11, 12, 13, 14, 15, 16 };
		std::memcpy(&c.cli.mem[0], w, 8);
		if (c.cli.post(IBV_WR_ATOMIC_WRITE, 2, &c.cli.mem[0], 8, true,
			       c.raddr(128), c.srv.mr->rkey))
			die("ibv_post_send atomic write");
		status_is(c.one(), IBV_WC_ATOMIC_WRITE,
			  "Atomic Write (ibv_post_send)");
		check(!std::memcmp(&c.srv.mem[128], w, 8),
		      "Atomic Write (ibv_post_send): bytes at the target");
	}

	// Flush: a range, nothing, the whole MR
	if (c.post([&] { xiwdv_wr_flush(c.cli.qpx, c.srv.mr->rkey,
					c.raddr(0), 4096, XIWDV_FLUSH_GLOBAL,
					XIWDV_FLUSH_RANGE); }))
		die("post flush");
	status_is(c.one(), XIWDV_WC_FLUSH, "Flush global of 4 KiB");
	if (c.post([&] { xiwdv_wr_flush(c.cli.qpx, c.srv.mr->rkey,
					c.raddr(kMem), 0, XIWDV_FLUSH_GLOBAL,
					XIWDV_FLUSH_RANGE); }))
		die("post flush 0");
	status_is(c.one(), XIWDV_WC_FLUSH, "Flush of 0 bytes at the end");
	if (c.post([&] { xiwdv_wr_flush(c.cli.qpx, c.srv.mr->rkey, 0, 0,
					XIWDV_FLUSH_GLOBAL,
					XIWDV_FLUSH_MR); }))
		die("post flush mr");
	status_is(c.one(), XIWDV_WC_FLUSH, "Flush of the whole MR");

	// the commit chain, one batch, only the Atomic Write signaled
	for (int round = 0; round < 20; round++) {
		size_t off = 4096 + round * 512;
		uint64_t tail = off + 300;

		for (int i = 0; i < 300; i++)
			c.cli.mem[4096 + i] = uint8_t(round * 7 + i);
		if (c.post([&] {
			c.cli.qpx->wr_flags = 0;
			ibv_wr_rdma_write(c.cli.qpx, c.srv.mr->rkey,
					  c.raddr(off));
			ibv_wr_set_sge(c.cli.qpx, c.cli.mr->lkey,
				       (uintptr_t)&c.cli.mem[4096], 300);
			xiwdv_wr_flush(c.cli.qpx, c.srv.mr->rkey, c.raddr(off),
				       300, XIWDV_FLUSH_GLOBAL,
				       XIWDV_FLUSH_RANGE);
			c.cli.qpx->wr_flags = IBV_SEND_SIGNALED;
			ibv_wr_atomic_write(c.cli.qpx, c.srv.mr->rkey,
					    c.raddr(0), &tail);
		}))
			die("post chain");
		ibv_wc wc = c.one();
		uint64_t t;
		std::memcpy(&t, &c.srv.mem[0], 8);
		bool ok = wc.status == IBV_WC_SUCCESS && t == tail &&
			  !std::memcmp(&c.srv.mem[off], &c.cli.mem[4096], 300);
		if (!ok || round == 19)
			check(ok, "chain Write+Flush+Atomic Write, round " +
			      std::to_string(round) + ": tail and record in place");
	}

	// Verify, crc32c (the MR's default)
	for (size_t i = 0; i < kMem; i++)
		c.srv.mem[i] = uint8_t(i * 31 + (i >> 9));
	auto want = crc32c_bytes(&c.srv.mem[512], 8192);
	std::memset(&c.cli.mem[0], 0, 64);
	if (c.post([&] {
		xiwdv_wr_verify(c.cli.qpx, c.srv.mr->rkey, c.raddr(512), 8192,
				nullptr, 0);
		ibv_wr_set_sge(c.cli.qpx, c.cli.mr->lkey,
			       (uintptr_t)&c.cli.mem[0], 32);
	}))
		die("post verify");
	ibv_wc wc = c.one();
	status_is(wc, XIWDV_WC_VERIFY, "Verify crc32c");
	check(wc.byte_len == 4 && !std::memcmp(&c.cli.mem[0], want.data(), 4),
	      "Verify crc32c digest " + hex(&c.cli.mem[0], 4) + ", here " +
	      hex(want.data(), 4) + ", byte_len " +
	      std::to_string(wc.byte_len));
	// with the right hash, and without a digest buffer
	if (c.post([&] { xiwdv_wr_verify(c.cli.qpx, c.srv.mr->rkey,
					 c.raddr(512), 8192, want.data(),
					 4); }))
		die("post verify hash");
	wc = c.one();
	status_is(wc, XIWDV_WC_VERIFY, "Verify with the right crc32c");
	check(wc.byte_len == 4, "Verify with the right hash: byte_len 4");
	// a long one goes to the responder's exec work
	want = crc32c_bytes(&c.srv.mem[0], kMem);
	if (c.post([&] {
		xiwdv_wr_verify(c.cli.qpx, c.srv.mr->rkey, c.raddr(0), kMem,
				nullptr, 0);
		ibv_wr_set_sge(c.cli.qpx, c.cli.mr->lkey,
			       (uintptr_t)&c.cli.mem[0], 4);
	}))
		die("post verify long");
	wc = c.one();
	status_is(wc, XIWDV_WC_VERIFY, "Verify of 64 KiB");
	check(!std::memcmp(&c.cli.mem[0], want.data(), 4),
	      "Verify of 64 KiB: digest");

	// Verify, sha256 (an MR that chose it)
	std::vector<uint8_t> shabuf(8192);
	for (size_t i = 0; i < shabuf.size(); i++)
		shabuf[i] = uint8_t(i ^ (i >> 8) ^ 0x5a);
	ibv_mr *smr = xiwdv_reg_mr(c.srv.pd, shabuf.data(), shabuf.size(),
				   IBV_ACCESS_REMOTE_READ,
				   XIWDV_DIGEST_SHA256);
	check(smr != nullptr, "xiwdv_reg_mr sha256");
	if (smr) {
		auto sw = sha256(&shabuf[100], 5000);

		if (c.post([&] {
			xiwdv_wr_verify(c.cli.qpx, smr->rkey,
					(uintptr_t)&shabuf[100], 5000,
					nullptr, 0);
			ibv_wr_set_sge(c.cli.qpx, c.cli.mr->lkey,
				       (uintptr_t)&c.cli.mem[0], 32);
		}))
			die("post verify sha256");
		wc = c.one();
		status_is(wc, XIWDV_WC_VERIFY, "Verify sha256");
		check(wc.byte_len == 32 &&
		      !std::memcmp(&c.cli.mem[0], sw.data(), 32),
		      "Verify sha256 digest " + hex(&c.cli.mem[0], 32) +
		      ", here " + hex(sw.data(), 32));
		// a known vector: SHA-256("abc")
		auto abc = sha256(reinterpret_cast<const uint8_t *>("abc"), 3);
		check(hex(abc.data(), 32) ==
		      "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
		      "sha256 here: the FIPS 180-2 'abc' vector");
		ibv_dereg_mr(smr);
	}
	errno = 0;
	ibv_mr *bad = xiwdv_reg_mr(c.srv.pd, shabuf.data(), shabuf.size(),
				   IBV_ACCESS_REMOTE_READ, (xiwdv_digest)9);
	check(!bad && errno == EINVAL, "xiwdv_reg_mr with digest 9: EINVAL");
	if (bad)
		ibv_dereg_mr(bad);

	// refused before anything is sent
	int rv = c.post([&] { ibv_wr_atomic_write(c.cli.qpx, c.srv.mr->rkey,
						  c.raddr(68), v); });
	check(rv == EINVAL, "misaligned Atomic Write: ibv_wr_complete " +
	      std::to_string(rv));
	rv = c.post([&] { xiwdv_wr_flush(c.cli.qpx, c.srv.mr->rkey,
					 c.raddr(0), 64, 0,
					 XIWDV_FLUSH_RANGE); });
	check(rv == EINVAL, "Flush without a type: ibv_wr_complete " +
	      std::to_string(rv));
	uint8_t h33[33] = {};
	rv = c.post([&] { xiwdv_wr_verify(c.cli.qpx, c.srv.mr->rkey,
					  c.raddr(0), 64, h33, 33); });
	check(rv == EINVAL, "Verify hash of 33 bytes: ibv_wr_complete " +
	      std::to_string(rv));
	errno = 0;
	bad = ibv_reg_mr(c.srv.pd, c.srv.mem.data(), 4096,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			 XIWDV_ACCESS_FLUSH_PERSISTENT);
	check(!bad && errno == EINVAL,
	      "IBV_ACCESS_FLUSH_PERSISTENT on DRAM: ibv_reg_mr fails, errno " +
	      std::to_string(errno));
	if (bad)
		ibv_dereg_mr(bad);
	// the QP still works after the local refusals
	if (c.post([&] { ibv_wr_atomic_write(c.cli.qpx, c.srv.mr->rkey,
					     c.raddr(64), v); }))
		die("post after refusals");
	status_is(c.one(), IBV_WC_ATOMIC_WRITE,
		  "Atomic Write after the refused ones");
	c.close();
}

// A request the peer refuses: status, vendor_err, the QP in ERROR.
void peer_error(cm_pair::Pair &pair, const std::string &what, int srv_access,
		unsigned want_status, uint32_t want_vendor,
		const std::function<void(Conn &)> &build)
{
	Conn c;

	c.open(pair, srv_access);
	if (c.post([&] { build(c); }))
		die(("post " + what).c_str());
	ibv_wc wc = c.one();
	char b[160];
	std::snprintf(b, sizeof(b),
		      "%s: status %s vendor_err %#x (want %s %#x)",
		      what.c_str(), ibv_wc_status_str(wc.status),
		      wc.vendor_err,
		      ibv_wc_status_str((ibv_wc_status)want_status),
		      want_vendor);
	check(wc.status == want_status && wc.vendor_err == want_vendor, b);
	ibv_qp_attr qa{};
	ibv_qp_init_attr qi{};
	ibv_query_qp(c.cli.id->qp, &qa, IBV_QP_STATE, &qi);
	check(qa.qp_state == IBV_QPS_ERR, what + ": requester QP in ERROR");
	c.close();
}

// ---- Verify as a scrub of persistent memory -----------------------------
//
// --poison-dax PATH GO: the server's MR is the first 4 MiB of the
// device-dax namespace PATH (two 2 MiB folios; the kernel marks a dax
// folio poisoned as a whole, the poisoned page is in the second), unmapped again once registered (the pages
// stay pinned by the MR; a process that maps a poisoned dax page is
// killed, and this one must live). A Verify of the first 64 KiB succeeds
// with the digest computed here; then "POISON offset=N" is printed and the
// program waits for the file GO, made once the test had the kernel mark
// the page at N poisoned (memory_failure()). A Verify of the first 4 KiB
// still succeeds; one across the page at N must complete with the
// Terminate of a failed execution (IBV_WC_REM_OP_ERR, RDMAP / Remote
// Operation / 0x07: vendor_err 0x0207), not crash the target's kernel.
constexpr size_t kDaxMap = 4 << 20;
constexpr size_t kPoisonOff = (2 << 20) + 256 * 1024;

int poison_dax(cm_pair::Pair &pair, const char *path, const char *go)
{
	int fd = open(path, O_RDWR);

	if (fd < 0)
		die("open dax");
	void *m = mmap(nullptr, kDaxMap, PROT_READ | PROT_WRITE, MAP_SHARED,
		       fd, 0);
	if (m == MAP_FAILED)
		die("mmap dax");
	auto *b = static_cast<uint8_t *>(m);
	for (size_t i = 0; i < kDaxMap; i++)
		b[i] = uint8_t(i * 13 + (i >> 12));
	std::vector<uint8_t> copy(b, b + kDaxMap);
	Conn c;

	c.open(pair, kAll, m, kDaxMap);
	c.base = (uintptr_t)m;
	munmap(m, kDaxMap);
	close(fd);

	auto verify = [&](size_t off, size_t len) {
		std::memset(&c.cli.mem[0], 0, 64);
		if (c.post([&] {
			xiwdv_wr_verify(c.cli.qpx, c.srv.mr->rkey,
					c.raddr(off), len, nullptr, 0);
			ibv_wr_set_sge(c.cli.qpx, c.cli.mr->lkey,
				       (uintptr_t)&c.cli.mem[0], 4);
		}))
			die("post verify");
		return c.one();
	};
	auto good = [&](size_t off, size_t len, const std::string &what) {
		ibv_wc wc = verify(off, len);
		auto want = crc32c_bytes(&copy[off], len);

		status_is(wc, XIWDV_WC_VERIFY, what);
		check(wc.status == IBV_WC_SUCCESS &&
		      !std::memcmp(&c.cli.mem[0], want.data(), 4),
		      what + ": digest " + hex(&c.cli.mem[0], 4) + ", here " +
		      hex(want.data(), 4));
	};

	good(0, 64 * 1024, "Verify of 64 KiB of pmem");
	std::printf("POISON offset=%zu\n", kPoisonOff);
	for (int i = 0; i < 600 && access(go, F_OK); i++)
		usleep(100 * 1000);
	if (access(go, F_OK))
		die("no go file");
	good(0, 4096, "Verify of a clean page after the poisoning");
	ibv_wc wc = verify(kPoisonOff - 4096, 3 * 4096);
	char t[160];
	std::snprintf(t, sizeof(t),
		      "Verify across the poisoned page: status %s vendor_err %#x (want %s 0x207)",
		      ibv_wc_status_str(wc.status), wc.vendor_err,
		      ibv_wc_status_str(IBV_WC_REM_OP_ERR));
	check(wc.status == IBV_WC_REM_OP_ERR && wc.vendor_err == 0x207, t);
	c.close();
	std::printf("%s: %d passed, %d failed\n", failures ? "FAIL" : "ok",
		    passes, failures);
	return failures ? 1 : 0;
}

} // namespace

int main(int argc, char **argv)
{
	setvbuf(stdout, nullptr, _IOLBF, 0);
	if (argc != 3 && !(argc == 6 && !std::strcmp(argv[3], "--poison-dax"))) {
		std::fprintf(stderr,
			     "usage: %s ADDR PORT [--poison-dax PATH GO]\n",
			     argv[0]);
		return 2;
	}
	cm_pair::Pair pair(argv[1], argv[2]);
	if (argc == 6)
		return poison_dax(pair, argv[4], argv[5]);
	good_ops(pair);

	const uint64_t val = 0x1122334455667788ULL;
	const int ro = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
		       XIWDV_ACCESS_FLUSH_GLOBAL;
	const int noflush = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			    IBV_ACCESS_REMOTE_READ;

	peer_error(pair, "Atomic Write to a read-only MR", ro,
		   IBV_WC_REM_ACCESS_ERR, 0x0102, [&](Conn &c) {
		ibv_wr_atomic_write(c.cli.qpx, c.srv.mr->rkey, c.raddr(64),
				    &val);
	});
	peer_error(pair, "Flush without the flush right", noflush,
		   IBV_WC_REM_ACCESS_ERR, 0x0102, [&](Conn &c) {
		xiwdv_wr_flush(c.cli.qpx, c.srv.mr->rkey, c.raddr(0), 64,
			       XIWDV_FLUSH_GLOBAL, XIWDV_FLUSH_RANGE);
	});
	peer_error(pair, "persistent Flush with only the global right", kAll,
		   IBV_WC_REM_ACCESS_ERR, 0x0102, [&](Conn &c) {
		xiwdv_wr_flush(c.cli.qpx, c.srv.mr->rkey, c.raddr(0), 64,
			       XIWDV_FLUSH_PERSISTENT, XIWDV_FLUSH_RANGE);
	});
	peer_error(pair, "Verify out of bounds", kAll, IBV_WC_REM_ACCESS_ERR,
		   0x0101, [&](Conn &c) {
		xiwdv_wr_verify(c.cli.qpx, c.srv.mr->rkey, c.raddr(kMem - 32),
				64, nullptr, 0);
	});
	peer_error(pair, "Verify with a wrong hash", kAll, IBV_WC_REM_OP_ERR,
		   0x02ff, [&](Conn &c) {
		const uint8_t h[4] = { 1, 2, 3, 4 };

		xiwdv_wr_verify(c.cli.qpx, c.srv.mr->rkey, c.raddr(0), 64, h,
				4);
	});
	std::printf("%s: %d passed, %d failed\n", failures ? "FAIL" : "ok",
		    passes, failures);
	return failures ? 1 : 0;
}
