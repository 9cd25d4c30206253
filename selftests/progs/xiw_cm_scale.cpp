// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// xiw_cm_scale: rdma_cm connections at scale between two hosts - the
// connection rate, and many connected QPs with verified traffic on all of
// them at once (cm_scale_2vm, make bench's perf_2vm).
//
//   xiw_cm_scale server ADDR PORT [--hold]
//   xiw_cm_scale rate ADDR PORT SRC N INFLIGHT [--hold]
//   xiw_cm_scale scale ADDR PORT SRC N INFLIGHT ROUNDS SIZE [--pause] [--hold]
//
// One thread per process drives every connection through one rdma_cm event
// channel and one completion channel (poll(2) on both).
//
// A connection of the client: rdma_create_id, rdma_resolve_addr and
// _route, a CQ of its own, an RC QP and a registered buffer of its own
// (one PD per process), a receive posted, rdma_connect with private
// data (index, flags, buffer size). The server, on the request, creates
// the same objects, posts a receive and accepts with its buffer's
// address and rkey. Once ESTABLISHED the client Sends a hello, which
// the server answers with a hello of its own (the initiator sends
// first: without MPA's peer-to-peer mode a responder must not), and the
// connection is up when the client has received that answer: both QPs
// are in RTS and messages went both ways. Teardown: rdma_disconnect
// from the client, DISCONNECTED on both sides, every WR completed (the
// receives still posted flushed, IBV_WC_WR_FLUSH_ERR), then QP, CQ, MR
// and id destroyed.
//
// rate: N connections, INFLIGHT at a time; each slot connects, tears
// its connection down at once and starts the next. Prints the
// establishment (start to up) and teardown (rdma_disconnect to every
// object destroyed) latencies and the rate (connections that came up /
// wall time), and one machine-readable line:
//   RESULT mode=rate conns=N inflight=C secs=T rate=R est_med=MS est_p99=MS
//          est_max=MS td_med=MS td_p99=MS failed=N retries=N errors=N
//
// scale: opens N connections (INFLIGHT at a time) and keeps them all up
// ("connected N QPs in T s", the RESULT line of the opening), then runs
// ROUNDS rounds of traffic on all of them at once. A round of one
// connection: an RDMA Write of SIZE bytes of a pattern of its own (index,
// round) into the server's buffer and a Send saying so; the server
// checks the bytes that landed, writes a pattern of its own (index,
// round) into another part of its buffer and Sends its verdict; the
// client then RDMA Reads that part back and checks it. Every completion
// on both sides must be IBV_WC_SUCCESS with the expected opcode (and byte
// count for receives); the counts of each kind are checked exactly at the
// end ("traffic ok: ..."). --pause: after the traffic, "paused" and wait
// for SIGUSR1 before the teardown (the test looks at the counts meanwhile).
// Then every connection is torn down (INFLIGHT at a time; RESULT
// mode=close).
//
// At the end the client makes one more connection carrying a quit flag;
// the server rejects it, waits until no connection of its own is left,
// prints "served N connections ... errors N" and ends. --hold: print
// "holding" and wait for SIGTERM or SIGINT before exiting (the
// test compares the kernel's counts while the process still lives).
//
// XIW_CM_SCALE_LEAK=K (scale): the client leaves its last K connections
// up on purpose and tells the server so in the quit request, which then
// keeps them too: the test's leak checks must catch them.
//
// Exit 0 when every check passed, 1 on a failed check, 2 on a setup error.
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <memory>
#include <string>
#include <vector>

