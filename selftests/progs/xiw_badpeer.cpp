// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// xiw_badpeer: a hostile iWARP peer on a raw TCP socket.
//
// Connects to xiw_target (an rdma_cm server on xiw), negotiates MPA
// revision 2 by hand (RFC 5044 / RFC 6581; every frame built and parsed
// through rfc_wire.h, the RFCs' layouts written out independently of
// kernel/xiw_wire.h, the header under test),
// sends the RTR, then sends the FPDU(s) of one case and reads what comes
// back until EOF, printing one machine-checkable line per fact:
//
//   INFO conn_id=3 crc=1 rw_stag=0x... rw_addr=0x... ro_stag=0x...
//   SENT case=oob hdr=<hex of the offending header, from the MPA length>
//   TERM layer=1 type=1 code=0x01 hdrct=0xc0 qn=2 msn=1 mo=0 last=1 len=ok seglen=82 copied=match
//   RRESP len=64 stag=0x... to=0x... data=ok     (good case)
//   ARESP msn=1 id=0x... orig=0x...               (an Atomic Response)
//   FPDU op=0x.. len=N                           (anything else received)
//   BADCRC                                        (a frame from xiw with a wrong CRC, by
//                                                  rfc_wire.h's own CRC32c: fails the good case)
//   NOTERM                                        (stream ended without a Terminate)
//   EOF | RESET | TIMEOUT
//   EXPECT rw_fnv=...                             (the target's RW region if xiw is right)
//
// Usage: xiw_badpeer ADDR PORT --case NAME [--crc] [--rtr write|send|read|none]
//                    [--timeout MS] [--hold FILE] [--foreign STAG:ADDR]
//                    [--foreign-file FILE]
//   --case good     valid Send, Write into the RW region and Read of the RO region
//   --hold FILE     (good) after one round, wait for FILE to exist, check that
//                   nothing arrived meanwhile, do a second round, then close;
//                   (midwrite) wait for FILE between the Write's two FPDUs
//   --foreign       STag and address of another connection (case foreign)
//   --foreign-file FILE   the same, read as STAG:ADDR from FILE once the
//                   target wrote it (the window cases)
//   --list          print the case names
//   --fnv-zero      print the FNV-1a of an untouched (zero) RW region
// Exit: 0 when the exchange ran (whatever xiw answered; the test judges the
// output), 1 when the good case saw something wrong, 2 on a usage or system error.
#include "raw_stream.h"
#include "rfc_wire.h"
#include "target_info.h"

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string>
#include <string_view>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace {

using u8 = uint8_t;
using u16 = uint16_t;
using u32 = uint32_t;
using u64 = uint64_t;
using Clock = raw::Clock;
using raw::fill;
using raw::need;
using raw::send_all;
using Bytes = rfc::Bytes;
namespace mpa = rfc::mpa;
namespace ddp = rfc::ddp;
namespace rdmap = rfc::rdmap;
namespace term = rfc::rdmap::term;

constexpr size_t kRegion = target_info::kRegion;
constexpr size_t kWindow = target_info::kWindow;
constexpr u32 kSinkStag = 0x12345601; // our "sink" STag for Read Requests
constexpr u64 kSinkTo = 0x100000;

[[noreturn]] void die(const char *what)
{
	std::perror(what);
	std::exit(2);
}

struct Peer : raw::Stream {
	bool crc = false;
	u32 msn[rdmap::kQnCount] = {1, 1, 1, 1};
	u32 conn_id = 0;
	u64 rw_addr = 0, ro_addr = 0;
	u32 rw_stag = 0, rw_len = 0, ro_stag = 0, ro_len = 0;
	Bytes rw_model = Bytes(kRegion, 0); // what the RW region should hold
	Bytes rw_placed;		// ... or this, if placed before the CRC check
	Bytes last_hdr;			// header of the last FPDU sent
	u32 ird = 0;			// the IRD xiw's MPA Reply gave us
	// Read Responses counted, not printed, by byte value (window cases):
	// "RSUM bytes=N a5=N ee=N other=N" at the end of rx_loop()
	bool rsum = false;
	size_t rsum_a5 = 0, rsum_ee = 0, rsum_other = 0;
};

uint64_t fnv1a(const u8 *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return h;
}

std::string hex(const u8 *p, size_t n)
{
	std::string s;
	char b[3];

	for (size_t i = 0; i < n; i++) {
		std::snprintf(b, sizeof(b), "%02x", p[i]);
		s += b;
	}
	return s;
}

// ---------------------------------------------------------------------------
// MPA negotiation

Bytes mpa_request(bool crc, u16 ird, u16 ord, bool enhanced)
{
	return mpa::frame(mpa::kKeyReq, crc ? mpa::kFlagC : 0,
			  enhanced ? mpa::kRev2 : mpa::kRev1, enhanced, ird, ord,
			  {});
}

// ---------------------------------------------------------------------------
// FPDU framing

// FPDU from a header (starting at the MPA length, which is filled in) and
// a payload; @crc_flip corrupts the CRC trailer.
Bytes fpdu(Peer &p, Bytes hdr, const Bytes &payload, bool crc_flip = false,
	   int ulpdu_override = -1)
{
	u32 ulpdu = hdr.size() - mpa::kUlpduLenLen + payload.size();
	u16 len = ulpdu_override >= 0 ? ulpdu_override : ulpdu;

	rfc::put16(hdr.data(), len);
	p.last_hdr = hdr;
	Bytes b = hdr;
	b.insert(b.end(), payload.begin(), payload.end());
	b.resize(b.size() + mpa::pad(ulpdu), 0);
	u32 crc = 0;
	if (p.crc)
		crc = rfc::crc32c(b.data(), b.size());
	if (crc_flip)
		crc ^= 0x1;
	u8 t[mpa::kCrcLen];
	rfc::crc_trailer(t, crc);
	b.insert(b.end(), t, t + mpa::kCrcLen);
	return b;
}

Bytes tagged_hdr(unsigned op, u32 stag, u64 to, bool last = true,
		 u8 ddp_ver = ddp::kVersion)
{
	return ddp::tagged(ddp::ctrl(true, last, ddp_ver), rdmap::ctrl(op),
			   stag, to);
}

Bytes untagged_hdr(u8 rdmap_ctrl, u32 qn, u32 msn, u32 mo = 0,
		   bool last = true, u8 ddp_ver = ddp::kVersion,
		   bool tagged_flag = false)
{
	return ddp::untagged(ddp::ctrl(tagged_flag, last, ddp_ver), rdmap_ctrl,
			     0, qn, msn, mo);
}

Bytes send_hdr(Peer &p, u32 mo = 0, bool last = true)
{
	return untagged_hdr(rdmap::ctrl(rdmap::kSend), rdmap::kQnSend,
			    p.msn[rdmap::kQnSend], mo, last);
}

Bytes rreq_hdr(Peer &p, u32 src_stag, u64 src_to, u32 size)
{
	Bytes b = untagged_hdr(rdmap::ctrl(rdmap::kReadReq),
			       rdmap::kQnReadReq, p.msn[rdmap::kQnReadReq]);

	rdmap::append_rreq(b, kSinkStag, kSinkTo, size, src_stag, src_to);
	return b;
}

// Atomic Request (RFC 7306 section 5.2.1, laid out by rfc_wire.h): a
// FetchAdd of @add (Add Mask 0: a plain add) to the u64 at @to of @stag.
Bytes fadd_hdr(Peer &p, u32 req_id, u32 stag, u64 to, u64 add)
{
	Bytes b = untagged_hdr(rdmap::ctrl(rdmap::kAtomicReq),
			       rdmap::kQnReadReq, p.msn[rdmap::kQnReadReq]);

	rfc::append32(b, rdmap::atomic_req::kFetchAdd);
	rfc::append32(b, req_id);
	rfc::append32(b, stag);
	rfc::append64(b, to);
	rfc::append64(b, add);	// Add Data
	rfc::append64(b, 0);	// Add Mask
	rfc::append64(b, 0);	// Compare Data, Compare Mask: unused
	rfc::append64(b, 0);
	return b;
}

