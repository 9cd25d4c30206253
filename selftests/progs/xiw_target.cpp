// SPDX-License-Identifier: GPL-2.0
//
// xiw_target: an rdma_cm server that exposes known memory to a test peer.
//
// For every connection it registers two 4 KiB regions, one remotely
// readable and writable ("rw") and one remotely readable only ("ro", filled
// with 0xa5), posts receives, and accepts with private data that tells the
// peer where they are (struct TargetInfo, big-endian). It then reports, one
// line each, every completion and connection event, and at disconnect the
// state of both regions, so a test can check what a (possibly hostile) peer
// managed to do:
//
//   CONNECTED id=1
//   CQE id=1 op=RECV status=0 len=8 flags=0
//   EVENT id=1 DISCONNECTED
//   QPSTATE id=1 state=ERR
//   MEM id=1 rw_fnv=... ro_intact=1
//
// and any asynchronous event of the device context ("ASYNC id=1 ...").
//
// With --dereg-on FILE, once FILE exists it deregisters every live
// connection's RW region while the QP is still connected and reports how
// long that took: "DEREG id=1 ms=... rc=0".
//
// Usage: xiw_target --bind ADDR [--port 7174] [--conns N] [--timeout SEC]
//                   [--ird N] [--dereg-on FILE] [--disconnect-on FILE] [--send-out]
//                   [--stop-on FILE] [--priv] [--quiet] [--atomic]
//                   [--window 1|2 FILE] [--unbind-on FILE]
// With --ird N, connections are accepted with an IRD of N (default 4:
// Read and atomic requests the peer may have outstanding).
// With --send-out, every connection posts 8 unsignaled 16 KiB Sends (its
// receive buffer, whatever it holds) once established, for peers that do
// not read: "SENDING id=1".
// With --disconnect-on FILE, once FILE exists it disconnects (gracefully)
// every live connection: "DISCONNECTING id=1".
// With --stop-on FILE (and --conns 0: no limit), once FILE exists it stops
// accepting, destroys the connections still live (reporting them like a
// disconnect) and ends with "DONE n".
// With --atomic, the RW region also takes remote atomics
// (IBV_ACCESS_REMOTE_ATOMIC).
// With --priv, every connection also registers a third 4 KiB region with
// local rights only (filled with 0x5a, its STag never told to the peer)
// and reports at disconnect whether it is intact: "PRIV id=1 intact=1".
// With --big PATH:MIB, the first MIB MiB of the device-dax PATH (an
// NVDIMM namespace) are registered once, before the first connection,
// with the remote rights and both Flush rights (persistent, global), in
// a PD every connection then shares, and told on stdout only: "BIG
// stag=0x... addr=0x... len=N ms=T" (a raw peer aims at it with
// xiw_badpeer --foreign). --dereg-on then deregisters it too, timed:
// "DEREG big ms=... rc=0".
// With --window TYPE FILE, every connection also registers a region of
// target_info::kWindow bytes of 0xa5 and, once connected, binds a memory
// window of TYPE (1 or 2) over all of it with remote read and write,
// writes "STAG:ADDR" of the window to FILE and prints "WINDOW id=1 type=2
// status=0 stag=0x... addr=0x...". A receive that reports the window's
// STag invalidated (Send with Invalidate) makes the target overwrite the
// region with 0xee at once, as a consumer reusing its memory would:
// "MARKED id=1 after=INVALIDATED". With --unbind-on FILE, once FILE
// exists, a type 1 window is unbound (a bind of length 0): "UNBOUND id=1
// status=0", then the same overwrite ("MARKED id=1 after=UNBIND").
// At disconnect the region's bytes are counted: "WIN id=1 a5=N ee=N
// other=N".
// With --quiet, completions (CQE lines) are counted, not printed, and the
// counts by status come at the end: "CQES status=0:n status=5:n ...".
#include <arpa/inet.h>
#include <endian.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/mman.h>
#include <unistd.h>
#include <rdma/rdma_cma.h>

