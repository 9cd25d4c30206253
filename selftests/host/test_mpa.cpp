// SPDX-License-Identifier: GPL-2.0
// MPA Request/Reply frames, RFC 6581 block, FPDU framing lengths.
#include "wire_test.h"

#include <cstddef>

namespace {

TEST(Mpa, RequestReplyLayout)
{
	EXPECT_EQ(sizeof(struct xiw_mpa_rr), 20u);
	EXPECT_EQ(offsetof(struct xiw_mpa_rr, key), 0u);
	EXPECT_EQ(offsetof(struct xiw_mpa_rr, flags), 16u);
	EXPECT_EQ(offsetof(struct xiw_mpa_rr, rev), 17u);
	EXPECT_EQ(offsetof(struct xiw_mpa_rr, pd_len), 18u);
	EXPECT_EQ(sizeof(struct xiw_mpa_v2), 4u);
	EXPECT_EQ(offsetof(struct xiw_mpa_v2, ord), 2u);
}

TEST(Mpa, Keys)
{
	const Bytes req = { 0x4d, 0x50, 0x41, 0x20, 0x49, 0x44, 0x20, 0x52,
			    0x65, 0x71, 0x20, 0x46, 0x72, 0x61, 0x6d, 0x65 };
	const Bytes rep = { 0x4d, 0x50, 0x41, 0x20, 0x49, 0x44, 0x20, 0x52,
			    0x65, 0x70, 0x20, 0x46, 0x72, 0x61, 0x6d, 0x65 };
	EXPECT_EQ(XIW_MPA_KEY_LEN, 16);
	EXPECT_EQ(strlen(XIW_MPA_KEY_REQ), 16u);
	EXPECT_EQ(strlen(XIW_MPA_KEY_REP), 16u);
	EXPECT_BYTES(Bytes(XIW_MPA_KEY_REQ, XIW_MPA_KEY_REQ + 16), req);
	EXPECT_BYTES(Bytes(XIW_MPA_KEY_REP, XIW_MPA_KEY_REP + 16), rep);
}

TEST(Mpa, FlagBitsAndLimits)
{
	EXPECT_EQ(XIW_MPA_FLAG_M, 0x80);
	EXPECT_EQ(XIW_MPA_FLAG_C, 0x40);
	EXPECT_EQ(XIW_MPA_FLAG_R, 0x20);
	EXPECT_EQ(XIW_MPA_FLAG_ENHANCED, 0x10);
	EXPECT_EQ(XIW_MPA_FLAG_RES_MASK, 0x0f);
	EXPECT_EQ(XIW_MPA_FLAG_SIW_GSO & XIW_MPA_FLAG_RES_MASK, 0x08);
	EXPECT_EQ(XIW_MPA_REV1, 1);
	EXPECT_EQ(XIW_MPA_REV2, 2);
	EXPECT_EQ(XIW_MPA_PD_MAX, 512);
	EXPECT_EQ(XIW_IWCM_PD_MAX, 256);
	EXPECT_EQ(XIW_MPA_V2_P2P, 0x8000);
	EXPECT_EQ(XIW_MPA_V2_RTR_SEND, 0x4000);
	EXPECT_EQ(XIW_MPA_V2_RTR_WRITE, 0x8000);
	EXPECT_EQ(XIW_MPA_V2_RTR_READ, 0x4000);
	EXPECT_EQ(XIW_MPA_V2_IRD_ORD_MASK, 0x3fff);
	EXPECT_EQ(XIW_RTR_READ_STAG, 1);
}

// Enhanced (rev 2) request: CRC, peer-to-peer, IRD 16, ORD 8, Read RTR,
// 5 bytes of ULP private data after the 4-byte RFC 6581 block.
TEST(Mpa, EnhancedRequestFrame)
{
	u8 frame[sizeof(struct xiw_mpa_rr) + sizeof(struct xiw_mpa_v2) + 5];
	auto *rr = reinterpret_cast<struct xiw_mpa_rr *>(frame);
	auto *v2 = reinterpret_cast<struct xiw_mpa_v2 *>(frame + sizeof(*rr));

	memcpy(rr->key, XIW_MPA_KEY_REQ, XIW_MPA_KEY_LEN);
	rr->flags = XIW_MPA_FLAG_C | XIW_MPA_FLAG_ENHANCED;
	rr->rev = XIW_MPA_REV2;
	rr->pd_len = cpu_to_be16(sizeof(*v2) + 5);
	v2->ird = cpu_to_be16(XIW_MPA_V2_P2P | 16);
	v2->ord = cpu_to_be16(XIW_MPA_V2_RTR_READ | 8);
	memcpy(frame + 24, "hello", 5);

	const Bytes expect = {
		0x4d, 0x50, 0x41, 0x20, 0x49, 0x44, 0x20, 0x52,
		0x65, 0x71, 0x20, 0x46, 0x72, 0x61, 0x6d, 0x65,
		0x50, 0x02, 0x00, 0x09, 0x80, 0x10, 0x40, 0x08,
		0x68, 0x65, 0x6c, 0x6c, 0x6f,
	};
	EXPECT_BYTES(Bytes(frame, frame + sizeof(frame)), expect);
	EXPECT_EQ(be16_to_cpu(v2->ird) & XIW_MPA_V2_IRD_ORD_MASK, 16);
	EXPECT_EQ(be16_to_cpu(v2->ord) & XIW_MPA_V2_IRD_ORD_MASK, 8);
}

TEST(Mpa, RejectReplyFrame)
{
	struct xiw_mpa_rr rr;
	memcpy(rr.key, XIW_MPA_KEY_REP, XIW_MPA_KEY_LEN);
	rr.flags = XIW_MPA_FLAG_R | XIW_MPA_FLAG_C;
	rr.rev = XIW_MPA_REV1;
	rr.pd_len = cpu_to_be16(XIW_MPA_PD_MAX);
	const Bytes expect = {
		0x4d, 0x50, 0x41, 0x20, 0x49, 0x44, 0x20, 0x52,
		0x65, 0x70, 0x20, 0x46, 0x72, 0x61, 0x6d, 0x65,
		0x60, 0x01, 0x02, 0x00,
	};
	EXPECT_BYTES(bytes_of(rr), expect);
}

TEST(MpaFraming, PadAndFpduLengthSmall)
{
	const u32 pad[] = { 2, 1, 0, 3, 2, 1, 0, 3, 2 };
	const u32 len[] = { 8, 8, 8, 12, 12, 12, 12, 16, 16 };
	for (u32 l = 0; l <= 8; l++) {
		EXPECT_EQ(xiw_mpa_pad(l), pad[l]) << l;
		EXPECT_EQ(xiw_mpa_fpdu_len(l), len[l]) << l;
	}
	EXPECT_EQ(XIW_MPA_MIN_FPDU, 8);
	EXPECT_EQ(xiw_mpa_fpdu_len(14), 20u); // tagged, no payload
	EXPECT_EQ(xiw_mpa_fpdu_len(18), 24u); // untagged, no payload
	EXPECT_EQ(xiw_mpa_fpdu_len(XIW_MPA_ULPDU_MAX), 65540u);
	EXPECT_EQ(xiw_mpa_pad(XIW_MPA_ULPDU_MAX), 0u);
	EXPECT_EQ(xiw_mpa_pad(65535), 3u);
}

TEST(MpaFraming, PadAlignsEveryLength)
{
	for (u32 l = 0; l <= 0xffff; l++) {
		u32 p = xiw_mpa_pad(l);
		ASSERT_LT(p, 4u) << l;
		ASSERT_EQ((XIW_MPA_HDR_LEN + l + p) % 4, 0u) << l;
		ASSERT_EQ(xiw_mpa_fpdu_len(l), XIW_MPA_HDR_LEN + l + p + 4) << l;
	}
}

TEST(MpaFraming, MulpduKnownValues)
{
	EXPECT_EQ(xiw_mpa_mulpdu(0), 0u);
	EXPECT_EQ(xiw_mpa_mulpdu(7), 0u);
	EXPECT_EQ(xiw_mpa_mulpdu(8), 2u);
	EXPECT_EQ(xiw_mpa_mulpdu(11), 2u);
	EXPECT_EQ(xiw_mpa_mulpdu(12), 6u);
	EXPECT_EQ(xiw_mpa_mulpdu(1460), 1454u); // Ethernet, no TCP options
	EXPECT_EQ(xiw_mpa_mulpdu(1448), 1442u); // with timestamps
	EXPECT_EQ(xiw_mpa_mulpdu(1461), 1454u);
	EXPECT_EQ(xiw_mpa_mulpdu(1463), 1454u);
	EXPECT_EQ(xiw_mpa_mulpdu(1464), 1458u);
	EXPECT_EQ(xiw_mpa_mulpdu(8948), 8942u); // 9000 MTU
	EXPECT_EQ(xiw_mpa_mulpdu(65540), 65534u);
	EXPECT_EQ(xiw_mpa_mulpdu(1u << 20), (u32)XIW_MPA_ULPDU_MAX);
}

// xiw_mpa_mulpdu(mss) is exactly the largest ULPDU whose FPDU fits.
TEST(MpaFraming, MulpduIsLargestFit)
{
	for (u32 mss = 0; mss <= 3000; mss++) {
		u32 best = 0;
		bool any = false;
		for (u32 l = 0; xiw_mpa_fpdu_len(l) <= mss; l++) {
			best = l;
			any = true;
		}
		ASSERT_EQ(xiw_mpa_mulpdu(mss), any ? best : 0) << mss;
	}
}

TEST(MpaFraming, DdpPayloadPerSegment)
{
	EXPECT_EQ(xiw_ddp_max_payload(1460, true), 1440u);
	EXPECT_EQ(xiw_ddp_max_payload(1460, false), 1436u);
	EXPECT_EQ(xiw_ddp_max_payload(1448, true), 1428u);
	EXPECT_EQ(xiw_ddp_max_payload(20, true), 0u);
	EXPECT_EQ(xiw_ddp_max_payload(24, true), 4u);
	EXPECT_EQ(xiw_ddp_max_payload(24, false), 0u);
	EXPECT_EQ(xiw_ddp_max_payload(28, false), 4u);
	EXPECT_EQ(xiw_ddp_max_payload(0, false), 0u);
	for (u32 mss = 20; mss <= 2000; mss++) {
		u32 p = xiw_ddp_max_payload(mss, true);
		ASSERT_LE(xiw_mpa_fpdu_len(XIW_DDP_TAGGED_HDR_LEN + p), mss);
		p = xiw_ddp_max_payload(mss, false);
		if (p) {
			ASSERT_LE(xiw_mpa_fpdu_len(XIW_DDP_UNTAGGED_HDR_LEN + p),
				  mss);
		}
	}
}

TEST(MpaFraming, Markers)
{
	EXPECT_EQ(XIW_MPA_MARKER_INTERVAL, 512);
	EXPECT_EQ(XIW_MPA_MARKER_LEN, 4);
	EXPECT_EQ(sizeof(struct xiw_mpa_marker), 4u);
	EXPECT_EQ(offsetof(struct xiw_mpa_marker, fpduptr), 2u);
	struct xiw_mpa_marker m = { 0, cpu_to_be16(0x01f8) };
	EXPECT_BYTES(bytes_of(m), (Bytes{ 0x00, 0x00, 0x01, 0xf8 }));
	// EMSS - (6 + 4 * ceil(EMSS / 512) + EMSS mod 4)
	EXPECT_EQ(xiw_mpa_mulpdu_markers(1460), 1442u);
	EXPECT_EQ(xiw_mpa_mulpdu_markers(1461), 1442u);
	EXPECT_EQ(xiw_mpa_mulpdu_markers(512), 502u);
	EXPECT_EQ(xiw_mpa_mulpdu_markers(513), 498u);
	EXPECT_EQ(xiw_mpa_mulpdu_markers(8), 0u);
}

} // namespace
