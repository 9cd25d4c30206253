// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// xiw_fork ADDR PORT: fork() in a process with a live connection, both
// ends in this process (cm_pair.h); fork safety from the kernel
// (IBV_FORK_UNNEEDED), no ibv_fork_init().
//
// A round of traffic: an RDMA Write a->b, a Send a->b into a posted
// receive and an RDMA Write b->a, each of fresh bytes, every completion
// successful with its wr_id and opcode, every byte checked where it lands.
// Rounds run before any fork and after each of:
//   touch:  a child that reads both registered buffers (it sees the bytes
//           of the fork, not what the parent writes later), overwrites
//           them, and finds no mapping of the device (the rings are not
//           inherited); meanwhile and after, the parent's rounds carry
//           the parent's bytes only, its buffers keep the parent's bytes,
//           and the child's bytes reach nobody; the child exits 0;
//   misuse: a child that posts an RDMA Write on the parent's QP: it
//           faults (SIGSEGV, caught) at an address of the parent's
//           rings (they are not mapped in it); no Write
//           of its reaches the peer, no completion of its reaches the
//           parent's CQ, the parent's queues stay in step;
//   exec:   a child that execs true(1) and exits 0.
//
// Prints "ok WHAT" / "FAIL WHAT" per check and a closing summary line;
// exit status 0 only if every check passed, 2 on a setup failure.
#include "checks.h"
#include "verbs_side.h"

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace {

using checks::check;
using checks::fmt;
using cm_pair::die;
using cm_pair::Side;
using cm_pair::SideOpts;

constexpr size_t kBuf = 8192;
// Offsets in each 8 KiB buffer: what a Write or a Send carries, and
// where b's receive and the b->a Write land.
constexpr size_t kWriteSrc = 0, kWriteLen = 2048;	// a->b Write
constexpr size_t kSendSrc = 2048, kSendLen = 1024;	// a->b Send
constexpr size_t kRecvAt = 4096;			// in b
constexpr size_t kBackSrc = 6144, kBackLen = 1024;	// b->a Write
constexpr size_t kBackAt = 4096;			// in a
constexpr size_t kChildAt = 7168;			// in b: the child's Write
constexpr uint8_t kChildByte = 0xc1;
constexpr uint64_t kChildWrId = 0xc41d;

uint8_t pat(int round, int stream, size_t i)
{
	// Never kChildByte: a child's byte found anywhere is the child's.
	uint8_t v = uint8_t(round * 37 + stream * 101 + i * 7 + 1);

	return v == kChildByte ? 0x5a : v;
}

void *page_buf()
{
	void *p = mmap(nullptr, kBuf, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		die("mmap");
	return p;
}

// The uverbs mappings (the rings) as the parent had them before the
// misusing child was forked: where that child's fault must be.
struct Range {
	uintptr_t lo, hi;
};
Range g_rings[64];
int g_nrings;

void note_rings()
{
	std::ifstream maps("/proc/self/maps");
	std::string line;

	g_nrings = 0;
	while (std::getline(maps, line) && g_nrings < 64) {
		unsigned long lo, hi;

		if (line.find("/dev/infiniband/uverbs") == std::string::npos ||
		    std::sscanf(line.c_str(), "%lx-%lx", &lo, &hi) != 2)
			continue;
		g_rings[g_nrings++] = { lo, hi };
	}
}

// In the misusing child: the fault is caught (no kernel log line of an
// unhandled one) and reported as exit 77 if it hit a ring, 78 if not.
void on_segv(int, siginfo_t *si, void *)
{
	uintptr_t a = (uintptr_t)si->si_addr;

	for (int i = 0; i < g_nrings; i++)
		if (a >= g_rings[i].lo && a < g_rings[i].hi)
			_exit(77);
	_exit(78);
}

// Mappings of the uverbs device in this process.
int uverbs_maps()
{
	std::ifstream maps("/proc/self/maps");
	std::string line;
	int n = 0;

	while (std::getline(maps, line))
		if (line.find("/dev/infiniband/uverbs") != std::string::npos)
			n++;
	return n;
}

struct Conn {
	Side a, b;
	uint8_t *abuf, *bbuf;
	int round = 0;

	// One completion on @s: @wr_id, @op, successful, @len if a receive.
	bool expect(Side &s, const char *who, uint64_t wr_id, ibv_wc_opcode op,
		    uint32_t len = 0)
	{
		auto wc = s.poll(1, 30000);

		if (wc.empty()) {
			check(false, fmt("round %d: %s: a completion of wr_id %#llx",
					 round, who, (unsigned long long)wr_id));
			return false;
		}
		bool ok = wc[0].status == IBV_WC_SUCCESS && wc[0].wr_id == wr_id &&
			  wc[0].opcode == op &&
			  (op != IBV_WC_RECV || wc[0].byte_len == len);

		if (!ok)
			check(false, fmt("round %d: %s: completion wr_id %#llx opcode %d status %s len %u, want wr_id %#llx opcode %d SUCCESS",
					 round, who,
					 (unsigned long long)wc[0].wr_id,
					 wc[0].opcode,
					 ibv_wc_status_str(wc[0].status),
					 wc[0].byte_len,
					 (unsigned long long)wr_id, op));
		return ok;
	}

	static size_t first_diff(const uint8_t *p, int r, int stream, size_t n)
	{
		for (size_t i = 0; i < n; i++)
			if (p[i] != pat(r, stream, i))
				return i;
		return n;
	}

	// One round (see the head of the file); true if all of it held.
	bool traffic(const char *when)
	{
		int r = ++round;
		bool ok = true;

		for (size_t i = 0; i < kWriteLen; i++)
			abuf[kWriteSrc + i] = pat(r, 0, i);
		for (size_t i = 0; i < kSendLen; i++)
			abuf[kSendSrc + i] = pat(r, 1, i);
		for (size_t i = 0; i < kBackLen; i++)
			bbuf[kBackSrc + i] = pat(r, 2, i);

		b.post_recv(100 + r, bbuf + kRecvAt, kSendLen);
		if (a.post(IBV_WR_RDMA_WRITE, 200 + r, abuf + kWriteSrc,
			   kWriteLen, true, (uintptr_t)bbuf, b.mr->rkey) ||
		    a.post(IBV_WR_SEND, 300 + r, abuf + kSendSrc, kSendLen) ||
		    b.post(IBV_WR_RDMA_WRITE, 400 + r, bbuf + kBackSrc,
			   kBackLen, true, (uintptr_t)(abuf + kBackAt),
			   a.mr->rkey)) {
			check(false, fmt("round %d (%s): ibv_post_send: %s", r,
					 when, std::strerror(errno)));
			return false;
		}
		ok &= expect(a, "a", 200 + r, IBV_WC_RDMA_WRITE);
		ok &= expect(a, "a", 300 + r, IBV_WC_SEND);
		// b's CQ: its receive and its Write, in either order.
		auto wc = b.poll(2, 30000);
		bool got_recv = false, got_write = false;

		for (auto &w : wc) {
			if (w.status == IBV_WC_SUCCESS && w.wr_id == uint64_t(100 + r) &&
			    w.opcode == IBV_WC_RECV && w.byte_len == kSendLen)
				got_recv = true;
			else if (w.status == IBV_WC_SUCCESS &&
				 w.wr_id == uint64_t(400 + r) &&
				 w.opcode == IBV_WC_RDMA_WRITE)
				got_write = true;
			else
				check(false, fmt("round %d: b: completion wr_id %#llx opcode %d status %s",
						 r, (unsigned long long)w.wr_id,
						 w.opcode,
						 ibv_wc_status_str(w.status)));
		}
		ok &= got_recv && got_write;
		size_t dw = first_diff(bbuf, r, 0, kWriteLen);
		size_t ds = first_diff(bbuf + kRecvAt, r, 1, kSendLen);
		size_t db = first_diff(abuf + kBackAt, r, 2, kBackLen);

		check(ok && dw == kWriteLen && ds == kSendLen && db == kBackLen,
		      fmt("round %d (%s): Write a->b, Send a->b, Write b->a: every completion SUCCESS, every byte placed (first bad: write %zu/%zu send %zu/%zu back %zu/%zu)",
			  r, when, dw, kWriteLen, ds, kSendLen, db, kBackLen));
		return ok;
	}
};

// Nothing of the child's byte in @p[0, @n).
bool no_child_bytes(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] == kChildByte)
			return false;
	return true;
}

