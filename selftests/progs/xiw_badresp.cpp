// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// xiw_badresp: xiw as requester, facing Terminates and hostile responses.
//
//   xiw_badresp pair ADDR PORT SEQ
//       xiw against xiw in one process (rdma_cm listener and client on
//       ADDR:PORT). SEQ, posted as one list: read-fadd-read (Read,
//       FetchAdd with a bad rkey, Read), read-read-fadd (Read, Read with a
//       bad rkey, FetchAdd), read-fadd-badread-read (Read, FetchAdd, Read
//       with a bad rkey, Read), read-fadd-oobread-read (the same with
//       Read 2 crossing the region's end). The responder answers every
//       request before the one it refuses: those WRs complete SUCCESS
//       (a Read's data exact, a FetchAdd's original value, the target
//       holding the sum); the refused one with the error its Terminate
//       names (REM_ACCESS_ERR, vendor_err 0x0100 invalid STag, 0x0101
//       base and bounds); every WR after it WR_FLUSH_ERR, its sink
//       untouched.
//
//   xiw_badresp listen ADDR PORT --case NAME
//       A raw iWARP responder on a TCP socket (MPA rev 2 and every frame by
//       hand through rfc_wire.h, the RFCs' layouts written out
//       independently of kernel/xiw_wire.h): accepts xiw's MPA Request,
//       replies (p2p, Write RTR if offered), takes xiw's RTR, reads the
//       requests of the case and answers them as NAME says, then prints
//       what xiw sends back: "TERM layer=L type=T code=0xCC hdrct=0xHH",
//       NOTERM, EOF|RESET|TIMEOUT.
//
//   xiw_badresp req ADDR PORT --case NAME
//       The verbs requester for "listen": connects through rdma_cm, posts
//       the case's WRs as one list into a buffer filled with guard bytes,
//       and checks every completion's status, vendor_err and data, and
//       that no byte outside the posted sink ranges changed.
//
// Cases (listen/req):
//   term-mid    3 Reads; Read 1 answered, then a Terminate naming Read 2
//   term-last   3 Reads; Read 1 answered, then a Terminate naming Read 3
//   term-nohdr  3 Reads; Read 1 answered, then a Terminate copying no header
//   rresp-stag  Read answered with another STag
//   rresp-to    Read answered at another offset
//   rresp-short Read of 64 answered with 32 bytes (L set)
//   rresp-long  Read of 64 answered with 128 bytes
//   rresp-aresp Read answered with an Atomic Response (Request Identifier
//               0, what a Read's ORQ entry holds)
//   rresp-crc   Read answered right, but with a wrong CRC (the responder
//               insists on CRCs in its MPA Reply)
//   aresp-id    FetchAdd answered with another Request Identifier
//   aresp-type  FetchAdd answered with a Flush Response
//   flush-type  Flush answered with a Verify Response
//   flush-rresp Flush answered with a Read Response
//   verify-type Verify answered with a Flush Response
//   wire        a region Flush, an Atomic Write of 0x0102030405060708 and
//               a range Flush, each answered correctly: the responder
//               prints the request bytes xiw put on the wire ("WIRE ..."),
//               the requester expects three successes
// In the response cases a Read follows the bad one (never answered): it
// must be flushed.
//
// Lines "ok ..." / "FAIL ..."; exit 0 only when every check passed (listen:
// 0 when the exchange ran; the test judges its output), 2 on a usage or
// system error.
#include "checks.h"
#include "raw_stream.h"
#include "rfc_wire.h"
#include "verbs_side.h"

#include <infiniband/xiwdv.h>

#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string>
#include <string_view>
#include <sys/socket.h>
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
using checks::check;
namespace mpa = rfc::mpa;
namespace ddp = rfc::ddp;
namespace rdmap = rfc::rdmap;
namespace term = rfc::rdmap::term;

// What the requester names as remote memory (the raw responder accepts
// anything) and what the responder's Reads return.
constexpr u32 kRkey = 0x4242;
constexpr u64 kRaddr = 0x100000;
constexpr u32 kReadLen = 64;
constexpr size_t kMem = 8192;
constexpr size_t kSinkOff = 1024;	// sink i at kSinkOff + i * 256
constexpr u8 kGuard = 0xee;

