// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// A raw TCP peer that speaks MPA (RFC 5044 / RFC 6581) by hand, its frames
// built and parsed through rfc_wire.h (the RFCs' layouts written out
// independently of kernel/xiw_wire.h, the header under test), to drive the
// xiw connection manager through its reject, timeout and bad-input paths.
//
//   xiw_mpa_peer listen ADDR PORT MODE     one connection, as MPA responder
//       MODE: reject   reply R with private data "go away"
//             silent   never reply (initiator timeout)
//             markers  reply asking for markers
//             badkey   reply with a wrong key
//             accept   valid rev 2 reply (no p2p), then wait for EOF
//             accept-hold  the same, but keep the socket open 3 s after EOF
//   xiw_mpa_peer connect ADDR PORT MODE    as MPA initiator
//       MODE: good     rev 2, p2p Write|Read RTR, IRD 8 ORD 4, pdata "hello"
//             rev1     rev 1, pdata "hello"
//             markers  request asking for markers (expect a reject)
//             badrev   revision 3 (expect a reject)
//             badkey   wrong key (expect a close)
//             pdlen    PD_Length 600 (expect a close)
//             trunc    10 bytes, then close
//             silent   send nothing (expect a close by the responder timer)
//
// Prints one line per fact ("reply flags=0x.. rev=.. pd=..", "closed after
// N ms", "request ...") and exits 0 unless a system call failed (2) or the
// peer did something impossible (1).
#include "raw_stream.h"
#include "rfc_wire.h"

#include <arpa/inet.h>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string>
#include <string_view>
#include <sys/socket.h>
#include <unistd.h>
#include <vector>

namespace {

using u8 = uint8_t;
using u16 = uint16_t;
using Clock = std::chrono::steady_clock;
namespace mpa = rfc::mpa;

[[noreturn]] void die(const char *what)
{
	std::perror(what);
	std::exit(2);
}

addrinfo *resolve(const char *host, const char *port, bool passive)
{
	addrinfo hints{};
	addrinfo *res = nullptr;

	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = passive ? AI_PASSIVE : 0;
	if (int rv = getaddrinfo(host, port, &hints, &res); rv) {
		std::fprintf(stderr, "getaddrinfo %s: %s\n", host, gai_strerror(rv));
		std::exit(2);
	}
	return res;
}

void send_all(int fd, const std::vector<u8> &b)
{
	size_t off = 0;

	while (off < b.size()) {
		ssize_t n = send(fd, b.data() + off, b.size() - off, MSG_NOSIGNAL);
		if (n <= 0)
			die("send");
		off += n;
	}
}

// Read exactly n bytes; false on EOF/reset or after timeout_ms.
bool recv_n(int fd, u8 *p, size_t n, int timeout_ms)
{
	auto end = Clock::now() + std::chrono::milliseconds(timeout_ms);

	while (n) {
		pollfd pfd{fd, POLLIN, 0};
		int left = std::chrono::duration_cast<std::chrono::milliseconds>(
				   end - Clock::now()).count();
		if (left <= 0 || poll(&pfd, 1, left) <= 0)
			return false;
		ssize_t r = recv(fd, p, n, 0);
		if (r <= 0)
			return false;
		p += r;
		n -= r;
	}
	return true;
}

// Wait until the peer closes; prints how long it took. false on timeout.
bool wait_close(int fd, int timeout_ms, Clock::time_point t0)
{
	auto end = t0 + std::chrono::milliseconds(timeout_ms);
	u8 buf[256];

	for (;;) {
		pollfd pfd{fd, POLLIN, 0};
		int left = std::chrono::duration_cast<std::chrono::milliseconds>(
				   end - Clock::now()).count();
		if (left <= 0 || poll(&pfd, 1, left) <= 0) {
			std::printf("still open after %d ms\n", timeout_ms);
			return false;
		}
		ssize_t r = recv(fd, buf, sizeof(buf), 0);
		if (r <= 0) {
			auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
					  Clock::now() - t0).count();
			std::printf("closed after %lld ms%s\n", (long long)ms,
				    r < 0 ? " (reset)" : "");
			return true;
		}
		std::printf("got %zd bytes of data\n", r);
	}
}

std::vector<u8> frame(std::string_view key, u8 flags, u8 rev, bool v2, u16 ird,
		      u16 ord, std::string_view pd, int pd_len_override = -1)
{
	return mpa::frame(key, flags, rev, v2, ird, ord, pd, pd_len_override);
}

// What read_rr() got: the frame's fixed part, copied out.
struct Rr {
	u8 hdr[mpa::kFrameHdrLen];
	u8 flags, rev;
};

