// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * xiw_objects - verbs object life cycles on an xiw device, through libxiw.
 *
 *   xiw_objects [--dev xiw0] [--cycles N | --limits | --hold SECS]
 *
 * Checks the device and port attributes, then runs N cycles of: PD, two
 * MRs, CQs with and without a completion channel, an SRQ, three RC QPs
 * (plain, plain on the SRQ, ibv_create_qp_ex with the ibv_wr_* API),
 * created in INIT (iWARP Idle: ibv_query_qp right after create), INIT->INIT,
 * query, receives and sends posted while in INIT, INIT->ERR,
 * and every posted WR must come back exactly once as IBV_WC_WR_FLUSH_ERR
 * (this drives the mmap()ed rings end to end), in posting order, and so
 * must WRs posted after ERR; then everything is destroyed in reverse order.
 * The "reset" group fills the SQ and RQ to the depth create_qp returned
 * (one more WR fails with ENOMEM), checks that RESET discards queued WRs
 * without completions and that a QP is reusable after ERR -> RESET -> INIT;
 * the "negative" group checks that invalid requests fail with the expected
 * errno (EINVAL, EOPNOTSUPP, EBUSY). --limits instead creates max_cq CQs
 * and max_qp QPs: the next one of each must fail with ENOMEM. --hold
 * creates one PD, MR, CQ, SRQ and RC QP, prints "held" and keeps them
 * SECS seconds before it destroys them: a live object of each kind for a
 * test that reads them from outside (rdma resource show).
 *
 * One summary line per check group; exit status 0 if all checks passed,
 * 1 if any failed, 2 on usage errors or if the device cannot be used.
 */
#include <infiniband/verbs.h>

#include <arpa/inet.h>
#include <endian.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

/* ---- checks ------------------------------------------------------------ */

class Checker {
public:
	void begin(std::string group)
	{
		group_ = std::move(group);
		checks_ = fails_ = 0;
	}

	bool check(bool ok, const char *file, int line, const char *fmt, ...)
		__attribute__((format(printf, 5, 6)))
	{
		++checks_;
		if (ok)
			return true;
		++fails_;
		++total_fails_;
		char msg[512];
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(msg, sizeof(msg), fmt, ap);
		va_end(ap);
		fprintf(stderr, "FAIL [%s] %s (%s:%d)\n", group_.c_str(), msg,
			file, line);
		return false;
	}

	void end()
	{
		printf("%s %-10s %u checks, %u failed\n",
		       fails_ ? "FAIL" : "PASS", group_.c_str(), checks_,
		       fails_);
		fflush(stdout);
	}

	unsigned int failures() const { return total_fails_; }

private:
	std::string group_ = "setup";
	unsigned int checks_ = 0, fails_ = 0, total_fails_ = 0;
};

Checker chk;

#define CHECK(cond, ...) chk.check(!!(cond), __FILE__, __LINE__, __VA_ARGS__)

[[noreturn]] void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "xiw_objects: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(2);
}

/* ---- RAII for verbs objects; destroy failures are check failures ------- */

template <typename T> struct Destroy;
#define XIW_DESTROY(type, fn)						\
	template <> struct Destroy<type> {				\
		static int run(type *p) { return fn(p); }		\
		static constexpr const char *name = #fn;		\
	}
XIW_DESTROY(ibv_context, ibv_close_device);
XIW_DESTROY(ibv_pd, ibv_dealloc_pd);
XIW_DESTROY(ibv_mr, ibv_dereg_mr);
XIW_DESTROY(ibv_comp_channel, ibv_destroy_comp_channel);
XIW_DESTROY(ibv_cq, ibv_destroy_cq);
XIW_DESTROY(ibv_srq, ibv_destroy_srq);
XIW_DESTROY(ibv_qp, ibv_destroy_qp);

template <typename T> struct Deleter {
	void operator()(T *p) const
	{
		int rc = Destroy<T>::run(p);

		CHECK(rc == 0, "%s: %d (%s)", Destroy<T>::name, rc,
		      strerror(rc > 0 ? rc : errno));
	}
};

template <typename T> using Obj = std::unique_ptr<T, Deleter<T>>;

/* Anonymous private mapping, page aligned. */
class Mapping {
public:
	explicit Mapping(size_t len)
		: len_(len),
		  p_(mmap(nullptr, len, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0))
	{
		if (p_ == MAP_FAILED)
			die("mmap(%zu): %s", len, strerror(errno));
		memset(p_, 0x5a, len);
	}
	~Mapping() { munmap(p_, len_); }
	Mapping(const Mapping &) = delete;
	Mapping &operator=(const Mapping &) = delete;

	uint8_t *data() const { return static_cast<uint8_t *>(p_); }
	size_t size() const { return len_; }

private:
	size_t len_;
	void *p_;
};

struct Options {
	std::string dev = "xiw0";
	unsigned long cycles = 1;
	bool limits = false;	/* only the device attributes and limits */
	unsigned long hold = 0;	/* seconds to keep one object of each kind */
};

constexpr int kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			IBV_ACCESS_REMOTE_READ;
constexpr uint32_t kSendWr = 16, kRecvWr = 16, kSge = 2, kInline = 64;
constexpr int kCqe = 64;
constexpr auto kDrainTimeout = std::chrono::seconds(5);

void set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		die("fcntl(O_NONBLOCK): %s", strerror(errno));
}

/* Ack whatever async events are pending (destroy_qp waits for them). */
void drain_async_events(ibv_context *ctx)
{
	ibv_async_event ev;

	while (ibv_get_async_event(ctx, &ev) == 0)
		ibv_ack_async_event(&ev);
}

/* Read and ack pending completion events; returns how many were for cq. */
unsigned int drain_cq_events(ibv_comp_channel *ch, ibv_cq *cq, int wait_ms)
{
	unsigned int n = 0;
	pollfd pfd = { ch->fd, POLLIN, 0 };

	while (poll(&pfd, 1, n ? 0 : wait_ms) > 0) {
		ibv_cq *ev_cq;
		void *ev_ctx;

		if (ibv_get_cq_event(ch, &ev_cq, &ev_ctx))
			break;
		ibv_ack_cq_events(ev_cq, 1);
		if (ev_cq == cq)
			++n;
	}
	return n;
}

