// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// xiw_flushstall: long RDMA Flush and Verify requests must neither hold a
// CPU nor hold up the target's teardown. One process, two xiw devices: a
// requester (bound to SRC) and a target (ADDR) that registers --mib MiB
// (a device-dax mapping with --dax, else DRAM) once the connection is up.
// The requester posts --count requests of one case at once (IRD/ORD =
// --count):
//
//   region  Flush (persistent) of the whole MR: the R flag, Data Sink
//           Length 0 on the wire; the target flushes the MR's length
//   range   Flush (persistent) of the MR but its first and last byte:
//           the start is not page-aligned
//   verify  Verify (crc32c) of the MR but its first and last byte
//
// --after-ms later (-1: never; then all of them must succeed), while the target still works on them (checked: not
// all of them completed), the target deregisters the region, then
// disconnects and destroys its QP; each step is timed and must return
// within --bound-ms. Then every request must have completed: some
// executed (success), the one the deregistration cut short and every
// later one refused by a Terminate that names the STag (IBV_WC_REM_ACCESS_ERR,
// vendor_err 0x1xx: RDMAP, Remote Protection), or flushed once the
// connection ended (IBV_WC_WR_FLUSH_ERR), in that order, and at least one
// Terminate among them.
//
//   xiw_flushstall ADDR PORT SRC --case region|range|verify [--dax PATH]
//                  [--mib N] [--count K] [--after-ms T] [--bound-ms B]
//
// Prints "REG ms=", "DEREG ms=", "DISCONNECT ms=", "DESTROY ms=",
// "WC ..." per status and "ok ..."/"FAIL ..." lines. Exit 0 ok, 1 a check
// failed, 2 setup error, 4 skip (the device lacks persistent Flush).
#include "verbs_side.h"

#include <infiniband/xiwdv.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <string>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
using cm_pair::die;

int failures;

void check(bool ok, const std::string &what)
{
	std::printf("%s %s\n", ok ? "ok" : "FAIL", what.c_str());
	if (!ok)
		failures++;
}

double ms_since(Clock::time_point t0)
{
	return std::chrono::duration<double, std::milli>(Clock::now() - t0)
		.count();
}

bool has_cap(ibv_context *ctx, uint64_t want)
{
	ibv_device_attr_ex a{};

	if (ibv_query_device_ex(ctx, nullptr, &a))
		die("ibv_query_device_ex");
	return (a.device_cap_flags_ex & want) == want;
}

struct Opts {
	std::string addr, port, src, kase, dax;
	size_t mib = 256;
	unsigned count = 8;
	int after_ms = 300;
	int bound_ms = 1000;
};

void usage(const char *prog)
{
	std::fprintf(stderr,
		     "usage: %s ADDR PORT SRC --case region|range|verify "
		     "[--dax PATH] [--mib N] [--count K] [--after-ms T] "
		     "[--bound-ms B]\n", prog);
	std::exit(2);
}

Opts parse(int argc, char **argv)
{
	Opts o;
	std::vector<std::string> pos;

	for (int i = 1; i < argc; i++) {
		std::string a = argv[i];
		auto val = [&]() -> std::string {
			if (i + 1 >= argc)
				usage(argv[0]);
			return argv[++i];
		};
		if (a == "--case")
			o.kase = val();
		else if (a == "--dax")
			o.dax = val();
		else if (a == "--mib")
			o.mib = std::stoul(val());
		else if (a == "--count")
			o.count = std::stoul(val());
		else if (a == "--after-ms")
			o.after_ms = std::stoi(val());
		else if (a == "--bound-ms")
			o.bound_ms = std::stoi(val());
		else if (!a.empty() && a[0] == '-')
			usage(argv[0]);
		else
			pos.push_back(a);
	}
	if (pos.size() != 3 || (o.kase != "region" && o.kase != "range" &&
				o.kase != "verify") ||
	    !o.count || o.count > 128 || !o.mib || o.mib > (1u << 20) ||
	    o.after_ms < -1 ||
	    (o.kase != "region" && (o.mib << 20) - 2 > UINT32_MAX))
		usage(argv[0]);
	o.addr = pos[0];
	o.port = pos[1];
	o.src = pos[2];
	return o;
}

} // namespace

