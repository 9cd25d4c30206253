// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// xiw_qprace: a QP whose create fails must never be found by anyone.
//
// ib_core frees a QP at once when the driver's create_qp fails, without
// the grace period and the wait for references of destroy_qp. So the QP
// number may be visible (to iw_cm's get_qp, rdma_connect and rdma_accept
// naming it, and to the walks over the device's QPs) only once nothing
// can fail any more, after the response was copied to user space.
//
// QPs are created through write() on the uverbs fd (IB_USER_VERBS_CMD_
// CREATE_QP) so that the response buffer can be chosen. QP numbers are
// allocated cyclically: the number a create takes is the last one plus
// one, which the last phase checks.
//
//   stall   the response buffer is a userfaultfd page: xiw's copy of the
//           driver response stops in the page fault. While it is stopped,
//           rdma_connect and rdma_accept naming the QP's number must fail
//           with EINVAL (iw_cm's get_qp finds no QP). Then the page is
//           made PROT_NONE and the fault woken: the create must fail with
//           EFAULT. (Had connect or accept found the QP, the fault is
//           resolved instead, so that the create succeeds and nothing
//           keeps a QP that ib_core freed.)
//   race    ROUNDS creates whose response is a PROT_NONE page, each must
//           fail with EFAULT, while a second thread calls rdma_connect
//           naming the number the running create has taken (EINVAL every
//           time) and a third reads the device's counters (a walk over
//           its QPs).
//   after   a create with a good response buffer succeeds and gets the
//           number after the last failed create's.
//
// Prints "ok WHAT" / "FAIL WHAT" lines and "ok: N passed, M failed".
//
// Usage: xiw_qprace DEV ADDR PORT [ROUNDS]
//   ADDR is DEV's IPv4 address; nothing may listen on PORT + 1.
#include <infiniband/verbs.h>
#include <linux/userfaultfd.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/xiw-abi.h>

#include <dirent.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "checks.h"

using checks::check;

namespace {

[[noreturn]] void die(const std::string &what)
{
	std::printf("FAIL %s: %s\n", what.c_str(), std::strerror(errno));
	std::exit(2);
}

// The response of CREATE_QP: the core's, then xiw's driver response.
struct CreateResp {
	ib_uverbs_create_qp_resp core;
	xiw_uresp_create_qp drv;
};

struct Created {
	int err = 0;		// errno of the write, 0 on success
	uint32_t handle = 0;
	uint32_t qpn = 0;
};

struct Verbs {
	ibv_context *ctx = nullptr;
	ibv_pd *pd = nullptr;
	ibv_cq *cq = nullptr;

	explicit Verbs(const char *dev)
	{
		int n;
		ibv_device **l = ibv_get_device_list(&n);

		for (int i = 0; l && i < n; i++)
			if (!std::strcmp(ibv_get_device_name(l[i]), dev))
				ctx = ibv_open_device(l[i]);
		if (l)
			ibv_free_device_list(l);
		if (!ctx)
			die(std::string("open ") + dev);
		pd = ibv_alloc_pd(ctx);
		cq = pd ? ibv_create_cq(ctx, 16, nullptr, nullptr, 0) : nullptr;
		if (!cq)
			die("pd/cq");
	}

	// CREATE_QP through write(), response written to @resp (which
	// must have room for a CreateResp).
	Created create_qp(void *resp)
	{
		struct {
			ib_uverbs_cmd_hdr h;
			ib_uverbs_create_qp c;
		} b{};
		Created r;

		b.h.command = IB_USER_VERBS_CMD_CREATE_QP;
		b.h.in_words = sizeof(b) / 4;
		b.h.out_words = sizeof(CreateResp) / 4;
		b.c.response = uintptr_t(resp);
		b.c.user_handle = 1;
		b.c.pd_handle = pd->handle;
		b.c.send_cq_handle = cq->handle;
		b.c.recv_cq_handle = cq->handle;
		b.c.max_send_wr = 4;
		b.c.max_recv_wr = 4;
		b.c.max_send_sge = 1;
		b.c.max_recv_sge = 1;
		b.c.qp_type = IB_UVERBS_QPT_RC;
		errno = 0;
		ssize_t n = write(ctx->cmd_fd, &b, sizeof(b));
		if (n != ssize_t(sizeof(b))) {
			r.err = n < 0 ? errno : EIO;
			return r;
		}
		CreateResp cr;
		std::memcpy(&cr, resp, sizeof(cr));
		r.handle = cr.core.qp_handle;
		r.qpn = cr.core.qpn;
		if (cr.drv.qp_id != cr.core.qpn)
			check(false, "create: driver qp_id " +
			      std::to_string(cr.drv.qp_id) + " is the QP number " +
			      std::to_string(cr.core.qpn));
		return r;
	}

