// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// xiw_verbsfuzz: random attributes in the core verbs commands that reach
// xiw's create/register/modify verbs.
//
// One process, one xiw device, no connection. Each step picks one call
// at random and gives it random attributes, valid, borderline and
// invalid alike:
//
//   cq      ibv_create_cq: cqe (0, small, the limit, past it, ~0),
//           comp_vector (0..3, huge), with or without a channel
//   qp      ibv_create_qp: qp_type (RC, UC, UD, made-up), every cap
//           (0, the limits, past them, huge), sq_sig_all, an SRQ or not,
//           send and receive CQ alike or not
//   srq     ibv_create_srq: max_wr, max_sge, srq_limit
//   mr      ibv_reg_mr: offset and length in and around a mapped buffer
//           (0, unmapped, wrapping), random access flags (invalid
//           combinations included)
//   modify  ibv_modify_qp of a live QP: random mask, state and values
//   mw      ibv_alloc_mw of type 1 and 2
//   raw     the same commands through write() on the uverbs fd with
//           random driver data: request of random length and bytes
//           (reg_mr's struct xiw_ureq_reg_mr among them), response
//           buffer too short, exact or long; objects it creates are
//           destroyed through write() again
//
// Every call must either succeed with a consistent object (capacities at
// least what was asked, keys and handles that query and destroy accept,
// a raw response filled in) or fail with an errno; anything else is a
// FAIL line. Live objects are destroyed at random and all at the end.
// Prints "calls N, ok N, errno E:n ..." and "teardown ok".
//
// Usage: xiw_verbsfuzz [RUNS] [SEED]
#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/xiw-abi.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace {

std::mt19937_64 rng;
std::map<int, int> outcomes;	// errno (0: success) -> count
std::map<std::string, int> ok_by_call;
int calls, failures;

uint64_t rnd(uint64_t n) { return n ? rng() % n : 0; }
bool coin(int n = 2) { return rnd(n) == 0; }

void fail(const std::string &what)
{
	failures++;
	std::printf("FAIL %s\n", what.c_str());
}

// An interesting 32-bit value around @limit.
uint32_t around(uint32_t limit)
{
	switch (rnd(8)) {
	case 0: return 0;
	case 1: return 1;
	case 2: return limit;
	case 3: return limit + 1;
	case 4: return ~0u;
	case 5: return 1u << rnd(32);
	case 6: return uint32_t(rng());
	default: return uint32_t(rnd(limit ? limit : 64) + 1);
	}
}

// Mostly a valid value (1..@limit), sometimes one around the limit: a
// call with several fields must succeed often enough to create objects
// that the later calls (modify, destroy, raw commands on them) work on.
uint32_t val(uint32_t limit)
{
	return coin(4) ? around(limit) : uint32_t(rnd(limit < 64 ? limit : 64) + 1);
}

// A call's outcome: rv 0 is success, otherwise errno must be set.
bool outcome(const char *call, bool ok)
{
	calls++;
	if (ok) {
		outcomes[0]++;
		ok_by_call[call]++;
		return true;
	}
	if (errno <= 0 || errno > 4095)
		fail(std::string(call) + ": failed without an errno (" +
		     std::to_string(errno) + ")");
	outcomes[errno]++;
	return false;
}

struct Raw {
	uint32_t handle;
	int cmd;	// its destroy command
};

struct Fuzz {
	ibv_context *ctx = nullptr;
	ibv_device_attr da{};
	ibv_pd *pd = nullptr;
	ibv_comp_channel *ch = nullptr;
	std::vector<ibv_cq *> cqs;
	std::vector<ibv_qp *> qps;
	std::vector<ibv_srq *> srqs;
	std::vector<ibv_mr *> mrs;
	std::vector<ibv_mw *> mws;
	std::vector<Raw> raws;
	uint8_t *buf = nullptr;
	size_t buf_len = 0;

	ibv_cq *some_cq()
	{
		return cqs.empty() ? nullptr : cqs[rnd(cqs.size())];
	}

