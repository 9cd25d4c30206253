// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// xiw_wirefuzz: a wire fuzzer against the live module.
//
// A raw TCP peer (no RDMA stack) that connects to xiw_target (an rdma_cm
// server on xiw), completes MPA revision 2 by hand as xiw_badpeer does,
// sends the RTR and then streams FPDUs built from the committed seed
// corpus of the host fuzz harnesses
// (selftests/fuzz/corpus: ddp_hdr, term, atomic, fpdu_stream), mutated with
// a seeded PRNG:
//
//   retarget   STag/TO of tagged segments, Read Request sources, atomic and
//              commit targets pointed into the target's regions (so the
//              checks past the STag lookup run), MSN set to the expected
//              one, MO to 0: a well-formed FPDU that may be legal
//   bit flips  in the headers (mostly) or anywhere
//   fields     ULPDU_Length, MO, STag, MSN, QN, opcode, Read size, TO set
//              to boundary or random values
//   truncation the FPDU cut short (the stream desynchronises), sometimes
//              followed by FIN
//   splicing   the head of one FPDU on the tail of another
//   CRC        correct when CRC was negotiated, now and then wrong
//
// It reconnects whenever xiw ends the connection (Terminate, FIN, RST) or
// after a random number of FPDUs, reads everything xiw sends (so Read
// Responses never block xiw's TX), and counts what it sees. At the end:
//
//   STATS conns=N mpa_ok=N fpdus=N bytes=N terms=N rresps=N other=N
//         eof=N reset=N stuck=N rejected=N seconds=S
//   TERMCODES layer/type/code=count ...     (the Terminates xiw sent)
//
// A PROGRESS line with the same counters every 10 s.
//
// Read Responses are checked where their bytes are known: now and then a
// connection starts (right after the RTR, the stream still in step) with
// a probe, a well-formed Write of random bytes into the RW region and a
// Read Request of the same range to a sink STag of the probe's own. Every
// Read Response to a probe must carry exactly those bytes, at the sink
// offsets asked for, and a probe answered to its last segment must have
// had every byte:
//
//   PROBES sent=N answered=N bad=N
//   BADRRESP stag=0x... to=0x... len=N: WHY      (each of the first few)
//
// Exit 3 when a Read Response was wrong. Nothing else here judges xiw's
// answers: the test judges the module (kernel log, the target's regions,
// leaks). Unlike xiw_badpeer and xiw_mpa_peer, whose
// frames come from progs/rfc_wire.h (the RFCs' layouts written out
// independently, so that they check xiw's wire constants), the fuzzer
// builds its frames and CRCs with kernel/xiw_wire.h: it checks robustness,
// not the wire format, and mutates most fields anyway. Exit 0 when the
// budget ran out, 2 on a usage or system error, 1 when no connection could
// be made at all.
//
// Usage: xiw_wirefuzz ADDR PORT --corpus DIR [--seed N] [--time SEC]
//                     [--crc-every N] [--max-fpdus N]
#include "kcompat.h"
#include "target_info.h"
#include "xiw_wire.h"

#include <algorithm>
#include <arpa/inet.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <random>
#include <string>
#include <sys/socket.h>
#include <unistd.h>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
using Bytes = std::vector<u8>;
namespace fs = std::filesystem;

struct Stats {
	unsigned long conns = 0, mpa_ok = 0, fpdus = 0, bytes = 0, terms = 0,
		      rresps = 0, other = 0, eof = 0, reset = 0, stuck = 0,
		      rejected = 0, probes = 0, probes_answered = 0,
		      probes_bad = 0;
	std::map<std::string, unsigned long> codes;
};

Stats st;
std::mt19937_64 rng;

u64 rnd(u64 n)	// [0, n)
{
	return n ? rng() % n : 0;
}

bool chance(unsigned pct)
{
	return rnd(100) < pct;
}

void put_be32(Bytes &b, size_t off, u32 v)
{
	if (off + 4 > b.size())
		return;
	for (int i = 0; i < 4; i++)
		b[off + i] = u8(v >> (24 - 8 * i));
}