	bool destroy_qp(uint32_t handle)
	{
		struct {
			ib_uverbs_cmd_hdr h;
			ib_uverbs_destroy_qp c;
		} b{};
		ib_uverbs_destroy_qp_resp resp{};

		b.h.command = IB_USER_VERBS_CMD_DESTROY_QP;
		b.h.in_words = sizeof(b) / 4;
		b.h.out_words = sizeof(resp) / 4;
		b.c.response = uintptr_t(&resp);
		b.c.qp_handle = handle;
		return write(ctx->cmd_fd, &b, sizeof(b)) == ssize_t(sizeof(b));
	}
};

const char *g_addr, *g_port;

// An event on @ch within @ms, or nullptr.
rdma_cm_event *next_event(rdma_event_channel *ch, int ms)
{
	pollfd p = { ch->fd, POLLIN, 0 };
	rdma_cm_event *ev;

	if (poll(&p, 1, ms) != 1 || rdma_get_cm_event(ch, &ev))
		return nullptr;
	return ev;
}

// The next event on @ch must be @type; its id is returned (the event
// acknowledged).
rdma_cm_id *expect_event(rdma_event_channel *ch, rdma_cm_event_type type)
{
	rdma_cm_event *ev = next_event(ch, 20000);

	if (!ev)
		die(std::string("no rdma_cm event, expected ") +
		    rdma_event_str(type));
	if (ev->event != type) {
		errno = -ev->status;
		die(std::string("rdma_cm event ") + rdma_event_str(ev->event) +
		    ", expected " + rdma_event_str(type));
	}
	rdma_cm_id *id = ev->id;
	rdma_ack_cm_event(ev);
	return id;
}

// An active id on @ch with its route to ADDR:@port resolved.
rdma_cm_id *routed_id(rdma_event_channel *ch, const std::string &port)
{
	addrinfo hints{}, *ai;
	rdma_cm_id *id;

	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(g_addr, port.c_str(), &hints, &ai))
		die("getaddrinfo");
	if (rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP) ||
	    rdma_resolve_addr(id, nullptr, ai->ai_addr, 2000))
		die("rdma_resolve_addr");
	freeaddrinfo(ai);
	expect_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
	if (rdma_resolve_route(id, 2000))
		die("rdma_resolve_route");
	expect_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED);
	return id;
}

rdma_conn_param conn_param(uint32_t qpn)
{
	rdma_conn_param p{};

	p.qp_num = qpn;
	p.responder_resources = 1;
	p.initiator_depth = 1;
	return p;
}

std::string outcome(int rv, int err)
{
	return rv ? std::string("-1 ") + std::strerror(err) : std::string("0");
}

// The device's counters, read as a tool would: each read sums the counts
// of every QP of the device.
void read_counters(const std::string &dev)
{
	for (const char *d : { "/hw_counters", "/ports/1/hw_counters" }) {
		std::string dir = "/sys/class/infiniband/" + dev + d;
		DIR *dp = opendir(dir.c_str());
		dirent *e;

		if (!dp)
			continue;
		while ((e = readdir(dp))) {
			char buf[64];
			int fd;

			if (e->d_name[0] == '.' || e->d_type != DT_REG)
				continue;
			fd = open((dir + "/" + e->d_name).c_str(), O_RDONLY);
			if (fd < 0)
				continue;
			(void)!read(fd, buf, sizeof(buf));
			close(fd);
		}
		closedir(dp);
	}
}

