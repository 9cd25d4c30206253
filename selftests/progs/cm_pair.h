// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// cm_pair.h: connect two rdma_cm ids inside one process - a listener and
// an active side on the same address - for test programs that drive both
// ends of a connection themselves (xiw_dv, xiw_ringfuzz).
#pragma once

#include <rdma/rdma_cma.h>

#include <netdb.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>

namespace cm_pair {

[[noreturn]] inline void die(const char *what)
{
	std::fprintf(stderr, "%s: %s\n", what, std::strerror(errno));
	std::exit(2);
}

// The next event on @ch, which must be of @type.
inline rdma_cm_event *expect(rdma_event_channel *ch, rdma_cm_event_type type)
{
	rdma_cm_event *ev;

	if (rdma_get_cm_event(ch, &ev))
		die("rdma_get_cm_event");
	if (ev->event != type) {
		std::fprintf(stderr, "rdma_cm event %s (status %d), expected %s\n",
			     rdma_event_str(ev->event), ev->status,
			     rdma_event_str(type));
		std::exit(2);
	}
	return ev;
}

struct Pair {
	rdma_event_channel *sch = nullptr;	// passive side
	rdma_event_channel *cch = nullptr;	// active side
	rdma_cm_id *lid = nullptr;
	addrinfo *ai = nullptr;
	addrinfo *src_ai = nullptr;	// the active side's address, if given

	// Listen on ADDR:PORT. @src: the active side binds to this address
	// (its device, when it is another one's); nullptr: the route decides.
	Pair(const char *addr, const char *port, const char *src = nullptr)
	{
		addrinfo hints{};

		hints.ai_socktype = SOCK_STREAM;
		sch = rdma_create_event_channel();
		cch = rdma_create_event_channel();
		if (!sch || !cch || getaddrinfo(addr, port, &hints, &ai))
			die("event channels / address");
		if (src && getaddrinfo(src, nullptr, &hints, &src_ai))
			die("source address");
		if (rdma_create_id(sch, &lid, nullptr, RDMA_PS_TCP) ||
		    rdma_bind_addr(lid, ai->ai_addr) || rdma_listen(lid, 4))
			die("rdma listen");
	}

	~Pair()
	{
		rdma_destroy_id(lid);
		freeaddrinfo(ai);
		if (src_ai)
			freeaddrinfo(src_ai);
		rdma_destroy_event_channel(sch);
		rdma_destroy_event_channel(cch);
	}

	// One connection: @setup_active creates the active id's QP before
	// the connect, @setup_passive the passive id's before the accept
	// (with @accept_param, which may carry private data). Returns the
	// active id; the passive one is stored in *@passive. The accept's
	// private data is copied to @pdata (@pdata_len bytes) if given.
	rdma_cm_id *connect(const std::function<void(rdma_cm_id *)> &setup_active,
			    const std::function<void(rdma_cm_id *)> &setup_passive,
			    const rdma_conn_param &param,
			    const rdma_conn_param &accept_param,
			    rdma_cm_id **passive, void *pdata = nullptr,
			    size_t pdata_len = 0)
	{
		rdma_cm_id *cid;
		rdma_cm_event *ev;

		if (rdma_create_id(cch, &cid, nullptr, RDMA_PS_TCP) ||
		    rdma_resolve_addr(cid, src_ai ? src_ai->ai_addr : nullptr,
				      ai->ai_addr, 2000))
			die("rdma_resolve_addr");
		rdma_ack_cm_event(expect(cch, RDMA_CM_EVENT_ADDR_RESOLVED));
		if (rdma_resolve_route(cid, 2000))
			die("rdma_resolve_route");
		rdma_ack_cm_event(expect(cch, RDMA_CM_EVENT_ROUTE_RESOLVED));
		setup_active(cid);
		rdma_conn_param p = param;
		if (rdma_connect(cid, &p))
			die("rdma_connect");
		ev = expect(sch, RDMA_CM_EVENT_CONNECT_REQUEST);
		*passive = ev->id;
		setup_passive(ev->id);
		rdma_conn_param a = accept_param;
		if (rdma_accept(ev->id, &a))
			die("rdma_accept");
		rdma_ack_cm_event(ev);
		ev = expect(cch, RDMA_CM_EVENT_ESTABLISHED);
		if (pdata && pdata_len) {
			if (ev->param.conn.private_data_len < pdata_len) {
				std::fprintf(stderr, "accept private data: %u bytes\n",
					     ev->param.conn.private_data_len);
				std::exit(2);
			}
			std::memcpy(pdata, ev->param.conn.private_data, pdata_len);
		}
		rdma_ack_cm_event(ev);
		rdma_ack_cm_event(expect(sch, RDMA_CM_EVENT_ESTABLISHED));
		return cid;
	}
};

} // namespace cm_pair
