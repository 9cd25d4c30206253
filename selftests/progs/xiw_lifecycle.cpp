// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// xiw_lifecycle: QP lifecycle edges that must not leave a connection half
// alive or a work request without a completion.
//
//   reset ADDR PORT
//	Connect two QPs, move the passive one to RESET with ibv_modify_qp,
//	then let the active side RDMA Write into the passive side's region
//	and RDMA Read it. A QP in RESET has no connection: the region must
//	stay untouched, the Write/Read must not complete successfully, and
//	the active side must learn that the connection is gone
//	(RDMA_CM_EVENT_DISCONNECTED) within 20 s.
//
//   flushrace ADDR PORT ROUNDS
//	ROUNDS connections; in each, a thread posts signaled Sends as fast
//	as it can while the main thread moves the QP to ERROR after a few
//	milliseconds. Every posted WR must complete, successfully or with
//	WR_FLUSH_ERR, within 20 s: a WR taken by TX after the flush started
//	must not be lost.
//
//   qpaccess ADDR PORT
//	QP access flags narrowed after connect: Write, Read and FetchAdd
//	that they do not allow are refused with memory untouched; what
//	rdma_cm grants (REMOTE_WRITE|REMOTE_READ) allows atomics.
//
//   victim ADDR PORT / thief ADDR PORT QPN
//	A QP of one process named by another in connect and accept: both
//	refused, the victim's QP untouched.
//
//   srqpd ADDR PORT
//	A QP in one PD with an SRQ in another: the SRQ's receive buffers
//	(registered in the SRQ's PD) take a Send.
//
//   sgelimit ADDR PORT
//	Both QPs created with one SGE per WR: 2-SGE sends (alone, second
//	in a chain, inline), a 2-SGE ibv_wr_set_sge_list() batch, 2-SGE
//	receives on the QP and on an SRQ of max_sge 1 all fail their post
//	with EINVAL (bad_wr at the WR); the connection then still carries
//	a Send and Writes, every byte checked.
//
//   conns ADDR PORT N [step|go [DEPTH]]
//	N connections of queue depth DEPTH (16) one after the other, each
//	used by a Write each way (the process locks its memory first);
//	"CONN i" after each (with "step": then a line from stdin before the
//	next), "HOLD" after all; torn down when stdin closes ("FREED"). For
//	a test that watches the memory cgroup of the process.
//
//   accepter ADDR PORT N / connector ADDR PORT N
//	The passive side with N QPs created before any connection, which
//	it then accepts requests with, one by one ("READY", a line from
//	stdin, then "CONN i" or "FAILED i: why"); and the active side, in
//	another process ("CONN i" or "REFUSED i: event"). For a test that
//	limits the memory cgroup of the passive side only.
//
//   cycle ADDR PORT N
//	N connections set up and torn down in turn: "CYCLE i ms=..." each,
//	"WORST ms=..." at the end.
//
//   traffic ADDR PORT SECONDS [SRC]
//	Sends and Writes in a window of 64 until a fault (made by the test)
//	ends the connection; then every WR posted must have completed. With
//	SRC the active (posting) side binds to that address, i.e. its own
//	device. When the posting side's device goes away (rmmod, rdma link
//	delete; IBV_EVENT_DEVICE_FATAL on its context) its rings are revoked
//	and no more completions can be seen: it reports "REMOVED" and only
//	checks that the removal was reported and every call returns.
//
//   hold ADDR PORT SECONDS
//	Connect two QPs, print "CONNECTED" and wait up to SECONDS for the
//	connection to end; print "DISCONNECTED after N ms" (exit 0) or
//	"STILL CONNECTED" (exit 1). The test moves the netdev down meanwhile.
//
//   reuse ADDR PORT
//	A connected QP moved to RESET by its consumer stays in RESET once
//	its old connection is torn down (DISCONNECTED on both sides): the
//	old endpoint must not move it to ERROR. Then RESET -> INIT and an
//	accept naming it: a Write and a Read over the new connection carry
//	the right bytes.
//
//   qpnum ADDR PORT ROUNDS
//	QP numbers are not reused at once: a QP created right after another
//	was destroyed gets another number. Then ROUNDS rounds in which one
//	thread creates and destroys a QP while another connects naming its
//	number (the listener rejects what reaches it): every connect is
//	refused with EINVAL or goes out, and every QP destroy returns.
//
// One "ok"/"FAIL" line per check; exit status 0 only if all passed.
#include "verbs_side.h"

#include <infiniband/verbs.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <sys/mman.h>
#include <unistd.h>
#include <rdma/rdma_cma.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
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

int failures;

void check(bool ok, const std::string &what)
{
	std::printf("%s %s\n", ok ? "ok" : "FAIL", what.c_str());
	std::fflush(stdout);
	if (!ok)
		failures++;
}

using cm_pair::Side;
using cm_pair::SideOpts;

SideOpts depth(uint32_t d)
{
	SideOpts o;

	o.depth = d;
	return o;
}

// The attributes of a plain RC QP on @cq: @wrs WRs each way, one SGE.
ibv_qp_init_attr rc_qp_attr(ibv_cq *cq, uint32_t wrs)
{
	ibv_qp_init_attr a{};

	a.qp_type = IBV_QPT_RC;
	a.send_cq = cq;
	a.recv_cq = cq;
	a.cap.max_send_wr = wrs;
	a.cap.max_recv_wr = wrs;
	a.cap.max_send_sge = 1;
	a.cap.max_recv_sge = 1;
	return a;
}

bool modify_state(ibv_qp *qp, ibv_qp_state s)
{
	ibv_qp_attr a{};

	a.qp_state = s;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE) == 0;
}

// Wait up to @ms for an event of @type on @ch (others are acked and
// skipped); returns the ms it took, or -1.
long wait_event(rdma_event_channel *ch, rdma_cm_event_type type, int ms)
{
	auto t0 = Clock::now();
	auto end = t0 + std::chrono::milliseconds(ms);

	for (;;) {
		long left = std::chrono::duration_cast<std::chrono::milliseconds>(
				    end - Clock::now()).count();
		pollfd p{ ch->fd, POLLIN, 0 };
		rdma_cm_event *ev;

		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			return -1;
		if (rdma_get_cm_event(ch, &ev))
			return -1;
		bool hit = ev->event == type;
		rdma_ack_cm_event(ev);
		if (hit)
			return std::chrono::duration_cast<std::chrono::milliseconds>(
				       Clock::now() - t0).count();
	}
}

// The usual connection of these checks: two ends of depth 16, IRD and
// ORD @rd, the passive end's buffer registered with @srv_access.
void connect_ends(cm_pair::Pair &pair, Side &cli, Side &srv, uint8_t rd,
		  int srv_access = SideOpts{}.access)
{
	rdma_conn_param p{};
	rdma_cm_id *passive;
	SideOpts so = depth(16);

	so.access = srv_access;
	p.responder_resources = rd;
	p.initiator_depth = rd;
	pair.connect([&](rdma_cm_id *id) { cli.setup(id, depth(16)); },
		     [&](rdma_cm_id *id) { srv.setup(id, so); }, p, p,
		     &passive);
}

