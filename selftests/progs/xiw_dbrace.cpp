// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// xiw_dbrace: lifetime races of the QP doorbell object
// (kernel/xiw_doorbell.c: the doorbell is allocated once, replaced
// only when closed, and gone with its QP).
//
//   xiw_dbrace DEV [--rounds N] [--threads T]
//                  [--connect ADDR PORT [--conn-rounds M]]
//
// Every round creates a user QP on DEV and then:
//
// * racing allocation: T threads released at the same instant each ask
//   for the QP's doorbell (XIW_METHOD_DOORBELL_ALLOC). Exactly one may
//   get it, the others must see EEXIST. Every second round the winner's
//   file is then closed and T threads race again to replace it: again
//   exactly one winner (a closed doorbell is replaced once, never twice).
// * posting + destroy: T threads write the doorbell files that were
//   handed out (all of them, also any the kernel should not have handed
//   out) in a loop while the main thread destroys the QP. A write that
//   starts after destroy_qp returned must fail with ENXIO; none may
//   succeed, none may touch the freed QP (the VM runs with KFENCE and the
//   bench fails the test on any KFENCE, refcount_t or BUG report).
//
// With --connect the QP of each of M further rounds is connected over
// rdma_cm to a second QP of this process on ADDR:PORT, and the main
// thread posts RDMA Writes right up to the destroy, so the doorbells run
// a live TX engine when the QP goes.
//
// The program sets XIW_LEGACY_DOORBELL=1 so that libxiw leaves the
// doorbell objects to it (the provider then uses its compatibility
// doorbell, see Documentation/user-abi.md).
//
// Output: "ok ..." / "FAIL ..." lines and a summary; exit 0 only if every
// check passed.
#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_user_ioctl_cmds.h>
#include <rdma/xiw-abi.h>

#include "doorbell_ioctl.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "cm_pair.h"

namespace {

int failures;
unsigned max_fail_lines = 20;

void check(bool ok, const std::string &what)
{
	if (ok)
		return;
	failures++;
	if (max_fail_lines) {
		max_fail_lines--;
		std::printf("FAIL %s\n", what.c_str());
	}
}

[[noreturn]] void die(const char *what)
{
	std::fprintf(stderr, "%s: %s\n", what, std::strerror(errno));
	std::exit(2);
}

// Run @fn(i) in @n threads released together; their results in order.
template <typename Fn> std::vector<int> race(unsigned n, Fn fn)
{
	std::vector<int> res(n);
	std::vector<std::thread> th;
	std::atomic<unsigned> ready{ 0 };
	std::atomic<bool> go{ false };

	for (unsigned i = 0; i < n; i++)
		th.emplace_back([&, i] {
			ready.fetch_add(1);
			while (!go.load(std::memory_order_acquire))
				;
			res[i] = fn(i);
		});
	while (ready.load() != n)
		std::this_thread::yield();
	go.store(true, std::memory_order_release);
	for (auto &t : th)
		t.join();
	return res;
}

struct Stats {
	unsigned long rounds, won, eexist, other, replaced;
	unsigned long writes_ok, writes_enxio, late_ok, late_other;
};
Stats st;

// Exactly one of @res must be an fd, the others -EEXIST; the fds are
// appended to @fds.
void judge_alloc(const std::vector<int> &res, std::vector<int> &fds,
		 const char *what, unsigned round)
{
	unsigned won = 0;

	for (int r : res) {
		if (r >= 0) {
			won++;
			fds.push_back(r);
		} else if (r == -EEXIST) {
			st.eexist++;
		} else {
			st.other++;
			check(false, std::string(what) + ": unexpected error " +
				     std::strerror(-r));
		}
	}
	st.won += won;
	check(won == 1, std::string(what) + " round " + std::to_string(round) +
				": " + std::to_string(won) +
				" threads got the QP's doorbell (expected 1)");
}

// T threads write @fds (round robin) until told to stop, while the main
// thread runs @destroy. A write begun after @destroy returned must fail
// with ENXIO.
template <typename Fn>
void kick_while_destroying(unsigned nthreads, const std::vector<int> &fds,
			   Fn destroy)
{
	std::atomic<bool> destroyed{ false }, stop{ false };
	std::atomic<unsigned> started{ 0 };
	std::atomic<unsigned long> ok{ 0 }, enxio{ 0 }, late_ok{ 0 },
		late_other{ 0 };
	std::vector<std::thread> th;

	for (unsigned i = 0; i < nthreads; i++)
		th.emplace_back([&, i] {
			unsigned k = i, after = 0;

			started.fetch_add(1);
			// keep going for a while after the destroy
			while (!stop.load(std::memory_order_acquire) ||
			       after < 50) {
				bool late = destroyed.load(
					std::memory_order_acquire);
				int fd = fds[k++ % fds.size()];
				ssize_t w = write(fd, "", 0);
				int err = errno;

				if (w == 0)
					ok++;
				else if (err == ENXIO)
					enxio++;
				if (late) {
					after++;
					if (w == 0)
						late_ok++;
					else if (err != ENXIO)
						late_other++;
				}
			}
		});
	while (started.load() != nthreads)
		std::this_thread::yield();
	// let the writers get going
	usleep(2000);
	destroy();
	destroyed.store(true, std::memory_order_release);
	stop.store(true, std::memory_order_release);
	for (auto &t : th)
		t.join();
	st.writes_ok += ok;
	st.writes_enxio += enxio;
	st.late_ok += late_ok;
	st.late_other += late_other;
	check(late_ok == 0, std::to_string(late_ok) +
				    " doorbell writes after destroy_qp succeeded");
	check(late_other == 0, std::to_string(late_other) +
				       " doorbell writes after destroy_qp failed "
				       "with something else than ENXIO");
	// and once more, single-threaded, on every file
	for (int fd : fds) {
		errno = 0;
		ssize_t w = write(fd, "", 0);

		check(w < 0 && errno == ENXIO,
		      "doorbell write after destroy_qp: " +
			      std::string(w < 0 ? std::strerror(errno) :
						  "succeeded"));
	}
}

void close_all(std::vector<int> &fds)
{
	for (int fd : fds)
		check(close(fd) == 0, "close of a doorbell file");
	fds.clear();
}

// One round on @qp: race, maybe replace, then kick while @destroy runs.
template <typename Fn>
void one_round(ibv_context *ctx, ibv_qp *qp, unsigned nthreads,
	       unsigned round, Fn destroy)
{
	std::vector<int> fds;
	uint32_t h = qp->handle;

	st.rounds++;
	judge_alloc(race(nthreads, [&](unsigned) { return alloc_doorbell(ctx, h); }),
		    fds, "racing allocation", round);
	if (round % 2) {
		close_all(fds);
		judge_alloc(race(nthreads,
				 [&](unsigned) { return alloc_doorbell(ctx, h); }),
			    fds, "racing replacement of a closed doorbell",
			    round);
		st.replaced++;
	}
	if (fds.empty()) {
		destroy();
		return;
	}
	kick_while_destroying(nthreads, fds, destroy);
	close_all(fds);
}

struct Verbs {
	ibv_context *ctx;
	ibv_pd *pd;
	ibv_cq *cq;