#include "target_info.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace {

constexpr uint32_t kRegion = target_info::kRegion;
constexpr int kRecvs = 16;
constexpr size_t kRecvSize = 4096;

[[noreturn]] void die(const char *what)
{
	std::fprintf(stderr, "xiw_target: %s: %s\n", what, std::strerror(errno));
	std::exit(2);
}

uint64_t fnv1a(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return h;
}

const char *wc_op(ibv_wc_opcode op)
{
	switch (op) {
	case IBV_WC_RECV: return "RECV";
	case IBV_WC_RECV_RDMA_WITH_IMM: return "RECV_RDMA_WITH_IMM";
	case IBV_WC_SEND: return "SEND";
	case IBV_WC_RDMA_WRITE: return "RDMA_WRITE";
	case IBV_WC_RDMA_READ: return "RDMA_READ";
	default: return "OTHER";
	}
}

const char *async_name(ibv_event_type t)
{
	switch (t) {
	case IBV_EVENT_QP_FATAL: return "QP_FATAL";
	case IBV_EVENT_QP_REQ_ERR: return "QP_REQ_ERR";
	case IBV_EVENT_QP_ACCESS_ERR: return "QP_ACCESS_ERR";
	case IBV_EVENT_COMM_EST: return "COMM_EST";
	case IBV_EVENT_QP_LAST_WQE_REACHED: return "QP_LAST_WQE_REACHED";
	default: return ibv_event_type_str(t);
	}
}

struct Conn {
	unsigned id = 0;
	rdma_cm_id *cm = nullptr;
	ibv_pd *pd = nullptr;
	ibv_cq *cq = nullptr;
	std::vector<uint8_t> rw = std::vector<uint8_t>(kRegion, 0);
	std::vector<uint8_t> ro = std::vector<uint8_t>(kRegion, 0xa5);
	std::vector<uint8_t> rx = std::vector<uint8_t>(kRecvs * kRecvSize, 0);
	std::vector<uint8_t> priv;
	ibv_mr *rw_mr = nullptr, *ro_mr = nullptr, *rx_mr = nullptr;
	ibv_mr *priv_mr = nullptr;
	// --window: a region of kWindow bytes of 0xa5 and a memory window
	// over all of it (type 1 or 2), bound once connected
	int win_type = 0;
	uint8_t *win = nullptr;
	ibv_mr *win_mr = nullptr;
	ibv_mw *mw = nullptr;
	uint32_t win_rkey = 0;
	bool connected = false;
	bool own_pd = true;	// false: the PD of --big, shared

	~Conn()
	{
		if (cm && cm->qp)
			rdma_destroy_qp(cm);
		if (mw)
			ibv_dealloc_mw(mw);
		if (win_mr)
			ibv_dereg_mr(win_mr);
		if (win)
			munmap(win, target_info::kWindow);
		for (ibv_mr *mr : {rw_mr, ro_mr, rx_mr, priv_mr})
			if (mr)
				ibv_dereg_mr(mr);
		if (cq)
			ibv_destroy_cq(cq);
		if (pd && own_pd)
			ibv_dealloc_pd(pd);
		if (cm)
			rdma_destroy_id(cm);
	}

	void report_mem() const
	{
		bool ro_ok = std::all_of(ro.begin(), ro.end(),
					 [](uint8_t b) { return b == 0xa5; });

		std::printf("MEM id=%u rw_fnv=%016llx ro_intact=%d\n", id,
			    (unsigned long long)fnv1a(rw.data(), rw.size()),
			    ro_ok ? 1 : 0);
		if (win) {
			size_t a5 = std::count(win, win + target_info::kWindow, 0xa5);
			size_t ee = std::count(win, win + target_info::kWindow, 0xee);

			std::printf("WIN id=%u a5=%zu ee=%zu other=%zu\n", id, a5,
				    ee, target_info::kWindow - a5 - ee);
		}
		if (!priv.empty())
			std::printf("PRIV id=%u intact=%d\n", id,
				    std::all_of(priv.begin(), priv.end(),
						[](uint8_t b) { return b == 0x5a; }));
	}