// The stalled create: connect and accept name its number while its
// response copy waits in a userfaultfd fault. Returns the number it
// took, as far as known.
uint32_t phase_stall(Verbs &v)
{
	long pg = sysconf(_SC_PAGESIZE);
	alignas(8) uint8_t good[sizeof(CreateResp)];
	Created qa = v.create_qp(good);

	if (qa.err) {
		errno = qa.err;
		die("create of the active side's QP");
	}
	const uint32_t n = qa.qpn + 1;	// the next create's number

	// A connection request waiting for its accept.
	rdma_event_channel *sch = rdma_create_event_channel();
	rdma_event_channel *cch = rdma_create_event_channel();
	rdma_event_channel *pch = rdma_create_event_channel();
	addrinfo hints{}, *ai;
	rdma_cm_id *lid;

	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE;
	if (!sch || !cch || !pch || getaddrinfo(g_addr, g_port, &hints, &ai) ||
	    rdma_create_id(sch, &lid, nullptr, RDMA_PS_TCP) ||
	    rdma_bind_addr(lid, ai->ai_addr) || rdma_listen(lid, 4))
		die("listen");
	freeaddrinfo(ai);
	rdma_cm_id *cid = routed_id(cch, g_port);
	rdma_conn_param cp = conn_param(qa.qpn);
	if (rdma_connect(cid, &cp))
		die("rdma_connect of the active side");
	rdma_cm_id *rid = expect_event(sch, RDMA_CM_EVENT_CONNECT_REQUEST);
	// the probe: nothing listens on PORT + 1
	rdma_cm_id *pid = routed_id(pch, std::to_string(std::atoi(g_port) + 1));

	// The response page, its faults reported to us.
	int uffd = int(syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK));
	if (uffd < 0)
		die("userfaultfd");
	uffdio_api api{};
	api.api = UFFD_API;
	if (ioctl(uffd, UFFDIO_API, &api))
		die("UFFDIO_API");
	void *page = mmap(nullptr, pg, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED)
		die("mmap");
	uffdio_register reg{};
	reg.range.start = uintptr_t(page);
	reg.range.len = pg;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	if (ioctl(uffd, UFFDIO_REGISTER, &reg))
		die("UFFDIO_REGISTER");

	Created stalled;
	std::thread t([&] { stalled = v.create_qp(page); });

	pollfd p = { uffd, POLLIN, 0 };
	uffd_msg msg{};
	if (poll(&p, 1, 30000) != 1 || read(uffd, &msg, sizeof(msg)) != sizeof(msg))
		die("no fault on the response page");
	check(msg.event == UFFD_EVENT_PAGEFAULT &&
	      msg.arg.pagefault.address >= uintptr_t(page) &&
	      msg.arg.pagefault.address < uintptr_t(page) + pg,
	      "stall: the create stops in its response copy");

	// The create is inside xiw_create_qp, its response not yet copied.
	cp = conn_param(n);
	int rc = rdma_connect(pid, &cp), ec = errno;
	bool connect_ok = rc == -1 && ec == EINVAL;
	check(connect_ok, "stall: rdma_connect naming QP " + std::to_string(n) +
	      " of the unfinished create: " + outcome(rc, ec) +
	      " (expected -1 EINVAL)");
	int ra = rdma_accept(rid, &cp), ea = errno;
	bool accept_ok = ra == -1 && ea == EINVAL;
	check(accept_ok, "stall: rdma_accept naming QP " + std::to_string(n) +
	      " of the unfinished create: " + outcome(ra, ea) +
	      " (expected -1 EINVAL)");
	read_counters(ibv_get_device_name(v.ctx->device));

	if (connect_ok && accept_ok) {
		// fail the copy: the page becomes PROT_NONE, the fault
		// is retried and finds no access
		uffdio_range wake = { uintptr_t(page), uint64_t(pg) };

		if (mprotect(page, pg, PROT_NONE) ||
		    ioctl(uffd, UFFDIO_WAKE, &wake))
			die("mprotect/UFFDIO_WAKE");
		t.join();
		check(stalled.err == EFAULT,
		      "stall: the create whose response copy faults fails: " +
		      std::string(std::strerror(stalled.err)) +
		      " (expected EFAULT)");
	} else {
		// Something holds the QP: let the create succeed so that
		// ib_core keeps it, and destroy it properly below.
		uffdio_zeropage z{};
		z.range.start = uintptr_t(page);
		z.range.len = pg;
		if (ioctl(uffd, UFFDIO_ZEROPAGE, &z))
			die("UFFDIO_ZEROPAGE");
		t.join();
		std::printf("# the stalled create, let through: %s, QP %u\n",
			    std::strerror(stalled.err), stalled.qpn);
	}

	// Tear down: the refused accept rejected the active side; a probe
	// that connected reaches nothing.
	rdma_cm_event *ev;
	while ((ev = next_event(cch, accept_ok ? 20000 : 2000))) {
		bool last = ev->event != RDMA_CM_EVENT_ESTABLISHED &&
			    ev->event != RDMA_CM_EVENT_CONNECT_RESPONSE;
		rdma_ack_cm_event(ev);
		if (last)
			break;
	}
	rdma_destroy_id(pid);
	rdma_destroy_id(rid);
	rdma_destroy_id(cid);
	rdma_destroy_id(lid);
	rdma_destroy_event_channel(pch);
	rdma_destroy_event_channel(cch);
	rdma_destroy_event_channel(sch);
	if (!stalled.err && !v.destroy_qp(stalled.handle))
		die("destroy of the stalled QP");
	if (!v.destroy_qp(qa.handle))
		die("destroy of the active side's QP");
	close(uffd);
	munmap(page, pg);
	return n;
}