int do_reset(cm_pair::Pair &pair)
{
	Side srv, cli;

	connect_ends(pair, cli, srv, 4);
	std::memset(srv.mem.data(), 0x3c, srv.mem.size());
	std::memset(cli.mem.data(), 0xc3, cli.mem.size());

	// A Write works while connected.
	if (cli.post(IBV_WR_RDMA_WRITE, 1, cli.mem.data(), 64, true, (uintptr_t)srv.mem.data(),
		     srv.mr->rkey))
		die("post write");
	auto wc = cli.poll(1, 20000);
	check(wc.size() == 1 && wc[0].status == IBV_WC_SUCCESS,
	      "RDMA Write while connected completes");
	check(srv.mem[0] == 0xc3, "and lands");
	std::memset(srv.mem.data(), 0x3c, srv.mem.size());

	check(modify_state(srv.id->qp, IBV_QPS_RESET),
	      "passive QP: RTS -> RESET accepted");
	ibv_qp_attr qa{};
	ibv_qp_init_attr qi{};
	ibv_query_qp(srv.id->qp, &qa, IBV_QP_STATE, &qi);
	check(qa.qp_state == IBV_QPS_RESET, "passive QP reports RESET");

	// The peer keeps going: Writes and a Read into the reset QP's PD.
	int posted = 0;
	for (int i = 0; i < 4; i++)
		if (!cli.post(IBV_WR_RDMA_WRITE, 10 + i, cli.mem.data(), 4096, true,
			      (uintptr_t)srv.mem.data(), srv.mr->rkey))
			posted++;
	if (!cli.post(IBV_WR_RDMA_READ, 20, cli.mem.data(), 64, true, (uintptr_t)srv.mem.data(),
		      srv.mr->rkey))
		posted++;
	wc = cli.poll(posted, 20000);
	bool read_ok = false;
	for (auto &w : wc)
		if (w.wr_id == 20 && w.status == IBV_WC_SUCCESS)
			read_ok = true;
	check(!read_ok, "RDMA Read from a QP in RESET does not succeed");
	bool intact = true;
	for (uint8_t b : srv.mem)
		intact &= b == 0x3c;
	check(intact, "a QP in RESET executes no remote Write: region intact");
	long ms = wait_event(pair.cch, RDMA_CM_EVENT_DISCONNECTED, 20000);
	check(ms >= 0, "the peer learns the connection is gone (DISCONNECTED" +
			       (ms >= 0 ? " after " + std::to_string(ms) + " ms)" :
					  " never came)"));

	srv.teardown();
	cli.teardown();
	return 0;
}

int do_flushrace(cm_pair::Pair &pair, int rounds)
{
	constexpr uint32_t kDepth = 512;
	long lost_total = 0;

	for (int r = 0; r < rounds; r++) {
		Side srv, cli;
		rdma_conn_param p{};
		rdma_cm_id *passive;

		pair.connect([&](rdma_cm_id *id) { cli.setup(id, depth(kDepth)); },
			     [&](rdma_cm_id *id) {
				     srv.setup(id, depth(kDepth));
				     for (uint32_t i = 0; i < kDepth; i++)
					     srv.post_recv(i, srv.mem.data() + 4096, 64);
			     },
			     p, p, &passive);
		std::atomic<bool> stop{ false };
		std::atomic<long> posted{ 0 };
		std::thread poster([&] {
			for (uint64_t i = 0; i < kDepth - 8 && !stop; i++) {
				if (cli.post(IBV_WR_SEND, i, cli.mem.data(), 8))
					break;
				posted++;
			}
		});
		std::this_thread::sleep_for(
			std::chrono::microseconds(200 * (r % 20)));
		modify_state(cli.id->qp, IBV_QPS_ERR);
		stop = true;
		poster.join();
		// Posts after ERROR complete too (flushed); none may vanish.
		auto wc = cli.poll(posted, 20000);
		long lost = posted - (long)wc.size();
		if (lost) {
			std::printf("# round %d: %ld WRs posted, %zu completed\n",
				    r, posted.load(), wc.size());
			lost_total += lost;
		}
		// destroying an id drops its events still queued
		rdma_disconnect(cli.id);
		srv.teardown();
		cli.teardown();
	}
	check(!lost_total, std::to_string(rounds) +
				   " QPs moved to ERROR while posting: every WR completed (" +
				   std::to_string(lost_total) + " lost)");
	return 0;
}

// An SRQ in one PD serving a QP of another: receive buffers are checked
// against the SRQ's PD.
int do_srqpd(cm_pair::Pair &pair)
{
	Side cli;
	rdma_cm_id *passive = nullptr;
	ibv_pd *qpd = nullptr, *spd = nullptr;
	ibv_srq *srq = nullptr;
	ibv_cq *scq = nullptr;
	ibv_mr *smr = nullptr;
	std::vector<uint8_t> rbuf(4 * 64, 0);
	rdma_conn_param p{};

	pair.connect([&](rdma_cm_id *id) { cli.setup(id, depth(16)); },
		     [&](rdma_cm_id *id) {
			     qpd = ibv_alloc_pd(id->verbs);
			     spd = ibv_alloc_pd(id->verbs);
			     scq = ibv_create_cq(id->verbs, 32, nullptr,
						 nullptr, 0);
			     ibv_srq_init_attr sa{};
			     sa.attr.max_wr = 16;
			     sa.attr.max_sge = 1;
			     if (!qpd || !spd || !scq)
				     die("srqpd: pd/cq");
			     srq = ibv_create_srq(spd, &sa);
			     smr = ibv_reg_mr(spd, rbuf.data(), rbuf.size(),
					      IBV_ACCESS_LOCAL_WRITE);
			     if (!srq || !smr)
				     die("srqpd: srq/mr");
			     for (int i = 0; i < 4; i++) {
				     ibv_sge sge{ (uintptr_t)rbuf.data() + 64 * i,
						  64, smr->lkey };
				     ibv_recv_wr wr{}, *bad;

				     wr.wr_id = i;
				     wr.sg_list = &sge;
				     wr.num_sge = 1;
				     if (ibv_post_srq_recv(srq, &wr, &bad))
					     die("ibv_post_srq_recv");
			     }
			     ibv_qp_init_attr a{};
			     a.qp_type = IBV_QPT_RC;
			     a.send_cq = scq;
			     a.recv_cq = scq;
			     a.srq = srq;
			     a.cap.max_send_wr = 16;
			     a.cap.max_send_sge = 1;
			     if (rdma_create_qp(id, qpd, &a))
				     die("srqpd: rdma_create_qp");
		     },
		     p, p, &passive);
	std::memset(cli.mem.data(), 0x77, 64);
	if (cli.post(IBV_WR_SEND, 1, cli.mem.data(), 64))
		die("post send");
	auto wc = cli.poll(1, 20000);
	check(wc.size() == 1 && wc[0].status == IBV_WC_SUCCESS,
	      "Send to a QP whose SRQ is in another PD completes");
	ibv_wc rwc{};
	int n = 0;
	for (int i = 0; i < 100000 && !n; i++) {
		n = ibv_poll_cq(scq, 1, &rwc);
		if (!n)
			std::this_thread::sleep_for(
				std::chrono::microseconds(100));
	}
	check(n == 1 && rwc.status == IBV_WC_SUCCESS && rwc.byte_len == 64,
	      std::string("received into the SRQ's buffer (status ") +
		      (n == 1 ? ibv_wc_status_str(rwc.status) : "none") + ")");
	check(rbuf[0] == 0x77 && rbuf[63] == 0x77, "the bytes arrived");

	rdma_disconnect(cli.id);
	rdma_destroy_qp(passive);
	rdma_destroy_id(passive);
	ibv_destroy_srq(srq);
	ibv_dereg_mr(smr);
	ibv_destroy_cq(scq);
	ibv_dealloc_pd(qpd);
	ibv_dealloc_pd(spd);
	cli.teardown();
	return 0;
}

