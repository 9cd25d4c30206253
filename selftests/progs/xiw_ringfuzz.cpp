// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// xiw_ringfuzz: a process that scribbles over its own mmap'd rings.
//
// The kernel must trust nothing in the SQ/RQ/CQ memory it shares with a
// process. This program connects two QPs of one xiw device through
// rdma_cm (so the data path is live), then for several rounds fills every
// mapping of the uverbs device in its address space (the rings and their
// control words) with random bytes, or with crafted "valid-looking" WQEs
// (VALID set, random opcode, lkeys, lengths, SGE counts up to 255), rings
// the doorbells through ordinary verbs calls and polls. The only outcome
// that matters is the kernel's: no crash, no memory of others touched, no
// leak (the bench checks dmesg and unloads the module afterwards). It
// prints how many rounds ran and how many completions it saw.
//
// Each connection also gets 8 more QPs (unconnected, on the client's PD
// and CQ) whose rings are scribbled too, and every round makes random
// driver calls on them and on the connected QPs: XIW_METHOD_DOORBELL_ALLOC
// ioctls with random attribute ids, flags, lengths and data (real and
// made-up QP handles, pointers), ioctls to made-up driver objects and
// methods (driver namespace only: a core method could destroy an object
// behind the provider's back), write()s of random lengths to the doorbell files it got, and
// ibv_modify_qp with random attribute masks and values. The outcomes are
// counted ("methods N: ok N, errno E:n ...").
//
// Usage: xiw_ringfuzz ADDR PORT [ROUNDS] [SEED]
#include "verbs_side.h"

#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/xiw-abi.h>
#include <rdma/rdma_user_ioctl_cmds.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <netdb.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

using cm_pair::die;

struct Mapping {
	uint8_t *addr;
	size_t len;
};

// Every writable mapping of a uverbs character device: our rings.
std::vector<Mapping> ring_mappings()
{
	std::ifstream maps("/proc/self/maps");
	std::vector<Mapping> out;
	std::string line;

	while (std::getline(maps, line)) {
		if (line.find("/dev/infiniband/uverbs") == std::string::npos)
			continue;
		std::istringstream is(line);
		std::string range, perms;
		is >> range >> perms;
		if (perms.size() < 2 || perms[1] != 'w')
			continue;
		auto dash = range.find('-');
		uintptr_t lo = std::stoull(range.substr(0, dash), nullptr, 16);
		uintptr_t hi = std::stoull(range.substr(dash + 1), nullptr, 16);
		out.push_back({ reinterpret_cast<uint8_t *>(lo), hi - lo });
	}
	return out;
}

// The doorbell as the provider rings it (a legacy POST_SEND/POST_RECV
// with no WRs), whatever the ring's control word says.
void doorbell(ibv_qp *qp, bool send)
{
	struct {
		ib_uverbs_cmd_hdr hdr;
		ib_uverbs_post_send cmd;
	} db{};
	ib_uverbs_post_send_resp resp{};

	db.hdr.command = send ? IB_USER_VERBS_CMD_POST_SEND :
				IB_USER_VERBS_CMD_POST_RECV;
	db.hdr.in_words = sizeof(db) / 4;
	db.hdr.out_words = sizeof(resp) / 4;
	db.cmd.response = (uintptr_t)&resp;
	db.cmd.qp_handle = qp->handle;
	db.cmd.wqe_size = send ? sizeof(ib_uverbs_send_wr) :
				 sizeof(ib_uverbs_recv_wr);
	if (write(qp->context->cmd_fd, &db, sizeof(db)) < 0 && errno != EINVAL)
		std::printf("doorbell: %s\n", std::strerror(errno));
}

// Outcome counts of the random driver calls: errno (0 = success).
std::map<int, long> outcomes;

void count(int rv)
{
	outcomes[rv < 0 ? errno : 0]++;
}