u8 pat(size_t i)
{
	return u8(0x30 + i * 13);
}

[[noreturn]] void die(const char *what)
{
	std::perror(what);
	std::exit(2);
}

// ---------------------------------------------------------------------------
// The raw responder

struct Peer : raw::Stream {
	bool crc = false;
	u32 resp_msn = 1;	// QN 3
};

// The next FPDU (from its MPA length on, trailer included), or empty.
Bytes next_fpdu(Peer &p, Clock::time_point end)
{
	if (!need(p, 2, end))
		return {};
	size_t flen = mpa::fpdu_len(rfc::get16(p.rx.data()));
	if (!need(p, flen, end))
		return {};
	Bytes f(p.rx.begin(), p.rx.begin() + flen);
	p.rx.erase(p.rx.begin(), p.rx.begin() + flen);
	return f;
}

Bytes fpdu(Peer &p, Bytes hdr, const Bytes &payload)
{
	u32 ulpdu = hdr.size() - mpa::kUlpduLenLen + payload.size();

	rfc::put16(hdr.data(), u16(ulpdu));
	Bytes b = hdr;
	b.insert(b.end(), payload.begin(), payload.end());
	b.resize(b.size() + mpa::pad(ulpdu), 0);
	u32 crc = p.crc ? rfc::crc32c(b.data(), b.size()) : 0;
	u8 t[mpa::kCrcLen];
	rfc::crc_trailer(t, crc);
	b.insert(b.end(), t, t + mpa::kCrcLen);
	return b;
}

// A request xiw sent on QN 1.
struct Req {
	int op = -1;
	u32 msn = 0;
	Bytes hdr;		// from the DDP control on (DDP + RDMAP headers)
	u32 seglen = 0;		// its ULPDU_Length
	u32 sink_stag = 0;	// Read
	u64 sink_to = 0;
	u32 size = 0;
	u32 req_id = 0;		// atomic
};

Req parse_req(const Bytes &f)
{
	Req r;
	u32 ulpdu = rfc::get16(f.data());

	r.op = rdmap::opcode(f[ddp::kOffUlpCtrl]);
	r.msn = rfc::get32(&f[ddp::kOffMsn]);
	r.seglen = ulpdu;
	size_t hl = ddp::kUntaggedHdrLen;
	if (r.op == rdmap::kReadReq)
		hl += rdmap::rreq::kLen;
	r.hdr.assign(f.begin() + mpa::kUlpduLenLen,
		     f.begin() + mpa::kUlpduLenLen + std::min<size_t>(hl, ulpdu));
	const u8 *b = f.data() + ddp::kUntaggedFpduHdr;
	if (r.op == rdmap::kReadReq) {
		r.sink_stag = rfc::get32(b + rdmap::rreq::kSinkStag);
		r.sink_to = rfc::get64(b + rdmap::rreq::kSinkTo);
		r.size = rfc::get32(b + rdmap::rreq::kSize);
	} else if (r.op == rdmap::kAtomicReq) {
		r.req_id = rfc::get32(b + rdmap::atomic_req::kReqId);
	}
	return r;
}

Bytes read_resp(Peer &p, u32 stag, u64 to, u32 len)
{
	Bytes d(len);

	for (u32 i = 0; i < len; i++)
		d[i] = pat(i);
	return fpdu(p, ddp::tagged(ddp::ctrl(true, true), rdmap::ctrl(rdmap::kReadResp),
				   stag, to), d);
}

Bytes qn3_resp(Peer &p, unsigned op, const Bytes &body)
{
	Bytes h = ddp::untagged(ddp::ctrl(false, true), rdmap::ctrl(op), 0,
				rdmap::kQnAtomicResp, p.resp_msn++, 0);
	h.insert(h.end(), body.begin(), body.end());
	return fpdu(p, h, {});
}

Bytes atomic_resp(Peer &p, u32 req_id, u64 orig)
{
	Bytes b;

	rfc::append32(b, req_id);
	rfc::append64(b, orig);
	return qn3_resp(p, rdmap::kAtomicResp, b);
}