namespace {

constexpr uint32_t kMagic = 0x78436d53;	// "xCmS"
constexpr uint32_t kFlagTraffic = 1, kFlagQuit = 2;
constexpr uint32_t kRecvSlot = 64;	// one receive buffer
constexpr uint32_t kRecvs = 2;		// receives kept posted (traffic)
constexpr uint32_t kMsgArea = 4 * kRecvSlot;	// 2 receives, 1 send, spare
constexpr int kProgressSecs = 120;	// no event for this long: give up

// connect private data (client to server)
struct ConnPd {
	uint32_t magic, idx, flags, size, keep;
};
// accept private data (server to client)
struct AcceptPd {
	uint32_t magic, idx;
	uint64_t addr;
	uint32_t rkey, pad;
};
// every Send
enum MsgKind : uint32_t { HELLO = 1, WROTE = 2, VERDICT = 3 };
struct Msg {
	uint32_t magic, idx, round, kind, status, pad;
};

// wr_id: kind in the high half, round in the low half
enum WrKind : uint64_t { W_RECV = 1, W_SEND, W_WRITE, W_READ };
uint64_t wrid(WrKind k, uint32_t round) { return uint64_t(k) << 32 | round; }

double now_s()
{
	timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

[[noreturn]] void die(const char *what)
{
	std::fprintf(stderr, "%s: %s\n", what, std::strerror(errno));
	std::exit(2);
}

unsigned long errors;
void error(const std::string &s)
{
	if (++errors <= 20)
		std::printf("FAIL %s\n", s.c_str());
	else if (errors == 21)
		std::printf("FAIL (further failures not printed)\n");
	std::fflush(stdout);
}

// The pattern of (idx, round, side): xorshift64 from a seed of the three.
void pattern(uint8_t *p, size_t n, uint32_t idx, uint32_t round, char side)
{
	uint64_t x = (uint64_t(idx) << 32 | round) * 0x9e3779b97f4a7c15ull ^
		     uint64_t(uint8_t(side)) << 56 ^ 0x5deece66dull;

	for (size_t i = 0; i < n; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		std::memcpy(p + i, &x, std::min<size_t>(8, n - i));
	}
}

bool pattern_ok(const uint8_t *p, size_t n, uint32_t idx, uint32_t round, char side)
{
	std::vector<uint8_t> want(n);

	pattern(want.data(), n, idx, round, side);
	return !std::memcmp(p, want.data(), n);
}

struct Conn {
	uint32_t idx = 0;
	rdma_cm_id *id = nullptr;
	ibv_cq *cq = nullptr;
	ibv_mr *mr = nullptr;
	uint8_t *buf = nullptr;
	size_t size = 0;		// traffic bytes (0: hello only)
	unsigned cq_events = 0;		// to ack before the CQ goes
	uint32_t rq_posted = 0;		// receives posted, not completed
	uint32_t sq_out = 0;		// send WRs not completed
	uint32_t next_slot = 0;		// receive slot to post next
	uint32_t flushed = 0;		// receives flushed at the teardown
	bool established = false, hello = false, up = false;
	bool disconnecting = false, disconnected = false;
	uint64_t raddr = 0;
	uint32_t rkey = 0;
	// traffic: the current round and what of it is done
	uint32_t round = 0;
	bool w_done = false, s_done = false, verdict = false, r_done = false;
	bool traffic_done = false;
	double t_start = 0, t_up = 0, t_disc = 0, t_gone = 0;
	// the steps of the opening: address and route resolved, connect
	// called, ESTABLISHED, the server's hello received
	double t_addr = 0, t_route = 0, t_conn = 0, t_est = 0, t_hello = 0;

	uint8_t *msg_area() { return buf + 2 * size; }
	uint8_t *send_slot() { return msg_area() + kRecvs * kRecvSlot; }
	std::string name() const { return "connection " + std::to_string(idx); }
};

struct Stack {
	rdma_event_channel *ch = nullptr;
	ibv_context *verbs = nullptr;
	ibv_pd *pd = nullptr;
	ibv_comp_channel *comp = nullptr;
	double last_progress = now_s();

	Stack()
	{
		ch = rdma_create_event_channel();
		if (!ch)
			die("rdma_create_event_channel");
		nonblock(ch->fd);
	}
	static void nonblock(int fd)
	{
		if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK))
			die("fcntl");
	}
	// One PD and completion channel for the device every id is on.
	void device(ibv_context *v)
	{
		if (verbs) {
			if (v != verbs) {
				std::fprintf(stderr, "ids on two devices\n");
				std::exit(2);
			}
			return;
		}
		verbs = v;
		pd = ibv_alloc_pd(v);
		comp = ibv_create_comp_channel(v);
		if (!pd || !comp)
			die("ibv_alloc_pd / ibv_create_comp_channel");
		nonblock(comp->fd);
	}
	// Wait up to @ms for either channel.
	void wait(int ms)
	{
		pollfd p[2] = { { ch->fd, POLLIN, 0 }, { comp ? comp->fd : -1, POLLIN, 0 } };

		if (poll(p, 2, ms) < 0 && errno != EINTR)
			die("poll");
	}
	void progress() { last_progress = now_s(); }
	bool stalled() const { return now_s() - last_progress > kProgressSecs; }
	~Stack()
	{
		if (comp)
			ibv_destroy_comp_channel(comp);
		if (pd)
			ibv_dealloc_pd(pd);
		rdma_destroy_event_channel(ch);
	}
};

// A receive into the next slot of @c's message area (its wr_id names
// the slot).
bool post_recv(Conn &c)
{
	ibv_sge sge{ (uintptr_t)(c.msg_area() + c.next_slot * kRecvSlot),
		     kRecvSlot, c.mr->lkey };
	ibv_recv_wr wr{}, *bad;

	wr.wr_id = wrid(W_RECV, c.next_slot);
	wr.sg_list = &sge;
	wr.num_sge = 1;
	c.next_slot = (c.next_slot + 1) % kRecvs;
	if (ibv_post_recv(c.id->qp, &wr, &bad))
		return error(c.name() + ": ibv_post_recv"), false;
	c.rq_posted++;
	return true;
}

