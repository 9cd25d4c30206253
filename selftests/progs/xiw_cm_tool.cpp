// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// rdma_cm client/server for the connection manager tests (cm_*.sh):
// private data both ways, reject with private data, orderly disconnect.
//
//   xiw_cm_tool server ADDR PORT accept|reject [COUNT]
//       accept: accept with private data "welcome", wait for DISCONNECTED
//       accept-close: the same, but disconnect once ESTABLISHED
//       reject: reject with private data "no thanks"
//       hold: answer nothing for 3 s, then accept: prints "ACCEPT rv=..."
//             (the provider's accept timeout must have rejected it)
//       COUNT connection requests (default 1), then exit
//   xiw_cm_tool client ADDR PORT SRC[/SPORT] [wait]
//       connect with private data "hello xiw", IRD 4 / ORD 2; on
//       ESTABLISHED disconnect (or, with "wait", wait for the peer's).
//       SPORT: the rdma_cm source port (default: rdma_cm picks one)
//
//   xiw_cm_tool stream-server ADDR PORT [BLOCKS [SECONDS]]
//   xiw_cm_tool stream-client ADDR PORT SRC [BLOCKS [SECONDS]]
//       one connection carrying verified traffic both ways until it ends
//       (see "stream" below); the kill -9 tests run one end and kill
//       the other. BLOCKS 0 (default): until the peer or a fault ends
//       the connection; N: disconnect after N verified blocks. SECONDS
//       (default 60) bounds the run.
//
// One line per event: "EVENT status=N pd=\"...\" ird=N ord=N". Exit 0
// when the flow ran as asked, 1 otherwise, 2 on a setup error.
#include "verbs_side.h"

#include <endian.h>
#include <fcntl.h>
#include <rdma/rdma_cma.h>

#include <cstdio>
#include <cstdlib>
#include <cerrno>
#include <cstring>
#include <netdb.h>
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <string>
#include <string_view>

namespace {

[[noreturn]] void die(const char *what)
{
	std::perror(what);
	std::exit(2);
}

rdma_cm_event *next_event(rdma_event_channel *ch)
{
	rdma_cm_event *ev;

	if (rdma_get_cm_event(ch, &ev))
		die("rdma_get_cm_event");
	const auto &c = ev->param.conn;
	std::string pd;
	if (c.private_data && c.private_data_len)
		pd.assign(static_cast<const char *>(c.private_data),
			  strnlen(static_cast<const char *>(c.private_data),
				  c.private_data_len));
	std::printf("%s status=%d pd=\"%s\" ird=%u ord=%u\n",
		    rdma_event_str(ev->event), ev->status, pd.c_str(),
		    c.responder_resources, c.initiator_depth);
	std::fflush(stdout);
	return ev;
}

void make_qp(rdma_cm_id *id)
{
	ibv_qp_init_attr a{};

	a.qp_type = IBV_QPT_RC;
	a.cap.max_send_wr = 4;
	a.cap.max_recv_wr = 4;
	a.cap.max_send_sge = 1;
	a.cap.max_recv_sge = 1;
	if (rdma_create_qp(id, nullptr, &a))
		die("rdma_create_qp");
}

addrinfo *resolve(const char *host, const char *port)
{
	addrinfo hints{}, *res;

	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE;
	if (getaddrinfo(host, port, &hints, &res))
		die("getaddrinfo");
	return res;
}

// A listening id on host:port; prints "listening" (what the tests wait for).
rdma_cm_id *listen_on(rdma_event_channel *ch, const char *host,
		      const char *port, int backlog)
{
	rdma_cm_id *lid;
	addrinfo *ai = resolve(host, port);

	if (rdma_create_id(ch, &lid, nullptr, RDMA_PS_TCP))
		die("rdma_create_id");
	if (rdma_bind_addr(lid, ai->ai_addr) || rdma_listen(lid, backlog))
		die("bind/listen");
	freeaddrinfo(ai);
	std::printf("listening\n");
	std::fflush(stdout);
	return lid;
}

int server(rdma_event_channel *ch, const char *host, const char *port,
	   std::string_view mode, int count)
{
	rdma_cm_id *lid = listen_on(ch, host, port, 8);
	int ok = 0;
	while (ok < count) {
		rdma_cm_event *ev = next_event(ch);
		rdma_cm_id *id = ev->id;
		auto type = ev->event;

		rdma_ack_cm_event(ev);
		if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
			if (mode == "reject") {
				if (rdma_reject(id, "no thanks", 9))
					die("rdma_reject");
				rdma_destroy_id(id);
				ok++;
				continue;
			}
			rdma_conn_param p{};
			p.private_data = "welcome";
			p.private_data_len = 7;
			p.responder_resources = 2;
			p.initiator_depth = 2;
			make_qp(id);
			if (mode == "hold") {
				sleep(3);
				int rv = rdma_accept(id, &p);
				std::printf("ACCEPT rv=%d errno=%d\n", rv,
					    rv ? errno : 0);
				std::fflush(stdout);
				rdma_destroy_qp(id);
				rdma_destroy_id(id);
				ok++;
				continue;
			}
			if (rdma_accept(id, &p))
				die("rdma_accept");
		} else if (type == RDMA_CM_EVENT_DISCONNECTED) {
			rdma_destroy_qp(id);
			rdma_destroy_id(id);
			ok++;
		} else if (type == RDMA_CM_EVENT_ESTABLISHED) {
			if (mode == "accept-close")
				rdma_disconnect(id);
		} else {
			return 1;
		}
	}
	rdma_destroy_id(lid);
	return 0;
}