// A Terminate naming @r (nullptr: no header copied).
Bytes terminate(Peer &p, const Req *r)
{
	Bytes h = ddp::untagged(ddp::ctrl(false, true), rdmap::ctrl(rdmap::kTerminate),
				0, rdmap::kQnTerm, 1, 0);
	u8 hdrct = 0;
	if (r) {
		hdrct = term::kM | term::kD;
		if (r->op == rdmap::kReadReq)
			hdrct |= term::kR;
	}
	u8 c[term::kMin];
	term::put_ctrl(c, {rfc::errs::kLayerRdmap, rfc::errs::kRdmapRemoteProt,
			   rfc::errs::kRdmapInvStag, hdrct});
	h.insert(h.end(), c, c + term::kMin);
	if (r) {
		rfc::append16(h, u16(r->seglen));
		h.insert(h.end(), r->hdr.begin(), r->hdr.end());
	}
	return fpdu(p, h, {});
}

struct CaseDesc {
	const char *name;
	int nreq;		// requests the requester sends
};

const CaseDesc kCases[] = {
	{"term-mid", 3},   {"term-last", 3},  {"term-nohdr", 3},
	{"rresp-stag", 2}, {"rresp-to", 2},   {"rresp-short", 2},
	{"rresp-long", 2}, {"rresp-crc", 2},  {"rresp-aresp", 2},
	{"aresp-id", 2},
	{"aresp-type", 2},
	{"flush-type", 2}, {"flush-rresp", 2}, {"verify-type", 2},
	{"wire", 3},
};

const CaseDesc *find_case(std::string_view n)
{
	for (const CaseDesc &c : kCases)
		if (n == c.name)
			return &c;
	return nullptr;
}

// Print what xiw sends until EOF or @end.
void rx_report(Peer &p, Clock::time_point end)
{
	int terms = 0;

	for (;;) {
		Bytes f = next_fpdu(p, end);
		if (f.empty())
			break;
		if (p.crc) {
			u8 want[mpa::kCrcLen];
			rfc::crc_trailer(want, rfc::crc32c(f.data(), f.size() - mpa::kCrcLen));
			if (std::memcmp(want, f.data() + f.size() - mpa::kCrcLen, mpa::kCrcLen))
				std::printf("BADCRC\n");
		}
		u32 ulpdu = rfc::get16(f.data());
		u8 dc = f[ddp::kOffCtrl];
		int op = rdmap::opcode(f[ddp::kOffUlpCtrl]);
		if (!(dc & ddp::kT) && op == rdmap::kTerminate &&
		    ulpdu >= ddp::kUntaggedHdrLen + term::kMin) {
			const u8 *rd = f.data() + ddp::kUntaggedFpduHdr;
			term::Code tc = term::parse_ctrl(rd + term::kCtrl);
			bool tagged = (tc.hdrct & term::kD) && (rd[term::kHdrs] & ddp::kT);
			bool len_ok = ulpdu - ddp::kUntaggedHdrLen ==
				      term::len(tc.hdrct, tagged);
			std::printf("TERM layer=%u type=%u code=0x%02x hdrct=0x%02x qn=%u msn=%u len=%s\n",
				    tc.layer, tc.etype, tc.ecode, tc.hdrct,
				    rfc::get32(&f[ddp::kOffQn]),
				    rfc::get32(&f[ddp::kOffMsn]),
				    len_ok ? "ok" : "bad");
			terms++;
		} else {
			std::printf("FPDU ddp=0x%02x rdmap=0x%02x len=%u\n", dc,
				    f[ddp::kOffUlpCtrl], ulpdu);
		}
	}
	if (!terms)
		std::printf("NOTERM\n");
	if (p.eof)
		std::printf("%s\n", p.reset ? "RESET" : "EOF");
	else
		std::printf("TIMEOUT\n");
}

