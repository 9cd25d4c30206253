// SPDX-License-Identifier: GPL-2.0
// Two statements of the iWARP wire formats must agree: kernel/xiw_wire.h
// (what the module uses) and selftests/progs/rfc_wire.h (what the raw
// test peers xiw_badpeer and xiw_mpa_peer use, written out from the RFCs
// byte by byte). Every constant, offset, header length, control byte,
// Terminate encoding and the CRC are compared here, so a wrong value in
// either header fails this test instead of being copied into both the
// module and the peer that is meant to check it. The CRC is also held
// against the RFC 3720 B.4 vectors, written out again below.
#include <cstddef>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kcompat.h"
#include "xiw_wire.h"
#include "digests.h"
#include "rfc_wire.h"
#include "rfc3720_vectors.h"

namespace {

using Bytes = std::vector<u8>;
namespace mpa = rfc::mpa;
namespace ddp = rfc::ddp;
namespace rdmap = rfc::rdmap;
namespace term = rfc::rdmap::term;
namespace errs = rfc::errs;

template <typename T> Bytes image(const T &v)
{
	const u8 *p = reinterpret_cast<const u8 *>(&v);
	return Bytes(p, p + sizeof(v));
}

// Offsets of RDMAP fields: xiw's structs start at the MPA length, rfc's
// RDMAP offsets at the end of the untagged DDP header.
constexpr size_t kUt = ddp::kUntaggedFpduHdr;

// ---------------------------------------------------------------------------
// MPA Request/Reply

TEST(RfcWire, MpaKeysAndFlags)
{
	ASSERT_EQ(mpa::kKeyLen, size_t(XIW_MPA_KEY_LEN));
	EXPECT_EQ(std::string(XIW_MPA_KEY_REQ, XIW_MPA_KEY_LEN),
		  std::string(mpa::kKeyReq));
	EXPECT_EQ(std::string(XIW_MPA_KEY_REP, XIW_MPA_KEY_LEN),
		  std::string(mpa::kKeyRep));
	EXPECT_EQ(mpa::kFlagM, XIW_MPA_FLAG_M);
	EXPECT_EQ(mpa::kFlagC, XIW_MPA_FLAG_C);
	EXPECT_EQ(mpa::kFlagR, XIW_MPA_FLAG_R);
	EXPECT_EQ(mpa::kFlagS, XIW_MPA_FLAG_ENHANCED);
	EXPECT_EQ(mpa::kFlagResMask, XIW_MPA_FLAG_RES_MASK);
	EXPECT_EQ(mpa::kRev1, XIW_MPA_REV1);
	EXPECT_EQ(mpa::kRev2, XIW_MPA_REV2);
	EXPECT_EQ(mpa::kPdMax, XIW_MPA_PD_MAX);
	EXPECT_EQ(mpa::kIrdP2P, XIW_MPA_V2_P2P);
	EXPECT_EQ(mpa::kIrdRtrSend, XIW_MPA_V2_RTR_SEND);
	EXPECT_EQ(mpa::kOrdRtrWrite, XIW_MPA_V2_RTR_WRITE);
	EXPECT_EQ(mpa::kOrdRtrRead, XIW_MPA_V2_RTR_READ);
	EXPECT_EQ(mpa::kIrdOrdMask, XIW_MPA_V2_IRD_ORD_MASK);
	EXPECT_EQ(mpa::kRtrReadStag, u32(XIW_RTR_READ_STAG));
}

TEST(RfcWire, MpaFrameLayout)
{
	EXPECT_EQ(mpa::kFrameHdrLen, sizeof(xiw_mpa_rr));
	EXPECT_EQ(mpa::kOffKey, offsetof(xiw_mpa_rr, key));
	EXPECT_EQ(mpa::kOffFlags, offsetof(xiw_mpa_rr, flags));
	EXPECT_EQ(mpa::kOffRev, offsetof(xiw_mpa_rr, rev));
	EXPECT_EQ(mpa::kOffPdLen, offsetof(xiw_mpa_rr, pd_len));
	EXPECT_EQ(mpa::kV2Len, sizeof(xiw_mpa_v2));

	// the same Request, built both ways
	xiw_mpa_rr rr{};
	std::memcpy(rr.key, XIW_MPA_KEY_REQ, XIW_MPA_KEY_LEN);
	rr.flags = XIW_MPA_FLAG_C | XIW_MPA_FLAG_ENHANCED;
	rr.rev = XIW_MPA_REV2;
	rr.pd_len = cpu_to_be16(sizeof(xiw_mpa_v2) + 5);
	xiw_mpa_v2 v2{cpu_to_be16(XIW_MPA_V2_P2P | 8),
		      cpu_to_be16(XIW_MPA_V2_RTR_WRITE | 4)};
	Bytes x = image(rr), v = image(v2);
	x.insert(x.end(), v.begin(), v.end());
	x.insert(x.end(), {'h', 'e', 'l', 'l', 'o'});
	Bytes r = mpa::frame(mpa::kKeyReq, mpa::kFlagC, mpa::kRev2, true,
			     mpa::kIrdP2P | 8, mpa::kOrdRtrWrite | 4, "hello");
	EXPECT_EQ(r, x);

	// and parsed back by rfc_wire.h
	mpa::Header h = mpa::parse(x.data());
	EXPECT_EQ(h.key, mpa::kKeyReq);
	EXPECT_EQ(h.flags, rr.flags);
	EXPECT_EQ(h.rev, rr.rev);
	EXPECT_EQ(h.pd_len, be16_to_cpu(rr.pd_len));
	EXPECT_EQ(rfc::get16(&x[mpa::kFrameHdrLen]), be16_to_cpu(v2.ird));
	EXPECT_EQ(rfc::get16(&x[mpa::kFrameHdrLen + 2]), be16_to_cpu(v2.ord));
}

// ---------------------------------------------------------------------------
// FPDU framing

TEST(RfcWire, FpduFraming)
{
	EXPECT_EQ(mpa::kUlpduLenLen, size_t(XIW_MPA_HDR_LEN));
	EXPECT_EQ(mpa::kCrcLen, size_t(XIW_MPA_CRC_LEN));
	EXPECT_EQ(mpa::kMinFpdu, size_t(XIW_MPA_MIN_FPDU));
	EXPECT_EQ(mpa::kUlpduMax, u32(XIW_MPA_ULPDU_MAX));
	EXPECT_EQ(mpa::kMarkerInterval, u32(XIW_MPA_MARKER_INTERVAL));
	EXPECT_EQ(mpa::kMarkerLen, size_t(XIW_MPA_MARKER_LEN));
	EXPECT_EQ(mpa::fpdu_len(0), mpa::kMinFpdu);
	for (u32 n = 0; n <= 0x10003; n++) {
		ASSERT_EQ(mpa::pad(n), xiw_mpa_pad(n)) << n;
		ASSERT_EQ(mpa::fpdu_len(n), xiw_mpa_fpdu_len(n)) << n;
		ASSERT_EQ(mpa::fpdu_len(n) % 4, 0U) << n;
	}
}

// ---------------------------------------------------------------------------
// CRC32c: RFC 3720 B.4, as printed there (the digest's octets in the order
// they are sent), against both implementations and digests.h.

Bytes rfc_trailer(const Bytes &b)
{
	Bytes t(4);

	rfc::crc_trailer(t.data(), rfc::crc32c(b.data(), b.size()));
	return t;
}

Bytes xiw_trailer(const Bytes &b)
{
	return image(xiw_crc_trailer(xiw_crc_update(XIW_CRC32C_SEED, b.data(),
						    b.size())));
}

TEST(RfcWire, CrcRfc3720Vectors)
{
	for (const Rfc3720Vector &v : rfc3720_vectors()) {
		EXPECT_EQ(rfc_trailer(v.data), v.wire) << v.name << " (rfc_wire.h)";
		EXPECT_EQ(xiw_trailer(v.data), v.wire) << v.name << " (xiw_wire.h)";
		EXPECT_EQ(digests::crc32c_bytes(v.data.data(), v.data.size()),
			  v.wire) << v.name << " (digests.h)";
	}
}

TEST(RfcWire, CrcAgreesOnRandomFrames)
{
	std::mt19937 rng(5044);

	for (int i = 0; i < 300; i++) {
		Bytes b(rng() % 3000);
		for (u8 &c : b)
			c = u8(rng());
		ASSERT_EQ(rfc_trailer(b), xiw_trailer(b)) << b.size();
		// xiw's running CRC over two parts, as its TX computes it
		size_t cut = b.empty() ? 0 : rng() % b.size();
		u32 run = xiw_crc_update(XIW_CRC32C_SEED, b.data(), cut);
		run = xiw_crc_update(run, b.data() + cut, b.size() - cut);
		ASSERT_EQ(image(xiw_crc_trailer(run)), rfc_trailer(b));
	}
	EXPECT_EQ(xiw_crc_update(XIW_CRC32C_SEED, nullptr, 0), 0xffffffffU);
}

// ---------------------------------------------------------------------------
// DDP

TEST(RfcWire, DdpControl)
{
	EXPECT_EQ(ddp::kT, XIW_DDP_T);
	EXPECT_EQ(ddp::kL, XIW_DDP_L);
	EXPECT_EQ(ddp::kRsvdMask, XIW_DDP_RSVD_MASK);
	EXPECT_EQ(ddp::kDvMask, XIW_DDP_DV_MASK);
	EXPECT_EQ(ddp::kVersion, XIW_DDP_VERSION);
	EXPECT_EQ(ddp::kTaggedHdrLen, size_t(XIW_DDP_TAGGED_HDR_LEN));
	EXPECT_EQ(ddp::kUntaggedHdrLen, size_t(XIW_DDP_UNTAGGED_HDR_LEN));
	for (int t = 0; t < 2; t++)
		for (int l = 0; l < 2; l++)
			EXPECT_EQ(ddp::ctrl(t, l), xiw_ddp_ctrl(t, l)) << t << l;
	for (unsigned c = 0; c < 256; c++)
		EXPECT_EQ(ddp::hdr_len(u8(c)), xiw_ddp_hdr_len(u8(c))) << c;
}

TEST(RfcWire, DdpHeaders)
{
	EXPECT_EQ(ddp::kTaggedFpduHdr, sizeof(xiw_ddp_tagged));
	EXPECT_EQ(ddp::kUntaggedFpduHdr, sizeof(xiw_ddp_untagged));
	EXPECT_EQ(ddp::kOffCtrl, offsetof(xiw_ddp_untagged, ctrl.ddp));
	EXPECT_EQ(ddp::kOffUlpCtrl, offsetof(xiw_ddp_untagged, ctrl.rdmap));
	EXPECT_EQ(ddp::kOffStag, offsetof(xiw_ddp_tagged, stag));
	EXPECT_EQ(ddp::kOffTo, offsetof(xiw_ddp_tagged, to));
	EXPECT_EQ(ddp::kOffInvStag, offsetof(xiw_ddp_untagged, inval_stag));
	EXPECT_EQ(ddp::kOffQn, offsetof(xiw_ddp_untagged, qn));
	EXPECT_EQ(ddp::kOffMsn, offsetof(xiw_ddp_untagged, msn));
	EXPECT_EQ(ddp::kOffMo, offsetof(xiw_ddp_untagged, mo));

	xiw_ddp_tagged t{};
	t.ctrl.ddp = xiw_ddp_ctrl(true, false);
	t.ctrl.rdmap = xiw_rdmap_ctrl(XIW_RDMAP_OP_READ_RESP);
	t.stag = cpu_to_be32(0x12345678);
	t.to = cpu_to_be64(0x0102030405060708ULL);
	EXPECT_EQ(ddp::tagged(ddp::ctrl(true, false),
			      rdmap::ctrl(rdmap::kReadResp), 0x12345678,
			      0x0102030405060708ULL), image(t));

	xiw_ddp_untagged u{};
	u.ctrl.ddp = xiw_ddp_ctrl(false, true);
	u.ctrl.rdmap = xiw_rdmap_ctrl(XIW_RDMAP_OP_SEND_INV);
	u.inval_stag = cpu_to_be32(0xdeadbeef);
	u.qn = cpu_to_be32(XIW_QN_SEND);
	u.msn = cpu_to_be32(0x01020304);
	u.mo = cpu_to_be32(0xa0b0c0d0);
	EXPECT_EQ(ddp::untagged(ddp::ctrl(false, true),
				rdmap::ctrl(rdmap::kSendInv), 0xdeadbeef,
				rdmap::kQnSend, 0x01020304, 0xa0b0c0d0),
		  image(u));
}

// ---------------------------------------------------------------------------
// RDMAP

TEST(RfcWire, RdmapOpcodes)
{
	EXPECT_EQ(rdmap::kVersion, XIW_RDMAP_VERSION);
	EXPECT_EQ(rdmap::kRvXiwExt, XIW_RDMAP_RV_EXT);
	EXPECT_EQ(rdmap::kRvShift, unsigned(XIW_RDMAP_RV_SHIFT));
	EXPECT_EQ(rdmap::kRsvMask, XIW_RDMAP_RSV_MASK);
	EXPECT_EQ(rdmap::kOpMask, XIW_RDMAP_OPCODE_MASK);

	const struct {
		unsigned rfc, xiw;
	} ops[] = {
		{rdmap::kWrite, XIW_RDMAP_OP_WRITE},
		{rdmap::kReadReq, XIW_RDMAP_OP_READ_REQ},
		{rdmap::kReadResp, XIW_RDMAP_OP_READ_RESP},
		{rdmap::kSend, XIW_RDMAP_OP_SEND},
		{rdmap::kSendInv, XIW_RDMAP_OP_SEND_INV},
		{rdmap::kSendSe, XIW_RDMAP_OP_SEND_SE},
		{rdmap::kSendSeInv, XIW_RDMAP_OP_SEND_SE_INV},
		{rdmap::kTerminate, XIW_RDMAP_OP_TERMINATE},
		{rdmap::kImm, XIW_RDMAP_OP_IMM},
		{rdmap::kImmSe, XIW_RDMAP_OP_IMM_SE},
		{rdmap::kAtomicReq, XIW_RDMAP_OP_ATOMIC_REQ},
		{rdmap::kAtomicResp, XIW_RDMAP_OP_ATOMIC_RESP},
		{rdmap::kFlushReq, XIW_RDMAP_OP_FLUSH_REQ},
		{rdmap::kFlushResp, XIW_RDMAP_OP_FLUSH_RESP},
		{rdmap::kVerifyReq, XIW_RDMAP_OP_VERIFY_REQ},
		{rdmap::kVerifyResp, XIW_RDMAP_OP_VERIFY_RESP},
		{rdmap::kAtomicWriteReq, XIW_RDMAP_OP_ATOMIC_WRITE_REQ},
		{rdmap::kAtomicWriteResp, XIW_RDMAP_OP_ATOMIC_WRITE_RESP},
	};
	static_assert(std::size(ops) == rdmap::kOpCount);
	EXPECT_EQ(rdmap::kOpCount, unsigned(XIW_RDMAP_OP_COUNT));
	for (const auto &o : ops) {
		EXPECT_EQ(o.rfc, o.xiw);
		EXPECT_EQ(rdmap::ctrl(o.rfc), xiw_rdmap_ctrl(o.xiw)) << o.rfc;
	}
	// the control bytes written out (RFC 5040/7306: 01b | 00b | opcode;
	// wire-format.md: 0xC0/0xC1 for Atomic Write)
	EXPECT_EQ(rdmap::ctrl(rdmap::kWrite), 0x40);
	EXPECT_EQ(rdmap::ctrl(rdmap::kTerminate), 0x47);
	EXPECT_EQ(rdmap::ctrl(rdmap::kAtomicResp), 0x4b);
	EXPECT_EQ(rdmap::ctrl(rdmap::kVerifyResp), 0x4f);
	EXPECT_EQ(rdmap::ctrl(rdmap::kAtomicWriteReq), 0xc0);
	EXPECT_EQ(rdmap::ctrl(rdmap::kAtomicWriteResp), 0xc1);
	for (unsigned c = 0; c < 256; c++)
		EXPECT_EQ(rdmap::opcode(u8(c)), xiw_rdmap_opcode(u8(c))) << c;
}

TEST(RfcWire, QueueNumbers)
{
	EXPECT_EQ(rdmap::kQnSend, u32(XIW_QN_SEND));
	EXPECT_EQ(rdmap::kQnReadReq, u32(XIW_QN_REQ));
	EXPECT_EQ(rdmap::kQnTerm, u32(XIW_QN_TERM));
	EXPECT_EQ(rdmap::kQnAtomicResp, u32(XIW_QN_RESP));
	EXPECT_EQ(rdmap::kQnCount, u32(XIW_QN_COUNT));
	for (unsigned op = 0; op < rdmap::kOpCount; op++) {
		u32 d = xiw_rdmap_op_desc(op);
		ASSERT_NE(d, 0U) << op;
		if (rdmap::qn(op) < 0)
			EXPECT_TRUE(d & XIW_OPD_T) << op;
		else
			EXPECT_EQ(u32(rdmap::qn(op)), XIW_OPD_QN(d)) << op;
	}
}

// Every message built by rfc_wire.h with its RFC header length passes
// xiw's receive check, with the opcode it was built for.
TEST(RfcWire, RfcBuiltHeadersPassXiwCheck)
{
	const size_t min_len[rdmap::kOpCount] = {
		0, rdmap::rreq::kLen, 0, 0, 0, 0, 0, term::kMin,
		rdmap::kImmLen, rdmap::kImmLen, rdmap::atomic_req::kLen,
		rdmap::atomic_resp::kLen, rdmap::commit::kFlushLen, 0,
		rdmap::commit::kVerifyMin, 0, rdmap::commit::kAtomicWriteLen, 0,
	};

	for (unsigned op = 0; op < rdmap::kOpCount; op++) {
		int qn = rdmap::qn(op);
		Bytes h = qn < 0 ?
			ddp::tagged(ddp::ctrl(true, true), rdmap::ctrl(op), 1, 0) :
			ddp::untagged(ddp::ctrl(false, true), rdmap::ctrl(op), 0,
				      u32(qn), 1, 0);
		h.resize(h.size() + min_len[op] + 8, 0);
		rfc::put16(h.data(), u16(h.size() - 2 - 8));
		unsigned got = ~0U;
		xiw_term_code tc{};
		EXPECT_TRUE(xiw_rx_check_hdr(h.data(), XIW_OPMASK_ALL, &got, &tc))
			<< "op " << op << " term " << int(tc.layer) << "/"
			<< int(tc.etype) << "/" << int(tc.ecode);
		EXPECT_EQ(got, op);
		EXPECT_EQ(xiw_rx_hdr_len(op),
			  (qn < 0 ? ddp::kTaggedFpduHdr : kUt) + min_len[op]) << op;
	}
}

TEST(RfcWire, ReadRequestLayout)
{
	EXPECT_EQ(rdmap::rreq::kLen, size_t(XIW_RDMAP_RREQ_LEN));
	EXPECT_EQ(kUt + rdmap::rreq::kSinkStag, offsetof(xiw_rdmap_rreq, sink_stag));
	EXPECT_EQ(kUt + rdmap::rreq::kSinkTo, offsetof(xiw_rdmap_rreq, sink_to));
	EXPECT_EQ(kUt + rdmap::rreq::kSize, offsetof(xiw_rdmap_rreq, read_size));
	EXPECT_EQ(kUt + rdmap::rreq::kSrcStag, offsetof(xiw_rdmap_rreq, src_stag));
	EXPECT_EQ(kUt + rdmap::rreq::kSrcTo, offsetof(xiw_rdmap_rreq, src_to));

	xiw_rdmap_rreq r{};
	r.sink_stag = cpu_to_be32(0x11223344);
	r.sink_to = cpu_to_be64(0x5566778899aabbccULL);
	r.read_size = cpu_to_be32(4096);
	r.src_stag = cpu_to_be32(0xa1a2a3a4);
	r.src_to = cpu_to_be64(0xb1b2b3b4b5b6b7b8ULL);
	Bytes b(kUt, 0);
	rdmap::append_rreq(b, 0x11223344, 0x5566778899aabbccULL, 4096,
			   0xa1a2a3a4, 0xb1b2b3b4b5b6b7b8ULL);
	EXPECT_EQ(b, image(r));
}

// ---------------------------------------------------------------------------
// Terminate

TEST(RfcWire, TerminateLayout)
{
	EXPECT_EQ(term::kM, XIW_TERM_HDRCT_M);
	EXPECT_EQ(term::kD, XIW_TERM_HDRCT_D);
	EXPECT_EQ(term::kR, XIW_TERM_HDRCT_R);
	EXPECT_EQ(term::kMin, size_t(XIW_RDMAP_TERM_MIN));
	EXPECT_EQ(term::kMax, size_t(XIW_RDMAP_TERM_MAX));
	EXPECT_EQ(kUt + term::kCtrl, offsetof(xiw_rdmap_term, term_ctrl));
	EXPECT_EQ(kUt + term::kSegLen, offsetof(xiw_rdmap_term, ddp_seg_len));
	EXPECT_EQ(kUt + term::kHdrs, offsetof(xiw_rdmap_term, term_hdrs));
	EXPECT_EQ(kUt + term::kMax, sizeof(xiw_rdmap_term));
	for (unsigned h = 0; h < 256; h++)
		for (int t = 0; t < 2; t++)
			EXPECT_EQ(term::len(u8(h), t), xiw_term_len(u8(h), t))
				<< h << " " << t;
}

TEST(RfcWire, TerminateEncode)
{
	for (unsigned layer = 0; layer < 16; layer++)
		for (unsigned et = 0; et < 16; et++)
			for (unsigned ec : {0x00u, 0x01u, 0x02u, 0x05u, 0x07u, 0x09u, 0x5au, 0xffu})
				for (unsigned hd = 0; hd < 256; hd += 0x10) {
					xiw_term_code x{u8(layer), u8(et), u8(ec), u8(hd)};
					u8 r[4];
					term::put_ctrl(r, {u8(layer), u8(et), u8(ec), u8(hd)});
					ASSERT_EQ(Bytes(r, r + 4), image(xiw_term_ctrl(&x)))
						<< layer << "/" << et << "/" << ec << "/" << hd;
				}
	// RFC 5040's bit positions written out: Layer 31-28, EType 27-24,
	// Error Code 23-16, M 15, D 14, R 13
	u8 r[4];
	term::put_ctrl(r, {errs::kLayerLlp, errs::kMpaEtype, errs::kMpaCrc,
			   u8(term::kM | term::kD)});
	EXPECT_EQ(rfc::get32(r), 0x2002c000U);
}

TEST(RfcWire, TerminateDecode)
{
	std::mt19937 rng(5040);

	for (int i = 0; i < 20000; i++) {
		u8 w[4];
		rfc::put32(w, u32(rng()));
		__be32 be;
		std::memcpy(&be, w, 4);
		xiw_term_code x;
		xiw_term_parse(be, &x);
		term::Code c = term::parse_ctrl(w);
		ASSERT_EQ(c.layer, x.layer) << rfc::get32(w);
		ASSERT_EQ(c.etype, x.etype) << rfc::get32(w);
		ASSERT_EQ(c.ecode, x.ecode) << rfc::get32(w);
		ASSERT_EQ(c.hdrct, x.hdrct) << rfc::get32(w);
	}
}

TEST(RfcWire, ErrorCodes)
{
	EXPECT_EQ(errs::kLayerRdmap, XIW_TERM_LAYER_RDMAP);
	EXPECT_EQ(errs::kLayerDdp, XIW_TERM_LAYER_DDP);
	EXPECT_EQ(errs::kLayerLlp, XIW_TERM_LAYER_LLP);

	EXPECT_EQ(errs::kRdmapCatastrophic, XIW_RDMAP_ET_CATASTROPHIC);
	EXPECT_EQ(errs::kRdmapRemoteProt, XIW_RDMAP_ET_REMOTE_PROT);
	EXPECT_EQ(errs::kRdmapRemoteOp, XIW_RDMAP_ET_REMOTE_OP);
	EXPECT_EQ(errs::kRdmapInvStag, XIW_RDMAP_EC_INV_STAG);
	EXPECT_EQ(errs::kRdmapBaseBounds, XIW_RDMAP_EC_BASE_BOUNDS);
	EXPECT_EQ(errs::kRdmapAccess, XIW_RDMAP_EC_ACCESS);
	EXPECT_EQ(errs::kRdmapStagNotAssoc, XIW_RDMAP_EC_STAG_NOT_ASSOC);
	EXPECT_EQ(errs::kRdmapToWrap, XIW_RDMAP_EC_TO_WRAP);
	EXPECT_EQ(errs::kRdmapVersion, XIW_RDMAP_EC_VERSION);
	EXPECT_EQ(errs::kRdmapOpcode, XIW_RDMAP_EC_OPCODE);
	EXPECT_EQ(errs::kRdmapCatStream, XIW_RDMAP_EC_CATASTROPHIC_STREAM);
	EXPECT_EQ(errs::kRdmapCatGlobal, XIW_RDMAP_EC_CATASTROPHIC_GLOBAL);
	EXPECT_EQ(errs::kRdmapCannotInvalidate, XIW_RDMAP_EC_CANNOT_INVALIDATE);
	EXPECT_EQ(errs::kRdmapUnspecified, XIW_RDMAP_EC_UNSPECIFIED);

	EXPECT_EQ(errs::kDdpCatastrophic, XIW_DDP_ET_CATASTROPHIC);
	EXPECT_EQ(errs::kDdpTagged, XIW_DDP_ET_TAGGED);
	EXPECT_EQ(errs::kDdpUntagged, XIW_DDP_ET_UNTAGGED);
	EXPECT_EQ(errs::kDdpTInvStag, XIW_DDP_EC_T_INV_STAG);
	EXPECT_EQ(errs::kDdpTBaseBounds, XIW_DDP_EC_T_BASE_BOUNDS);
	EXPECT_EQ(errs::kDdpTStagNotAssoc, XIW_DDP_EC_T_STAG_NOT_ASSOC);
	EXPECT_EQ(errs::kDdpTToWrap, XIW_DDP_EC_T_TO_WRAP);
	EXPECT_EQ(errs::kDdpTVersion, XIW_DDP_EC_T_VERSION);
	EXPECT_EQ(errs::kDdpUInvQn, XIW_DDP_EC_UT_INV_QN);
	EXPECT_EQ(errs::kDdpUMsnNoBuf, XIW_DDP_EC_UT_MSN_NO_BUF);
	EXPECT_EQ(errs::kDdpUMsnRange, XIW_DDP_EC_UT_MSN_RANGE);
	EXPECT_EQ(errs::kDdpUInvMo, XIW_DDP_EC_UT_INV_MO);
	EXPECT_EQ(errs::kDdpUTooLong, XIW_DDP_EC_UT_TOO_LONG);
	EXPECT_EQ(errs::kDdpUVersion, XIW_DDP_EC_UT_VERSION);

	EXPECT_EQ(errs::kMpaEtype, XIW_MPA_ET_MPA);
	EXPECT_EQ(errs::kMpaTcpClosed, XIW_MPA_EC_TCP_CLOSED);
	EXPECT_EQ(errs::kMpaCrc, XIW_MPA_EC_CRC);
	EXPECT_EQ(errs::kMpaMarkerLen, XIW_MPA_EC_MARKER_LEN);
	EXPECT_EQ(errs::kMpaBadRr, XIW_MPA_EC_BAD_RR);
	EXPECT_EQ(errs::kMpaLocalCatastrophic, XIW_MPA_EC_LOCAL_CATASTROPHIC);
	EXPECT_EQ(errs::kMpaInsufficientIrd, XIW_MPA_EC_INSUFFICIENT_IRD);
	EXPECT_EQ(errs::kMpaNoMatchingRtr, XIW_MPA_EC_NO_MATCHING_RTR);
}

// ---------------------------------------------------------------------------
// RFC 7306 and the commit operations

TEST(RfcWire, AtomicLayouts)
{
	namespace aq = rdmap::atomic_req;
	namespace ap = rdmap::atomic_resp;

	EXPECT_EQ(aq::kLen, size_t(XIW_RDMAP_ATOMIC_REQ_LEN));
	EXPECT_EQ(kUt + aq::kAopcode, offsetof(xiw_rdmap_atomic_req, aopcode));
	EXPECT_EQ(kUt + aq::kReqId, offsetof(xiw_rdmap_atomic_req, req_id));
	EXPECT_EQ(kUt + aq::kStag, offsetof(xiw_rdmap_atomic_req, stag));
	EXPECT_EQ(kUt + aq::kTo, offsetof(xiw_rdmap_atomic_req, to));
	EXPECT_EQ(kUt + aq::kAddSwap, offsetof(xiw_rdmap_atomic_req, add_swap));
	EXPECT_EQ(kUt + aq::kAddSwapMask, offsetof(xiw_rdmap_atomic_req, add_swap_mask));
	EXPECT_EQ(kUt + aq::kCmp, offsetof(xiw_rdmap_atomic_req, cmp));
	EXPECT_EQ(kUt + aq::kCmpMask, offsetof(xiw_rdmap_atomic_req, cmp_mask));
	EXPECT_EQ(kUt + aq::kLen, sizeof(xiw_rdmap_atomic_req));
	EXPECT_EQ(aq::kFetchAdd, u32(XIW_AOP_FETCH_ADD));
	EXPECT_EQ(aq::kSwap, u32(XIW_AOP_RESERVED));
	EXPECT_EQ(aq::kCmpSwap, u32(XIW_AOP_CMP_SWAP));
	EXPECT_EQ(aq::kAopMask, u32(XIW_AOP_MASK));

	EXPECT_EQ(ap::kLen, size_t(XIW_RDMAP_ATOMIC_RESP_LEN));
	EXPECT_EQ(kUt + ap::kReqId, offsetof(xiw_rdmap_atomic_resp, req_id));
	EXPECT_EQ(kUt + ap::kOrig, offsetof(xiw_rdmap_atomic_resp, orig));
	EXPECT_EQ(kUt + ap::kLen, sizeof(xiw_rdmap_atomic_resp));

	EXPECT_EQ(rdmap::kImmLen, size_t(XIW_RDMAP_IMM_LEN));
	EXPECT_EQ(kUt, offsetof(xiw_rdmap_imm, data));
}

TEST(RfcWire, CommitLayouts)
{
	namespace c = rdmap::commit;

	EXPECT_EQ(c::kFlushLen, size_t(XIW_RDMAP_FLUSH_REQ_LEN));
	EXPECT_EQ(kUt + c::kStag, offsetof(xiw_rdmap_flush_req, sink_stag));
	EXPECT_EQ(kUt + c::kLength, offsetof(xiw_rdmap_flush_req, sink_len));
	EXPECT_EQ(kUt + c::kTo, offsetof(xiw_rdmap_flush_req, sink_to));
	EXPECT_EQ(kUt + c::kTail, offsetof(xiw_rdmap_flush_req, flags));
	EXPECT_EQ(c::kFlushP, u32(XIW_FLUSH_PERSISTENT));
	EXPECT_EQ(c::kFlushG, u32(XIW_FLUSH_GLOBAL));
	EXPECT_EQ(c::kFlushRegionXiw, u32(XIW_FLUSH_REGION));

	EXPECT_EQ(c::kVerifyMin, size_t(XIW_RDMAP_VERIFY_REQ_MIN));
	EXPECT_EQ(c::kVerifyHashMax, size_t(XIW_VERIFY_HASH_MAX));
	EXPECT_EQ(kUt + c::kStag, offsetof(xiw_rdmap_verify_req, sink_stag));
	EXPECT_EQ(kUt + c::kLength, offsetof(xiw_rdmap_verify_req, sink_len));
	EXPECT_EQ(kUt + c::kTo, offsetof(xiw_rdmap_verify_req, sink_to));
	EXPECT_EQ(kUt + c::kTail, offsetof(xiw_rdmap_verify_req, hash));
	EXPECT_EQ(kUt, offsetof(xiw_rdmap_verify_resp, hash));

	EXPECT_EQ(c::kAtomicWriteLen, size_t(XIW_RDMAP_AWRITE_REQ_LEN));
	EXPECT_EQ(kUt + c::kStag, offsetof(xiw_rdmap_awrite_req, sink_stag));
	EXPECT_EQ(kUt + c::kLength, offsetof(xiw_rdmap_awrite_req, sink_len));
	EXPECT_EQ(kUt + c::kTo, offsetof(xiw_rdmap_awrite_req, sink_to));
	EXPECT_EQ(kUt + c::kTail, offsetof(xiw_rdmap_awrite_req, data));
	EXPECT_EQ(kUt + c::kAtomicWriteLen, sizeof(xiw_rdmap_awrite_req));
}

} // namespace