// CQ, QP and buffer of @c on @id; @recvs receives posted.
bool conn_setup(Stack &st, Conn &c, rdma_cm_id *id, uint32_t recvs)
{
	c.id = id;
	id->context = &c;
	st.device(id->verbs);
	size_t len = 2 * c.size + kMsgArea;
	len = (len + 4095) & ~size_t(4095);
	if (posix_memalign((void **)&c.buf, 4096, len))
		return error(c.name() + ": no memory"), false;
	std::memset(c.buf, 0, len);
	c.mr = ibv_reg_mr(st.pd, c.buf, len, IBV_ACCESS_LOCAL_WRITE |
			  IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	c.cq = ibv_create_cq(id->verbs, 16, &c, st.comp, 0);
	if (!c.mr || !c.cq) {
		error(c.name() + ": ibv_reg_mr / ibv_create_cq: " + std::strerror(errno));
		return false;
	}
	if (ibv_req_notify_cq(c.cq, 0))
		return error(c.name() + ": ibv_req_notify_cq"), false;
	ibv_qp_init_attr a{};
	a.qp_type = IBV_QPT_RC;
	a.send_cq = c.cq;
	a.recv_cq = c.cq;
	a.cap.max_send_wr = 4;
	a.cap.max_recv_wr = kRecvs;
	a.cap.max_send_sge = 1;
	a.cap.max_recv_sge = 1;
	if (rdma_create_qp(id, st.pd, &a)) {
		error(c.name() + ": rdma_create_qp: " + std::strerror(errno));
		return false;
	}
	for (uint32_t i = 0; i < recvs; i++)
		if (!post_recv(c))
			return false;
	return true;
}

void post_send(Conn &c, WrKind k, uint32_t round, ibv_wr_opcode op,
	       uint8_t *local, uint32_t len, uint64_t raddr = 0)
{
	ibv_sge sge{ (uintptr_t)local, len, c.mr->lkey };
	ibv_send_wr wr{}, *bad;

	wr.wr_id = wrid(k, round);
	wr.opcode = op;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = c.rkey;
	if (ibv_post_send(c.id->qp, &wr, &bad))
		return error(c.name() + ": ibv_post_send: " + std::strerror(errno));
	c.sq_out++;
}

void send_msg(Conn &c, MsgKind kind, uint32_t round, uint32_t status)
{
	Msg m{ kMagic, c.idx, round, kind, status, 0 };

	std::memcpy(c.send_slot(), &m, sizeof(m));
	post_send(c, W_SEND, round, IBV_WR_SEND, c.send_slot(), sizeof(m));
}

// Destroy what conn_setup created (and the id), the CQ's events acked.
void conn_destroy(Conn &c)
{
	if (c.id && c.id->qp)
		rdma_destroy_qp(c.id);
	if (c.cq) {
		ibv_ack_cq_events(c.cq, c.cq_events);
		if (ibv_destroy_cq(c.cq))
			error(c.name() + ": ibv_destroy_cq: " + std::strerror(errno));
	}
	if (c.mr && ibv_dereg_mr(c.mr))
		error(c.name() + ": ibv_dereg_mr: " + std::strerror(errno));
	if (c.id && rdma_destroy_id(c.id))
		error(c.name() + ": rdma_destroy_id: " + std::strerror(errno));
	free(c.buf);
	c.id = nullptr;
	c.cq = nullptr;
	c.mr = nullptr;
	c.buf = nullptr;
	c.cq_events = 0;
}

// A receive's message, checked: magic, index, kind, round.
bool msg_ok(Conn &c, const ibv_wc &wc, MsgKind kind, uint32_t round, Msg *out)
{
	if (wc.byte_len != sizeof(Msg)) {
		error(c.name() + ": receive of " + std::to_string(wc.byte_len) +
		      " bytes, want " + std::to_string(sizeof(Msg)));
		return false;
	}
	std::memcpy(out, c.msg_area() + uint32_t(wc.wr_id) % kRecvs * kRecvSlot,
		    sizeof(Msg));
	if (out->magic != kMagic || out->idx != c.idx || out->kind != kind ||
	    out->round != round) {
		error(c.name() + ": message magic " + std::to_string(out->magic) +
		      " idx " + std::to_string(out->idx) + " kind " +
		      std::to_string(out->kind) + " round " +
		      std::to_string(out->round) + ", want idx " +
		      std::to_string(c.idx) + " kind " + std::to_string(kind) +
		      " round " + std::to_string(round));
		return false;
	}
	return true;
}

const char *op_str(ibv_wc_opcode op)
{
	switch (op) {
	case IBV_WC_SEND: return "SEND";
	case IBV_WC_RDMA_WRITE: return "RDMA_WRITE";
	case IBV_WC_RDMA_READ: return "RDMA_READ";
	case IBV_WC_RECV: return "RECV";
	default: return "other";
	}
}

// Completions by kind: success and flushed (after DISCONNECTED only).
struct Counts {
	unsigned long recv = 0, send = 0, write = 0, read = 0, flushed = 0;
};

// A completion of @c must be a success of the opcode its wr_id names,
// or, if @flush_ok, a receive flushed (IBV_WC_WR_FLUSH_ERR: the
// connection is going). Returns true for a success.
bool wc_ok(Conn &c, const ibv_wc &wc, Counts &n, bool flush_ok)
{
	static const ibv_wc_opcode want[] = { IBV_WC_RECV, IBV_WC_RECV,
		IBV_WC_SEND, IBV_WC_RDMA_WRITE, IBV_WC_RDMA_READ };
	WrKind k = WrKind(wc.wr_id >> 32);

	if (k < W_RECV || k > W_READ) {
		error(c.name() + ": completion of unknown wr_id " + std::to_string(wc.wr_id));
		return false;
	}
	if (k == W_RECV)
		c.rq_posted--;
	else
		c.sq_out--;
	if (wc.status == IBV_WC_WR_FLUSH_ERR && flush_ok && k == W_RECV) {
		c.flushed++;
		n.flushed++;
		return false;
	}
	if (wc.status != IBV_WC_SUCCESS || wc.opcode != want[k]) {
		error(c.name() + ": wr_id kind " + std::to_string(k) + " round " +
		      std::to_string(uint32_t(wc.wr_id)) + ": status " +
		      ibv_wc_status_str(wc.status) + " opcode " + op_str(wc.opcode) +
		      ", want success of " + op_str(want[k]));
		return false;
	}
	switch (k) {
	case W_RECV: n.recv++; break;
	case W_SEND: n.send++; break;
	case W_WRITE: n.write++; break;
	case W_READ: n.read++; break;
	}
	return true;
}

// Every completion channel event: ack later, re-arm, then hand each
// completion of that CQ to @fn, and the connection to @drained once its
// CQ is empty (which may destroy it: never in @fn).
template <typename F, typename D> void poll_cqs(Stack &st, F fn, D drained)
{
	ibv_cq *cq;
	void *ctx;

	if (!st.comp)
		return;
	while (!ibv_get_cq_event(st.comp, &cq, &ctx)) {
		Conn &c = *static_cast<Conn *>(ctx);

		st.progress();
		c.cq_events++;
		if (ibv_req_notify_cq(cq, 0))
			error(c.name() + ": ibv_req_notify_cq");
		ibv_wc wc[16];
		int k;
		while ((k = ibv_poll_cq(cq, 16, wc)) > 0)
			for (int i = 0; i < k; i++)
				fn(c, wc[i]);
		if (k < 0)
			error(c.name() + ": ibv_poll_cq");
		drained(c);
	}
}

// The next rdma_cm event, or nullptr (nothing pending).
rdma_cm_event *next_event(Stack &st)
{
	rdma_cm_event *ev;

	if (rdma_get_cm_event(st.ch, &ev)) {
		if (errno != EAGAIN)
			die("rdma_get_cm_event");
		return nullptr;
	}
	st.progress();
	return ev;
}

sigset_t sigs;

void hold()
{
	int sig;

	std::printf("holding\n");
	std::fflush(stdout);
	do
		sigwait(&sigs, &sig);
	while (sig != SIGTERM && sig != SIGINT);
}

addrinfo *resolve(const char *host, const char *port)
{
	addrinfo hints{}, *ai;

	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(host, port, &hints, &ai)) {
		std::fprintf(stderr, "cannot resolve %s\n", host);
		std::exit(2);
	}
	return ai;
}

