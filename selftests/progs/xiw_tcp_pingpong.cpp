// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// xiw_tcp_pingpong: the TCP floors under make bench's rows, measured by
// two processes on plain TCP sockets over the path the devices use.
//
//   xiw_tcp_pingpong -s ADDR PORT            serve one client, then exit
//   xiw_tcp_pingpong -c ADDR PORT [-n N] [-l BYTES] [--block] [--warmup W]
//   xiw_tcp_pingpong -c ADDR PORT --echo [-n N] [-w WINDOW]
//   xiw_tcp_pingpong -c ADDR PORT --stream [-n WRITES] [-l BYTES]
//
// The client tells the server the mode in its first message.
//
// Ping-pong (default; the latency floor): the client sends BYTES (default
// 8) over one TCP connection (TCP_NODELAY), the server echoes them, N
// times (default 2000, after W warm-up rounds, default 100). Both sides
// busy-poll with non-blocking recv() by default, as perftest's latency
// tools busy-poll their CQ or memory, so no wakeup or context switch is
// counted: what is left is what two processes on plain TCP sockets pay per
// message each way, the exchange an RDMA stack over kernel TCP (xiw, siw)
// does in the kernel. --block uses blocking recv() on both sides (qperf's
// tcp_lat). Every answer must carry the round's number the client put in
// its first bytes.
//   Output: "rtt_us typical=T min=M p99=P half=H n=N bytes=B"
// (typical is the median round trip, half is typical / 2, comparable with
// perftest's one-way ib_write_lat / ib_send_lat figures; ib_read_lat and
// ib_atomic_lat report a whole round trip).
//
// Echo (--echo; the message-rate floor under the FetchAdd rate): requests
// of exactly the wire size of an RFC 7306 FetchAdd request FPDU (MPA
// length, DDP and RDMAP headers, the atomic request header, pad, CRC:
// kernel/xiw_wire.h's structs, so the sizes follow xiw's), answers of the
// wire size of an Atomic Response FPDU. The client keeps WINDOW requests
// outstanding (default 128: what perftest's ib_atomic_bw keeps in flight
// on xiw, the lesser of its TX depth and the device's max_qp_rd_atom) and
// sends the refills for all the answers one recv() brought in one send();
// the server reads all it has and answers every whole request in one
// send(). Both busy-poll. The server adds each request's Add Data to a
// counter and answers with the counter's value before the add, as a
// FetchAdd does; the client checks every answer's Request Identifier and
// original value. N answers are timed (default 100000) after a warm-up of
// 4 windows.
//   Output: "echo_mpps rate=R msgs=N window=W req_bytes=Q resp_bytes=P
//   checked=C seconds=S"
//
// Stream (--stream; the bandwidth floor): the client writes N times
// (default 2000) BYTES (default 65536) with non-blocking send(), spinning
// on a full socket; the server busy-polls recv() and, when it has all,
// answers with the count it received, which the client checks. Timed from
// the first write to that answer. MB/s are MiB/s, as perftest's.
//   Output: "stream_mbs rate=R bytes=T writes=N size=B seconds=S"
//
// The server prints what it served ("served MODE ...") on stdout.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

#include "kcompat.h"
#include "xiw_wire.h"