void put_be64(Bytes &b, size_t off, u64 v)
{
	put_be32(b, off, u32(v >> 32));
	put_be32(b, off + 4, u32(v));
}

u32 get_be32(const Bytes &b, size_t off)
{
	if (off + 4 > b.size())
		return 0;
	return u32(b[off]) << 24 | u32(b[off + 1]) << 16 |
	       u32(b[off + 2]) << 8 | b[off + 3];
}

// ---------------------------------------------------------------------------
// Corpus: every FPDU of the committed seeds, without pad and CRC
// (MPA length + ULPDU).

std::vector<Bytes> corpus;

void split_fpdus(const Bytes &s, size_t off)
{
	while (off + 2 <= s.size()) {
		u32 ulpdu = u32(s[off]) << 8 | s[off + 1];
		size_t flen = xiw_mpa_fpdu_len(ulpdu);

		if (ulpdu < 4 || off + flen > s.size())
			return;
		corpus.emplace_back(s.begin() + off, s.begin() + off + 2 + ulpdu);
		off += flen;
	}
}

void load_corpus(const std::string &dir)
{
	for (const char *h : { "ddp_hdr", "term", "atomic", "fpdu_stream" }) {
		fs::path d = fs::path(dir) / h;

		if (!fs::is_directory(d))
			continue;
		for (const auto &e : fs::directory_iterator(d)) {
			if (e.path().filename().string().rfind("crash-", 0) == 0)
				continue;
			std::ifstream f(e.path(), std::ios::binary);
			Bytes s((std::istreambuf_iterator<char>(f)), {});

			// fpdu_stream: a control byte, then the stream
			split_fpdus(s, std::string(h) == "fpdu_stream" ? 1 : 0);
		}
	}
}

// ---------------------------------------------------------------------------
// One connection

// A probe: the bytes Written to the RW region and Read back to the sink
// STag stag at sink offset to.
constexpr u32 kProbeStag = 0x7e5e0000;	// | probe number; no target's STag
struct Probe {
	u64 to = 0;
	Bytes data;
	std::vector<bool> got;	// which bytes came back
	bool last = false;	// the segment with L came
};

struct Conn {
	int fd = -1;
	bool crc = false;
	u32 msn[XIW_QN_COUNT] = { 1, 1, 1, 1 };
	target_info::Info ti{};
	Bytes rx;
	bool dead = false;
	std::map<u32, Probe> probes;
};

void probe_bad(u32 stag, u64 to, size_t len, const char *why)
{
	if (st.probes_bad++ < 5)
		std::printf("BADRRESP stag=0x%x to=0x%llx len=%zu: %s\n", stag,
			    (unsigned long long)to, len, why);
}

// A Read Response (the FPDU at @f, MPA length on, @ulpdu long): if it is
// for a probe, its bytes must be the probe's.
void check_rresp(Conn &c, const u8 *f, u32 ulpdu)
{
	u32 stag = u32(f[4]) << 24 | u32(f[5]) << 16 | u32(f[6]) << 8 | f[7];
	u64 to = 0;

	for (int i = 0; i < 8; i++)
		to = to << 8 | f[8 + i];
	auto it = c.probes.find(stag);
	if (it == c.probes.end())
		return;
	Probe &p = it->second;
	size_t n = ulpdu - 14;	// after the tagged DDP/RDMAP header
	const u8 *d = f + 16;

	if (to < p.to || to - p.to > p.data.size() ||
	    n > p.data.size() - (to - p.to)) {
		probe_bad(stag, to, n, "outside the range asked for");
		return;
	}
	size_t off = to - p.to;
	if (std::memcmp(d, p.data.data() + off, n)) {
		probe_bad(stag, to, n, "bytes differ from those written");
		return;
	}
	for (size_t i = 0; i < n; i++)
		p.got[off + i] = true;
	if (f[2] & XIW_DDP_L) {
		p.last = true;
		if (std::find(p.got.begin(), p.got.end(), false) != p.got.end())
			probe_bad(stag, p.to, p.data.size(),
				  "last segment, bytes missing");
		else
			st.probes_answered++;
	}
}