	explicit Verbs(const char *name)
	{
		int num = 0;
		ibv_device **list = ibv_get_device_list(&num);
		ibv_device *dev = nullptr;

		if (!list)
			die("ibv_get_device_list");
		for (int i = 0; i < num; i++)
			if (!std::strcmp(ibv_get_device_name(list[i]), name))
				dev = list[i];
		if (!dev) {
			std::fprintf(stderr, "no device %s\n", name);
			std::exit(2);
		}
		ctx = ibv_open_device(dev);
		ibv_free_device_list(list);
		if (!ctx)
			die("ibv_open_device");
		pd = ibv_alloc_pd(ctx);
		cq = ibv_create_cq(ctx, 64, nullptr, nullptr, 0);
		if (!pd || !cq)
			die("pd/cq");
	}

	ibv_qp *create_qp()
	{
		ibv_qp_init_attr a{};

		a.qp_type = IBV_QPT_RC;
		a.send_cq = cq;
		a.recv_cq = cq;
		a.cap.max_send_wr = 16;
		a.cap.max_recv_wr = 16;
		a.cap.max_send_sge = 1;
		a.cap.max_recv_sge = 1;
		ibv_qp *qp = ibv_create_qp(pd, &a);
		if (!qp)
			die("ibv_create_qp");
		return qp;
	}
};

struct Side {
	rdma_cm_id *id = nullptr;
	ibv_pd *pd = nullptr;
	ibv_cq *cq = nullptr;
	ibv_mr *mr = nullptr;
	std::vector<char> mem = std::vector<char>(64 * 1024);