// ---- server -----------------------------------------------------------

int run_server(const char *addr, const char *port, bool do_hold)
{
	Stack st;
	rdma_cm_id *lid;
	addrinfo *ai = resolve(addr, port);
	std::vector<std::unique_ptr<Conn>> conns;	// live ones
	unsigned long served = 0, live_max = 0;
	Counts n;
	bool quit = false;
	uint32_t keep = 0;

	if (rdma_create_id(st.ch, &lid, nullptr, RDMA_PS_TCP) ||
	    rdma_bind_addr(lid, ai->ai_addr) || rdma_listen(lid, 1024))
		die("rdma listen");
	freeaddrinfo(ai);
	std::printf("listening\n");
	std::fflush(stdout);

	// a connection is gone once DISCONNECTED came and every WR completed
	auto reap = [&]() {
		for (auto it = conns.begin(); it != conns.end();) {
			Conn &c = **it;

			if (!c.disconnected || c.rq_posted || c.sq_out) {
				if (c.disconnected && now_s() - c.t_disc > 30) {
					error(c.name() + ": " + std::to_string(c.rq_posted) +
					      " receives and " + std::to_string(c.sq_out) +
					      " sends not completed 30 s after DISCONNECTED");
					c.rq_posted = c.sq_out = 0;
				}
				++it;
				continue;
			}
			// the receives still posted at the end, flushed
			if (c.established && c.flushed != (c.size ? kRecvs : 0))
				error(c.name() + ": " + std::to_string(c.flushed) +
				      " receives flushed, want " +
				      std::to_string(c.size ? kRecvs : 0));
			conn_destroy(c);
			served++;
			it = conns.erase(it);
		}
	};
	while (!quit || conns.size() > keep) {
		st.wait(100);
		rdma_cm_event *ev;
		while ((ev = next_event(st))) {
			rdma_cm_event_type t = ev->event;
			Conn *c = static_cast<Conn *>(ev->id->context);

			if (t == RDMA_CM_EVENT_CONNECT_REQUEST) {
				ConnPd pd{};
				const auto &p = ev->param.conn;
				if (p.private_data_len >= sizeof(pd))
					std::memcpy(&pd, p.private_data, sizeof(pd));
				if (pd.magic != kMagic ||
				    ((pd.flags & kFlagTraffic) &&
				     (!pd.size || pd.size % 8 || pd.size > (1u << 20)))) {
					error("connect request without valid private data");
					rdma_reject(ev->id, nullptr, 0);
					rdma_cm_id *id = ev->id;
					rdma_ack_cm_event(ev);
					rdma_destroy_id(id);
					continue;
				}
				if (pd.flags & kFlagQuit) {
					quit = true;
					keep = pd.keep;
					rdma_reject(ev->id, nullptr, 0);
					rdma_cm_id *id = ev->id;
					rdma_ack_cm_event(ev);
					rdma_destroy_id(id);
					continue;
				}
				auto nc = std::make_unique<Conn>();
				nc->idx = pd.idx;
				nc->size = pd.flags & kFlagTraffic ? pd.size : 0;
				nc->t_start = now_s();
				bool ok = conn_setup(st, *nc, ev->id,
						     nc->size ? kRecvs : 1);
				AcceptPd apd{ kMagic, pd.idx, (uintptr_t)nc->buf,
					      nc->mr ? nc->mr->rkey : 0, 0 };
				rdma_conn_param cp{};
				cp.private_data = &apd;
				cp.private_data_len = sizeof(apd);
				cp.responder_resources = 1;
				cp.initiator_depth = 1;
				if (ok && rdma_accept(ev->id, &cp)) {
					error(nc->name() + ": rdma_accept: " + std::strerror(errno));
					ok = false;
				}
				if (!ok) {
					rdma_reject(ev->id, nullptr, 0);
					rdma_ack_cm_event(ev);
					conn_destroy(*nc);
					continue;
				}
				rdma_ack_cm_event(ev);
				conns.push_back(std::move(nc));
				live_max = std::max<unsigned long>(live_max, conns.size());
				continue;
			}
			int status = ev->status;
			rdma_ack_cm_event(ev);
			if (!c) {
				error(std::string("event ") + rdma_event_str(t) + " on the listener");
				continue;
			}
			switch (t) {
			case RDMA_CM_EVENT_ESTABLISHED:
				c->established = true;
				break;
			case RDMA_CM_EVENT_DISCONNECTED:
				c->disconnected = true;
				c->t_disc = now_s();
				break;
			default:
				// a connection that failed after the accept
				error(c->name() + ": " + rdma_event_str(t) +
				      " status " + std::to_string(status));
				if (!c->disconnected) {
					c->disconnected = true;
					c->t_disc = now_s();
				}
				c->rq_posted = c->sq_out = 0;	// flushed or never
				break;
			}
		}
		// the client's disconnect may flush a receive before
		// DISCONNECTED is read: flushes are counted at the end
		poll_cqs(st, [&](Conn &c, const ibv_wc &wc) {
			if (!wc_ok(c, wc, n, true))
				return;
			if ((wc.wr_id >> 32) != W_RECV)
				return;
			Msg m;
			if (!c.hello) {
				if (!msg_ok(c, wc, HELLO, 0, &m))
					return;
				c.hello = true;
				if (c.size)
					post_recv(c);
				send_msg(c, HELLO, 0, 0);
				return;
			}
			c.round++;
			if (!msg_ok(c, wc, WROTE, c.round, &m))
				return;
			bool ok = pattern_ok(c.buf, c.size, c.idx, c.round, 'c');
			if (!ok)
				error(c.name() + ": round " + std::to_string(c.round) +
				      ": the client's RDMA Write did not land as written");
			pattern(c.buf + c.size, c.size, c.idx, c.round, 's');
			post_recv(c);
			send_msg(c, VERDICT, c.round, ok ? 0 : 1);
		}, [](Conn &) {});
		reap();
	}
	std::printf("served %lu connections (at most %lu at once), kept %zu; completions: recv %lu send %lu, flushed %lu; errors %lu\n",
		    served, live_max, conns.size(), n.recv, n.send, n.flushed, errors);
	std::fflush(stdout);
	if (do_hold)
		hold();
	for (auto &c : conns)
		conn_destroy(*c);
	rdma_destroy_id(lid);
	return errors ? 1 : 0;
}