	void report_qp_state() const
	{
		static const char *const names[] = {
			"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR",
		};
		ibv_qp_attr a = {};
		ibv_qp_init_attr ia = {};

		if (!cm || !cm->qp ||
		    ibv_query_qp(cm->qp, &a, IBV_QP_STATE, &ia)) {
			std::printf("QPSTATE id=%u state=UNKNOWN\n", id);
			return;
		}
		std::printf("QPSTATE id=%u state=%s\n", id,
			    a.qp_state <= IBV_QPS_ERR ? names[a.qp_state] : "?");
	}

	void drain_cq()
	{
		ibv_wc wc[16];
		int n;

		while ((n = ibv_poll_cq(cq, 16, wc)) > 0)
			for (int i = 0; i < n; i++) {
				if (quiet) {
					cqe_counts[wc[i].status]++;
					continue;
				}
				std::printf("CQE id=%u op=%s status=%d len=%u flags=%u\n",
					    id, wc_op(wc[i].opcode), wc[i].status,
					    wc[i].byte_len, wc[i].wc_flags);
				// the receive that says the window is gone:
				// its memory is the consumer's again
				if (win && (wc[i].wc_flags & IBV_WC_WITH_INV) &&
				    wc[i].invalidated_rkey == win_rkey)
					mark_window("INVALIDATED");
			}
	}

	// The window no longer grants anything: reuse its memory at once.
	void mark_window(const char *why)
	{
		std::memset(win, 0xee, target_info::kWindow);
		std::printf("MARKED id=%u after=%s\n", id, why);
		std::fflush(stdout);
	}

	// Post a bind of the window (@len 0: unbind a type 1 window) and
	// wait for its completion; its status, or -1.
	int bind_window(uint64_t len)
	{
		ibv_mw_bind_info bi = {};
		ibv_wc wc;
		int n = 0;

		bi.mr = win_mr;
		bi.addr = (uintptr_t)win;
		bi.length = len;
		bi.mw_access_flags =
			len ? IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE : 0;
		if (win_type == 1) {
			// ibv_bind_mw() moves mw->rkey itself
			ibv_mw_bind b = {};

			b.wr_id = 0xb1d;
			b.send_flags = IBV_SEND_SIGNALED;
			b.bind_info = bi;
			if (ibv_bind_mw(cm->qp, mw, &b))
				return -1;
		} else {
			ibv_send_wr wr = {}, *bad;

			wr.wr_id = 0xb1d;
			wr.opcode = IBV_WR_BIND_MW;
			wr.send_flags = IBV_SEND_SIGNALED;
			wr.bind_mw.mw = mw;
			wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
			wr.bind_mw.bind_info = bi;
			if (ibv_post_send(cm->qp, &wr, &bad))
				return -1;
			mw->rkey = wr.bind_mw.rkey;
		}
		for (int tries = 0; tries < 5000 && n == 0; tries++) {
			n = ibv_poll_cq(cq, 1, &wc);
			if (n == 0)
				usleep(1000);
		}
		if (n != 1 || wc.wr_id != 0xb1d)
			return -1;
		win_rkey = mw->rkey;
		return wc.status;
	}

	// Connected: bind the window over its region, tell the peer where
	// it is through @file ("STAG:ADDR").
	void window_up(const std::string &file)
	{
		int st = bind_window(target_info::kWindow);
		FILE *f;

		std::printf("WINDOW id=%u type=%d status=%d stag=0x%x addr=0x%llx\n",
			    id, win_type, st, win_rkey,
			    (unsigned long long)(uintptr_t)win);
		std::string tmp = file + ".tmp";
		f = std::fopen(tmp.c_str(), "w");
		if (!f)
			return;
		std::fprintf(f, "0x%x:0x%llx\n", win_rkey,
			     (unsigned long long)(uintptr_t)win);
		std::fclose(f);
		rename(tmp.c_str(), file.c_str());
	}

