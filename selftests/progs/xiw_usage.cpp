// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// xiw_usage: verbs behaviour that applications rely on, each case through
// rdma_cm connections inside one process (cm_pair.h) on any RDMA device
// (the tests run it on xiw and, where they compare, on rxe).
//
// overflow ADDR PORT send|recv: a CQ of 4 entries takes the completions of
//   16 signaled RDMA Writes (send: the requester's CQ) or of 16 Sends
//   (recv: the responder's receive CQ), nobody polling. Checked: one
//   IBV_EVENT_CQ_ERR per lost completion on that CQ and no other async
//   event; every Write's or Send's data placed; exactly ibv_cq::cqe
//   completions left to poll, the oldest ones, in order and successful;
//   on xiw the mapped ring's header counts the lost completions and the
//   rest of its mapping past the last slot is still zero; both QPs still
//   RTS and a Write and a Send after the drain complete with their data.
//
// sharedcq ADDR PORT [CONNS [MSGS]]: CONNS (4) connections whose active
//   QPs share one send CQ and one receive CQ, and whose passive QPs share
//   another pair; each QP of both sides sends MSGS (200) Sends of varying
//   length, up to 16 in flight per QP, round robin. Every completion names
//   the QP its wr_id belongs to (qp_num), comes in posting order for that
//   QP, and every receive holds the bytes of that QP's next message.
//
// inline ADDR PORT [MSGS]: Sends with IBV_SEND_INLINE of 1..max_inline_data
//   bytes (the QP asks for 64), bursts of 16 posted without polling; the
//   source buffer is overwritten the moment ibv_post_send returns. Once
//   from a registered buffer, once from unregistered memory with a bogus
//   lkey. Every received byte is the byte that was in the buffer at post.
//
// solicited ADDR PORT: the receive CQ has a completion channel and is
//   armed with ibv_req_notify_cq(cq, 1): an unsolicited Send wakes nobody,
//   a Send with IBV_SEND_SOLICITED does (one event, then disarmed); armed
//   for any completion an unsolicited Send wakes it; armed solicited-only,
//   an unsuccessful completion (the receives flushed when the QP goes to
//   ERROR) wakes it too, as ibv_req_notify_cq(3) defines a solicited CQE.
//
// events ADDR PORT: the passive QP takes its receives from an SRQ of 16
//   with 8 posted and a limit of 4 armed by ibv_modify_srq: 4 Sends
//   raise no event, the fifth (3 left) one IBV_EVENT_SRQ_LIMIT_REACHED
//   naming the SRQ, which disarms the limit (ibv_query_srq says 0) so the
//   sixth raises none; every receive holds its data and names the QP.
//   The QP moved to ERROR raises one IBV_EVENT_QP_LAST_WQE_REACHED naming
//   it, and the 2 receives left stay on the SRQ (no flush completion).
//
// port ADDR PORT NETDEV: the listener's device (bound to ADDR) sees
//   IBV_EVENT_PORT_ERR on port 1 when NETDEV goes down (ip link, run by
//   the program) and ibv_query_port says DOWN; IBV_EVENT_PORT_ACTIVE and
//   ACTIVE when it comes back up.
//
// bigconn ADDR PORT [BYTES]: BYTES (4 GiB + 64 MiB) over one connection,
//   so that TCP's 32-bit sequence numbers wrap: rounds of 16 MiB of RDMA
//   Writes from a fixed pattern into the peer's 16 MiB, each round at its
//   own rotation, a Read behind every 24 Writes and at the round's end
//   (its completion: the Writes are placed); every word of the 16 MiB is
//   then compared with where the rotation puts it.
//
// memlock ADDR PORT LIMIT: run as a user without CAP_IPC_LOCK under
//   RLIMIT_MEMLOCK = LIMIT bytes (the test sets both): two connected QPs
//   with their CQs pin nothing (VmPin 0: the rings are kernel memory);
//   MRs up to LIMIT register and are counted in VmPin to the page, one
//   page more fails with ENOMEM; CQs and QPs with large rings are still
//   created at the limit; a Write between the MRs carries its data;
//   deregistration gives the pages back (VmPin drops, the next
//   registration fits again); at the end VmPin is 0.
//
// Prints "ok WHAT" / "FAIL WHAT" per check and a closing summary line;
// exit status 0 only if every check passed, 2 on a setup failure.
#include "checks.h"
#include "verbs_side.h"

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/xiw-abi.h>

#include <poll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using checks::check;
using checks::fmt;
using cm_pair::die;
using Clock = std::chrono::steady_clock;

// One QP on @id: its own CQs, depths, inline request.
ibv_qp *make_qp(rdma_cm_id *id, ibv_pd *pd, ibv_cq *scq, ibv_cq *rcq,
		uint32_t sdepth, uint32_t rdepth, uint32_t max_inline = 0)
{
	ibv_qp_init_attr a{};

	a.qp_type = IBV_QPT_RC;
	a.send_cq = scq;
	a.recv_cq = rcq;
	a.cap.max_send_wr = sdepth;
	a.cap.max_recv_wr = rdepth;
	a.cap.max_send_sge = 1;
	a.cap.max_recv_sge = 1;
	a.cap.max_inline_data = max_inline;
	if (rdma_create_qp(id, pd, &a))
		die("rdma_create_qp");
	return id->qp;
}

// The device context of @id in *@ctx and a PD on it.
ibv_pd *open_pd(rdma_cm_id *id, ibv_context **ctx)
{
	ibv_pd *pd;

	*ctx = id->verbs;
	pd = ibv_alloc_pd(*ctx);
	if (!pd)
		die("ibv_alloc_pd");
	return pd;
}

ibv_cq *make_cq(ibv_context *ctx, int n, ibv_comp_channel *ch = nullptr)
{
	ibv_cq *cq = ibv_create_cq(ctx, n, nullptr, ch, 0);

	if (!cq)
		die("ibv_create_cq");
	return cq;
}

ibv_mr *reg(ibv_pd *pd, void *p, size_t n)
{
	ibv_mr *mr = ibv_reg_mr(pd, p, n,
				IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				IBV_ACCESS_REMOTE_READ);

	if (!mr)
		die("ibv_reg_mr");
	return mr;
}

int post_send(ibv_qp *qp, ibv_wr_opcode op, uint64_t wr_id, const void *buf,
	      uint32_t len, uint32_t lkey, unsigned flags, uint64_t raddr = 0,
	      uint32_t rkey = 0)
{
	ibv_sge sge{ (uintptr_t)buf, len, lkey };
	ibv_send_wr wr{}, *bad;

	wr.wr_id = wr_id;
	wr.opcode = op;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = flags;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(qp, &wr, &bad);
}

// One receive of one SGE, posted to a QP's RQ or to an SRQ.
void post_recv_to(ibv_qp *qp, ibv_srq *srq, uint64_t wr_id, void *buf,
		  uint32_t len, uint32_t lkey)
{
	ibv_sge sge{ (uintptr_t)buf, len, lkey };
	ibv_recv_wr wr{}, *bad;

	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	if (qp ? ibv_post_recv(qp, &wr, &bad) : ibv_post_srq_recv(srq, &wr, &bad))
		die(qp ? "ibv_post_recv" : "ibv_post_srq_recv");
}

void post_recv(ibv_qp *qp, uint64_t wr_id, void *buf, uint32_t len,
	       uint32_t lkey)
{
	post_recv_to(qp, nullptr, wr_id, buf, len, lkey);
}

// Up to @n completions of @cq within @ms.
std::vector<ibv_wc> poll_n(ibv_cq *cq, size_t n, int ms)
{
	std::vector<ibv_wc> out;
	auto end = Clock::now() + std::chrono::milliseconds(ms);

	while (out.size() < n && Clock::now() < end) {
		ibv_wc wc[16];
		int k = ibv_poll_cq(cq, int(std::min<size_t>(n - out.size(), 16)),
				    wc);

		if (k < 0)
			die("ibv_poll_cq");
		out.insert(out.end(), wc, wc + k);
		if (!k)
			std::this_thread::sleep_for(std::chrono::microseconds(100));
	}
	return out;
}