/* ---- device ------------------------------------------------------------ */

Obj<ibv_context> open_device(const std::string &name)
{
	int num = 0;
	ibv_device **list = ibv_get_device_list(&num);
	ibv_device *dev = nullptr;

	if (!list)
		die("ibv_get_device_list: %s", strerror(errno));
	for (int i = 0; i < num; i++)
		if (name == ibv_get_device_name(list[i]))
			dev = list[i];
	if (!dev) {
		ibv_free_device_list(list);
		die("device %s not found (is xiw.ko loaded, the link added, "
		    "and libxiw installed or named in RDMAV_DRIVERS?)",
		    name.c_str());
	}
	if (dev->transport_type != IBV_TRANSPORT_IWARP ||
	    dev->node_type != IBV_NODE_RNIC) {
		ibv_free_device_list(list);
		die("device %s is not an iWARP RNIC (transport %d, node type %s)",
		    name.c_str(), dev->transport_type,
		    ibv_node_type_str(dev->node_type));
	}
	ibv_context *ctx = ibv_open_device(dev);
	int err = errno;

	ibv_free_device_list(list);
	if (!ctx)
		die("ibv_open_device(%s): %s", name.c_str(), strerror(err));
	return Obj<ibv_context>(ctx);
}

void check_device(ibv_context *ctx, ibv_device_attr_ex &ax)
{
	chk.begin("device");

	int rc = ibv_query_device_ex(ctx, nullptr, &ax);
	CHECK(rc == 0, "ibv_query_device_ex: %s", strerror(rc));
	const ibv_device_attr &a = ax.orig_attr;

	CHECK(a.max_qp > 0, "max_qp %d", a.max_qp);
	CHECK(a.max_qp_wr > 0, "max_qp_wr %d", a.max_qp_wr);
	CHECK(a.max_cq > 0, "max_cq %d", a.max_cq);
	CHECK(a.max_cqe > 0, "max_cqe %d", a.max_cqe);
	CHECK(a.max_pd > 0, "max_pd %d", a.max_pd);
	CHECK(a.max_mr > 0, "max_mr %d", a.max_mr);
	CHECK(a.max_sge == 6, "max_sge %d, expected 6", a.max_sge);
	CHECK(a.max_mr_size > 0, "max_mr_size %llu",
	      (unsigned long long)a.max_mr_size);
	CHECK(a.node_guid != 0, "node_guid is zero");
	CHECK(a.phys_port_cnt >= 1, "phys_port_cnt %u", a.phys_port_cnt);
	CHECK(a.fw_ver[0] != '\0', "fw_ver is empty");

	ibv_device_attr plain;
	rc = ibv_query_device(ctx, &plain);
	CHECK(rc == 0, "ibv_query_device: %s", strerror(rc));
	CHECK(rc || (plain.max_qp == a.max_qp &&
		     !strcmp(plain.fw_ver, a.fw_ver)),
	      "ibv_query_device disagrees with ibv_query_device_ex");

	ibv_port_attr pa;
	rc = ibv_query_port(ctx, 1, &pa);
	CHECK(rc == 0, "ibv_query_port(1): %s", strerror(rc));
	CHECK(pa.state >= IBV_PORT_DOWN && pa.state <= IBV_PORT_ACTIVE_DEFER,
	      "port state %d not reported", pa.state);
	CHECK(pa.gid_tbl_len > 0, "gid_tbl_len %d", pa.gid_tbl_len);

	ibv_gid gid;
	rc = ibv_query_gid(ctx, 1, 0, &gid);
	CHECK(rc == 0, "ibv_query_gid(1, 0): %s", strerror(errno));
	static const uint8_t zero[16] = {};
	CHECK(rc || memcmp(gid.raw, zero, sizeof(zero)),
	      "GID 0 is zero (iWARP GID = MAC)");

	printf("     %s: fw %s, node_guid %016llx, max_qp %d max_qp_wr %d "
	       "max_cqe %d max_sge %d, port %s, mtu %d\n",
	       ibv_get_device_name(ctx->device), a.fw_ver,
	       (unsigned long long)be64toh(a.node_guid), a.max_qp,
	       a.max_qp_wr, a.max_cqe, a.max_sge, ibv_port_state_str(pa.state),
	       pa.active_mtu ? 128 << pa.active_mtu : 0);
	chk.end();
}

/* ---- one cycle --------------------------------------------------------- */

struct Buffers {
	Mapping small{64 * 1024};
	Mapping big{1024 * 1024};
};

/* wr_id layout: cycle:32 | qp:8 | kind:8 | index:16 */
enum WrKind : uint64_t {
	kRecv = 1, kSend = 2, kWrApi = 3, kLateRecv = 4, kLateSend = 5,
	kSrqRecv = 6,
};

uint64_t make_id(unsigned long cycle, unsigned int qp, WrKind kind,
		 unsigned int i)
{
	return (uint64_t)cycle << 32 | (uint64_t)qp << 24 |
	       (uint64_t)kind << 16 | i;
}

struct QpUnderTest {
	const char *name;
	Obj<ibv_qp> qp;
	ibv_cq *cq;
	bool srq;
	bool ex;
};

/* A posted WR that must complete: its QP, queue and posting order. */
struct Pending {
	uint32_t qpn;
	bool recv;
	uint64_t seq;
};

/* Expected completions per CQ, by wr_id. */
class Expected : public std::map<uint64_t, Pending> {
public:
	void add(uint64_t wr_id, uint32_t qpn, bool recv)
	{
		(*this)[wr_id] = Pending{ qpn, recv, next_seq_++ };
	}

private:
	static inline uint64_t next_seq_ = 0;
};