	void setup(rdma_cm_id *cid)
	{
		id = cid;
		pd = ibv_alloc_pd(id->verbs);
		cq = ibv_create_cq(id->verbs, 512, nullptr, nullptr, 0);
		if (!pd || !cq)
			die("pd/cq");
		ibv_qp_init_attr a{};
		a.qp_type = IBV_QPT_RC;
		a.send_cq = cq;
		a.recv_cq = cq;
		a.cap.max_send_wr = 256;
		a.cap.max_recv_wr = 4;
		a.cap.max_send_sge = 1;
		a.cap.max_recv_sge = 1;
		if (rdma_create_qp(id, pd, &a))
			die("rdma_create_qp");
		mr = ibv_reg_mr(pd, mem.data(), mem.size(),
				IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
		if (!mr)
			die("ibv_reg_mr");
	}

	void teardown()
	{
		if (id->qp)
			rdma_destroy_qp(id);
		ibv_dereg_mr(mr);
		ibv_destroy_cq(cq);
		ibv_dealloc_pd(pd);
		rdma_destroy_id(id);
	}
};

// Post @n unsignaled 4 KiB RDMA Writes (the last signaled) into a
// connected QP without waiting for them.
void post_writes(Side &cli, uint64_t raddr, uint32_t rkey, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		ibv_sge sge{ (uintptr_t)cli.mem.data(), 4096, cli.mr->lkey };
		ibv_send_wr wr{}, *bad;

		wr.wr_id = i;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_RDMA_WRITE;
		wr.send_flags = i + 1 == n ? IBV_SEND_SIGNALED : 0;
		wr.wr.rdma.remote_addr = raddr + (i % 16) * 4096;
		wr.wr.rdma.rkey = rkey;
		if (ibv_post_send(cli.id->qp, &wr, &bad))
			break;	// SQ full: enough is in flight
	}
}

} // namespace

int main(int argc, char **argv)
{
	if (argc < 2) {
		std::fprintf(stderr, "usage: xiw_dbrace DEV [--rounds N] [--threads T] "
			     "[--connect ADDR PORT [--conn-rounds M]]\n");
		return 2;
	}
	unsigned rounds = 200, nthreads = 4, conn_rounds = 10;
	const char *addr = nullptr, *port = nullptr;
	for (int i = 2; i < argc; i++) {
		std::string a = argv[i];

		if (a == "--rounds" && i + 1 < argc)
			rounds = std::stoul(argv[++i]);
		else if (a == "--threads" && i + 1 < argc)
			nthreads = std::stoul(argv[++i]);
		else if (a == "--conn-rounds" && i + 1 < argc)
			conn_rounds = std::stoul(argv[++i]);
		else if (a == "--connect" && i + 2 < argc) {
			addr = argv[++i];
			port = argv[++i];
		} else {
			std::fprintf(stderr, "xiw_dbrace: bad argument %s\n", a.c_str());
			return 2;
		}
	}
	if (nthreads < 2)
		nthreads = 2;
	setvbuf(stdout, nullptr, _IOLBF, 0);
	// libxiw must leave the doorbell objects to us
	setenv("XIW_LEGACY_DOORBELL", "1", 1);

	Verbs v(argv[1]);
	for (unsigned r = 0; r < rounds; r++) {
		ibv_qp *qp = v.create_qp();

		one_round(v.ctx, qp, nthreads, r, [&] {
			if (ibv_destroy_qp(qp))
				die("ibv_destroy_qp");
		});
	}
	std::printf("unconnected: %lu rounds (%lu with a replacement), %lu doorbells "
		    "handed out, %lu EEXIST, %lu writes ok, %lu ENXIO\n",
		    st.rounds, st.replaced, st.won, st.eexist, st.writes_ok,
		    st.writes_enxio);

	if (addr) {
		Stats before = st;
		cm_pair::Pair pair(addr, port);
		rdma_conn_param p{}, a{};

		p.initiator_depth = a.initiator_depth = 1;
		p.responder_resources = a.responder_resources = 1;
		for (unsigned r = 0; r < conn_rounds; r++) {
			Side cli, srv;
			rdma_cm_id *pid;

			pair.connect([&](rdma_cm_id *id) { cli.setup(id); },
				     [&](rdma_cm_id *id) { srv.setup(id); },
				     p, a, &pid);
			uint64_t raddr = (uintptr_t)srv.mem.data();
			uint32_t rkey = srv.mr->rkey;

			one_round(cli.id->verbs, cli.id->qp, nthreads, r, [&] {
				post_writes(cli, raddr, rkey, 200);
				rdma_destroy_qp(cli.id);
			});
			cli.teardown();
			// events not fetched yet die with their ids
			srv.teardown();
		}
		std::printf("connected: %lu rounds, %lu doorbells handed out, "
			    "%lu writes ok, %lu ENXIO\n",
			    st.rounds - before.rounds, st.won - before.won,
			    st.writes_ok - before.writes_ok,
			    st.writes_enxio - before.writes_enxio);
	}
	std::printf("%s (%d failed checks)\n", failures ? "FAIL" : "ok", failures);
	return failures ? 1 : 0;
}