ibv_qp_state qp_state(ibv_qp *qp)
{
	ibv_qp_attr a{};
	ibv_qp_init_attr ia{};

	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		die("ibv_query_qp");
	return a.qp_state;
}

const char *state_str(ibv_qp_state s)
{
	switch (s) {
	case IBV_QPS_RESET: return "RESET";
	case IBV_QPS_INIT: return "INIT";
	case IBV_QPS_RTR: return "RTR";
	case IBV_QPS_RTS: return "RTS";
	case IBV_QPS_SQD: return "SQD";
	case IBV_QPS_SQE: return "SQE";
	case IBV_QPS_ERR: return "ERR";
	default: return "?";
	}
}

// The connection's ids, both ends on the same device context.
struct Conn {
	rdma_cm_id *act = nullptr, *pas = nullptr;
};

Conn connect(cm_pair::Pair &pair,
	     const std::function<void(rdma_cm_id *)> &setup_active,
	     const std::function<void(rdma_cm_id *)> &setup_passive)
{
	rdma_conn_param p{};
	Conn c;

	p.responder_resources = 4;
	p.initiator_depth = 4;
	c.act = pair.connect(setup_active, setup_passive, p, p, &c.pas);
	return c;
}

// The DISCONNECTED event of @ch within @ms, said with its delay; none
// in time is said too (the cases check nothing after a disconnect).
void wait_disconnected(rdma_event_channel *ch, const char *side, int ms)
{
	auto t0 = Clock::now();
	pollfd pfd{ ch->fd, POLLIN, 0 };

	if (poll(&pfd, 1, ms) <= 0) {
		std::printf("# %s side: no DISCONNECTED in %d ms\n", side, ms);
		return;
	}
	rdma_ack_cm_event(cm_pair::expect(ch, RDMA_CM_EVENT_DISCONNECTED));
	std::printf("# %s side: DISCONNECTED after %lld ms\n", side,
		    (long long)std::chrono::duration_cast<std::chrono::milliseconds>(
			    Clock::now() - t0).count());
}

// Ends @c from the active side and destroys both ends. Each side's
// DISCONNECTED is awaited for up to 5 s only: on rxe over a dummy
// netdev the active side's comes when its DREQ times out, some 75 s
// later; the cm tests judge disconnects, these cases do not.
void disconnect(cm_pair::Pair &pair, Conn &c)
{
	rdma_disconnect(c.act);
	wait_disconnected(pair.cch, "active", 5000);
	wait_disconnected(pair.sch, "passive", 5000);
	rdma_destroy_qp(c.act);
	rdma_destroy_qp(c.pas);
	rdma_destroy_id(c.act);
	rdma_destroy_id(c.pas);
}

uint8_t pat(uint32_t msg, uint32_t i)
{
	return uint8_t(msg * 31 + i * 7 + 1);
}

// The xiw CQ ring of @cq in our mappings: the mapping whose header says
// cq->cqe entries of struct xiw_cqe's size (the test's other CQs have
// other sizes). nullptr on another provider or if none matches.
struct Ring {
	uint8_t *addr = nullptr;
	size_t len = 0;
};

Ring find_cq_ring(ibv_cq *cq)
{
	std::ifstream maps("/proc/self/maps");
	std::string line;
	Ring found;
	int n = 0;

	while (std::getline(maps, line)) {
		if (line.find("/dev/infiniband/uverbs") == std::string::npos)
			continue;
		std::istringstream is(line);
		std::string range, perms;
		is >> range >> perms;
		if (perms.size() < 2 || perms[0] != 'r')
			continue;
		auto dash = range.find('-');
		uintptr_t lo = std::stoull(range.substr(0, dash), nullptr, 16);
		uintptr_t hi = std::stoull(range.substr(dash + 1), nullptr, 16);
		auto *ctrl = reinterpret_cast<const xiw_queue_ctrl *>(lo);

		if (hi - lo < XIW_QUEUE_HDR_SIZE + sizeof(xiw_cqe) * uint64_t(cq->cqe) ||
		    ctrl->num_entries != uint32_t(cq->cqe) ||
		    ctrl->entry_size != sizeof(xiw_cqe))
			continue;
		found = { reinterpret_cast<uint8_t *>(lo), size_t(hi - lo) };
		n++;
	}
	if (n != 1)
		return {};
	return found;
}

// Nonzero bytes of the mapping past the ring's last slot.
size_t tail_dirty(const Ring &r, int cqe)
{
	size_t n = 0;

	for (size_t i = XIW_QUEUE_HDR_SIZE + sizeof(xiw_cqe) * size_t(cqe);
	     i < r.len; i++)
		n += r.addr[i] != 0;
	return n;
}

// An async event, copied out before it is acknowledged.
struct AsyncEv {
	ibv_event_type type;
	void *elem;	// the CQ, QP or SRQ it names (element is a union)
	int port;
};

// The async events of @ctx: the first waited for up to @ms, then more
// until 300 ms pass without one. Each is printed and acknowledged.
std::vector<AsyncEv> async_events(ibv_context *ctx, int ms)
{
	std::vector<AsyncEv> out;
	int wait = ms;

	for (;;) {
		pollfd pfd{ ctx->async_fd, POLLIN, 0 };
		ibv_async_event ae;

		if (poll(&pfd, 1, wait) <= 0)
			return out;
		if (ibv_get_async_event(ctx, &ae))
			die("ibv_get_async_event");
		out.push_back({ ae.event_type, ae.element.srq,
				ae.element.port_num });
		std::printf("# async event %s\n",
			    ibv_event_type_str(ae.event_type));
		ibv_ack_async_event(&ae);
		wait = 300;
	}
}

// How many of @ev are of @type and name @elem.
size_t count_ev(const std::vector<AsyncEv> &ev, ibv_event_type type,
		const void *elem)
{
	return std::count_if(ev.begin(), ev.end(), [&](const AsyncEv &e) {
		return e.type == type && e.elem == elem;
	});
}

// Milliseconds from now to @end, at least 1.
int ms_left(Clock::time_point end)
{
	auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
		end - Clock::now()).count();

	return ms > 0 ? int(ms) + 1 : 1;
}

// Async events of @ctx until @want CQ_ERR events on @cq came, or @ms
// passed; then 300 ms more for any further event. Returns the CQ_ERR
// count; *@other counts every other event (async_events() prints all).
int wait_cq_err(ibv_context *ctx, ibv_cq *cq, int want, int ms, int *other)
{
	auto end = Clock::now() + std::chrono::milliseconds(ms);
	int got = 0;

	*other = 0;
	do {
		for (const AsyncEv &e : async_events(ctx, ms_left(end))) {
			if (e.type == IBV_EVENT_CQ_ERR && e.elem == cq)
				got++;
			else
				(*other)++;
		}
	} while (got < want && Clock::now() < end);
	return got;
}

// ---- overflow ----