// Creates with a PROT_NONE response, raced by rdma_connect naming the
// number each takes and by counter reads. Returns the last number taken.
uint32_t phase_race(Verbs &v, uint32_t last, int rounds)
{
	long pg = sysconf(_SC_PAGESIZE);
	void *none = mmap(nullptr, pg, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
			  -1, 0);
	if (none == MAP_FAILED)
		die("mmap");
	rdma_event_channel *pch = rdma_create_event_channel();
	if (!pch)
		die("event channel");
	rdma_cm_id *pid = routed_id(pch, std::to_string(std::atoi(g_port) + 1));

	std::atomic<int> started{0};
	std::atomic<bool> done{false};
	int efault = 0, other = 0, other_err = 0;
	long probes = 0, wrong = 0;
	std::string first_wrong;

	std::thread creator([&] {
		for (int i = 0; i < rounds; i++) {
			started.store(i + 1);
			Created c = v.create_qp(none);
			if (c.err == EFAULT) {
				efault++;
				continue;
			}
			other++;
			other_err = c.err;
			if (!c.err)
				v.destroy_qp(c.handle);
		}
		done = true;
	});
	std::thread counters([&] {
		std::string dev = ibv_get_device_name(v.ctx->device);

		while (!done)
			read_counters(dev);
	});
	while (!done) {
		// the number of the create running now, and of the next
		uint32_t n = last + uint32_t(started.load());

		for (uint32_t q : { n, n + 1 }) {
			rdma_conn_param cp = conn_param(q);
			int rc = rdma_connect(pid, &cp), ec = errno;

			probes++;
			if (rc == -1 && ec == EINVAL)
				continue;
			if (!wrong++)
				first_wrong = "QP " + std::to_string(q) + ": " +
					      outcome(rc, ec);
			if (!rc) {
				// it connects: the probe is spent
				rdma_destroy_id(pid);
				pid = routed_id(pch, std::to_string(
						std::atoi(g_port) + 1));
			}
		}
	}
	creator.join();
	counters.join();
	check(efault == rounds, "race: " + std::to_string(efault) + " of " +
	      std::to_string(rounds) + " creates with a PROT_NONE response failed with EFAULT" +
	      (other ? ", another outcome: " + std::string(std::strerror(other_err)) : ""));
	check(!wrong && probes > 0, "race: " + std::to_string(probes) +
	      " rdma_connect naming a failing create's QP, " +
	      std::to_string(wrong) + " not EINVAL" +
	      (wrong ? " (first " + first_wrong + ")" : ""));
	rdma_destroy_id(pid);
	rdma_destroy_event_channel(pch);
	munmap(none, pg);
	return last + uint32_t(rounds);
}

} // namespace

int main(int argc, char **argv)
{
	if (argc < 4) {
		std::fprintf(stderr, "usage: xiw_qprace DEV ADDR PORT [ROUNDS]\n");
		return 2;
	}
	g_addr = argv[2];
	g_port = argv[3];
	int rounds = argc > 4 ? std::atoi(argv[4]) : 200;
	setvbuf(stdout, nullptr, _IOLBF, 0);

	Verbs v(argv[1]);
	uint32_t last = phase_stall(v);
	last = phase_race(v, last, rounds);

	alignas(8) uint8_t good[sizeof(CreateResp)];
	Created c = v.create_qp(good);
	check(!c.err && c.qpn == last + 1,
	      "after: a create with a good response succeeds: " +
	      std::string(c.err ? std::strerror(c.err) : "ok") + ", QP " +
	      std::to_string(c.qpn) + " (expected " + std::to_string(last + 1) + ")");
	if (!c.err && !v.destroy_qp(c.handle))
		die("destroy");
	ibv_destroy_cq(v.cq);
	ibv_dealloc_pd(v.pd);
	ibv_close_device(v.ctx);
	return checks::summary();
}
