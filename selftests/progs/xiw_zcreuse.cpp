// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// xiw_zcreuse: a completion means the buffer is free.
//
// One process connects two QPs through rdma_cm (cm_pair.h) and sends ROUNDS
// messages of SIZE bytes, all from ONE source buffer that it reuses as the
// verbs rules allow: round i fills the buffer with pattern(i), posts the
// message, waits for a signaled completion that comes after it, then at
// once overwrites the whole buffer with a scribble pattern before the next
// round. If the provider reports that completion while TCP still references
// the buffer's pages (queued behind a netem delay, or held for a
// retransmission after a loss), the peer receives scribble bytes: every
// byte of every message is checked at the peer.
//
// The rounds cycle through four ways a consumer learns that its buffer is
// free: an unsignaled RDMA Write followed by a signaled 8-byte Write; an
// unsignaled Send followed by the same; a signaled RDMA Write; a signaled
// Send. Writes land in their own slot of the peer's sink region, Sends in
// their own receive buffer. A final Send orders after every placement.
//
// Prints one "ok"/"FAIL" line per check and a throughput figure; exit
// status 0 only if every byte arrived as sent.
//
// --flush DROP RESTORE: the error paths. The shell command DROP makes the
// path drop every segment; one signaled SIZE-byte RDMA Write is posted
// (TCP keeps it unacknowledged), the connection is closed
// (rdma_disconnect), and the WR's completion, whatever its status, is
// taken as the verbs rules allow: the buffer is free, it is scribbled over
// at once. Then RESTORE lets segments through again and the peer's sink is
// watched for 10 s: it must hold the Write's bytes or its old contents,
// never a scribble byte (TCP retransmitting from pages a completion
// released), and the WR must not complete successfully (nothing arrived).
//
// --flush DROP RESTORE SIZE CLOSE: the QP fails under the shell command
// CLOSE instead of rdma_disconnect (the netdev going down), while DROP
// keeps the Write's segments queued below TCP, so that the network stack
// holds its pages. Printed: "# close command took MS ms". Then, before
// RESTORE: no completion may come (the pages are still held), and an
// 8-byte Write posted now (the QP in ERROR) must not complete either,
// since it is later. After RESTORE (which must free the queued segments)
// both complete with IBV_WC_WR_FLUSH_ERR, the held Write first; the
// buffer is scribbled over and the peer's sink watched as above.
//
// Usage: xiw_zcreuse ADDR PORT [ROUNDS [SIZE]]
//        xiw_zcreuse ADDR PORT --flush DROP RESTORE [SIZE [CLOSE]]
#include "verbs_side.h"

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <thread>
#include <vector>