	void op_cq()
	{
		int cqe = int(val(uint32_t(da.max_cqe)));
		int vec = coin(4) ? int(rng()) : int(rnd(4));
		errno = 0;
		ibv_cq *cq = ibv_create_cq(ctx, cqe, nullptr, coin() ? ch : nullptr,
					   vec);
		if (!outcome("create_cq", cq))
			return;
		if (cq->cqe < cqe || cqe <= 0 || cqe > da.max_cqe ||
		    vec < 0 || vec >= ctx->num_comp_vectors)
			fail("create_cq cqe " + std::to_string(cqe) + " vector " +
			     std::to_string(vec) + ": got " + std::to_string(cq->cqe));
		cqs.push_back(cq);
	}

	void op_srq()
	{
		ibv_srq_init_attr a{};
		a.attr.max_wr = val(uint32_t(da.max_srq_wr));
		a.attr.max_sge = val(uint32_t(da.max_srq_sge));
		a.attr.srq_limit = coin() ? 0 : around(a.attr.max_wr);
		ibv_srq_init_attr asked = a;
		errno = 0;
		ibv_srq *srq = ibv_create_srq(pd, &a);
		if (!outcome("create_srq", srq))
			return;
		if (a.attr.max_wr < asked.attr.max_wr ||
		    a.attr.max_sge < asked.attr.max_sge ||
		    asked.attr.max_wr > uint32_t(da.max_srq_wr) ||
		    asked.attr.max_sge > uint32_t(da.max_srq_sge))
			fail("create_srq wr " + std::to_string(asked.attr.max_wr) +
			     " sge " + std::to_string(asked.attr.max_sge) + ": got " +
			     std::to_string(a.attr.max_wr) + "/" +
			     std::to_string(a.attr.max_sge));
		srqs.push_back(srq);
	}

	void op_qp()
	{
		if (cqs.empty())
			return op_cq();
		ibv_qp_init_attr a{};
		static const ibv_qp_type types[] = { IBV_QPT_UC, IBV_QPT_UD,
			IBV_QPT_RAW_PACKET, ibv_qp_type(77) };
		a.qp_type = coin(8) ? types[rnd(std::size(types))] : IBV_QPT_RC;
		a.send_cq = some_cq();
		a.recv_cq = coin(4) ? some_cq() : a.send_cq;
		a.cap.max_send_wr = val(uint32_t(da.max_qp_wr));
		a.cap.max_recv_wr = val(uint32_t(da.max_qp_wr));
		a.cap.max_send_sge = coin(8) ? around(uint32_t(da.max_sge)) : uint32_t(rnd(da.max_sge + 1));
		a.cap.max_recv_sge = coin(8) ? around(uint32_t(da.max_sge)) : uint32_t(rnd(da.max_sge + 1));
		a.cap.max_inline_data = coin(8) ? around(XIW_MAX_INLINE) : uint32_t(rnd(XIW_MAX_INLINE + 1));
		a.sq_sig_all = int(rnd(3));
		if (!srqs.empty() && coin(3))
			a.srq = srqs[rnd(srqs.size())];
		ibv_qp_init_attr asked = a;
		errno = 0;
		ibv_qp *qp = ibv_create_qp(pd, &a);
		if (!outcome("create_qp", qp))
			return;
		auto &c = a.cap, &q = asked.cap;
		if (asked.qp_type != IBV_QPT_RC ||
		    c.max_send_wr < q.max_send_wr || c.max_send_sge < q.max_send_sge ||
		    c.max_inline_data < q.max_inline_data ||
		    (!asked.srq && (c.max_recv_wr < q.max_recv_wr ||
				    c.max_recv_sge < q.max_recv_sge)) ||
		    q.max_send_wr > uint32_t(da.max_qp_wr) ||
		    q.max_send_sge > uint32_t(da.max_sge) ||
		    q.max_inline_data > XIW_MAX_INLINE)
			fail("create_qp type " + std::to_string(asked.qp_type) +
			     " caps " + std::to_string(q.max_send_wr) + "/" +
			     std::to_string(q.max_recv_wr) + "/" +
			     std::to_string(q.max_send_sge) + "/" +
			     std::to_string(q.max_recv_sge) + "/" +
			     std::to_string(q.max_inline_data) + " accepted");
		ibv_qp_attr qa{};
		ibv_qp_init_attr qi{};
		if (ibv_query_qp(qp, &qa, IBV_QP_STATE | IBV_QP_CAP, &qi))
			fail("query_qp of a new QP: " + std::string(strerror(errno)));
		// iWARP's Idle: xiw reports INIT (RESET would do as well)
		else if (qa.qp_state > IBV_QPS_INIT ||
			 qa.cap.max_send_wr < q.max_send_wr)
			fail("query_qp of a new QP: state " +
			     std::to_string(qa.qp_state) + " send_wr " +
			     std::to_string(qa.cap.max_send_wr));
		qps.push_back(qp);
	}