// QP access flags are enforced at the responder: the
// passive QP's flags are narrowed after the connection is up, then the
// active side tries what they no longer allow.
int do_qpaccess(cm_pair::Pair &pair)
{
	struct Case {
		const char *what;
		int access;		// passive QP's flags
		ibv_wr_opcode op;
		bool allowed;
	} cases[] = {
		{ "RDMA Write, QP without REMOTE_WRITE",
		  IBV_ACCESS_REMOTE_READ, IBV_WR_RDMA_WRITE, false },
		{ "RDMA Read, QP without REMOTE_READ",
		  IBV_ACCESS_REMOTE_WRITE, IBV_WR_RDMA_READ, false },
		{ "FetchAdd, QP with REMOTE_READ only",
		  IBV_ACCESS_REMOTE_READ, IBV_WR_ATOMIC_FETCH_AND_ADD, false },
		{ "FetchAdd, QP with rdma_cm's REMOTE_WRITE|REMOTE_READ",
		  IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
		  IBV_WR_ATOMIC_FETCH_AND_ADD, true },
		{ "RDMA Write, QP with REMOTE_WRITE",
		  IBV_ACCESS_REMOTE_WRITE, IBV_WR_RDMA_WRITE, true },
		{ "RDMA Read, QP with LOCAL_WRITE only (no remote access)",
		  IBV_ACCESS_LOCAL_WRITE, IBV_WR_RDMA_READ, false },
		{ "RDMA Write, QP flags 0 as rdma_cm leaves an active user QP",
		  0, IBV_WR_RDMA_WRITE, true },
	};

	for (auto &c : cases) {
		Side srv, cli;

		connect_ends(pair, cli, srv, 4,
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
		std::memset(srv.mem.data(), 0x3c, srv.mem.size());
		std::memset(cli.mem.data(), 0xc3, cli.mem.size());
		ibv_qp_attr a{};
		a.qp_access_flags = c.access;
		check(ibv_modify_qp(srv.id->qp, &a, IBV_QP_ACCESS_FLAGS) == 0,
		      std::string(c.what) + ": access flags set in RTS");

		int rv;
		if (c.op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
			ibv_sge sge{ (uintptr_t)cli.mem.data(), 8, cli.mr->lkey };
			ibv_send_wr wr{}, *bad;

			wr.wr_id = 1;
			wr.opcode = c.op;
			wr.sg_list = &sge;
			wr.num_sge = 1;
			wr.send_flags = IBV_SEND_SIGNALED;
			wr.wr.atomic.remote_addr = (uintptr_t)srv.mem.data();
			wr.wr.atomic.rkey = srv.mr->rkey;
			wr.wr.atomic.compare_add = 1;
			rv = ibv_post_send(cli.id->qp, &wr, &bad);
		} else {
			rv = cli.post(c.op, 1, cli.mem.data(), 64, true, (uintptr_t)srv.mem.data(),
				      srv.mr->rkey);
		}
		if (rv)
			die("post");
		auto wc = cli.poll(1, 20000);
		bool ok = wc.size() == 1 && wc[0].status == IBV_WC_SUCCESS;
		if (c.allowed) {
			bool changed = srv.mem[0] != 0x3c;
			check(ok && (c.op == IBV_WR_RDMA_READ || changed),
			      std::string(c.what) + ": allowed and executed");
		} else {
			// A Write completes when sent; the responder's
			// Terminate then ends the connection.
			long ms = wait_event(pair.cch,
					     RDMA_CM_EVENT_DISCONNECTED, 20000);
			bool untouched = std::all_of(
				srv.mem.begin(), srv.mem.end(),
				[](uint8_t b) { return b == 0x3c; });
			check((c.op == IBV_WR_RDMA_WRITE || !ok) && ms >= 0 &&
				      untouched,
			      std::string(c.what) + ": refused (" +
				      (wc.empty() ? "no completion" :
				       ibv_wc_status_str(wc[0].status)) +
				      ", connection ended), memory untouched");
		}
		rdma_disconnect(cli.id);
		srv.teardown();
		cli.teardown();
	}
	return 0;
}

// SGE limits of the QP, not the device's, at post time.
// Both ends are created with one SGE per WR (the active one as an
// ibv_qp_ex QP). A send WR, a receive WR and an SRQ receive with two
// SGEs must fail their post with EINVAL and bad_wr at that WR (in a
// chain, the WR before it posted), ibv_wr_set_sge_list() with two SGEs
// must fail the batch at ibv_wr_complete(); then the connection must
// still carry a Send and a Write, their bytes checked.
int do_sgelimit(cm_pair::Pair &pair)
{
	Side srv, cli;
	rdma_conn_param p{};
	rdma_cm_id *passive;
	SideOpts co = depth(16), so = depth(16);

	co.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE;
	pair.connect([&](rdma_cm_id *id) { cli.setup(id, co); },
		     [&](rdma_cm_id *id) { srv.setup(id, so); }, p, p,
		     &passive);
	std::memset(srv.mem.data(), 0x3c, srv.mem.size());
	for (size_t i = 0; i < cli.mem.size(); i++)
		cli.mem[i] = uint8_t(i * 7 + 1);

	ibv_qp_attr qa{};
	ibv_qp_init_attr qi{};
	ibv_query_qp(cli.id->qp, &qa, IBV_QP_CAP, &qi);
	check(qi.cap.max_send_sge == 1 && qi.cap.max_recv_sge == 1,
	      "QP created with max_send_sge 1, max_recv_sge 1 (query says " +
		      std::to_string(qi.cap.max_send_sge) + ", " +
		      std::to_string(qi.cap.max_recv_sge) + ")");

	ibv_sge two[2] = { { (uintptr_t)cli.mem.data(), 32, cli.mr->lkey },
			   { (uintptr_t)cli.mem.data() + 32, 32, cli.mr->lkey } };
	ibv_send_wr ok_wr{}, big{}, *bad = nullptr;

	// A 2-SGE Send alone.
	big.wr_id = 2;
	big.opcode = IBV_WR_SEND;
	big.sg_list = two;
	big.num_sge = 2;
	big.send_flags = IBV_SEND_SIGNALED;
	int rv = ibv_post_send(cli.id->qp, &big, &bad);
	check(rv == EINVAL && bad == &big,
	      "2-SGE Send on max_send_sge 1: EINVAL, bad_wr at it (got " +
		      std::to_string(rv) + (bad == &big ? ", bad_wr ok)" :
					     ", bad_wr wrong)"));

	// A valid Write, then a 2-SGE Write, in one chain.
	ibv_sge one{ (uintptr_t)cli.mem.data(), 64, cli.mr->lkey };
	ok_wr.wr_id = 3;
	ok_wr.opcode = IBV_WR_RDMA_WRITE;
	ok_wr.sg_list = &one;
	ok_wr.num_sge = 1;
	ok_wr.send_flags = IBV_SEND_SIGNALED;
	ok_wr.wr.rdma.remote_addr = (uintptr_t)srv.mem.data();
	ok_wr.wr.rdma.rkey = srv.mr->rkey;
	ok_wr.next = &big;
	big.wr_id = 4;
	big.opcode = IBV_WR_RDMA_WRITE;
	big.wr.rdma.remote_addr = (uintptr_t)srv.mem.data() + 1024;
	big.wr.rdma.rkey = srv.mr->rkey;
	bad = nullptr;
	rv = ibv_post_send(cli.id->qp, &ok_wr, &bad);
	check(rv == EINVAL && bad == &big,
	      "chain [Write, 2-SGE Write]: EINVAL, bad_wr at the second (got " +
		      std::to_string(rv) + (bad == &big ? ", bad_wr ok)" :
					     bad == &ok_wr ? ", bad_wr at the first)" :
					     ", bad_wr wrong)"));
	// The same as inline data: the SGE count is the QP's limit too.
	big.next = nullptr;
	big.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
	bad = nullptr;
	rv = ibv_post_send(cli.id->qp, &big, &bad);
	check(rv == EINVAL && bad == &big,
	      "2-SGE inline Write on max_send_sge 1: EINVAL (got " +
		      std::to_string(rv) + ")");

	// ibv_qp_ex: a 2-SGE list fails the batch at wr_complete.
	ibv_wr_start(cli.qpx);
	cli.qpx->wr_id = 5;
	cli.qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(cli.qpx);
	ibv_wr_set_sge_list(cli.qpx, 2, two);
	rv = ibv_wr_complete(cli.qpx);
	check(rv == EINVAL, "ibv_wr_set_sge_list() of 2 SGEs: ibv_wr_complete "
			    "EINVAL (got " + std::to_string(rv) + ")");

	// Receives: the QP's max_recv_sge and an SRQ's max_sge.
	ibv_sge rtwo[2] = { { (uintptr_t)srv.mem.data() + 4096, 32, srv.mr->lkey },
			    { (uintptr_t)srv.mem.data() + 4128, 32, srv.mr->lkey } };
	ibv_recv_wr rbig{}, *rbad = nullptr;
	rbig.wr_id = 6;
	rbig.sg_list = rtwo;
	rbig.num_sge = 2;
	rv = ibv_post_recv(srv.id->qp, &rbig, &rbad);
	check(rv == EINVAL && rbad == &rbig,
	      "2-SGE receive on max_recv_sge 1: EINVAL, bad_wr at it (got " +
		      std::to_string(rv) + ")");
	ibv_srq_init_attr sa{};
	sa.attr.max_wr = 4;
	sa.attr.max_sge = 1;
	ibv_srq *srq = ibv_create_srq(srv.pd, &sa);
	if (!srq)
		die("ibv_create_srq");
	rbad = nullptr;
	rv = ibv_post_srq_recv(srq, &rbig, &rbad);
	check(rv == EINVAL && rbad == &rbig,
	      "2-SGE receive on an SRQ of max_sge 1: EINVAL, bad_wr at it (got " +
		      std::to_string(rv) + ")");
	ibv_destroy_srq(srq);

	// The first Write of the chain went; then the QP still works.
	auto wc = cli.poll(1, 20000);
	check(wc.size() == 1 && wc[0].wr_id == 3 &&
		      wc[0].status == IBV_WC_SUCCESS,
	      std::string("the Write before the refused WR completes (") +
		      (wc.empty() ? "none" : ibv_wc_status_str(wc[0].status)) +
		      ")");
	srv.post_recv(7, srv.mem.data() + 2048, 256);
	if (cli.post(IBV_WR_SEND, 8, cli.mem.data() + 512, 200))
		die("post send");
	wc = cli.poll(1, 20000);
	check(wc.size() == 1 && wc[0].wr_id == 8 &&
		      wc[0].status == IBV_WC_SUCCESS,
	      std::string("a following 1-SGE Send completes (") +
		      (wc.empty() ? "none" : ibv_wc_status_str(wc[0].status)) +
		      ")");
	auto rwc = srv.poll(1, 20000);
	check(rwc.size() == 1 && rwc[0].wr_id == 7 &&
		      rwc[0].status == IBV_WC_SUCCESS && rwc[0].byte_len == 200 &&
		      !std::memcmp(srv.mem.data() + 2048, cli.mem.data() + 512, 200),
	      "and is received, 200 bytes equal");
	ibv_wr_start(cli.qpx);
	cli.qpx->wr_id = 9;
	cli.qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(cli.qpx, srv.mr->rkey, (uintptr_t)srv.mem.data() + 3072);
	ibv_wr_set_sge_list(cli.qpx, 1, two);
	rv = ibv_wr_complete(cli.qpx);
	wc = cli.poll(1, 20000);
	check(!rv && wc.size() == 1 && wc[0].wr_id == 9 &&
		      wc[0].status == IBV_WC_SUCCESS &&
		      !std::memcmp(srv.mem.data(), cli.mem.data(), 64) &&
		      !std::memcmp(srv.mem.data() + 3072, cli.mem.data(), 32) &&
		      srv.mem[1024] == 0x3c && srv.mem[3072 + 32] == 0x3c,
	      "a following ibv_wr Write completes; every byte Written is there, "
	      "none of the refused ones");
	long ms = wait_event(pair.cch, RDMA_CM_EVENT_DISCONNECTED, 200);
	check(ms < 0, "the connection is still up");

	rdma_disconnect(cli.id);
	srv.teardown();
	cli.teardown();
	return 0;
}

// What this process needs later is charged to its memory cgroup now and
// locked: at the cgroup's limit only kernel memory is new (a page fault
// there would invoke the cgroup's OOM killer instead of failing a verb).
void lock_memory()
{
	constexpr size_t kReserve = 8 << 20;
	void *reserve;

	// the heap keeps it after the free (no mmap, no trim)
	mallopt(M_TRIM_THRESHOLD, 256 << 20);
	mallopt(M_MMAP_THRESHOLD, 16 << 20);
	reserve = std::malloc(kReserve);
	if (!reserve)
		die("malloc");
	std::memset(reserve, 1, kReserve);
	asm volatile("" : : "r"(reserve) : "memory");
	std::free(reserve);
	if (mlockall(MCL_CURRENT))
		die("mlockall");
}

// Memory cgroup charge: connections one after the other, for a test that
// watches the memory cgroup this process runs in. After connection i
// prints "CONN i" and, with @step, waits for a line on stdin (the test
// reads the cgroup's charge meanwhile). A setup that fails ends the
// process with the failing call and its errno (cm_pair::die), as any
// rdma_cm client would see it. After all N: "HOLD", then everything is
// torn down once stdin is closed, and "FREED".
int do_conns(cm_pair::Pair &pair, int n, bool step, uint32_t qdepth)
{
	std::vector<Side> cli(n), srv(n);
	char line[64];

	lock_memory();
	for (int i = 0; i < n; i++) {
		rdma_conn_param p{};
		rdma_cm_id *passive;

		pair.connect([&](rdma_cm_id *id) { cli[i].setup(id, depth(qdepth)); },
			     [&](rdma_cm_id *id) { srv[i].setup(id, depth(qdepth)); },
			     p, p, &passive);
		// an 8 KiB Write each way: one FPDU each, copied into TX pages
		if (cli[i].post(IBV_WR_RDMA_WRITE, 1, cli[i].mem.data(), 8192,
				true, (uintptr_t)srv[i].mem.data(), srv[i].mr->rkey) ||
		    srv[i].post(IBV_WR_RDMA_WRITE, 2, srv[i].mem.data(), 8192,
				true, (uintptr_t)cli[i].mem.data(), cli[i].mr->rkey))
			die("ibv_post_send");
		cli[i].poll_ok();
		srv[i].poll_ok();
		std::printf("CONN %d\n", i + 1);
		std::fflush(stdout);
		if (step && !std::fgets(line, sizeof(line), stdin))
			step = false;
	}
	std::printf("HOLD\n");
	std::fflush(stdout);
	while (std::fgets(line, sizeof(line), stdin))
		;
	for (int i = 0; i < n; i++) {
		rdma_disconnect(cli[i].id);
		srv[i].teardown();
		cli[i].teardown();
	}
	std::printf("FREED\n");
	return 0;
}

// Memory cgroup charge, the passive side under a limit: N QPs (PD, CQ, QP of
// depth 16, 8 KiB MR) created up front on the listener's device, then
// "READY" and a line from stdin (the test sets the cgroup's limit); then
// each connection request is accepted with the next of these QPs
// (conn_param.qp_num). Nothing else this process does then allocates
// charged kernel memory: the TCP socket was accepted by xiw's work, the
// rings are mapped, the process's memory is locked. So what meets the
// limit is xiw's per-connection memory. "CONN i" per connection, "FAILED
// i: ..." for the first that fails (exit 2), "HOLD" after N.
int do_accepter(cm_pair::Pair &pair, int n)
{
	ibv_context *ctx = pair.lid->verbs;
	std::vector<std::vector<uint8_t>> mem(n);
	std::vector<ibv_qp *> qps(n);
	char line[64];

	if (!ctx)
		die("accepter: listener has no device");
	for (int i = 0; i < n; i++) {
		ibv_pd *pd = ibv_alloc_pd(ctx);
		ibv_cq *cq = pd ? ibv_create_cq(ctx, 48, nullptr, nullptr, 0) :
				  nullptr;

		if (!cq)
			die("accepter: pd/cq");
		ibv_qp_init_attr a = rc_qp_attr(cq, 16);
		qps[i] = ibv_create_qp(pd, &a);
		mem[i].assign(8192, 0);
		if (!qps[i] || !ibv_reg_mr(pd, mem[i].data(), mem[i].size(),
					   IBV_ACCESS_LOCAL_WRITE |
					   IBV_ACCESS_REMOTE_WRITE))
			die("accepter: qp/mr");
	}
	lock_memory();
	std::printf("READY\n");
	std::fflush(stdout);
	if (!std::fgets(line, sizeof(line), stdin))
		return 2;
	// Requests and establishments may interleave (the next request can
	// come before this side's ESTABLISHED). The first failure ends the
	// process at once: its end releases everything (no rdma_destroy_id(),
	// which would wait for events not acknowledged).
	for (int accepted = 0, established = 0; established < n;) {
		rdma_cm_event *ev;

		if (rdma_get_cm_event(pair.sch, &ev))
			die("rdma_get_cm_event");
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST && accepted < n) {
			rdma_cm_id *id = ev->id;
			rdma_conn_param p{};

			rdma_ack_cm_event(ev);
			p.qp_num = qps[accepted++]->qp_num;
			p.responder_resources = 1;
			p.initiator_depth = 1;
			if (rdma_accept(id, &p)) {
				std::printf("FAILED %d: rdma_accept: %s\n",
					    accepted, std::strerror(errno));
				std::fflush(stdout);
				_exit(2);
			}
			continue;
		}
		if (ev->event != RDMA_CM_EVENT_ESTABLISHED) {
			std::printf("FAILED %d: %s, status %d (%s)\n", accepted,
				    rdma_event_str(ev->event), ev->status,
				    std::strerror(-ev->status));
			std::fflush(stdout);
			_exit(2);
		}
		rdma_ack_cm_event(ev);
		std::printf("CONN %d\n", ++established);
		std::fflush(stdout);
	}
	std::printf("HOLD\n");
	std::fflush(stdout);
	while (std::fgets(line, sizeof(line), stdin))
		;
	_exit(0);	// the process's end releases everything
}