namespace {

using cm_pair::die;

constexpr uint64_t kScribble = 0xa5a5a5a5a5a5a5a5ULL;

// Word w of round r: never equal to the scribble, different per round.
uint64_t pattern(uint32_t round, size_t w)
{
	return (uint64_t(round + 1) << 40) ^ (uint64_t(w) * 0x9e3779b1ULL) ^
	       0x1122334455667788ULL;
}

using cm_pair::Side;
using cm_pair::SideOpts;

constexpr uint64_t kUntouched = 0x0f0f0f0f0f0f0f0fULL;

void run_cmd(const char *what, const char *cmd)
{
	if (std::system(cmd) != 0) {
		std::fprintf(stderr, "%s command failed: %s\n", what, cmd);
		std::exit(2);
	}
}

// --flush with CLOSE, after the Write was posted: see the head of the file.
int flush_close_case(Side &cli, const char *close_cmd, const char *restore)
{
	auto t0 = std::chrono::steady_clock::now();
	run_cmd("CLOSE", close_cmd);
	std::printf("# close command took %.0f ms\n",
		    std::chrono::duration<double, std::milli>(
			    std::chrono::steady_clock::now() - t0).count());
	std::fflush(stdout);
	auto wc = cli.poll(1, 300);
	if (!wc.empty()) {
		std::printf("FAIL wr_id %" PRIu64 " completed (%s) before RESTORE freed the segments holding the Write's pages\n",
			    wc[0].wr_id, ibv_wc_status_str(wc[0].status));
		return 1;
	}
	uint64_t *later = reinterpret_cast<uint64_t *>(cli.mem.data());
	if (cli.post(IBV_WR_RDMA_WRITE, 2, later, 8, true, 0, 0))
		die("ibv_post_send in ERROR");
	wc = cli.poll(1, 300);
	if (!wc.empty()) {
		std::printf("FAIL wr_id %" PRIu64 " completed (%s) before the Write posted ahead of it\n",
			    wc[0].wr_id, ibv_wc_status_str(wc[0].status));
		return 1;
	}
	run_cmd("RESTORE", restore);
	wc = cli.poll(2, 10000);
	if (wc.size() != 2) {
		std::printf("FAIL %zu of 2 completions within 10 s of RESTORE\n",
			    wc.size());
		return 1;
	}
	for (size_t i = 0; i < 2; i++) {
		if (wc[i].wr_id != i + 1 ||
		    wc[i].status != IBV_WC_WR_FLUSH_ERR) {
			std::printf("FAIL completion %zu: wr_id %" PRIu64 " %s, expected wr_id %zu %s\n",
				    i + 1, wc[i].wr_id,
				    ibv_wc_status_str(wc[i].status), i + 1,
				    ibv_wc_status_str(IBV_WC_WR_FLUSH_ERR));
			return 1;
		}
	}
	std::printf("ok the held Write and the later one completed after RESTORE, in order, %s\n",
		    ibv_wc_status_str(IBV_WC_WR_FLUSH_ERR));
	return 0;
}

// --flush: see the head of the file.
int flush_case(const char *addr, const char *port, const char *drop,
	       const char *restore, uint32_t size, const char *close_cmd)
{
	const size_t words = size / sizeof(uint64_t);
	Side srv, cli;
	cm_pair::Pair pair(addr, port);
	rdma_conn_param p{};
	rdma_cm_id *passive;
	SideOpts co, so;

	p.responder_resources = 1;
	p.initiator_depth = 1;
	co.mem_bytes = so.mem_bytes = size;
	pair.connect([&](rdma_cm_id *id) { cli.setup(id, co); },
		     [&](rdma_cm_id *id) { srv.setup(id, so); }, p, p,
		     &passive);

	uint64_t *src = reinterpret_cast<uint64_t *>(cli.mem.data());
	volatile uint64_t *sink =
		reinterpret_cast<uint64_t *>(srv.mem.data());

	for (size_t w = 0; w < words; w++) {
		src[w] = pattern(0, w);
		sink[w] = kUntouched;
	}
	run_cmd("DROP", drop);
	if (cli.post(IBV_WR_RDMA_WRITE, 1, src, size, true,
		     (uintptr_t)srv.mem.data(), srv.mr->rkey))
		die("ibv_post_send");
	std::this_thread::sleep_for(std::chrono::milliseconds(300));
	if (!cli.poll(1, 1).empty()) {
		std::printf("FAIL the Write completed while every segment was dropped\n");
		return 1;
	}
	auto t0 = std::chrono::steady_clock::now();
	std::vector<ibv_wc> wc;
	if (close_cmd) {
		if (flush_close_case(cli, close_cmd, restore))
			return 1;
		wc.push_back(ibv_wc{});
		wc[0].status = IBV_WC_WR_FLUSH_ERR;
		wc[0].wr_id = 1;
	} else {
		if (rdma_disconnect(cli.id))
			die("rdma_disconnect");
		wc = cli.poll(1, 60000);
		if (wc.empty()) {
			std::printf("FAIL no completion within 60 s of the disconnect\n");
			return 1;
		}
	}
	// The buffer is free: reuse it at once.
	for (size_t w = 0; w < words; w++)
		src[w] = kScribble;
	double ms = std::chrono::duration<double, std::milli>(
			    std::chrono::steady_clock::now() - t0).count();
	if (!close_cmd)
		run_cmd("RESTORE", restore);

	size_t old = 0, scribbled = 0, other = 0, first = words;
	auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
	do {
		std::this_thread::sleep_for(std::chrono::milliseconds(100));
		old = scribbled = other = 0;
		first = words;
		for (size_t w = 0; w < words; w++) {
			uint64_t v = sink[w];

			if (v == kUntouched)
				continue;
			if (v == pattern(0, w))
				old++;
			else if (v == kScribble)
				scribbled++;
			else
				other++;
			if (v != pattern(0, w) && first == words)
				first = w;
		}
	} while (!scribbled && !other && old < words &&
		 std::chrono::steady_clock::now() < end);

	int failures = 0;
	std::printf("# completion %s (wr_id %" PRIu64 ") %.0f ms after the disconnect; the peer holds %zu of %zu words as written, %zu untouched\n",
		    ibv_wc_status_str(wc[0].status), wc[0].wr_id, ms, old,
		    words, words - old - scribbled - other);
	if (wc[0].status == IBV_WC_SUCCESS && old < words) {
		failures++;
		std::printf("FAIL the Write completed successfully but only %zu of %zu words arrived\n",
			    old, words);
	}
	if (scribbled || other) {
		failures++;
		std::printf("FAIL the peer received bytes written after the completion: %zu words of scribble, %zu other, first at byte %zu\n",
			    scribbled, other, first * 8);
	}
	if (!failures)
		std::printf("ok flushed zero-copy Write: the peer saw the old bytes or nothing, no false success\n");
	cli.teardown();
	srv.teardown();
	return failures ? 1 : 0;
}

} // namespace