namespace {

[[noreturn]] void die(const char *what)
{
	std::fprintf(stderr, "xiw_tcp_pingpong: %s: %s\n", what,
		     std::strerror(errno));
	std::exit(1);
}

[[noreturn]] void bad(const char *what)
{
	std::fprintf(stderr, "xiw_tcp_pingpong: %s\n", what);
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

// Receive what is there (at least one byte), busy-polling; 0 when the
// peer closed.
size_t recv_some(int fd, char *buf, size_t len)
{
	for (;;) {
		ssize_t r = recv(fd, buf, len, MSG_DONTWAIT);

		if (r > 0)
			return static_cast<size_t>(r);
		if (r == 0)
			return 0;
		if (errno != EAGAIN && errno != EINTR)
			die("recv");
	}
}

// Send all of buf; non-blocking sends spin while the socket is full.
void send_all(int fd, const char *buf, size_t len, bool nonblock = false)
{
	size_t sent = 0;
	int flags = MSG_NOSIGNAL | (nonblock ? MSG_DONTWAIT : 0);

	while (sent < len) {
		ssize_t r = send(fd, buf + sent, len - sent, flags);

		if (r < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			die("send");
		}
		sent += static_cast<size_t>(r);
	}
}

enum class mode : uint32_t { pingpong = 0, echo = 1, stream = 2 };

// What the client sends first (host order: both ends run this program).
// bytes: ping-pong message or stream write size; count: stream writes.
struct hello {
	uint32_t bytes;
	uint32_t block;
	uint32_t mode;
	uint32_t window;
	uint64_t count;
};

// The echo's messages: FPDUs as xiw puts them on the wire (no markers).
constexpr uint32_t req_ulpdu =
	sizeof(struct xiw_rdmap_atomic_req) - XIW_MPA_HDR_LEN;
constexpr uint32_t resp_ulpdu =
	sizeof(struct xiw_rdmap_atomic_resp) - XIW_MPA_HDR_LEN;
const size_t req_len = xiw_mpa_fpdu_len(req_ulpdu);
const size_t resp_len = xiw_mpa_fpdu_len(resp_ulpdu);

// Add Data of request i: nonzero and different from one request to the next
uint64_t add_of(uint64_t i)
{
	return (i * 0x9e3779b97f4a7c15ULL) | 1;
}

void put_req(char *p, uint64_t i)
{
	auto *r = reinterpret_cast<struct xiw_rdmap_atomic_req *>(p);

	std::memset(p, 0, req_len);
	r->hdr.ctrl.mpa_len = cpu_to_be16(req_ulpdu);
	r->hdr.ctrl.ddp = xiw_ddp_ctrl(false, true);
	r->hdr.ctrl.rdmap = xiw_rdmap_ctrl(XIW_RDMAP_OP_ATOMIC_REQ);
	r->hdr.qn = cpu_to_be32(XIW_QN_REQ);
	r->hdr.msn = cpu_to_be32(static_cast<uint32_t>(i + 1));
	r->aopcode = cpu_to_be32(XIW_AOP_FETCH_ADD);
	r->req_id = cpu_to_be32(static_cast<uint32_t>(i));
	r->add_swap = cpu_to_be64(add_of(i));
	r->cmp_mask = cpu_to_be64(~0ULL);
}

// Server side of the echo: answer every whole request of each read in
// one send, a FetchAdd on one counter.
uint64_t serve_echo(int fd)
{
	std::vector<char> in(std::max<size_t>(65536, 4 * req_len));
	std::vector<char> out(in.size() / req_len * resp_len);
	size_t have = 0;
	uint64_t served = 0, counter = 0;

	for (;;) {
		size_t r = recv_some(fd, in.data() + have, in.size() - have);

		if (!r)
			break;
		have += r;
		size_t k = have / req_len;

		for (size_t j = 0; j < k; j++) {
			const auto *q = reinterpret_cast<const struct xiw_rdmap_atomic_req *>(
				in.data() + j * req_len);
			auto *a = reinterpret_cast<struct xiw_rdmap_atomic_resp *>(
				out.data() + j * resp_len);

			if (be16toh(q->hdr.ctrl.mpa_len) != req_ulpdu)
				bad("echo: request of a wrong length");
			std::memset(a, 0, resp_len);
			a->hdr.ctrl.mpa_len = cpu_to_be16(resp_ulpdu);
			a->hdr.ctrl.ddp = xiw_ddp_ctrl(false, true);
			a->hdr.ctrl.rdmap = xiw_rdmap_ctrl(XIW_RDMAP_OP_ATOMIC_RESP);
			a->hdr.qn = cpu_to_be32(XIW_QN_RESP);
			a->hdr.msn = q->hdr.msn;
			a->req_id = q->req_id;
			a->orig = cpu_to_be64(counter);
			counter += be64toh(q->add_swap);
		}
		if (k)
			send_all(fd, out.data(), k * resp_len);
		served += k;
		have -= k * req_len;
		std::memmove(in.data(), in.data() + k * req_len, have);
	}
	if (have)
		bad("echo: the client closed inside a request");
	return served;
}

// Server side of the stream: count until all came, answer with the count.
uint64_t serve_stream(int fd, const hello &h)
{
	std::vector<char> buf(std::max<uint32_t>(h.bytes, 65536));
	uint64_t want = h.count * h.bytes, got = 0;

	while (got < want) {
		size_t r = recv_some(fd, buf.data(), buf.size());

		if (!r)
			bad("stream: the client closed early");
		got += r;
	}
	send_all(fd, reinterpret_cast<const char *>(&got), sizeof(got));
	// wait for the client's close: its answer must not meet a reset
	recv_some(fd, buf.data(), buf.size());
	return got;
}

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
	if (h.mode == static_cast<uint32_t>(mode::echo)) {
		uint64_t n = serve_echo(fd);

		std::printf("served echo requests=%llu\n",
			    static_cast<unsigned long long>(n));
		close(fd);
		return 0;
	}
	if (h.bytes == 0 || h.bytes > (8u << 20)) {
		std::fprintf(stderr, "xiw_tcp_pingpong: bad size %u\n", h.bytes);
		return 1;
	}
	if (h.mode == static_cast<uint32_t>(mode::stream)) {
		uint64_t n = serve_stream(fd, h);

		std::printf("served stream bytes=%llu\n",
			    static_cast<unsigned long long>(n));
		close(fd);
		return 0;
	}
	if (h.mode != static_cast<uint32_t>(mode::pingpong))
		bad("unknown mode");
	std::vector<char> buf(h.bytes);
	uint64_t rounds = 0;

	while (recv_all(fd, buf.data(), buf.size(), h.block)) {
		send_all(fd, buf.data(), buf.size());
		rounds++;
	}
	std::printf("served pingpong rounds=%llu\n",
		    static_cast<unsigned long long>(rounds));
	close(fd);
	return 0;
}

int connect_to(const sockaddr_in &sa, const hello &h)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0)
		die("socket");
	if (connect(fd, reinterpret_cast<const sockaddr *>(&sa), sizeof(sa)))
		die("connect");
	nodelay(fd);
	send_all(fd, reinterpret_cast<const char *>(&h), sizeof(h));
	return fd;
}