int client(rdma_event_channel *ch, const char *host, const char *port,
	   const char *src, bool wait)
{
	rdma_cm_id *id;
	// SRC or SRC/PORT: rdma_cm binds the source port asked for
	std::string sa(src), sp = "0";
	if (auto k = sa.rfind('/'); k != std::string::npos) {
		sp = sa.substr(k + 1);
		sa.resize(k);
	}
	addrinfo *ai = resolve(host, port), *sai = resolve(sa.c_str(), sp.c_str());
	rdma_cm_event *ev;
	int rv = 1;

	if (rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP))
		die("rdma_create_id");
	// the source address picks the device (both are local here)
	if (rdma_resolve_addr(id, sai->ai_addr, ai->ai_addr, 2000))
		die("rdma_resolve_addr");
	freeaddrinfo(ai);
	freeaddrinfo(sai);
	ev = next_event(ch);
	rdma_ack_cm_event(ev);
	if (rdma_resolve_route(id, 2000))
		die("rdma_resolve_route");
	ev = next_event(ch);
	rdma_ack_cm_event(ev);
	make_qp(id);
	rdma_conn_param p{};
	p.private_data = "hello xiw";
	p.private_data_len = 9;
	p.responder_resources = 4;
	p.initiator_depth = 2;
	if (rdma_connect(id, &p))
		die("rdma_connect");
	ev = next_event(ch);
	auto type = ev->event;
	rdma_ack_cm_event(ev);
	if (type == RDMA_CM_EVENT_ESTABLISHED) {
		if (!wait)
			rdma_disconnect(id);
		ev = next_event(ch);
		if (ev->event == RDMA_CM_EVENT_DISCONNECTED)
			rv = 0;
		rdma_ack_cm_event(ev);
	} else if (type == RDMA_CM_EVENT_REJECTED) {
		rv = 0;
	}
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
	return rv;
}

// stream: both ends RDMA-Write 4 KiB blocks into the other's inbox (its
// region, told in the private data of connect and accept) and Read each
// block back into a third buffer once posted, so every block crosses the
// wire twice and is checked word by word when its Read completes (a
// Read behind a Write on the same QP returns what the Write placed).
// Writes are unsignaled; the Read after each is signaled and covers it,
// so the last WR posted is always signaled. 16 receives stay posted and
// are never consumed (no Sends): they must come back flushed when the
// connection ends. When the connection ends (DISCONNECTED, an error CQE),
// posting stops and every WR posted must complete, success or flush,
// within 20 s: "# sq posted ..." and one "ok"/"FAIL" line per check.
struct StreamInfo {	// private data, big-endian
	uint64_t addr;
	uint32_t rkey;
	uint32_t magic;
};
constexpr uint32_t kStreamMagic = 0x78697773;	// "xiws"
constexpr uint32_t kBlk = 4096, kSlots = 128;
constexpr uint32_t kWin = 32;	// WRs in flight: 16 Write + Read pairs
constexpr uint32_t kRecvs = 16;
constexpr uint64_t kRecvTag = 1ULL << 63;
constexpr uint8_t kDepth = 16;	// IRD and ORD: every Read of the window

