// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// rfc_wire.h: the iWARP wire formats written out from the specifications,
// for the raw test peers (xiw_badpeer, xiw_mpa_peer) that talk to xiw
// over a plain TCP socket. It is a second, independent statement of what
// kernel/xiw_wire.h states for the module: it never includes that header
// nor copies its code, uses no structs or bitfields for wire images, and
// builds and parses every field byte by byte at the offsets the RFCs'
// figures give. selftests/host/test_rfc_wire.cpp compares the two field by
// field, so a wrong constant on either side shows as a disagreement
// instead of being copied into both the peer and the module under test.
//
// Sources: RFC 5044 (MPA: Request/Reply frames, FPDU framing, CRC),
// RFC 6581 (enhanced MPA: IRD/ORD word, RTR, new MPA error codes),
// RFC 5041 (DDP headers, DDP error codes), RFC 5040 (RDMAP control,
// opcodes, Read Request and Terminate headers, RDMAP error codes),
// RFC 7306 (Immediate Data, atomics, QN 3), RFC 3720 appendix B.4
// (CRC32c test vectors, byte order of the digest), and, where the
// encoding is xiw's own choice (the commit operations' control bytes and
// xiw's Flush "region" flag), Documentation/wire-format.md.
//
// Offsets below are octets. Frame images that the peers build start at
// the 2-octet MPA ULPDU_Length (an "FPDU offset"); RDMAP header offsets
// are given from the end of the DDP header. All multi-octet fields are
// big-endian (network order) except the MPA CRC trailer (see crc32c).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace rfc {

using Bytes = std::vector<uint8_t>;

// ---------------------------------------------------------------------------
// Big-endian fields, one octet at a time

inline void put16(uint8_t *p, uint16_t v)
{
	p[0] = uint8_t(v >> 8);
	p[1] = uint8_t(v);
}

inline void put32(uint8_t *p, uint32_t v)
{
	p[0] = uint8_t(v >> 24);
	p[1] = uint8_t(v >> 16);
	p[2] = uint8_t(v >> 8);
	p[3] = uint8_t(v);
}

inline void put64(uint8_t *p, uint64_t v)
{
	put32(p, uint32_t(v >> 32));
	put32(p + 4, uint32_t(v));
}

inline uint16_t get16(const uint8_t *p)
{
	return uint16_t(p[0] << 8 | p[1]);
}

inline uint32_t get32(const uint8_t *p)
{
	return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 |
	       uint32_t(p[2]) << 8 | uint32_t(p[3]);
}

inline uint64_t get64(const uint8_t *p)
{
	return uint64_t(get32(p)) << 32 | get32(p + 4);
}

inline void append16(Bytes &b, uint16_t v)
{
	b.push_back(uint8_t(v >> 8));
	b.push_back(uint8_t(v));
}

inline void append32(Bytes &b, uint32_t v)
{
	append16(b, uint16_t(v >> 16));
	append16(b, uint16_t(v));
}

inline void append64(Bytes &b, uint64_t v)
{
	append32(b, uint32_t(v >> 32));
	append32(b, uint32_t(v));
}