// Read a Request/Reply and print it. false if the stream ended first.
bool read_rr(int fd, const char *what, Rr *rr, std::vector<u8> *pd,
	     int timeout_ms)
{
	if (!recv_n(fd, rr->hdr, mpa::kFrameHdrLen, timeout_ms)) {
		std::printf("no %s (closed or timeout)\n", what);
		return false;
	}
	mpa::Header h = mpa::parse(rr->hdr);
	rr->flags = h.flags;
	rr->rev = h.rev;
	u16 n = h.pd_len;
	pd->resize(n);
	if (n && !recv_n(fd, pd->data(), n, timeout_ms)) {
		std::printf("truncated %s\n", what);
		return false;
	}
	std::printf("%s key=%.16s flags=0x%02x rev=%u pd=%u", what,
		    h.key.data(), h.flags, h.rev, n);
	size_t off = 0;
	if ((h.flags & mpa::kFlagS) && n >= mpa::kV2Len) {
		std::printf(" ird=0x%04x ord=0x%04x", rfc::get16(pd->data()),
			    rfc::get16(pd->data() + 2));
		off = mpa::kV2Len;
	}
	std::printf(" data=\"%.*s\"\n", int(n - off),
		    reinterpret_cast<const char *>(pd->data() + off));
	return true;
}

int do_listen(const char *host, const char *port, std::string_view mode)
{
	int fd = raw::listen_accept(host, port, "listening");

	if (fd < 0)
		die("listen/accept");
	auto t0 = Clock::now();
	Rr rr;
	std::vector<u8> pd;
	if (!read_rr(fd, "request", &rr, &pd, 20000))
		return 1;
	bool v2 = rr.rev == mpa::kRev2 && (rr.flags & mpa::kFlagS);

	if (mode == "reject") {
		send_all(fd, frame(mpa::kKeyRep, mpa::kFlagR, rr.rev, v2, 0, 0,
				   "go away"));
	} else if (mode == "markers") {
		send_all(fd, frame(mpa::kKeyRep, mpa::kFlagM, rr.rev, v2, 4, 4,
				   ""));
	} else if (mode == "badkey") {
		send_all(fd, frame("MPA ID Bad Frame", 0, rr.rev, v2, 4, 4, ""));
	} else if (mode == "accept" || mode == "accept-hold") {
		send_all(fd, frame(mpa::kKeyRep, 0, rr.rev, v2, 4, 4, "ok"));
	} else if (mode != "silent") {
		std::fprintf(stderr, "unknown mode\n");
		return 2;
	}
	std::fflush(stdout);
	wait_close(fd, 30000, t0);
	if (mode == "accept-hold") {
		// half-closed: never answer the initiator's FIN with ours
		sleep(3);
		std::printf("closing after the hold\n");
	}
	close(fd);
	return 0;
}

int do_connect(const char *host, const char *port, std::string_view mode)
{
	addrinfo *ai = resolve(host, port, false);
	int fd = socket(ai->ai_family, SOCK_STREAM, 0), one = 1;

	if (fd < 0)
		die("socket");
	if (connect(fd, ai->ai_addr, ai->ai_addrlen))
		die("connect");
	freeaddrinfo(ai);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	auto t0 = Clock::now();
	const u16 p2p_ird = mpa::kIrdP2P | 8;
	const u16 p2p_ord = mpa::kOrdRtrWrite | mpa::kOrdRtrRead | 4;
	Rr rr;
	std::vector<u8> pd;

	if (mode == "good") {
		send_all(fd, frame(mpa::kKeyReq, 0, 2, true, p2p_ird, p2p_ord,
				   "hello"));
	} else if (mode == "rev1") {
		send_all(fd, frame(mpa::kKeyReq, 0, 1, false, 0, 0, "hello"));
	} else if (mode == "markers") {
		send_all(fd, frame(mpa::kKeyReq, mpa::kFlagM, 2, true, 8, 4,
				   "hello"));
	} else if (mode == "badrev") {
		send_all(fd, frame(mpa::kKeyReq, 0, 3, false, 0, 0, "hello"));
	} else if (mode == "badkey") {
		send_all(fd, frame("MPA ID Bad Frame", 0, 2, true, 8, 4, "hello"));
	} else if (mode == "pdlen") {
		send_all(fd, frame(mpa::kKeyReq, 0, 2, true, 8, 4, "hello", 600));
	} else if (mode == "trunc") {
		auto b = frame(mpa::kKeyReq, 0, 2, true, 8, 4, "hello");
		b.resize(10);
		send_all(fd, b);
		close(fd);
		std::printf("sent 10 bytes and closed\n");
		return 0;
	} else if (mode != "silent") {
		std::fprintf(stderr, "unknown mode\n");
		return 2;
	}
	if (mode != "silent" && mode != "badkey" && mode != "pdlen")
		read_rr(fd, "reply", &rr, &pd, 20000);
	if (mode == "rev1") {
		// connected without RTR: the initiator ends it (FIN)
		close(fd);
		std::printf("closed by us\n");
		return 0;
	}
	std::fflush(stdout);
	wait_close(fd, 30000, t0);
	close(fd);
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	setvbuf(stdout, nullptr, _IOLBF, 0);
	if (argc != 5) {
		std::fprintf(stderr, "usage: %s listen|connect ADDR PORT MODE\n",
			     argv[0]);
		return 2;
	}
	std::string_view role = argv[1];
	if (role == "listen")
		return do_listen(argv[2], argv[3], argv[4]);
	if (role == "connect")
		return do_connect(argv[2], argv[3], argv[4]);
	return 2;
}