const char *state_name(ibv_qp_state st)
{
	switch (st) {
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

void modify_state(ibv_qp *qp, ibv_qp_state st, int extra_mask,
		  const char *what)
{
	ibv_qp_attr attr = {};
	attr.qp_state = st;
	attr.qp_access_flags = kAccess;
	attr.port_num = 1;
	attr.pkey_index = 0;
	int rc = ibv_modify_qp(qp, &attr, IBV_QP_STATE | extra_mask);

	CHECK(rc == 0, "%s: ibv_modify_qp -> %s: %s", what, state_name(st),
	      strerror(rc));
}

void post_recvs(QpUnderTest &t, ibv_mr *mr, unsigned long cycle,
		unsigned int qpi, WrKind kind, unsigned int n, Expected &exp)
{
	for (unsigned int i = 0; i < n; i++) {
		ibv_sge sge[2] = {
			{ (uintptr_t)mr->addr + 512 * i, 256, mr->lkey },
			{ (uintptr_t)mr->addr + 512 * i + 256, 256, mr->lkey },
		};
		ibv_recv_wr wr = {}, *bad = nullptr;
		wr.wr_id = make_id(cycle, qpi, kind, i);
		wr.sg_list = sge;
		wr.num_sge = i % 3;	/* 0, 1 and 2 SGEs */
		int rc = ibv_post_recv(t.qp.get(), &wr, &bad);

		if (CHECK(rc == 0, "%s: ibv_post_recv #%u: %s", t.name, i,
			  strerror(rc)))
			exp.add(wr.wr_id, t.qp->qp_num, true);
	}
}

/* A chain of signaled sends covering every supported opcode. */
void post_sends(QpUnderTest &t, ibv_mr *local, ibv_mr *remote,
		unsigned long cycle, unsigned int qpi, WrKind kind,
		unsigned int n, Expected &exp)
{
	std::vector<ibv_send_wr> wrs(n);
	std::vector<ibv_sge> sges(2 * n);
	static const char inline_msg[] = "xiw inline payload";

	for (unsigned int i = 0; i < n; i++) {
		ibv_send_wr &wr = wrs[i];
		ibv_sge *sge = &sges[2 * i];

		sge[0] = { (uintptr_t)local->addr + 1024 * i, 512, local->lkey };
		sge[1] = { (uintptr_t)local->addr + 1024 * i + 512, 512,
			   local->lkey };
		wr.wr_id = make_id(cycle, qpi, kind, i);
		wr.next = i + 1 < n ? &wrs[i + 1] : nullptr;
		wr.sg_list = sge;
		wr.num_sge = 1;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.rdma.remote_addr = (uintptr_t)remote->addr + 4096 * i;
		wr.wr.rdma.rkey = remote->rkey;

		switch (i % 8) {
		case 0:
			wr.opcode = IBV_WR_SEND;
			break;
		case 1:
			wr.opcode = IBV_WR_SEND;
			wr.send_flags |= IBV_SEND_INLINE | IBV_SEND_SOLICITED;
			sge[0] = { (uintptr_t)inline_msg, sizeof(inline_msg), 0 };
			break;
		case 2:
			wr.opcode = IBV_WR_RDMA_WRITE;
			wr.num_sge = 2;
			break;
		case 3:
			wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
			wr.imm_data = htonl(0x12345678);
			break;
		case 4:
			wr.opcode = IBV_WR_RDMA_READ;
			wr.send_flags |= IBV_SEND_FENCE;
			break;
		case 5:
			wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
			sge[0].length = 8;
			wr.wr.atomic.remote_addr = (uintptr_t)remote->addr + 8 * i;
			wr.wr.atomic.rkey = remote->rkey;
			wr.wr.atomic.compare_add = 1;
			break;
		case 6:
			wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
			sge[0].length = 8;
			wr.wr.atomic.remote_addr = (uintptr_t)remote->addr + 8 * i;
			wr.wr.atomic.rkey = remote->rkey;
			wr.wr.atomic.compare_add = 0;
			wr.wr.atomic.swap = 1;
			break;
		default:
			wr.opcode = IBV_WR_SEND_WITH_INV;
			wr.invalidate_rkey = remote->rkey;
			break;
		}
	}

	ibv_send_wr *bad = nullptr;
	int rc = ibv_post_send(t.qp.get(), wrs.data(), &bad);

	if (CHECK(rc == 0, "%s: ibv_post_send of %u WRs: %s (bad_wr #%td)",
		  t.name, n, strerror(rc), bad ? bad - wrs.data() : -1))
		for (auto &wr : wrs)
			exp.add(wr.wr_id, t.qp->qp_num, false);
}

/* The same through ibv_wr_*, in one batch. */
void post_wr_api(QpUnderTest &t, ibv_mr *local, ibv_mr *remote,
		 unsigned long cycle, unsigned int qpi, Expected &exp)
{
	ibv_qp_ex *qx = ibv_qp_to_qp_ex(t.qp.get());
	static char inline_msg[] = "wr api inline";
	std::vector<uint64_t> ids;

	if (!CHECK(qx, "%s: ibv_qp_to_qp_ex returned NULL", t.name))
		return;
	auto next = [&](unsigned int i) {
		qx->wr_id = make_id(cycle, qpi, kWrApi, i);
		qx->wr_flags = IBV_SEND_SIGNALED;
		ids.push_back(qx->wr_id);
	};
	uintptr_t la = (uintptr_t)local->addr, ra = (uintptr_t)remote->addr;

	ibv_wr_start(qx);
	next(0);
	ibv_wr_send(qx);
	ibv_wr_set_sge(qx, local->lkey, la, 128);
	next(1);
	ibv_wr_rdma_write(qx, remote->rkey, ra);
	ibv_wr_set_inline_data(qx, inline_msg, sizeof(inline_msg));
	next(2);
	ibv_wr_rdma_write_imm(qx, remote->rkey, ra, htonl(7));
	ibv_sge list[2] = { { la, 64, local->lkey }, { la + 64, 64, local->lkey } };
	ibv_wr_set_sge_list(qx, 2, list);
	next(3);
	ibv_wr_rdma_read(qx, remote->rkey, ra + 4096);
	ibv_wr_set_sge(qx, local->lkey, la + 4096, 4096);
	next(4);
	ibv_wr_atomic_fetch_add(qx, remote->rkey, ra + 64, 5);
	ibv_wr_set_sge(qx, local->lkey, la + 8192, 8);
	next(5);
	ibv_wr_atomic_cmp_swp(qx, remote->rkey, ra + 72, 0, 1);
	ibv_wr_set_sge(qx, local->lkey, la + 8200, 8);
	next(6);
	ibv_wr_send_inv(qx, remote->rkey);
	ibv_data_buf bufs[2] = { { inline_msg, 4 }, { inline_msg + 4, 4 } };
	ibv_wr_set_inline_data_list(qx, 2, bufs);
	int rc = ibv_wr_complete(qx);

	if (CHECK(rc == 0, "%s: ibv_wr_complete: %s", t.name, strerror(rc)))
		for (uint64_t id : ids)
			exp.add(id, t.qp->qp_num, false);

	/* A batch with an error is not posted at all. */
	ibv_wr_start(qx);
	qx->wr_id = make_id(cycle, qpi, kWrApi, 100);
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_read(qx, remote->rkey, ra);
	ibv_wr_set_inline_data(qx, inline_msg, 4);	/* not for Read */
	rc = ibv_wr_complete(qx);
	CHECK(rc == EINVAL, "%s: batch with inline Read: %d, expected EINVAL",
	      t.name, rc);
}

/*
 * Poll until every expected WR is seen: each exactly once, as flushed,
 * with its QP's number, and in posting order within its queue.
 */
void drain_flushed(ibv_cq *cq, Expected &exp, const char *what)
{
	auto deadline = std::chrono::steady_clock::now() + kDrainTimeout;
	size_t want = exp.size();
	unsigned int bad_status = 0, unexpected = 0, wrong_qp = 0, order = 0;
	std::map<std::pair<uint32_t, bool>, uint64_t> last_seq;
	ibv_wc wc[16];

	while (!exp.empty() && std::chrono::steady_clock::now() < deadline) {
		int n = ibv_poll_cq(cq, 16, wc);

		if (!CHECK(n >= 0, "%s: ibv_poll_cq: %d", what, n))
			return;
		if (!n) {
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
			continue;
		}
		for (int i = 0; i < n; i++) {
			auto it = exp.find(wc[i].wr_id);

			if (it == exp.end()) {
				if (!unexpected++)
					fprintf(stderr, "     %s: unexpected or duplicate wr_id %#llx status %s\n",
						what, (unsigned long long)wc[i].wr_id,
						ibv_wc_status_str(wc[i].status));
				continue;
			}
			const Pending &p = it->second;
			if (wc[i].status != IBV_WC_WR_FLUSH_ERR && !bad_status++)
				fprintf(stderr, "     %s: wr_id %#llx status %s\n",
					what, (unsigned long long)wc[i].wr_id,
					ibv_wc_status_str(wc[i].status));
			if (wc[i].qp_num != p.qpn)
				++wrong_qp;
			auto key = std::make_pair(p.qpn, p.recv);
			auto ls = last_seq.find(key);
			if (ls != last_seq.end() && ls->second > p.seq && !order++)
				fprintf(stderr, "     %s: wr_id %#llx completed out of order\n",
					what, (unsigned long long)wc[i].wr_id);
			last_seq[key] = p.seq;
			exp.erase(it);
		}
	}
	CHECK(exp.empty(), "%s: %zu of %zu WRs not completed within %llds (first missing wr_id %#llx)",
	      what, exp.size(), want, (long long)kDrainTimeout.count(),
	      exp.empty() ? 0ULL : (unsigned long long)exp.begin()->first);
	CHECK(!bad_status, "%s: %u completions not IBV_WC_WR_FLUSH_ERR", what,
	      bad_status);
	CHECK(!unexpected, "%s: %u unexpected/duplicate completions", what,
	      unexpected);
	CHECK(!wrong_qp, "%s: %u completions with a wrong qp_num", what,
	      wrong_qp);
	CHECK(!order, "%s: %u completions out of posting order", what, order);

	/* the kernel flushes within the modify_qp/doorbell syscall */
	int extra = ibv_poll_cq(cq, 16, wc);
	CHECK(extra == 0, "%s: %d extra completions after the drain", what,
	      extra);
	exp.clear();
}

void check_qp_caps(QpUnderTest &t, ibv_qp_state want_state)
{
	ibv_qp_attr attr = {};
	ibv_qp_init_attr init = {};
	int rc = ibv_query_qp(t.qp.get(), &attr, IBV_QP_STATE | IBV_QP_CAP,
			      &init);

	if (!CHECK(rc == 0, "%s: ibv_query_qp: %s", t.name, strerror(rc)))
		return;
	CHECK(attr.qp_state == want_state, "%s: state %s, expected %s",
	      t.name, state_name(attr.qp_state), state_name(want_state));
	CHECK(attr.cap.max_send_wr >= kSendWr && attr.cap.max_send_sge >= kSge &&
	      attr.cap.max_inline_data >= kInline,
	      "%s: send caps %u/%u/%u below the requested %u/%u/%u", t.name,
	      attr.cap.max_send_wr, attr.cap.max_send_sge,
	      attr.cap.max_inline_data, kSendWr, kSge, kInline);
	if (!t.srq)
		CHECK(attr.cap.max_recv_wr >= kRecvWr &&
		      attr.cap.max_recv_sge >= kSge,
		      "%s: recv caps %u/%u below the requested %u/%u", t.name,
		      attr.cap.max_recv_wr, attr.cap.max_recv_sge, kRecvWr,
		      kSge);
}

ibv_qp_init_attr_ex qp_attr(ibv_pd *pd, ibv_cq *cq, ibv_srq *srq)
{
	ibv_qp_init_attr_ex a = {};
	a.send_cq = cq;
	a.recv_cq = cq;
	a.srq = srq;
	a.qp_type = IBV_QPT_RC;
	a.cap.max_send_wr = kSendWr;
	a.cap.max_recv_wr = srq ? 0 : kRecvWr;
	a.cap.max_send_sge = kSge;
	a.cap.max_recv_sge = srq ? 0 : kSge;
	a.cap.max_inline_data = kInline;
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	a.pd = pd;
	return a;
}

Obj<ibv_qp> create_qp(ibv_pd *pd, ibv_cq *cq, ibv_srq *srq, bool ex,
		      const char *name)
{
	ibv_qp_init_attr_ex a = qp_attr(pd, cq, srq);
	ibv_qp *qp;

	if (ex) {
		a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		a.send_ops_flags = IBV_QP_EX_WITH_SEND |
			IBV_QP_EX_WITH_SEND_WITH_INV |
			IBV_QP_EX_WITH_RDMA_WRITE |
			IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
			IBV_QP_EX_WITH_RDMA_READ |
			IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
			IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
		qp = ibv_create_qp_ex(pd->context, &a);
	} else {
		ibv_qp_init_attr ia = {};
		ia.send_cq = a.send_cq;
		ia.recv_cq = a.recv_cq;
		ia.srq = a.srq;
		ia.cap = a.cap;
		ia.qp_type = a.qp_type;
		qp = ibv_create_qp(pd, &ia);
		a.cap = ia.cap;
	}
	if (!CHECK(qp, "%s: create: %s", name, strerror(errno)))
		return nullptr;
	/*
	 * libibverbs caches RESET for a new QP; the kernel reports iWARP's
	 * Idle as INIT through ibv_query_qp (verbs_lifecycle's qpstate)
	 */
	CHECK(qp->state == IBV_QPS_RESET && qp->qp_type == IBV_QPT_RC,
	      "%s: state %d type %d after create", name, qp->state,
	      qp->qp_type);
	CHECK(a.cap.max_send_wr >= kSendWr && a.cap.max_send_sge >= kSge,
	      "%s: created send caps %u/%u below the requested", name,
	      a.cap.max_send_wr, a.cap.max_send_sge);
	return Obj<ibv_qp>(qp);
}

void run_cycle(ibv_context *ctx, Buffers &buf, unsigned long cycle)
{
	Obj<ibv_pd> pd(ibv_alloc_pd(ctx));
	if (!CHECK(pd, "ibv_alloc_pd: %s", strerror(errno)))
		return;

	Obj<ibv_mr> mr_small(ibv_reg_mr(pd.get(), buf.small.data(),
					buf.small.size(), kAccess));
	Obj<ibv_mr> mr_big(ibv_reg_mr(pd.get(), buf.big.data(),
				      buf.big.size(), kAccess));
	if (!CHECK(mr_small && mr_big, "ibv_reg_mr: %s", strerror(errno)))
		return;
	CHECK(mr_small->length == buf.small.size() &&
	      mr_small->addr == buf.small.data() && mr_big->lkey &&
	      mr_big->rkey != mr_small->rkey,
	      "MR attributes (len %zu, lkey %#x, rkeys %#x/%#x)",
	      mr_small->length, mr_big->lkey, mr_small->rkey, mr_big->rkey);

	Obj<ibv_comp_channel> ch(ibv_create_comp_channel(ctx));
	if (!CHECK(ch, "ibv_create_comp_channel: %s", strerror(errno)))
		return;
	set_nonblock(ch->fd);
	Obj<ibv_cq> cq_ev(ibv_create_cq(ctx, kCqe, nullptr, ch.get(), 0));
	Obj<ibv_cq> cq(ibv_create_cq(ctx, kCqe, nullptr, nullptr, 0));
	if (!CHECK(cq_ev && cq, "ibv_create_cq: %s", strerror(errno)))
		return;
	CHECK(cq->cqe >= kCqe && cq_ev->cqe >= kCqe, "CQ sizes %d/%d < %d",
	      cq->cqe, cq_ev->cqe, kCqe);

	ibv_srq_init_attr sa = {};
	sa.attr.max_wr = 32;
	sa.attr.max_sge = kSge;
	Obj<ibv_srq> srq(ibv_create_srq(pd.get(), &sa));
	if (!CHECK(srq, "ibv_create_srq: %s", strerror(errno)))
		return;

	/* SRQ receives are not flushed with a QP: they stay posted. */
	for (unsigned int i = 0; i < 8; i++) {
		ibv_sge sge = { (uintptr_t)buf.big.data() + 4096 * i, 4096,
				mr_big->lkey };
		ibv_recv_wr wr = {}, *bad = nullptr;
		wr.wr_id = make_id(cycle, 9, kSrqRecv, i);
		wr.sg_list = &sge;
		wr.num_sge = 1;
		int rc = ibv_post_srq_recv(srq.get(), &wr, &bad);
		CHECK(rc == 0, "ibv_post_srq_recv #%u: %s", i, strerror(rc));
	}

	QpUnderTest qps[3] = {
		{ "qp", nullptr, cq.get(), false, false },
		{ "qp+srq", nullptr, cq_ev.get(), true, false },
		{ "qp_ex", nullptr, cq.get(), false, true },
	};
	for (auto &t : qps) {
		t.qp = create_qp(pd.get(), t.cq, t.srq ? srq.get() : nullptr,
				 t.ex, t.name);
		if (!t.qp)
			return;
	}

	Expected exp_cq, exp_cq_ev;
	int rc = ibv_req_notify_cq(cq_ev.get(), 0);
	CHECK(rc == 0, "ibv_req_notify_cq: %s", strerror(rc));

	for (unsigned int qpi = 0; qpi < 3; qpi++) {
		QpUnderTest &t = qps[qpi];
		Expected &exp = t.cq == cq.get() ? exp_cq : exp_cq_ev;

		/* the kernel's view right after create: Idle = INIT */
		check_qp_caps(t, IBV_QPS_INIT);
		modify_state(t.qp.get(), IBV_QPS_INIT,
			     IBV_QP_ACCESS_FLAGS | IBV_QP_PORT |
			     IBV_QP_PKEY_INDEX, t.name);
		check_qp_caps(t, IBV_QPS_INIT);
		if (!t.srq)
			post_recvs(t, mr_small.get(), cycle, qpi, kRecv, 8, exp);
		post_sends(t, mr_small.get(), mr_big.get(), cycle, qpi, kSend,
			   t.ex ? 4 : 8, exp);
		if (t.ex)
			post_wr_api(t, mr_small.get(), mr_big.get(), cycle, qpi,
				    exp);
	}

	for (auto &t : qps)
		modify_state(t.qp.get(), IBV_QPS_ERR, 0, t.name);
	drain_flushed(cq.get(), exp_cq, "flush cq");
	drain_flushed(cq_ev.get(), exp_cq_ev, "flush cq_ev");
	CHECK(drain_cq_events(ch.get(), cq_ev.get(), 1000) >= 1,
	      "no completion event on the armed CQ");

	/* WRs posted to a QP in error are flushed as well. */
	for (unsigned int qpi = 0; qpi < 3; qpi++) {
		QpUnderTest &t = qps[qpi];
		Expected &exp = t.cq == cq.get() ? exp_cq : exp_cq_ev;

		check_qp_caps(t, IBV_QPS_ERR);
		if (!t.srq)
			post_recvs(t, mr_small.get(), cycle, qpi, kLateRecv, 2,
				   exp);
		post_sends(t, mr_small.get(), mr_big.get(), cycle, qpi,
			   kLateSend, 2, exp);
	}
	drain_flushed(cq.get(), exp_cq, "late flush cq");
	drain_flushed(cq_ev.get(), exp_cq_ev, "late flush cq_ev");

	drain_cq_events(ch.get(), cq_ev.get(), 0);
	drain_async_events(ctx);
	/* the Obj<> destructors run in reverse order and check the result */
}

/*
 * Queue depth and RESET: the SQ and RQ take exactly the capacity that
 * create_qp returned (one more WR fails with ENOMEM and bad_wr set); WRs
 * queued when the QP goes to RESET are discarded without completions; and
 * the QP is fully usable again after RESET -> INIT (ring indices of the
 * provider and the kernel stay in step).
 */
void check_depth_and_reset(ibv_context *ctx, Buffers &buf)
{
	chk.begin("reset");
	Obj<ibv_pd> pd(ibv_alloc_pd(ctx));
	Obj<ibv_mr> mr_small, mr_big;
	Obj<ibv_cq> cq(ibv_create_cq(ctx, 256, nullptr, nullptr, 0));
	if (pd) {
		mr_small.reset(ibv_reg_mr(pd.get(), buf.small.data(),
					  buf.small.size(), kAccess));
		mr_big.reset(ibv_reg_mr(pd.get(), buf.big.data(),
					buf.big.size(), kAccess));
	}
	if (!CHECK(pd && cq && mr_small && mr_big, "setup: %s",
		   strerror(errno))) {
		chk.end();
		return;
	}

	ibv_qp_init_attr ia = {};
	ia.send_cq = ia.recv_cq = cq.get();
	ia.qp_type = IBV_QPT_RC;
	ia.cap = { kSendWr, kRecvWr, kSge, kSge, kInline };
	QpUnderTest t = { "qp", Obj<ibv_qp>(ibv_create_qp(pd.get(), &ia)),
			  cq.get(), false, false };
	if (!CHECK(t.qp, "ibv_create_qp: %s", strerror(errno)) ||
	    !CHECK(ia.cap.max_send_wr <= 64 && ia.cap.max_recv_wr <= 64,
		   "caps %u/%u too large for this check", ia.cap.max_send_wr,
		   ia.cap.max_recv_wr)) {
		chk.end();
		return;
	}

	/*
	 * Round 0 queues a few WRs and goes straight to RESET (discarded,
	 * ring indices left mid-ring); rounds 1 and 2 fill both rings, go to
	 * ERR, expect every WR flushed in order, and then go to RESET.
	 */
	for (unsigned long round = 0; round < 3; round++) {
		bool full = round > 0;
		Expected exp;

		modify_state(t.qp.get(), IBV_QPS_INIT,
			     IBV_QP_ACCESS_FLAGS | IBV_QP_PORT |
			     IBV_QP_PKEY_INDEX, "depth");
		post_recvs(t, mr_small.get(), round, 0, kRecv,
			   full ? ia.cap.max_recv_wr : 3, exp);
		post_sends(t, mr_small.get(), mr_big.get(), round, 0, kSend,
			   full ? ia.cap.max_send_wr : 5, exp);

		ibv_sge sge = { (uintptr_t)buf.small.data(), 64,
				mr_small->lkey };
		ibv_recv_wr rwr = {}, *rbad = nullptr;
		rwr.wr_id = ~0ULL;
		rwr.sg_list = &sge;
		rwr.num_sge = 1;
		ibv_send_wr swr = {}, *sbad = nullptr;
		swr.wr_id = ~0ULL;
		swr.sg_list = &sge;
		swr.num_sge = 1;
		swr.opcode = IBV_WR_SEND;
		swr.send_flags = IBV_SEND_SIGNALED;
		if (full) {
			int rc = ibv_post_recv(t.qp.get(), &rwr, &rbad);
			CHECK(rc == ENOMEM && rbad == &rwr,
			      "round %lu: recv #%u into a full RQ: %d (%s)",
			      round, ia.cap.max_recv_wr + 1, rc, strerror(rc));
			rc = ibv_post_send(t.qp.get(), &swr, &sbad);
			CHECK(rc == ENOMEM && sbad == &swr,
			      "round %lu: send #%u into a full SQ: %d (%s)",
			      round, ia.cap.max_send_wr + 1, rc, strerror(rc));
		}

		if (full) {
			modify_state(t.qp.get(), IBV_QPS_ERR, 0, "depth");
			drain_flushed(cq.get(), exp, "flush after reset");
		}
		modify_state(t.qp.get(), IBV_QPS_RESET, 0, "depth");
		check_qp_caps(t, IBV_QPS_RESET);
		if (!full) {
			ibv_wc wc;

			std::this_thread::sleep_for(
				std::chrono::milliseconds(20));
			int n = ibv_poll_cq(cq.get(), 1, &wc);
			CHECK(n == 0, "%d completions for WRs discarded by RESET",
			      n);
		}
	}
	t.qp.reset();
	drain_async_events(ctx);
	chk.end();
}

/* ---- negative checks --------------------------------------------------- */

void check_negative(ibv_context *ctx, const ibv_device_attr_ex &ax,
		    Buffers &buf)
{
	const ibv_device_attr &a = ax.orig_attr;

	chk.begin("negative");
	Obj<ibv_pd> pd(ibv_alloc_pd(ctx));
	Obj<ibv_cq> cq(ibv_create_cq(ctx, kCqe, nullptr, nullptr, 0));
	if (!CHECK(pd && cq, "setup: %s", strerror(errno))) {
		chk.end();
		return;
	}

	auto try_qp = [&](const char *what, auto tweak, int want_errno) {
		ibv_qp_init_attr_ex x = qp_attr(pd.get(), cq.get(), nullptr);
		tweak(x);
		errno = 0;
		ibv_qp *qp = ibv_create_qp_ex(ctx, &x);
		int err = errno;

		CHECK(!qp && err == want_errno,
		      "create_qp with %s: %s (errno %d %s), expected %s",
		      what, qp ? "succeeded" : "failed", err, strerror(err),
		      strerror(want_errno));
		if (qp)
			ibv_destroy_qp(qp);
	};
	if (a.max_qp_wr < INT_MAX)
		try_qp("max_send_wr > max_qp_wr", [&](ibv_qp_init_attr_ex &x) {
			x.cap.max_send_wr = a.max_qp_wr + 1;
		}, EINVAL);
	try_qp("max_send_sge 7", [](ibv_qp_init_attr_ex &x) {
		x.cap.max_send_sge = 7;
	}, EINVAL);
	try_qp("max_recv_sge 7", [](ibv_qp_init_attr_ex &x) {
		x.cap.max_recv_sge = 7;
	}, EINVAL);
	try_qp("send_ops_flags SEND_WITH_IMM", [](ibv_qp_init_attr_ex &x) {
		x.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		x.send_ops_flags = IBV_QP_EX_WITH_SEND |
				   IBV_QP_EX_WITH_SEND_WITH_IMM;
	}, EOPNOTSUPP);

	if (a.max_cqe < INT_MAX) {
		errno = 0;
		ibv_cq *big = ibv_create_cq(ctx, a.max_cqe + 1, nullptr,
					    nullptr, 0);
		CHECK(!big, "create_cq with cqe %d > max_cqe succeeded",
		      a.max_cqe + 1);
		if (big)
			ibv_destroy_cq(big);
		else
			printf("     create_cq(max_cqe + 1): %s\n",
			       strerror(errno));
	}

	/* A PD with an MR is busy; so is a CQ with a QP. */
	ibv_mr *mr = ibv_reg_mr(pd.get(), buf.small.data(), buf.small.size(),
				kAccess);
	ibv_qp_init_attr_ex x = qp_attr(pd.get(), cq.get(), nullptr);
	Obj<ibv_qp> qp(ibv_create_qp_ex(ctx, &x));
	if (CHECK(mr && qp, "setup: %s", strerror(errno))) {
		int rc = ibv_dealloc_pd(pd.get());
		CHECK(rc == EBUSY, "ibv_dealloc_pd with an MR: %d (%s), expected EBUSY",
		      rc, strerror(rc));
		if (!rc)
			pd.release();

		rc = ibv_destroy_cq(cq.get());
		CHECK(rc == EBUSY, "ibv_destroy_cq with a QP: %d (%s), expected EBUSY",
		      rc, strerror(rc));
		if (!rc)
			cq.release();
		else
			CHECK(ibv_poll_cq(cq.get(), 0, nullptr) == 0 &&
			      ibv_req_notify_cq(cq.get(), 0) == 0,
			      "busy CQ no longer usable");

		/* Bad work requests fail at post time with bad_wr set. */
		ibv_sge sge = { (uintptr_t)mr->addr, 8, mr->lkey };
		ibv_sge many[7];
		for (auto &s : many)
			s = sge;
		auto try_send = [&](const char *what, auto tweak) {
			ibv_send_wr wr = {}, *bad = nullptr;
			wr.wr_id = 42;
			wr.sg_list = &sge;
			wr.num_sge = 1;
			wr.opcode = IBV_WR_SEND;
			wr.send_flags = IBV_SEND_SIGNALED;
			tweak(wr);
			int r = ibv_post_send(qp.get(), &wr, &bad);
			CHECK(r == EINVAL && bad == &wr,
			      "post_send %s: %d (%s), bad_wr %s", what, r,
			      strerror(r), bad == &wr ? "set" : "not set");
		};
		try_send("IBV_WR_SEND_WITH_IMM", [](ibv_send_wr &wr) {
			wr.opcode = IBV_WR_SEND_WITH_IMM;
		});
		try_send("opcode 200", [](ibv_send_wr &wr) {
			wr.opcode = (ibv_wr_opcode)200;
		});
		/* a window bind names its window (verbs_mw has the rest) */
		try_send("IBV_WR_BIND_MW without a window", [](ibv_send_wr &wr) {
			wr.opcode = IBV_WR_BIND_MW;
			wr.bind_mw.mw = nullptr;
		});
		try_send("7 SGEs", [&](ibv_send_wr &wr) {
			wr.sg_list = many;
			wr.num_sge = 7;
		});
		try_send("97 inline bytes", [&](ibv_send_wr &wr) {
			static char big_inline[97];
			wr.send_flags |= IBV_SEND_INLINE;
			sge.addr = (uintptr_t)big_inline;
			sge.length = sizeof(big_inline);
		});
		sge = { (uintptr_t)mr->addr, 8, mr->lkey };
		try_send("Read with 2 SGEs", [&](ibv_send_wr &wr) {
			wr.opcode = IBV_WR_RDMA_READ;
			wr.sg_list = many;
			wr.num_sge = 2;
		});
		try_send("FetchAdd into 4 bytes", [&](ibv_send_wr &wr) {
			wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
			sge.length = 4;
		});

		ibv_recv_wr rwr = {}, *rbad = nullptr;
		rwr.sg_list = many;
		rwr.num_sge = 7;
		int r = ibv_post_recv(qp.get(), &rwr, &rbad);
		CHECK(r == EINVAL && rbad == &rwr,
		      "post_recv with 7 SGEs: %d (%s)", r, strerror(r));
	}
	qp.reset();
	if (mr)
		CHECK(ibv_dereg_mr(mr) == 0, "ibv_dereg_mr: %s", strerror(errno));
	drain_async_events(ctx);
	chk.end();
}

/*
 * @max objects made by @create at once, in @objs; the next must fail with
 * ENOMEM and, once one is destroyed, a create must succeed again. Returns
 * how many were made.
 */
template <typename T, typename Create>
int fill_to_limit(const char *what, int max, Create create,
		  std::vector<Obj<T>> &objs)
{
	objs.reserve(max);
	for (int i = 0; i < max; i++) {
		T *o = create();

		if (!CHECK(o, "%s %d of %d: %s", what, i + 1, max,
			   strerror(errno)))
			break;
		objs.emplace_back(o);
	}
	int made = (int)objs.size();
	errno = 0;
	T *over = create();
	CHECK(!over && errno == ENOMEM,
	      "%s beyond the limit %d (%d made): %s, expected ENOMEM",
	      what, max, made, over ? "created" : strerror(errno));
	if (over)
		Destroy<T>::run(over);
	if (made) {
		objs.pop_back();
		T *again = create();
		CHECK(again, "%s after one of %d was destroyed: %s", what,
		      made, strerror(errno));
		if (again)
			objs.emplace_back(again);
	}
	printf("     %d at once (%s), the next: %s\n", made, what,
	       over ? "created" : strerror(ENOMEM));
	return made;
}

/*
 * The device limits: max_cq CQs and max_qp QPs can be created, the one
 * after each fails with ENOMEM (insufficient resources, as siw says; rxe
 * says EINVAL) and leaves nothing behind: once one is destroyed the next
 * create succeeds again. The device must hold no other CQ or QP.
 */
void check_limits(ibv_context *ctx, const ibv_device_attr_ex &ax)
{
	const ibv_device_attr &a = ax.orig_attr;

	chk.begin("limits-cq");
	{
		std::vector<Obj<ibv_cq>> cqs;

		fill_to_limit("create_cq", a.max_cq, [&]() {
			return ibv_create_cq(ctx, 1, nullptr, nullptr, 0);
		}, cqs);
	}
	chk.end();

	chk.begin("limits-qp");
	Obj<ibv_pd> pd(ibv_alloc_pd(ctx));
	Obj<ibv_cq> cq(ibv_create_cq(ctx, 16, nullptr, nullptr, 0));
	if (!CHECK(pd && cq, "PD and CQ for the QPs: %s", strerror(errno))) {
		chk.end();
		return;
	}
	{
		std::vector<Obj<ibv_qp>> qps;

		fill_to_limit("create_qp", a.max_qp, [&]() {
			ibv_qp_init_attr init = {};

			init.send_cq = cq.get();
			init.recv_cq = cq.get();
			init.qp_type = IBV_QPT_RC;
			init.cap.max_send_wr = 1;
			init.cap.max_recv_wr = 1;
			init.cap.max_send_sge = 1;
			init.cap.max_recv_sge = 1;
			return ibv_create_qp(pd.get(), &init);
		}, qps);
	}
	chk.end();
}

/* One object of each kind, alive for secs seconds (--hold). */
void hold_objects(ibv_context *ctx, Buffers &buf, unsigned long secs)
{
	Obj<ibv_pd> pd(ibv_alloc_pd(ctx));
	if (!CHECK(pd, "ibv_alloc_pd: %s", strerror(errno)))
		return;
	Obj<ibv_mr> mr(ibv_reg_mr(pd.get(), buf.small.data(),
				  buf.small.size(), kAccess));
	Obj<ibv_cq> cq(ibv_create_cq(ctx, kCqe, nullptr, nullptr, 0));
	ibv_srq_init_attr sa = {};
	sa.attr.max_wr = 32;
	sa.attr.max_sge = kSge;
	Obj<ibv_srq> srq(ibv_create_srq(pd.get(), &sa));
	if (!CHECK(mr && cq && srq, "hold: MR, CQ or SRQ: %s",
		   strerror(errno)))
		return;
	Obj<ibv_qp> qp = create_qp(pd.get(), cq.get(), nullptr, false, "held");
	if (!qp)
		return;
	printf("held\n");
	fflush(stdout);
	std::this_thread::sleep_for(std::chrono::seconds(secs));
}

Options parse(int argc, char **argv)
{
	Options o;

	for (int i = 1; i < argc; i++) {
		std::string arg = argv[i];

		if (arg == "--dev" && i + 1 < argc) {
			o.dev = argv[++i];
		} else if (arg == "--limits") {
			o.limits = true;
		} else if (arg == "--cycles" && i + 1 < argc) {
			char *end;
			o.cycles = strtoul(argv[++i], &end, 0);
			if (*end || !o.cycles)
				die("bad --cycles value '%s'", argv[i]);
		} else if (arg == "--hold" && i + 1 < argc) {
			char *end;
			o.hold = strtoul(argv[++i], &end, 0);
			if (*end || !o.hold)
				die("bad --hold value '%s'", argv[i]);
		} else {
			fprintf(stderr,
				"usage: %s [--dev NAME] [--cycles N | --limits | --hold SECS]\n",
				argv[0]);
			exit(2);
		}
	}
	return o;
}

} // namespace

int main(int argc, char **argv)
{
	Options opt = parse(argc, argv);
	Obj<ibv_context> ctx = open_device(opt.dev);
	ibv_device_attr_ex ax = {};
	Buffers buf;

	set_nonblock(ctx->async_fd);
	check_device(ctx.get(), ax);
	if (opt.limits) {
		check_limits(ctx.get(), ax);
		ctx.reset();
		if (chk.failures()) {
			fprintf(stderr, "xiw_objects: %u check(s) failed\n",
				chk.failures());
			return 1;
		}
		printf("xiw_objects: limits checked\n");
		return 0;
	}

	if (opt.hold) {
		chk.begin("hold");
		hold_objects(ctx.get(), buf, opt.hold);
		ctx.reset();
		chk.end();
		return chk.failures() ? 1 : 0;
	}

	chk.begin("objects");
	for (unsigned long c = 0; c < opt.cycles; c++)
		run_cycle(ctx.get(), buf, c);
	chk.end();

	check_depth_and_reset(ctx.get(), buf);
	check_negative(ctx.get(), ax, buf);

	chk.begin("close");
	ctx.reset();
	chk.end();

	if (chk.failures()) {
		fprintf(stderr, "xiw_objects: %u check(s) failed\n",
			chk.failures());
		return 1;
	}
	printf("xiw_objects: all checks passed (%lu cycles)\n", opt.cycles);
	return 0;
}