// ---------------------------------------------------------------------------
// MPA Request and Reply frames (RFC 5044 section 7, RFC 6581)
//
//   0..15  Key: the 16 ASCII octets "MPA ID Req Frame" / "MPA ID Rep Frame"
//   16     |M|C|R|S|Res(4)|   M markers, C CRC, R reject (Reply only),
//                             S = RFC 6581's enhanced-setup bit
//   17     Rev (1: RFC 5044, 2: RFC 6581)
//   18..19 PD_Length (at most 512; counts the RFC 6581 word)
//   20..   private data; with S set it opens with the IRD/ORD word:
//   +0     |A|B| IRD (14) |   A peer-to-peer, B zero-length Send RTR
//   +2     |C|D| ORD (14) |   C zero-length Write RTR, D zero-length Read RTR
namespace mpa {

constexpr size_t kKeyLen = 16;
constexpr std::string_view kKeyReq{"MPA ID Req Frame", kKeyLen};
constexpr std::string_view kKeyRep{"MPA ID Rep Frame", kKeyLen};
constexpr size_t kOffKey = 0;
constexpr size_t kOffFlags = 16;
constexpr size_t kOffRev = 17;
constexpr size_t kOffPdLen = 18;
constexpr size_t kFrameHdrLen = 20;

constexpr uint8_t kFlagM = 0x80;	// bit 0 of octet 16
constexpr uint8_t kFlagC = 0x40;	// bit 1
constexpr uint8_t kFlagR = 0x20;	// bit 2
constexpr uint8_t kFlagS = 0x10;	// bit 3, RFC 6581 (enhanced)
constexpr uint8_t kFlagResMask = 0x0f;
constexpr uint8_t kRev1 = 1;
constexpr uint8_t kRev2 = 2;
constexpr uint16_t kPdMax = 512;

// RFC 6581: the IRD/ORD word (two big-endian 16-bit halves).
constexpr size_t kV2Len = 4;
constexpr uint16_t kIrdP2P = 0x8000;		// A
constexpr uint16_t kIrdRtrSend = 0x4000;	// B
constexpr uint16_t kOrdRtrWrite = 0x8000;	// C
constexpr uint16_t kOrdRtrRead = 0x4000;	// D
constexpr uint16_t kIrdOrdMask = 0x3fff;
// RFC 6581 leaves the STag of the zero-length Read RTR open; xiw sends
// and expects 1 (Documentation/wire-format.md: some RNICs reject 0).
constexpr uint32_t kRtrReadStag = 1;

// A Request/Reply frame. @key: 16 octets (a wrong one on purpose is
// fine); @v2: prepend the IRD/ORD word to @pd (and set S); @pd_len_field
// >= 0 replaces the PD_Length that the frame really has.
inline Bytes frame(std::string_view key, uint8_t flags, uint8_t rev, bool v2,
		   uint16_t ird, uint16_t ord, std::string_view pd,
		   int pd_len_field = -1)
{
	Bytes b(kFrameHdrLen, 0);
	size_t pdl = (v2 ? kV2Len : 0) + pd.size();

	for (size_t i = 0; i < kKeyLen; i++)
		b[kOffKey + i] = i < key.size() ? uint8_t(key[i]) : 0;
	b[kOffFlags] = flags | (v2 ? kFlagS : 0);
	b[kOffRev] = rev;
	put16(&b[kOffPdLen], uint16_t(pd_len_field >= 0 ? pd_len_field : pdl));
	if (v2) {
		append16(b, ird);
		append16(b, ord);
	}
	b.insert(b.end(), pd.begin(), pd.end());
	return b;
}

struct Header {
	std::string_view key;	// points into the parsed buffer
	uint8_t flags;
	uint8_t rev;
	uint16_t pd_len;
};

// The fixed part of a frame; @p holds kFrameHdrLen octets.
inline Header parse(const uint8_t *p)
{
	return {std::string_view(reinterpret_cast<const char *>(p + kOffKey),
				 kKeyLen),
		p[kOffFlags], p[kOffRev], get16(p + kOffPdLen)};
}

// ---------------------------------------------------------------------------
// FPDU framing (RFC 5044, FPDUs without markers)
//
//   0..1   ULPDU_Length: octets of the ULPDU (the DDP segment)
//   2..    ULPDU, then 0-3 pad octets so that 2 + ULPDU + pad is a
//          multiple of 4, then the 4-octet CRC (zero when CRC is off)
constexpr size_t kUlpduLenLen = 2;
constexpr size_t kCrcLen = 4;
constexpr size_t kMinFpdu = 8;			// empty ULPDU: 2 + 2 pad + 4
constexpr uint32_t kUlpduMax = 65534;		// 16-bit field, no pad
constexpr uint32_t kMarkerInterval = 512;	// RFC 5044 markers (xiw sends none)
constexpr size_t kMarkerLen = 4;		// 16 reserved + 16 FPDUPTR

inline constexpr uint32_t pad(uint32_t ulpdu_len)
{
	uint32_t r = (kUlpduLenLen + ulpdu_len) % 4;

	return r ? 4 - r : 0;
}

inline constexpr uint32_t fpdu_len(uint32_t ulpdu_len)
{
	return kUlpduLenLen + ulpdu_len + pad(ulpdu_len) + kCrcLen;
}

} // namespace mpa