Bytes pattern(size_t n, u8 seed)
{
	Bytes b(n);

	for (size_t i = 0; i < n; i++)
		b[i] = u8(seed + i * 7);
	return b;
}

// ---------------------------------------------------------------------------
// Receive side: parse FPDUs, print them

struct RxResult {
	int terms = 0;
	int rresps = 0;
	int awresps = 0;
	int other = 0;
	bool rresp_ok = true;
};

void print_term(Peer &p, const Bytes &f, u32 ulpdu)
{
	// The largest Terminate from its MPA length on, zero past what came.
	constexpr size_t kTermHdr = ddp::kUntaggedFpduHdr + term::kMax;
	u8 t[kTermHdr] = {};

	std::memcpy(t, f.data(), std::min(f.size(), kTermHdr));
	const u8 *rd = t + ddp::kUntaggedFpduHdr;	// the RDMAP part
	term::Code tc = term::parse_ctrl(rd + term::kCtrl);
	const u8 *hdrs = rd + term::kHdrs;
	u32 rlen = ulpdu - ddp::kUntaggedHdrLen;
	bool tagged = (tc.hdrct & term::kD) && (hdrs[0] & ddp::kT);
	bool len_ok = rlen == term::len(tc.hdrct, tagged);
	std::string copied = "none", seglen = "-";

	if (tc.hdrct & (term::kM | term::kD))
		seglen = std::to_string(rfc::get16(rd + term::kSegLen));
	if ((tc.hdrct & term::kD) && len_ok) {
		size_t n = rlen - term::kHdrs;
		bool same = p.last_hdr.size() >= mpa::kUlpduLenLen + n &&
			    !std::memcmp(hdrs,
					 p.last_hdr.data() + mpa::kUlpduLenLen, n);
		copied = same ? "match" : "mismatch:" + hex(hdrs, n);
	}
	std::printf("TERM layer=%u type=%u code=0x%02x hdrct=0x%02x qn=%u msn=%u "
		    "mo=%u last=%d len=%s seglen=%s copied=%s\n",
		    tc.layer, tc.etype, tc.ecode, tc.hdrct,
		    rfc::get32(t + ddp::kOffQn), rfc::get32(t + ddp::kOffMsn),
		    rfc::get32(t + ddp::kOffMo), !!(t[ddp::kOffCtrl] & ddp::kL),
		    len_ok ? "ok" : "bad", seglen.c_str(), copied.c_str());
}

// Parse and print everything received; stop at EOF, at @end, or (if
// @until_rresp) after that many Read Responses with L set.
RxResult rx_loop(Peer &p, Clock::time_point end, int until_rresp = 0)
{
	RxResult res;
	int rresp_last = 0;

	for (;;) {
		if (until_rresp && rresp_last >= until_rresp)
			return res;
		if (!need(p, 2, end))
			break;
		u32 ulpdu = rfc::get16(p.rx.data());
		size_t flen = mpa::fpdu_len(ulpdu);
		if (!need(p, flen, end))
			break;
		Bytes f(p.rx.begin(), p.rx.begin() + flen);
		p.rx.erase(p.rx.begin(), p.rx.begin() + flen);
		if (p.crc) {
			u8 want[mpa::kCrcLen];
			rfc::crc_trailer(want, rfc::crc32c(f.data(),
							   flen - mpa::kCrcLen));
			if (std::memcmp(want, f.data() + flen - mpa::kCrcLen,
					mpa::kCrcLen)) {
				// xiw's CRC, checked with rfc_wire.h's own
				std::printf("BADCRC\n");
				res.other++;
			}
		}
		u8 dc = f[ddp::kOffCtrl], rd = f[ddp::kOffUlpCtrl];
		int op = rdmap::opcode(rd);
		if (ulpdu < ddp::hdr_len(dc)) {
			std::printf("FPDU short len=%u\n", ulpdu);
			res.other++;
			continue;
		}
		if (!(dc & ddp::kT) && op == rdmap::kTerminate &&
		    ulpdu >= ddp::kUntaggedHdrLen + term::kMin) {
			print_term(p, f, ulpdu);
			res.terms++;
		} else if ((dc & ddp::kT) && op == rdmap::kReadResp) {
			u32 n = ulpdu - ddp::kTaggedHdrLen;
			u32 stag = rfc::get32(&f[ddp::kOffStag]);
			u64 to = rfc::get64(&f[ddp::kOffTo]);
			bool ok = true;
			for (u32 i = 0; i < n; i++) {
				u8 b = f[ddp::kTaggedFpduHdr + i];

				ok &= b == 0xa5;
				if (p.rsum)
					(b == 0xa5 ? p.rsum_a5 : b == 0xee ?
					 p.rsum_ee : p.rsum_other)++;
			}
			if (!p.rsum)
				std::printf("RRESP len=%u stag=0x%x to=0x%llx last=%d data=%s\n",
					    n, stag, (unsigned long long)to,
					    !!(dc & ddp::kL), ok ? "ok" : "bad");
			res.rresps++;
			if (dc & ddp::kL)
				rresp_last++;
			res.rresp_ok &= ok;
		} else if (!(dc & ddp::kT) && (op == rdmap::kFlushResp ||
						op == rdmap::kVerifyResp) &&
			   rfc::get32(&f[ddp::kOffQn]) == rdmap::kQnAtomicResp) {
			std::printf("%s msn=%u len=%u\n",
				    op == rdmap::kFlushResp ? "FLRESP" : "VRESP",
				    rfc::get32(&f[ddp::kOffMsn]), ulpdu);
			res.other++;
		} else if (!(dc & ddp::kT) && op == rdmap::kAtomicResp &&
			   ulpdu == ddp::kUntaggedHdrLen + rdmap::atomic_resp::kLen &&
			   rfc::get32(&f[ddp::kOffQn]) == rdmap::kQnAtomicResp) {
			const u8 *r = &f[ddp::kUntaggedFpduHdr];

			std::printf("ARESP msn=%u id=0x%x orig=0x%016llx\n",
				    rfc::get32(&f[ddp::kOffMsn]),
				    rfc::get32(r + rdmap::atomic_resp::kReqId),
				    (unsigned long long)rfc::get64(r + rdmap::atomic_resp::kOrig));
			res.other++;
		} else if (!(dc & ddp::kT) && op == rdmap::kAtomicWriteResp &&
			   ulpdu == ddp::kUntaggedHdrLen &&
			   rfc::get32(&f[ddp::kOffQn]) == rdmap::kQnAtomicResp) {
			std::printf("AWRESP msn=%u\n", rfc::get32(&f[ddp::kOffMsn]));
			res.awresps++;
		} else {
			std::printf("FPDU ddp=0x%02x rdmap=0x%02x len=%u\n", dc, rd,
				    ulpdu);
			res.other++;
		}
	}
	if (p.rsum)
		std::printf("RSUM bytes=%zu a5=%zu ee=%zu other=%zu\n",
			    p.rsum_a5 + p.rsum_ee + p.rsum_other, p.rsum_a5,
			    p.rsum_ee, p.rsum_other);
	if (p.eof)
		std::printf("%s\n", p.reset ? "RESET" : "EOF");
	else if (!until_rresp || rresp_last < until_rresp)
		std::printf("TIMEOUT rest=%zu\n", p.rx.size());
	return res;
}

// ---------------------------------------------------------------------------
// Cases

struct Opts {
	std::string host, port, name;
	bool crc = false;
	std::string rtr = "write";
	int timeout_ms = 8000;
	std::string hold;
	u32 foreign_stag = 0;
	u64 foreign_addr = 0;
	std::string foreign_file;	// STAG:ADDR, once the file exists
};

bool file_exists(const std::string &f);

// Wait up to 60 s for @file (the test makes it), then print HOLD_DONE.
void wait_hold(const std::string &file)
{
	auto hend = Clock::now() + std::chrono::seconds(60);

	while (!file.empty() && !file_exists(file) && Clock::now() < hend)
		usleep(20000);
	std::printf("HOLD_DONE\n");
}