int do_overflow(cm_pair::Pair &pair, bool recv_side)
{
	constexpr int kMsgs = 16, kLen = 64;
	std::vector<uint8_t> amem(kMsgs * kLen * 2), pmem(kMsgs * kLen * 2);
	ibv_context *ctx = nullptr;
	ibv_pd *pd = nullptr;
	ibv_cq *small = nullptr, *acq = nullptr, *pcq = nullptr, *pscq = nullptr;
	ibv_mr *amr = nullptr, *pmr = nullptr;
	const char *who = recv_side ? "receive" : "send";

	Conn c = connect(pair,
		[&](rdma_cm_id *id) {
			pd = open_pd(id, &ctx);
			small = make_cq(ctx, 4);
			acq = recv_side ? make_cq(ctx, 64) : small;
			amr = reg(pd, amem.data(), amem.size());
			make_qp(id, pd, acq, acq, kMsgs, 1);
		},
		[&](rdma_cm_id *id) {
			if (id->verbs != ctx)
				die("two device contexts");
			pcq = recv_side ? small : make_cq(ctx, 64);
			pscq = make_cq(ctx, 64);
			pmr = reg(pd, pmem.data(), pmem.size());
			make_qp(id, pd, pscq, pcq, kMsgs, kMsgs + 1);
			if (recv_side)
				for (int i = 0; i < kMsgs; i++)
					post_recv(id->qp, i, &pmem[i * kLen],
						  kLen, pmr->lkey);
		});
	const int cqe = small->cqe;
	const bool xiw = !std::strncmp(ibv_get_device_name(ctx->device), "xiw", 3);
	Ring ring = xiw ? find_cq_ring(small) : Ring{};

	std::printf("# %s: %s CQ of 4 holds %d completions, %d %s\n",
		    ibv_get_device_name(ctx->device), who, cqe, kMsgs,
		    recv_side ? "Sends" : "signaled Writes");
	if (cqe >= kMsgs)
		die("CQ too large to overflow");
	if (xiw) {
		check(ring.addr != nullptr, "xiw: the CQ's ring found in the mappings");
		if (!ring.addr)
			return checks::summary();
		check(tail_dirty(ring, cqe) == 0,
		      fmt("the ring's mapping is zero past its %d slots before the test (%zu bytes)",
			  cqe, ring.len - XIW_QUEUE_HDR_SIZE - sizeof(xiw_cqe) * cqe));
	}

	for (int i = 0; i < kMsgs; i++) {
		memset(&amem[i * kLen], 0, kLen);
		for (int b = 0; b < kLen; b++)
			amem[i * kLen + b] = pat(i, b);
		int rv = recv_side ?
			post_send(c.act->qp, IBV_WR_SEND, i, &amem[i * kLen], kLen,
				  amr->lkey, IBV_SEND_SIGNALED) :
			post_send(c.act->qp, IBV_WR_RDMA_WRITE, i, &amem[i * kLen],
				  kLen, amr->lkey, IBV_SEND_SIGNALED,
				  (uintptr_t)&pmem[i * kLen], pmr->rkey);
		if (rv) {
			errno = rv;
			die("ibv_post_send");
		}
	}
	if (recv_side) {
		// the sender's own CQ is large: its 16 completions, all fine
		auto wc = poll_n(acq, kMsgs, 20000);
		int good = 0;

		for (size_t i = 0; i < wc.size(); i++)
			good += wc[i].status == IBV_WC_SUCCESS && wc[i].wr_id == i;
		check(good == kMsgs,
		      fmt("sender: %d of %d Sends completed successfully in order",
			  good, kMsgs));
	}

	int other;
	int got = wait_cq_err(ctx, small, kMsgs - cqe, 20000, &other);

	check(got == kMsgs - cqe,
	      fmt("IBV_EVENT_CQ_ERR on the %s CQ: %d events for %d lost completions",
		  who, got, kMsgs - cqe));
	check(other == 0, fmt("no other async event (%d)", other));

	// every operation placed its data, the lost completions' too
	int placed = 0;
	for (auto end = Clock::now() + std::chrono::seconds(10);;) {
		placed = 0;
		for (int i = 0; i < kMsgs; i++)
			placed += !memcmp(&pmem[i * kLen], &amem[i * kLen], kLen);
		if (placed == kMsgs || Clock::now() > end)
			break;
		std::this_thread::sleep_for(std::chrono::milliseconds(10));
	}
	check(placed == kMsgs, fmt("%d of %d messages placed with their bytes",
				   placed, kMsgs));

	if (xiw) {
		auto *ctrl = reinterpret_cast<volatile xiw_queue_ctrl *>(ring.addr);

		check(ctrl->overflow == uint32_t(kMsgs - cqe),
		      fmt("xiw: the ring's header counts %u lost completions (want %d)",
			  ctrl->overflow, kMsgs - cqe));
		check(tail_dirty(ring, cqe) == 0,
		      "nothing written in the ring's mapping past its last slot");
	}

	auto wc = poll_n(small, 2 * kMsgs, 500);
	bool inorder = wc.size() == size_t(cqe);
	ibv_qp *owner = recv_side ? c.pas->qp : c.act->qp;

	for (size_t i = 0; inorder && i < wc.size(); i++)
		inorder = wc[i].wr_id == i && wc[i].status == IBV_WC_SUCCESS &&
			  wc[i].qp_num == owner->qp_num &&
			  wc[i].opcode == (recv_side ? IBV_WC_RECV : IBV_WC_RDMA_WRITE) &&
			  (!recv_side || wc[i].byte_len == uint32_t(kLen));
	std::string got_ids;
	for (auto &w : wc)
		got_ids += fmt(" %" PRIu64 ":%s", w.wr_id, ibv_wc_status_str(w.status));
	check(inorder, fmt("the CQ gives exactly its %d oldest completions, successful and in order (got%s)",
			   cqe, got_ids.c_str()));
	check(poll_n(small, 1, 200).empty(), "the lost completions never appear");

	ibv_qp_state as = qp_state(c.act->qp), ps = qp_state(c.pas->qp);
	std::printf("# after the overflow: active QP %s, passive QP %s\n",
		    state_str(as), state_str(ps));
	check(as == IBV_QPS_RTS && ps == IBV_QPS_RTS,
	      fmt("both QPs still RTS after the overflow (%s, %s)",
		  state_str(as), state_str(ps)));

	// the connection goes on: a Write and a Send, both checked
	uint8_t *src = &amem[kMsgs * kLen], *dst = &pmem[kMsgs * kLen];
	for (int b = 0; b < kLen; b++)
		src[b] = pat(100, b);
	post_recv(c.pas->qp, 100, dst, kLen, pmr->lkey);
	if (post_send(c.act->qp, IBV_WR_RDMA_WRITE, 101, src, kLen, amr->lkey,
		      IBV_SEND_SIGNALED, (uintptr_t)dst + kLen, pmr->rkey) ||
	    post_send(c.act->qp, IBV_WR_SEND, 102, src, kLen, amr->lkey,
		      IBV_SEND_SIGNALED))
		die("ibv_post_send");
	auto sw = poll_n(acq, 2, 10000);
	auto rw = poll_n(pcq, 1, 10000);
	check(sw.size() == 2 && sw[0].wr_id == 101 && sw[1].wr_id == 102 &&
	      sw[0].status == IBV_WC_SUCCESS && sw[1].status == IBV_WC_SUCCESS &&
	      rw.size() == 1 && rw[0].wr_id == 100 &&
	      rw[0].status == IBV_WC_SUCCESS && rw[0].byte_len == uint32_t(kLen),
	      "after the drain a Write and a Send complete successfully");
	check(!memcmp(dst, src, kLen) && !memcmp(dst + kLen, src, kLen),
	      "their bytes arrived");

	disconnect(pair, c);
	ibv_dereg_mr(amr);
	ibv_dereg_mr(pmr);
	ibv_destroy_cq(small);
	if (acq != small)
		ibv_destroy_cq(acq);
	if (pcq != small)
		ibv_destroy_cq(pcq);
	ibv_destroy_cq(pscq);
	ibv_dealloc_pd(pd);
	return checks::summary();
}

// ---- sharedcq ----

constexpr uint32_t kShMagic = 0x5ca1ab1e;

struct ShHdr {
	uint32_t magic, side, conn, seq;
};

uint32_t sh_len(uint32_t seq)
{
	return sizeof(ShHdr) + seq % 97;
}