int main(int argc, char **argv)
{
	setvbuf(stdout, nullptr, _IOLBF, 0);
	Opts o = parse(argc, argv);
	size_t len = o.mib << 20;
	bool flush = o.kase != "verify";
	uint8_t *mem;

	if (!o.dax.empty()) {
		int fd = open(o.dax.c_str(), O_RDWR);

		if (fd < 0)
			die(o.dax.c_str());
		void *m = mmap(nullptr, len, PROT_READ | PROT_WRITE,
			       MAP_SHARED, fd, 0);
		if (m == MAP_FAILED)
			die("mmap of the dax device");
		close(fd);
		mem = (uint8_t *)m;
	} else {
		void *m = mmap(nullptr, len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		if (m == MAP_FAILED)
			die("mmap");
		mem = (uint8_t *)m;
	}
	// DRAM: something other than zero pages to digest (device-dax is
	// left untouched: every page written would be a page of the
	// NVDIMM's file on the host)
	for (size_t i = 0; o.dax.empty() && i < len; i += 4096)
		mem[i] = uint8_t(i >> 12);

	cm_pair::Pair pair(o.addr.c_str(), o.port.c_str(), o.src.c_str());
	cm_pair::Side req, tgt;
	rdma_conn_param p{};
	p.initiator_depth = o.count;
	p.responder_resources = o.count;
	cm_pair::SideOpts ro, to;
	ro.depth = o.count + 4;
	ro.mem_bytes = 4096;
	ro.send_ops_flags = IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_RDMA_WRITE;
	to.mem_bytes = 4096;
	req.id = pair.connect([&](rdma_cm_id *c) { req.setup(c, ro); },
			      [&](rdma_cm_id *c) { tgt.setup(c, to); }, p, p,
			      &tgt.id);
	if (!xiwdv_is_xiw_context(req.id->verbs))
		die("not an xiw device");
	if (flush && !has_cap(tgt.id->verbs, XIWDV_DEVICE_FLUSH_PERSISTENT)) {
		std::printf("SKIP the device does not report persistent Flush\n");
		return 4;
	}

	// Registered once the connection is up: pinning hundreds of MiB
	// under TCG outlasts the peer's MPA reply timer.
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		     IBV_ACCESS_REMOTE_READ;
	if (flush)
		access |= XIWDV_ACCESS_FLUSH_PERSISTENT |
			  XIWDV_ACCESS_FLUSH_GLOBAL;
	auto t0 = Clock::now();
	ibv_mr *mr = xiwdv_reg_mr(tgt.pd, mem, len, access,
				  XIWDV_DIGEST_CRC32C);
	if (!mr)
		die("register the region");
	std::printf("REG ms=%.1f mib=%zu dax=%d\n", ms_since(t0), o.mib,
		    !o.dax.empty());

	// all requests in one post: the target has them all in its IRQ
	uint64_t base = (uintptr_t)mem;
	ibv_wr_start(req.qpx);
	for (unsigned i = 0; i < o.count; i++) {
		req.qpx->wr_id = i;
		req.qpx->wr_flags = IBV_SEND_SIGNALED;
		if (o.kase == "region") {
			xiwdv_wr_flush(req.qpx, mr->rkey, 0, 0,
				       XIWDV_FLUSH_PERSISTENT, XIWDV_FLUSH_MR);
		} else if (o.kase == "range") {
			xiwdv_wr_flush(req.qpx, mr->rkey, base + 1, len - 2,
				       XIWDV_FLUSH_PERSISTENT,
				       XIWDV_FLUSH_RANGE);
		} else {
			xiwdv_wr_verify(req.qpx, mr->rkey, base + 1,
					(uint32_t)(len - 2), nullptr, 0);
			ibv_wr_set_sge(req.qpx, req.mr->lkey,
				       (uintptr_t)req.mem.data(), 32);
		}
	}
	t0 = Clock::now();
	if (ibv_wr_complete(req.qpx))
		die("post the requests");

	if (o.after_ms < 0) {
		// no teardown: all of them must execute
		std::vector<ibv_wc> all = req.poll(o.count, 120000);
		unsigned good = 0;

		for (const ibv_wc &wc : all)
			good += wc.status == IBV_WC_SUCCESS;
		std::printf("ALL ms=%.1f completed=%zu success=%u\n",
			    ms_since(t0), all.size(), good);
		check(good == o.count, std::to_string(good) + " of " +
		      std::to_string(o.count) + " requests executed");
		ibv_dereg_mr(mr);
		rdma_disconnect(req.id);
		std::printf("%s: %d failure(s)\n", failures ? "FAIL" : "ok",
			    failures);
		return failures ? 1 : 0;
	}
	std::this_thread::sleep_for(std::chrono::milliseconds(o.after_ms));
	std::vector<ibv_wc> wcs = req.poll(o.count, 0);
	std::printf("BEFORE_DEREG completed=%zu of %u after %.1f ms\n",
		    wcs.size(), o.count, ms_since(t0));
	if (wcs.size() == o.count) {
		check(false, "the requests ended before the deregistration: "
		      "nothing was measured (a larger --mib or --count)");
		return 1;
	}

	// the target lets go of everything while the requests run
	char buf[160];
	auto step = [&](const char *name, const std::function<int()> &fn) {
		auto s = Clock::now();
		int rv = fn();
		double ms = ms_since(s);

		std::printf("%s ms=%.1f rv=%d\n", name, ms, rv);
		std::snprintf(buf, sizeof(buf), "%s returned %d in %.1f ms (bound %d ms)",
			      name, rv, ms, o.bound_ms);
		check(!rv && ms < o.bound_ms, buf);
	};
	step("DEREG", [&] { return ibv_dereg_mr(mr); });
	step("DISCONNECT", [&] { return rdma_disconnect(tgt.id); });
	step("DESTROY", [&] { rdma_destroy_qp(tgt.id); return 0; });

	// every request answered: successes, then Terminates / flushes
	std::vector<ibv_wc> rest = req.poll(o.count - wcs.size(), 30000);
	wcs.insert(wcs.end(), rest.begin(), rest.end());
	std::map<std::string, unsigned> seen;
	unsigned ok = 0, terms = 0, flushed = 0, other = 0;
	bool order = true;
	for (const ibv_wc &wc : wcs) {
		std::snprintf(buf, sizeof(buf), "%s vendor_err=%#x",
			      ibv_wc_status_str(wc.status), wc.vendor_err);
		seen[buf]++;
		if (wc.status == IBV_WC_SUCCESS) {
			order &= !terms && !flushed;
			ok++;
		} else if (wc.status == IBV_WC_REM_ACCESS_ERR &&
			   (wc.vendor_err & 0xff00) == 0x100) {
			order &= !flushed;
			terms++;
		} else if (wc.status == IBV_WC_WR_FLUSH_ERR) {
			flushed++;
		} else {
			other++;
		}
	}
	for (auto &[what, n] : seen)
		std::printf("WC %u x %s\n", n, what.c_str());
	std::snprintf(buf, sizeof(buf), "%zu of %u requests completed",
		      wcs.size(), o.count);
	check(wcs.size() == o.count, buf);
	std::snprintf(buf, sizeof(buf),
		      "%u executed, %u refused by a Terminate (STag), %u flushed, %u other",
		      ok, terms, flushed, other);
	check(terms >= 1 && !other && order, buf);

	rdma_disconnect(req.id);
	rdma_destroy_qp(req.id);
	std::printf("%s: %d failure(s)\n", failures ? "FAIL" : "ok", failures);
	return failures ? 1 : 0;
}
