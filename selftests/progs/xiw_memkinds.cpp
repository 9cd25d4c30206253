// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// xiw_memkinds: RDMA Write and Read on the kinds of memory users register,
// not only anonymous 4 KiB pages (verbs_memkinds).
//
//   xiw_memkinds ADDR PORT KIND [PATH]
//
// One process, both ends of one connection (cm_pair.h). The passive end
// registers the target memory of KIND; the active end, an anonymous
// buffer. A round: the active end Writes a pattern of its own into the
// target at an offset, then Reads the range back (the Read is answered
// after the Write is placed) and compares; the target's owner then sees
// the pattern through its own view of the memory (for a file: pread()
// of the file); it writes a second pattern there (for a file: pwrite())
// and the active end Reads it back. Every completion must be a success
// with the expected byte count; any byte wrong fails the kind.
//
// KIND:
//   hugetlb   4 MiB of MAP_HUGETLB (2 MiB pages; vm.nr_hugepages set by
//             the test); the Write crosses the huge page boundary
//   thp       4 MiB of anonymous memory, 2 MiB aligned, MADV_HUGEPAGE;
//             prints "THP kB=N" (AnonHugePages of the range, smaps)
//   file      PATH (tmpfs, ext4, ...), 4 MiB, MAP_SHARED; if the kernel
//             refuses to pin it for writing, prints "REGFAIL errno=N" and
//             exits 3 (Linux 6.5 on: a file system that tracks dirty pages,
//             ext4 for one, is not pinned long-term for writing)
//   file-ro   the same, registered for remote reads only (no local write):
//             the owner's pwrite() bytes are Read back
//   sges      a Write gathered from as many SGEs as the QP has (up to
//             16), a Read scattered into as many as a Read may have
//             (max_sge_rd), each of an odd length at an odd offset, most
//             of them crossing a page boundary
//   big       a region of more than 4 GiB of virtual memory, made of
//             4084 MAP_SHARED mappings of one 1028 KiB file (PATH) side by
//             side: Write and Read at offsets beyond 4 GiB, and across the
//             seam of two mappings; 2^32 is not a multiple of the file's
//             size, so an offset cut to 32 bits lands 16 pages away
// Prints "PASS KIND ..." and exits 0, or "FAIL KIND: why" and exits 1.
#include "verbs_side.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

using cm_pair::die;
using cm_pair::Side;
using cm_pair::SideOpts;