// Read and parse what xiw sent; false once the connection is gone.
bool drain(Conn &c, int timeout_ms)
{
	pollfd pfd{ c.fd, POLLIN, 0 };

	while (poll(&pfd, 1, timeout_ms) > 0) {
		u8 buf[65536];
		ssize_t n = recv(c.fd, buf, sizeof(buf), MSG_DONTWAIT);

		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
			if (n == 0)
				st.eof++;
			else
				st.reset++;
			c.dead = true;
			return false;
		}
		if (n < 0)
			break;
		c.rx.insert(c.rx.end(), buf, buf + n);
		timeout_ms = 0;
	}
	// parse whole FPDUs (xiw's own are well-formed)
	size_t off = 0;

	while (c.rx.size() - off >= 4) {
		u32 ulpdu = u32(c.rx[off]) << 8 | c.rx[off + 1];
		size_t flen = xiw_mpa_fpdu_len(ulpdu);

		if (c.rx.size() - off < flen)
			break;
		u8 ddp = c.rx[off + 2], rd = c.rx[off + 3];
		int op = xiw_rdmap_opcode(rd);

		if (!(ddp & XIW_DDP_T) && op == XIW_RDMAP_OP_TERMINATE &&
		    ulpdu >= XIW_DDP_UNTAGGED_HDR_LEN + 4) {
			__be32 tcv;
			xiw_term_code tc;
			char k[32];

			std::memcpy(&tcv, &c.rx[off + 20], 4);
			xiw_term_parse(tcv, &tc);
			std::snprintf(k, sizeof(k), "%u/%u/0x%02x", tc.layer,
				      tc.etype, tc.ecode);
			st.codes[k]++;
			st.terms++;
		} else if ((ddp & XIW_DDP_T) && op == XIW_RDMAP_OP_READ_RESP) {
			st.rresps++;
			if (ulpdu >= XIW_DDP_TAGGED_HDR_LEN)
				check_rresp(c, &c.rx[off], ulpdu);
		} else {
			st.other++;
		}
		off += flen;
	}
	c.rx.erase(c.rx.begin(), c.rx.begin() + off);
	return true;
}

// Send all of @b, reading meanwhile; false when the connection is gone or
// xiw stopped reading for 3 s.
bool send_all(Conn &c, const Bytes &b)
{
	size_t off = 0;
	auto end = Clock::now() + std::chrono::seconds(3);

	while (off < b.size()) {
		ssize_t n = send(c.fd, b.data() + off, b.size() - off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n > 0) {
			off += n;
			st.bytes += n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR) {
			st.reset++;
			c.dead = true;
			return false;
		}
		if (Clock::now() > end) {
			st.stuck++;
			return false;
		}
		pollfd pfd{ c.fd, POLLOUT | POLLIN, 0 };

		poll(&pfd, 1, 50);
		if ((pfd.revents & POLLIN) && !drain(c, 0))
			return false;
	}
	return true;
}

// Header (MPA length on) + payload -> FPDU with pad and CRC. @fix_len:
// set the MPA length from the size.
Bytes seal(const Conn &c, Bytes f, bool fix_len, bool bad_crc)
{
	if (f.size() < 2)
		f.resize(2);
	u32 ulpdu = std::min<size_t>(f.size() - 2, XIW_MPA_ULPDU_MAX);

	f.resize(2 + ulpdu);
	if (fix_len) {
		f[0] = u8(ulpdu >> 8);
		f[1] = u8(ulpdu);
	}
	f.resize(f.size() + xiw_mpa_pad(ulpdu), 0);
	u32 crc = 0;

	if (c.crc)
		crc = le32_to_cpu(xiw_crc_trailer(
			xiw_crc_update(XIW_CRC32C_SEED, f.data(), f.size())));
	if (bad_crc)
		crc ^= 1u << rnd(32);
	for (int i = 0; i < 4; i++)
		f.push_back(u8(crc >> (8 * i)));
	return f;
}