	static inline bool quiet;
	static inline bool atomic_rw;
	static inline uint8_t ird = 4;
	static inline std::map<int, unsigned long> cqe_counts;

	int setup(rdma_cm_id *id_, bool with_priv, ibv_pd *shared_pd,
		  int window)
	{
		cm = id_;
		own_pd = !shared_pd;
		pd = shared_pd ? shared_pd : ibv_alloc_pd(cm->verbs);
		cq = pd ? ibv_create_cq(cm->verbs, 64, nullptr, nullptr, 0) : nullptr;
		if (!cq)
			return -1;
		int rw_acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			     IBV_ACCESS_REMOTE_READ |
			     (atomic_rw ? IBV_ACCESS_REMOTE_ATOMIC : 0);
		// the global Flush right (IBV_ACCESS_FLUSH_GLOBAL, 1 << 8)
		// where the device has it (xiw); siw refuses the flag
		rw_mr = ibv_reg_mr(pd, rw.data(), rw.size(), rw_acc | (1 << 8));
		if (!rw_mr)
			rw_mr = ibv_reg_mr(pd, rw.data(), rw.size(), rw_acc);
		ro_mr = ibv_reg_mr(pd, ro.data(), ro.size(), IBV_ACCESS_REMOTE_READ);
		rx_mr = ibv_reg_mr(pd, rx.data(), rx.size(), IBV_ACCESS_LOCAL_WRITE);
		if (!rw_mr || !ro_mr || !rx_mr)
			return -1;
		if (window) {
			win_type = window;
			win = (uint8_t *)mmap(nullptr, target_info::kWindow,
					      PROT_READ | PROT_WRITE,
					      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (win == MAP_FAILED) {
				win = nullptr;
				return -1;
			}
			std::memset(win, 0xa5, target_info::kWindow);
			win_mr = ibv_reg_mr(pd, win, target_info::kWindow,
					    rw_acc | IBV_ACCESS_MW_BIND);
			mw = win_mr ? ibv_alloc_mw(pd, window == 1 ?
						   IBV_MW_TYPE_1 :
						   IBV_MW_TYPE_2) : nullptr;
			if (!mw)
				return -1;
		}
		if (with_priv) {
			priv.assign(kRegion, 0x5a);
			priv_mr = ibv_reg_mr(pd, priv.data(), priv.size(),
					     IBV_ACCESS_LOCAL_WRITE);
			if (!priv_mr)
				return -1;
		}

		ibv_qp_init_attr qa = {};
		qa.send_cq = cq;
		qa.recv_cq = cq;
		qa.qp_type = IBV_QPT_RC;
		qa.cap.max_send_wr = 16;
		qa.cap.max_recv_wr = kRecvs;
		qa.cap.max_send_sge = 1;
		qa.cap.max_recv_sge = 1;
		if (rdma_create_qp(cm, pd, &qa))
			return -1;
		for (int i = 0; i < kRecvs; i++) {
			ibv_sge sge = { (uintptr_t)&rx[i * kRecvSize], kRecvSize,
					rx_mr->lkey };
			ibv_recv_wr wr = {}, *bad;

			wr.wr_id = i;
			wr.sg_list = &sge;
			wr.num_sge = 1;
			if (ibv_post_recv(cm->qp, &wr, &bad))
				return -1;
		}
		return 0;
	}

	int accept()
	{
		target_info::Wire ti = target_info::encode({
			id, (uintptr_t)rw.data(), rw_mr->rkey, kRegion,
			(uintptr_t)ro.data(), ro_mr->rkey, kRegion,
		});
		rdma_conn_param p = {};

		p.private_data = &ti;
		p.private_data_len = sizeof(ti);
		p.responder_resources = ird;
		p.initiator_depth = 4;
		return rdma_accept(cm, &p);
	}
};

} // namespace