int do_sharedcq(cm_pair::Pair &pair, int conns, int msgs)
{
	constexpr uint32_t kWin = 16, kSlot = 128;
	ibv_context *ctx = nullptr;
	ibv_pd *pd = nullptr;
	ibv_cq *scq[2] = {}, *rcq[2] = {};
	std::vector<Conn> cs(conns);
	// [side][conn]: the QP, its send and receive buffers
	std::vector<std::vector<ibv_qp *>> qp(2, std::vector<ibv_qp *>(conns));
	std::vector<uint8_t> mem(size_t(2) * conns * (kWin + msgs) * kSlot);
	ibv_mr *mr = nullptr;
	auto sbuf = [&](int s, int c, uint32_t seq) {
		return &mem[((size_t(s) * conns + c) * (kWin + msgs) + seq % kWin) * kSlot];
	};
	auto rbuf = [&](int s, int c, uint32_t seq) {
		return &mem[((size_t(s) * conns + c) * (kWin + msgs) + kWin + seq) * kSlot];
	};

	for (int i = 0; i < conns; i++)
		cs[i] = connect(pair,
			[&](rdma_cm_id *id) {
				if (!ctx) {
					pd = open_pd(id, &ctx);
					for (int s = 0; s < 2; s++) {
						scq[s] = make_cq(ctx, conns * kWin * 2);
						rcq[s] = make_cq(ctx, conns * msgs + 16);
					}
					mr = reg(pd, mem.data(), mem.size());
				}
				qp[0][i] = make_qp(id, pd, scq[0], rcq[0], kWin, msgs);
				for (int m = 0; m < msgs; m++)
					post_recv(id->qp, uint64_t(i) << 32 | m,
						  rbuf(0, i, m), kSlot, mr->lkey);
			},
			[&](rdma_cm_id *id) {
				qp[1][i] = make_qp(id, pd, scq[1], rcq[1], kWin, msgs);
				for (int m = 0; m < msgs; m++)
					post_recv(id->qp, uint64_t(i) << 32 | m,
						  rbuf(1, i, m), kSlot, mr->lkey);
			});
	std::printf("# %s: %d connections, %d Sends each way on each, one send and one receive CQ per side\n",
		    ibv_get_device_name(ctx->device), conns, msgs);

	// [side][conn]
	std::vector<std::vector<uint32_t>> posted(2, std::vector<uint32_t>(conns)),
		sdone = posted, rdone = posted;
	int bad_attr = 0, bad_order = 0, bad_status = 0, bad_data = 0, total = 0;
	std::string first_bad;
	auto note = [&](int &ctr, const std::string &what) {
		if (!ctr++ && first_bad.empty())
			first_bad = what;
	};
	auto conn_of = [&](int s, uint32_t qpn) {
		for (int c = 0; c < conns; c++)
			if (qp[s][c]->qp_num == qpn)
				return c;
		return -1;
	};
	// One completion of side @s, a Send's or a receive's (@recv): its
	// status and opcode, the QP it names against the one its wr_id says
	// (connection << 32 | message number), its order on that QP. Returns
	// the connection.
	auto account = [&](int s, const ibv_wc &w, bool recv) {
		int c = int(w.wr_id >> 32);
		uint32_t seq = uint32_t(w.wr_id);
		const char *op = recv ? "recv" : "send";

		total++;
		if (w.status != IBV_WC_SUCCESS ||
		    w.opcode != (recv ? IBV_WC_RECV : IBV_WC_SEND))
			note(bad_status, fmt("side %d %s %" PRIx64 ": %s opcode %d", s, op,
					     w.wr_id, ibv_wc_status_str(w.status), w.opcode));
		if (c >= conns)
			die("wr_id of no QP of ours");
		if (conn_of(s, w.qp_num) != c)
			note(bad_attr, fmt("side %d %s wr_id %" PRIx64 " reported on qp_num %u (conn %d)",
					   s, op, w.wr_id, w.qp_num, conn_of(s, w.qp_num)));
		uint32_t &done = (recv ? rdone : sdone)[s][c];
		if (seq != done)
			note(bad_order, fmt("side %d conn %d: %s completion %u, expected %u",
					    s, c, recv ? "receive" : "send", seq, done));
		done = seq + 1;
		return c;
	};
	const int want = 2 * 2 * conns * msgs;
	// ends when every completion came or none came for 15 s
	auto end = Clock::now() + std::chrono::seconds(15);

	while (total < want && Clock::now() < end) {
		int before = total;

		for (int s = 0; s < 2; s++)
			for (int c = 0; c < conns; c++) {
				uint32_t &p = posted[s][c];

				// one Send per QP per turn: the QPs interleave
				if (p >= uint32_t(msgs) || p - sdone[s][c] >= kWin)
					continue;
				uint8_t *b = sbuf(s, c, p);
				ShHdr h{ kShMagic, uint32_t(s), uint32_t(c), p };

				memcpy(b, &h, sizeof(h));
				for (uint32_t k = sizeof(h); k < sh_len(p); k++)
					b[k] = pat(p + 1000 * c + 100000 * s, k);
				if (post_send(qp[s][c], IBV_WR_SEND,
					      uint64_t(c) << 32 | p, b, sh_len(p),
					      mr->lkey, IBV_SEND_SIGNALED))
					die("ibv_post_send");
				p++;
			}
		for (int s = 0; s < 2; s++) {
			ibv_wc wc[32];
			int k = ibv_poll_cq(scq[s], 32, wc);

			for (int j = 0; j < k; j++)
				account(s, wc[j], false);
			k = ibv_poll_cq(rcq[s], 32, wc);
			for (int j = 0; j < k; j++) {
				int c = account(s, wc[j], true);
				uint32_t seq = uint32_t(wc[j].wr_id);

				// the peer's message number seq of this connection
				const uint8_t *b = rbuf(s, c, seq);
				ShHdr h;
				bool ok = wc[j].byte_len == sh_len(seq);

				memcpy(&h, b, sizeof(h));
				ok = ok && h.magic == kShMagic && h.side == uint32_t(1 - s) &&
				     h.conn == uint32_t(c) && h.seq == seq;
				for (uint32_t q = sizeof(h); ok && q < sh_len(seq); q++)
					ok = b[q] == pat(seq + 1000 * c + 100000 * (1 - s), q);
				if (!ok)
					note(bad_data, fmt("side %d conn %d receive %u: %u bytes, header %x/%u/%u/%u",
							   s, c, seq, wc[j].byte_len, h.magic,
							   h.side, h.conn, h.seq));
			}
		}
		if (total != before)
			end = Clock::now() + std::chrono::seconds(15);
	}
	if (!first_bad.empty())
		std::printf("# first problem: %s\n", first_bad.c_str());
	check(total == want, fmt("%d of %d completions polled", total, want));
	check(bad_status == 0, fmt("every completion successful with its opcode (%d not)", bad_status));
	check(bad_attr == 0, fmt("every completion names the QP of its wr_id (%d not)", bad_attr));
	check(bad_order == 0, fmt("completions in posting order per QP (%d out of order)", bad_order));
	check(bad_data == 0, fmt("every receive holds its QP's next message (%d not)", bad_data));

	for (auto &c : cs)
		disconnect(pair, c);
	ibv_dereg_mr(mr);
	for (int s = 0; s < 2; s++) {
		ibv_destroy_cq(scq[s]);
		ibv_destroy_cq(rcq[s]);
	}
	ibv_dealloc_pd(pd);
	return checks::summary();
}

// ---- inline ----