// ---------------------------------------------------------------------------
// CRC32c (RFC 5044 uses iSCSI's: RFC 3720, test vectors in appendix
// B.4): Castagnoli polynomial 0x1EDC6F41, reflected (so
// 0x82F63B78 in LSB-first form), register preset to all ones, result
// complemented. RFC 3720 B.4 shows the digest of 32 zero octets as the
// octets aa 36 91 8a, i.e. the 32-bit value 0x8a9136aa sent least
// significant octet first; the MPA trailer is sent the same way. Bitwise,
// no table, so nothing is shared with any other implementation here.
inline uint32_t crc32c(const uint8_t *p, size_t n)
{
	uint32_t c = 0xffffffffU;

	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82f63b78U & (0U - (c & 1)));
	}
	return ~c;
}

// The 4 trailer octets for @crc, in the order RFC 3720 B.4 shows.
inline void crc_trailer(uint8_t *out, uint32_t crc)
{
	out[0] = uint8_t(crc);
	out[1] = uint8_t(crc >> 8);
	out[2] = uint8_t(crc >> 16);
	out[3] = uint8_t(crc >> 24);
}

// ---------------------------------------------------------------------------
// DDP (RFC 5041 section 4)
//
// FPDU offset 2, DDP control: |T|L|Rsvd(4)|DV(2)|; offset 3: the 8 bits
// reserved for the ULP (RDMAP's control byte, below). Then:
//   tagged (14 octets):   4..7 STag, 8..15 Tagged Offset
//   untagged (18 octets): 4..7 RsvdULP (RDMAP: Invalidate STag),
//                         8..11 QN, 12..15 MSN, 16..19 MO
namespace ddp {

constexpr uint8_t kT = 0x80;
constexpr uint8_t kL = 0x40;
constexpr uint8_t kRsvdMask = 0x3c;
constexpr uint8_t kDvMask = 0x03;
constexpr uint8_t kVersion = 1;
constexpr size_t kTaggedHdrLen = 14;
constexpr size_t kUntaggedHdrLen = 18;

// FPDU offsets
constexpr size_t kOffCtrl = 2;
constexpr size_t kOffUlpCtrl = 3;
constexpr size_t kOffStag = 4;		// tagged
constexpr size_t kOffTo = 8;		// tagged
constexpr size_t kOffInvStag = 4;	// untagged RsvdULP[8:39]
constexpr size_t kOffQn = 8;
constexpr size_t kOffMsn = 12;
constexpr size_t kOffMo = 16;
constexpr size_t kTaggedFpduHdr = mpa::kUlpduLenLen + kTaggedHdrLen;	// 16
constexpr size_t kUntaggedFpduHdr = mpa::kUlpduLenLen + kUntaggedHdrLen;	// 20

inline constexpr uint8_t ctrl(bool tagged, bool last, uint8_t version = kVersion)
{
	return uint8_t((tagged ? kT : 0) | (last ? kL : 0) | (version & kDvMask));
}

inline constexpr size_t hdr_len(uint8_t ddp_ctrl)
{
	return (ddp_ctrl & kT) ? kTaggedHdrLen : kUntaggedHdrLen;
}

// Header images from the MPA length on (its two octets left zero).
inline Bytes tagged(uint8_t ddp_ctrl, uint8_t ulp_ctrl, uint32_t stag,
		    uint64_t to)
{
	Bytes b(kTaggedFpduHdr, 0);

	b[kOffCtrl] = ddp_ctrl;
	b[kOffUlpCtrl] = ulp_ctrl;
	put32(&b[kOffStag], stag);
	put64(&b[kOffTo], to);
	return b;
}

inline Bytes untagged(uint8_t ddp_ctrl, uint8_t ulp_ctrl, uint32_t inv_stag,
		      uint32_t qn, uint32_t msn, uint32_t mo)
{
	Bytes b(kUntaggedFpduHdr, 0);

	b[kOffCtrl] = ddp_ctrl;
	b[kOffUlpCtrl] = ulp_ctrl;
	put32(&b[kOffInvStag], inv_stag);
	put32(&b[kOffQn], qn);
	put32(&b[kOffMsn], msn);
	put32(&b[kOffMo], mo);
	return b;
}

} // namespace ddp

