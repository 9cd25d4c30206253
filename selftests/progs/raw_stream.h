// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// raw_stream.h: the TCP side of the raw iWARP peers (xiw_badpeer as
// requester, xiw_badresp as responder): a connected socket and the bytes
// read from it that the peer has not parsed yet. Framing is rfc_wire.h's.
#pragma once

#include "rfc_wire.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace raw {

using Clock = std::chrono::steady_clock;

struct Stream {
	int fd = -1;
	rfc::Bytes rx;			// received, not yet parsed
	bool eof = false, reset = false;
};

// Send all of [p, p + n). On failure print "SENDFAIL errno=N" and stop:
// xiw may have reset the connection already, which is for the test to
// judge from what the peer read.
inline void send_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t r = send(fd, p, n, MSG_NOSIGNAL);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			std::printf("SENDFAIL errno=%d\n", errno);
			return;
		}
		p += r;
		n -= r;
	}
}

inline void send_all(int fd, const rfc::Bytes &b)
{
	send_all(fd, b.data(), b.size());
}

// Read more stream bytes into s.rx; false on EOF, reset or timeout.
inline bool fill(Stream &s, int timeout_ms)
{
	if (s.eof)
		return false;
	pollfd pfd{s.fd, POLLIN, 0};

	if (poll(&pfd, 1, timeout_ms) <= 0)
		return false;
	uint8_t buf[65536];
	ssize_t n = recv(s.fd, buf, sizeof(buf), 0);
	if (n <= 0) {
		s.eof = true;
		s.reset = n < 0;
		return false;
	}
	s.rx.insert(s.rx.end(), buf, buf + n);
	return true;
}

// Until s.rx holds @n bytes or @end passes.
inline bool need(Stream &s, size_t n, Clock::time_point end)
{
	while (s.rx.size() < n) {
		int left = std::chrono::duration_cast<std::chrono::milliseconds>(
				   end - Clock::now()).count();
		if (left <= 0 || !fill(s, left))
			return false;
	}
	return true;
}

// Listen on @host:@port, print @banner (the line a test waits for before
// it makes xiw connect), accept one connection and stop listening.
// Returns its socket, or -1 with errno set.
inline int listen_accept(const char *host, const char *port,
			 const char *banner)
{
	addrinfo hints{}, *ai;
	int one = 1;

	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE;
	if (int rv = getaddrinfo(host, port, &hints, &ai); rv) {
		std::fprintf(stderr, "getaddrinfo %s: %s\n", host,
			     gai_strerror(rv));
		errno = EINVAL;
		return -1;
	}
	int ls = socket(ai->ai_family, SOCK_STREAM, 0);
	if (ls < 0 ||
	    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(ls, ai->ai_addr, ai->ai_addrlen) || listen(ls, 4)) {
		int e = errno;

		if (ls >= 0)
			close(ls);
		freeaddrinfo(ai);
		errno = e;
		return -1;
	}
	freeaddrinfo(ai);
	std::printf("%s\n", banner);
	std::fflush(stdout);
	int fd = accept(ls, nullptr, nullptr);
	int e = errno;

	close(ls);
	errno = e;
	return fd;
}

} // namespace raw