enum { IN = 0, OUT = 1, BACK = 2 };	// the three areas of the buffer

int stream_fails;

void stream_check(bool ok, const std::string &what)
{
	std::printf("%s %s\n", ok ? "ok" : "FAIL", what.c_str());
	std::fflush(stdout);
	stream_fails += !ok;
}

uint8_t *area(cm_pair::Side &s, int which, uint64_t seq)
{
	return s.mem.data() + (uint64_t(which) * kSlots + seq % kSlots) * kBlk;
}

uint64_t word(uint64_t seq, uint32_t i, uint64_t side)
{
	return ((seq << 16 | i) * 0x9e3779b97f4a7c15ULL) ^ side;
}

cm_pair::SideOpts stream_opts()
{
	cm_pair::SideOpts o;

	o.depth = kWin + 8;
	o.recv_depth = kRecvs;
	o.mem_bytes = 3ULL * kSlots * kBlk;
	return o;
}

StreamInfo stream_info(cm_pair::Side &s)
{
	return { htobe64((uintptr_t)area(s, IN, 0)), htobe32(s.mr->rkey),
		 htobe32(kStreamMagic) };
}

bool peer_info(const rdma_cm_event *ev, StreamInfo &pi)
{
	if (ev->param.conn.private_data_len < sizeof(pi))
		return false;
	std::memcpy(&pi, ev->param.conn.private_data, sizeof(pi));
	pi.addr = be64toh(pi.addr);
	pi.rkey = be32toh(pi.rkey);
	return be32toh(pi.magic) == kStreamMagic;
}

void stream_conn_param(rdma_conn_param &p, const StreamInfo &mine)
{
	p.private_data = &mine;
	p.private_data_len = sizeof(mine);
	p.responder_resources = kDepth;
	p.initiator_depth = kDepth;
}