std::string status_str(int st)
{
	if (WIFEXITED(st))
		return fmt("exited %d", WEXITSTATUS(st));
	if (WIFSIGNALED(st))
		return fmt("killed by signal %d (%s)", WTERMSIG(st),
			   strsignal(WTERMSIG(st)));
	return fmt("status %#x", st);
}

} // namespace

int main(int argc, char **argv)
{
	if (argc != 3) {
		std::fprintf(stderr, "usage: %s ADDR PORT\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, nullptr, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);	// a dead child: EPIPE, not death

	// The kernel copies pinned pages for the child at fork (it says so
	// through netlink), so registered memory stays inheritable without
	// ibv_fork_init(). (ibv_fork_init() or RDMAV_FORK_SAFE=1 would still
	// mark every MR MADV_DONTFORK with the rdma-core of the test VM: a
	// child touching one faults.)
	enum ibv_fork_status fs = ibv_is_fork_initialized();

	check(fs == IBV_FORK_UNNEEDED,
	      fmt("ibv_is_fork_initialized() is IBV_FORK_UNNEEDED (got %d)", fs));

	Conn c;
	cm_pair::Pair pair(argv[1], argv[2]);
	rdma_conn_param p{};
	rdma_cm_id *passive;
	SideOpts o;

	c.abuf = static_cast<uint8_t *>(page_buf());
	c.bbuf = static_cast<uint8_t *>(page_buf());
	std::memset(c.abuf, 0, kBuf);
	std::memset(c.bbuf, 0, kBuf);
	p.responder_resources = 1;
	p.initiator_depth = 1;
	o.mem_bytes = kBuf;
	SideOpts oa = o, ob = o;

	oa.ext_mem = c.abuf;
	ob.ext_mem = c.bbuf;
	pair.connect([&](rdma_cm_id *id) { c.a.setup(id, oa); },
		     [&](rdma_cm_id *id) { c.b.setup(id, ob); }, p, p,
		     &passive);
	int maps = uverbs_maps();

	check(maps > 0, fmt("the parent maps the device's rings (%d mappings)", maps));
	c.traffic("before any fork");

	// ---- touch -------------------------------------------------------
	{
		int go[2], done[2];

		if (pipe(go) || pipe(done))
			die("pipe");
		int r0 = c.round;
		pid_t pid = fork();

		if (pid < 0)
			die("fork");
		if (!pid) {
			char x;
			int bad = 0;

			if (read(go[0], &x, 1) != 1)
				_exit(10);
			// The bytes of the fork, not the parent's later ones.
			if (Conn::first_diff(c.abuf + kWriteSrc, r0, 0, kWriteLen) != kWriteLen ||
			    Conn::first_diff(c.bbuf, r0, 0, kWriteLen) != kWriteLen ||
			    Conn::first_diff(c.abuf + kBackAt, r0, 2, kBackLen) != kBackLen)
				bad |= 1;
			std::memset(c.abuf, kChildByte, kBuf);
			std::memset(c.bbuf, kChildByte, kBuf);
			if (!std::all_of(c.abuf, c.abuf + kBuf,
					 [](uint8_t v) { return v == kChildByte; }))
				bad |= 2;
			if (uverbs_maps())
				bad |= 4;
			if (write(done[1], &x, 1) != 1 || read(go[0], &x, 1) != 1)
				_exit(11);
			_exit(bad);
		}
		// A child that dies ends the handshake (EOF), not the test.
		close(go[0]);
		close(done[1]);
		c.traffic("child alive, before it touches the buffers");
		char x = 0;

		if (write(go[1], &x, 1) != 1 || read(done[0], &x, 1) != 1) {
			int st;

			waitpid(pid, &st, 0);
			check(false, fmt("touch child: %s", status_str(st).c_str()));
			return checks::summary();
		}
		check(no_child_bytes(c.abuf, kBuf) && no_child_bytes(c.bbuf, kBuf),
		      "the child's writes to its buffers do not show in the parent's");
		c.traffic("child alive, after it overwrote its buffers");
		check(no_child_bytes(c.abuf, kBuf) && no_child_bytes(c.bbuf, kBuf),
		      "no byte of the child's reached either end");
		if (write(go[1], &x, 1) != 1)
			die("child release");
		int st;

		if (waitpid(pid, &st, 0) != pid)
			die("waitpid");
		check(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      fmt("touch child: saw the bytes of the fork, wrote its own, mapped no ring: %s (bits: 1 fork bytes, 2 own bytes, 4 ring mapped)",
			  status_str(st).c_str()));
		c.traffic("after the touch child exited");
		close(go[1]);
		close(done[0]);
	}

	// ---- misuse --------------------------------------------------------
	{
		std::memset(c.bbuf + kChildAt, 0, kBuf - kChildAt);
		note_rings();
		pid_t pid = fork();

		if (pid < 0)
			die("fork");
		if (!pid) {
			struct sigaction sa{};

			sa.sa_sigaction = on_segv;
			sa.sa_flags = SA_SIGINFO;
			sigaction(SIGSEGV, &sa, nullptr);
			std::memset(c.abuf, kChildByte, kBuf);
			int rc = c.a.post(IBV_WR_RDMA_WRITE, kChildWrId, c.abuf,
					  64, true,
					  (uintptr_t)(c.bbuf + kChildAt),
					  c.b.mr->rkey);
			_exit(rc ? 20 : 0);
		}
		int st;

		if (waitpid(pid, &st, 0) != pid)
			die("waitpid");
		check(WIFEXITED(st) && WEXITSTATUS(st) == 77,
		      fmt("a child's post on the parent's QP faults (SIGSEGV) at an address of the parent's rings: %s (77: at a ring, 78: elsewhere, 0: the post went through)",
			  status_str(st).c_str()));
		usleep(200 * 1000);
		auto stray = c.a.poll(1, 200);

		check(stray.empty(),
		      fmt("no completion of the child's in the parent's CQ (got %zu, wr_id %#llx)",
			  stray.size(),
			  stray.empty() ? 0ULL :
					  (unsigned long long)stray[0].wr_id));
		for (int i = 0; i < 3; i++)
			c.traffic("after the misusing child");
		check(no_child_bytes(c.bbuf, kBuf) && no_child_bytes(c.abuf, kBuf),
		      "no byte of the misusing child's reached either end");
	}

	// ---- exec ----------------------------------------------------------
	{
		pid_t pid = fork();

		if (pid < 0)
			die("fork");
		if (!pid) {
			execlp("true", "true", (char *)nullptr);
			_exit(127);
		}
		int st;

		if (waitpid(pid, &st, 0) != pid)
			die("waitpid");
		check(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      fmt("a child that execs true: %s", status_str(st).c_str()));
		c.traffic("after the exec child exited");
	}

	rdma_disconnect(c.a.id);
	return checks::summary();
}
