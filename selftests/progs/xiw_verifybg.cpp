// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// xiw_verifybg: a long RDMA Verify in the background must not stall other
// QPs. Two connections between two xiw devices of one process:
//
//   A  posts one RDMA Verify (xiwdv_wr_verify) of --mib MiB of the peer's
//      memory, crc32c, digest returned;
//   B  runs 8-byte RDMA Reads one after another the whole time.
//
// The responder digests A's range in its exec work (process context,
// yielding every MiB), not in RX or TX, so B's Reads keep being answered.
// Checks: the digest equals a crc32c computed here over the same bytes;
// B completed Reads while the Verify ran, and none of them waited longer
// than a quarter of the Verify's duration (a stall for its length would).
// Prints B's median/p99/max before and during the Verify.
//
// With --unbind, A verifies through a type 1 memory window over the
// region, and the responder's consumer unbinds the window (a bind of
// length 0) while the Verify runs: the Verify must then end with
// IBV_WC_REM_ACCESS_ERR, no digest, since no byte may be read through the
// window once its unbind completed; B is unaffected.
//
//   xiw_verifybg ADDR PORT [--mib N] [--unbind]
//
// Exit 0 ok, 1 a check failed, 2 setup error.
#include "digests.h"
#include "verbs_side.h"

#include <infiniband/xiwdv.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
using cm_pair::die;
using digests::crc32c;

int failures;

void check(bool ok, const std::string &what)
{
	std::printf("%s %s\n", ok ? "ok" : "FAIL", what.c_str());
	if (!ok)
		failures++;
}

struct Stats {
	double p50, p99, max;
	size_t n;
};

Stats stats(std::vector<double> v)
{
	Stats s{0, 0, 0, v.size()};

	if (v.empty())
		return s;
	std::sort(v.begin(), v.end());
	s.p50 = v[v.size() / 2];
	s.p99 = v[std::min(v.size() - 1, v.size() * 99 / 100)];
	s.max = v.back();
	return s;
}

// Bytes all Verifies of the module digested so far (debugfs).
uint64_t verify_bytes()
{
	FILE *f = std::fopen("/sys/kernel/debug/xiw/commit_stats", "r");
	char name[64];
	unsigned long long v, got = 0;

	if (!f)
		die("open /sys/kernel/debug/xiw/commit_stats");
	while (std::fscanf(f, "%63s %llu", name, &v) == 2)
		if (!std::strcmp(name, "verify_bytes"))
			got = v;
	std::fclose(f);
	return got;
}

} // namespace