bool is_tagged(const Bytes &f)
{
	return f.size() > 2 && (f[2] & XIW_DDP_T);
}

// A region of the target (or something near it) for a target field.
void pick_target(const Conn &c, u32 *stag, u64 *to, u32 len)
{
	const target_info::Info &t = c.ti;
	u64 base = t.rw_addr, rlen = t.rw_len;

	switch (rnd(10)) {
	case 0: case 1: case 2: case 3: case 4: case 5:
		*stag = t.rw_stag;
		break;
	case 6: case 7:
		*stag = t.ro_stag;
		base = t.ro_addr;
		rlen = t.ro_len;
		break;
	case 8:	// a neighbour index or key: another MR of this target
		*stag = (t.rw_stag + (rnd(9) - 4) * 0x100) ^ u32(rnd(4));
		break;
	default:
		*stag = chance(50) ? u32(rng()) : u32(rnd(0x400));
		break;
	}
	u64 room = rlen > len ? rlen - len : 0;

	*to = base + (chance(80) ? rnd(room + 1) & ~7ULL : rnd(2 * rlen) - rlen / 2);
}

// Point a seed at the target: a plausible FPDU of this connection.
void retarget(Conn &c, Bytes &f)
{
	if (f.size() < 4)
		return;
	u32 stag;
	u64 to;

	if (is_tagged(f)) {
		if (f.size() < 16)
			return;
		u32 len = f.size() - 16;

		if (len > target_info::kRegion && chance(80)) {
			len = rnd(target_info::kRegion) + 1;
			f.resize(16 + len);
		}
		pick_target(c, &stag, &to, len);
		put_be32(f, 4, stag);
		put_be64(f, 8, to);
		return;
	}
	if (f.size() < 20)
		return;
	u32 qn = get_be32(f, 8);

	if (qn < XIW_QN_COUNT)
		put_be32(f, 12, c.msn[qn]);
	if (chance(80))
		put_be32(f, 16, 0);	// MO
	int op = xiw_rdmap_opcode(f[3]);

	switch (op) {
	case XIW_RDMAP_OP_READ_REQ:	// sink, size, source
		put_be32(f, 32, u32(rnd(target_info::kRegion) + 1));
		pick_target(c, &stag, &to, get_be32(f, 32));
		put_be32(f, 36, stag);
		put_be64(f, 40, to);
		break;
	case XIW_RDMAP_OP_ATOMIC_REQ:	// aopcode, req id, stag, to
		pick_target(c, &stag, &to, 8);
		put_be32(f, 28, stag);
		put_be64(f, 32, to);
		break;
	case XIW_RDMAP_OP_FLUSH_REQ:
	case XIW_RDMAP_OP_VERIFY_REQ:
	case XIW_RDMAP_OP_ATOMIC_WRITE_REQ:
		// commit-draft requests: stag, length, to
		pick_target(c, &stag, &to, get_be32(f, 24));
		put_be32(f, 20, stag);
		put_be64(f, 28, to);
		break;
	default:
		break;
	}
}

const u32 kInteresting[] = { 0, 1, 2, 3, 4, 7, 8, 14, 18, 0x7f, 0x80, 0xff,
			     0x100, 0x1000, 0xfffe, 0xffff, 0x10000, 0x7fffffff,
			     0x80000000, 0xfffffffe, 0xffffffff };

u32 interesting()
{
	return kInteresting[rnd(std::size(kInteresting))];
}