int main(int argc, char **argv)
{
	std::string bind_addr, port = "7174";
	unsigned conns = 1, timeout = 60;
	std::string dereg_on, disc_on;
	bool dereg_done = false, disc_done = false, send_out = false;
	bool with_priv = false, stopping = false;
	std::string stop_on, big;
	std::string window_file, unbind_on;
	int window = 0;
	bool unbind_done = false;

	for (int i = 1; i < argc; i++) {
		std::string a = argv[i];
		auto val = [&]() -> std::string {
			if (i + 1 >= argc) {
				std::fprintf(stderr, "%s needs a value\n", a.c_str());
				std::exit(2);
			}
			return argv[++i];
		};
		if (a == "--bind")
			bind_addr = val();
		else if (a == "--port")
			port = val();
		else if (a == "--conns")
			conns = std::stoul(val());
		else if (a == "--timeout")
			timeout = std::stoul(val());
		else if (a == "--ird")
			Conn::ird = static_cast<uint8_t>(std::stoul(val()));
		else if (a == "--dereg-on")
			dereg_on = val();
		else if (a == "--disconnect-on")
			disc_on = val();
		else if (a == "--send-out")
			send_out = true;
		else if (a == "--stop-on")
			stop_on = val();
		else if (a == "--priv")
			with_priv = true;
		else if (a == "--window") {
			window = std::stoi(val());
			window_file = val();
		} else if (a == "--unbind-on")
			unbind_on = val();
		else if (a == "--quiet")
			Conn::quiet = true;
		else if (a == "--atomic")
			Conn::atomic_rw = true;
		else if (a == "--big")
			big = val();
		else {
			std::fprintf(stderr, "usage: xiw_target --bind ADDR "
				     "[--port P] [--conns N] [--timeout SEC] "
				     "[--ird N] [--dereg-on FILE] [--disconnect-on FILE] "
				     "[--send-out] [--stop-on FILE] [--priv] "
				     "[--quiet] [--atomic] [--big DAX:MIB]\n");
			return 2;
		}
	}
	if (bind_addr.empty()) {
		std::fprintf(stderr, "xiw_target: --bind is required\n");
		return 2;
	}
	setvbuf(stdout, nullptr, _IOLBF, 0);

	rdma_event_channel *ch = rdma_create_event_channel();
	rdma_cm_id *listen_id;
	addrinfo *ai;

	if (!ch)
		die("rdma_create_event_channel");
	if (rdma_create_id(ch, &listen_id, nullptr, RDMA_PS_TCP))
		die("rdma_create_id");
	if (getaddrinfo(bind_addr.c_str(), port.c_str(), nullptr, &ai))
		die("getaddrinfo");
	if (rdma_bind_addr(listen_id, ai->ai_addr))
		die("rdma_bind_addr");
	freeaddrinfo(ai);
	if (rdma_listen(listen_id, 8))
		die("rdma_listen");
	ibv_pd *big_pd = nullptr;
	ibv_mr *big_mr = nullptr;
	if (!big.empty()) {
		size_t colon = big.rfind(':');

		if (colon == std::string::npos || !listen_id->verbs) {
			std::fprintf(stderr, "xiw_target: --big DAX:MIB, bound to a device\n");
			return 2;
		}
		size_t len = std::stoul(big.substr(colon + 1)) << 20;
		int fd = open(big.substr(0, colon).c_str(), O_RDWR);
		if (fd < 0)
			die("open --big");
		void *m = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED,
			       fd, 0);
		if (m == MAP_FAILED)
			die("mmap --big");
		close(fd);
		big_pd = ibv_alloc_pd(listen_id->verbs);
		if (!big_pd)
			die("ibv_alloc_pd");
		auto t0 = std::chrono::steady_clock::now();
		// IBV_ACCESS_FLUSH_GLOBAL (1 << 8), _PERSISTENT (1 << 9)
		big_mr = ibv_reg_mr(big_pd, m, len, IBV_ACCESS_LOCAL_WRITE |
				    IBV_ACCESS_REMOTE_WRITE |
				    IBV_ACCESS_REMOTE_READ | (1 << 8) | (1 << 9));
		if (!big_mr)
			die("register --big");
		std::printf("BIG stag=0x%x addr=0x%llx len=%zu ms=%lld\n",
			    big_mr->rkey, (unsigned long long)(uintptr_t)m, len,
			    (long long)std::chrono::duration_cast<
				    std::chrono::milliseconds>(
				    std::chrono::steady_clock::now() - t0).count());
	}
	std::printf("LISTENING %s:%s\n", bind_addr.c_str(), port.c_str());

	std::map<rdma_cm_id *, std::unique_ptr<Conn>> live;
	unsigned next_id = 1, done = 0;
	auto deadline = std::chrono::steady_clock::now() +
			std::chrono::seconds(timeout);

	ibv_context *ctx = nullptr;	// the device's, for async events

	while (conns ? done < conns : !stopping) {
		for (auto &[id, c] : live)
			if (c->connected)
				c->drain_cq();
		if (!stop_on.empty() && !access(stop_on.c_str(), F_OK)) {
			// report the live connections as if they had ended
			for (auto &[id, c] : live) {
				if (c->connected)
					c->drain_cq();
				std::printf("EVENT id=%u STOPPED\n", c->id);
				c->report_qp_state();
				c->report_mem();
				done++;
			}
			live.clear();
			stopping = true;
			break;
		}
		if (std::chrono::steady_clock::now() > deadline) {
			std::printf("TIMEOUT\n");
			return 1;
		}
		if (!disc_on.empty() && !disc_done &&
		    !access(disc_on.c_str(), F_OK)) {
			disc_done = true;
			for (auto &[id, c] : live) {
				std::printf("DISCONNECTING id=%u\n", c->id);
				rdma_disconnect(id);
			}
		}
		if (!unbind_on.empty() && !unbind_done &&
		    !access(unbind_on.c_str(), F_OK)) {
			unbind_done = true;
			for (auto &[id, c] : live) {
				if (!c->mw)
					continue;
				int st = c->bind_window(0);

				std::printf("UNBOUND id=%u status=%d\n", c->id,
					    st);
				if (!st)
					c->mark_window("UNBIND");
			}
		}
		if (!dereg_on.empty() && !dereg_done &&
		    !access(dereg_on.c_str(), F_OK)) {
			dereg_done = true;
			for (auto &[id, c] : live) {
				auto t0 = std::chrono::steady_clock::now();
				int rc = c->rw_mr ? ibv_dereg_mr(c->rw_mr) : -1;
				long ms = std::chrono::duration_cast<
					std::chrono::milliseconds>(
					std::chrono::steady_clock::now() - t0).count();

				c->rw_mr = nullptr;
				std::printf("DEREG id=%u ms=%ld rc=%d\n", c->id,
					    ms, rc);
			}
			if (big_mr) {
				auto t0 = std::chrono::steady_clock::now();
				int rc = ibv_dereg_mr(big_mr);

				big_mr = nullptr;
				std::printf("DEREG big ms=%lld rc=%d\n",
					    (long long)std::chrono::duration_cast<
						    std::chrono::milliseconds>(
						    std::chrono::steady_clock::now() - t0).count(),
					    rc);
			}
		}
		pollfd pfd[2] = { { ch->fd, POLLIN, 0 },
				  { ctx ? ctx->async_fd : -1, POLLIN, 0 } };

		if (poll(pfd, 2, 50) <= 0)
			continue;
		// Every queued asynchronous event before the next CM event:
		// a QP's event is queued before its Terminate leaves, so
		// before its connection's DISCONNECTED, which erases the QP
		// from live (with cases in parallel, reading one event per
		// pass printed a later one as id=0). The fd is non-blocking.
		if (pfd[1].revents & POLLIN) {
			ibv_async_event ae;

			while (!ibv_get_async_event(ctx, &ae)) {
				unsigned cid = 0;

				for (auto &[id, c] : live)
					if (c->cm && c->cm->qp &&
					    ae.element.qp == c->cm->qp)
						cid = c->id;
				std::printf("ASYNC id=%u %s\n", cid,
					    async_name(ae.event_type));
				ibv_ack_async_event(&ae);
			}
		}
		if (!(pfd[0].revents & POLLIN))
			continue;
		rdma_cm_event *ev;

		if (rdma_get_cm_event(ch, &ev))
			die("rdma_get_cm_event");
		rdma_cm_event_type type = ev->event;
		rdma_cm_id *id = ev->id;
		int status = ev->status;

		rdma_ack_cm_event(ev);
		switch (type) {
		case RDMA_CM_EVENT_CONNECT_REQUEST: {
			auto c = std::make_unique<Conn>();

			c->id = next_id++;
			if (c->setup(id, with_priv, big_pd, window) ||
			    c->accept()) {
				std::printf("EVENT id=%u SETUP_FAILED errno=%d\n",
					    c->id, errno);
				// reject, then free the id and what was
				// made for it (the destructor)
				rdma_reject(id, nullptr, 0);
				done++;
				break;
			}
			if (!ctx) {
				ctx = id->verbs;
				int fl = fcntl(ctx->async_fd, F_GETFL);

				fcntl(ctx->async_fd, F_SETFL, fl | O_NONBLOCK);
			}
			live[id] = std::move(c);
			break;
		}
		case RDMA_CM_EVENT_ESTABLISHED:
			if (live.count(id)) {
				Conn &c = *live[id];

				c.connected = true;
				std::printf("CONNECTED id=%u\n", c.id);
				if (window)
					c.window_up(window_file);
				for (int i = 0; send_out && i < 8; i++) {
					ibv_sge sge{ (uintptr_t)c.rx.data(),
						     16384, c.rx_mr->lkey };
					ibv_send_wr wr{}, *bad;

					wr.wr_id = 1000 + i;
					wr.opcode = IBV_WR_SEND;
					wr.sg_list = &sge;
					wr.num_sge = 1;
					if (ibv_post_send(id->qp, &wr, &bad))
						die("ibv_post_send");
				}
				if (send_out)
					std::printf("SENDING id=%u\n", c.id);
			}
			break;
		case RDMA_CM_EVENT_DISCONNECTED:
		case RDMA_CM_EVENT_CONNECT_ERROR:
		case RDMA_CM_EVENT_UNREACHABLE:
		case RDMA_CM_EVENT_REJECTED:
			if (live.count(id)) {
				Conn &c = *live[id];

				c.drain_cq();
				std::printf("EVENT id=%u %s status=%d\n", c.id,
					    rdma_event_str(type), status);
				c.report_qp_state();
				c.report_mem();
				live.erase(id);
				done++;
			}
			break;
		default:
			std::printf("EVENT %s status=%d\n", rdma_event_str(type),
				    status);
			break;
		}
	}
	live.clear();
	if (big_mr)
		ibv_dereg_mr(big_mr);
	if (big_pd)
		ibv_dealloc_pd(big_pd);
	rdma_destroy_id(listen_id);
	rdma_destroy_event_channel(ch);
	if (Conn::quiet) {
		std::string s;

		for (const auto &[k, v] : Conn::cqe_counts)
			s += " status=" + std::to_string(k) + ":" + std::to_string(v);
		std::printf("CQES%s\n", s.c_str());
	}
	std::printf("DONE %u\n", done);
	return 0;
}
