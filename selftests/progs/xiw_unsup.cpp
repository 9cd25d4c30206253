// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// xiw_unsup: post an operation that the peer's iWARP stack may not have
// (RFC 7306 atomics, Immediate Data, the commit draft's Flush, Atomic
// Write and Verify) and check that it fails cleanly.
//
//   xiw_unsup ADDR PORT SRC OP [--expect ok|fail]
//
// Connects from SRC to an xiw_target at ADDR:PORT (its accept private data,
// target_info.h, says where its read/write region is), proves the
// connection with a signaled 64-byte RDMA Write, then posts OP:
//
//   write      another RDMA Write (a control: must succeed)
//   fadd       FetchAdd on the region (IBV_WR_ATOMIC_FETCH_AND_ADD)
//   cswap      CmpSwap on the region (IBV_WR_ATOMIC_CMP_AND_SWP)
//   write-imm  RDMA Write with Immediate (ibv_wr_rdma_write_imm)
//   imm        Immediate Data alone (xiwdv_wr_imm64)
//   flush      RDMA Flush, global, 64 bytes (xiwdv_wr_flush)
//   awrite     Atomic Write (ibv_wr_atomic_write)
//   verify     RDMA Verify of 64 bytes, digest returned (xiwdv_wr_verify)
//
// followed by a signaled RDMA Write behind it. With --expect fail (the
// default for everything but "write") the QP must end in ERROR with an
// asynchronous event and the connection must end (DISCONNECTED), all
// within 20 s, and an atomic's completion must carry an error status (a
// Write with Immediate or Immediate Data has no response: it completes
// when sent, before the peer's Terminate can arrive). Output: one line per finding,
// "WC op=... status=...", "ASYNC ...", "QPSTATE ...", "EVENT ...", then
// "ok" or "FAIL why". Exit 0 on ok, 1 on FAIL, 2 on a setup error.
#include <infiniband/xiwdv.h>
#include <rdma/rdma_cma.h>

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "target_info.h"

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void die(const char *what)
{
	std::perror(what);
	std::exit(2);
}

[[noreturn]] void failed(const std::string &why)
{
	std::printf("FAIL %s\n", why.c_str());
	std::exit(1);
}

rdma_cm_event_type next_event(rdma_event_channel *ch, int timeout_ms,
			      std::vector<uint8_t> *pdata = nullptr)
{
	pollfd pfd{ ch->fd, POLLIN, 0 };
	rdma_cm_event *ev;

	if (poll(&pfd, 1, timeout_ms) <= 0)
		return (rdma_cm_event_type)-1;
	if (rdma_get_cm_event(ch, &ev))
		die("rdma_get_cm_event");
	rdma_cm_event_type t = ev->event;
	std::printf("EVENT %s status=%d\n", rdma_event_str(t), ev->status);
	if (pdata && ev->param.conn.private_data)
		pdata->assign((const uint8_t *)ev->param.conn.private_data,
			      (const uint8_t *)ev->param.conn.private_data +
				      ev->param.conn.private_data_len);
	rdma_ack_cm_event(ev);
	return t;
}

const char *opname(ibv_wc_opcode op)
{
	switch (op) {
	case IBV_WC_RDMA_WRITE: return "RDMA_WRITE";
	case IBV_WC_COMP_SWAP: return "COMP_SWAP";
	case IBV_WC_FETCH_ADD: return "FETCH_ADD";
	case IBV_WC_SEND: return "SEND";
	default: return "OTHER";
	}
}

} // namespace