// One mutation of @f (MPA length on, no pad/CRC). Sets *fix_len = false
// when it chose the MPA length itself.
void mutate(Conn &c, Bytes &f, bool *fix_len)
{
	size_t hdr = std::min<size_t>(f.size(), is_tagged(f) ? 16 : 48);

	switch (rnd(12)) {
	case 0: case 1: case 2:	// bit flips in the header
		for (int i = 0, n = 1 + rnd(3); i < n && hdr > 2; i++)
			f[2 + rnd(hdr - 2)] ^= u8(1 << rnd(8));
		break;
	case 3:	// bit flip anywhere, or an interesting byte
		if (f.size() > 2)
			f[2 + rnd(f.size() - 2)] ^= chance(50) ? u8(1 << rnd(8))
							       : u8(interesting());
		break;
	case 4:	// the MPA length
		*fix_len = false;
		{
			u32 v = chance(30) ? u32(rnd(40)) :
				chance(50) ? interesting() :
					     u32(f.size() - 2 + rnd(64) - 32);

			f[0] = u8(v >> 8);
			f[1] = u8(v);
		}
		break;
	case 5:	// MO / TO
		if (is_tagged(f))
			put_be64(f, 8, chance(50) ? u64(interesting()) << (rnd(2) * 32)
						  : c.ti.rw_addr + rnd(8192) - 2048);
		else
			put_be32(f, 16, chance(50) ? interesting() : u32(rnd(8192)));
		break;
	case 6:	// STag (tagged) or MSN/QN (untagged)
		if (is_tagged(f)) {
			u32 s;
			u64 to;

			pick_target(c, &s, &to, 0);
			put_be32(f, 4, s);
		} else if (chance(50)) {
			put_be32(f, 12, c.msn[rnd(4)] + u32(rnd(5)) - 2);
		} else {
			put_be32(f, 8, chance(70) ? u32(rnd(5)) : interesting());
		}
		break;
	case 7:	// opcode, T, L, versions
		if (f.size() > 3) {
			if (chance(50))
				f[3] = u8((f[3] & 0xf0) | rnd(16));
			else
				f[2] ^= u8(chance(50) ? XIW_DDP_L : XIW_DDP_T);
		}
		break;
	case 8: {	// splice: our head, another seed's tail
		const Bytes &o = corpus[rnd(corpus.size())];
		size_t cut = rnd(f.size() + 1), ocut = rnd(o.size() + 1);

		f.resize(cut);
		f.insert(f.end(), o.begin() + ocut, o.end());
		break;
	}
	case 9:	// payload grows or shrinks
		if (chance(50))
			f.resize(f.size() + rnd(chance(20) ? 9000 : 300), u8(rng()));
		else if (f.size() > 2)
			f.resize(2 + rnd(f.size() - 1));
		break;
	case 10:	// Read size / atomic or commit length
		if (!is_tagged(f) && f.size() >= 36)
			put_be32(f, chance(50) ? 32 : 24, interesting());
		break;
	default:	// an Invalidate STag
		if (!is_tagged(f))
			put_be32(f, 4, chance(50) ? c.ti.rw_stag : u32(rng()));
		break;
	}
}

// Count MSNs as xiw will (untagged last segments on a valid QN).
void account(Conn &c, const Bytes &f)
{
	if (f.size() >= 20 && !is_tagged(f) && (f[2] & XIW_DDP_L)) {
		u32 qn = get_be32(f, 8);

		if (qn < XIW_QN_COUNT)
			c.msn[qn]++;
	}
}