// ---- client -----------------------------------------------------------

struct Client {
	Stack st;
	addrinfo *dst, *src;
	uint32_t n, inflight, rounds;
	size_t size;
	bool traffic;
	std::vector<std::unique_ptr<Conn>> conns;
	std::vector<double> est, td;
	unsigned long retries = 0, failed = 0;
	Counts cnt;
	uint32_t started = 0, opening = 0, upcount = 0;
	uint32_t closing = 0, gone = 0;

	Client(const char *addr, const char *port, const char *srcaddr)
	{
		dst = resolve(addr, port);
		src = resolve(srcaddr, nullptr);
	}
	~Client()
	{
		freeaddrinfo(dst);
		freeaddrinfo(src);
	}

	void start(Conn &c)
	{
		rdma_cm_id *id;

		if (rdma_create_id(st.ch, &id, &c, RDMA_PS_TCP))
			die("rdma_create_id");
		c.id = id;
		if (rdma_resolve_addr(id, src->ai_addr, dst->ai_addr, 5000)) {
			error(c.name() + ": rdma_resolve_addr: " + std::strerror(errno));
			fail_conn(c);
		}
	}

	void open_next()
	{
		Conn &c = *conns[started];

		c.idx = started++;
		c.size = traffic ? size : 0;
		c.t_start = now_s();
		opening++;
		start(c);
	}

	// A connection that failed: its objects go, it counts as failed.
	void fail_conn(Conn &c)
	{
		conn_destroy(c);
		failed++;
		if (!c.up)
			opening--;
		c.up = false;
		c.disconnected = true;
		c.t_gone = now_s();
	}

	void connect(Conn &c)
	{
		if (!conn_setup(st, c, c.id, traffic ? kRecvs : 1))
			return fail_conn(c);
		ConnPd pd{ kMagic, c.idx, traffic ? kFlagTraffic : 0,
			   uint32_t(c.size), 0 };
		rdma_conn_param cp{};
		cp.private_data = &pd;
		cp.private_data_len = sizeof(pd);
		cp.responder_resources = 1;
		cp.initiator_depth = 1;
		cp.retry_count = 7;
		c.t_conn = now_s();
		if (!rdma_connect(c.id, &cp))
			return;
		// siw binds its TCP socket to the port rdma_cm picked without
		// asking TCP: a port still in TIME_WAIT fails the bind. Start
		// this connection over on a new id (and port).
		if (errno == EADDRINUSE) {
			retries++;
			conn_destroy(c);
			c.rq_posted = 0;
			c.next_slot = 0;
			return start(c);
		}
		error(c.name() + ": rdma_connect: " + std::strerror(errno));
		fail_conn(c);
	}

	void now_up(Conn &c)
	{
		c.up = true;
		c.t_up = now_s();
		est.push_back(c.t_up - c.t_start);
		opening--;
		upcount++;
	}

	void disconnect(Conn &c)
	{
		c.disconnecting = true;
		c.t_disc = now_s();
		closing++;
		if (rdma_disconnect(c.id))
			error(c.name() + ": rdma_disconnect: " + std::strerror(errno));
	}

	// gone once DISCONNECTED came and every WR completed
	void maybe_gone(Conn &c)
	{
		if (!c.id || !c.disconnected || c.rq_posted || c.sq_out)
			return;
		if (c.flushed != (traffic ? kRecvs : 0))
			error(c.name() + ": " + std::to_string(c.flushed) +
			      " receives flushed, want " + std::to_string(traffic ? kRecvs : 0));
		conn_destroy(c);
		c.t_gone = now_s();
		td.push_back(c.t_gone - c.t_disc);
		closing--;
		gone++;
	}

