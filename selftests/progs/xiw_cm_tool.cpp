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
//   xiw_cm_tool client ADDR PORT SRC [wait]
//       connect with private data "hello xiw", IRD 4 / ORD 2; on
//       ESTABLISHED disconnect (or, with "wait", wait for the peer's)
//
// One line per event: "EVENT status=N pd=\"...\" ird=N ord=N". Exit 0
// when the flow ran as asked, 1 otherwise, 2 on a setup error.
#include <rdma/rdma_cma.h>

#include <cstdio>
#include <cstdlib>
#include <cerrno>
#include <cstring>
#include <netdb.h>
#include <unistd.h>
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

int server(rdma_event_channel *ch, const char *host, const char *port,
	   std::string_view mode, int count)
{
	rdma_cm_id *lid;
	addrinfo *ai = resolve(host, port);

	if (rdma_create_id(ch, &lid, nullptr, RDMA_PS_TCP))
		die("rdma_create_id");
	if (rdma_bind_addr(lid, ai->ai_addr) || rdma_listen(lid, 8))
		die("bind/listen");
	freeaddrinfo(ai);
	std::printf("listening\n");
	std::fflush(stdout);
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
	addrinfo *ai = resolve(host, port), *sai = resolve(src, "0");
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

} // namespace

int main(int argc, char **argv)
{
	if (argc < 4) {
		std::fprintf(stderr,
			     "usage: %s server ADDR PORT accept|accept-close|reject|hold [COUNT] | client ADDR PORT SRC [wait]\n",
			     argv[0]);
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
	rdma_destroy_event_channel(ch);
	return rv;
}