// The active side for "accepter", in another process: up to N
// connections to ADDR:PORT one after the other, "CONN i" each, until one
// is refused ("REFUSED i: event, status"); then it holds them until
// stdin closes.
int do_connector(const char *addr, const char *port, int n)
{
	rdma_event_channel *ch = rdma_create_event_channel();
	std::vector<Side> sides(n);	// kept until the process ends
	addrinfo hints{}, *ai;
	char line[64];

	hints.ai_socktype = SOCK_STREAM;
	if (!ch || getaddrinfo(addr, port, &hints, &ai))
		die("connector: channel/address");
	for (int i = 0; i < n; i++) {
		rdma_cm_id *id;
		rdma_cm_event *ev;
		rdma_conn_param p{};

		if (rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP) ||
		    rdma_resolve_addr(id, nullptr, ai->ai_addr, 5000))
			die("connector: resolve_addr");
		rdma_ack_cm_event(cm_pair::expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
		if (rdma_resolve_route(id, 5000))
			die("connector: resolve_route");
		rdma_ack_cm_event(cm_pair::expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
		sides[i].setup(id, depth(16));
		p.responder_resources = 1;
		p.initiator_depth = 1;
		if (rdma_connect(id, &p))
			die("connector: rdma_connect");
		if (rdma_get_cm_event(ch, &ev))
			die("rdma_get_cm_event");
		if (ev->event != RDMA_CM_EVENT_ESTABLISHED) {
			std::printf("REFUSED %d: %s, status %d\n", i + 1,
				    rdma_event_str(ev->event), ev->status);
			rdma_ack_cm_event(ev);
			break;
		}
		rdma_ack_cm_event(ev);
		std::printf("CONN %d\n", i + 1);
		std::fflush(stdout);
	}
	std::fflush(stdout);
	while (std::fgets(line, sizeof(line), stdin))
		;
	return 0;
}

// QP theft: rdma_cm lets a process name any QP number. "victim"
// creates a QP and prints its number, then reports its state when stdin
// closes; "thief" names that number in a connect and in an accept.
int do_victim(cm_pair::Pair &pair)
{
	rdma_cm_id *id;
	Side v;

	if (rdma_create_id(pair.cch, &id, nullptr, RDMA_PS_TCP) ||
	    rdma_resolve_addr(id, nullptr, pair.ai->ai_addr, 2000))
		die("victim: rdma_resolve_addr");
	rdma_ack_cm_event(cm_pair::expect(pair.cch, RDMA_CM_EVENT_ADDR_RESOLVED));
	v.setup(id, depth(16));
	ibv_qp_attr qa{};
	ibv_qp_init_attr qi{};
	ibv_query_qp(id->qp, &qa, IBV_QP_STATE, &qi);
	std::printf("QPN %u state %d\n", id->qp->qp_num, qa.qp_state);
	std::fflush(stdout);
	char buf[16];
	while (std::fgets(buf, sizeof(buf), stdin))
		;
	ibv_qp_attr qb{};
	ibv_query_qp(id->qp, &qb, IBV_QP_STATE, &qi);
	check(qb.qp_state == qa.qp_state,
	      "victim QP state unchanged (" + std::to_string(qa.qp_state) +
		      " -> " + std::to_string(qb.qp_state) + ")");
	v.teardown();
	return 0;
}

int do_thief(cm_pair::Pair &pair, uint32_t qpn)
{
	rdma_cm_id *cid;
	rdma_conn_param p{};

	// connect naming the victim's QP (no QP of our own on the id)
	if (rdma_create_id(pair.cch, &cid, nullptr, RDMA_PS_TCP) ||
	    rdma_resolve_addr(cid, nullptr, pair.ai->ai_addr, 2000))
		die("thief: rdma_resolve_addr");
	rdma_ack_cm_event(cm_pair::expect(pair.cch, RDMA_CM_EVENT_ADDR_RESOLVED));
	if (rdma_resolve_route(cid, 2000))
		die("thief: rdma_resolve_route");
	rdma_ack_cm_event(cm_pair::expect(pair.cch, RDMA_CM_EVENT_ROUTE_RESOLVED));
	p.qp_num = qpn;
	int rv = rdma_connect(cid, &p);
	check(rv != 0, "connect naming another process's QP " +
			       std::to_string(qpn) + " is refused (" +
			       (rv ? std::strerror(errno) : "accepted") + ")");
	rdma_destroy_id(cid);
	// drain what a wrongly accepted connect left behind
	while (wait_event(pair.sch, RDMA_CM_EVENT_CONNECT_REQUEST, 500) >= 0)
		;

	// accept naming the victim's QP: a legitimate active side connects
	Side act;
	if (rdma_create_id(pair.cch, &cid, nullptr, RDMA_PS_TCP) ||
	    rdma_resolve_addr(cid, nullptr, pair.ai->ai_addr, 2000))
		die("thief: rdma_resolve_addr 2");
	rdma_ack_cm_event(cm_pair::expect(pair.cch, RDMA_CM_EVENT_ADDR_RESOLVED));
	if (rdma_resolve_route(cid, 2000))
		die("thief: rdma_resolve_route 2");
	rdma_ack_cm_event(cm_pair::expect(pair.cch, RDMA_CM_EVENT_ROUTE_RESOLVED));
	act.setup(cid, depth(16));
	rdma_conn_param ap{};
	if (rdma_connect(cid, &ap))
		die("thief: rdma_connect 2");
	rdma_cm_event *ev = cm_pair::expect(pair.sch,
					    RDMA_CM_EVENT_CONNECT_REQUEST);
	rdma_cm_id *pid = ev->id;
	rdma_ack_cm_event(ev);
	rdma_conn_param acc{};
	acc.qp_num = qpn;
	rv = rdma_accept(pid, &acc);
	check(rv != 0, "accept naming another process's QP " +
			       std::to_string(qpn) + " is refused (" +
			       (rv ? std::strerror(errno) : "accepted") + ")");
	rdma_destroy_id(pid);
	act.teardown();
	return 0;
}

// N connections set up and torn down one after another, each timed.
int do_cycle(cm_pair::Pair &pair, int n)
{
	long worst = 0;

	for (int i = 0; i < n; i++) {
		Side srv, cli;
		rdma_conn_param p{};
		rdma_cm_id *passive;
		auto t0 = Clock::now();

		pair.connect([&](rdma_cm_id *id) { cli.setup(id, depth(4)); },
			     [&](rdma_cm_id *id) { srv.setup(id, depth(4)); }, p, p,
			     &passive);
		rdma_disconnect(cli.id);
		wait_event(pair.cch, RDMA_CM_EVENT_DISCONNECTED, 20000);
		srv.teardown();
		cli.teardown();
		long ms = std::chrono::duration_cast<std::chrono::milliseconds>(
				  Clock::now() - t0).count();
		worst = std::max(worst, ms);
		std::printf("CYCLE %d ms=%ld\n", i, ms);
		std::fflush(stdout);
	}
	std::printf("WORST ms=%ld\n", worst);
	return 0;
}

// Traffic until the connection dies: Sends and RDMA Writes of 4 KiB (a
// window of 64, every 8th signaled, receives reposted), then every WR
// must have completed - successfully or with WR_FLUSH_ERR (or another
// error status for the WR that met the fault) - within 20 s of the first
// error. Prints "TRAFFIC" once data flows, then the tally. @secs bounds
// the wait for the fault.
// A pending IBV_EVENT_DEVICE_FATAL (or any async event: printed) of @ctx.
bool device_fatal(ibv_context *ctx)
{
	pollfd pfd{ ctx->async_fd, POLLIN, 0 };
	ibv_async_event ae;
	bool fatal = false;

	while (poll(&pfd, 1, 0) > 0 && (pfd.revents & POLLIN)) {
		if (ibv_get_async_event(ctx, &ae))
			break;
		std::printf("# async event %s\n", ibv_event_type_str(ae.event_type));
		fatal |= ae.event_type == IBV_EVENT_DEVICE_FATAL;
		ibv_ack_async_event(&ae);
	}
	return fatal;
}

int do_traffic(cm_pair::Pair &pair, int secs)
{
	constexpr uint32_t kWin = 64;
	Side srv, cli;
	rdma_conn_param p{};
	rdma_cm_id *passive;
	SideOpts o;

	o.depth = 2 * kWin;
	o.mem_bytes = 2 * 4096 * kWin;
	pair.connect([&](rdma_cm_id *id) { cli.setup(id, o); },
		     [&](rdma_cm_id *id) {
			     srv.setup(id, o);
			     for (uint32_t i = 0; i < 2 * kWin; i++)
				     srv.post_recv(i, srv.mem.data() +
						   4096 * (i % kWin), 4096);
		     },
		     p, p, &passive);
	uint64_t posted = 0, done = 0, ok = 0, flushed = 0, other = 0;
	uint64_t unsignaled_since = 0, sends = 0, recvd = 0;
	bool dead = false, announced = false, removed = false;
	auto end = Clock::now() + std::chrono::seconds(secs);
	Clock::time_point died{}, t_ev = Clock::now();
	unsigned loops = 0;

	// async events are read without blocking: the poll below is cheap
	for (ibv_context *c : { cli.id->verbs, srv.id->verbs })
		fcntl(c->async_fd, F_SETFL, fcntl(c->async_fd, F_GETFL) | O_NONBLOCK);
	while (Clock::now() < end) {
		if (!(++loops % 64)) {
			device_fatal(srv.id->verbs);
			if (!removed && device_fatal(cli.id->verbs)) {
				removed = true;
				std::printf("REMOVED after %ld ms of traffic\n",
					    (long)std::chrono::duration_cast<
						    std::chrono::milliseconds>(
						    Clock::now() - t_ev).count());
				std::fflush(stdout);
				break;
			}
		}
		// keep the window full while the connection lives
		while (!dead && posted - done < kWin - 8) {
			ibv_wr_opcode op = posted % 2 ? IBV_WR_SEND :
						       IBV_WR_RDMA_WRITE;

			// iWARP has no RNR retry: a Send needs a posted
			// receive at the peer (2 * kWin of them, reposted);
			// without one a Write goes instead. Never stop
			// posting: WRs that completed unsignaled are known
			// complete only through a later CQE, and when the
			// peer's receives stopped with the connection, the
			// next WR's flush CQE is the one
			if (op == IBV_WR_SEND && sends - recvd >= 2 * kWin - 8)
				op = IBV_WR_RDMA_WRITE;
			bool sig = ++unsignaled_since == 8;

			if (sig)
				unsignaled_since = 0;
			if (cli.post(op, posted, cli.mem.data() +
				     4096 * (posted % kWin), 4096, sig,
				     (uintptr_t)srv.mem.data() + 4096 * kWin,
				     srv.mr->rkey))
				break;
			posted++;
			sends += op == IBV_WR_SEND;
		}
		ibv_wc wc[16];
		int n = ibv_poll_cq(cli.cq, 16, wc);
		for (int i = 0; i < n; i++) {
			// a signaled CQE covers the unsignaled WRs before it
			uint64_t upto = wc[i].wr_id + 1;

			if (wc[i].status == IBV_WC_SUCCESS) {
				ok += upto - done;
			} else {
				if (wc[i].status == IBV_WC_WR_FLUSH_ERR)
					flushed++;
				else
					other++;
				if (!dead) {
					dead = true;
					died = Clock::now();
					end = died + std::chrono::seconds(20);
				}
			}
			done = std::max(done, upto);
		}
		// the peer's receives: reposted as they complete
		int rn;
		while ((rn = ibv_poll_cq(srv.cq, 16, wc)) > 0) {
			for (int i = 0; i < rn; i++) {
				if (wc[i].status != IBV_WC_SUCCESS ||
				    wc[i].opcode != IBV_WC_RECV)
					continue;
				recvd++;
				if (!dead)
					srv.post_recv(wc[i].wr_id, srv.mem.data() +
						      4096 * (wc[i].wr_id % kWin),
						      4096);
			}
			n += rn;
		}
		if (!announced && ok > 4 * kWin) {
			announced = true;
			std::printf("TRAFFIC\n");
			std::fflush(stdout);
		}
		if (dead && done == posted)
			break;

		if (!n)
			std::this_thread::sleep_for(std::chrono::microseconds(50));
	}
	std::printf("# posted %" PRIu64 ", completed %" PRIu64 " (%" PRIu64
		    " ok, then %" PRIu64 " flushed and %" PRIu64 " other error CQEs)\n",
		    posted, done, ok, flushed, other);
	if (removed) {
		// the rings are gone with the device: what was not seen
		// completed before cannot be seen now
		check(true, "the device removal was reported (" +
			    std::to_string(posted - done) +
			    " WRs revoked with the rings)");
	} else {
		check(dead, "the fault ended the connection");
		check(done == posted, "every WR completed (" +
			    std::to_string(posted - done) + " missing)");
	}
	srv.teardown();
	cli.teardown();
	std::printf("TORN DOWN\n");
	return 0;
}

int do_hold(cm_pair::Pair &pair, int secs)
{
	Side srv, cli;

	connect_ends(pair, cli, srv, 0);
	std::printf("CONNECTED\n");
	std::fflush(stdout);
	long ms = wait_event(pair.cch, RDMA_CM_EVENT_DISCONNECTED,
			     secs * 1000);
	if (ms < 0) {
		std::printf("STILL CONNECTED\n");
		return 1;
	}
	std::printf("DISCONNECTED after %ld ms\n", ms);
	srv.teardown();
	cli.teardown();
	return 0;
}

const char *qps_name(int s)
{
	static const char *const n[] = { "RESET", "INIT", "RTR", "RTS",
					 "SQD", "SQE", "ERR" };

	return s >= 0 && s < 7 ? n[s] : "?";
}

ibv_qp_state qp_state(ibv_qp *qp)
{
	ibv_qp_attr qa{};
	ibv_qp_init_attr qi{};

	if (ibv_query_qp(qp, &qa, IBV_QP_STATE, &qi))
		die("ibv_query_qp");
	return qa.qp_state;
}

// A resolved active id on @ch, without a QP.
rdma_cm_id *resolved_id(cm_pair::Pair &pair, rdma_event_channel *ch)
{
	rdma_cm_id *cid;

	if (rdma_create_id(ch, &cid, nullptr, RDMA_PS_TCP) ||
	    rdma_resolve_addr(cid, nullptr, pair.ai->ai_addr, 2000))
		die("rdma_resolve_addr");
	rdma_ack_cm_event(cm_pair::expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
	if (rdma_resolve_route(cid, 2000))
		die("rdma_resolve_route");
	rdma_ack_cm_event(cm_pair::expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
	return cid;
}

int do_reuse(cm_pair::Pair &pair)
{
	Side srv, cli, act;

	connect_ends(pair, cli, srv, 4);
	check(modify_state(srv.id->qp, IBV_QPS_RESET),
	      "passive QP: RTS -> RESET accepted");
	long ms = wait_event(pair.sch, RDMA_CM_EVENT_DISCONNECTED, 20000);
	long ms2 = wait_event(pair.cch, RDMA_CM_EVENT_DISCONNECTED, 20000);
	check(ms >= 0 && ms2 >= 0,
	      "the old connection ends: DISCONNECTED on both sides");
	ibv_qp_state st = qp_state(srv.id->qp);
	check(st == IBV_QPS_RESET,
	      std::string("the old connection's teardown leaves the QP in RESET (") +
		      qps_name(st) + ")");
	if (!modify_state(srv.id->qp, IBV_QPS_INIT)) {
		check(false, "RESET -> INIT accepted");
		srv.teardown();
		cli.teardown();
		return 0;
	}
	check(true, "RESET -> INIT accepted");

	// A new connection, accepted naming the reused QP.
	rdma_cm_id *cid = resolved_id(pair, pair.cch);
	act.setup(cid, depth(16));
	rdma_conn_param p{};
	p.responder_resources = 4;
	p.initiator_depth = 4;
	if (rdma_connect(cid, &p))
		die("rdma_connect");
	rdma_cm_event *ev = cm_pair::expect(pair.sch,
					    RDMA_CM_EVENT_CONNECT_REQUEST);
	rdma_cm_id *pid = ev->id;
	rdma_ack_cm_event(ev);
	rdma_conn_param acc = p;
	acc.qp_num = srv.id->qp->qp_num;
	int rv = rdma_accept(pid, &acc);
	check(rv == 0, "accept naming the reused QP " +
			       std::to_string(acc.qp_num) +
			       (rv ? std::string(": ") + std::strerror(errno) : ""));
	if (!rv) {
		rdma_ack_cm_event(cm_pair::expect(pair.cch,
						  RDMA_CM_EVENT_ESTABLISHED));
		rdma_ack_cm_event(cm_pair::expect(pair.sch,
						  RDMA_CM_EVENT_ESTABLISHED));
		std::memset(srv.mem.data(), 0x3c, srv.mem.size());
		for (size_t i = 0; i < 256; i++)
			act.mem[i] = uint8_t(i * 7 + 1);
		if (act.post(IBV_WR_RDMA_WRITE, 1, act.mem.data(), 256, true,
			     (uintptr_t)srv.mem.data(), srv.mr->rkey))
			die("post write");
		auto wc = act.poll(1, 20000);
		check(wc.size() == 1 && wc[0].status == IBV_WC_SUCCESS &&
			      std::memcmp(srv.mem.data(), act.mem.data(), 256) == 0 &&
			      srv.mem[256] == 0x3c,
		      "a Write over the new connection lands, exactly");
		if (act.post(IBV_WR_RDMA_READ, 2, act.mem.data() + 4096, 256,
			     true, (uintptr_t)srv.mem.data(), srv.mr->rkey))
			die("post read");
		wc = act.poll(1, 20000);
		check(wc.size() == 1 && wc[0].status == IBV_WC_SUCCESS &&
			      std::memcmp(act.mem.data() + 4096, act.mem.data(),
					  256) == 0,
		      "a Read over the new connection returns the bytes");
		rdma_disconnect(cid);
		wait_event(pair.sch, RDMA_CM_EVENT_DISCONNECTED, 20000);
	}
	rdma_destroy_id(pid);
	act.teardown();
	srv.teardown();
	cli.teardown();
	return 0;
}

// The state a QP shows: the cached ibv_qp::state that libibverbs keeps
// (RESET at create, then whatever ibv_modify_qp / ibv_query_qp last set)
// and the state the kernel reports through ibv_query_qp. An iWARP QP is
// created in Idle, which xiw reports as INIT, as siw and cxgb4 do; the
// cached field must still start at RESET, as libibverbs sets it.
void check_states(ibv_qp *qp, ibv_qp_state cached, ibv_qp_state queried,
		  const std::string &when)
{
	ibv_qp_state c = qp->state;

	check(c == cached, when + ": ibv_qp::state " + qps_name(cached) +
				   " (got " + qps_name(c) + ")");
	ibv_qp_state q = qp_state(qp);
	check(q == queried, when + ": ibv_query_qp " + qps_name(queried) +
				    " (got " + qps_name(q) + ")");
	check(qp->state == queried,
	      when + ": ibv_query_qp updates ibv_qp::state");
}

// A PD and a CQ of the device, through an id resolved to the listener's
// address, for QPs created with plain verbs; ~DeviceObjects frees them.
struct DeviceObjects {
	rdma_cm_id *bid = nullptr;
	ibv_pd *pd = nullptr;
	ibv_cq *cq = nullptr;

	explicit DeviceObjects(cm_pair::Pair &pair)
		: bid(resolved_id(pair, pair.cch))
	{
		pd = ibv_alloc_pd(bid->verbs);
		cq = ibv_create_cq(bid->verbs, 64, nullptr, nullptr, 0);
		if (!pd || !cq)
			die("pd/cq");
	}
	~DeviceObjects()
	{
		ibv_destroy_cq(cq);
		ibv_dealloc_pd(pd);
		rdma_destroy_id(bid);
	}
	DeviceObjects(const DeviceObjects &) = delete;
	DeviceObjects &operator=(const DeviceObjects &) = delete;
};

int do_qpstate(cm_pair::Pair &pair)
{
	DeviceObjects dev(pair);
	ibv_qp_init_attr qa = rc_qp_attr(dev.cq, 4);
	ibv_qp *a = ibv_create_qp(dev.pd, &qa);
	ibv_qp *b = ibv_create_qp(dev.pd, &qa);
	if (!a || !b)
		die("ibv_create_qp");
	check_states(a, IBV_QPS_RESET, IBV_QPS_INIT, "created");

	// The modify path an application takes, without querying first.
	check(b->state == IBV_QPS_RESET, std::string("second QP created: "
		"ibv_qp::state RESET (got ") + qps_name(b->state) + ")");
	check(modify_state(b, IBV_QPS_INIT) && b->state == IBV_QPS_INIT,
	      "RESET -> INIT by ibv_modify_qp");
	check_states(b, IBV_QPS_INIT, IBV_QPS_INIT, "after RESET -> INIT");
	check(modify_state(b, IBV_QPS_RESET) && b->state == IBV_QPS_RESET,
	      "INIT -> RESET by ibv_modify_qp");
	check_states(b, IBV_QPS_RESET, IBV_QPS_RESET, "after INIT -> RESET");
	check(modify_state(b, IBV_QPS_INIT), "RESET -> INIT again");
	check(modify_state(b, IBV_QPS_ERR) && b->state == IBV_QPS_ERR,
	      "INIT -> ERR by ibv_modify_qp");
	check_states(b, IBV_QPS_ERR, IBV_QPS_ERR, "after INIT -> ERR");
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);

	// rdma_cm's path: rdma_create_qp moves the QP to INIT itself, the
	// connection to RTS.
	Side one, srv, cli;

	one.setup(resolved_id(pair, pair.cch), depth(4));
	check_states(one.id->qp, IBV_QPS_INIT, IBV_QPS_INIT, "rdma_create_qp");
	one.teardown();
	connect_ends(pair, cli, srv, 4);
	// iw_cm moves a connected QP to RTS in the kernel, so the field keeps
	// what librdmacm last set through verbs until a query
	for (Side *s : { &cli, &srv }) {
		std::string who = s == &cli ? "connected (active)" :
					      "connected (passive)";
		ibv_qp_state q = qp_state(s->id->qp);

		check(q == IBV_QPS_RTS, who + ": ibv_query_qp RTS (got " +
					   qps_name(q) + ")");
		check(s->id->qp->state == IBV_QPS_RTS,
		      who + ": ibv_query_qp updates ibv_qp::state");
	}
	srv.teardown();
	cli.teardown();
	return 0;
}

// A Send longer than the receive WR it lands in: that receive completes
// with a local length error (as the IBA has it), the connection fails and
// the receive behind it is flushed. The Send itself has completed when it
// was sent, as iWARP completes Sends (the IBA would complete it with an
// invalid request after the NAK); the sender's QP goes to ERROR.
int do_recvlen(cm_pair::Pair &pair)
{
	Side srv, cli;

	connect_ends(pair, cli, srv, 4);
	srv.post_recv(1, srv.mem.data(), 16);
	srv.post_recv(2, srv.mem.data() + 64, 64);
	if (cli.post(IBV_WR_SEND, 10, cli.mem.data(), 64))
		die("ibv_post_send");
	auto r = srv.poll(2, 20000);
	auto s = cli.poll(1, 20000);

	check(r.size() == 2 && r[0].wr_id == 1 &&
		      r[0].status == IBV_WC_LOC_LEN_ERR,
	      std::string("the 16-byte receive: IBV_WC_LOC_LEN_ERR (got ") +
		      (r.empty() ? "nothing" : ibv_wc_status_str(r[0].status)) +
		      ")");
	check(r.size() == 2 && r[1].wr_id == 2 &&
		      r[1].status == IBV_WC_WR_FLUSH_ERR,
	      "the receive behind it: flushed");
	check(s.size() == 1 && s[0].status == IBV_WC_SUCCESS,
	      std::string("the 64-byte Send: completed when sent (got ") +
		      (s.empty() ? "nothing" : ibv_wc_status_str(s[0].status)) +
		      ")");
	// the Terminate reaches the sender: its QP goes to ERROR
	ibv_qp_state st = qp_state(cli.id->qp);
	for (int i = 0; i < 200 && st != IBV_QPS_ERR; i++) {
		std::this_thread::sleep_for(std::chrono::milliseconds(50));
		st = qp_state(cli.id->qp);
	}
	check(st == IBV_QPS_ERR, std::string("the sender's QP in ERROR (") +
					 qps_name(st) + ")");
	srv.teardown();
	cli.teardown();
	return 0;
}

int do_qpnum(cm_pair::Pair &pair, int rounds)
{
	DeviceObjects dev(pair);
	ibv_pd *pd = dev.pd;
	ibv_cq *cq = dev.cq;
	ibv_qp_init_attr qa = rc_qp_attr(cq, 4);

	ibv_qp *a = ibv_create_qp(pd, &qa);
	if (!a)
		die("ibv_create_qp");
	uint32_t na = a->qp_num;
	ibv_destroy_qp(a);
	ibv_qp *b = ibv_create_qp(pd, &qa);
	if (!b)
		die("ibv_create_qp");
	check(b->qp_num != na, "a new QP does not take the number of the QP "
			       "just destroyed (" + std::to_string(na) + " -> " +
			       std::to_string(b->qp_num) + ")");
	ibv_destroy_qp(b);

	// The race: create/destroy against connects naming the numbers.
	std::atomic<uint32_t> cur{ 0 };
	std::atomic<bool> stop{ false };
	std::atomic<long> refused{ 0 }, sent{ 0 }, other{ 0 }, rejected{ 0 };
	std::thread lsn([&] {
		while (!stop) {
			pollfd pf{ pair.sch->fd, POLLIN, 0 };
			rdma_cm_event *ev;

			if (poll(&pf, 1, 100) <= 0)
				continue;
			if (rdma_get_cm_event(pair.sch, &ev))
				die("rdma_get_cm_event");
			if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
				rdma_cm_id *id = ev->id;

				rdma_reject(id, nullptr, 0);
				rejected++;
				rdma_ack_cm_event(ev);
				rdma_destroy_id(id);
				continue;
			}
			rdma_ack_cm_event(ev);
		}
	});
	std::thread maker([&] {
		for (int i = 0; i < rounds; i++) {
			ibv_qp *q = ibv_create_qp(pd, &qa);

			if (!q)
				die("ibv_create_qp");
			cur = q->qp_num;
			std::this_thread::sleep_for(
				std::chrono::microseconds(100 * (i % 30)));
			if (ibv_destroy_qp(q))
				die("ibv_destroy_qp");
		}
		stop = true;
	});
	rdma_event_channel *ch = rdma_create_event_channel();
	if (!ch)
		die("rdma_create_event_channel");
	while (!stop) {
		rdma_cm_id *cid = resolved_id(pair, ch);
		rdma_conn_param p{};

		p.qp_num = cur;
		if (!rdma_connect(cid, &p))
			sent++;
		else if (errno == EINVAL)
			refused++;
		else
			other++;
		rdma_destroy_id(cid);
	}
	maker.join();
	lsn.join();
	// events of ids destroyed meanwhile were dropped with them
	rdma_destroy_event_channel(ch);
	std::printf("connects: %ld went out, %ld refused (no such QP), %ld other; %ld rejected\n",
		    sent.load(), refused.load(), other.load(), rejected.load());
	check(other == 0 && sent + refused > 0,
	      "every connect naming a QP being destroyed went out or was refused with EINVAL");
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	if (argc < 4) {
		std::fprintf(stderr,
			     "usage: %s reset|flushrace|qpaccess|victim|thief|cycle|srqpd|sgelimit|conns|accepter|connector|hold|traffic|reuse|qpnum|qpstate|recvlen ADDR PORT [N [SRC|step|go [DEPTH]]]\n",
			     argv[0]);
		return 2;
	}
	std::string cmd = argv[1];
	int n = argc > 4 ? std::atoi(argv[4]) : 20;

	if (cmd == "connector")	// no listener of its own
		return do_connector(argv[2], argv[3], n);
	cm_pair::Pair pair(argv[2], argv[3],
			   cmd == "traffic" && argc > 5 ? argv[5] : nullptr);

	if (cmd == "reset")
		do_reset(pair);
	else if (cmd == "flushrace")
		do_flushrace(pair, n);
	else if (cmd == "qpaccess")
		do_qpaccess(pair);
	else if (cmd == "victim")
		do_victim(pair);
	else if (cmd == "thief")
		do_thief(pair, n);
	else if (cmd == "cycle")
		do_cycle(pair, n);
	else if (cmd == "srqpd")
		do_srqpd(pair);
	else if (cmd == "sgelimit")
		do_sgelimit(pair);
	else if (cmd == "accepter")
		return do_accepter(pair, n);
	else if (cmd == "conns")
		do_conns(pair, n, argc > 5 && std::string(argv[5]) == "step",
			 argc > 6 ? std::atoi(argv[6]) : 16);
	else if (cmd == "hold")
		return do_hold(pair, n);
	else if (cmd == "traffic")
		do_traffic(pair, n);
	else if (cmd == "reuse")
		do_reuse(pair);
	else if (cmd == "qpnum")
		do_qpnum(pair, n);
	else if (cmd == "qpstate")
		do_qpstate(pair);
	else if (cmd == "recvlen")
		do_recvlen(pair);
	else
		return 2;
	return failures ? 1 : 0;
}