// ---------------------------------------------------------------------------
// RDMAP (RFC 5040 section 4, RFC 7306 section 4)
//
// Control byte (FPDU offset 3): |RV(2)|Rsv(2)|Opcode(4)|, RV = 01b.
namespace rdmap {

constexpr uint8_t kVersion = 1;		// RV
constexpr unsigned kRvShift = 6;
constexpr uint8_t kRsvMask = 0x30;
constexpr uint8_t kOpMask = 0x0f;

enum Op : unsigned {
	kWrite = 0x0,		// RFC 5040, tagged
	kReadReq = 0x1,		// QN 1
	kReadResp = 0x2,	// tagged
	kSend = 0x3,		// QN 0
	kSendInv = 0x4,
	kSendSe = 0x5,
	kSendSeInv = 0x6,
	kTerminate = 0x7,	// QN 2
	kImm = 0x8,		// RFC 7306, QN 0
	kImmSe = 0x9,
	kAtomicReq = 0xa,	// RFC 7306, QN 1
	kAtomicResp = 0xb,	// RFC 7306, QN 3
	kFlushReq = 0xc,	// commit draft, QN 1
	kFlushResp = 0xd,	// QN 3
	kVerifyReq = 0xe,	// QN 1
	kVerifyResp = 0xf,	// QN 3
	// The draft's 0x10/0x11 do not fit 4 bits: xiw sends them with
	// RV = 11b and the low nibble (control 0xC0 / 0xC1), see
	// Documentation/wire-format.md.
	kAtomicWriteReq = 0x10,
	kAtomicWriteResp = 0x11,
	kOpCount = 0x12,
};
constexpr uint8_t kRvXiwExt = 3;

// Control byte of logical opcode @op (0 .. kOpCount - 1).
inline constexpr uint8_t ctrl(unsigned op)
{
	if (op >= 0x10)
		return uint8_t(kRvXiwExt << kRvShift | (op & kOpMask));
	return uint8_t(kVersion << kRvShift | (op & kOpMask));
}

// Logical opcode of a control byte, -1 for an RV xiw does not speak.
inline constexpr int opcode(uint8_t c)
{
	unsigned rv = c >> kRvShift, op = c & kOpMask;

	if (rv == kVersion)
		return int(op);
	if (rv == kRvXiwExt && op <= 1)
		return int(0x10 + op);
	return -1;
}

// Untagged queue numbers: RFC 5040 section 5 (0-2), RFC 7306 (3).
constexpr uint32_t kQnSend = 0;
constexpr uint32_t kQnReadReq = 1;
constexpr uint32_t kQnTerm = 2;
constexpr uint32_t kQnAtomicResp = 3;
constexpr uint32_t kQnCount = 4;

// The queue of each untagged message (RFC 5040 section 5, RFC 7306
// Figure 2; the commit operations after Documentation/wire-format.md),
// -1 for the tagged ones (RDMA Write, RDMA Read Response).
inline constexpr int qn(unsigned op)
{
	switch (op) {
	case kWrite:
	case kReadResp:
		return -1;
	case kSend:
	case kSendInv:
	case kSendSe:
	case kSendSeInv:
	case kImm:
	case kImmSe:
		return int(kQnSend);
	case kReadReq:
	case kAtomicReq:
	case kFlushReq:
	case kVerifyReq:
	case kAtomicWriteReq:
		return int(kQnReadReq);
	case kTerminate:
		return int(kQnTerm);
	default:	// the responses of atomics and commit operations
		return int(kQnAtomicResp);
	}
}

// RDMA Read Request header (RFC 5040 section 4), after the DDP header.
namespace rreq {
constexpr size_t kSinkStag = 0;
constexpr size_t kSinkTo = 4;
constexpr size_t kSize = 12;
constexpr size_t kSrcStag = 16;
constexpr size_t kSrcTo = 20;
constexpr size_t kLen = 28;
} // namespace rreq

inline void append_rreq(Bytes &b, uint32_t sink_stag, uint64_t sink_to,
			uint32_t size, uint32_t src_stag, uint64_t src_to)
{
	append32(b, sink_stag);
	append64(b, sink_to);
	append32(b, size);
	append32(b, src_stag);
	append64(b, src_to);
}

// Terminate header (RFC 5040 section 4), after the DDP header:
//   0..3  Terminate Control: |Layer(4)|EType(4)|Error Code(8)|M|D|R|Rsvd(13)|
//   4..5  DDP Segment Length (when M or D)
//   6..   Terminated DDP Header (D: 14 or 18 octets), then the
//         Terminated RDMA Header (R, with D: a Read Request's 28)
// "hdrct" below is the third octet of the control word: M 0x80, D 0x40,
// R 0x20.
namespace term {
constexpr size_t kCtrl = 0;
constexpr size_t kSegLen = 4;
constexpr size_t kHdrs = 6;
constexpr size_t kMin = 4;
constexpr size_t kMax = 4 + 2 + ddp::kUntaggedHdrLen + rreq::kLen;	// 52
constexpr uint8_t kM = 0x80;
constexpr uint8_t kD = 0x40;
constexpr uint8_t kR = 0x20;

struct Code {
	uint8_t layer, etype, ecode, hdrct;
};

inline void put_ctrl(uint8_t *p, const Code &c)
{
	p[0] = uint8_t((c.layer & 0xf) << 4 | (c.etype & 0xf));
	p[1] = c.ecode;
	p[2] = c.hdrct & (kM | kD | kR);
	p[3] = 0;
}

inline Code parse_ctrl(const uint8_t *p)
{
	return {uint8_t(p[0] >> 4), uint8_t(p[0] & 0xf), p[1],
		uint8_t(p[2] & (kM | kD | kR))};
}

// Octets of the Terminate's RDMAP part for @hdrct; @tagged: the copied
// DDP header is a tagged one.
inline constexpr size_t len(uint8_t hdrct, bool tagged)
{
	size_t n = kMin;

	if (hdrct & (kM | kD))
		n += 2;
	if (hdrct & kD) {
		n += tagged ? ddp::kTaggedHdrLen : ddp::kUntaggedHdrLen;
		if (hdrct & kR)
			n += rreq::kLen;
	}
	return n;
}
} // namespace term

// Immediate Data (RFC 7306 section 6.2): 8 octets after the DDP header.
constexpr size_t kImmLen = 8;

// Atomic Request (RFC 7306 section 5.2.1, Figure 4), after the DDP header.
namespace atomic_req {
constexpr size_t kAopcode = 0;	// 28 reserved bits, then AOpCode (4)
constexpr size_t kReqId = 4;
constexpr size_t kStag = 8;
constexpr size_t kTo = 12;
constexpr size_t kAddSwap = 20;
constexpr size_t kAddSwapMask = 28;
constexpr size_t kCmp = 36;
constexpr size_t kCmpMask = 44;
constexpr size_t kLen = 52;
constexpr uint32_t kFetchAdd = 0x0;	// Figure 5
constexpr uint32_t kSwap = 0x1;		// reserved by IANA (section 10)
constexpr uint32_t kCmpSwap = 0x2;
constexpr uint32_t kAopMask = 0xf;
} // namespace atomic_req

// Atomic Response (RFC 7306 section 5.2.2, Figure 6).
namespace atomic_resp {
constexpr size_t kReqId = 0;
constexpr size_t kOrig = 4;
constexpr size_t kLen = 12;
} // namespace atomic_resp

// Commit operations (draft-talpey-rdma-commit-01, as
// Documentation/wire-format.md states xiw's reading): Data Sink STag,
// Data Sink Length, Data Sink Tagged Offset, then per operation.
namespace commit {
constexpr size_t kStag = 0;
constexpr size_t kLength = 4;
constexpr size_t kTo = 8;
constexpr size_t kTail = 16;		// Flush flags / Verify hash / AW data
constexpr size_t kFlushLen = 20;	// + 32-bit disposition flags
constexpr size_t kVerifyMin = 16;	// + 0..32 hash octets
constexpr size_t kVerifyHashMax = 32;
constexpr size_t kAtomicWriteLen = 24;	// + 8 data octets
constexpr uint32_t kFlushP = 0x1;
constexpr uint32_t kFlushG = 0x2;
constexpr uint32_t kFlushRegionXiw = 0x4;
} // namespace commit

} // namespace rdmap