	void cm_events()
	{
		rdma_cm_event *ev;

		while ((ev = next_event(st))) {
			Conn &c = *static_cast<Conn *>(ev->id->context);
			rdma_cm_event_type t = ev->event;
			int status = ev->status;
			AcceptPd apd{};
			if (t == RDMA_CM_EVENT_ESTABLISHED &&
			    ev->param.conn.private_data_len >= sizeof(apd))
				std::memcpy(&apd, ev->param.conn.private_data, sizeof(apd));
			rdma_ack_cm_event(ev);
			switch (t) {
			case RDMA_CM_EVENT_ADDR_RESOLVED:
				c.t_addr = now_s();
				if (rdma_resolve_route(c.id, 5000)) {
					error(c.name() + ": rdma_resolve_route: " + std::strerror(errno));
					fail_conn(c);
				}
				break;
			case RDMA_CM_EVENT_ROUTE_RESOLVED:
				c.t_route = now_s();
				connect(c);
				break;
			case RDMA_CM_EVENT_ESTABLISHED:
				if (apd.magic != kMagic || apd.idx != c.idx) {
					error(c.name() + ": accept without our private data");
					break;
				}
				c.raddr = apd.addr;
				c.rkey = apd.rkey;
				c.established = true;
				c.t_est = now_s();
				send_msg(c, HELLO, 0, 0);
				break;
			case RDMA_CM_EVENT_DISCONNECTED:
				if (!c.disconnecting)
					error(c.name() + ": DISCONNECTED before the client disconnected");
				c.disconnected = true;
				maybe_gone(c);
				break;
			default:
				error(c.name() + ": " + rdma_event_str(t) + " status " +
				      std::to_string(status));
				fail_conn(c);
				break;
			}
		}
	}

	void start_round(Conn &c)
	{
		c.round++;
		c.w_done = c.s_done = c.verdict = c.r_done = false;
		pattern(c.buf, c.size, c.idx, c.round, 'c');
		post_send(c, W_WRITE, c.round, IBV_WR_RDMA_WRITE, c.buf,
			  uint32_t(c.size), c.raddr);
		send_msg(c, WROTE, c.round, 0);
	}

	void round_step(Conn &c)
	{
		if (!(c.w_done && c.s_done && c.verdict && c.r_done))
			return;
		if (c.round < rounds)
			return start_round(c);
		c.traffic_done = true;
		upcount--;	// counts the connections still in traffic
	}

	void completion(Conn &c, const ibv_wc &wc)
	{
		if (!wc_ok(c, wc, cnt, c.disconnecting))
			return;
		WrKind k = WrKind(wc.wr_id >> 32);
		Msg m;

		switch (k) {
		case W_RECV:
			if (!c.hello) {
				if (!msg_ok(c, wc, HELLO, 0, &m))
					return;
				c.hello = true;
				c.t_hello = now_s();
				if (traffic)
					post_recv(c);
				now_up(c);
				return;
			}
			if (!msg_ok(c, wc, VERDICT, c.round, &m))
				return;
			if (m.status)
				error(c.name() + ": round " + std::to_string(c.round) +
				      ": the server found the RDMA Write's bytes wrong");
			c.verdict = true;
			post_recv(c);
			post_send(c, W_READ, c.round, IBV_WR_RDMA_READ,
				  c.buf + c.size, uint32_t(c.size), c.raddr + c.size);
			break;
		case W_WRITE:
			c.w_done = true;
			break;
		case W_SEND:
			c.s_done = true;
			break;
		case W_READ:
			if (!pattern_ok(c.buf + c.size, c.size, c.idx, c.round, 's'))
				error(c.name() + ": round " + std::to_string(c.round) +
				      ": RDMA Read returned other bytes than the server's");
			c.r_done = true;
			break;
		}
		round_step(c);
	}

	// One turn of the loop: wait, then every event.
	bool turn()
	{
		st.wait(100);
		cm_events();
		poll_cqs(st, [&](Conn &c, const ibv_wc &wc) { completion(c, wc); },
			 [&](Conn &c) { maybe_gone(c); });
		if (st.stalled()) {
			error("no event for " + std::to_string(kProgressSecs) + " s: " +
			      std::to_string(opening) + " opening, " +
			      std::to_string(closing) + " closing");
			return false;
		}
		return true;
	}

	// The quit request: the server rejects it, then ends once it has
	// @keep connections left.
	void quit(uint32_t keep)
	{
		Conn q;
		rdma_cm_id *id;
		rdma_cm_event *ev;
		bool done = false;

		q.idx = ~0u;
		if (rdma_create_id(st.ch, &id, &q, RDMA_PS_TCP) ||
		    rdma_resolve_addr(id, src->ai_addr, dst->ai_addr, 5000))
			die("quit: rdma_resolve_addr");
		while (!done) {
			st.wait(100);
			while ((ev = next_event(st))) {
				rdma_cm_event_type t = ev->event;
				bool mine = ev->id == id;
				rdma_ack_cm_event(ev);
				if (!mine) {
					if (t != RDMA_CM_EVENT_DISCONNECTED)
						error(std::string("quit: unexpected ") + rdma_event_str(t));
					continue;
				}
				if (t == RDMA_CM_EVENT_ADDR_RESOLVED) {
					if (rdma_resolve_route(id, 5000))
						die("quit: rdma_resolve_route");
				} else if (t == RDMA_CM_EVENT_ROUTE_RESOLVED) {
					ConnPd pd{ kMagic, ~0u, kFlagQuit, 0, keep };
					rdma_conn_param cp{};
					cp.private_data = &pd;
					cp.private_data_len = sizeof(pd);
					// iWARP connects a QP: one of its own
					if (!conn_setup(st, q, id, 0))
						die("quit: QP");
					if (rdma_connect(id, &cp)) {
						if (errno == EADDRINUSE) {
							retries++;
							conn_destroy(q);
							if (rdma_create_id(st.ch, &id, &q, RDMA_PS_TCP) ||
							    rdma_resolve_addr(id, src->ai_addr, dst->ai_addr, 5000))
								die("quit: rdma_resolve_addr");
							continue;
						}
						die("quit: rdma_connect");
					}
				} else if (t == RDMA_CM_EVENT_REJECTED) {
					done = true;
				} else {
					error(std::string("quit: ") + rdma_event_str(t));
					done = true;
				}
			}
			if (st.stalled()) {
				error("quit: no answer");
				break;
			}
		}
		q.id = id;
		conn_destroy(q);
	}
};