int main(int argc, char **argv)
{
	setvbuf(stdout, nullptr, _IOLBF, 0);
	size_t mib = 64;
	bool unbind = false;

	for (int i = 3; i < argc; i++) {
		std::string a = argv[i];

		if (a == "--mib" && i + 1 < argc) {
			mib = std::stoul(argv[++i]);
		} else if (a == "--unbind") {
			unbind = true;
		} else {
			std::fprintf(stderr, "usage: %s ADDR PORT [--mib N] [--unbind]\n",
				     argv[0]);
			return 2;
		}
	}
	if (argc < 3) {
		std::fprintf(stderr, "usage: %s ADDR PORT [--mib N] [--unbind]\n",
			     argv[0]);
		return 2;
	}
	size_t big = mib << 20;
	cm_pair::Pair pair(argv[1], argv[2]);
	cm_pair::SideT<uint8_t> a_cli, a_srv, b_cli, b_srv;
	rdma_conn_param p{};
	rdma_cm_id *pass;

	p.initiator_depth = 4;
	p.responder_resources = 4;
	cm_pair::SideOpts va;
	va.send_ops_flags = IBV_QP_EX_WITH_RDMA_READ;
	va.mem_bytes = 4096;
	// The verified region is registered once the connection is up: with
	// a GiB, zeroing and pinning it under TCG outlasts the peer's MPA
	// reply timer if done between the request and rdma_accept.
	a_cli.id = pair.connect([&](rdma_cm_id *c) { a_cli.setup(c, va); },
				[&](rdma_cm_id *c) { a_srv.setup(c, va); }, p,
				p, &pass);
	cm_pair::SideOpts lo;
	lo.mem_bytes = 4096;
	b_cli.id = pair.connect([&](rdma_cm_id *c) { b_cli.setup(c, lo); },
				[&](rdma_cm_id *c) { b_srv.setup(c, lo); }, p,
				p, &pass);
	if (!xiwdv_is_xiw_context(a_cli.id->verbs))
		die("not an xiw device");

	// the verified bytes: a pattern no two MiB share
	std::vector<uint8_t> region(big);
	for (size_t i = 0; i < big; i += 8) {
		uint64_t v = (i * 0x9e3779b97f4a7c15ULL) ^ (i >> 20);

		std::memcpy(&region[i], &v, 8);
	}
	uint32_t want = crc32c(region.data(), big);
	ibv_mr *region_mr = ibv_reg_mr(a_srv.pd, region.data(), big,
				       IBV_ACCESS_LOCAL_WRITE |
				       IBV_ACCESS_REMOTE_READ |
				       (unbind ? IBV_ACCESS_MW_BIND : 0));
	if (!region_mr)
		die("register the verified region");
	uint32_t rkey = region_mr->rkey;
	ibv_mw *mw = nullptr;
	// the responder's consumer binds (len > 0) or unbinds its window
	auto bind = [&](uint64_t len) {
		ibv_mw_bind b{};

		b.wr_id = 11;
		b.send_flags = IBV_SEND_SIGNALED;
		b.bind_info.mr = region_mr;
		b.bind_info.addr = (uintptr_t)region.data();
		b.bind_info.length = len;
		b.bind_info.mw_access_flags = len ? IBV_ACCESS_REMOTE_READ : 0;
		if (ibv_bind_mw(a_srv.id->qp, mw, &b))
			die("ibv_bind_mw");
		return a_srv.poll_ok(60000);
	};
	if (unbind) {
		mw = ibv_alloc_mw(a_srv.pd, IBV_MW_TYPE_1);
		if (!mw)
			die("ibv_alloc_mw");
		bind(big);
		rkey = mw->rkey;
	}

	auto read_once = [&]() {
		auto t0 = Clock::now();

		if (b_cli.post(IBV_WR_RDMA_READ, 1, b_cli.mem.data(), 8, true,
			       (uintptr_t)b_srv.mem.data(), b_srv.mr->rkey))
			die("post read");
		b_cli.poll_ok(60000);
		return std::chrono::duration<double, std::micro>(Clock::now() -
								 t0).count();
	};

	std::vector<double> before, during;
	for (int i = 0; i < 200; i++)
		before.push_back(read_once());

	uint64_t vb0 = verify_bytes();
	ibv_wr_start(a_cli.qpx);
	a_cli.qpx->wr_id = 7;
	a_cli.qpx->wr_flags = IBV_SEND_SIGNALED;
	xiwdv_wr_verify(a_cli.qpx, rkey, (uintptr_t)region.data(),
			(uint32_t)big, nullptr, 0);
	ibv_wr_set_sge(a_cli.qpx, a_cli.mr->lkey,
		       (uintptr_t)a_cli.mem.data(), 32);
	auto v0 = Clock::now();
	if (ibv_wr_complete(a_cli.qpx))
		die("post verify");

	ibv_wc vwc{};
	bool done = false;
	if (unbind) {
		// the responder is digesting: 4 MiB of it counted already
		// (debugfs commit_stats), so the unbind lands mid-way
		auto v_start = Clock::now();
		while (verify_bytes() - vb0 < (4u << 20) &&
		       Clock::now() - v_start < std::chrono::seconds(60))
			during.push_back(read_once());
		std::printf("DIGESTED %llu bytes before the unbind\n",
			    (unsigned long long)(verify_bytes() - vb0));
		done = ibv_poll_cq(a_cli.cq, 1, &vwc) == 1;
		check(!done, "the Verify was still running when the window was unbound");
		ibv_wc uwc = bind(0);
		double ums = std::chrono::duration<double, std::milli>(Clock::now() -
								       v0).count();

		check(uwc.status == IBV_WC_SUCCESS,
		      std::string("unbind status ") + ibv_wc_status_str(uwc.status));
		std::printf("UNBOUND after %.1f ms\n", ums);
	}
	while (!done) {
		during.push_back(read_once());
		int n = ibv_poll_cq(a_cli.cq, 1, &vwc);

		if (n < 0)
			die("poll");
		done = n == 1;
		if (Clock::now() - v0 > std::chrono::seconds(600))
			die("Verify did not complete in 600 s");
	}
	double vus = std::chrono::duration<double, std::micro>(Clock::now() -
							       v0).count();
	// the last Read overlapped the completion: it does not count
	during.pop_back();

	if (unbind) {
		// nothing is read through the window once its unbind completed
		check(vwc.status == IBV_WC_REM_ACCESS_ERR,
		      std::string("Verify through the unbound window: ") +
		      ibv_wc_status_str(vwc.status));
		std::printf("VERIFY mib=%zu ended after %.1f ms\n", mib,
			    std::chrono::duration<double, std::milli>(Clock::now() -
								      v0).count());
		check(b_cli.post(IBV_WR_RDMA_READ, 1, b_cli.mem.data(), 8, true,
				 (uintptr_t)b_srv.mem.data(), b_srv.mr->rkey) == 0 &&
		      b_cli.poll_ok(60000).status == IBV_WC_SUCCESS,
		      "the other QP still reads");
		std::printf("%s: %d failure(s)\n", failures ? "FAIL" : "ok",
			    failures);
		rdma_disconnect(a_cli.id);
		rdma_disconnect(b_cli.id);
		ibv_dealloc_mw(mw);
		ibv_dereg_mr(region_mr);
		return failures ? 1 : 0;
	}
	check(vwc.status == IBV_WC_SUCCESS, std::string("Verify status ") +
	      ibv_wc_status_str(vwc.status));
	check(vwc.opcode == XIWDV_WC_VERIFY && vwc.byte_len == 4,
	      "Verify completion opcode " + std::to_string(vwc.opcode) +
	      " byte_len " + std::to_string(vwc.byte_len));
	uint8_t got[4];
	std::memcpy(got, a_cli.mem.data(), 4);
	uint32_t g = got[0] | got[1] << 8 | got[2] << 16 | (uint32_t)got[3] << 24;
	char buf[128];
	std::snprintf(buf, sizeof(buf), "digest %08x, computed here %08x", g,
		      want);
	check(g == want, buf);

	Stats sb = stats(before), sd = stats(during);
	std::printf("VERIFY mib=%zu ms=%.1f MBps=%.1f\n", mib, vus / 1000,
		    big / vus);
	std::printf("READS before n=%zu p50=%.1f p99=%.1f max=%.1f us\n", sb.n,
		    sb.p50, sb.p99, sb.max);
	std::printf("READS during n=%zu p50=%.1f p99=%.1f max=%.1f us\n", sd.n,
		    sd.p50, sd.p99, sd.max);
	check(sd.n >= 10, "other QP completed " + std::to_string(sd.n) +
	      " Reads while the Verify ran");
	std::snprintf(buf, sizeof(buf),
		      "longest Read during the Verify %.0f us < a quarter of its %.0f us",
		      sd.max, vus);
	check(sd.max < vus / 4, buf);

	std::printf("%s: %d failure(s)\n", failures ? "FAIL" : "ok", failures);
	rdma_disconnect(a_cli.id);
	rdma_disconnect(b_cli.id);
	ibv_dereg_mr(region_mr);
	return failures ? 1 : 0;
}