int do_inline(cm_pair::Pair &pair, int msgs)
{
	constexpr uint32_t kBurst = 16, kSlot = 128;
	ibv_context *ctx = nullptr;
	ibv_pd *pd = nullptr;
	ibv_cq *acq = nullptr, *pcq = nullptr;
	std::vector<uint8_t> src(kSlot), rmem(kBurst * kSlot);
	ibv_mr *smr = nullptr, *rmr = nullptr;
	uint32_t max_inline = 0;

	Conn c = connect(pair,
		[&](rdma_cm_id *id) {
			pd = open_pd(id, &ctx);
			acq = make_cq(ctx, 64);
			pcq = make_cq(ctx, 64);
			smr = reg(pd, src.data(), src.size());
			rmr = reg(pd, rmem.data(), rmem.size());
			make_qp(id, pd, acq, acq, kBurst, 1, 64);
			ibv_qp_attr a{};
			ibv_qp_init_attr ia{};
			if (ibv_query_qp(id->qp, &a, IBV_QP_CAP, &ia))
				die("ibv_query_qp");
			max_inline = ia.cap.max_inline_data;
		},
		[&](rdma_cm_id *id) {
			make_qp(id, pd, pcq, pcq, 1, kBurst);
		});
	std::printf("# %s: max_inline_data %u\n",
		    ibv_get_device_name(ctx->device), max_inline);
	check(max_inline >= 64, fmt("the QP grants the 64 inline bytes it asked for (%u)",
				    max_inline));
	if (max_inline > 64)
		max_inline = 64;

	// @from: the buffer the Sends come from; @lkey: its lkey (any value
	// for inline data)
	auto run = [&](const char *what, uint8_t *from, uint32_t lkey) {
		int bad_wc = 0, bad_data = 0, done = 0;
		std::string first;

		for (int m0 = 0; m0 < msgs; m0 += kBurst) {
			int n = std::min<int>(kBurst, msgs - m0);
			std::vector<uint32_t> lens(n);

			for (int j = 0; j < n; j++) {
				memset(&rmem[j * kSlot], 0, kSlot);
				post_recv(c.pas->qp, m0 + j, &rmem[j * kSlot], kSlot,
					  rmr->lkey);
			}
			for (int j = 0; j < n; j++) {
				uint32_t m = m0 + j, len = 1 + m % max_inline;

				lens[j] = len;
				for (uint32_t b = 0; b < len; b++)
					from[b] = pat(m, b);
				int rv = post_send(c.act->qp, IBV_WR_SEND, m, from, len,
						   lkey, IBV_SEND_INLINE |
						   (j == n - 1 ? IBV_SEND_SIGNALED : 0));
				// the buffer is ours again: scribble over it
				memset(from, 0xa5, kSlot);
				if (rv) {
					bad_wc++;
					first = fmt("ibv_post_send of message %u: %s", m,
						    strerror(rv));
					break;
				}
			}
			if (bad_wc)
				break;
			auto sw = poll_n(acq, 1, 20000);
			auto rw = poll_n(pcq, n, 20000);

			if (sw.size() != 1 || sw[0].status != IBV_WC_SUCCESS ||
			    sw[0].wr_id != uint64_t(m0 + n - 1)) {
				if (!bad_wc++)
					first = sw.empty() ? "no send completion" :
						fmt("send %" PRIu64 ": %s", sw[0].wr_id,
						    ibv_wc_status_str(sw[0].status));
			}
			for (size_t j = 0; j < rw.size(); j++) {
				uint32_t m = uint32_t(rw[j].wr_id), k = m - m0;

				if (rw[j].status != IBV_WC_SUCCESS || k != j ||
				    rw[j].byte_len != lens[k]) {
					if (!bad_wc++)
						first = fmt("receive %u: %s, %u bytes", m,
							    ibv_wc_status_str(rw[j].status),
							    rw[j].byte_len);
					continue;
				}
				bool ok = true;
				for (uint32_t b = 0; b < lens[k]; b++)
					ok = ok && rmem[k * kSlot + b] == pat(m, b);
				if (!ok && !bad_data++)
					first = fmt("message %u (%u bytes): %s", m, lens[k],
						    checks::hex(&rmem[k * kSlot],
								std::min<uint32_t>(lens[k], 16)).c_str());
				done++;
			}
			if (rw.size() != size_t(n)) {
				if (!bad_wc++)
					first = fmt("%zu of %d receives completed", rw.size(), n);
				break;
			}
		}
		if (!first.empty())
			std::printf("# %s: first problem: %s\n", what, first.c_str());
		check(bad_wc == 0 && done == msgs,
		      fmt("inline Sends %s: %d of %d delivered, %d bad completions",
			  what, done, msgs, bad_wc));
		check(bad_data == 0,
		      fmt("inline Sends %s: every byte as it was at post time (%d messages scribbled)",
			  what, bad_data));
	};
	run("from a registered buffer", src.data(), smr->lkey);
	std::vector<uint8_t> plain(kSlot);
	run("from unregistered memory", plain.data(), 0xdead00);

	disconnect(pair, c);
	ibv_dereg_mr(smr);
	ibv_dereg_mr(rmr);
	ibv_destroy_cq(acq);
	ibv_destroy_cq(pcq);
	ibv_dealloc_pd(pd);
	return checks::summary();
}

// ---- solicited ----

// Whether the channel has an event within @ms; if so, it is taken and
// acked and must be for @cq.
bool channel_event(ibv_comp_channel *ch, ibv_cq *cq, int ms)
{
	pollfd pfd{ ch->fd, POLLIN, 0 };

	if (poll(&pfd, 1, ms) <= 0)
		return false;
	ibv_cq *ecq;
	void *ectx;

	if (ibv_get_cq_event(ch, &ecq, &ectx))
		die("ibv_get_cq_event");
	if (ecq != cq)
		die("event for another CQ");
	ibv_ack_cq_events(ecq, 1);
	return true;
}

int do_solicited(cm_pair::Pair &pair)
{
	constexpr uint32_t kLen = 32, kN = 16;
	ibv_context *ctx = nullptr;
	ibv_pd *pd = nullptr;
	ibv_cq *acq = nullptr, *pcq = nullptr, *pscq = nullptr;
	ibv_comp_channel *ch = nullptr;
	std::vector<uint8_t> src(kN * kLen), rmem(kN * kLen);
	ibv_mr *smr = nullptr, *rmr = nullptr;

	Conn c = connect(pair,
		[&](rdma_cm_id *id) {
			ctx = id->verbs;
			pd = ibv_alloc_pd(ctx);
			ch = ibv_create_comp_channel(ctx);
			if (!pd || !ch)
				die("pd/channel");
			acq = make_cq(ctx, 64);
			pcq = make_cq(ctx, 64, ch);
			pscq = make_cq(ctx, 64);
			smr = reg(pd, src.data(), src.size());
			rmr = reg(pd, rmem.data(), rmem.size());
			make_qp(id, pd, acq, acq, kN, 1);
		},
		[&](rdma_cm_id *id) {
			make_qp(id, pd, pscq, pcq, 1, kN);
			for (uint32_t i = 0; i < kN; i++)
				post_recv(id->qp, i, &rmem[i * kLen], kLen, rmr->lkey);
		});
	std::printf("# %s\n", ibv_get_device_name(ctx->device));
	uint32_t next = 0;

	// send: one Send, solicited or not, its sender completion; recv: its
	// receive completion polled, data checked
	auto send = [&](bool solicited) {
		uint32_t m = next++;

		for (uint32_t b = 0; b < kLen; b++)
			src[m * kLen + b] = pat(m, b);
		if (post_send(c.act->qp, IBV_WR_SEND, m, &src[m * kLen], kLen,
			      smr->lkey, IBV_SEND_SIGNALED |
			      (solicited ? IBV_SEND_SOLICITED : 0)))
			die("ibv_post_send");
		auto w = poll_n(acq, 1, 10000);
		if (w.size() != 1 || w[0].status != IBV_WC_SUCCESS)
			die("send completion");
		return m;
	};
	auto recv = [&](uint32_t m, const std::string &what) {
		auto w = poll_n(pcq, 1, 10000);
		check(w.size() == 1 && w[0].wr_id == m &&
		      w[0].status == IBV_WC_SUCCESS && w[0].byte_len == kLen &&
		      !memcmp(&rmem[m * kLen], &src[m * kLen], kLen),
		      what + ": its receive completed with the data");
	};
	auto arm = [&](int solicited_only) {
		if (ibv_req_notify_cq(pcq, solicited_only))
			die("ibv_req_notify_cq");
	};

	// armed solicited-only, an unsolicited Send: no event
	arm(1);
	uint32_t m = send(false);
	recv(m, "unsolicited Send");
	check(!channel_event(ch, pcq, 500),
	      "armed solicited-only: an unsolicited Send raises no event");
	// the same arming, a solicited Send: the event
	m = send(true);
	check(channel_event(ch, pcq, 5000),
	      "armed solicited-only: a Send with IBV_SEND_SOLICITED raises the event");
	recv(m, "solicited Send");
	// the event disarmed the CQ
	m = send(true);
	recv(m, "solicited Send after the event");
	check(!channel_event(ch, pcq, 500),
	      "the event disarmed the CQ: the next solicited Send raises none");
	// armed for any completion: an unsolicited Send wakes it
	arm(0);
	m = send(false);
	check(channel_event(ch, pcq, 5000),
	      "armed for the next completion: an unsolicited Send raises the event");
	recv(m, "unsolicited Send, armed for any");
	// solicited-only, three unsolicited then one solicited: one event
	arm(1);
	for (int i = 0; i < 3; i++)
		send(false);
	check(!channel_event(ch, pcq, 300),
	      "armed solicited-only: three unsolicited Sends raise no event");
	m = send(true);
	check(channel_event(ch, pcq, 5000),
	      "then a solicited Send raises the event");
	auto w = poll_n(pcq, 4, 10000);
	bool ok = w.size() == 4;
	for (size_t i = 0; ok && i < 4; i++)
		ok = w[i].wr_id == m - 3 + i && w[i].status == IBV_WC_SUCCESS &&
		     !memcmp(&rmem[w[i].wr_id * kLen], &src[w[i].wr_id * kLen], kLen);
	check(ok, "the four receives completed in order with their data");
	check(!channel_event(ch, pcq, 200), "exactly one event for them");

	// solicited-only, the QP fails: the flushed receives are unsuccessful
	// completions, which count as solicited (ibv_req_notify_cq(3))
	arm(1);
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_ERR;
	if (ibv_modify_qp(c.pas->qp, &a, IBV_QP_STATE))
		die("ibv_modify_qp ERR");
	check(channel_event(ch, pcq, 5000),
	      "armed solicited-only: the receives flushed by IBV_QPS_ERR raise the event");
	w = poll_n(pcq, kN - next, 5000);
	ok = w.size() == kN - next;
	for (size_t i = 0; ok && i < w.size(); i++)
		ok = w[i].wr_id == next + i && w[i].status == IBV_WC_WR_FLUSH_ERR;
	check(ok, fmt("the %u unused receives flushed in order with IBV_WC_WR_FLUSH_ERR (%zu)",
		      kN - next, w.size()));

	// the failed QP's connection ends in its own time: no events awaited
	rdma_disconnect(c.act);
	rdma_destroy_qp(c.act);
	rdma_destroy_qp(c.pas);
	rdma_destroy_id(c.act);
	rdma_destroy_id(c.pas);
	ibv_dereg_mr(smr);
	ibv_dereg_mr(rmr);
	ibv_destroy_cq(acq);
	ibv_destroy_cq(pcq);
	ibv_destroy_cq(pscq);
	ibv_destroy_comp_channel(ch);
	ibv_dealloc_pd(pd);
	return checks::summary();
}

