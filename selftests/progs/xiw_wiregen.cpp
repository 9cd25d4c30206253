// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// xiw_wiregen: a fixed, documented sequence of RDMA operations over one
// rdma_cm connection, for the independent wire check (wire_tshark.sh),
// which captures the traffic and has tshark's iWARP dissectors decode it.
//
// One process connects two QPs through rdma_cm (cm_pair.h: the passive
// side "srv" and the active side "cli" on ADDR:PORT). srv registers one
// 128 KiB region (addressed by virtual address) and posts 6 receives of
// 8 KiB; cli posts, one at a time and each waited for:
//
//   #  operation                        length  target (srv region offset)
//   1  Send                                100  receive 0
//   2  Send with Solicited Event            33  receive 1
//   3  Send                               5000  receive 2 (> a 1500-MTU MSS)
//   4  RDMA Write                         3000  0x1000
//   5  RDMA Read (into cli offset 0x3000) 4000  0x2000
//   6  FetchAdd +5 (plain verbs)             8  0x4000 (holds 1000)
//   7  CmpSwap 77 -> 88 (plain verbs)        8  0x4008 (holds 77)
//   8  RDMA Write with Immediate 0xa5a5f00d 200  0x5000, receive 3
//   9  Immediate Data with SE, xiwdv_wr_imm64(0x0123456789abcdef)
//                                            -  receive 4
//  10  Send with Invalidate of STag 0x00c0ffee  64  receive 5
//
// Payloads are printable ASCII. The last one fails by design: only a
// fast-registration MR can be invalidated remotely, so srv's receive
// completes with IBV_WC_REM_INV_REQ_ERR and srv's xiw sends a Terminate
// (RDMAP / Remote Protection / STag cannot be invalidated): the capture
// then holds a Terminate too. cli's Send may complete either way.
//
// Prints "info NAME=VALUE ..." (addresses and STags the wire check
// compares with the DDP/RDMAP headers), one "ok ..."/"FAIL ..." line per
// check, and exits 0 only if all passed. Both sides disconnect and wait
// for DISCONNECTED, so the connection ends with FINs.
//
// Usage: xiw_wiregen ADDR PORT
#include "verbs_side.h"

#include <infiniband/xiwdv.h>
#include <rdma/rdma_cma.h>

#include <arpa/inet.h>
#include <poll.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

namespace {

using cm_pair::die;

int failures;

constexpr size_t kRegion = 128 * 1024;
constexpr size_t kRecvOff = 0x8000, kRecvLen = 0x2000;
constexpr int kRecvs = 6;
constexpr uint32_t kBogusStag = 0x00c0ffee;

void check(bool ok, const char *what, uint64_t got, uint64_t want)
{
	std::printf("%s %s: got %" PRIu64 " (%#" PRIx64 ") want %" PRIu64
		    " (%#" PRIx64 ")\n", ok ? "ok" : "FAIL", what, got, got,
		    want, want);
	if (!ok)
		failures++;
}

struct Region {
	uint64_t addr;
	uint32_t rkey;
} __attribute__((packed));

// The shared test-connection end (verbs_side.h) with this program's
// buffer layout and helpers.
struct Side : cm_pair::SideT<unsigned char> {
	uintptr_t at(size_t off) { return (uintptr_t)mem.data() + off; }

	void setup(rdma_cm_id *cid)
	{
		cm_pair::SideOpts o;

		o.cq_entries = 32;
		o.mem_bytes = kRegion;
		o.access |= IBV_ACCESS_REMOTE_ATOMIC;
		o.send_ops_flags = IBV_QP_EX_WITH_SEND |
				   IBV_QP_EX_WITH_SEND_WITH_INV |
				   IBV_QP_EX_WITH_RDMA_WRITE |
				   IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
				   IBV_QP_EX_WITH_RDMA_READ |
				   IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
				   IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
		SideT::setup(cid, o);
	}

	void post_recv(int i)
	{
		ibv_sge sge{ at(kRecvOff + i * kRecvLen), (uint32_t)kRecvLen,
			     mr->lkey };
		ibv_recv_wr wr{}, *bad;

		wr.wr_id = 100 + i;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		if (ibv_post_recv(id->qp, &wr, &bad))
			die("ibv_post_recv");
	}