// Is @fd a doorbell file (made by a random ioctl that succeeded)?
bool is_doorbell_fd(long fd)
{
	char link[64], path[64];
	ssize_t n;

	if (fd < 3 || fd > 65535)
		return false;
	std::snprintf(path, sizeof(path), "/proc/self/fd/%ld", fd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return false;
	link[n] = 0;
	return std::strstr(link, "doorbell") != nullptr;
}

// One random ioctl on the uverbs fd, aimed at the driver's methods.
// Doorbell files it creates are written to and kept in @dbs.
void random_ioctl(std::mt19937_64 &rng, ibv_context *ctx,
		  const std::vector<ibv_qp *> &qps, std::vector<int> &dbs)
{
	alignas(8) unsigned char buf[sizeof(ib_uverbs_ioctl_hdr) +
				     4 * sizeof(ib_uverbs_attr)] = {};
	auto *hdr = reinterpret_cast<ib_uverbs_ioctl_hdr *>(buf);
	auto *attrs = reinterpret_cast<ib_uverbs_attr *>(hdr + 1);
	static uint64_t scratch[8];
	unsigned na = rng() % 5;
	uint64_t x = rng();

	hdr->length = x % 16 ? sizeof(*hdr) + na * sizeof(ib_uverbs_attr) :
			       uint16_t(rng());
	hdr->object_id = x >> 4 & 3 ? uint16_t(XIW_OBJECT_DOORBELL) :
				       uint16_t(UVERBS_ID_NS_MASK | (rng() & 0xff));
	hdr->method_id = x >> 6 & 3 ? uint16_t(XIW_METHOD_DOORBELL_ALLOC) :
				       uint16_t(UVERBS_ID_NS_MASK | (rng() & 0xff));
	hdr->num_attrs = na;
	if (!(x >> 8 & 15))
		hdr->driver_id = uint8_t(rng());
	for (unsigned i = 0; i < na; i++) {
		ib_uverbs_attr &a = attrs[i];
		uint64_t y = rng();

		switch (y % 4) {
		case 0: a.attr_id = XIW_ATTR_DOORBELL_ALLOC_FD; break;
		case 1: a.attr_id = XIW_ATTR_DOORBELL_ALLOC_QP; break;
		case 2: a.attr_id = uint16_t(y >> 8); break;
		default: a.attr_id = uint16_t(y >> 8 & 0x1f) | UVERBS_ID_NS_MASK; break;
		}
		a.flags = y >> 24 & 3 ? (y >> 26 & 1 ? UVERBS_ATTR_F_MANDATORY : 0) :
					uint16_t(rng());
		a.len = y >> 28 & 3 ? 0 : uint16_t(rng() % 80);
		switch (y >> 32 & 7) {
		case 0: case 1: case 2:
			a.data = qps[rng() % qps.size()]->handle;
			break;
		case 3:
			a.data = (uintptr_t)scratch;
			break;
		case 4:
			a.data = rng() % 64;
			break;
		default:
			a.data = rng();
			break;
		}
		if (!(y >> 40 & 15))
			a.attr_data.reserved = uint16_t(rng());
	}
	int rv = ioctl(ctx->cmd_fd, RDMA_VERBS_IOCTL, buf);

	count(rv);
	if (rv)
		return;
	for (unsigned i = 0; i < na && i < 4; i++)
		if (attrs[i].attr_id == XIW_ATTR_DOORBELL_ALLOC_FD &&
		    is_doorbell_fd((long)attrs[i].data))
			dbs.push_back((int)attrs[i].data);
}

// ibv_modify_qp with a random mask and random values.
void random_modify(std::mt19937_64 &rng, ibv_qp *qp)
{
	ibv_qp_attr a;
	uint64_t *w = reinterpret_cast<uint64_t *>(&a);

	for (size_t i = 0; i < sizeof(a) / 8; i++)
		w[i] = rng() & 1 ? rng() : rng() & 0xff;
	a.qp_state = ibv_qp_state(rng() % 8);
	a.cur_qp_state = ibv_qp_state(rng() % 8);
	a.ah_attr.is_global = rng() & 1;
	int mask = int(rng() & ((1 << 21) - 1));

	if (!(rng() % 4))
		mask &= IBV_QP_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_MAX_QP_RD_ATOMIC |
			IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_CAP;
	// moving the connected QPs to RESET or ERROR ends their connection:
	// the next connection comes after 25 rounds anyway
	int rv = ibv_modify_qp(qp, &a, mask);

	if (rv)
		errno = rv;
	count(rv ? -1 : 0);
}

// The shared test-connection end (verbs_side.h) with this program's
// buffer layout and helpers.
struct Side : cm_pair::SideT<uint8_t> {
	void setup(rdma_cm_id *cid)
	{
		cm_pair::SideOpts o;

		o.sge = 4;
		o.cq_entries = 32;
		o.mem_bytes = 65536;
		SideT::setup(cid, o);
	}
};

} // namespace