// Connect and negotiate; false when the connection did not come up.
bool open_conn(Conn &c, const addrinfo *ai, unsigned crc_every)
{
	c.fd = socket(ai->ai_family, SOCK_STREAM, 0);
	if (c.fd < 0) {
		std::perror("socket");
		std::exit(2);
	}
	int one = 1;

	setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(c.fd, ai->ai_addr, ai->ai_addrlen)) {
		st.rejected++;
		c.dead = true;
		return false;
	}
	st.conns++;
	bool crc = crc_every && !rnd(crc_every);
	unsigned rtr = rnd(3);	// 0 write, 1 read, 2 send
	xiw_mpa_rr rr{};
	Bytes req(sizeof(rr) + sizeof(xiw_mpa_v2));

	std::memcpy(rr.key, XIW_MPA_KEY_REQ, XIW_MPA_KEY_LEN);
	rr.flags = (crc ? XIW_MPA_FLAG_C : 0) | XIW_MPA_FLAG_ENHANCED;
	rr.rev = XIW_MPA_REV2;
	rr.pd_len = cpu_to_be16(sizeof(xiw_mpa_v2));
	std::memcpy(req.data(), &rr, sizeof(rr));
	xiw_mpa_v2 v2{ cpu_to_be16(u16(4 | XIW_MPA_V2_P2P |
				       (rtr == 2 ? XIW_MPA_V2_RTR_SEND : 0))),
		       cpu_to_be16(u16(4 | (rtr == 0 ? XIW_MPA_V2_RTR_WRITE : 0) |
				       (rtr == 1 ? XIW_MPA_V2_RTR_READ : 0))) };
	std::memcpy(req.data() + sizeof(rr), &v2, sizeof(v2));
	if (!send_all(c, req))
		return false;

	// the Reply
	auto end = Clock::now() + std::chrono::seconds(8);
	while (c.rx.size() < sizeof(rr) ||
	       c.rx.size() < sizeof(rr) + be16_to_cpu(
			reinterpret_cast<xiw_mpa_rr *>(c.rx.data())->pd_len)) {
		if (Clock::now() > end) {
			st.stuck++;
			return false;
		}
		pollfd pfd{ c.fd, POLLIN, 0 };
		u8 buf[2048];

		if (poll(&pfd, 1, 100) <= 0)
			continue;
		ssize_t n = recv(c.fd, buf, sizeof(buf), 0);
		if (n <= 0) {
			st.rejected++;
			return false;
		}
		c.rx.insert(c.rx.end(), buf, buf + n);
	}
	std::memcpy(&rr, c.rx.data(), sizeof(rr));
	u16 pdl = be16_to_cpu(rr.pd_len);
	Bytes pd(c.rx.begin() + sizeof(rr), c.rx.begin() + sizeof(rr) + pdl);

	c.rx.erase(c.rx.begin(), c.rx.begin() + sizeof(rr) + pdl);
	if (std::memcmp(rr.key, XIW_MPA_KEY_REP, XIW_MPA_KEY_LEN) ||
	    (rr.flags & XIW_MPA_FLAG_R) || !(rr.flags & XIW_MPA_FLAG_ENHANCED) ||
	    pdl < sizeof(xiw_mpa_v2) ||
	    !target_info::decode(pd.data() + sizeof(xiw_mpa_v2),
				 pdl - sizeof(xiw_mpa_v2), &c.ti)) {
		st.rejected++;
		return false;
	}
	c.crc = rr.flags & XIW_MPA_FLAG_C;
	std::memcpy(&v2, pd.data(), sizeof(v2));
	st.mpa_ok++;

	// the RTR the responder chose (now and then none, or a wrong one)
	if (chance(3))
		return true;
	u16 ird = be16_to_cpu(v2.ird), ord = be16_to_cpu(v2.ord);
	Bytes h;

	if (ord & XIW_MPA_V2_RTR_WRITE) {
		h.assign(16, 0);
		h[2] = xiw_ddp_ctrl(true, true);
		h[3] = xiw_rdmap_ctrl(XIW_RDMAP_OP_WRITE);
		put_be32(h, 4, XIW_RTR_READ_STAG);
	} else if (ord & XIW_MPA_V2_RTR_READ) {
		h.assign(sizeof(xiw_rdmap_rreq), 0);
		h[2] = xiw_ddp_ctrl(false, true);
		h[3] = xiw_rdmap_ctrl(XIW_RDMAP_OP_READ_REQ);
		put_be32(h, 8, XIW_QN_REQ);
		put_be32(h, 12, c.msn[XIW_QN_REQ]);
		put_be32(h, 20, XIW_RTR_READ_STAG);
		put_be32(h, 36, XIW_RTR_READ_STAG);
	} else if (ird & XIW_MPA_V2_RTR_SEND) {
		h.assign(20, 0);
		h[2] = xiw_ddp_ctrl(false, true);
		h[3] = xiw_rdmap_ctrl(XIW_RDMAP_OP_SEND);
		put_be32(h, 12, c.msn[XIW_QN_SEND]);
	} else {
		return true;
	}
	account(c, h);
	return send_all(c, seal(c, h, true, false));
}