// ---- events ----

int do_events(cm_pair::Pair &pair)
{
	constexpr uint32_t kLen = 32, kWr = 16, kPosted = 8, kLimit = 4;
	std::vector<uint8_t> src(kWr * kLen), rmem(kWr * kLen);
	ibv_context *ctx = nullptr;
	ibv_pd *pd = nullptr;
	ibv_cq *acq = nullptr, *pcq = nullptr;
	ibv_srq *srq = nullptr;
	ibv_mr *smr = nullptr, *rmr = nullptr;

	Conn c = connect(pair,
		[&](rdma_cm_id *id) {
			ibv_srq_init_attr sa{};

			pd = open_pd(id, &ctx);
			acq = make_cq(ctx, 64);
			pcq = make_cq(ctx, 64);
			sa.attr.max_wr = kWr;
			sa.attr.max_sge = 1;
			srq = ibv_create_srq(pd, &sa);
			if (!srq)
				die("ibv_create_srq");
			smr = reg(pd, src.data(), src.size());
			rmr = reg(pd, rmem.data(), rmem.size());
			make_qp(id, pd, acq, acq, kWr, 1);
		},
		[&](rdma_cm_id *id) {
			ibv_qp_init_attr a{};

			a.qp_type = IBV_QPT_RC;
			a.send_cq = pcq;
			a.recv_cq = pcq;
			a.srq = srq;
			a.cap.max_send_wr = 1;
			a.cap.max_send_sge = 1;
			if (rdma_create_qp(id, pd, &a))
				die("rdma_create_qp on the SRQ");
		});
	std::printf("# %s\n", ibv_get_device_name(ctx->device));
	ibv_qp *pqp = c.pas->qp;

	for (uint32_t i = 0; i < kPosted; i++)
		post_recv_to(nullptr, srq, i, &rmem[i * kLen], kLen, rmr->lkey);
	ibv_srq_attr sa{}, q{};
	sa.srq_limit = kLimit;
	// the limit as ibv_query_srq reports it (0: not armed), ~0u on error
	auto limit = [&]() {
		return ibv_query_srq(srq, &q) ? ~0u : q.srq_limit;
	};
	check(!ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT),
	      "ibv_modify_srq(IBV_SRQ_LIMIT) arms a limit of 4");
	uint32_t lim = limit();
	check(lim == kLimit, fmt("ibv_query_srq: limit %u (armed)", lim));

	uint32_t next = 0;
	// one Send, its completion on both ends, the receive's data checked
	auto send = [&]() {
		uint32_t m = next++;

		for (uint32_t b = 0; b < kLen; b++)
			src[m * kLen + b] = pat(m, b);
		if (post_send(c.act->qp, IBV_WR_SEND, m, &src[m * kLen], kLen,
			      smr->lkey, IBV_SEND_SIGNALED))
			die("ibv_post_send");
		auto w = poll_n(acq, 1, 10000);
		if (w.size() != 1 || w[0].status != IBV_WC_SUCCESS)
			die("send completion");
		auto r = poll_n(pcq, 1, 10000);
		check(r.size() == 1 && r[0].wr_id == m &&
		      r[0].status == IBV_WC_SUCCESS && r[0].byte_len == kLen &&
		      r[0].qp_num == pqp->qp_num &&
		      !memcmp(&rmem[m * kLen], &src[m * kLen], kLen),
		      fmt("Send %u: its SRQ receive completed on the QP with the data", m));
	};

	for (uint32_t i = 0; i < kPosted - kLimit; i++)
		send();
	auto ev = async_events(ctx, 300);
	check(ev.empty(), fmt("4 of 8 receives taken, 4 left (not below the limit): no event (%zu)",
			      ev.size()));
	send();
	ev = async_events(ctx, 5000);
	check(ev.size() == 1 &&
	      count_ev(ev, IBV_EVENT_SRQ_LIMIT_REACHED, srq) == 1,
	      fmt("3 left, below the limit: one IBV_EVENT_SRQ_LIMIT_REACHED naming the SRQ (%zu events)",
		  ev.size()));
	lim = limit();
	check(lim == 0, fmt("the event disarmed the limit (ibv_query_srq: %u)", lim));
	send();
	ev = async_events(ctx, 300);
	check(ev.empty(), fmt("disarmed: 2 left raise no event (%zu)", ev.size()));

	// The QP on the SRQ fails: the last WQE it will take is behind it.
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_ERR;
	if (ibv_modify_qp(pqp, &a, IBV_QP_STATE))
		die("ibv_modify_qp ERR");
	ev = async_events(ctx, 5000);
	check(count_ev(ev, IBV_EVENT_QP_LAST_WQE_REACHED, pqp) == 1,
	      fmt("the SRQ's QP moved to ERROR: one IBV_EVENT_QP_LAST_WQE_REACHED naming it (%zu events)",
		  ev.size()));
	auto w = poll_n(pcq, 1, 300);
	check(w.empty(), fmt("the SRQ's 2 receives stay on the SRQ: no flush completion (%zu)",
			     w.size()));

	rdma_disconnect(c.act);
	rdma_destroy_qp(c.act);
	rdma_destroy_qp(c.pas);
	rdma_destroy_id(c.act);
	rdma_destroy_id(c.pas);
	check(!ibv_destroy_srq(srq), "the SRQ with 2 receives left is destroyed");
	ibv_dereg_mr(smr);
	ibv_dereg_mr(rmr);
	ibv_destroy_cq(acq);
	ibv_destroy_cq(pcq);
	ibv_dealloc_pd(pd);
	return checks::summary();
}

