// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// xiw_tcp_pingpong: the TCP floor under the latency rows of make bench.
//
//   xiw_tcp_pingpong -s ADDR PORT            serve one client, then exit
//   xiw_tcp_pingpong -c ADDR PORT [-n N] [-l BYTES] [--block]
//
// The client sends BYTES (default 8) over one TCP connection (TCP_NODELAY),
// the server echoes them, N times (default 2000, after 100 warm-up
// rounds). Both sides busy-poll with non-blocking recv() by default, as
// perftest's latency tools busy-poll their CQ or memory, so no wakeup or
// context switch is counted: what is left is what two processes on plain
// TCP sockets pay per message each way, the exchange an RDMA stack over
// kernel TCP (xiw, siw) does in the kernel. --block uses blocking recv()
// on both sides (qperf's tcp_lat).
//
// Output, one line: "rtt_us typical=T min=M p99=P half=H n=N bytes=B"
// (typical is the median round trip, half is typical / 2, comparable with
// perftest's one-way ib_write_lat / ib_send_lat figures; ib_read_lat and
// ib_atomic_lat report a whole round trip).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

namespace {

[[noreturn]] void die(const char *what)
{
	std::fprintf(stderr, "xiw_tcp_pingpong: %s: %s\n", what,
		     std::strerror(errno));
	std::exit(1);
}

sockaddr_in parse_addr(const char *addr, const char *port)
{
	sockaddr_in sa{};

	sa.sin_family = AF_INET;
	sa.sin_port = htons(static_cast<uint16_t>(std::atoi(port)));
	if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
		std::fprintf(stderr, "xiw_tcp_pingpong: bad address %s\n", addr);
		std::exit(2);
	}
	return sa;
}

void nodelay(int fd)
{
	int one = 1;

	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)))
		die("TCP_NODELAY");
}

// Receive exactly len bytes; spin on MSG_DONTWAIT unless blocking.
// False when the peer closed.
bool recv_all(int fd, char *buf, size_t len, bool block)
{
	size_t got = 0;

	while (got < len) {
		ssize_t r = recv(fd, buf + got, len - got,
				 block ? 0 : MSG_DONTWAIT);

		if (r > 0) {
			got += static_cast<size_t>(r);
			continue;
		}
		if (r == 0)
			return false;
		if (errno != EAGAIN && errno != EINTR)
			die("recv");
	}
	return true;
}

void send_all(int fd, const char *buf, size_t len)
{
	size_t sent = 0;

	while (sent < len) {
		ssize_t r = send(fd, buf + sent, len - sent, MSG_NOSIGNAL);

		if (r < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			die("send");
		}
		sent += static_cast<size_t>(r);
	}
}

// What the client sends first: message size and mode (host order: both
// ends are on one host).
struct hello {
	uint32_t bytes;
	uint32_t block;
};

int serve(const sockaddr_in &sa)
{
	int one = 1;
	int ls = socket(AF_INET, SOCK_STREAM, 0);

	if (ls < 0)
		die("socket");
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(ls, reinterpret_cast<const sockaddr *>(&sa), sizeof(sa)))
		die("bind");
	if (listen(ls, 1))
		die("listen");
	int fd = accept(ls, nullptr, nullptr);

	if (fd < 0)
		die("accept");
	close(ls);
	nodelay(fd);
	hello h{};

	if (!recv_all(fd, reinterpret_cast<char *>(&h), sizeof(h), true))
		return 1;
	if (h.bytes == 0 || h.bytes > (1u << 20)) {
		std::fprintf(stderr, "xiw_tcp_pingpong: bad size %u\n", h.bytes);
		return 1;
	}
	std::vector<char> buf(h.bytes);

	while (recv_all(fd, buf.data(), buf.size(), h.block))
		send_all(fd, buf.data(), buf.size());
	close(fd);
	return 0;
}

int ping(const sockaddr_in &sa, int n, uint32_t bytes, bool block)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0)
		die("socket");
	if (connect(fd, reinterpret_cast<const sockaddr *>(&sa), sizeof(sa)))
		die("connect");
	nodelay(fd);
	hello h{bytes, block ? 1u : 0u};

	send_all(fd, reinterpret_cast<const char *>(&h), sizeof(h));
	std::vector<char> buf(bytes, 'x');
	std::vector<double> us;

	us.reserve(static_cast<size_t>(n));
	for (int i = -100; i < n; i++) {
		auto t0 = std::chrono::steady_clock::now();

		send_all(fd, buf.data(), buf.size());
		if (!recv_all(fd, buf.data(), buf.size(), block)) {
			std::fprintf(stderr, "xiw_tcp_pingpong: server closed\n");
			return 1;
		}
		auto t1 = std::chrono::steady_clock::now();

		if (i >= 0)
			us.push_back(std::chrono::duration<double, std::micro>(
					     t1 - t0).count());
	}
	close(fd);
	std::sort(us.begin(), us.end());
	double typ = us[us.size() / 2];

	std::printf("rtt_us typical=%.2f min=%.2f p99=%.2f half=%.2f n=%d bytes=%u\n",
		    typ, us.front(), us[us.size() * 99 / 100], typ / 2, n,
		    bytes);
	return 0;
}

void usage()
{
	std::fprintf(stderr,
		     "usage: xiw_tcp_pingpong -s ADDR PORT\n"
		     "       xiw_tcp_pingpong -c ADDR PORT [-n N] [-l BYTES] [--block]\n");
	std::exit(2);
}

} // namespace

int main(int argc, char **argv)
{
	if (argc < 4)
		usage();
	std::string_view mode = argv[1];
	sockaddr_in sa = parse_addr(argv[2], argv[3]);
	int n = 2000;
	uint32_t bytes = 8;
	bool block = false;

	for (int i = 4; i < argc; i++) {
		std::string_view a = argv[i];

		if (a == "-n" && i + 1 < argc)
			n = std::atoi(argv[++i]);
		else if (a == "-l" && i + 1 < argc)
			bytes = static_cast<uint32_t>(std::atoi(argv[++i]));
		else if (a == "--block")
			block = true;
		else
			usage();
	}
	if (n <= 0 || bytes == 0 || bytes > (1u << 20))
		usage();
	if (mode == "-s")
		return serve(sa);
	if (mode == "-c")
		return ping(sa, n, bytes, block);
	usage();
}