	// One completion within 20 s (the VM is slow; tshark's capture runs
	// beside us).
	ibv_wc poll(const char *what, uint64_t *imm64 = nullptr)
	{
		ibv_wc wc{};
		uint64_t imm = 0;
		timespec t0, t, nap{ 0, 100000 };

		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (unsigned long i = 0;; i++) {
			int n = xiwdv_poll_cq(cq, 1, &wc, &imm);
			if (n < 0)
				die("xiwdv_poll_cq");
			if (n) {
				if (imm64)
					*imm64 = imm;
				return wc;
			}
			if (i < 1000)
				continue;
			clock_gettime(CLOCK_MONOTONIC, &t);
			if (t.tv_sec - t0.tv_sec > 20) {
				std::printf("FAIL %s: no completion in 20 s\n",
					    what);
				std::exit(1);
			}
			nanosleep(&nap, nullptr);
		}
	}
};

Side srv, cli;
Region peer;

void fill(unsigned char *p, size_t len, int seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = 'A' + (i * 7 + seed) % 26;
}

void complete(const char *what)
{
	if (int rv = ibv_wr_complete(cli.qpx)) {
		errno = rv;
		die(what);
	}
}

// cli's completion of the operation just posted.
void cli_done(const char *what, ibv_wc_opcode op, uint32_t byte_len = 0,
	      bool check_len = false)
{
	ibv_wc wc = cli.poll(what);
	char w[96];

	std::snprintf(w, sizeof(w), "%s: requester status", what);
	check(wc.status == IBV_WC_SUCCESS, w, wc.status, IBV_WC_SUCCESS);
	std::snprintf(w, sizeof(w), "%s: requester opcode", what);
	check(wc.opcode == op, w, wc.opcode, op);
	if (check_len) {
		std::snprintf(w, sizeof(w), "%s: requester byte_len", what);
		check(wc.byte_len == byte_len, w, wc.byte_len, byte_len);
	}
}

// srv's receive completion for receive @i.
void srv_recv(const char *what, int i, ibv_wc_opcode op, uint32_t len,
	      uint64_t *imm64 = nullptr)
{
	ibv_wc wc = srv.poll(what, imm64);
	char w[96];

	std::snprintf(w, sizeof(w), "%s: receive status", what);
	check(wc.status == IBV_WC_SUCCESS, w, wc.status, IBV_WC_SUCCESS);
	std::snprintf(w, sizeof(w), "%s: receive wr_id", what);
	check(wc.wr_id == (uint64_t)(100 + i), w, wc.wr_id, 100 + i);
	std::snprintf(w, sizeof(w), "%s: receive opcode", what);
	check(wc.opcode == op, w, wc.opcode, op);
	std::snprintf(w, sizeof(w), "%s: receive byte_len", what);
	check(wc.byte_len == len, w, wc.byte_len, len);
}

void send(const char *what, int i, uint32_t len, bool se)
{
	fill(cli.mem.data(), len, i);
	ibv_wr_start(cli.qpx);
	cli.qpx->wr_id = i;
	cli.qpx->wr_flags = IBV_SEND_SIGNALED | (se ? IBV_SEND_SOLICITED : 0);
	ibv_wr_send(cli.qpx);
	ibv_wr_set_sge(cli.qpx, cli.mr->lkey, cli.at(0), len);
	complete(what);
	cli_done(what, IBV_WC_SEND);
	srv_recv(what, i, IBV_WC_RECV, len);
	bool same = !std::memcmp(srv.mem.data() + kRecvOff + i * kRecvLen,
				 cli.mem.data(), len);
	check(same, "send data", same, 1);
}

void connect(cm_pair::Pair &pair)
{
	rdma_conn_param p{}, a{};
	Region r{};

	p.responder_resources = 4;
	p.initiator_depth = 4;
	a = p;
	a.private_data = &r;
	a.private_data_len = sizeof(r);
	pair.connect([](rdma_cm_id *id) { cli.setup(id); },
		     [&r](rdma_cm_id *id) {
			     srv.setup(id);
			     for (int i = 0; i < kRecvs; i++)
				     srv.post_recv(i);
			     r = { srv.at(0), srv.mr->rkey };
		     },
		     p, a, &srv.id, &peer, sizeof(peer));
}

// The next event on @ch within 10 s is RDMA_CM_EVENT_DISCONNECTED.
bool disconnected(rdma_event_channel *ch)
{
	pollfd pfd{ ch->fd, POLLIN, 0 };
	rdma_cm_event *ev;
	bool ok;

	if (poll(&pfd, 1, 10000) <= 0 || rdma_get_cm_event(ch, &ev))
		return false;
	ok = ev->event == RDMA_CM_EVENT_DISCONNECTED;
	if (!ok)
		std::printf("info rdma_cm event %s\n", rdma_event_str(ev->event));
	rdma_ack_cm_event(ev);
	return ok;
}

// @len bytes at @dst equal @src within 5 s.
bool placed(const unsigned char *dst, const unsigned char *src, size_t len)
{
	timespec nap{ 0, 1000000 };

	for (int i = 0; i < 5000; i++) {
		if (!std::memcmp((const void *)dst, src, len))
			return true;
		nanosleep(&nap, nullptr);
	}
	return false;
}

uint64_t word(Side &s, size_t off)
{
	uint64_t v;

	std::memcpy(&v, s.mem.data() + off, 8);
	return v;
}

void set_word(Side &s, size_t off, uint64_t v)
{
	std::memcpy(s.mem.data() + off, &v, 8);
}

} // namespace