// ---- port ----

// The first event of @type on port 1 within @ms; others are printed.
bool port_event(ibv_context *ctx, ibv_event_type type, int ms)
{
	auto end = Clock::now() + std::chrono::milliseconds(ms);

	while (Clock::now() < end) {
		for (const AsyncEv &e : async_events(ctx, ms_left(end)))
			if (e.type == type && e.port == 1)
				return true;
	}
	return false;
}

ibv_port_state port_state(ibv_context *ctx)
{
	ibv_port_attr pa{};

	if (ibv_query_port(ctx, 1, &pa))
		die("ibv_query_port");
	return pa.state;
}

int do_port(cm_pair::Pair &pair, const std::string &netdev)
{
	ibv_context *ctx = pair.lid->verbs;

	if (!ctx)
		die("the listener is bound to no device");
	std::printf("# %s on %s\n", ibv_get_device_name(ctx->device),
		    netdev.c_str());
	check(port_state(ctx) == IBV_PORT_ACTIVE, "port 1 ACTIVE to begin with");
	async_events(ctx, 100);
	if (std::system(("ip link set " + netdev + " down").c_str()))
		die("ip link set down");
	check(port_event(ctx, IBV_EVENT_PORT_ERR, 5000),
	      "netdev down: IBV_EVENT_PORT_ERR on port 1");
	check(port_state(ctx) == IBV_PORT_DOWN,
	      fmt("then ibv_query_port: %s", ibv_port_state_str(port_state(ctx))));
	if (std::system(("ip link set " + netdev + " up").c_str()))
		die("ip link set up");
	check(port_event(ctx, IBV_EVENT_PORT_ACTIVE, 5000),
	      "netdev up: IBV_EVENT_PORT_ACTIVE on port 1");
	check(port_state(ctx) == IBV_PORT_ACTIVE,
	      fmt("then ibv_query_port: %s", ibv_port_state_str(port_state(ctx))));
	return checks::summary();
}

// ---- bigconn ----

// Word @i of the source pattern: distinct, no run of equal words.
uint64_t big_word(uint64_t i)
{
	return (i + 1) * 0x9e3779b97f4a7c15ull ^ (i << 17);
}

int do_bigconn(cm_pair::Pair &pair, uint64_t total)
{
	constexpr size_t kLen = 16 << 20, kWords = kLen / 8, kChunk = 1 << 20;
	ibv_context *ctx = nullptr;
	ibv_pd *pd = nullptr;
	ibv_cq *acq = nullptr, *pcq = nullptr;
	std::vector<uint64_t> src(kWords), dst(kWords), probe(1);
	ibv_mr *smr = nullptr, *dmr = nullptr, *pmr = nullptr;

	for (size_t i = 0; i < kWords; i++)
		src[i] = big_word(i);
	Conn c = connect(pair,
		[&](rdma_cm_id *id) {
			pd = open_pd(id, &ctx);
			acq = make_cq(ctx, 64);
			pcq = make_cq(ctx, 64);
			smr = reg(pd, src.data(), kLen);
			dmr = reg(pd, dst.data(), kLen);
			pmr = reg(pd, probe.data(), 8);
			make_qp(id, pd, acq, acq, 32, 1);
		},
		[&](rdma_cm_id *id) {
			make_qp(id, pd, pcq, pcq, 1, 1);
		});
	std::printf("# %s: %llu bytes over one connection\n",
		    ibv_get_device_name(ctx->device), (unsigned long long)total);
	uint64_t raddr = uintptr_t(dst.data()), sent = 0, rounds = 0;
	uint64_t bad_rounds = 0, bad_wc = 0;
	auto t0 = Clock::now();

	while (sent < total) {
		// this round's rotation: source word i lands at word (i + rot)
		size_t rot = (rounds * 7919 * 64) % kWords, posted = 0;
		size_t head = (kWords - rot) * 8;	// bytes before the wrap

		for (size_t off = 0; off < kLen; off += kChunk) {
			// a chunk that crosses the wrap goes as two Writes
			size_t end = off + kChunk;
			for (size_t a = off; a < end;) {
				size_t b = a < head ? std::min(end, head) : end;
				uint64_t to = a < head ? raddr + rot * 8 + a :
					      raddr + (a - head);
				if (post_send(c.act->qp, IBV_WR_RDMA_WRITE, 0,
					      (uint8_t *)src.data() + a, uint32_t(b - a),
					      smr->lkey, 0, to, dmr->rkey))
					die("ibv_post_send Write");
				posted++;
				a = b;
			}
			if (posted >= 24) {
				// a signaled Read behind the Writes: when it
				// completes they are placed (one stream, in order)
				if (post_send(c.act->qp, IBV_WR_RDMA_READ, 1,
					      probe.data(), 8, pmr->lkey,
					      IBV_SEND_SIGNALED, raddr, dmr->rkey))
					die("ibv_post_send Read");
				auto w = poll_n(acq, 1, 30000);
				if (w.size() != 1 || w[0].status != IBV_WC_SUCCESS)
					bad_wc++;
				posted = 0;
			}
		}
		if (post_send(c.act->qp, IBV_WR_RDMA_READ, 1, probe.data(), 8,
			      pmr->lkey, IBV_SEND_SIGNALED, raddr, dmr->rkey))
			die("ibv_post_send Read");
		auto w = poll_n(acq, 1, 30000);
		if (w.size() != 1 || w[0].status != IBV_WC_SUCCESS)
			bad_wc++;
		// source words [0, n) at [rot, kWords), the rest at [0, rot)
		size_t n = kWords - rot, j = kWords;
		if (memcmp(&dst[rot], &src[0], n * 8) ||
		    memcmp(&dst[0], &src[n], rot * 8))
			for (j = 0; j < kWords; j++)
				if (dst[(j + rot) % kWords] != src[j])
					break;
		if (j < kWords) {
			if (!bad_rounds)
				std::printf("# round %llu: word %zu of the source wrong at %zu\n",
					    (unsigned long long)rounds, j,
					    (j + rot) % kWords);
			bad_rounds++;
		}
		sent += kLen;
		rounds++;
	}
	double secs = std::chrono::duration<double>(Clock::now() - t0).count();
	std::printf("# %llu rounds of 16 MiB in %.1f s (%.0f MB/s with the checks)\n",
		    (unsigned long long)rounds, secs, sent / secs / 1e6);
	check(bad_wc == 0, fmt("every Read behind the Writes completed (%llu did not)",
			       (unsigned long long)bad_wc));
	check(sent > (1ull << 32) && bad_rounds == 0,
	      fmt("%llu bytes over one connection (past 4 GiB: TCP's sequence numbers wrapped), every round's 16 MiB placed where its rotation says (%llu rounds wrong)",
		  (unsigned long long)sent, (unsigned long long)bad_rounds));
	disconnect(pair, c);
	ibv_dereg_mr(smr);
	ibv_dereg_mr(dmr);
	ibv_dereg_mr(pmr);
	ibv_destroy_cq(acq);
	ibv_destroy_cq(pcq);
	ibv_dealloc_pd(pd);
	return checks::summary();
}

// ---- memlock ----

// VmPin of /proc/self/status in bytes (the mm's pinned_vm, which
// ib_umem_get() charges against RLIMIT_MEMLOCK).
uint64_t vm_pin()
{
	std::ifstream st("/proc/self/status");
	std::string line;

	while (std::getline(st, line))
		if (!line.compare(0, 6, "VmPin:"))
			return std::stoull(line.substr(6)) * 1024;
	die("no VmPin in /proc/self/status");
}

