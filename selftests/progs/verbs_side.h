// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// verbs_side.h: one end of a test connection - PD, CQ, RC QP on an
// rdma_cm id, one registered buffer - with the posting and polling helpers
// the test programs share (xiw_lifecycle, xiw_zcreuse, xiw_dv,
// xiw_ringfuzz, xiw_wiregen, xiw_dbbench). Pairs with
// cm_pair.h, which connects two such ends inside one process.
#pragma once

#include "cm_pair.h"

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <thread>
#include <vector>

namespace cm_pair {

struct SideOpts {
	uint32_t depth = 16;		// send and receive queue depth
	uint32_t recv_depth = 0;	// receive queue depth if not depth
	uint32_t sge = 1;		// SGEs per send and receive WR
	uint32_t cq_entries = 0;	// 0: enough for both queues
	size_t mem_bytes = 8192;	// the registered buffer
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		     IBV_ACCESS_REMOTE_READ;
	uint64_t send_ops_flags = 0;	// non-zero: an ibv_qp_ex QP (qpx)
	ibv_comp_channel *channel = nullptr;	// the CQ's, if any
	// Register this memory (mem_bytes long) instead of the vector
	// (which stays empty), through @reg_mr if set (e.g. xiwdv_reg_mr
	// for access rights plain ibv_reg_mr cannot express).
	void *ext_mem = nullptr;
	std::function<ibv_mr *(ibv_pd *, void *, size_t, int)> reg_mr;
};

// @T: the element type the test reads its buffer as.
template <typename T = uint8_t> struct SideT {
	rdma_cm_id *id = nullptr;
	ibv_pd *pd = nullptr;
	ibv_cq *cq = nullptr;
	ibv_qp_ex *qpx = nullptr;
	ibv_mr *mr = nullptr;
	std::vector<T> mem;

	void setup(rdma_cm_id *cid, const SideOpts &o = {})
	{
		uint32_t rdepth = o.recv_depth ? o.recv_depth : o.depth;

		id = cid;
		if (!o.ext_mem)
			mem.assign((o.mem_bytes + sizeof(T) - 1) / sizeof(T), T{});
		pd = ibv_alloc_pd(id->verbs);
		cq = ibv_create_cq(id->verbs,
				   o.cq_entries ? o.cq_entries :
						  o.depth + rdepth + 16,
				   nullptr, o.channel, 0);
		if (!pd || !cq)
			die("pd/cq");
		ibv_qp_init_attr_ex a{};
		a.qp_type = IBV_QPT_RC;
		a.send_cq = cq;
		a.recv_cq = cq;
		a.cap.max_send_wr = o.depth;
		a.cap.max_recv_wr = rdepth;
		a.cap.max_send_sge = o.sge;
		a.cap.max_recv_sge = o.sge;
		a.pd = pd;
		a.comp_mask = IBV_QP_INIT_ATTR_PD;
		if (o.send_ops_flags) {
			a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
			a.send_ops_flags = o.send_ops_flags;
		}
		if (rdma_create_qp_ex(id, &a))
			die("rdma_create_qp_ex");
		if (o.send_ops_flags) {
			qpx = ibv_qp_to_qp_ex(id->qp);
			if (!qpx)
				die("ibv_qp_to_qp_ex");
		}
		void *buf = o.ext_mem ? o.ext_mem : (void *)mem.data();
		size_t len = o.ext_mem ? o.mem_bytes : mem.size() * sizeof(T);

		mr = o.reg_mr ? o.reg_mr(pd, buf, len, o.access) :
				ibv_reg_mr(pd, buf, len, o.access);
		if (!mr)
			die("ibv_reg_mr");
	}

	void teardown()
	{
		rdma_destroy_qp(id);
		ibv_dereg_mr(mr);
		ibv_destroy_cq(cq);
		ibv_dealloc_pd(pd);
		rdma_destroy_id(id);
	}

	// One send-queue WR on a single SGE of the buffer; ibv_post_send's
	// result.
	int post(ibv_wr_opcode op, uint64_t wr_id, const void *buf,
		 uint32_t len, bool signaled = true, uint64_t raddr = 0,
		 uint32_t rkey = 0)
	{
		ibv_sge sge{ (uintptr_t)buf, len, mr->lkey };
		ibv_send_wr wr{}, *bad;

		wr.wr_id = wr_id;
		wr.opcode = op;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.send_flags = signaled ? IBV_SEND_SIGNALED : 0;
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
		return ibv_post_send(id->qp, &wr, &bad);
	}

	void post_recv(uint64_t wr_id, void *buf, uint32_t len)
	{
		ibv_sge sge{ (uintptr_t)buf, len, mr->lkey };
		ibv_recv_wr wr{}, *bad;

		wr.wr_id = wr_id;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		if (ibv_post_recv(id->qp, &wr, &bad))
			die("ibv_post_recv");
	}

	// Up to @n completions within @ms, whatever their status.
	std::vector<ibv_wc> poll(size_t n, int ms)
	{
		std::vector<ibv_wc> out;
		auto end = std::chrono::steady_clock::now() +
			   std::chrono::milliseconds(ms);

		while (out.size() < n && std::chrono::steady_clock::now() < end) {
			ibv_wc wc[16];
			int k = ibv_poll_cq(cq, n - out.size() < 16 ?
					    int(n - out.size()) : 16, wc);

			if (k < 0)
				die("ibv_poll_cq");
			out.insert(out.end(), wc, wc + k);
			if (!k)
				std::this_thread::sleep_for(
					std::chrono::microseconds(100));
		}
		return out;
	}

	// Exactly one successful completion within @ms, else exit(2).
	ibv_wc poll_ok(int ms = 60000)
	{
		auto wc = poll(1, ms);

		if (wc.empty()) {
			std::fprintf(stderr, "no completion in %d ms\n", ms);
			std::exit(2);
		}
		if (wc[0].status != IBV_WC_SUCCESS) {
			std::fprintf(stderr, "wr_id %" PRIu64 ": %s\n",
				     wc[0].wr_id, ibv_wc_status_str(wc[0].status));
			std::exit(2);
		}
		return wc[0];
	}
};

using Side = SideT<>;

} // namespace cm_pair