int main(int argc, char **argv)
{
	setvbuf(stdout, nullptr, _IOLBF, 0);
	if (argc != 3) {
		std::fprintf(stderr, "usage: %s ADDR PORT\n", argv[0]);
		return 2;
	}
	cm_pair::Pair pair(argv[1], argv[2]);
	connect(pair);
	if (!xiwdv_is_xiw_context(cli.id->verbs)) {
		std::printf("FAIL not an xiw device\n");
		return 1;
	}
	std::printf("info srv_addr=%#" PRIx64 " srv_rkey=%#x cli_addr=%#"
		    PRIx64 " cli_lkey=%#x cli_rkey=%#x bogus_stag=%#x\n",
		    (uint64_t)srv.at(0), srv.mr->rkey, (uint64_t)cli.at(0),
		    cli.mr->lkey, cli.mr->rkey, kBogusStag);
	check(peer.addr == srv.at(0) && peer.rkey == srv.mr->rkey,
	      "accept private data", peer.rkey, srv.mr->rkey);

	// 1-3: Sends.
	send("1 send 100", 0, 100, false);
	send("2 send+se 33", 1, 33, true);
	send("3 send 5000", 2, 5000, false);

	// 4: RDMA Write 3000 to srv + 0x1000.
	fill(cli.mem.data(), 3000, 4);
	ibv_wr_start(cli.qpx);
	cli.qpx->wr_id = 4;
	cli.qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(cli.qpx, peer.rkey, peer.addr + 0x1000);
	ibv_wr_set_sge(cli.qpx, cli.mr->lkey, cli.at(0), 3000);
	complete("4 write");
	cli_done("4 write 3000", IBV_WC_RDMA_WRITE);
	// complete = handed to TCP: the data may land a little later
	bool same = placed(srv.mem.data() + 0x1000, cli.mem.data(), 3000);
	check(same, "4 write data", same, 1);

	// 5: RDMA Read 4000 from srv + 0x2000 into cli + 0x3000.
	fill(srv.mem.data() + 0x2000, 4000, 5);
	ibv_wr_start(cli.qpx);
	cli.qpx->wr_id = 5;
	cli.qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_read(cli.qpx, peer.rkey, peer.addr + 0x2000);
	ibv_wr_set_sge(cli.qpx, cli.mr->lkey, cli.at(0x3000), 4000);
	complete("5 read");
	cli_done("5 read 4000", IBV_WC_RDMA_READ, 4000, true);
	same = !std::memcmp(cli.mem.data() + 0x3000, srv.mem.data() + 0x2000,
			    4000);
	check(same, "5 read data", same, 1);

	// 6: FetchAdd +5 on 1000.
	set_word(srv, 0x4000, 1000);
	ibv_wr_start(cli.qpx);
	cli.qpx->wr_id = 6;
	cli.qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_fetch_add(cli.qpx, peer.rkey, peer.addr + 0x4000, 5);
	ibv_wr_set_sge(cli.qpx, cli.mr->lkey, cli.at(0x6000), 8);
	complete("6 fetchadd");
	cli_done("6 fetchadd", IBV_WC_FETCH_ADD);
	check(word(cli, 0x6000) == 1000, "6 fetchadd original",
	      word(cli, 0x6000), 1000);
	check(word(srv, 0x4000) == 1005, "6 fetchadd result",
	      word(srv, 0x4000), 1005);

	// 7: CmpSwap 77 -> 88.
	set_word(srv, 0x4008, 77);
	ibv_wr_start(cli.qpx);
	cli.qpx->wr_id = 7;
	cli.qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_cmp_swp(cli.qpx, peer.rkey, peer.addr + 0x4008, 77, 88);
	ibv_wr_set_sge(cli.qpx, cli.mr->lkey, cli.at(0x6008), 8);
	complete("7 cmpswap");
	cli_done("7 cmpswap", IBV_WC_COMP_SWAP);
	check(word(cli, 0x6008) == 77, "7 cmpswap original",
	      word(cli, 0x6008), 77);
	check(word(srv, 0x4008) == 88, "7 cmpswap result", word(srv, 0x4008),
	      88);

	// 8: RDMA Write with Immediate (verbs, 32 bits) 200 to srv + 0x5000.
	uint64_t imm = 0;
	fill(cli.mem.data(), 200, 8);
	ibv_wr_start(cli.qpx);
	cli.qpx->wr_id = 8;
	cli.qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write_imm(cli.qpx, peer.rkey, peer.addr + 0x5000,
			      htobe32(0xa5a5f00dU));
	ibv_wr_set_sge(cli.qpx, cli.mr->lkey, cli.at(0), 200);
	complete("8 write_imm");
	cli_done("8 write_imm 200", IBV_WC_RDMA_WRITE);
	srv_recv("8 write_imm 200", 3, IBV_WC_RECV_RDMA_WITH_IMM, 200, &imm);
	check(imm == 0xa5a5f00dU, "8 write_imm immediate", imm, 0xa5a5f00dU);
	same = !std::memcmp(srv.mem.data() + 0x5000, cli.mem.data(), 200);
	check(same, "8 write_imm data", same, 1);

	// 9: Immediate Data alone, with SE.
	ibv_wr_start(cli.qpx);
	cli.qpx->wr_id = 9;
	cli.qpx->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED;
	xiwdv_wr_imm64(cli.qpx, 0x0123456789abcdefULL);
	complete("9 imm64");
	cli_done("9 imm64+se", IBV_WC_SEND);
	srv_recv("9 imm64+se", 4, IBV_WC_RECV_RDMA_WITH_IMM, 0, &imm);
	check(imm == 0x0123456789abcdefULL, "9 imm64 immediate", imm,
	      0x0123456789abcdefULL);

	// 10: Send with Invalidate of an STag srv cannot invalidate.
	fill(cli.mem.data(), 64, 10);
	ibv_wr_start(cli.qpx);
	cli.qpx->wr_id = 10;
	cli.qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send_inv(cli.qpx, kBogusStag);
	ibv_wr_set_sge(cli.qpx, cli.mr->lkey, cli.at(0), 64);
	complete("10 send_inv");
	ibv_wc wc = srv.poll("10 send_inv");
	check(wc.status == IBV_WC_REM_INV_REQ_ERR && wc.wr_id == 105,
	      "10 send_inv: receive status REM_INV_REQ_ERR", wc.status,
	      IBV_WC_REM_INV_REQ_ERR);
	wc = cli.poll("10 send_inv");
	std::printf("info send_inv requester status %d (%s)\n", wc.status,
		    ibv_wc_status_str(wc.status));
	check(wc.wr_id == 10, "10 send_inv: requester completion", wc.wr_id,
	      10);

	// An orderly close: both ids see DISCONNECTED before the process
	// exits (destroying a connected id would abort it with a RST).
	rdma_disconnect(cli.id);
	rdma_disconnect(srv.id);
	same = disconnected(pair.cch);
	check(same, "active side DISCONNECTED", same, 1);
	same = disconnected(pair.sch);
	check(same, "passive side DISCONNECTED", same, 1);

	std::printf("%s: %d failure(s)\n", failures ? "FAIL" : "ok", failures);
	return failures ? 1 : 0;
}
