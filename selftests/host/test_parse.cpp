// SPDX-License-Identifier: GPL-2.0
// The parsing steps the kernel and the fuzz harnesses share: RX's header
// staging (xiw_rx_hdr_next(), called by xiw_rx_hdr_step() in xiw_rx.c)
// and the MPA Request/Reply header check (xiw_mpa_rr_check(), called by
// xiw_cep_recv_rr() in xiw_cm.c).
#include "wire_test.h"

namespace {

// Stage a header image the way RX does: ask, copy what was asked, ask
// again. Each call sees an allocation of exactly the octets staged, so
// AddressSanitizer catches a read past them.
struct Staged {
	std::vector<u32> steps;	// the @got of every call
	xiw_rx_hdr_step last;
	unsigned op = 0xdead;
	xiw_term_code tc = { 0xee, 0xee, 0xee, 0xee };
};

Staged stage(const Bytes &img)
{
	Staged s;
	u32 got = sizeof(struct xiw_fpdu_ctrl);

	for (;;) {
		std::vector<u8> buf(img.begin(), img.begin() + got);
		u32 need = 0;

		s.steps.push_back(got);
		s.last = xiw_rx_hdr_next(buf.data(), got, XIW_OPMASK_RX, &s.op,
					 &need, &s.tc);
		if (s.last != XIW_RX_HDR_MORE)
			return s;
		EXPECT_GT(need, got);
		EXPECT_LE(need, img.size());
		if (need <= got || need > img.size())
			return s;
		got = need;
	}
}

// An untagged header image of @op: MPA length, DDP/RDMAP control, QN of
// the opcode, MSN 1, MO 0, L set, then @rdmap octets of RDMAP header.
Bytes untagged(unsigned op, u32 rdmap, u32 payload = 0)
{
	Bytes b(XIW_MPA_HDR_LEN + XIW_DDP_UNTAGGED_HDR_LEN + rdmap + payload);
	u16 len = b.size() - XIW_MPA_HDR_LEN;
	u32 d = xiw_rdmap_op_desc(op);

	b[0] = len >> 8;
	b[1] = len;
	b[2] = xiw_ddp_ctrl(false, true);
	b[3] = xiw_rdmap_ctrl(op);
	b[11] = XIW_OPD_QN(d);
	b[15] = 1;
	return b;
}

Bytes tagged(unsigned op, u32 payload)
{
	Bytes b(XIW_MPA_HDR_LEN + XIW_DDP_TAGGED_HDR_LEN + payload);
	u16 len = b.size() - XIW_MPA_HDR_LEN;

	b[0] = len >> 8;
	b[1] = len;
	b[2] = xiw_ddp_ctrl(true, true);
	b[3] = xiw_rdmap_ctrl(op);
	return b;
}

constexpr u32 kCtl = sizeof(struct xiw_fpdu_ctrl);
constexpr u32 kUt = XIW_MPA_HDR_LEN + XIW_DDP_UNTAGGED_HDR_LEN;
constexpr u32 kT = XIW_MPA_HDR_LEN + XIW_DDP_TAGGED_HDR_LEN;

TEST(RxHdrNext, TaggedWriteStopsAfterDdpHeader)
{
	Staged s = stage(tagged(XIW_RDMAP_OP_WRITE, 100));
	EXPECT_EQ(s.last, XIW_RX_HDR_DONE);
	EXPECT_EQ(s.op, unsigned(XIW_RDMAP_OP_WRITE));
	EXPECT_EQ(s.steps, (std::vector<u32>{ kCtl, kT }));
}

TEST(RxHdrNext, RdmapHeaderOfTheOpcode)
{
	Staged s = stage(untagged(XIW_RDMAP_OP_READ_REQ, 28));
	EXPECT_EQ(s.last, XIW_RX_HDR_DONE);
	EXPECT_EQ(s.op, unsigned(XIW_RDMAP_OP_READ_REQ));
	EXPECT_EQ(s.steps, (std::vector<u32>{ kCtl, kUt, kUt + 28 }));
	EXPECT_EQ(s.steps.back(), xiw_rx_hdr_len(XIW_RDMAP_OP_READ_REQ));

	s = stage(untagged(XIW_RDMAP_OP_ATOMIC_REQ, 52));
	EXPECT_EQ(s.last, XIW_RX_HDR_DONE);
	EXPECT_EQ(s.steps, (std::vector<u32>{ kCtl, kUt, kUt + 52 }));

	// a Send has no RDMAP header: its payload is not staged
	s = stage(untagged(XIW_RDMAP_OP_SEND, 0, 64));
	EXPECT_EQ(s.last, XIW_RX_HDR_DONE);
	EXPECT_EQ(s.steps, (std::vector<u32>{ kCtl, kUt }));
}

TEST(RxHdrNext, TerminateAndVerifyStageTheWholeSegment)
{
	// Terminate with optional fields (28 + 4 octets), Verify with a hash
	for (auto [op, rdmap] : { std::pair{ XIW_RDMAP_OP_TERMINATE, 32u },
				  std::pair{ XIW_RDMAP_OP_VERIFY_REQ, 20u },
				  std::pair{ XIW_RDMAP_OP_VERIFY_REQ, 48u },
				  std::pair{ XIW_RDMAP_OP_VERIFY_RESP, 32u } }) {
		Staged s = stage(untagged(op, rdmap));
		EXPECT_EQ(s.last, XIW_RX_HDR_DONE) << op;
		EXPECT_EQ(s.steps,
			  (std::vector<u32>{ kCtl, kUt, kUt + rdmap })) << op;
	}
	// the shortest Verify Response (no hash): the DDP header is all
	Staged s = stage(untagged(XIW_RDMAP_OP_VERIFY_RESP, 0));
	EXPECT_EQ(s.last, XIW_RX_HDR_DONE);
	EXPECT_EQ(s.steps, (std::vector<u32>{ kCtl, kUt }));
}

TEST(RxHdrNext, SegmentShorterThanItsDdpHeader)
{
	for (bool t : { false, true }) {
		u32 ddp = t ? XIW_DDP_TAGGED_HDR_LEN : XIW_DDP_UNTAGGED_HDR_LEN;

		for (u32 len : { 0u, 1u, ddp - 1 }) {
			Bytes b = t ? tagged(XIW_RDMAP_OP_WRITE, 0) :
				      untagged(XIW_RDMAP_OP_SEND, 0);
			b[0] = len >> 8;
			b[1] = len;
			Staged s = stage(b);
			EXPECT_EQ(s.last, XIW_RX_HDR_BAD) << len;
			EXPECT_EQ(s.steps, (std::vector<u32>{ kCtl })) << len;
			EXPECT_EQ(s.tc.layer, XIW_TERM_LAYER_LLP);
			EXPECT_EQ(s.tc.etype, XIW_MPA_ET_MPA);
			EXPECT_EQ(s.tc.ecode, XIW_MPA_EC_MARKER_LEN);
			EXPECT_EQ(s.tc.hdrct, 0);
		}
		// exactly its DDP header: judged on it
		Bytes b = t ? tagged(XIW_RDMAP_OP_WRITE, 0) :
			      untagged(XIW_RDMAP_OP_SEND, 0);
		Staged s = stage(b);
		EXPECT_EQ(s.last, XIW_RX_HDR_DONE) << t;
	}
}

TEST(RxHdrNext, RefusedWithTheCheckOfTheDdpHeader)
{
	Bytes b = untagged(XIW_RDMAP_OP_READ_REQ, 28);
	b[15] = 9;	// MSN is not the header check's
	b[11] = 2;	// Read Request on the Terminate queue
	Staged s = stage(b);
	EXPECT_EQ(s.last, XIW_RX_HDR_BAD);
	EXPECT_EQ(s.steps, (std::vector<u32>{ kCtl, kUt }));
	EXPECT_EQ(s.tc.layer, XIW_TERM_LAYER_DDP);
	EXPECT_EQ(s.tc.ecode, XIW_DDP_EC_UT_INV_QN);

	// and the same verdict as xiw_rx_check_hdr() on the same octets
	xiw_term_code tc;
	unsigned op;
	std::vector<u8> peek(b.begin(), b.begin() + XIW_RX_PEEK_LEN);
	EXPECT_FALSE(xiw_rx_check_hdr(peek.data(), XIW_OPMASK_RX, &op, &tc));
	EXPECT_EQ(tc.ecode, s.tc.ecode);
	EXPECT_EQ(tc.hdrct, s.tc.hdrct);
}

TEST(RxHdrNext, OpcodesXiwReceives)
{
	EXPECT_EQ(XIW_OPMASK_RX, XIW_OPMASK_ALL);
	for (unsigned op = 0; op < XIW_RDMAP_OP_COUNT; op++) {
		if (!xiw_rdmap_op_desc(op))
			continue;
		EXPECT_TRUE(XIW_OPMASK_RX & (1U << op)) << op;
	}
}

Bytes rr(const char *key, u16 pd_len)
{
	struct xiw_mpa_rr r = {};

	memcpy(r.key, key, XIW_MPA_KEY_LEN);
	r.rev = XIW_MPA_REV2;
	r.pd_len = cpu_to_be16(pd_len);
	return bytes_of(r);
}

int rr_check(const Bytes &b, bool request, u16 *pd_len)
{
	std::vector<u8> buf(b);	// exactly the header

	return xiw_mpa_rr_check(
		reinterpret_cast<const struct xiw_mpa_rr *>(buf.data()),
		request, pd_len);
}

TEST(MpaRrCheck, KeyOfTheFrameExpected)
{
	u16 pd = 0;

	EXPECT_EQ(rr_check(rr(XIW_MPA_KEY_REQ, 4), true, &pd), 0);
	EXPECT_EQ(pd, 4);
	EXPECT_EQ(rr_check(rr(XIW_MPA_KEY_REP, 0), false, &pd), 0);
	EXPECT_EQ(pd, 0);
	// the other frame's key, or any octet of the key wrong
	EXPECT_EQ(rr_check(rr(XIW_MPA_KEY_REP, 4), true, &pd), -EPROTO);
	EXPECT_EQ(rr_check(rr(XIW_MPA_KEY_REQ, 4), false, &pd), -EPROTO);
	for (unsigned i = 0; i < XIW_MPA_KEY_LEN; i++) {
		Bytes b = rr(XIW_MPA_KEY_REQ, 4);

		b[i] ^= 0x20;
		EXPECT_EQ(rr_check(b, true, &pd), -EPROTO) << i;
	}
}

TEST(MpaRrCheck, PrivateDataLength)
{
	u16 pd = 0;

	EXPECT_EQ(rr_check(rr(XIW_MPA_KEY_REQ, XIW_MPA_PD_MAX), true, &pd), 0);
	EXPECT_EQ(pd, XIW_MPA_PD_MAX);
	for (u16 len : { u16(XIW_MPA_PD_MAX + 1), u16(600), u16(0xffff) }) {
		EXPECT_EQ(rr_check(rr(XIW_MPA_KEY_REQ, len), true, &pd),
			  -EMSGSIZE) << len;
		EXPECT_EQ(pd, len);	// for the kernel's message
	}
	// the key first: a wrong key with a bad length is a key error
	EXPECT_EQ(rr_check(rr(XIW_MPA_KEY_REP, 600), true, &pd), -EPROTO);
}

} // namespace