int main(int argc, char **argv)
{
	if (argc < 3) {
		std::fprintf(stderr, "usage: %s ADDR PORT [ROUNDS [SIZE]]\n",
			     argv[0]);
		return 2;
	}
	if (argc > 3 && !std::strcmp(argv[3], "--flush")) {
		if (argc < 6) {
			std::fprintf(stderr, "usage: %s ADDR PORT --flush DROP RESTORE [SIZE [CLOSE]]\n",
				     argv[0]);
			return 2;
		}
		return flush_case(argv[1], argv[2], argv[4], argv[5],
				  argc > 6 ? std::atoi(argv[6]) : 65536,
				  argc > 7 ? argv[7] : nullptr);
	}
	const uint32_t rounds = argc > 3 ? std::atoi(argv[3]) : 64;
	const uint32_t size = argc > 4 ? std::atoi(argv[4]) : 65536;
	const size_t words = size / sizeof(uint64_t);
	if (!rounds || size < 4096 || size % 8) {
		std::fprintf(stderr, "ROUNDS >= 1, SIZE >= 4096 and a multiple of 8\n");
		return 2;
	}

	Side srv, cli;
	cm_pair::Pair pair(argv[1], argv[2]);
	rdma_conn_param p{};
	p.responder_resources = 1;
	p.initiator_depth = 1;
	rdma_cm_id *passive;
	// srv: a sink slot and a receive buffer per round, plus the token.
	// cli: the one reused source buffer, then the 8-byte token.
	SideOpts co, so;
	co.depth = so.depth = 2 * rounds + 8;
	co.mem_bytes = (words + 1) * 8;
	so.mem_bytes = (2 * words * rounds + 1) * 8;
	pair.connect([&](rdma_cm_id *id) { cli.setup(id, co); },
		     [&](rdma_cm_id *id) { srv.setup(id, so); }, p, p,
		     &passive);

	uint64_t *src = reinterpret_cast<uint64_t *>(cli.mem.data());
	uint64_t *tok = src + words;
	uint64_t *sink = reinterpret_cast<uint64_t *>(srv.mem.data());	// Write slots
	uint64_t *rbuf = sink + words * rounds;		// Send buffers
	uint64_t *stok = rbuf + words * rounds;
	const uint64_t raddr = (uintptr_t)sink;
	const uint32_t rkey = srv.mr->rkey;

	uint32_t sends = 0;
	for (uint32_t r = 0; r < rounds; r++)
		if (r % 2)
			srv.post_recv(r, rbuf + words * r, size);
	srv.post_recv(rounds, stok, 8);			// final Send
	for (uint32_t r = 0; r < rounds; r++)
		sends += r % 2;

	auto t0 = std::chrono::steady_clock::now();
	uint32_t recvd = 0;
	for (uint32_t r = 0; r < rounds; r++) {
		const bool send = r % 2;
		const bool self_signaled = r % 4 >= 2;
		const ibv_wr_opcode op = send ? IBV_WR_SEND : IBV_WR_RDMA_WRITE;

		for (size_t w = 0; w < words; w++)
			src[w] = pattern(r, w);
		if (cli.post(op, r, src, size, self_signaled,
			     raddr + uint64_t(r) * size, rkey))
			die("ibv_post_send");
		if (!self_signaled) {
			// a later signaled WR: 8 bytes into the token word
			*tok = r;
			if (cli.post(IBV_WR_RDMA_WRITE, 1000000 + r, tok, 8,
				     true, (uintptr_t)stok, rkey))
				die("ibv_post_send");
		}
		ibv_wc wc = cli.poll_ok();
		if (wc.wr_id != (self_signaled ? r : 1000000 + r)) {
			std::fprintf(stderr, "round %u: completion wr_id %" PRIu64 "\n",
				     r, wc.wr_id);
			return 2;
		}
		// The buffer is free: reuse it at once.
		for (size_t w = 0; w < words; w++)
			src[w] = kScribble;
		// Keep the receive CQ drained (no overflow).
		ibv_wc rwc;
		while (ibv_poll_cq(srv.cq, 1, &rwc) > 0) {
			if (rwc.status != IBV_WC_SUCCESS) {
				std::fprintf(stderr, "receive: %s\n",
					     ibv_wc_status_str(rwc.status));
				return 2;
			}
			recvd++;
		}
	}
	// A last Send: placed after every earlier message of the stream.
	*tok = 0x5eed;
	if (cli.post(IBV_WR_SEND, 2000000, tok, 8))
		die("ibv_post_send");
	cli.poll_ok();
	while (recvd < sends + 1) {
		srv.poll_ok();
		recvd++;
	}
	double secs = std::chrono::duration<double>(
			      std::chrono::steady_clock::now() - t0).count();

	int failures = 0;
	for (uint32_t r = 0; r < rounds; r++) {
		const uint64_t *got = (r % 2 ? rbuf : sink) + words * r;
		size_t bad = 0, scribbled = 0, first = words;

		for (size_t w = 0; w < words; w++) {
			if (got[w] == pattern(r, w))
				continue;
			bad++;
			scribbled += got[w] == kScribble;
			if (first == words)
				first = w;
		}
		if (bad) {
			failures++;
			std::printf("FAIL round %u (%s, %s): %zu of %zu words wrong, %zu of them the scribble written after the completion, first at byte %zu\n",
				    r, r % 2 ? "Send" : "RDMA Write",
				    r % 4 >= 2 ? "signaled" : "unsignaled, later signaled Write",
				    bad, words, scribbled, first * 8);
		}
	}
	std::printf("%s %u messages of %u bytes from one reused buffer, every byte checked at the peer (%.1f MB/s)\n",
		    failures ? "FAIL" : "ok", rounds, size,
		    rounds * double(size) / secs / 1e6);

	rdma_disconnect(cli.id);
	cli.teardown();
	srv.teardown();
	return failures ? 1 : 0;
}