int main(int argc, char **argv)
{
	if (argc < 5) {
		std::fprintf(stderr, "usage: xiw_unsup ADDR PORT SRC "
			     "write|fadd|cswap|write-imm|imm|flush|awrite|verify "
			     "[--expect ok|fail]\n");
		return 2;
	}
	const std::string op = argv[4];
	bool expect_ok = op == "write";
	if (argc == 7 && std::string(argv[5]) == "--expect")
		expect_ok = std::string(argv[6]) == "ok";
	// operations that wait for a response: they must fail at a peer
	// without them
	const bool has_resp = op == "fadd" || op == "cswap" ||
			      op == "flush" || op == "awrite" || op == "verify";
	if (op != "write" && op != "write-imm" && op != "imm" && !has_resp) {
		std::fprintf(stderr, "xiw_unsup: unknown op %s\n", op.c_str());
		return 2;
	}
	setvbuf(stdout, nullptr, _IOLBF, 0);

	rdma_event_channel *ch = rdma_create_event_channel();
	rdma_cm_id *id;
	addrinfo *dst, *src, hints{};

	hints.ai_socktype = SOCK_STREAM;
	if (!ch || rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP))
		die("rdma_create_id");
	if (getaddrinfo(argv[1], argv[2], &hints, &dst) ||
	    getaddrinfo(argv[3], nullptr, &hints, &src))
		die("getaddrinfo");
	if (rdma_resolve_addr(id, src->ai_addr, dst->ai_addr, 5000) ||
	    next_event(ch, 10000) != RDMA_CM_EVENT_ADDR_RESOLVED)
		die("rdma_resolve_addr");
	if (rdma_resolve_route(id, 5000) ||
	    next_event(ch, 10000) != RDMA_CM_EVENT_ROUTE_RESOLVED)
		die("rdma_resolve_route");
	freeaddrinfo(dst);
	freeaddrinfo(src);

	ibv_pd *pd = ibv_alloc_pd(id->verbs);
	ibv_cq *cq = ibv_create_cq(id->verbs, 32, nullptr, nullptr, 0);
	if (!pd || !cq)
		die("pd/cq");
	ibv_qp_init_attr_ex a{};
	a.qp_type = IBV_QPT_RC;
	a.send_cq = cq;
	a.recv_cq = cq;
	a.cap.max_send_wr = 16;
	a.cap.max_recv_wr = 4;
	a.cap.max_send_sge = 1;
	a.cap.max_recv_sge = 1;
	a.pd = pd;
	a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	a.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE |
			   IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
			   IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
			   IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |
			   IBV_QP_EX_WITH_ATOMIC_WRITE;
	if (rdma_create_qp_ex(id, &a))
		die("rdma_create_qp_ex");
	ibv_qp_ex *qpx = ibv_qp_to_qp_ex(id->qp);
	static uint64_t buf[512];
	ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	if (!qpx || !mr)
		die("qp_ex/mr");
	if ((op == "imm" || op == "flush" || op == "verify") &&
	    !xiwdv_is_xiw_context(id->verbs))
		failed(op + " needs an xiw device on this side");

	rdma_conn_param cp{};
	cp.initiator_depth = 4;
	cp.responder_resources = 4;
	std::vector<uint8_t> pd_in;
	if (rdma_connect(id, &cp) ||
	    next_event(ch, 20000, &pd_in) != RDMA_CM_EVENT_ESTABLISHED)
		failed("not connected");
	target_info::Info ti;
	if (!target_info::decode(pd_in.data(), pd_in.size(), &ti))
		failed("no xiw_target private data");

	int async_fl = fcntl(id->verbs->async_fd, F_GETFL);
	fcntl(id->verbs->async_fd, F_SETFL, async_fl | O_NONBLOCK);

	auto post = [&](const std::string &what, uint64_t wr_id) {
		ibv_wr_start(qpx);
		qpx->wr_id = wr_id;
		qpx->wr_flags = IBV_SEND_SIGNALED;
		if (what == "write") {
			ibv_wr_rdma_write(qpx, ti.rw_stag, ti.rw_addr);
			ibv_wr_set_sge(qpx, mr->lkey, (uintptr_t)buf, 64);
		} else if (what == "fadd") {
			ibv_wr_atomic_fetch_add(qpx, ti.rw_stag, ti.rw_addr + 64, 1);
			ibv_wr_set_sge(qpx, mr->lkey, (uintptr_t)&buf[8], 8);
		} else if (what == "cswap") {
			ibv_wr_atomic_cmp_swp(qpx, ti.rw_stag, ti.rw_addr + 64, 0, 7);
			ibv_wr_set_sge(qpx, mr->lkey, (uintptr_t)&buf[8], 8);
		} else if (what == "write-imm") {
			ibv_wr_rdma_write_imm(qpx, ti.rw_stag, ti.rw_addr + 128,
					      htobe32(0x1234));
			ibv_wr_set_sge(qpx, mr->lkey, (uintptr_t)buf, 32);
		} else if (what == "flush") {
			xiwdv_wr_flush(qpx, ti.rw_stag, ti.rw_addr, 64,
				       XIWDV_FLUSH_GLOBAL, XIWDV_FLUSH_RANGE);
		} else if (what == "awrite") {
			static const uint64_t v = 0x0123456789abcdefULL;

			ibv_wr_atomic_write(qpx, ti.rw_stag, ti.rw_addr + 64, &v);
		} else if (what == "verify") {
			xiwdv_wr_verify(qpx, ti.rw_stag, ti.rw_addr, 64, nullptr,
					0);
			ibv_wr_set_sge(qpx, mr->lkey, (uintptr_t)&buf[16], 32);
		} else {
			xiwdv_wr_imm64(qpx, 0x0123456789abcdefULL);
		}
		if (ibv_wr_complete(qpx))
			failed("post " + what);
	};

	for (int i = 0; i < 64; i++)
		buf[i] = 0x5858585858585858ULL + i;
	post("write", 1);
	post(op, 2);
	post("write", 3);

	// Collect the three completions, async events and the end of the
	// connection; nothing may take longer than 20 s.
	auto deadline = Clock::now() + std::chrono::seconds(20);
	int wcs = 0, first_err = 0;
	ibv_wc_status status_op = IBV_WC_GENERAL_ERR;
	bool disconnected = false, async = false;

	while (Clock::now() < deadline) {
		ibv_wc wc;
		int n = ibv_poll_cq(cq, 1, &wc);

		if (n < 0)
			failed("ibv_poll_cq");
		if (n == 1) {
			wcs++;
			std::printf("WC wr_id=%llu op=%s status=%s\n",
				    (unsigned long long)wc.wr_id,
				    wc.status ? "-" : opname(wc.opcode),
				    ibv_wc_status_str(wc.status));
			if (wc.wr_id == 2)
				status_op = wc.status;
			if (wc.status && !first_err)
				first_err = (int)wc.wr_id;
			if (wc.wr_id == 1 && wc.status)
				failed("the first RDMA Write failed: the connection does not work");
			continue;
		}
		ibv_async_event ae;
		if (!ibv_get_async_event(id->verbs, &ae)) {
			std::printf("ASYNC %s\n", ibv_event_type_str(ae.event_type));
			ibv_ack_async_event(&ae);
			async = true;
		}
		// The QP's asynchronous event and rdma_cm's DISCONNECTED come
		// through two channels in no set order (beside a CPU hog the
		// event came after it): a failing op waits for both.
		if (wcs == 3 && (expect_ok || (disconnected && async)))
			break;
		if (!disconnected) {
			rdma_cm_event_type t = next_event(ch, 10);

			if (t == RDMA_CM_EVENT_DISCONNECTED)
				disconnected = true;
		} else if (wcs == 3) {
			// only the asynchronous event is still awaited: wait
			// on its fd (non-blocking, see above) instead of spinning
			pollfd pfd{ id->verbs->async_fd, POLLIN, 0 };

			if (poll(&pfd, 1, 100) < 0 && errno != EINTR)
				die("poll(async_fd)");
		} else {
			// completions still due: the CQ has no channel, poll it
			// again soon
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
		}
	}
	if (wcs != 3)
		failed("only " + std::to_string(wcs) + " of 3 completions in 20 s");
	ibv_qp_attr qa;
	ibv_qp_init_attr qia;
	if (ibv_query_qp(id->qp, &qa, IBV_QP_STATE, &qia))
		die("ibv_query_qp");
	std::printf("QPSTATE %s\n", qa.qp_state == IBV_QPS_ERR ? "ERR" :
		    qa.qp_state == IBV_QPS_RTS ? "RTS" : "other");
	if (expect_ok) {
		if (status_op != IBV_WC_SUCCESS || first_err)
			failed("the operation failed");
		if (op == "verify") {
			const uint8_t *d = (const uint8_t *)&buf[16];

			// the peer's crc32c of the 64 bytes Written first
			std::printf("DIGEST %02x%02x%02x%02x\n", d[0], d[1],
				    d[2], d[3]);
		}
		rdma_disconnect(id);
		if (next_event(ch, 10000) != RDMA_CM_EVENT_DISCONNECTED)
			failed("no DISCONNECTED after rdma_disconnect");
	} else {
		// An atomic waits for its Response, so it must fail. A Write
		// with Immediate or Immediate Data, like every operation
		// without a response, completes once it is handed to TCP:
		// the peer's Terminate can only end the QP afterwards.
		if (status_op == IBV_WC_SUCCESS && has_resp)
			failed("the peer completed " + op + ": it was not expected to have it");
		if (qa.qp_state != IBV_QPS_ERR)
			failed("QP not in ERROR after the failed operation");
		if (!disconnected)
			failed("the connection did not end");
		if (!async)
			failed("no asynchronous event for the QP");
	}
	rdma_destroy_qp(id);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	std::printf("ok\n");
	return 0;
}