void pct(std::vector<double> v, double &med, double &p99, double &max)
{
	med = p99 = max = 0;
	if (v.empty())
		return;
	std::sort(v.begin(), v.end());
	auto at = [&](double q) {
		size_t i = size_t(std::ceil(q * v.size()));
		return v[i ? i - 1 : 0] * 1e3;
	};
	med = at(0.5);
	p99 = at(0.99);
	max = v.back() * 1e3;
}

// The @k slowest openings, step by step (ms since the start of each).
void slowest(Client &cl, unsigned k)
{
	std::vector<Conn *> v;

	for (auto &c : cl.conns)
		if (c->t_up)
			v.push_back(c.get());
	std::sort(v.begin(), v.end(), [](Conn *a, Conn *b) {
		return a->t_up - a->t_start > b->t_up - b->t_start;
	});
	for (unsigned i = 0; i < k && i < v.size(); i++) {
		Conn &c = *v[i];
		auto ms = [&](double t) { return t ? (t - c.t_start) * 1e3 : -1.0; };
		std::printf("slow: %s up %.1f ms: address %.1f route %.1f connect %.1f established %.1f hello %.1f\n",
			    c.name().c_str(), ms(c.t_up), ms(c.t_addr), ms(c.t_route),
			    ms(c.t_conn), ms(c.t_est), ms(c.t_hello));
	}
}

void report(const char *mode, Client &cl, uint32_t n, double secs,
	    const std::vector<double> &lat)
{
	double m, p, x;

	pct(lat, m, p, x);
	std::printf("RESULT mode=%s conns=%u inflight=%u secs=%.3f rate=%.1f med=%.2f p99=%.2f max=%.2f retries=%lu errors=%lu\n",
		    mode, n, cl.inflight, secs, secs > 0 ? n / secs : 0.0, m, p, x,
		    cl.retries, errors);
	std::fflush(stdout);
}

int run_rate(Client &cl, bool do_hold)
{
	double t0 = now_s();

	for (uint32_t i = 0; i < cl.n; i++)
		cl.conns.push_back(std::make_unique<Conn>());
	while (cl.gone + cl.failed < cl.n) {
		while (cl.started < cl.n && cl.started - cl.gone - cl.failed < cl.inflight)
			cl.open_next();
		if (!cl.turn())
			break;
		for (auto &c : cl.conns)
			if (c->up && !c->disconnecting)
				cl.disconnect(*c);
	}
	double secs = now_s() - t0;
	double em, ep, ex, tm, tp, tx;
	pct(cl.est, em, ep, ex);
	pct(cl.td, tm, tp, tx);
	// the rate counts the connections that came up
	double rate = (cl.n - cl.failed) / secs;
	std::printf("%u connections, %u in flight: %.1f connects/s (%.2f s); establish ms median %.2f p99 %.2f max %.2f; teardown ms median %.2f p99 %.2f max %.2f; failed %lu, retries %lu\n",
		    cl.n, cl.inflight, rate, secs, em, ep, ex, tm, tp, tx,
		    cl.failed, cl.retries);
	slowest(cl, 3);
	cl.quit(0);
	if (cl.failed)
		error(std::to_string(cl.failed) + " connections failed");
	std::printf("RESULT mode=rate conns=%u inflight=%u secs=%.3f rate=%.1f est_med=%.2f est_p99=%.2f est_max=%.2f td_med=%.2f td_p99=%.2f failed=%lu retries=%lu errors=%lu\n",
		    cl.n, cl.inflight, secs, rate, em, ep, ex, tm, tp,
		    cl.failed, cl.retries, errors);
	std::fflush(stdout);
	if (do_hold)
		hold();
	return errors ? 1 : 0;
}