namespace {

constexpr size_t kMiB = 1 << 20;
constexpr size_t kLocal = 1 * kMiB;	// the active end's buffer
constexpr size_t kBigFile = 1028 * 1024;	// 257 pages
constexpr size_t kBigMaps = 4084;	// kBigFile * kBigMaps > 4 GiB

uint8_t pattern(uint32_t seed, size_t i)
{
	uint32_t x = seed * 2654435761U + (uint32_t)i * 40503U;

	return (uint8_t)(x >> 13 ^ x >> 24);
}

[[noreturn]] void failk(const char *kind, const std::string &why)
{
	std::printf("FAIL %s: %s\n", kind, why.c_str());
	std::exit(1);
}

// The target memory, and how its owner reads and writes it.
struct Target {
	uint8_t *base = nullptr;	// the registered range
	size_t len = 0;
	int fd = -1;			// file kinds: the file
	size_t fsize = 0;		// file kinds: its size
	// the file offset of registered byte @off (files are mapped whole,
	// side by side for "big")
	size_t foff(size_t off) const { return fsize ? off % fsize : off; }
};

// The owner's own access to @n bytes at registered offset @off: through
// its mapping, or for a file through pread()/pwrite() (@write).
void owner_io(const Target &t, size_t off, uint8_t *buf, size_t n,
	      bool write)
{
	if (t.fd < 0) {
		if (write)
			std::memcpy(t.base + off, buf, n);
		else
			std::memcpy(buf, t.base + off, n);
		return;
	}
	while (n) {
		size_t fo = t.foff(off), k = std::min(n, t.fsize - fo);
		ssize_t r = write ? pwrite(t.fd, buf, k, (off_t)fo) :
				    pread(t.fd, buf, k, (off_t)fo);

		if (r != (ssize_t)k)
			die(write ? "pwrite" : "pread");
		buf += k;
		off += k;
		n -= k;
	}
}

size_t first_diff(const uint8_t *a, const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (a[i] != b[i])
			return i;
	return n;
}

// One WR of @op over @sges of the active end's buffer and its completion.
void run_wr(const char *kind, Side &cli, ibv_wr_opcode op,
	    std::vector<ibv_sge> &sges, uint64_t raddr, uint32_t rkey,
	    uint32_t len)
{
	ibv_send_wr wr{}, *bad;

	wr.wr_id = op;
	wr.opcode = op;
	wr.sg_list = sges.data();
	wr.num_sge = (int)sges.size();
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	int rv = ibv_post_send(cli.id->qp, &wr, &bad);

	if (rv)
		failk(kind, std::string("ibv_post_send(") +
			    (op == IBV_WR_RDMA_READ ? "Read" : "Write") + ", " +
			    std::to_string(sges.size()) + " SGEs): " +
			    std::strerror(rv));
	auto wc = cli.poll(1, 60000);
	if (wc.empty())
		failk(kind, "no completion in 60 s");
	if (wc[0].status != IBV_WC_SUCCESS)
		failk(kind, std::string(op == IBV_WR_RDMA_READ ? "Read: " :
					"Write: ") +
			    ibv_wc_status_str(wc[0].status));
	if (op == IBV_WR_RDMA_READ && wc[0].byte_len != len)
		failk(kind, "Read completed with byte_len " +
			    std::to_string(wc[0].byte_len) + ", not " +
			    std::to_string(len));
}

// The active end's buffer as SGEs: one, or @n of odd lengths at odd
// offsets (@shift varies the layout), covering @len bytes.
std::vector<ibv_sge> layout(Side &cli, size_t len, uint32_t n, size_t shift)
{
	std::vector<ibv_sge> s;
	uint8_t *p = cli.mem.data();

	if (n <= 1) {
		s.push_back({ (uintptr_t)p, (uint32_t)len, cli.mr->lkey });
		return s;
	}
	size_t at = 4093 + shift, left = len;
	for (uint32_t i = 0; i < n && left; i++) {
		size_t l = i + 1 == n ? left :
			   std::min(left, (size_t)(len / n + 2 * i + 1));

		s.push_back({ (uintptr_t)(p + at), (uint32_t)l, cli.mr->lkey });
		at += l + 4096 * (i % 3) + 7 + i;	// gaps across pages
		left -= l;
	}
	if (at > kLocal)
		die("layout does not fit");
	return s;
}

void gather(const std::vector<ibv_sge> &s, uint8_t *out)
{
	for (auto &e : s) {
		std::memcpy(out, (void *)(uintptr_t)e.addr, e.length);
		out += e.length;
	}
}

void scatter(const std::vector<ibv_sge> &s, const uint8_t *in)
{
	for (auto &e : s) {
		std::memcpy((void *)(uintptr_t)e.addr, in, e.length);
		in += e.length;
	}
}

// A round at registered offset @off, @len bytes, the active end's data
// in @nsge pieces.
void round_at(const char *kind, Side &cli, Side &srv, const Target &t,
	      size_t off, size_t len, uint32_t nsge, uint32_t seed,
	      uint32_t nsge_rd = 1)
{
	std::vector<uint8_t> want(len), got(len);
	uint64_t raddr = (uintptr_t)t.base + off;
	char at[96];

	std::snprintf(at, sizeof(at),
		      " (offset %#zx, %zu bytes, %u SGEs, Read %u)", off, len,
		      nsge, nsge_rd);
	for (size_t i = 0; i < len; i++)
		want[i] = pattern(seed, i);
	auto ws = layout(cli, len, nsge, seed % 5);
	scatter(ws, want.data());
	run_wr(kind, cli, IBV_WR_RDMA_WRITE, ws, raddr, srv.mr->rkey, len);
	auto rs = layout(cli, len, nsge_rd, seed % 5 + 2);
	for (auto &e : rs)
		std::memset((void *)(uintptr_t)e.addr, 0x5a, e.length);
	run_wr(kind, cli, IBV_WR_RDMA_READ, rs, raddr, srv.mr->rkey, len);
	gather(rs, got.data());
	size_t d = first_diff(got.data(), want.data(), len);
	if (d != len)
		failk(kind, "Read back after the Write: byte " +
			    std::to_string(d) + " differs" + at);
	owner_io(t, off, got.data(), len, false);
	d = first_diff(got.data(), want.data(), len);
	if (d != len)
		failk(kind, "the owner's view after the Write: byte " +
			    std::to_string(d) + " differs" + at);
	for (size_t i = 0; i < len; i++)
		want[i] = pattern(seed + 7777, i);
	owner_io(t, off, want.data(), len, true);
	for (auto &e : rs)
		std::memset((void *)(uintptr_t)e.addr, 0x5a, e.length);
	run_wr(kind, cli, IBV_WR_RDMA_READ, rs, raddr, srv.mr->rkey, len);
	gather(rs, got.data());
	d = first_diff(got.data(), want.data(), len);
	if (d != len)
		failk(kind, "Read of what the owner wrote: byte " +
			    std::to_string(d) + " differs" + at);
}

// Read only: the owner writes, the active end Reads it back.
void round_ro(const char *kind, Side &cli, Side &srv, const Target &t,
	      size_t off, size_t len, uint32_t seed)
{
	std::vector<uint8_t> want(len), got(len);
	char at[64];

	std::snprintf(at, sizeof(at), " (offset %#zx, %zu bytes)", off, len);
	for (size_t i = 0; i < len; i++)
		want[i] = pattern(seed + 555, i);
	owner_io(t, off, want.data(), len, true);
	auto rs = layout(cli, len, 1, 0);
	std::memset((void *)(uintptr_t)rs[0].addr, 0x5a, len);
	run_wr(kind, cli, IBV_WR_RDMA_READ, rs, (uintptr_t)t.base + off,
	       srv.mr->rkey, len);
	gather(rs, got.data());
	size_t d = first_diff(got.data(), want.data(), len);
	if (d != len)
		failk(kind, "Read of what the owner wrote: byte " +
			    std::to_string(d) + " differs" + at);
}

// AnonHugePages of the smaps entry that holds @p, in kB.
long thp_kb(const void *p)
{
	std::ifstream f("/proc/self/smaps");
	std::string line;
	bool in = false;
	long kb = 0;

	while (std::getline(f, line)) {
		unsigned long lo, hi;

		if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 &&
		    line.find(':') > line.find(' ')) {
			in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
			continue;
		}
		if (in && std::sscanf(line.c_str(), "AnonHugePages: %ld kB",
				      &kb) == 1)
			return kb;
	}
	return 0;
}