	void op_mr()
	{
		// somewhere in, around or far from the buffer
		uint8_t *addr;
		size_t len;
		switch (rnd(6)) {
		case 0: addr = nullptr; break;
		case 1: addr = buf + buf_len - rnd(4096); break;
		case 2: addr = reinterpret_cast<uint8_t *>(uintptr_t(rng())); break;
		default: addr = buf + rnd(buf_len); break;
		}
		switch (rnd(5)) {
		case 0: len = 0; break;
		case 1: len = size_t(rng()); break;
		case 2: len = ~size_t(0) - rnd(4096); break;
		default: len = rnd(buf_len) + 1; break;
		}
		unsigned acc = unsigned(rng()) & (coin(4) ? 0x3ffff : 0xf);
		errno = 0;
		ibv_mr *mr = ibv_reg_mr(pd, addr, len, int(acc));
		if (!outcome("reg_mr", mr))
			return;
		bool inside = addr >= buf && len && len <= buf_len &&
			      size_t(addr - buf) <= buf_len - len;
		if (!inside || mr->length != len || mr->addr != addr ||
		    ((acc & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
		     !(acc & IBV_ACCESS_LOCAL_WRITE)))
			fail("reg_mr " + std::to_string(uintptr_t(addr)) + "+" +
			     std::to_string(len) + " access " + std::to_string(acc) +
			     " accepted");
		mrs.push_back(mr);
	}

	void op_modify()
	{
		if (qps.empty())
			return op_qp();
		ibv_qp *qp = qps[rnd(qps.size())];
		ibv_qp_attr a{};
		a.qp_state = ibv_qp_state(rnd(8));
		a.cur_qp_state = ibv_qp_state(rnd(8));
		a.qp_access_flags = unsigned(rng()) & 0x3f;
		a.max_rd_atomic = uint8_t(rng());
		a.max_dest_rd_atomic = uint8_t(rng());
		a.pkey_index = uint16_t(rng());
		a.port_num = uint8_t(rnd(3));
		a.cap.max_send_wr = around(uint32_t(da.max_qp_wr));
		a.cap.max_recv_wr = around(uint32_t(da.max_qp_wr));
		a.sq_draining = uint8_t(rng());
		a.en_sqd_async_notify = uint8_t(rng());
		a.rq_psn = uint32_t(rng());
		a.sq_psn = uint32_t(rng());
		a.dest_qp_num = uint32_t(rng());
		a.path_mtu = ibv_mtu(rnd(7));
		a.timeout = uint8_t(rng());
		a.retry_cnt = uint8_t(rng());
		a.rnr_retry = uint8_t(rng());
		a.min_rnr_timer = uint8_t(rng());
		int mask = int(rng() & ((1u << 21) - 1));
		if (coin(4))
			mask &= IBV_QP_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_PORT |
				IBV_QP_PKEY_INDEX | IBV_QP_MAX_QP_RD_ATOMIC |
				IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_CUR_STATE;
		else if (!coin(4)) {
			// what a consumer does: a state, maybe access flags
			static const int plausible[] = { IBV_QP_STATE,
				IBV_QP_STATE | IBV_QP_ACCESS_FLAGS,
				IBV_QP_ACCESS_FLAGS,
				IBV_QP_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX | IBV_QP_PORT };
			mask = plausible[rnd(std::size(plausible))];
			a.pkey_index = 0;
			a.port_num = 1;
			a.qp_state = ibv_qp_state(rnd(IBV_QPS_ERR + 1));
		}
		errno = 0;
		int rv = ibv_modify_qp(qp, &a, mask);
		if (rv && !errno)
			errno = rv;
		outcome("modify_qp", !rv);
		ibv_qp_attr qa{};
		ibv_qp_init_attr qi{};
		if (ibv_query_qp(qp, &qa, IBV_QP_STATE, &qi))
			fail("query_qp after modify: " + std::string(strerror(errno)));
		else if (qa.qp_state > IBV_QPS_ERR)
			fail("query_qp after modify: state " +
			     std::to_string(qa.qp_state));
	}

	void op_mw()
	{
		errno = 0;
		ibv_mw *mw = ibv_alloc_mw(pd, coin() ? IBV_MW_TYPE_1 : IBV_MW_TYPE_2);
		if (outcome("alloc_mw", mw))
			mws.push_back(mw);
	}

	// One write() command on the uverbs fd: header, @cmd (with its
	// response pointer set to @resp), @drv bytes of driver data.
	int raw_write(uint32_t command, void *cmd, size_t cmd_len,
		      const std::vector<uint8_t> &drv, void *resp,
		      size_t resp_words)
	{
		std::vector<uint8_t> b(sizeof(ib_uverbs_cmd_hdr) + cmd_len +
				       drv.size());
		ib_uverbs_cmd_hdr h{};
		h.command = command;
		h.in_words = uint16_t(b.size() / 4);
		h.out_words = uint16_t(resp_words);
		std::memcpy(b.data(), &h, sizeof(h));
		std::memcpy(b.data() + sizeof(h), cmd, cmd_len);
		std::memcpy(b.data() + sizeof(h) + cmd_len, drv.data(), drv.size());
		(void)resp;
		errno = 0;
		ssize_t n = write(ctx->cmd_fd, b.data(), b.size());
		if (n == ssize_t(b.size()))
			return 0;
		if (n >= 0) {
			fail("raw write returned " + std::to_string(n) + " of " +
			     std::to_string(b.size()));
			errno = EIO;
		}
		return -1;
	}

	// Driver data: nothing, zeroes, random bytes, xiw's reg_mr request
	// with random fields; a multiple of 4 bytes (write() counts words).
	std::vector<uint8_t> driver_data()
	{
		std::vector<uint8_t> d;
		switch (rnd(4)) {
		case 0:
			break;
		case 1:
			d.assign(4 * rnd(16), 0);
			break;
		case 2:
			d.resize(4 * rnd(64));
			for (auto &c : d)
				c = uint8_t(rng());
			break;
		default: {
			xiw_ureq_reg_mr r{};
			r.digest = uint32_t(coin() ? rnd(4) : rng());
			r.access_ext = uint32_t(coin() ? rnd(4) << 8 : rng());
			d.resize(sizeof(r) + 4 * rnd(3));
			std::memcpy(d.data(), &r, sizeof(r));
			break;
		}
		}
		return d;
	}

	void op_raw()
	{
		// response: base struct plus 0..11 words of driver response
		// (xiw's are 16 bytes for CQ and SRQ, 32 for QP: short, exact
		// and long), and a guard after it that the kernel must not touch
		alignas(8) uint8_t resp[512];
		std::memset(resp, 0xa5, sizeof(resp));
		size_t extra = 4 * rnd(12);
		std::vector<uint8_t> drv = driver_data();

		switch (rnd(4)) {
		case 0: {
			ib_uverbs_reg_mr c{};
			size_t len = rnd(buf_len) + 1;
			c.response = uintptr_t(resp);
			c.start = uintptr_t(buf + rnd(buf_len - len + 1));
			c.length = len;
			c.hca_va = coin(4) ? rng() : c.start;
			c.pd_handle = coin(8) ? uint32_t(rng()) : pd->handle;
			c.access_flags = uint32_t(rng()) & (coin() ? 0xf : 0x3ffff);
			size_t rl = sizeof(ib_uverbs_reg_mr_resp) + extra;
			if (raw_write(IB_USER_VERBS_CMD_REG_MR, &c, sizeof(c), drv,
				      resp, rl / 4)) {
				outcome("raw reg_mr", false);
				break;
			}
			outcome("raw reg_mr", true);
			ib_uverbs_reg_mr_resp r;
			std::memcpy(&r, resp, sizeof(r));
			check_guard(resp, rl, "raw reg_mr");
			raws.push_back({ r.mr_handle, IB_USER_VERBS_CMD_DEREG_MR });
			break;
		}
		case 1: {
			ib_uverbs_create_cq c{};
			c.response = uintptr_t(resp);
			c.user_handle = rng();
			c.cqe = val(uint32_t(da.max_cqe));
			c.comp_vector = coin(4) ? uint32_t(rng()) : uint32_t(rnd(2));
			c.comp_channel = -1;
			size_t rl = sizeof(ib_uverbs_create_cq_resp) + extra;
			if (raw_write(IB_USER_VERBS_CMD_CREATE_CQ, &c, sizeof(c), drv,
				      resp, rl / 4)) {
				outcome("raw create_cq", false);
				break;
			}
			outcome("raw create_cq", true);
			ib_uverbs_create_cq_resp r;
			std::memcpy(&r, resp, sizeof(r));
			if (r.cqe < c.cqe)
				fail("raw create_cq: cqe " + std::to_string(r.cqe) +
				     " < " + std::to_string(c.cqe));
			check_guard(resp, rl, "raw create_cq");
			raws.push_back({ r.cq_handle, IB_USER_VERBS_CMD_DESTROY_CQ });
			break;
		}
		case 2: {
			if (cqs.empty())
				return op_cq();
			ib_uverbs_create_qp c{};
			c.response = uintptr_t(resp);
			c.user_handle = rng();
			c.pd_handle = pd->handle;
			c.send_cq_handle = some_cq()->handle;
			c.recv_cq_handle = coin(8) ? uint32_t(rng()) : some_cq()->handle;
			c.max_send_wr = val(uint32_t(da.max_qp_wr));
			c.max_recv_wr = val(uint32_t(da.max_qp_wr));
			c.max_send_sge = coin(8) ? around(uint32_t(da.max_sge)) : uint32_t(rnd(da.max_sge + 1));
			c.max_recv_sge = coin(8) ? around(uint32_t(da.max_sge)) : uint32_t(rnd(da.max_sge + 1));
			c.max_inline_data = coin(8) ? around(XIW_MAX_INLINE) : uint32_t(rnd(XIW_MAX_INLINE + 1));
			c.sq_sig_all = uint8_t(rnd(3));
			c.qp_type = coin(8) ? uint8_t(rng()) : uint8_t(IB_UVERBS_QPT_RC);
			if (!srqs.empty() && coin(3)) {
				c.is_srq = 1;
				c.srq_handle = srqs[rnd(srqs.size())]->handle;
			}
			size_t rl = sizeof(ib_uverbs_create_qp_resp) + extra;
			if (raw_write(IB_USER_VERBS_CMD_CREATE_QP, &c, sizeof(c), drv,
				      resp, rl / 4)) {
				outcome("raw create_qp", false);
				break;
			}
			outcome("raw create_qp", true);
			ib_uverbs_create_qp_resp r;
			std::memcpy(&r, resp, sizeof(r));
			if (c.qp_type != IB_UVERBS_QPT_RC ||
			    r.max_send_wr < c.max_send_wr ||
			    r.max_inline_data < c.max_inline_data)
				fail("raw create_qp type " + std::to_string(c.qp_type) +
				     " send_wr " + std::to_string(c.max_send_wr) +
				     ": got " + std::to_string(r.max_send_wr));
			check_guard(resp, rl, "raw create_qp");
			raws.push_back({ r.qp_handle, IB_USER_VERBS_CMD_DESTROY_QP });
			break;
		}
		default: {
			ib_uverbs_create_srq c{};
			c.response = uintptr_t(resp);
			c.user_handle = rng();
			c.pd_handle = pd->handle;
			c.max_wr = val(uint32_t(da.max_srq_wr));
			c.max_sge = val(uint32_t(da.max_srq_sge));
			c.srq_limit = coin() ? 0 : uint32_t(rng());
			size_t rl = sizeof(ib_uverbs_create_srq_resp) + extra;
			if (raw_write(IB_USER_VERBS_CMD_CREATE_SRQ, &c, sizeof(c), drv,
				      resp, rl / 4)) {
				outcome("raw create_srq", false);
				break;
			}
			outcome("raw create_srq", true);
			ib_uverbs_create_srq_resp r;
			std::memcpy(&r, resp, sizeof(r));
			if (r.max_wr < c.max_wr || r.max_sge < c.max_sge)
				fail("raw create_srq: wr/sge " + std::to_string(r.max_wr) +
				     "/" + std::to_string(r.max_sge) + " < " +
				     std::to_string(c.max_wr) + "/" +
				     std::to_string(c.max_sge));
			check_guard(resp, rl, "raw create_srq");
			raws.push_back({ r.srq_handle, IB_USER_VERBS_CMD_DESTROY_SRQ });
			break;
		}
		}
	}

	// Nothing written past the response length the command gave.
	void check_guard(const uint8_t *resp, size_t len, const char *call)
	{
		for (size_t i = len; i < 512; i++)
			if (resp[i] != 0xa5) {
				fail(std::string(call) + ": response written at byte " +
				     std::to_string(i) + ", past its " +
				     std::to_string(len) + " bytes");
				return;
			}
	}

	bool raw_destroy(const Raw &r)
	{
		alignas(8) uint8_t resp[64];
		std::vector<uint8_t> none;
		errno = 0;
		switch (r.cmd) {
		case IB_USER_VERBS_CMD_DEREG_MR: {
			ib_uverbs_dereg_mr c{};
			c.mr_handle = r.handle;
			return !raw_write(r.cmd, &c, sizeof(c), none, nullptr, 0);
		}
		case IB_USER_VERBS_CMD_DESTROY_CQ: {
			ib_uverbs_destroy_cq c{};
			c.response = uintptr_t(resp);
			c.cq_handle = r.handle;
			return !raw_write(r.cmd, &c, sizeof(c), none, resp,
					  sizeof(ib_uverbs_destroy_cq_resp) / 4);
		}
		case IB_USER_VERBS_CMD_DESTROY_QP: {
			ib_uverbs_destroy_qp c{};
			c.response = uintptr_t(resp);
			c.qp_handle = r.handle;
			return !raw_write(r.cmd, &c, sizeof(c), none, resp,
					  sizeof(ib_uverbs_destroy_qp_resp) / 4);
		}
		default: {
			ib_uverbs_destroy_srq c{};
			c.response = uintptr_t(resp);
			c.srq_handle = r.handle;
			return !raw_write(r.cmd, &c, sizeof(c), none, resp,
					  sizeof(ib_uverbs_destroy_srq_resp) / 4);
		}
		}
	}

	// Destroy one live object of a random kind (or all with @all).
	void destroy(bool all)
	{
		auto pick = [&](auto &v) { return v.begin() + rnd(v.size()); };
		do {
			if (!raws.empty() && (all || coin(3))) {
				auto it = pick(raws);
				if (!raw_destroy(*it))
					fail("raw destroy of handle " +
					     std::to_string(it->handle) + ": " +
					     strerror(errno));
				raws.erase(it);
			} else if (!mws.empty() && (all || coin(3))) {
				auto it = pick(mws);
				if (ibv_dealloc_mw(*it))
					fail("dealloc_mw");
				mws.erase(it);
			} else if (!mrs.empty() && (all || coin(2))) {
				auto it = pick(mrs);
				if (ibv_dereg_mr(*it))
					fail("dereg_mr");
				mrs.erase(it);
			} else if (!qps.empty() && (all || coin(2))) {
				auto it = pick(qps);
				if (ibv_destroy_qp(*it))
					fail(std::string("destroy_qp: ") + strerror(errno));
				qps.erase(it);
			} else if (!srqs.empty()) {
				// an SRQ still used by a QP is refused (EBUSY)
				auto it = pick(srqs);
				if (!ibv_destroy_srq(*it))
					srqs.erase(it);
				else if (!all && errno != EBUSY)
					fail(std::string("destroy_srq: ") + strerror(errno));
				else if (all)
					fail(std::string("destroy_srq at the end: ") +
					     strerror(errno));
			} else if (!cqs.empty()) {
				auto it = pick(cqs);
				if (!ibv_destroy_cq(*it))
					cqs.erase(it);
				else if (all || errno != EBUSY)
					fail(std::string("destroy_cq: ") + strerror(errno));
			} else {
				break;
			}
		} while (all);
	}
};

} // namespace