// A probe (see the top): Write random bytes into the RW region, Read them
// back to a sink STag of the probe's own.
bool send_probe(Conn &c)
{
	u32 len = 1 + rnd(chance(50) ? 64 : 3000);
	u64 off = rnd(target_info::kRegion - len + 1);
	u32 stag = kProbeStag | u32(st.probes & 0xffff);
	Probe p;

	p.to = rng() & 0xffffffffffffULL;
	p.data.resize(len);
	for (u8 &b : p.data)
		b = u8(rng());
	p.got.assign(len, false);

	Bytes w(16, 0);
	w[2] = xiw_ddp_ctrl(true, true);
	w[3] = xiw_rdmap_ctrl(XIW_RDMAP_OP_WRITE);
	put_be32(w, 4, c.ti.rw_stag);
	put_be64(w, 8, c.ti.rw_addr + off);
	w.insert(w.end(), p.data.begin(), p.data.end());

	Bytes r(sizeof(xiw_rdmap_rreq), 0);
	r[2] = xiw_ddp_ctrl(false, true);
	r[3] = xiw_rdmap_ctrl(XIW_RDMAP_OP_READ_REQ);
	put_be32(r, 8, XIW_QN_REQ);
	put_be32(r, 12, c.msn[XIW_QN_REQ]);
	put_be32(r, 20, stag);			// sink STag
	put_be64(r, 24, p.to);			// sink TO
	put_be32(r, 32, len);			// size
	put_be32(r, 36, c.ti.rw_stag);		// source
	put_be64(r, 40, c.ti.rw_addr + off);
	account(c, r);
	c.probes[stag] = std::move(p);
	st.probes++;
	Bytes all = seal(c, w, true, false), rr = seal(c, r, true, false);

	all.insert(all.end(), rr.begin(), rr.end());
	return send_all(c, all);
}

void close_conn(Conn &c)
{
	if (c.fd < 0)
		return;
	switch (rnd(4)) {
	case 0: {	// RST
		linger l{ 1, 0 };

		setsockopt(c.fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
		break;
	}
	case 1:	// FIN, then read what comes until EOF (bounded)
		shutdown(c.fd, SHUT_WR);
		for (int i = 0; i < 20 && !c.dead; i++)
			drain(c, 50);
		break;
	default:
		break;
	}
	close(c.fd);
	c.fd = -1;
}

void print_stats(const char *tag, double secs)
{
	std::printf("%s conns=%lu mpa_ok=%lu fpdus=%lu bytes=%lu terms=%lu "
		    "rresps=%lu other=%lu eof=%lu reset=%lu stuck=%lu "
		    "rejected=%lu seconds=%.0f\n",
		    tag, st.conns, st.mpa_ok, st.fpdus, st.bytes, st.terms,
		    st.rresps, st.other, st.eof, st.reset, st.stuck,
		    st.rejected, secs);
	if (!std::strcmp(tag, "STATS"))
		std::printf("PROBES sent=%lu answered=%lu bad=%lu\n", st.probes,
			    st.probes_answered, st.probes_bad);
}

[[noreturn]] void usage()
{
	std::fprintf(stderr, "usage: xiw_wirefuzz ADDR PORT --corpus DIR "
		     "[--seed N] [--time SEC] [--crc-every N] [--max-fpdus N]\n");
	std::exit(2);
}

} // namespace