int do_listen(const char *host, const char *port, const CaseDesc &cd)
{
	int one = 1;
	Peer p;

	p.fd = raw::listen_accept(host, port, "LISTENING");
	if (p.fd < 0)
		die("listen/accept");
	setsockopt(p.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	auto end = Clock::now() + std::chrono::seconds(20);

	// MPA Request; the Reply: rev 2, p2p, one RTR type, IRD = ORD = 8
	if (!need(p, mpa::kFrameHdrLen, end))
		return std::printf("NOREQUEST\n"), 1;
	mpa::Header rq = mpa::parse(p.rx.data());
	if (!need(p, mpa::kFrameHdrLen + rq.pd_len, end))
		return std::printf("NOREQUEST truncated\n"), 1;
	u16 rird = 0, rord = 0;
	if ((rq.flags & mpa::kFlagS) && rq.pd_len >= mpa::kV2Len) {
		rird = rfc::get16(p.rx.data() + mpa::kFrameHdrLen);
		rord = rfc::get16(p.rx.data() + mpa::kFrameHdrLen + 2);
	}
	p.rx.erase(p.rx.begin(), p.rx.begin() + mpa::kFrameHdrLen + rq.pd_len);
	p.crc = (rq.flags & mpa::kFlagC) ||
		std::string_view(cd.name) == "rresp-crc";
	if (!(rird & mpa::kIrdP2P) || !(rord & (mpa::kOrdRtrWrite | mpa::kOrdRtrRead)) ||
	    rq.rev != mpa::kRev2) {
		std::printf("REQUEST not p2p rev 2: rev=%u ird=0x%04x ord=0x%04x\n",
			    rq.rev, rird, rord);
		return 1;
	}
	u16 rtr = (rord & mpa::kOrdRtrWrite) ? mpa::kOrdRtrWrite : mpa::kOrdRtrRead;
	send_all(p.fd, mpa::frame(mpa::kKeyRep, p.crc ? mpa::kFlagC : 0, mpa::kRev2,
				  true, mpa::kIrdP2P | 8, rtr | 8, {}));
	std::printf("REPLIED crc=%d rtr=%s\n", p.crc,
		    rtr == mpa::kOrdRtrWrite ? "write" : "read");

	// xiw's RTR, then the case's requests
	Bytes f = next_fpdu(p, end);
	if (f.empty())
		return std::printf("NORTR\n"), 1;
	if (rtr == mpa::kOrdRtrRead) {
		Req r = parse_req(f);
		send_all(p.fd, read_resp(p, r.sink_stag, 0, 0));
	}
	std::vector<Req> reqs;
	std::vector<Bytes> frames;
	while ((int)reqs.size() < cd.nreq) {
		f = next_fpdu(p, end);
		if (f.empty())
			return std::printf("REQUESTS only %zu\n", reqs.size()), 1;
		u8 dc = f[ddp::kOffCtrl];
		if ((dc & ddp::kT) || rfc::get32(&f[ddp::kOffQn]) != rdmap::kQnReadReq) {
			std::printf("UNEXPECTED ddp=0x%02x rdmap=0x%02x\n", dc,
				    f[ddp::kOffUlpCtrl]);
			return 1;
		}
		reqs.push_back(parse_req(f));
		frames.push_back(f);
	}
	std::printf("REQUESTS %zu\n", reqs.size());
	const Req &r0 = reqs[0];
	std::string_view n = cd.name;
	Bytes out;
	if (n == "wire") {
		// the commit draft's requests as xiw frames them (appendix A):
		// Data Sink STag, Length, TO, then the flags or the data
		for (size_t i = 0; i < frames.size(); i++) {
			const u8 *b = frames[i].data() + ddp::kUntaggedFpduHdr;
			int op = reqs[i].op;

			std::printf("WIRE op=0x%x len=0x%08x to=0x%016llx", op,
				    rfc::get32(b + 4),
				    (unsigned long long)rfc::get64(b + 8));
			if (op == rdmap::kFlushReq)
				std::printf(" flags=0x%08x\n", rfc::get32(b + 16));
			else
				std::printf(" data=%s\n",
					    checks::hex(b + 16, 8).c_str());
			Bytes r = qn3_resp(p, op == rdmap::kFlushReq ?
					   rdmap::kFlushResp :
					   rdmap::kAtomicWriteResp, {});
			out.insert(out.end(), r.begin(), r.end());
		}
	} else if (n.starts_with("term-")) {
		out = read_resp(p, r0.sink_stag, r0.sink_to, r0.size);
		const Req *named = n == "term-mid" ? &reqs[1] :
				   n == "term-last" ? &reqs[2] : nullptr;
		Bytes t = terminate(p, named);
		out.insert(out.end(), t.begin(), t.end());
	} else if (n == "rresp-stag") {
		out = read_resp(p, r0.sink_stag ^ 0x100, r0.sink_to, r0.size);
	} else if (n == "rresp-to") {
		out = read_resp(p, r0.sink_stag, r0.sink_to + 8, r0.size);
	} else if (n == "rresp-short") {
		out = read_resp(p, r0.sink_stag, r0.sink_to, r0.size / 2);
	} else if (n == "rresp-long") {
		out = read_resp(p, r0.sink_stag, r0.sink_to, r0.size * 2);
	} else if (n == "rresp-aresp") {
		out = atomic_resp(p, 0, 0x1111);
	} else if (n == "rresp-crc") {
		out = read_resp(p, r0.sink_stag, r0.sink_to, r0.size);
		out.back() ^= 0x01;	/* the CRC's last byte */
	} else if (n == "aresp-id") {
		out = atomic_resp(p, r0.req_id + 1, 0x1111);
	} else if (n == "aresp-type" || n == "verify-type") {
		out = qn3_resp(p, rdmap::kFlushResp, {});
	} else if (n == "flush-type") {
		out = qn3_resp(p, rdmap::kVerifyResp, {});
	} else if (n == "flush-rresp") {
		out = read_resp(p, 0x77, 0, 16);
	}
	send_all(p.fd, out);
	std::printf("SENT case=%s\n", cd.name);
	rx_report(p, Clock::now() + std::chrono::seconds(15));
	close(p.fd);
	return 0;
}

// ---------------------------------------------------------------------------
// Requesters

using Side = cm_pair::Side;

const char *st_name(ibv_wc_status s)
{
	return ibv_wc_status_str(s);
}

// Every byte of @mem outside [@keep_off, +@keep_len) ranges still kGuard.
bool guard_ok(const Side &s, const std::vector<std::pair<size_t, size_t>> &keep)
{
	for (size_t i = 0; i < s.mem.size(); i++) {
		bool in = false;

		for (auto &k : keep)
			in |= i >= k.first && i < k.first + k.second;
		if (!in && s.mem[i] != kGuard) {
			std::printf("# byte %zu changed: 0x%02x\n", i, s.mem[i]);
			return false;
		}
	}
	return true;
}

// One expected completion.
struct Want {
	ibv_wc_status st;
	u32 vendor;
};

// Poll @n completions and compare them, in order, with @want.
std::vector<ibv_wc> expect_wcs(Side &s, const std::vector<Want> &want,
			       const std::string &what)
{
	auto wc = s.poll(want.size(), 20000);

	check(wc.size() == want.size(), what + ": " + std::to_string(want.size()) +
	      " completions (got " + std::to_string(wc.size()) + ")");
	for (size_t i = 0; i < wc.size() && i < want.size(); i++) {
		char b[200];

		std::snprintf(b, sizeof(b),
			      "%s: WR %zu: %s vendor_err %#06x (want %s %#06x)",
			      what.c_str(), i + 1, st_name(wc[i].status),
			      wc[i].vendor_err, st_name(want[i].st), want[i].vendor);
		check(wc[i].wr_id == i + 1 && wc[i].status == want[i].st &&
		      wc[i].vendor_err == want[i].vendor, b);
	}
	return wc;
}

bool sink_holds_read(const Side &s, size_t off, u32 len)
{
	for (u32 i = 0; i < len; i++)
		if (s.mem[off + i] != pat(i))
			return false;
	return true;
}

int do_req(const char *host, const char *port, const CaseDesc &cd)
{
	rdma_event_channel *ch = rdma_create_event_channel();
	addrinfo hints{}, *ai;
	rdma_cm_id *id;

	hints.ai_socktype = SOCK_STREAM;
	if (!ch || getaddrinfo(host, port, &hints, &ai))
		die("channel / address");
	if (rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP) ||
	    rdma_resolve_addr(id, nullptr, ai->ai_addr, 2000))
		die("rdma_resolve_addr");
	rdma_ack_cm_event(cm_pair::expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
	if (rdma_resolve_route(id, 2000))
		die("rdma_resolve_route");
	rdma_ack_cm_event(cm_pair::expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
	Side s;
	cm_pair::SideOpts o;
	o.mem_bytes = kMem;
	o.send_ops_flags = IBV_QP_EX_WITH_RDMA_READ |
			   IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |
			   IBV_QP_EX_WITH_ATOMIC_WRITE;
	s.setup(id, o);
	std::fill(s.mem.begin(), s.mem.end(), kGuard);
	rdma_conn_param cp{};
	cp.initiator_depth = 8;
	cp.responder_resources = 8;
	if (rdma_connect(id, &cp))
		die("rdma_connect");
	rdma_ack_cm_event(cm_pair::expect(ch, RDMA_CM_EVENT_ESTABLISHED));

	std::string_view n = cd.name;
	const std::string what = cd.name;
	auto sink = [&](int i) { return kSinkOff + size_t(i) * 256; };
	auto read = [&](int i) {
		s.qpx->wr_id = u64(i + 1);
		ibv_wr_rdma_read(s.qpx, kRkey, kRaddr + u64(i) * 4096);
		ibv_wr_set_sge(s.qpx, s.mr->lkey, (uintptr_t)&s.mem[sink(i)], kReadLen);
	};
	ibv_wr_start(s.qpx);
	s.qpx->wr_flags = IBV_SEND_SIGNALED;
	if (n == "wire") {
		const u64 v = 0x0102030405060708ULL;

		s.qpx->wr_id = 1;
		xiwdv_wr_flush(s.qpx, kRkey, kRaddr, 0, XIWDV_FLUSH_GLOBAL,
			       XIWDV_FLUSH_MR);
		s.qpx->wr_id = 2;
		ibv_wr_atomic_write(s.qpx, kRkey, kRaddr + 64, &v);
		s.qpx->wr_id = 3;
		xiwdv_wr_flush(s.qpx, kRkey, kRaddr + 128, 4096,
			       XIWDV_FLUSH_PERSISTENT, XIWDV_FLUSH_RANGE);
	} else if (n.starts_with("term-") || n.starts_with("rresp-")) {
		for (int i = 0; i < cd.nreq; i++)
			read(i);
	} else {
		s.qpx->wr_id = 1;
		if (n.starts_with("aresp-")) {
			ibv_wr_atomic_fetch_add(s.qpx, kRkey, kRaddr, 1);
			ibv_wr_set_sge(s.qpx, s.mr->lkey, (uintptr_t)&s.mem[sink(0)], 8);
		} else if (n.starts_with("flush-")) {
			xiwdv_wr_flush(s.qpx, kRkey, kRaddr, 64, XIWDV_FLUSH_GLOBAL,
				       XIWDV_FLUSH_RANGE);
		} else {
			xiwdv_wr_verify(s.qpx, kRkey, kRaddr, 64, nullptr, 0);
			ibv_wr_set_sge(s.qpx, s.mr->lkey, (uintptr_t)&s.mem[sink(0)], 32);
		}
		read(1);
	}
	if (ibv_wr_complete(s.qpx))
		die("post");

	std::vector<std::pair<size_t, size_t>> keep;
	if (n == "wire") {
		expect_wcs(s, {{IBV_WC_SUCCESS, 0}, {IBV_WC_SUCCESS, 0},
			       {IBV_WC_SUCCESS, 0}}, what);
		check(guard_ok(s, keep), what + ": no local memory touched");
		rdma_disconnect(id);
		s.teardown();
		rdma_destroy_event_channel(ch);
		freeaddrinfo(ai);
		std::printf("%s: %d passed, %d failed\n",
			    checks::failures ? "FAIL" : "ok", checks::passes,
			    checks::failures);
		return checks::failures ? 1 : 0;
	}
	if (n.starts_with("term-")) {
		const Want err{IBV_WC_REM_ACCESS_ERR, 0x0100};
		const Want fl{IBV_WC_WR_FLUSH_ERR, 0};
		std::vector<Want> w = {{IBV_WC_SUCCESS, 0}, err, fl};
		if (n == "term-last")
			w = {{IBV_WC_SUCCESS, 0}, fl, err};
		auto wc = expect_wcs(s, w, what);
		check(sink_holds_read(s, sink(0), kReadLen),
		      what + ": Read 1's data in its sink");
		keep.push_back({sink(0), kReadLen});
	} else {
		// a frame that fails its CRC is a failure of the stream, not
		// a response: xiw sends the LLP Terminate, the stream ends and
		// every WR is flushed (what was placed of it in the sink is
		// undefined, as for any Read that did not complete)
		const Want first = n == "rresp-crc" ?
				   Want{IBV_WC_WR_FLUSH_ERR, 0} :
				   Want{IBV_WC_BAD_RESP_ERR, 0};
		expect_wcs(s, {first, {IBV_WC_WR_FLUSH_ERR, 0}}, what);
		// the bad Response may place inside the first WR's sink only
		keep.push_back({sink(0), n == "verify-type" ? 32 : n.starts_with("aresp-") ? 8 : kReadLen});
	}
	check(guard_ok(s, keep), what + ": nothing written outside the posted sink");
	ibv_qp_attr qa{};
	ibv_qp_init_attr qi{};
	ibv_query_qp(id->qp, &qa, IBV_QP_STATE, &qi);
	check(qa.qp_state == IBV_QPS_ERR, what + ": requester QP in ERROR");
	rdma_disconnect(id);
	s.teardown();
	rdma_destroy_event_channel(ch);
	freeaddrinfo(ai);
	std::printf("%s: %d passed, %d failed\n", checks::failures ? "FAIL" : "ok",
		    checks::passes, checks::failures);
	return checks::failures ? 1 : 0;
}

// xiw against xiw: see the header.
struct PairSeq {
	const char *name;
	const char *ops;	// per WR: r read, R refused read (bad rkey),
				// O read out of bounds, f FetchAdd, F refused
				// FetchAdd (bad rkey)
};

const PairSeq kPairSeqs[] = {
	{"read-fadd-read", "rFr"},
	{"read-read-fadd", "rRf"},
	{"read-fadd-badread-read", "rfRr"},
	{"read-fadd-oobread-read", "rfOr"},
};

int do_pair(const char *host, const char *port, std::string_view seqname)
{
	const PairSeq *seq = nullptr;

	for (const PairSeq &q : kPairSeqs)
		if (seqname == q.name)
			seq = &q;
	if (!seq) {
		std::fprintf(stderr, "unknown sequence\n");
		return 2;
	}
	cm_pair::Pair pair(host, port);
	Side cli, srv;
	cm_pair::SideOpts co, so;
	rdma_conn_param p{};
	rdma_cm_id *pass;

	p.initiator_depth = 8;
	p.responder_resources = 8;
	co.mem_bytes = kMem;
	co.send_ops_flags = IBV_QP_EX_WITH_RDMA_READ |
			    IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
	so.mem_bytes = kMem;
	so.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	cli.id = pair.connect([&](rdma_cm_id *c) { cli.setup(c, co); },
			      [&](rdma_cm_id *c) { srv.setup(c, so); }, p, p,
			      &pass);
	for (size_t i = 0; i < srv.mem.size(); i++)
		srv.mem[i] = pat(i);
	const u64 orig = 0x1122334455667788ULL, add = 5;
	std::memcpy(&srv.mem[4096], &orig, 8);	// the FetchAdd target
	std::fill(cli.mem.begin(), cli.mem.end(), kGuard);
	const u64 rbase = (uintptr_t)srv.mem.data();
	auto sink = [&](int i) { return kSinkOff + size_t(i) * 256; };
	const u32 bad = srv.mr->rkey ^ 0x80;
	const std::string what(seq->name), ops(seq->ops);
	const int n = int(ops.size());

	ibv_wr_start(cli.qpx);
	cli.qpx->wr_flags = IBV_SEND_SIGNALED;
	for (int i = 0; i < n; i++) {
		char op = ops[i];

		cli.qpx->wr_id = u64(i + 1);
		if (op == 'f' || op == 'F') {
			ibv_wr_atomic_fetch_add(cli.qpx, op == 'F' ? bad : srv.mr->rkey,
						rbase + 4096, add);
			ibv_wr_set_sge(cli.qpx, cli.mr->lkey,
				       (uintptr_t)&cli.mem[sink(i)], 8);
			continue;
		}
		// 'O': 64 bytes ending 32 past the region's end
		u64 ra = op == 'O' ? rbase + kMem - kReadLen / 2 :
				     rbase + u64(i) * 512;
		ibv_wr_rdma_read(cli.qpx, op == 'R' ? bad : srv.mr->rkey, ra);
		ibv_wr_set_sge(cli.qpx, cli.mr->lkey,
			       (uintptr_t)&cli.mem[sink(i)], kReadLen);
	}
	if (ibv_wr_complete(cli.qpx))
		die("post");
	auto wc = cli.poll(n, 20000);
	check(int(wc.size()) == n, what + ": " + std::to_string(n) +
	      " completions (got " + std::to_string(wc.size()) + ")");
	// Every WR before the refused one is answered: SUCCESS with its
	// data (a responder answers the requests before the one it refuses,
	// as InfiniBand's does); the refused one REM_ACCESS_ERR with its
	// Terminate's code; every WR after it WR_FLUSH_ERR.
	std::vector<std::pair<size_t, size_t>> keep;
	bool after = false, fadd_done = false;
	for (int i = 0; i < n && i < int(wc.size()); i++) {
		char op = ops[i];
		bool refused = op == 'R' || op == 'O' || op == 'F';
		ibv_wc_status want = after ? IBV_WC_WR_FLUSH_ERR :
				     refused ? IBV_WC_REM_ACCESS_ERR :
				     IBV_WC_SUCCESS;
		u32 vendor = after || !refused ? 0 : op == 'O' ? 0x0101 : 0x0100;
		char b[240];

		std::snprintf(b, sizeof(b), "%s: WR %d (%c): %s vendor_err %#06x (want %s %#06x)",
			      what.c_str(), i + 1, op, st_name(wc[i].status),
			      wc[i].vendor_err, st_name(want), vendor);
		check(wc[i].wr_id == u64(i + 1) && wc[i].status == want &&
		      wc[i].vendor_err == vendor, b);
		if (!after && !refused && wc[i].status == IBV_WC_SUCCESS) {
			if (op == 'f') {
				u64 got;

				std::memcpy(&got, &cli.mem[sink(i)], 8);
				std::snprintf(b, sizeof(b), "%s: WR %d: FetchAdd's original value %#llx (want %#llx)",
					      what.c_str(), i + 1,
					      (unsigned long long)got,
					      (unsigned long long)orig);
				check(got == orig, b);
				keep.push_back({sink(i), 8});
				fadd_done = true;
			} else {
				bool same = true;

				for (u32 k = 0; k < kReadLen; k++)
					same &= cli.mem[sink(i) + k] ==
						pat(size_t(i) * 512 + k);
				check(same, what + ": WR " + std::to_string(i + 1) +
				      ": the Read's data");
				keep.push_back({sink(i), kReadLen});
			}
		}
		after |= refused;
	}
	check(guard_ok(cli, keep), what + ": nothing written outside the answered sinks");
	u64 target;
	std::memcpy(&target, &srv.mem[4096], 8);
	const u64 want_target = fadd_done ? orig + add : orig;
	check(target == want_target, what + ": the FetchAdd target " +
	      std::to_string(target) + " (want " + std::to_string(want_target) + ")");
	rdma_disconnect(cli.id);
	cli.teardown();
	srv.teardown();
	std::printf("%s: %d passed, %d failed\n", checks::failures ? "FAIL" : "ok",
		    checks::passes, checks::failures);
	return checks::failures ? 1 : 0;
}

void usage()
{
	std::fprintf(stderr,
		     "usage: xiw_badresp pair ADDR PORT read-fadd-read|read-read-fadd|\n"
		     "                  read-fadd-badread-read|read-fadd-oobread-read\n"
		     "       xiw_badresp listen|req ADDR PORT --case NAME\n"
		     "       xiw_badresp --list\n");
	std::exit(2);
}

} // namespace

int main(int argc, char **argv)
{
	setvbuf(stdout, nullptr, _IOLBF, 0);
	if (argc == 2 && std::string_view(argv[1]) == "--list") {
		for (const CaseDesc &c : kCases)
			std::printf("%s\n", c.name);
		return 0;
	}
	if (argc == 5 && std::string_view(argv[1]) == "pair")
		return do_pair(argv[2], argv[3], argv[4]);
	if (argc != 6 || std::string_view(argv[4]) != "--case")
		usage();
	const CaseDesc *cd = find_case(argv[5]);
	if (!cd) {
		std::fprintf(stderr, "unknown case %s (--list)\n", argv[5]);
		return 2;
	}
	std::string_view role = argv[1];
	if (role == "listen")
		return do_listen(argv[2], argv[3], *cd);
	if (role == "req")
		return do_req(argv[2], argv[3], *cd);
	usage();
}