int main(int argc, char **argv)
{
	long runs = argc > 1 ? std::strtol(argv[1], nullptr, 0) : 2000;
	unsigned long seed = argc > 2 ? std::strtoul(argv[2], nullptr, 0) : 1;
	rng.seed(seed);

	int n = 0;
	ibv_device **list = ibv_get_device_list(&n);
	ibv_device *dev = nullptr;
	for (int i = 0; list && i < n; i++)
		if (!std::strncmp(ibv_get_device_name(list[i]), "xiw", 3))
			dev = list[i];
	if (!dev) {
		std::fprintf(stderr, "no xiw device\n");
		return 2;
	}
	Fuzz f;
	f.ctx = ibv_open_device(dev);
	if (!f.ctx || ibv_query_device(f.ctx, &f.da))
		return std::fprintf(stderr, "open/query device failed\n"), 2;
	f.pd = ibv_alloc_pd(f.ctx);
	f.ch = ibv_create_comp_channel(f.ctx);
	// the buffer between two inaccessible guard pages: a registration
	// that reaches past it must fail, not pin a neighbouring mapping
	f.buf_len = 1 << 20;
	size_t pg = size_t(sysconf(_SC_PAGESIZE)), map_len = f.buf_len + 2 * pg;
	void *p = mmap(nullptr, map_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);
	if (!f.pd || !f.ch || p == MAP_FAILED ||
	    mprotect(static_cast<uint8_t *>(p) + pg, f.buf_len,
		     PROT_READ | PROT_WRITE))
		return std::fprintf(stderr, "pd/channel/buffer failed\n"), 2;
	f.buf = static_cast<uint8_t *>(p) + pg;
	std::printf("device %s: max_qp_wr %d max_sge %d max_cqe %d max_srq_wr %d, %ld runs, seed %lu\n",
		    ibv_get_device_name(dev), f.da.max_qp_wr, f.da.max_sge,
		    f.da.max_cqe, f.da.max_srq_wr, runs, seed);

	for (long i = 0; i < runs; i++) {
		switch (rnd(10)) {
		case 0: f.op_cq(); break;
		case 1: case 2: f.op_qp(); break;
		case 3: f.op_srq(); break;
		case 4: f.op_mr(); break;
		case 5: f.op_modify(); break;
		case 6: f.op_mw(); break;
		case 7: case 8: f.op_raw(); break;
		default: f.destroy(false); break;
		}
		// bounded live set: pinned memory, device limits
		if (f.qps.size() + f.mrs.size() + f.raws.size() > 64)
			f.destroy(false);
	}
	std::string s;
	for (auto &[e, c] : outcomes)
		s += " " + (e ? std::string(strerrorname_np(e) ?: "?") : std::string("ok")) +
		     ":" + std::to_string(c);
	std::printf("calls %d,%s\n", calls, s.c_str());
	s.clear();
	for (auto &[k, c] : ok_by_call)
		s += " " + k + ":" + std::to_string(c);
	std::printf("succeeded:%s\n", s.c_str());
	f.destroy(true);
	if (ibv_destroy_comp_channel(f.ch) || ibv_dealloc_pd(f.pd) ||
	    ibv_close_device(f.ctx))
		fail("teardown");
	ibv_free_device_list(list);
	munmap(p, map_len);
	if (failures)
		return std::printf("%d failures\n", failures), 1;
	std::printf("teardown ok\n");
	return 0;
}