int run_scale(Client &cl, bool do_pause, bool do_hold)
{
	uint32_t leak = 0;
	const char *e = std::getenv("XIW_CM_SCALE_LEAK");
	int sig;

	if (e)
		leak = std::min<uint32_t>(uint32_t(std::strtoul(e, nullptr, 10)), cl.n);
	for (uint32_t i = 0; i < cl.n; i++)
		cl.conns.push_back(std::make_unique<Conn>());
	// open all
	double t0 = now_s();
	while (cl.upcount + cl.failed < cl.n) {
		while (cl.started < cl.n && cl.opening < cl.inflight)
			cl.open_next();
		if (!cl.turn() || cl.failed)
			break;
	}
	double topen = now_s() - t0;
	if (cl.failed || cl.upcount < cl.n) {
		error(std::to_string(cl.upcount) + " of " + std::to_string(cl.n) +
		      " connections up, " + std::to_string(cl.failed) + " failed");
		return 1;
	}
	std::printf("connected %u QPs in %.2f s\n", cl.n, topen);
	report("open", cl, cl.n, topen, cl.est);
	slowest(cl, 3);

	// traffic on all at once
	t0 = now_s();
	for (auto &c : cl.conns)
		cl.start_round(*c);
	while (cl.upcount && !errors)
		if (!cl.turn())
			break;
	double ttr = now_s() - t0;
	unsigned long want = (unsigned long)cl.n * cl.rounds;
	if (cl.upcount)
		error(std::to_string(cl.upcount) + " connections did not finish their rounds");
	// and a hello each way per connection
	if (cl.cnt.write != want || cl.cnt.read != want ||
	    cl.cnt.send != want + cl.n || cl.cnt.recv != want + cl.n)
		error("completions: write " + std::to_string(cl.cnt.write) + " read " +
		      std::to_string(cl.cnt.read) + " send " + std::to_string(cl.cnt.send) +
		      " recv " + std::to_string(cl.cnt.recv) + ", want " +
		      std::to_string(want) + " writes and reads, " +
		      std::to_string(want + cl.n) + " sends and receives");
	if (errors)
		return 1;
	std::printf("traffic ok: %u rounds on %u QPs in %.2f s: %lu RDMA Writes of %zu bytes checked by the server, %lu RDMA Reads checked here, %lu Sends, %lu receives, every completion a success\n",
		    cl.rounds, cl.n, ttr, cl.cnt.write, cl.size, cl.cnt.read,
		    cl.cnt.send, cl.cnt.recv);
	std::fflush(stdout);
	if (do_pause) {
		std::printf("paused\n");
		std::fflush(stdout);
		do
			sigwait(&sigs, &sig);
		while (sig != SIGUSR1 && sig != SIGTERM && sig != SIGINT);
		if (sig != SIGUSR1)
			return 1;
	}

	// close all but the @leak last, INFLIGHT at a time
	if (leak)
		std::printf("leaving %u connections up on purpose (XIW_CM_SCALE_LEAK)\n", leak);
	uint32_t to_close = cl.n - leak, next = 0;
	t0 = now_s();
	while (cl.gone < to_close) {
		while (next < to_close && cl.closing < cl.inflight)
			cl.disconnect(*cl.conns[next++]);
		if (!cl.turn())
			break;
	}
	double tclose = now_s() - t0;
	if (cl.gone < to_close)
		error(std::to_string(to_close - cl.gone) + " connections not torn down");
	unsigned long flushes = (unsigned long)to_close * kRecvs;
	if (cl.cnt.flushed != flushes)
		error(std::to_string(cl.cnt.flushed) + " receives flushed, want " +
		      std::to_string(flushes));
	report("close", cl, to_close, tclose, cl.td);
	cl.quit(leak);
	std::printf("closed %u connections in %.2f s, %lu receives flushed; errors %lu\n",
		    to_close, tclose, cl.cnt.flushed, errors);
	std::fflush(stdout);
	if (do_hold)
		hold();
	for (uint32_t i = to_close; i < cl.n; i++)
		conn_destroy(*cl.conns[i]);
	return errors ? 1 : 0;
}

int usage()
{
	std::fprintf(stderr,
		     "usage: xiw_cm_scale server ADDR PORT [--hold]\n"
		     "       xiw_cm_scale rate ADDR PORT SRC N INFLIGHT [--hold]\n"
		     "       xiw_cm_scale scale ADDR PORT SRC N INFLIGHT ROUNDS SIZE [--pause] [--hold]\n");
	return 2;
}

} // namespace

int main(int argc, char **argv)
{
	std::vector<std::string> args, opts;

	for (int i = 1; i < argc; i++)
		(std::strncmp(argv[i], "--", 2) ? args : opts).push_back(argv[i]);
	auto opt = [&](const char *o) {
		return std::find(opts.begin(), opts.end(), o) != opts.end();
	};
	for (auto &o : opts)
		if (o != "--hold" && o != "--pause")
			return usage();
	// the signals of --pause and --hold are taken by sigwait
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGUSR1);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	if (opt("--hold") || opt("--pause"))
		sigprocmask(SIG_BLOCK, &sigs, nullptr);
	setvbuf(stdout, nullptr, _IOLBF, 0);
	if (args.size() == 3 && args[0] == "server")
		return run_server(args[1].c_str(), args[2].c_str(), opt("--hold"));
	if (args.size() == 6 && args[0] == "rate") {
		Client cl(args[1].c_str(), args[2].c_str(), args[3].c_str());
		cl.n = std::stoul(args[4]);
		cl.inflight = std::max(1ul, std::stoul(args[5]));
		cl.traffic = false;
		cl.rounds = 0;
		cl.size = 0;
		return run_rate(cl, opt("--hold"));
	}
	if (args.size() == 8 && args[0] == "scale") {
		Client cl(args[1].c_str(), args[2].c_str(), args[3].c_str());
		cl.n = std::stoul(args[4]);
		cl.inflight = std::max(1ul, std::stoul(args[5]));
		cl.rounds = std::max(1ul, std::stoul(args[6]));
		cl.size = std::stoul(args[7]);
		cl.traffic = true;
		if (!cl.size || cl.size % 8 || cl.size > (1u << 20)) {
			std::fprintf(stderr, "SIZE: a multiple of 8, 8 .. 1 MiB\n");
			return 2;
		}
		return run_scale(cl, opt("--pause"), opt("--hold"));
	}
	return usage();
}