void send_fpdu(Peer &p, const Bytes &hdr, const Bytes &payload = {},
	       bool crc_flip = false)
{
	send_all(p.fd, fpdu(p, hdr, payload, crc_flip));
}

Bytes commit_hdr(Peer &p, unsigned op, u32 stag, u32 len, u64 to,
		 const Bytes &tail, u32 inv_stag = 0);

// One valid round: Send, Writes, Atomic Write, Read. Returns false if the
// Read or the Atomic Write failed.
bool good_round(Peer &p, int round, int timeout_ms)
{
	Bytes msg = pattern(16 + round, u8(0x40 + round));
	send_fpdu(p, send_hdr(p), msg);
	p.msn[rdmap::kQnSend]++;
	u32 off = 128 + round * 256;
	Bytes w = pattern(200, u8(0x11 * (round + 1)));
	send_fpdu(p, tagged_hdr(rdmap::kWrite, p.rw_stag, p.rw_addr + off), w);
	std::memcpy(p.rw_model.data() + off, w.data(), w.size());
	// a two-segment Write at the end of the region (exact bounds)
	Bytes w1 = pattern(24, u8(0x77 + round)), w2 = pattern(40, u8(0x99 + round));
	u64 end = p.rw_addr + p.rw_len;
	send_fpdu(p, tagged_hdr(rdmap::kWrite, p.rw_stag, end - 64, false), w1);
	send_fpdu(p, tagged_hdr(rdmap::kWrite, p.rw_stag, end - 40, true), w2);
	std::memcpy(p.rw_model.data() + kRegion - 64, w1.data(), w1.size());
	std::memcpy(p.rw_model.data() + kRegion - 40, w2.data(), w2.size());
	// An Atomic Write of a value the draft puts on the wire big-endian
	// (section 3.1.3, "Data"): the target stores the value, in its CPU's
	// byte order, which is this host's (the same machine).
	u64 v = 0x0102030405060708ULL + u64(round);
	u32 aoff = 64 + 8 * u32(round % 8);
	Bytes data(8);
	rfc::put64(data.data(), v);
	send_fpdu(p, commit_hdr(p, rdmap::kAtomicWriteReq, p.rw_stag, 8,
				p.rw_addr + aoff, data));
	p.msn[rdmap::kQnReadReq]++;
	std::memcpy(p.rw_model.data() + aoff, &v, sizeof(v));
	send_fpdu(p, rreq_hdr(p, p.ro_stag, p.ro_addr + 100, 64));
	p.msn[rdmap::kQnReadReq]++;
	std::printf("SENT case=good round=%d\n", round);
	RxResult r = rx_loop(p, Clock::now() + std::chrono::milliseconds(timeout_ms), 1);
	bool ok = r.rresps == 1 && r.rresp_ok && r.awresps == 1 && !r.terms &&
		  !r.other;
	std::printf("ROUND %d %s\n", round, ok ? "ok" : "FAILED");
	return ok;
}

// Commit-draft request on QN 1, its fields laid out by hand from the
// draft's appendix A (not from xiw_wire.h): Data Sink STag, Data Sink
// Length, Data Sink Tagged Offset (64 bits), then @tail (Flush: the
// disposition flags; Atomic Write: the data; Verify: the hash).
Bytes commit_hdr(Peer &p, unsigned op, u32 stag, u32 len, u64 to,
		 const Bytes &tail, u32 inv_stag)
{
	Bytes b = ddp::untagged(ddp::ctrl(false, true, ddp::kVersion),
				rdmap::ctrl(op), inv_stag, rdmap::kQnReadReq,
				p.msn[rdmap::kQnReadReq], 0);
	auto put32 = [&](u32 v) {
		for (int i = 3; i >= 0; i--)
			b.push_back(u8(v >> (8 * i)));
	};
	put32(stag);
	put32(len);
	put32(u32(to >> 32));
	put32(u32(to));
	b.insert(b.end(), tail.begin(), tail.end());
	return b;
}

Bytes be32_bytes(u32 v)
{
	return { u8(v >> 24), u8(v >> 16), u8(v >> 8), u8(v) };
}

bool file_exists(const std::string &f)
{
	struct stat st;

	return !stat(f.c_str(), &st);
}

using CaseFn = std::function<void(Peer &, const Opts &)>;

struct Case {
	const char *name;
	const char *what;
	CaseFn fn;
};