// Bytes of our uverbs mappings (the rings).
uint64_t ring_bytes()
{
	std::ifstream maps("/proc/self/maps");
	std::string line;
	uint64_t n = 0;

	while (std::getline(maps, line)) {
		if (line.find("/dev/infiniband/uverbs") == std::string::npos)
			continue;
		auto dash = line.find('-'), sp = line.find(' ');
		n += std::stoull(line.substr(dash + 1, sp - dash - 1), nullptr, 16) -
		     std::stoull(line.substr(0, dash), nullptr, 16);
	}
	return n;
}

int do_memlock(cm_pair::Pair &pair, uint64_t limit)
{
	const size_t page = sysconf(_SC_PAGESIZE), half = limit / 2;
	ibv_context *ctx = nullptr;
	ibv_pd *pd = nullptr;
	ibv_cq *acq = nullptr, *pcq = nullptr;
	rlimit rl{};

	check(geteuid() != 0, fmt("running as uid %u, not root", geteuid()));
	if (getrlimit(RLIMIT_MEMLOCK, &rl))
		die("getrlimit");
	check(rl.rlim_cur == limit,
	      fmt("RLIMIT_MEMLOCK %llu bytes (want %" PRIu64 ")",
		  (unsigned long long)rl.rlim_cur, limit));

	Conn c = connect(pair,
		[&](rdma_cm_id *id) {
			pd = open_pd(id, &ctx);
			acq = make_cq(ctx, 1024);
			pcq = make_cq(ctx, 1024);
			make_qp(id, pd, acq, acq, 512, 512);
		},
		[&](rdma_cm_id *id) {
			make_qp(id, pd, pcq, pcq, 512, 512);
		});
	std::printf("# %s: %" PRIu64 " KiB of rings mapped\n",
		    ibv_get_device_name(ctx->device), ring_bytes() >> 10);
	check(vm_pin() == 0,
	      fmt("two connected QPs and their CQs pin nothing (VmPin %" PRIu64 " KiB)",
		  vm_pin() >> 10));

	auto map = [&](size_t n) {
		void *p = mmap(nullptr, n, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			die("mmap");
		memset(p, 0x11, n);
		return static_cast<uint8_t *>(p);
	};
	auto regmr = [&](uint8_t *p, size_t n, int *err) {
		errno = 0;
		ibv_mr *mr = ibv_reg_mr(pd, p, n, IBV_ACCESS_LOCAL_WRITE |
					IBV_ACCESS_REMOTE_WRITE |
					IBV_ACCESS_REMOTE_READ);
		*err = mr ? 0 : errno;
		return mr;
	};
	uint8_t *a = map(half), *b = map(half), *x = map(page);
	int err;

	ibv_mr *amr = regmr(a, half, &err);
	check(amr && vm_pin() == half,
	      fmt("an MR of half the limit registers (%s), VmPin %" PRIu64 " KiB",
		  strerror(err), vm_pin() >> 10));
	ibv_mr *bmr = regmr(b, half, &err);
	check(bmr && vm_pin() == limit,
	      fmt("a second one up to the limit registers (%s), VmPin %" PRIu64 " KiB",
		  strerror(err), vm_pin() >> 10));
	if (!amr || !bmr)
		return checks::summary();
	ibv_mr *xmr = regmr(x, page, &err);
	check(!xmr && err == ENOMEM,
	      fmt("one page past the limit fails with ENOMEM (%s)",
		  xmr ? "registered" : strerror(err)));
	check(vm_pin() == limit, fmt("VmPin still %" PRIu64 " KiB after the refusal",
				     vm_pin() >> 10));

	// objects with rings at the limit: not counted
	uint64_t rings = ring_bytes();
	ibv_cq *big = ibv_create_cq(ctx, 16384, nullptr, nullptr, 0);
	ibv_qp *qp = nullptr;
	if (big) {
		ibv_qp_init_attr ia{};
		ia.qp_type = IBV_QPT_RC;
		ia.send_cq = big;
		ia.recv_cq = big;
		ia.cap.max_send_wr = 4096;
		ia.cap.max_recv_wr = 4096;
		ia.cap.max_send_sge = 1;
		ia.cap.max_recv_sge = 1;
		qp = ibv_create_qp(pd, &ia);
	}
	check(big && qp,
	      fmt("at the limit a CQ of 16384 and a QP of 4096 WRs are created (%" PRIu64 " KiB more rings)",
		  (ring_bytes() - rings) >> 10));
	check(vm_pin() == limit, fmt("their rings pin nothing (VmPin %" PRIu64 " KiB)",
				     vm_pin() >> 10));

	// traffic at the limit: a Write from a to b, data checked
	for (size_t i = 0; i < 65536; i++)
		a[i] = pat(7, i);
	if (post_send(c.act->qp, IBV_WR_RDMA_WRITE, 1, a, 65536, amr->lkey,
		      IBV_SEND_SIGNALED, (uintptr_t)b, bmr->rkey))
		die("ibv_post_send");
	auto wc = poll_n(acq, 1, 10000);
	check(wc.size() == 1 && wc[0].status == IBV_WC_SUCCESS &&
	      !memcmp(a, b, 65536),
	      "a 64 KiB Write between the MRs carries its data");

	// deregistration gives the pages back
	ibv_dereg_mr(amr);
	check(vm_pin() == half,
	      fmt("after ibv_dereg_mr VmPin drops to %" PRIu64 " KiB (want %zu)",
		  vm_pin() >> 10, half >> 10));
	xmr = regmr(x, page, &err);
	check(xmr != nullptr, fmt("then a one-page MR registers (%s)", strerror(err)));
	amr = regmr(a, half, &err);
	check(!amr && err == ENOMEM,
	      fmt("and half the limit no longer fits: ENOMEM (%s)",
		  amr ? "registered" : strerror(err)));
	if (amr)
		ibv_dereg_mr(amr);
	if (xmr)
		ibv_dereg_mr(xmr);
	amr = regmr(a, half, &err);
	check(amr != nullptr, fmt("with the page given back it fits again (%s)",
				  strerror(err)));

	if (qp)
		ibv_destroy_qp(qp);
	if (big)
		ibv_destroy_cq(big);
	if (amr)
		ibv_dereg_mr(amr);
	ibv_dereg_mr(bmr);
	check(vm_pin() == 0, fmt("every MR deregistered: VmPin %" PRIu64 " KiB",
				 vm_pin() >> 10));
	disconnect(pair, c);
	ibv_destroy_cq(acq);
	ibv_destroy_cq(pcq);
	ibv_dealloc_pd(pd);
	munmap(a, half);
	munmap(b, half);
	munmap(x, page);
	return checks::summary();
}

} // namespace

int main(int argc, char **argv)
{
	if (argc < 4) {
		std::fprintf(stderr,
			     "usage: %s overflow|sharedcq|inline|solicited|events|port|bigconn|memlock ADDR PORT [ARGS]\n",
			     argv[0]);
		return 2;
	}
	std::string cmd = argv[1];

	setvbuf(stdout, nullptr, _IOLBF, 0);
	cm_pair::Pair pair(argv[2], argv[3]);

	if (cmd == "overflow")
		return do_overflow(pair, argc > 4 && std::string(argv[4]) == "recv");
	if (cmd == "sharedcq")
		return do_sharedcq(pair, argc > 4 ? std::atoi(argv[4]) : 4,
				   argc > 5 ? std::atoi(argv[5]) : 200);
	if (cmd == "inline")
		return do_inline(pair, argc > 4 ? std::atoi(argv[4]) : 512);
	if (cmd == "solicited")
		return do_solicited(pair);
	if (cmd == "bigconn")
		return do_bigconn(pair, argc > 4 ? std::strtoull(argv[4], nullptr, 0) :
				  (4ull << 30) + (64 << 20));
	if (cmd == "events")
		return do_events(pair);
	if (cmd == "port" && argc > 4)
		return do_port(pair, argv[4]);
	if (cmd == "memlock" && argc > 4)
		return do_memlock(pair, std::strtoull(argv[4], nullptr, 0));
	std::fprintf(stderr, "unknown case %s\n", cmd.c_str());
	return 2;
}