int open_file(const char *path, size_t size)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);

	if (fd < 0 || ftruncate(fd, (off_t)size))
		die(path);
	std::vector<uint8_t> z(size, 0x11);
	if (pwrite(fd, z.data(), size, 0) != (ssize_t)size)
		die("pwrite");
	return fd;
}

Target make_target(const char *kind, const char *path)
{
	Target t;
	std::string k = kind;

	if (k == "hugetlb") {
		t.len = 4 * kMiB;
		void *p = mmap(nullptr, t.len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
		if (p == MAP_FAILED)
			failk(kind, std::string("mmap(MAP_HUGETLB): ") +
				    std::strerror(errno));
		t.base = (uint8_t *)p;
	} else if (k == "thp") {
		t.len = 4 * kMiB;
		void *p = mmap(nullptr, t.len + 2 * kMiB, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			die("mmap");
		t.base = (uint8_t *)(((uintptr_t)p + 2 * kMiB - 1) &
				     ~(uintptr_t)(2 * kMiB - 1));
		if (madvise(t.base, t.len, MADV_HUGEPAGE))
			die("madvise(MADV_HUGEPAGE)");
	} else if (k == "file" || k == "file-ro") {
		if (!path)
			failk(kind, "no PATH");
		t.fsize = t.len = 4 * kMiB;
		t.fd = open_file(path, t.fsize);
		void *p = mmap(nullptr, t.len, PROT_READ | PROT_WRITE,
			       MAP_SHARED, t.fd, 0);
		if (p == MAP_FAILED)
			die("mmap(MAP_SHARED)");
		t.base = (uint8_t *)p;
	} else if (k == "sges") {
		t.len = 4 * kMiB;
		void *p = mmap(nullptr, t.len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			die("mmap");
		t.base = (uint8_t *)p;
	} else if (k == "big") {
		if (!path)
			failk(kind, "no PATH");
		t.fsize = kBigFile;
		t.len = kBigFile * kBigMaps;
		t.fd = open_file(path, t.fsize);
		// reserve the range, then the file at every step of it
		void *p = mmap(nullptr, t.len, PROT_NONE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED)
			die("mmap(reserve)");
		t.base = (uint8_t *)p;
		for (size_t i = 0; i < kBigMaps; i++)
			if (mmap(t.base + i * kBigFile, kBigFile,
				 PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
				 t.fd, 0) == MAP_FAILED)
				failk(kind, "mmap #" + std::to_string(i) + ": " +
					    std::strerror(errno) +
					    " (vm.max_map_count?)");
	} else {
		std::fprintf(stderr, "unknown KIND %s\n", kind);
		std::exit(2);
	}
	for (size_t i = 0; i < t.len && k != "big"; i += 4096)
		t.base[i] = 0x11;	// fault it in (huge pages for thp)
	return t;
}

} // namespace

int main(int argc, char **argv)
{
	if (argc < 4) {
		std::fprintf(stderr, "usage: %s ADDR PORT KIND [PATH]\n", argv[0]);
		return 2;
	}
	const char *kind = argv[3];
	std::string k = kind;
	Target t = make_target(kind, argc > 4 ? argv[4] : nullptr);
	Side srv, cli;
	cm_pair::Pair pair(argv[1], argv[2]);
	rdma_conn_param p{};
	rdma_cm_id *passive;
	SideOpts co, so;
	ibv_device_attr da;
	uint32_t sge_rd = 1;

	p.responder_resources = 4;
	p.initiator_depth = 4;
	// The target is the passive end's, but for "big": pinning 4 GiB of
	// pages takes longer than an MPA exchange may wait, so the active
	// end registers it before it connects and the passive end posts.
	bool swap = k == "big";
	SideOpts &po = swap ? so : co, &to = swap ? co : so;
	po.mem_bytes = kLocal;
	to.ext_mem = t.base;
	to.mem_bytes = t.len;
	co.sge = so.sge = 1;
	if (k == "file-ro")
		to.access = IBV_ACCESS_REMOTE_READ;
	to.reg_mr = [](ibv_pd *pd, void *a, size_t l, int acc) {
		ibv_mr *mr = ibv_reg_mr(pd, a, l, acc);

		if (!mr) {
			std::printf("REGFAIL errno=%d (%s)\n", errno,
				    std::strerror(errno));
			std::exit(3);
		}
		return mr;
	};
	if (k == "sges") {
		rdma_cm_id *probe;
		rdma_event_channel *ch = rdma_create_event_channel();
		addrinfo *ai;
		if (!ch || rdma_create_id(ch, &probe, nullptr, RDMA_PS_TCP) ||
		    getaddrinfo(argv[1], nullptr, nullptr, &ai) ||
		    rdma_bind_addr(probe, ai->ai_addr) ||
		    ibv_query_device(probe->verbs, &da))
			die("device attributes");
		po.sge = (uint32_t)std::min(da.max_sge, 16);
		sge_rd = (uint32_t)std::min(da.max_sge_rd, (int)po.sge);
		freeaddrinfo(ai);
		rdma_destroy_id(probe);
		rdma_destroy_event_channel(ch);
	}
	pair.connect([&](rdma_cm_id *id) { cli.setup(id, co); },
		     [&](rdma_cm_id *id) { srv.setup(id, so); }, p, p,
		     &passive);
	Side &poster = swap ? srv : cli, &owner = swap ? cli : srv;

	if (k == "hugetlb" || k == "thp" || k == "file") {
		// across the 2 MiB boundary, a page-aligned one, a small one
		round_at(kind, poster, owner, t, 2 * kMiB - 3000, 64 * 1024 + 17, 1, 1);
		round_at(kind, poster, owner, t, 0, 256 * 1024, 1, 2);
		round_at(kind, poster, owner, t, t.len - 100, 100, 1, 3);
		if (k == "thp") {
			long kb = thp_kb(t.base);

			std::printf("THP kB=%ld\n", kb);
		}
	} else if (k == "file-ro") {
		round_ro(kind, poster, owner, t, 2 * kMiB - 3000, 64 * 1024 + 17, 1);
		round_ro(kind, poster, owner, t, t.len - 100, 100, 2);
	} else if (k == "sges") {
		for (uint32_t r = 0; r < 4; r++)
			round_at(kind, poster, owner, t, 4096 * r + 4095 - r,
				 200 * 1024 + 3 * r, po.sge, 10 + r, sge_rd);
		std::printf("SGES %u, Read %u\n", po.sge, sge_rd);
	} else {
		const size_t g4 = (size_t)1 << 32;
		size_t seam = (g4 / kBigFile + 1) * kBigFile;	// above 4 GiB

		round_at(kind, poster, owner, t, g4 + 5 * 4096 + 123, 64 * 1024, 1, 21);
		round_at(kind, poster, owner, t, seam - 10000, 30000, 1, 22);
		round_at(kind, poster, owner, t, t.len - 4096, 4096, 1, 23);
		// below 4 GiB, the offset an address cut to 32 bits would use
		round_at(kind, poster, owner, t, 5 * 4096 + 123, 64 * 1024, 1, 24);
		std::printf("BIG len=%#zx\n", t.len);
	}
	rdma_disconnect(cli.id);
	std::printf("PASS %s\n", kind);
	return 0;
}