int stream(rdma_event_channel *ch, cm_pair::Side &s, const StreamInfo &pi,
	   uint64_t side, long blocks, int secs)
{
	using Clock = std::chrono::steady_clock;
	uint64_t posted = 0, done = 0, ok = 0, flushed = 0, other = 0;
	uint64_t seq = 0, verified = 0, bad = 0, rq_done = 0, rq_flushed = 0;
	bool dead = false, stopping = false, announced = false;
	const char *why = "";
	auto t0 = Clock::now(), end = t0 + std::chrono::seconds(secs);
	Clock::time_point t_end{}, t_ok = t0;
	auto ms = [](Clock::duration d) {
		return (long)std::chrono::duration_cast<
			std::chrono::milliseconds>(d).count();
	};
	// the end of the connection: posting stops, 20 s for the rest
	auto ended = [&](const char *w) {
		if (dead)
			return;
		dead = true;
		if (stopping)
			return;
		why = w;
		t_end = Clock::now();
		end = t_end + std::chrono::seconds(20);
		std::printf("# the end (%s) came %ld ms after the last good completion\n",
			    w, ms(t_end - t_ok));
	};

	fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
	while (Clock::now() < end) {
		rdma_cm_event *ev;

		while (!rdma_get_cm_event(ch, &ev)) {
			std::printf("# %s status=%d after %ld ms\n",
				    rdma_event_str(ev->event), ev->status,
				    ms(Clock::now() - t0));
			if (ev->event == RDMA_CM_EVENT_DISCONNECTED ||
			    ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL)
				ended("peer");
			rdma_ack_cm_event(ev);
		}
		while (!dead && !stopping && posted - done + 2 <= kWin) {
			auto *w = reinterpret_cast<uint64_t *>(area(s, OUT, seq));
			uint64_t raddr = pi.addr + (seq % kSlots) * kBlk;

			for (uint32_t i = 0; i < kBlk / 8; i++)
				w[i] = word(seq, i, side);
			std::memset(area(s, BACK, seq), 0, kBlk);
			if (s.post(IBV_WR_RDMA_WRITE, posted, w, kBlk, false,
				   raddr, pi.rkey)) {
				ended("post");
				break;
			}
			posted++;
			if (s.post(IBV_WR_RDMA_READ, posted, area(s, BACK, seq),
				   kBlk, true, raddr, pi.rkey)) {
				// the Write is the last WR and unsignaled:
				// its completion cannot be told apart
				std::printf("# post of a Read failed after its Write\n");
				ended("post");
				break;
			}
			posted++;
			seq++;
		}
		ibv_wc wc[16];
		int n = ibv_poll_cq(s.cq, 16, wc);

		if (n < 0) {
			stream_check(false, "ibv_poll_cq failed");
			break;
		}
		for (int i = 0; i < n; i++) {
			if (wc[i].wr_id & kRecvTag) {
				rq_done++;
				rq_flushed += wc[i].status == IBV_WC_WR_FLUSH_ERR;
				continue;
			}
			uint64_t upto = wc[i].wr_id + 1;

			if (wc[i].status == IBV_WC_SUCCESS) {
				uint64_t rs = wc[i].wr_id / 2;
				auto *r = reinterpret_cast<const uint64_t *>(
					area(s, BACK, rs));
				uint32_t j = 0;

				ok += upto - done;
				t_ok = Clock::now();
				while (j < kBlk / 8 && r[j] == word(rs, j, side))
					j++;
				if (j < kBlk / 8 && !bad++)
					std::printf("# block %" PRIu64 " word %u: %016" PRIx64
						    ", expected %016" PRIx64 "\n", rs, j,
						    r[j], word(rs, j, side));
				verified += j == kBlk / 8;
			} else {
				// the first four non-flush statuses are printed
				// also after the end: the CM's DISCONNECTED event
				// may be read before the CQE that the end caused
				if (!flushed && !other)
					std::printf("# first error CQE: %s\n",
						    ibv_wc_status_str(wc[i].status));
				if (wc[i].status == IBV_WC_WR_FLUSH_ERR) {
					flushed++;
				} else if (other++ < 4) {
					std::printf("# non-flush error CQE: %s\n",
						    ibv_wc_status_str(wc[i].status));
				}
				ended("error CQE");
			}
			done = std::max(done, upto);
		}
		if (!announced && verified >= 64) {
			announced = true;
			std::printf("TRAFFIC\n");
			std::fflush(stdout);
		}
		if (blocks && !stopping && !dead && verified >= (uint64_t)blocks) {
			stopping = true;
			why = "disconnect";
			t_end = Clock::now();
			end = t_end + std::chrono::seconds(20);
			rdma_disconnect(s.id);
		}
		if ((dead || stopping) && done == posted && rq_done == kRecvs)
			break;
		if (!n)
			usleep(50);
	}
	long tail = dead || stopping ? ms(Clock::now() - t_end) : -1;

	std::printf("# sq: posted %" PRIu64 ", completed %" PRIu64 " (%" PRIu64
		    " ok, then %" PRIu64 " flushed, %" PRIu64 " other errors);"
		    " rq: %" PRIu64 " of %u back, %" PRIu64 " flushed\n",
		    posted, done, ok, flushed, other, rq_done, kRecvs, rq_flushed);
	std::printf("# %" PRIu64 " blocks verified (%" PRIu64 " KiB each way),"
		    " %ld ms of traffic, last completion %ld ms after the end (%s)\n",
		    verified, verified * kBlk / 1024,
		    ms((dead || stopping ? t_end : Clock::now()) - t0), tail, why);
	if (blocks)
		stream_check(stopping && verified >= (uint64_t)blocks,
			     std::to_string(verified) + " blocks verified, then disconnected"
			     + (stopping ? "" : std::string(": ended early (") + why + ")"));
	else
		stream_check(dead && std::string_view(why) != "post",
			     std::string("the connection ended (") +
			     (dead ? why : "it did not, in time") + ")");
	stream_check(verified > 0 && !bad, std::to_string(verified) +
		     " blocks read back intact, " + std::to_string(bad) + " corrupt");
	stream_check(done == posted, "every WR completed (" +
		     std::to_string(posted - done) + " of " +
		     std::to_string(posted) + " missing)");
	stream_check(rq_done == kRecvs && rq_flushed == kRecvs,
		     "every receive flushed (" + std::to_string(rq_flushed) +
		     " of " + std::to_string(kRecvs) + ")");
	s.teardown();
	std::printf("TORN DOWN\n");
	return stream_fails ? 1 : 0;
}

void stream_recvs(cm_pair::Side &s)
{
	for (uint32_t i = 0; i < kRecvs; i++)
		s.post_recv(kRecvTag | i, area(s, BACK, i), kBlk);
}