const Case kCases[] = {
	{"badcrc", "Send with a wrong CRC (needs --crc)", [](Peer &p, const Opts &) {
		send_fpdu(p, send_hdr(p), pattern(16, 1), true);
	}},
	{"crc-zero", "(--crc) CRC agreed, then a Send with a zero CRC field, as a peer without CRC sends it",
	 [](Peer &p, const Opts &) {
		bool agreed = p.crc;

		p.crc = false;	// trailer 0: what a CRC-off peer puts there
		send_fpdu(p, send_hdr(p), pattern(16, 1));
		p.crc = agreed;	// xiw's frames still carry CRCs: check them
	}},
	{"crc-ignored", "(no --crc, xiw sets C in its Reply) the peer ignores C and sends a zero CRC field",
	 [](Peer &p, const Opts &) {
		bool agreed = p.crc;

		p.crc = false;
		send_fpdu(p, send_hdr(p), pattern(16, 1));
		p.crc = agreed;
	}},
	{"ddpver", "untagged Send with DDP version 0", [](Peer &p, const Opts &) {
		send_fpdu(p, untagged_hdr(rdmap::ctrl(rdmap::kSend), 0,
					  p.msn[0], 0, true, 0), pattern(16, 2));
	}},
	{"ddpver-t", "tagged Write with DDP version 2", [](Peer &p, const Opts &) {
		send_fpdu(p, tagged_hdr(rdmap::kWrite, p.rw_stag, p.rw_addr,
					true, 2), pattern(16, 3));
	}},
	{"rdmapver", "Send with RDMAP version 0", [](Peer &p, const Opts &) {
		send_fpdu(p, untagged_hdr(rdmap::kSend, 0, p.msn[0]),
			  pattern(16, 4));
	}},
	{"rdmapver2", "Write with RDMAP version 2", [](Peer &p, const Opts &) {
		Bytes h = tagged_hdr(rdmap::kWrite, p.rw_stag, p.rw_addr);
		h[3] = (2 << rdmap::kRvShift) | rdmap::kWrite;
		send_fpdu(p, h, pattern(16, 5));
	}},
	{"badopcode", "opcode 0xf (Verify Response) on QN 3, nothing requested",
	 [](Peer &p, const Opts &) {
		send_fpdu(p, untagged_hdr(rdmap::ctrl(rdmap::kVerifyResp),
					  rdmap::kQnAtomicResp, p.msn[rdmap::kQnAtomicResp]));
	}},
	{"awrite-misaligned", "Atomic Write to an address 4 bytes off alignment",
	 [](Peer &p, const Opts &) {
		send_fpdu(p, commit_hdr(p, rdmap::kAtomicWriteReq,
					p.rw_stag, 8, p.rw_addr + 68,
					pattern(8, 30)));
	}},
	{"awrite-len", "Atomic Write with Data Sink Length 16",
	 [](Peer &p, const Opts &) {
		send_fpdu(p, commit_hdr(p, rdmap::kAtomicWriteReq,
					p.rw_stag, 16, p.rw_addr + 64,
					pattern(8, 31)));
	}},
	{"awrite-ro", "Atomic Write to the read-only region",
	 [](Peer &p, const Opts &) {
		send_fpdu(p, commit_hdr(p, rdmap::kAtomicWriteReq,
					p.ro_stag, 8, p.ro_addr + 64,
					pattern(8, 32)));
	}},
	// The Invalidate STag of the commit draft's requests is "processed by
	// the receiver" (section 3.1): one xiw_target's plain MRs cannot be
	// invalidated remotely (only fast-registration MRs can), one that
	// does not exist neither; each is refused before the request runs.
	{"flush-inv", "Flush (G) of the RW region carrying the RW STag as Invalidate STag (not invalidatable)",
	 [](Peer &p, const Opts &) {
		send_fpdu(p, commit_hdr(p, rdmap::kFlushReq, p.rw_stag, 64,
					p.rw_addr, be32_bytes(2), p.rw_stag));
	}},
	{"verify-inv", "Verify of the RO region carrying a STag that does not exist as Invalidate STag",
	 [](Peer &p, const Opts &) {
		send_fpdu(p, commit_hdr(p, rdmap::kVerifyReq, p.ro_stag, 64,
					p.ro_addr, {}, 0x7fffff00));
	}},
	{"awrite-inv", "Atomic Write to the RW region carrying the RO STag as Invalidate STag",
	 [](Peer &p, const Opts &) {
		send_fpdu(p, commit_hdr(p, rdmap::kAtomicWriteReq, p.rw_stag,
					8, p.rw_addr + 64, pattern(8, 33),
					p.ro_stag));
	}},
	{"flush-noright", "Flush (G) of the read-only region (no flush right)",
	 [](Peer &p, const Opts &) {
		send_fpdu(p, commit_hdr(p, rdmap::kFlushReq, p.ro_stag,
					64, p.ro_addr, be32_bytes(2)));
	}},
	{"flush-region", "(--foreign STAG:ADDR, xiw_target --big) 4 Flushes (persistent) of the whole region of STAG: the R flag, Data Sink Length 0 and TO 0, the region's length is the target's to find",
	 [](Peer &p, const Opts &o) {
		Bytes all;

		for (int i = 0; i < 4; i++) {
			Bytes f = fpdu(p, commit_hdr(p, rdmap::kFlushReq,
						     o.foreign_stag, 0, 0,
						     be32_bytes(rdmap::commit::kFlushP |
								rdmap::commit::kFlushRegionXiw)), {});
			p.msn[rdmap::kQnReadReq]++;
			all.insert(all.end(), f.begin(), f.end());
		}
		send_all(p.fd, all);
		std::printf("FLUSHES sent=4\n");
	}},
	{"verify-oob", "Verify crossing the end of the RO region",
	 [](Peer &p, const Opts &) {
		send_fpdu(p, commit_hdr(p, rdmap::kVerifyReq, p.ro_stag,
					64, p.ro_addr + p.ro_len - 32, {}));
	}},
	{"verify-hashlen", "Verify with a 16-byte hash (crc32c region: 4)",
	 [](Peer &p, const Opts &) {
		send_fpdu(p, commit_hdr(p, rdmap::kVerifyReq, p.ro_stag,
					64, p.ro_addr, pattern(16, 33)));
	}},
	{"verify-longhash", "Verify with a 40-byte hash (at most 32 exist)",
	 [](Peer &p, const Opts &) {
		send_fpdu(p, commit_hdr(p, rdmap::kVerifyReq, p.ro_stag,
					64, p.ro_addr, pattern(40, 34)));
	}},
	{"verify-mismatch", "Verify of the RO region with a wrong crc32c",
	 [](Peer &p, const Opts &) {
		send_fpdu(p, commit_hdr(p, rdmap::kVerifyReq, p.ro_stag,
					64, p.ro_addr, pattern(4, 35)));
	}},
	{"awresp", "Atomic Write Response (control 0xC1), nothing requested",
	 [](Peer &p, const Opts &) {
		send_fpdu(p, untagged_hdr(0xc1, rdmap::kQnAtomicResp, p.msn[rdmap::kQnAtomicResp]));
	}},
	{"tbit", "Read Request with the T flag (tagged)", [](Peer &p, const Opts &) {
		Bytes h = rreq_hdr(p, p.ro_stag, p.ro_addr, 64);
		h[2] |= ddp::kT;
		send_fpdu(p, h);
	}},
	{"badqn", "Send on QN 7", [](Peer &p, const Opts &) {
		send_fpdu(p, untagged_hdr(rdmap::ctrl(rdmap::kSend), 7, 1),
			  pattern(16, 6));
	}},
	{"badmsn", "Send with MSN 5 (1 expected)", [](Peer &p, const Opts &) {
		send_fpdu(p, untagged_hdr(rdmap::ctrl(rdmap::kSend), 0, 5),
			  pattern(16, 7));
	}},
	{"badmo", "first Send segment with MO 100", [](Peer &p, const Opts &) {
		send_fpdu(p, send_hdr(p, 100), pattern(16, 8));
	}},
	{"badstag", "Write to an STag that does not exist", [](Peer &p, const Opts &) {
		send_fpdu(p, tagged_hdr(rdmap::kWrite, p.rw_stag ^ 0x7fffff00,
					p.rw_addr), pattern(64, 9));
	}},
	{"oob", "Write crossing the end of the RW region", [](Peer &p, const Opts &) {
		send_fpdu(p, tagged_hdr(rdmap::kWrite, p.rw_stag,
					p.rw_addr + p.rw_len - 16), pattern(64, 10));
	}},
	{"oob-low", "Write starting 8 bytes before the RW region", [](Peer &p, const Opts &) {
		send_fpdu(p, tagged_hdr(rdmap::kWrite, p.rw_stag,
					p.rw_addr - 8), pattern(64, 11));
	}},
	{"towrap", "Write whose TO + length wraps 2^64", [](Peer &p, const Opts &) {
		send_fpdu(p, tagged_hdr(rdmap::kWrite, p.rw_stag,
					~0ULL - 15), pattern(64, 12));
	}},
	{"rowrite", "Write to the read-only region", [](Peer &p, const Opts &) {
		send_fpdu(p, tagged_hdr(rdmap::kWrite, p.ro_stag, p.ro_addr),
			  pattern(64, 13));
	}},
	{"foreign", "Write to another connection's RW STag (--foreign)",
	 [](Peer &p, const Opts &o) {
		send_fpdu(p, tagged_hdr(rdmap::kWrite, o.foreign_stag,
					o.foreign_addr), pattern(64, 14));
	}},
	{"rresp", "Read Response with no Read Request", [](Peer &p, const Opts &) {
		send_fpdu(p, tagged_hdr(rdmap::kReadResp, p.rw_stag, p.rw_addr),
			  pattern(64, 15));
	}},
	{"rreq-badstag", "Read Request, source STag does not exist",
	 [](Peer &p, const Opts &) {
		send_fpdu(p, rreq_hdr(p, p.ro_stag ^ 0x7fffff00, p.ro_addr, 64));
	}},
	{"rreq-oob", "Read Request past the end of the RO region",
	 [](Peer &p, const Opts &) {
		send_fpdu(p, rreq_hdr(p, p.ro_stag, p.ro_addr + p.ro_len - 32, 64));
	}},
	{"rreq-foreign", "Read Request of another connection's region (--foreign)",
	 [](Peer &p, const Opts &o) {
		send_fpdu(p, rreq_hdr(p, o.foreign_stag, o.foreign_addr, 64));
	}},
	{"irdovf", "8 Read Requests at once, IRD (the Reply's) below 8",
	 [](Peer &p, const Opts &) {
		Bytes all, over;

		if (!p.ird || p.ird >= 8)
			die("irdovf: the Reply's IRD must be 1 to 7");
		for (u32 i = 0; i < 8; i++) {
			Bytes f = fpdu(p, rreq_hdr(p, p.ro_stag, p.ro_addr, 1024), {});
			if (i == p.ird)
				over = p.last_hdr;
			p.msn[rdmap::kQnReadReq]++;
			all.insert(all.end(), f.begin(), f.end());
		}
		p.last_hdr = over;	// the first one over the limit
		send_all(p.fd, all);
	}},
	{"sendinv", "Send with Invalidate of the RW STag (not invalidatable)",
	 [](Peer &p, const Opts &) {
		Bytes h = untagged_hdr(rdmap::ctrl(rdmap::kSendInv),
				       rdmap::kQnSend, p.msn[rdmap::kQnSend]);
		rfc::put32(&h[ddp::kOffInvStag], p.rw_stag);
		send_fpdu(p, h, pattern(16, 21));
	}},
	{"bigsend", "one 65534-byte ULPDU Send into a 4 KiB receive buffer",
	 [](Peer &p, const Opts &) {
		send_fpdu(p, send_hdr(p), pattern(mpa::kUlpduMax -
						  ddp::kUntaggedHdrLen, 16));
	}},
	{"bigsend2", "Send of 3000 + 3000 bytes (two segments), 4 KiB buffer",
	 [](Peer &p, const Opts &) {
		send_fpdu(p, send_hdr(p, 0, false), pattern(3000, 17));
		send_fpdu(p, send_hdr(p, 3000, true), pattern(3000, 18));
	}},
	{"shortseg", "ULPDU_Length 10, shorter than the DDP header",
	 [](Peer &p, const Opts &) {
		Bytes h = send_hdr(p);
		h.resize(12);
		send_fpdu(p, h);
	}},
	{"trunc", "Send header announcing 1000 bytes, 100 sent, then FIN",
	 [](Peer &p, const Opts &) {
		Bytes f = fpdu(p, send_hdr(p), pattern(1000, 19));
		f.resize(ddp::kUntaggedFpduHdr + 100);
		send_all(p.fd, f);
		shutdown(p.fd, SHUT_WR);
	}},
	{"term", "a Terminate from the peer (RDMAP catastrophic)",
	 [](Peer &p, const Opts &) {
		Bytes h = untagged_hdr(rdmap::ctrl(rdmap::kTerminate),
				       rdmap::kQnTerm, 1);
		u8 c[term::kMin];
		term::put_ctrl(c, {rfc::errs::kLayerRdmap,
				   rfc::errs::kRdmapCatastrophic, 0, 0});
		h.insert(h.end(), c, c + term::kMin);
		send_fpdu(p, h);
	}},
	{"nortr", "(--rtr write) a Send before the RTR", [](Peer &p, const Opts &) {
		send_fpdu(p, send_hdr(p), pattern(16, 20));
	}},
	// --- Malformed Terminates (RFC 5040 section 7.2: a Terminate is
	// never answered with one; the stream is torn down) and RTRs of a
	// type other than the one negotiated (RFC 6581 section 3). Names
	// starting "rtr-" skip the RTR (run()).
	{"term-short", "a Terminate whose RDMAP part is 2 bytes (no room for its control word)",
	 [](Peer &p, const Opts &) {
		Bytes h = untagged_hdr(rdmap::ctrl(rdmap::kTerminate),
				       rdmap::kQnTerm, 1);
		h.push_back(0x00);
		h.push_back(0x00);
		send_fpdu(p, h);
	}},
	{"term-long", "a Terminate with 60 bytes after its DDP header (52 at most)",
	 [](Peer &p, const Opts &) {
		Bytes h = untagged_hdr(rdmap::ctrl(rdmap::kTerminate),
				       rdmap::kQnTerm, 1);
		u8 c[term::kMin];
		term::put_ctrl(c, {rfc::errs::kLayerRdmap,
				   rfc::errs::kRdmapCatastrophic, 0, 0});
		h.insert(h.end(), c, c + term::kMin);
		h.resize(h.size() + 56, 0);
		send_fpdu(p, h);
	}},
	{"term-msn", "a Terminate with MSN 7 (1 expected)", [](Peer &p, const Opts &) {
		Bytes h = untagged_hdr(rdmap::ctrl(rdmap::kTerminate),
				       rdmap::kQnTerm, 7);
		u8 c[term::kMin];
		term::put_ctrl(c, {rfc::errs::kLayerRdmap,
				   rfc::errs::kRdmapCatastrophic, 0, 0});
		h.insert(h.end(), c, c + term::kMin);
		send_fpdu(p, h);
	}},
	{"term-notlast", "a Terminate without the L flag", [](Peer &p, const Opts &) {
		Bytes h = untagged_hdr(rdmap::ctrl(rdmap::kTerminate),
				       rdmap::kQnTerm, 1, 0, false);
		u8 c[term::kMin];
		term::put_ctrl(c, {rfc::errs::kLayerRdmap,
				   rfc::errs::kRdmapCatastrophic, 0, 0});
		h.insert(h.end(), c, c + term::kMin);
		send_fpdu(p, h);
	}},
	{"term-hdrct", "a Terminate with M and D set but no segment length or header after its control word",
	 [](Peer &p, const Opts &) {
		Bytes h = untagged_hdr(rdmap::ctrl(rdmap::kTerminate),
				       rdmap::kQnTerm, 1);
		u8 c[term::kMin];
		term::put_ctrl(c, {rfc::errs::kLayerDdp, rfc::errs::kDdpTagged,
				   rfc::errs::kDdpTInvStag, term::kM | term::kD});
		h.insert(h.end(), c, c + term::kMin);
		send_fpdu(p, h);
	}},
	{"term-layer", "a Terminate of layer 9 (0-2 exist)", [](Peer &p, const Opts &) {
		Bytes h = untagged_hdr(rdmap::ctrl(rdmap::kTerminate),
				       rdmap::kQnTerm, 1);
		u8 c[term::kMin];
		term::put_ctrl(c, {9, 0, 0, 0});
		h.insert(h.end(), c, c + term::kMin);
		send_fpdu(p, h);
	}},
	{"term-crc", "(--crc) a Terminate with a wrong CRC", [](Peer &p, const Opts &) {
		Bytes h = untagged_hdr(rdmap::ctrl(rdmap::kTerminate),
				       rdmap::kQnTerm, 1);
		u8 c[term::kMin];
		term::put_ctrl(c, {rfc::errs::kLayerRdmap,
				   rfc::errs::kRdmapCatastrophic, 0, 0});
		h.insert(h.end(), c, c + term::kMin);
		send_fpdu(p, h, {}, true);
	}},
	// ---- A refused request after valid ones, all in one segment: xiw
	// answers the requests before it (the IBA responder's order), then
	// sends the Terminate for it; nothing after it is answered.
	{"rreq-mid", "a valid Read Request (64 bytes of the RO region) and one of an STag that does not exist, in one segment: xiw answers the valid one, then the Terminate",
	 [](Peer &p, const Opts &) {
		Bytes all = fpdu(p, rreq_hdr(p, p.ro_stag, p.ro_addr, 64), {});
		p.msn[rdmap::kQnReadReq]++;
		Bytes bad = fpdu(p, rreq_hdr(p, p.ro_stag ^ 0x7fffff00,
					     p.ro_addr, 64), {});
		all.insert(all.end(), bad.begin(), bad.end());
		send_all(p.fd, all);
	}},
	{"rreq-mid3", "Read Request of 64 bytes, one of an STag that does not exist, one of 128 bytes, in one segment: the first answered, the Terminate, the third never",
	 [](Peer &p, const Opts &) {
		Bytes all = fpdu(p, rreq_hdr(p, p.ro_stag, p.ro_addr, 64), {});
		p.msn[rdmap::kQnReadReq]++;
		Bytes bad = fpdu(p, rreq_hdr(p, p.ro_stag ^ 0x7fffff00,
					     p.ro_addr, 64), {});
		Bytes bad_hdr = p.last_hdr;
		p.msn[rdmap::kQnReadReq]++;
		Bytes third = fpdu(p, rreq_hdr(p, p.ro_stag, p.ro_addr + 256,
					       128), {});
		all.insert(all.end(), bad.begin(), bad.end());
		all.insert(all.end(), third.begin(), third.end());
		p.last_hdr = bad_hdr;	// the one the Terminate copies
		send_all(p.fd, all);
	}},
	{"fadd-mid", "(xiw_target --atomic) a Write of 0x1111222233334444 to the RW region's u64 at 64, a FetchAdd of 0x0101010101010101 to it, a FetchAdd to an STag that does not exist, in one segment: the Atomic Response carries the written value, the u64 holds the sum, then the Terminate",
	 [](Peer &p, const Opts &) {
		const u64 v = 0x1111222233334444ULL, add = 0x0101010101010101ULL;
		Bytes w(8);

		std::memcpy(w.data(), &v, 8);	// the target's CPU order (this host)
		Bytes all = fpdu(p, tagged_hdr(rdmap::kWrite, p.rw_stag,
					       p.rw_addr + 64), w);
		Bytes f = fpdu(p, fadd_hdr(p, 0x5a01, p.rw_stag, p.rw_addr + 64,
					   add), {});
		p.msn[rdmap::kQnReadReq]++;
		all.insert(all.end(), f.begin(), f.end());
		Bytes bad = fpdu(p, fadd_hdr(p, 0x5a02, p.rw_stag ^ 0x7fffff00,
					     p.rw_addr + 64, add), {});
		all.insert(all.end(), bad.begin(), bad.end());
		const u64 sum = v + add;
		std::memcpy(p.rw_model.data() + 64, &sum, 8);
		send_all(p.fd, all);
	}},
	{"flush-mid", "a Flush (G) of 64 bytes of the RW region and a Read Request past the end of the RO region, in one segment: the Flush Response, then the Terminate",
	 [](Peer &p, const Opts &) {
		Bytes all = fpdu(p, commit_hdr(p, rdmap::kFlushReq, p.rw_stag, 64,
					       p.rw_addr, be32_bytes(rdmap::commit::kFlushG)), {});
		p.msn[rdmap::kQnReadReq]++;
		Bytes bad = fpdu(p, rreq_hdr(p, p.ro_stag,
					     p.ro_addr + p.ro_len - 32, 64), {});
		all.insert(all.end(), bad.begin(), bad.end());
		send_all(p.fd, all);
	}},
	{"rtr-send", "(--rtr write or read) a zero-length Send where the RTR of the negotiated type is due",
	 [](Peer &p, const Opts &) {
		send_fpdu(p, send_hdr(p));
	}},
	{"rtr-write", "(--rtr send or read) a zero-length Write where the RTR of the negotiated type is due",
	 [](Peer &p, const Opts &) {
		send_fpdu(p, tagged_hdr(rdmap::kWrite, mpa::kRtrReadStag, 0));
	}},
	{"rtr-read", "(--rtr send or write) a zero-length Read where the RTR of the negotiated type is due",
	 [](Peer &p, const Opts &) {
		Bytes h = untagged_hdr(rdmap::ctrl(rdmap::kReadReq),
				       rdmap::kQnReadReq, p.msn[rdmap::kQnReadReq]);
		rdmap::append_rreq(h, mpa::kRtrReadStag, 0, 0,
				   mpa::kRtrReadStag, 0);
		send_fpdu(p, h);
	}},
	// ---- Bounds to the byte, CRC on tagged frames -------------------
	// Bounds: the access that ends exactly at the region's end is
	// answered (its data lands: rw_model), then the same access one
	// byte further is refused; the Terminate names that one.
	{"oob1", "Write of 64 bytes ending at the RW region's end, then one ending a byte past it",
	 [](Peer &p, const Opts &) {
		u64 end = p.rw_addr + p.rw_len;
		Bytes w = pattern(64, 40);

		send_fpdu(p, tagged_hdr(rdmap::kWrite, p.rw_stag, end - 64), w);
		std::memcpy(p.rw_model.data() + kRegion - 64, w.data(), 64);
		send_fpdu(p, tagged_hdr(rdmap::kWrite, p.rw_stag, end - 63),
			  pattern(64, 41));
	}},
	{"rreq-oob1", "Read Request of the RO region's last 64 bytes, then of 64 bytes ending a byte past it",
	 [](Peer &p, const Opts &) {
		u64 end = p.ro_addr + p.ro_len;

		send_fpdu(p, rreq_hdr(p, p.ro_stag, end - 64, 64));
		p.msn[rdmap::kQnReadReq]++;
		send_fpdu(p, rreq_hdr(p, p.ro_stag, end - 63, 64));
	}},
	{"awrite-oob", "Atomic Write of the RW region's last 8 bytes, then of the 8 bytes after its end",
	 [](Peer &p, const Opts &) {
		u64 end = p.rw_addr + p.rw_len;
		Bytes v = pattern(8, 42);

		send_fpdu(p, commit_hdr(p, rdmap::kAtomicWriteReq, p.rw_stag, 8,
					end - 8, v));
		p.msn[rdmap::kQnReadReq]++;
		// the draft's big-endian value, stored in this host's order
		u64 x = rfc::get64(v.data());
		std::memcpy(p.rw_model.data() + kRegion - 8, &x, 8);
		send_fpdu(p, commit_hdr(p, rdmap::kAtomicWriteReq, p.rw_stag, 8,
					end, pattern(8, 43)));
	}},
	{"flush-oob1", "Flush (G) of the RW region's last 64 bytes, then of 64 bytes ending a byte past it",
	 [](Peer &p, const Opts &) {
		u64 end = p.rw_addr + p.rw_len;

		send_fpdu(p, commit_hdr(p, rdmap::kFlushReq, p.rw_stag, 64,
					end - 64, be32_bytes(rdmap::commit::kFlushG)));
		p.msn[rdmap::kQnReadReq]++;
		send_fpdu(p, commit_hdr(p, rdmap::kFlushReq, p.rw_stag, 64,
					end - 63, be32_bytes(rdmap::commit::kFlushG)));
	}},
	{"verify-oob1", "Verify of the RO region's last 64 bytes, then of 64 bytes ending a byte past it",
	 [](Peer &p, const Opts &) {
		u64 end = p.ro_addr + p.ro_len;

		send_fpdu(p, commit_hdr(p, rdmap::kVerifyReq, p.ro_stag, 64,
					end - 64, {}));
		p.msn[rdmap::kQnReadReq]++;
		send_fpdu(p, commit_hdr(p, rdmap::kVerifyReq, p.ro_stag, 64,
					end - 63, {}));
	}},
	// CRC on tagged frames: a Write and a Read Response into the RW
	// region with a wrong CRC are refused before anything is placed.
	// The payload may have been placed before the CRC was checked
	// (direct placement): EXPECT_PLACED is the region then, exactly.
	{"badcrc-write", "(--crc) Write of 64 bytes into the RW region with a wrong CRC",
	 [](Peer &p, const Opts &) {
		Bytes d = pattern(64, 44);

		p.rw_placed = p.rw_model;
		std::memcpy(p.rw_placed.data() + 256, d.data(), d.size());
		send_fpdu(p, tagged_hdr(rdmap::kWrite, p.rw_stag, p.rw_addr + 256),
			  d, true);
	}},
	{"badcrc-bigwrite", "(--crc) Write of 4000 bytes (several TCP segments) into the RW region with a wrong CRC",
	 [](Peer &p, const Opts &) {
		Bytes d = pattern(4000, 45);

		p.rw_placed = p.rw_model;
		std::memcpy(p.rw_placed.data() + 32, d.data(), d.size());
		send_fpdu(p, tagged_hdr(rdmap::kWrite, p.rw_stag, p.rw_addr + 32),
			  d, true);
	}},
	{"badcrc-rresp", "(--crc) Read Response into the RW region with a wrong CRC",
	 [](Peer &p, const Opts &) {
		send_fpdu(p, tagged_hdr(rdmap::kReadResp, p.rw_stag, p.rw_addr + 512),
			  pattern(64, 46), true);
	}},
	// ---- end of the bounds and tagged CRC block ----------------------
	{"stall-write", "a Write FPDU cut short (header and 100 of 1024 bytes), then silence",
	 [](Peer &p, const Opts &) {
		Bytes f = fpdu(p, tagged_hdr(rdmap::kWrite, p.rw_stag,
					     p.rw_addr), pattern(1024, 21));
		send_all(p.fd, f.data(), ddp::kTaggedFpduHdr + 100);
		// the rest never comes; run() reads until --timeout
	}},
	{"midwrite", "the first FPDU of a two-FPDU Write into the RW region, then (once --hold FILE exists) the last one",
	 [](Peer &p, const Opts &o) {
		Bytes d = pattern(2048, 23);
		Bytes first(d.begin(), d.begin() + 1024);
		Bytes last(d.begin() + 1024, d.end());

		send_fpdu(p, tagged_hdr(rdmap::kWrite, p.rw_stag, p.rw_addr,
					false), first);
		std::printf("HOLDING\n");
		auto hend = Clock::now() + std::chrono::seconds(60);
		while (!o.hold.empty() && !file_exists(o.hold) &&
		       Clock::now() < hend)
			usleep(20000);
		send_fpdu(p, tagged_hdr(rdmap::kWrite, p.rw_stag,
					p.rw_addr + 1024), last);
	}},
	{"window-read-inv", "(4 KiB receive buffer, --foreign-file: a type 2 window of 1 MiB of 0xa5 bound through this QP) a Read Request of the whole window, left unread for 1 s; a Send with Invalidate of the window; once --hold FILE exists (the target wrote 0xee over the region when its receive told it), everything is read: Read Responses counted by byte value",
	 [](Peer &p, const Opts &o) {
		p.rsum = true;
		send_fpdu(p, rreq_hdr(p, o.foreign_stag, o.foreign_addr,
				      kWindow));
		p.msn[rdmap::kQnReadReq]++;
		sleep(1);
		Bytes h = untagged_hdr(rdmap::ctrl(rdmap::kSendInv),
				       rdmap::kQnSend, p.msn[rdmap::kQnSend]);
		rfc::put32(&h[ddp::kOffInvStag], o.foreign_stag);
		send_fpdu(p, h, pattern(16, 24));
		p.msn[rdmap::kQnSend]++;
		std::printf("STALLED\n");
		std::fflush(stdout);
		wait_hold(o.hold);
	}},
	{"window-write-split", "(--foreign-file: a type 1 window of 1 MiB) a Write FPDU of 4000 bytes of 0x77 into the window, header and 2000 bytes sent; once --hold FILE exists (the target unbound the window and wrote 0xee over the region), the other 2000",
	 [](Peer &p, const Opts &o) {
		Bytes d(4000, 0x77);
		Bytes f = fpdu(p, tagged_hdr(rdmap::kWrite, o.foreign_stag,
					     o.foreign_addr), d);
		size_t half = ddp::kTaggedFpduHdr + 2000;

		send_all(p.fd, f.data(), half);
		std::printf("HALF\n");
		std::fflush(stdout);
		wait_hold(o.hold);
		send_all(p.fd, f.data() + half, f.size() - half);
	}},
	{"read-stall", "(4 KiB receive buffer, --foreign-file: a region of 1 MiB of 0xa5 its consumer invalidates itself) a Read Request of the whole region, left unread until --hold FILE exists (the consumer wrote 0xee over the region when its invalidation completed), then everything is read: Read Responses counted by byte value",
	 [](Peer &p, const Opts &o) {
		p.rsum = true;
		send_fpdu(p, rreq_hdr(p, o.foreign_stag, o.foreign_addr,
				      kWindow));
		p.msn[rdmap::kQnReadReq]++;
		std::printf("STALLED\n");
		std::fflush(stdout);
		wait_hold(o.hold);
	}},
	{"inv-foreign", "(--foreign-file: a fast-registration STag of this QP's PD, another connection writing into it) once --hold FILE exists, a Send with Invalidate of that STag",
	 [](Peer &p, const Opts &o) {
		wait_hold(o.hold);
		Bytes h = untagged_hdr(rdmap::ctrl(rdmap::kSendInv),
				       rdmap::kQnSend, p.msn[rdmap::kQnSend]);
		rfc::put32(&h[ddp::kOffInvStag], o.foreign_stag);
		send_fpdu(p, h, pattern(16, 25));
		p.msn[rdmap::kQnSend]++;
		std::printf("INVALIDATING\n");
	}},
	{"stall-quiet", "(4 KiB receive buffer) never reads what xiw sends, silence for 15 s",
	 [](Peer &, const Opts &) {
		std::printf("STALLING\n");
		sleep(15);
	}},
	{"stall-irq", "(4 KiB receive buffer) never reads; after 1 s, 2 Read Requests for the RO region and 2 for the RW region (behind the Sends of xiw_target --send-out they wait in xiw's IRQ), silence for 15 s",
	 [](Peer &p, const Opts &) {
		sleep(1);
		for (int i = 0; i < 4; i++) {
			bool rw = i >= 2;

			send_fpdu(p, rreq_hdr(p, rw ? p.rw_stag : p.ro_stag,
					      rw ? p.rw_addr : p.ro_addr,
					      kRegion));
			p.msn[rdmap::kQnReadReq]++;
		}
		std::printf("STALLING\n");
		sleep(15);
	}},
	{"stall-read", "(4 KiB receive buffer) Read Requests in batches, never reading the Responses, a Send on QN 7, then silence for 12 s",
	 [](Peer &p, const Opts &) {
		for (int b = 0; b < 10; b++) {
			for (int i = 0; i < 4; i++) {
				send_fpdu(p, rreq_hdr(p, p.ro_stag, p.ro_addr,
						      kRegion));
				p.msn[rdmap::kQnReadReq]++;
			}
			usleep(150000);
		}
		// then one malformed FPDU: xiw owes us a Terminate it cannot send
		send_fpdu(p, untagged_hdr(rdmap::ctrl(rdmap::kSend), 7, 1),
			  pattern(16, 22));
		std::printf("STALLING\n");
		sleep(12);	// xiw's TX is parked: it must close anyway
	}},
};