int main(int argc, char **argv)
{
	if (argc < 3) {
		std::fprintf(stderr, "usage: %s ADDR PORT [ROUNDS] [SEED]\n",
			     argv[0]);
		return 2;
	}
	int rounds = argc > 3 ? std::atoi(argv[3]) : 200;
	std::mt19937_64 rng(argc > 4 ? std::strtoull(argv[4], nullptr, 0) :
				       0x5eed);
	cm_pair::Pair pair(argv[1], argv[2]);
	long cqes = 0;

	// A fresh connection every 25 rounds: the first bad WQE ends one.
	for (int conn = 0; conn * 25 < rounds; conn++) {
		Side srv, cli;
		rdma_conn_param p{};
		rdma_cm_id *sid;

		p.responder_resources = 2;
		p.initiator_depth = 2;
		pair.connect([&cli](rdma_cm_id *id) { cli.setup(id); },
			     [&srv](rdma_cm_id *id) { srv.setup(id); }, p, p,
			     &sid);

		// more QPs whose rings and methods get the same treatment
		std::vector<ibv_qp *> extra, qps{ cli.id->qp, srv.id->qp };
		std::vector<int> dbs;

		for (int i = 0; i < 8; i++) {
			ibv_qp_init_attr ia{};

			ia.send_cq = cli.cq;
			ia.recv_cq = cli.cq;
			ia.qp_type = IBV_QPT_RC;
			ia.cap.max_send_wr = 1 + rng() % 64;
			ia.cap.max_recv_wr = 1 + rng() % 64;
			ia.cap.max_send_sge = 1 + rng() % 4;
			ia.cap.max_recv_sge = 1 + rng() % 4;
			ia.cap.max_inline_data = rng() % 97;
			ibv_qp *q = ibv_create_qp(cli.pd, &ia);

			if (!q) {
				count(-1);
				continue;
			}
			count(0);
			extra.push_back(q);
			qps.push_back(q);
		}
		auto maps = ring_mappings();
		size_t total = 0;
		for (auto &m : maps)
			total += m.len;
		if (!conn)
			std::printf("rings: %zu mappings, %zu bytes\n", maps.size(),
				    total);
		if (maps.empty()) {
			std::fprintf(stderr, "xiw_ringfuzz: no uverbs mappings found\n");
			return 2;
		}

		for (int r = conn * 25; r < rounds && r < conn * 25 + 25; r++) {
			for (auto &m : maps) {
				size_t n = m.len / 8;
				auto *w = reinterpret_cast<uint64_t *>(m.addr);
				switch (r % 3) {
				case 0:		// random words everywhere
					for (size_t i = 0; i < n; i++)
						w[i] = rng();
					break;
				case 1:		// a few bytes here and there
					for (int i = 0; i < 64; i++)
						m.addr[rng() % m.len] = rng();
					break;
				default:	// valid-looking WQEs in every 128-byte slot
					for (size_t off = 64; off + 128 <= m.len; off += 128) {
						auto *e = reinterpret_cast<xiw_sqe *>(m.addr + off);
						uint64_t x = rng();
						std::memset(e, 0, sizeof(*e));
						e->wr_id = x;
						e->flags = XIW_WQE_VALID | (x >> 8 & 0x3e);
						e->opcode = x >> 16 & 0x3f;
						e->num_sge = x >> 24 & 0xff;
						e->rkey = rng();
						e->raddr = rng();
						for (auto &s : e->sge) {
							s.addr = rng() & 1 ? rng() :
								 (uintptr_t)cli.mem.data();
							s.length = rng();
							s.lkey = rng() & 1 ? rng() :
								 cli.mr->lkey;
						}
					}
					break;
				}
			}
			// doorbells and kicks through the normal verbs entry points
			ibv_sge sge{ (uintptr_t)cli.mem.data(), 64, cli.mr->lkey };
			ibv_send_wr swr{}, *sbad;
			ibv_recv_wr rwr{}, *rbad;
			swr.sg_list = &sge;
			swr.num_sge = 1;
			swr.opcode = IBV_WR_SEND;
			swr.send_flags = IBV_SEND_SIGNALED;
			rwr.sg_list = &sge;
			rwr.num_sge = 1;
			ibv_post_recv(srv.id->qp, &rwr, &rbad);
			ibv_post_send(cli.id->qp, &swr, &sbad);
			ibv_post_recv(cli.id->qp, &rwr, &rbad);
			ibv_post_send(srv.id->qp, &swr, &sbad);
			doorbell(cli.id->qp, true);
			doorbell(srv.id->qp, true);
			doorbell(cli.id->qp, false);
			doorbell(srv.id->qp, false);
			// random driver calls on every QP of this connection
			for (int k = 0; k < 8; k++)
				random_ioctl(rng, cli.id->verbs, qps, dbs);
			for (int k = 0; k < 2; k++)
				random_modify(rng, qps[rng() % qps.size()]);
			for (int fd : dbs) {
				char junk[64];
				count(write(fd, junk, rng() % sizeof(junk)) < 0 ? -1 : 0);
			}
			ibv_req_notify_cq(cli.cq, r & 1);
			ibv_wc wc[8];
			for (int k = 0; k < 4; k++) {
				int n = ibv_poll_cq(cli.cq, 8, wc);
				int m2 = ibv_poll_cq(srv.cq, 8, wc);
				cqes += (n > 0 ? n : 0) + (m2 > 0 ? m2 : 0);
			}
		}
		// orderly teardown after the abuse: everything must still be
		// freeable; half the doorbell files outlive their QPs
		for (size_t i = 0; i < dbs.size(); i += 2)
			close(dbs[i]);
		for (ibv_qp *q : extra)
			if (ibv_destroy_qp(q))
				std::printf("destroy extra QP: %s\n", std::strerror(errno));
		for (size_t i = 1; i < dbs.size(); i += 2) {
			char junk[8];

			// the QP is gone: -ENXIO, never a crash
			if (write(dbs[i], junk, sizeof(junk)) >= 0)
				std::printf("doorbell of a destroyed QP accepted a write\n");
			close(dbs[i]);
		}
		rdma_disconnect(cli.id);
		rdma_destroy_qp(cli.id);
		rdma_destroy_qp(srv.id);
		ibv_dereg_mr(cli.mr);
		ibv_dereg_mr(srv.mr);
		ibv_destroy_cq(cli.cq);
		ibv_destroy_cq(srv.cq);
		ibv_dealloc_pd(cli.pd);
		ibv_dealloc_pd(srv.pd);
		rdma_destroy_id(cli.id);
		rdma_destroy_id(srv.id);
		// events of the closed connections (DISCONNECTED ...) are not waited for
	}
	std::printf("rounds %d, completions seen %ld\n", rounds, cqes);
	long calls = 0;
	std::string how;

	for (const auto &[e, n] : outcomes) {
		calls += n;
		how += e ? ", errno " + std::to_string(e) + ":" + std::to_string(n) :
			   ", ok " + std::to_string(n);
	}
	std::printf("methods %ld%s\n", calls, how.c_str());
	std::printf("teardown ok\n");
	return 0;
}