// the next event on @ch, which must be @type (else exit 2)
rdma_cm_event *stream_expect(rdma_event_channel *ch, rdma_cm_event_type type)
{
	rdma_cm_event *ev = next_event(ch);

	if (ev->event != type) {
		std::fprintf(stderr, "expected %s\n", rdma_event_str(type));
		std::exit(2);
	}
	return ev;
}

int stream_server(rdma_event_channel *ch, const char *host,
		  const char *port, long blocks, int secs)
{
	rdma_cm_id *lid = listen_on(ch, host, port, 1);
	cm_pair::Side s;
	StreamInfo pi, mine;
	rdma_conn_param p{};
	rdma_cm_event *ev = stream_expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST);

	if (!peer_info(ev, pi)) {
		std::fprintf(stderr, "no stream info from the client\n");
		return 2;
	}
	s.setup(ev->id, stream_opts());
	rdma_ack_cm_event(ev);
	stream_recvs(s);
	mine = stream_info(s);
	stream_conn_param(p, mine);
	if (rdma_accept(s.id, &p))
		die("rdma_accept");
	rdma_ack_cm_event(stream_expect(ch, RDMA_CM_EVENT_ESTABLISHED));
	rdma_destroy_id(lid);	// one connection: nothing else may come in
	return stream(ch, s, pi, 0x5e17e7ULL << 40, blocks, secs);
}

int stream_client(rdma_event_channel *ch, const char *host, const char *port,
		  const char *src, long blocks, int secs)
{
	rdma_cm_id *id;
	addrinfo *ai = resolve(host, port), *sai = resolve(src, "0");
	cm_pair::Side s;
	StreamInfo pi, mine;
	rdma_conn_param p{};

	if (rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP))
		die("rdma_create_id");
	if (rdma_resolve_addr(id, sai->ai_addr, ai->ai_addr, 2000))
		die("rdma_resolve_addr");
	freeaddrinfo(ai);
	freeaddrinfo(sai);
	rdma_ack_cm_event(stream_expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
	if (rdma_resolve_route(id, 2000))
		die("rdma_resolve_route");
	rdma_ack_cm_event(stream_expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
	s.setup(id, stream_opts());
	stream_recvs(s);
	mine = stream_info(s);
	stream_conn_param(p, mine);
	if (rdma_connect(id, &p))
		die("rdma_connect");
	rdma_cm_event *ev = stream_expect(ch, RDMA_CM_EVENT_ESTABLISHED);

	if (!peer_info(ev, pi)) {
		std::fprintf(stderr, "no stream info from the server\n");
		return 2;
	}
	rdma_ack_cm_event(ev);
	return stream(ch, s, pi, 0xc11e47ULL << 40, blocks, secs);
}

} // namespace

int main(int argc, char **argv)
{
	if (argc < 4) {
		std::fprintf(stderr,
			     "usage: %s server ADDR PORT accept|accept-close|reject|hold [COUNT] | client ADDR PORT SRC[/SPORT] [wait]\n"
			     "       %s stream-server ADDR PORT [BLOCKS [SECONDS]] | stream-client ADDR PORT SRC [BLOCKS [SECONDS]]\n",
			     argv[0], argv[0]);
		return 2;
	}
	rdma_event_channel *ch = rdma_create_event_channel();
	if (!ch)
		die("rdma_create_event_channel");
	std::string_view role = argv[1];
	int rv = 2;
	if (role == "server" && argc >= 5)
		rv = server(ch, argv[2], argv[3], argv[4],
			    argc > 5 ? std::atoi(argv[5]) : 1);
	else if (role == "client" && argc >= 5)
		rv = client(ch, argv[2], argv[3], argv[4],
			    argc > 5 && std::string_view(argv[5]) == "wait");
	else if (role == "stream-server")
		rv = stream_server(ch, argv[2], argv[3],
				   argc > 4 ? std::atol(argv[4]) : 0,
				   argc > 5 ? std::atoi(argv[5]) : 60);
	else if (role == "stream-client" && argc >= 5)
		rv = stream_client(ch, argv[2], argv[3], argv[4],
				   argc > 5 ? std::atol(argv[5]) : 0,
				   argc > 6 ? std::atoi(argv[6]) : 60);
	rdma_destroy_event_channel(ch);
	return rv;
}