const Case *find_case(std::string_view n)
{
	for (const Case &c : kCases)
		if (n == c.name)
			return &c;
	return nullptr;
}

int run(const Opts &o)
{
	const Case *c = o.name == "good" ? nullptr : find_case(o.name);

	if (o.name != "good" && !c) {
		std::fprintf(stderr, "unknown case %s (--list)\n", o.name.c_str());
		return 2;
	}
	addrinfo hints{}, *ai;
	hints.ai_socktype = SOCK_STREAM;
	if (int rv = getaddrinfo(o.host.c_str(), o.port.c_str(), &hints, &ai); rv) {
		std::fprintf(stderr, "getaddrinfo: %s\n", gai_strerror(rv));
		return 2;
	}
	Peer p;
	int one = 1;
	p.fd = socket(ai->ai_family, SOCK_STREAM, 0);
	if (p.fd < 0)
		die("socket");
	if (o.name == "stall-read" || o.name == "stall-quiet" ||
	    o.name == "stall-irq" || o.name == "window-read-inv" ||
	    o.name == "read-stall") {
		int rb = 4096;	// a small window that closes soon

		setsockopt(p.fd, SOL_SOCKET, SO_RCVBUF, &rb, sizeof(rb));
	}
	if (connect(p.fd, ai->ai_addr, ai->ai_addrlen))
		die("connect");
	freeaddrinfo(ai);
	setsockopt(p.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));

	// MPA Request: rev 2 + p2p with the chosen RTR, or rev 1 (--rtr none)
	bool enhanced = o.rtr != "none";
	u16 ird = 4, ord = 4;
	if (o.rtr == "write")
		ord |= mpa::kOrdRtrWrite;
	else if (o.rtr == "read")
		ord |= mpa::kOrdRtrRead;
	else if (o.rtr == "send")
		ird |= mpa::kIrdRtrSend;
	if (enhanced)
		ird |= mpa::kIrdP2P;
	send_all(p.fd, mpa_request(o.crc, ird, ord, enhanced));

	auto end = Clock::now() + std::chrono::milliseconds(o.timeout_ms);
	if (!need(p, mpa::kFrameHdrLen, end)) {
		std::printf("NOREPLY\n");
		return 1;
	}
	mpa::Header rr = mpa::parse(p.rx.data());
	u8 rflags = rr.flags;
	bool rep_key = rr.key == mpa::kKeyRep;
	u16 pdl = rr.pd_len;
	if (!need(p, mpa::kFrameHdrLen + pdl, end)) {
		std::printf("NOREPLY truncated\n");
		return 1;
	}
	Bytes pd(p.rx.begin() + mpa::kFrameHdrLen,
		 p.rx.begin() + mpa::kFrameHdrLen + pdl);
	p.rx.erase(p.rx.begin(), p.rx.begin() + mpa::kFrameHdrLen + pdl);
	if (!rep_key || (rflags & mpa::kFlagR)) {
		std::printf("REJECTED flags=0x%02x\n", rflags);
		return 1;
	}
	p.crc = rflags & mpa::kFlagC;
	size_t off = 0;
	u16 rep_ord = 0, rep_ird = 0;
	if (rflags & mpa::kFlagS) {
		if (pdl < mpa::kV2Len) {
			std::printf("BADREPLY pd=%u\n", pdl);
			return 1;
		}
		rep_ird = rfc::get16(pd.data());
		rep_ord = rfc::get16(pd.data() + 2);
		p.ird = rep_ird & mpa::kIrdOrdMask;
		off = mpa::kV2Len;
	}
	target_info::Info ti;
	if (!target_info::decode(pd.data() + off, pdl - off, &ti)) {
		std::printf("BADREPLY pd=%u\n", pdl);
		return 1;
	}
	p.conn_id = ti.conn_id;
	p.rw_addr = ti.rw_addr;
	p.rw_stag = ti.rw_stag;
	p.rw_len = ti.rw_len;
	p.ro_addr = ti.ro_addr;
	p.ro_stag = ti.ro_stag;
	p.ro_len = ti.ro_len;
	if (p.rw_len != kRegion || p.ro_len != kRegion) {
		std::printf("BADREPLY region sizes %u %u\n", p.rw_len, p.ro_len);
		return 1;
	}
	std::printf("INFO conn_id=%u crc=%d ird=0x%04x ord=0x%04x rw_stag=0x%x "
		    "rw_addr=0x%llx ro_stag=0x%x ro_addr=0x%llx\n",
		    p.conn_id, p.crc, rep_ird, rep_ord, p.rw_stag,
		    (unsigned long long)p.rw_addr, p.ro_stag,
		    (unsigned long long)p.ro_addr);

	// RTR (RFC 6581): the responder's choice is in its reply
	if (enhanced && o.name != "nortr" && o.name.rfind("rtr-", 0) != 0) {
		if (rep_ord & mpa::kOrdRtrWrite) {
			send_fpdu(p, tagged_hdr(rdmap::kWrite, mpa::kRtrReadStag, 0));
		} else if (rep_ord & mpa::kOrdRtrRead) {
			Bytes h = untagged_hdr(rdmap::ctrl(rdmap::kReadReq),
					       rdmap::kQnReadReq, p.msn[rdmap::kQnReadReq]);
			rdmap::append_rreq(h, mpa::kRtrReadStag, 0, 0,
					   mpa::kRtrReadStag, 0);
			send_fpdu(p, h);
			p.msn[rdmap::kQnReadReq]++;
			// its zero-length Read Response
			rx_loop(p, Clock::now() + std::chrono::milliseconds(o.timeout_ms), 1);
		} else if (rep_ird & mpa::kIrdRtrSend) {
			send_fpdu(p, send_hdr(p));
			p.msn[rdmap::kQnSend]++;
		} else {
			std::printf("BADREPLY no RTR type chosen\n");
			return 1;
		}
	}

	int rv = 0;
	if (!c) {
		if (!good_round(p, 0, o.timeout_ms))
			rv = 1;
		if (!o.hold.empty()) {
			std::printf("HOLDING\n");
			auto hend = Clock::now() + std::chrono::seconds(300);
			while (!file_exists(o.hold) && Clock::now() < hend) {
				// nothing may arrive meanwhile
				if (fill(p, 50) || p.eof) {
					std::printf("UNEXPECTED while holding\n");
					rx_loop(p, Clock::now());
					return 1;
				}
			}
			if (!good_round(p, 1, o.timeout_ms))
				rv = 1;
		}
		std::printf("EXPECT rw_fnv=%016llx\n",
			    (unsigned long long)fnv1a(p.rw_model.data(), kRegion));
		shutdown(p.fd, SHUT_WR);
		RxResult r = rx_loop(p, Clock::now() + std::chrono::milliseconds(o.timeout_ms));
		if (r.terms || r.other || !p.eof) {
			std::printf("GOOD FAILED at close\n");
			rv = 1;
		}
		if (!rv)
			std::printf("GOOD ok\n");
		close(p.fd);
		return rv;
	}

	Opts co = o;
	if (!o.foreign_file.empty()) {
		auto fend = Clock::now() + std::chrono::seconds(30);
		FILE *ff = nullptr;
		unsigned long long stag = 0, addr = 0;

		while (Clock::now() < fend &&
		       !(ff = std::fopen(o.foreign_file.c_str(), "r")))
			usleep(20000);
		if (!ff || std::fscanf(ff, "%lli:%llx", &stag, &addr) != 2) {
			std::printf("NOFOREIGN %s\n", o.foreign_file.c_str());
			return 2;
		}
		std::fclose(ff);
		co.foreign_stag = stag;
		co.foreign_addr = addr;
	}
	c->fn(p, co);
	std::printf("SENT case=%s hdr=%s\n", c->name,
		    hex(p.last_hdr.data(), p.last_hdr.size()).c_str());
	std::printf("EXPECT rw_fnv=%016llx\n",
		    (unsigned long long)fnv1a(p.rw_model.data(), kRegion));
	if (!p.rw_placed.empty())
		std::printf("EXPECT_PLACED rw_fnv=%016llx\n",
			    (unsigned long long)fnv1a(p.rw_placed.data(), kRegion));
	RxResult r = rx_loop(p, Clock::now() + std::chrono::milliseconds(o.timeout_ms));
	if (!r.terms)
		std::printf("NOTERM\n");
	close(p.fd);
	return 0;
}