// ---------------------------------------------------------------------------
// Terminate codes: layers and error types/codes of RFC 5040 section 7,
// RFC 5041 section 7, RFC 5044 section 8 and RFC 6581 (the IANA
// RDDP registries of RFC 6580 list them all).
namespace errs {
constexpr uint8_t kLayerRdmap = 0x0;
constexpr uint8_t kLayerDdp = 0x1;
constexpr uint8_t kLayerLlp = 0x2;

// RDMAP
constexpr uint8_t kRdmapCatastrophic = 0x0;	// error type
constexpr uint8_t kRdmapRemoteProt = 0x1;
constexpr uint8_t kRdmapRemoteOp = 0x2;
constexpr uint8_t kRdmapInvStag = 0x00;
constexpr uint8_t kRdmapBaseBounds = 0x01;
constexpr uint8_t kRdmapAccess = 0x02;
constexpr uint8_t kRdmapStagNotAssoc = 0x03;
constexpr uint8_t kRdmapToWrap = 0x04;
constexpr uint8_t kRdmapVersion = 0x05;
constexpr uint8_t kRdmapOpcode = 0x06;
constexpr uint8_t kRdmapCatStream = 0x07;
constexpr uint8_t kRdmapCatGlobal = 0x08;
constexpr uint8_t kRdmapCannotInvalidate = 0x09;
constexpr uint8_t kRdmapUnspecified = 0xff;

// DDP
constexpr uint8_t kDdpCatastrophic = 0x0;	// error type
constexpr uint8_t kDdpTagged = 0x1;
constexpr uint8_t kDdpUntagged = 0x2;
constexpr uint8_t kDdpTInvStag = 0x00;
constexpr uint8_t kDdpTBaseBounds = 0x01;
constexpr uint8_t kDdpTStagNotAssoc = 0x02;
constexpr uint8_t kDdpTToWrap = 0x03;
constexpr uint8_t kDdpTVersion = 0x04;
constexpr uint8_t kDdpUInvQn = 0x01;
constexpr uint8_t kDdpUMsnNoBuf = 0x02;
constexpr uint8_t kDdpUMsnRange = 0x03;
constexpr uint8_t kDdpUInvMo = 0x04;
constexpr uint8_t kDdpUTooLong = 0x05;
constexpr uint8_t kDdpUVersion = 0x06;

// LLP = MPA
constexpr uint8_t kMpaEtype = 0x0;
constexpr uint8_t kMpaTcpClosed = 0x01;
constexpr uint8_t kMpaCrc = 0x02;
constexpr uint8_t kMpaMarkerLen = 0x03;
constexpr uint8_t kMpaBadRr = 0x04;
constexpr uint8_t kMpaLocalCatastrophic = 0x05;	// RFC 6581
constexpr uint8_t kMpaInsufficientIrd = 0x06;	// RFC 6581
constexpr uint8_t kMpaNoMatchingRtr = 0x07;	// RFC 6581
} // namespace errs

} // namespace rfc