int main(int argc, char **argv)
{
	setvbuf(stdout, nullptr, _IOLBF, 0);
	std::vector<std::string> pos;
	std::string corpus_dir;
	u64 seed = 1;
	unsigned secs = 60, crc_every = 3, max_fpdus = 300;

	for (int i = 1; i < argc; i++) {
		std::string a = argv[i];
		auto val = [&]() -> std::string {
			if (i + 1 >= argc)
				usage();
			return argv[++i];
		};
		try {
			if (a == "--corpus")
				corpus_dir = val();
			else if (a == "--seed")
				seed = std::stoull(val(), nullptr, 0);
			else if (a == "--time")
				secs = std::stoul(val());
			else if (a == "--crc-every")
				crc_every = std::stoul(val());
			else if (a == "--max-fpdus")
				max_fpdus = std::max(1UL, std::stoul(val()));
			else if (!a.empty() && a[0] == '-')
				usage();
			else
				pos.push_back(a);
		} catch (const std::exception &) {
			usage();
		}
	}
	if (pos.size() != 2 || corpus_dir.empty())
		usage();
	load_corpus(corpus_dir);
	if (corpus.empty()) {
		std::fprintf(stderr, "xiw_wirefuzz: no FPDUs in %s\n",
			     corpus_dir.c_str());
		return 2;
	}
	rng.seed(seed);
	std::printf("CORPUS fpdus=%zu seed=%llu time=%u\n", corpus.size(),
		    (unsigned long long)seed, secs);

	addrinfo hints{}, *ai;
	hints.ai_socktype = SOCK_STREAM;
	if (int rv = getaddrinfo(pos[0].c_str(), pos[1].c_str(), &hints, &ai); rv) {
		std::fprintf(stderr, "getaddrinfo: %s\n", gai_strerror(rv));
		return 2;
	}
	auto t0 = Clock::now(), end = t0 + std::chrono::seconds(secs);
	auto next_report = t0 + std::chrono::seconds(10);

	while (Clock::now() < end) {
		if (Clock::now() > next_report) {
			print_stats("PROGRESS", std::chrono::duration<double>(
							Clock::now() - t0).count());
			next_report += std::chrono::seconds(10);
		}
		Conn c;

		if (!open_conn(c, ai, crc_every) || c.dead) {
			close_conn(c);
			usleep(20000);
			continue;
		}
		// now and then a probe first, while the stream is in step
		if (chance(25) && !send_probe(c)) {
			close_conn(c);
			continue;
		}
		// a geometric number of FPDUs, most connections short
		unsigned n = 1 + rnd(chance(70) ? 8 : max_fpdus);

		for (unsigned i = 0; i < n && !c.dead && Clock::now() < end; i++) {
			Bytes f = corpus[rnd(corpus.size())];
			bool fix_len = true;

			if (chance(75))
				retarget(c, f);
			// every third FPDU goes as it is (a valid stream
			// reaches deeper), the rest with 1-4 mutations
			if (!chance(33))
				for (int m = 0, k = 1 + rnd(4); m < k; m++)
					mutate(c, f, &fix_len);
			account(c, f);
			Bytes w = seal(c, f, fix_len, c.crc && chance(3));

			if (chance(4)) {	// truncation
				w.resize(rnd(w.size()));
				if (chance(50)) {
					send_all(c, w);
					st.fpdus++;
					shutdown(c.fd, SHUT_WR);
					break;
				}
			}
			if (!send_all(c, w))
				break;
			st.fpdus++;
			if (!drain(c, 0))
				break;
		}
		// what xiw answers to the last FPDUs
		if (!c.dead)
			drain(c, chance(20) ? 200 : 5);
		close_conn(c);
	}
	freeaddrinfo(ai);
	double took = std::chrono::duration<double>(Clock::now() - t0).count();

	print_stats("STATS", took);
	std::string codes;
	for (const auto &[k, v] : st.codes)
		codes += " " + k + "=" + std::to_string(v);
	std::printf("TERMCODES%s\n", codes.c_str());
	if (st.probes_bad)
		return 3;
	return st.mpa_ok ? 0 : 1;
}