void usage()
{
	std::fprintf(stderr,
		     "usage: xiw_badpeer ADDR PORT --case NAME [--crc] "
		     "[--rtr write|send|read|none] [--timeout MS] [--hold FILE] "
		     "[--foreign STAG:ADDR] | --list\n");
	std::exit(2);
}

} // namespace

int main(int argc, char **argv)
{
	setvbuf(stdout, nullptr, _IOLBF, 0);
	Opts o;
	std::vector<std::string> pos;

	for (int i = 1; i < argc; i++) {
		std::string a = argv[i];
		auto val = [&]() -> std::string {
			if (i + 1 >= argc)
				usage();
			return argv[++i];
		};
		if (a == "--fnv-zero") {
			Bytes z(kRegion, 0);
			std::printf("%016llx\n", (unsigned long long)fnv1a(z.data(), z.size()));
			return 0;
		}
		if (a == "--list") {
			std::printf("good\tvalid Send, Write and Read\n");
			for (const Case &c : kCases)
				std::printf("%s\t%s\n", c.name, c.what);
			return 0;
		} else if (a == "--case") {
			o.name = val();
		} else if (a == "--crc") {
			o.crc = true;
		} else if (a == "--rtr") {
			o.rtr = val();
			if (o.rtr != "write" && o.rtr != "read" && o.rtr != "send" &&
			    o.rtr != "none")
				usage();
		} else if (a == "--timeout") {
			o.timeout_ms = std::stoi(val());
		} else if (a == "--hold") {
			o.hold = val();
		} else if (a == "--foreign-file") {
			o.foreign_file = val();
		} else if (a == "--foreign") {
			std::string v = val();
			size_t colon = v.find(':');
			if (colon == std::string::npos)
				usage();
			o.foreign_stag = std::stoul(v.substr(0, colon), nullptr, 0);
			o.foreign_addr = std::stoull(v.substr(colon + 1), nullptr, 0);
		} else if (!a.empty() && a[0] == '-') {
			usage();
		} else {
			pos.push_back(a);
		}
	}
	if (pos.size() != 2 || o.name.empty())
		usage();
	o.host = pos[0];
	o.port = pos[1];
	return run(o);
}