int ping(const sockaddr_in &sa, int n, uint32_t bytes, bool block, int warm)
{
	hello h{bytes, block ? 1u : 0u, static_cast<uint32_t>(mode::pingpong),
		0, 0};
	int fd = connect_to(sa, h);
	std::vector<char> buf(bytes, 'x');
	std::vector<double> us;
	size_t tag = std::min<size_t>(bytes, sizeof(uint32_t));

	us.reserve(static_cast<size_t>(n));
	for (int i = -warm; i < n; i++) {
		uint32_t round = static_cast<uint32_t>(i + warm), back = ~round;
		auto t0 = std::chrono::steady_clock::now();

		std::memcpy(buf.data(), &round, tag);
		send_all(fd, buf.data(), buf.size());
		if (!recv_all(fd, buf.data(), buf.size(), block))
			bad("server closed");
		auto t1 = std::chrono::steady_clock::now();

		std::memcpy(&back, buf.data(), tag);
		if (std::memcmp(&back, &round, tag))
			bad("ping-pong: an answer that is not the round's message");
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

int echo(const sockaddr_in &sa, uint64_t n, uint32_t window)
{
	hello h{0, 0, static_cast<uint32_t>(mode::echo), window, n};
	int fd = connect_to(sa, h);
	const uint64_t warm = 4ULL * window, total = warm + n;
	std::vector<char> out(window * req_len);
	std::vector<char> in(window * resp_len + 65536);
	uint64_t sent = 0, done = 0, expect = 0, checked = 0;
	size_t have = 0;
	auto t0 = std::chrono::steady_clock::now();

	for (;;) {
		// refill the window in one send
		uint64_t k = std::min<uint64_t>(total - sent,
						window - (sent - done));

		for (uint64_t j = 0; j < k; j++)
			put_req(out.data() + j * req_len, sent + j);
		if (k)
			send_all(fd, out.data(), k * req_len);
		sent += k;
		if (done == total)
			break;
		size_t r = recv_some(fd, in.data() + have, in.size() - have);

		if (!r)
			bad("echo: server closed");
		have += r;
		size_t m = have / resp_len;

		for (size_t j = 0; j < m; j++, done++) {
			const auto *a = reinterpret_cast<const struct xiw_rdmap_atomic_resp *>(
				in.data() + j * resp_len);

			if (done >= sent ||
			    be16toh(a->hdr.ctrl.mpa_len) != resp_ulpdu ||
			    be32toh(a->req_id) != static_cast<uint32_t>(done) ||
			    be64toh(a->orig) != expect)
				bad("echo: an answer that is not the request's");
			expect += add_of(done);
			if (done >= warm)
				checked++;
			if (done + 1 == warm)
				t0 = std::chrono::steady_clock::now();
		}
		have -= m * resp_len;
		std::memmove(in.data(), in.data() + m * resp_len, have);
	}
	auto t1 = std::chrono::steady_clock::now();
	double s = std::chrono::duration<double>(t1 - t0).count();

	close(fd);
	std::printf("echo_mpps rate=%.4f msgs=%llu window=%u req_bytes=%zu resp_bytes=%zu checked=%llu seconds=%.3f\n",
		    n / s / 1e6, static_cast<unsigned long long>(n), window,
		    req_len, resp_len, static_cast<unsigned long long>(checked),
		    s);
	return 0;
}

int stream(const sockaddr_in &sa, uint64_t n, uint32_t bytes)
{
	hello h{bytes, 0, static_cast<uint32_t>(mode::stream), 0, n};
	int fd = connect_to(sa, h);
	std::vector<char> buf(bytes, 's');
	uint64_t got = 0;
	auto t0 = std::chrono::steady_clock::now();

	for (uint64_t i = 0; i < n; i++)
		send_all(fd, buf.data(), buf.size(), true);
	if (!recv_all(fd, reinterpret_cast<char *>(&got), sizeof(got), false))
		bad("stream: server closed");
	auto t1 = std::chrono::steady_clock::now();
	double s = std::chrono::duration<double>(t1 - t0).count();

	close(fd);
	if (got != n * bytes)
		bad("stream: the server received another count than was sent");
	std::printf("stream_mbs rate=%.1f bytes=%llu writes=%llu size=%u seconds=%.3f\n",
		    static_cast<double>(got) / s / (1 << 20),
		    static_cast<unsigned long long>(got),
		    static_cast<unsigned long long>(n), bytes, s);
	return 0;
}

void usage()
{
	std::fprintf(stderr,
		     "usage: xiw_tcp_pingpong -s ADDR PORT\n"
		     "       xiw_tcp_pingpong -c ADDR PORT [-n N] [-l BYTES] [--block] [--warmup W]\n"
		     "       xiw_tcp_pingpong -c ADDR PORT --echo [-n N] [-w WINDOW]\n"
		     "       xiw_tcp_pingpong -c ADDR PORT --stream [-n WRITES] [-l BYTES]\n");
	std::exit(2);
}

} // namespace

int main(int argc, char **argv)
{
	if (argc < 4)
		usage();
	std::string_view role = argv[1];
	sockaddr_in sa = parse_addr(argv[2], argv[3]);
	long long n = -1;
	long long bytes = -1, window = 128, warm = 100;
	bool block = false;
	mode m = mode::pingpong;

	for (int i = 4; i < argc; i++) {
		std::string_view a = argv[i];

		if (a == "-n" && i + 1 < argc)
			n = std::atoll(argv[++i]);
		else if (a == "-l" && i + 1 < argc)
			bytes = std::atoll(argv[++i]);
		else if (a == "-w" && i + 1 < argc)
			window = std::atoll(argv[++i]);
		else if (a == "--warmup" && i + 1 < argc)
			warm = std::atoll(argv[++i]);
		else if (a == "--block")
			block = true;
		else if (a == "--echo")
			m = mode::echo;
		else if (a == "--stream")
			m = mode::stream;
		else
			usage();
	}
	if (role == "-s")
		return serve(sa);
	if (role != "-c")
		usage();
	switch (m) {
	case mode::pingpong:
		if (n < 0)
			n = 2000;
		if (bytes < 0)
			bytes = 8;
		if (n <= 0 || n > 100000000 || bytes <= 0 ||
		    bytes > (8 << 20) || warm < 0 || warm > 100000000)
			usage();
		return ping(sa, static_cast<int>(n), static_cast<uint32_t>(bytes),
			    block, static_cast<int>(warm));
	case mode::echo:
		if (n < 0)
			n = 100000;
		// at most 1024 outstanding (76 KiB of requests, 36 KiB of
		// answers): both ends send blocking while the other may be
		// sending too, so the window must fit in the socket buffers
		if (n <= 0 || window <= 0 || window > 1024 || bytes >= 0 ||
		    block)
			usage();
		return echo(sa, static_cast<uint64_t>(n),
			    static_cast<uint32_t>(window));
	case mode::stream:
		if (n < 0)
			n = 2000;
		if (bytes < 0)
			bytes = 65536;
		if (n <= 0 || bytes <= 0 || bytes > (8 << 20) || block)
			usage();
		return stream(sa, static_cast<uint64_t>(n),
			      static_cast<uint32_t>(bytes));
	}
	usage();
}
