// SPDX-License-Identifier: GPL-2.0
// DDP/RDMAP control bytes, opcode assignment and byte-exact FPDUs.
#include "wire_test.h"

#include <cstddef>

namespace {

struct Layout {
	const char *name;
	size_t size, expect_size, align, expect_align;
};

TEST(Headers, SizesAndAlignment)
{
	const Layout l[] = {
		{ "ctrl", sizeof(xiw_fpdu_ctrl), 4, alignof(xiw_fpdu_ctrl), 2 },
		{ "tagged", sizeof(xiw_ddp_tagged), 16, alignof(xiw_ddp_tagged), 8 },
		{ "untagged", sizeof(xiw_ddp_untagged), 20, alignof(xiw_ddp_untagged), 4 },
		{ "rreq", sizeof(xiw_rdmap_rreq), 48, alignof(xiw_rdmap_rreq), 8 },
		{ "term", sizeof(xiw_rdmap_term), 72, alignof(xiw_rdmap_term), 4 },
		{ "atomic_req", sizeof(xiw_rdmap_atomic_req), 72, alignof(xiw_rdmap_atomic_req), 8 },
		{ "atomic_resp", sizeof(xiw_rdmap_atomic_resp), 32, alignof(xiw_rdmap_atomic_resp), 8 },
		{ "imm", sizeof(xiw_rdmap_imm), 28, alignof(xiw_rdmap_imm), 4 },
		{ "flush_req", sizeof(xiw_rdmap_flush_req), 40, alignof(xiw_rdmap_flush_req), 4 },
		{ "verify_req", sizeof(xiw_rdmap_verify_req), 68, alignof(xiw_rdmap_verify_req), 4 },
		{ "verify_resp", sizeof(xiw_rdmap_verify_resp), 52, alignof(xiw_rdmap_verify_resp), 4 },
		{ "awrite_req", sizeof(xiw_rdmap_awrite_req), 44, alignof(xiw_rdmap_awrite_req), 4 },
		{ "union", sizeof(xiw_fpdu_hdr), 72, alignof(xiw_fpdu_hdr), 8 },
	};
	for (const auto &x : l) {
		EXPECT_EQ(x.size, x.expect_size) << x.name;
		EXPECT_EQ(x.align, x.expect_align) << x.name;
	}
}

TEST(Headers, Offsets)
{
	EXPECT_EQ(offsetof(xiw_fpdu_ctrl, ddp), 2u);
	EXPECT_EQ(offsetof(xiw_fpdu_ctrl, rdmap), 3u);
	EXPECT_EQ(offsetof(xiw_ddp_tagged, stag), 4u);
	EXPECT_EQ(offsetof(xiw_ddp_tagged, to), 8u);
	EXPECT_EQ(offsetof(xiw_ddp_untagged, inval_stag), 4u);
	EXPECT_EQ(offsetof(xiw_ddp_untagged, qn), 8u);
	EXPECT_EQ(offsetof(xiw_ddp_untagged, msn), 12u);
	EXPECT_EQ(offsetof(xiw_ddp_untagged, mo), 16u);
	EXPECT_EQ(offsetof(xiw_rdmap_rreq, sink_stag), 20u);
	EXPECT_EQ(offsetof(xiw_rdmap_rreq, sink_to), 24u);
	EXPECT_EQ(offsetof(xiw_rdmap_rreq, read_size), 32u);
	EXPECT_EQ(offsetof(xiw_rdmap_rreq, src_stag), 36u);
	EXPECT_EQ(offsetof(xiw_rdmap_rreq, src_to), 40u);
	EXPECT_EQ(offsetof(xiw_rdmap_term, term_ctrl), 20u);
	EXPECT_EQ(offsetof(xiw_rdmap_term, ddp_seg_len), 24u);
	EXPECT_EQ(offsetof(xiw_rdmap_term, term_hdrs), 26u);
	EXPECT_EQ(offsetof(xiw_rdmap_atomic_req, aopcode), 20u);
	EXPECT_EQ(offsetof(xiw_rdmap_atomic_req, req_id), 24u);
	EXPECT_EQ(offsetof(xiw_rdmap_atomic_req, stag), 28u);
	EXPECT_EQ(offsetof(xiw_rdmap_atomic_req, to), 32u);
	EXPECT_EQ(offsetof(xiw_rdmap_atomic_req, add_swap), 40u);
	EXPECT_EQ(offsetof(xiw_rdmap_atomic_req, add_swap_mask), 48u);
	EXPECT_EQ(offsetof(xiw_rdmap_atomic_req, cmp), 56u);
	EXPECT_EQ(offsetof(xiw_rdmap_atomic_req, cmp_mask), 64u);
	EXPECT_EQ(offsetof(xiw_rdmap_atomic_resp, req_id), 20u);
	EXPECT_EQ(offsetof(xiw_rdmap_atomic_resp, orig), 24u);
	EXPECT_EQ(offsetof(xiw_rdmap_imm, data), 20u);
	EXPECT_EQ(offsetof(xiw_rdmap_flush_req, sink_stag), 20u);
	EXPECT_EQ(offsetof(xiw_rdmap_flush_req, sink_len), 24u);
	EXPECT_EQ(offsetof(xiw_rdmap_flush_req, sink_to), 28u);
	EXPECT_EQ(offsetof(xiw_rdmap_flush_req, flags), 36u);
	EXPECT_EQ(offsetof(xiw_rdmap_verify_req, sink_to), 28u);
	EXPECT_EQ(offsetof(xiw_rdmap_awrite_req, sink_len), 24u);
	EXPECT_EQ(offsetof(xiw_rdmap_awrite_req, sink_to), 28u);
	EXPECT_EQ(offsetof(xiw_rdmap_awrite_req, data), 36u);
}

TEST(Headers, RdmapHeaderLengths)
{
	EXPECT_EQ(XIW_DDP_TAGGED_HDR_LEN, 14);
	EXPECT_EQ(XIW_DDP_UNTAGGED_HDR_LEN, 18);
	EXPECT_EQ(XIW_RDMAP_RREQ_LEN, 28);
	EXPECT_EQ(XIW_RDMAP_TERM_MIN, 4);
	EXPECT_EQ(XIW_RDMAP_TERM_MAX, 52);
	EXPECT_EQ(XIW_RDMAP_IMM_LEN, 8);
	EXPECT_EQ(XIW_RDMAP_ATOMIC_REQ_LEN, 52);
	EXPECT_EQ(XIW_RDMAP_ATOMIC_RESP_LEN, 12);
	EXPECT_EQ(XIW_RDMAP_FLUSH_REQ_LEN, 20);
	EXPECT_EQ(XIW_RDMAP_VERIFY_REQ_MIN, 16);
	EXPECT_EQ(XIW_RDMAP_AWRITE_REQ_LEN, 24);
	EXPECT_EQ(XIW_RX_PEEK_LEN, 20);
}

TEST(Ddp, ControlByte)
{
	EXPECT_EQ(xiw_ddp_ctrl(true, true), 0xc1);
	EXPECT_EQ(xiw_ddp_ctrl(true, false), 0x81);
	EXPECT_EQ(xiw_ddp_ctrl(false, true), 0x41);
	EXPECT_EQ(xiw_ddp_ctrl(false, false), 0x01);
	EXPECT_EQ(XIW_DDP_T, 0x80);
	EXPECT_EQ(XIW_DDP_L, 0x40);
	EXPECT_EQ(XIW_DDP_RSVD_MASK, 0x3c);
	EXPECT_EQ(XIW_DDP_DV_MASK, 0x03);
	EXPECT_EQ(xiw_ddp_hdr_len(0xc1), 14u);
	EXPECT_EQ(xiw_ddp_hdr_len(0x41), 18u);
	EXPECT_EQ(xiw_ddp_hdr_len(0xbd), 14u); // only T decides
	EXPECT_EQ(xiw_ddp_hdr_len(0x3c), 18u);
}

// The opcode assignment of RFC 5040/7306 and the commit draft.
TEST(Rdmap, OpcodeValues)
{
	EXPECT_EQ(XIW_RDMAP_OP_WRITE, 0x0);
	EXPECT_EQ(XIW_RDMAP_OP_READ_REQ, 0x1);
	EXPECT_EQ(XIW_RDMAP_OP_READ_RESP, 0x2);
	EXPECT_EQ(XIW_RDMAP_OP_SEND, 0x3);
	EXPECT_EQ(XIW_RDMAP_OP_SEND_INV, 0x4);
	EXPECT_EQ(XIW_RDMAP_OP_SEND_SE, 0x5);
	EXPECT_EQ(XIW_RDMAP_OP_SEND_SE_INV, 0x6);
	EXPECT_EQ(XIW_RDMAP_OP_TERMINATE, 0x7);
	EXPECT_EQ(XIW_RDMAP_OP_IMM, 0x8);
	EXPECT_EQ(XIW_RDMAP_OP_IMM_SE, 0x9);
	EXPECT_EQ(XIW_RDMAP_OP_ATOMIC_REQ, 0xa);
	EXPECT_EQ(XIW_RDMAP_OP_ATOMIC_RESP, 0xb);
	EXPECT_EQ(XIW_RDMAP_OP_FLUSH_REQ, 0xc);
	EXPECT_EQ(XIW_RDMAP_OP_FLUSH_RESP, 0xd);
	EXPECT_EQ(XIW_RDMAP_OP_VERIFY_REQ, 0xe);
	EXPECT_EQ(XIW_RDMAP_OP_VERIFY_RESP, 0xf);
	EXPECT_EQ(XIW_RDMAP_OP_ATOMIC_WRITE_REQ, 0x10);
	EXPECT_EQ(XIW_RDMAP_OP_ATOMIC_WRITE_RESP, 0x11);
	EXPECT_EQ(XIW_RDMAP_OP_COUNT, 0x12);
	EXPECT_EQ(XIW_OPMASK_ALL, (1u << XIW_RDMAP_OP_COUNT) - 1);
	EXPECT_EQ(XIW_OPMASK_RFC5040 | XIW_OPMASK_IMM | XIW_OPMASK_ATOMIC |
		  XIW_OPMASK_FLUSH | XIW_OPMASK_VERIFY |
		  XIW_OPMASK_ATOMIC_WRITE, XIW_OPMASK_ALL);
	EXPECT_EQ(XIW_OPMASK_ATOMIC_WRITE, 3u << 0x10);
}

// Control byte on the wire: RV=01b for 0x0-0xf; Atomic Write uses RV=11b
// (0xc0/0xc1), never RV=01b + Rsv, which older peers would read as
// RDMA Write (0x40) / Read Request (0x41).
TEST(Rdmap, ControlByteEncoding)
{
	const u8 expect[XIW_RDMAP_OP_COUNT] = {
		0x40, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48,
		0x49, 0x4a, 0x4b, 0x4c, 0x4d, 0x4e, 0x4f, 0xc0, 0xc1,
	};
	for (unsigned op = 0; op < XIW_RDMAP_OP_COUNT; op++) {
		u8 c = xiw_rdmap_ctrl(op);
		EXPECT_EQ(c, expect[op]) << op;
		EXPECT_EQ(xiw_rdmap_opcode(c), int(op)) << op;
		EXPECT_EQ(c & XIW_RDMAP_RSV_MASK, 0) << op;
	}
	// What a peer that only knows RV = 01b sees: a version error.
	for (unsigned op = 0x10; op < XIW_RDMAP_OP_COUNT; op++)
		EXPECT_NE(xiw_rdmap_ctrl(op) >> 6, XIW_RDMAP_VERSION);
}

TEST(Rdmap, ControlByteDecodingAllBytes)
{
	int valid = 0;
	for (unsigned c = 0; c < 256; c++) {
		int op = xiw_rdmap_opcode(u8(c));
		unsigned rv = c >> 6, lo = c & 0x0f;
		int expect = rv == 1 ? int(lo) :
			     (rv == 3 && lo <= 1) ? int(0x10 + lo) : -1;
		EXPECT_EQ(op, expect) << c;
		valid += op >= 0;
	}
	EXPECT_EQ(valid, 64 + 8); // Rsv ignored: 4 x 16 + 4 x 2
	EXPECT_EQ(xiw_rdmap_opcode(0x70), 0x0); // Rsv = 11b ignored
	EXPECT_EQ(xiw_rdmap_opcode(0x00), -1);  // RDMAC version 0
	EXPECT_EQ(xiw_rdmap_opcode(0x80), -1);  // RV = 10b left unused
	EXPECT_EQ(xiw_rdmap_opcode(0xc2), -1);
	EXPECT_EQ(xiw_rdmap_opcode(0xf1), 0x11);
}

// The opcode table: T flag and QN per RFC 5040, RFC 7306 and
// draft-talpey-rdma-commit (Documentation/wire-format.md, "RDMAP opcodes").
TEST(Rdmap, OpcodeTable)
{
	struct {
		unsigned op;
		bool tagged;
		unsigned qn, min, max;
		bool one;
	} t[] = {
		{ 0x0, true, 0, 0, 0xff, false }, { 0x1, false, 1, 28, 28, true },
		{ 0x2, true, 0, 0, 0xff, false }, { 0x3, false, 0, 0, 0xff, false },
		{ 0x4, false, 0, 0, 0xff, false }, { 0x5, false, 0, 0, 0xff, false },
		{ 0x6, false, 0, 0, 0xff, false }, { 0x7, false, 2, 4, 52, true },
		{ 0x8, false, 0, 8, 8, true }, { 0x9, false, 0, 8, 8, true },
		{ 0xa, false, 1, 52, 52, true }, { 0xb, false, 3, 12, 12, true },
		{ 0xc, false, 1, 20, 20, true }, { 0xd, false, 3, 0, 0, true },
		// Verify: the hash is 0..32 bytes (XIW_VERIFY_HASH_MAX)
		{ 0xe, false, 1, 16, 48, true }, { 0xf, false, 3, 0, 32, true },
		{ 0x10, false, 1, 24, 24, true }, { 0x11, false, 3, 0, 0, true },
	};
	for (const auto &e : t) {
		u32 d = xiw_rdmap_op_desc(e.op);
		ASSERT_TRUE(d & XIW_OPD_VALID) << e.op;
		EXPECT_EQ(!!(d & XIW_OPD_T), e.tagged) << e.op;
		EXPECT_EQ(XIW_OPD_QN(d), e.qn) << e.op;
		EXPECT_EQ(XIW_OPD_MIN(d), e.min) << e.op;
		EXPECT_EQ(XIW_OPD_MAX(d), e.max) << e.op;
		EXPECT_EQ(!!(d & XIW_OPD_ONE), e.one) << e.op;
	}
	EXPECT_EQ(xiw_rdmap_op_desc(0x12), 0u);
	EXPECT_EQ(xiw_rdmap_op_desc(0xff), 0u);
	EXPECT_EQ(XIW_QN_SEND, 0);
	EXPECT_EQ(XIW_QN_REQ, 1);
	EXPECT_EQ(XIW_QN_TERM, 2);
	EXPECT_EQ(XIW_QN_RESP, 3);
}

TEST(Rdmap, RxHeaderLength)
{
	const u32 expect[XIW_RDMAP_OP_COUNT] = {
		16, 48, 16, 20, 20, 20, 20, 24, 28,
		28, 72, 32, 40, 20, 36, 20, 44, 20,
	};
	for (unsigned op = 0; op < XIW_RDMAP_OP_COUNT; op++)
		EXPECT_EQ(xiw_rx_hdr_len(op), expect[op]) << op;
	EXPECT_EQ(xiw_rx_hdr_len(XIW_RDMAP_OP_COUNT), 0u);
}

void set_untagged(xiw_ddp_untagged &h, unsigned op, u32 qn, u32 msn,
		  u32 rdmap_len, u32 payload)
{
	h.ctrl.mpa_len = cpu_to_be16(XIW_DDP_UNTAGGED_HDR_LEN + rdmap_len +
				     payload);
	h.ctrl.ddp = xiw_ddp_ctrl(false, true);
	h.ctrl.rdmap = xiw_rdmap_ctrl(op);
	h.inval_stag = 0;
	h.qn = cpu_to_be32(qn);
	h.msn = cpu_to_be32(msn);
	h.mo = 0;
}

TEST(Fpdu, TaggedWrite)
{
	xiw_ddp_tagged h;
	h.ctrl.mpa_len = cpu_to_be16(XIW_DDP_TAGGED_HDR_LEN + 6);
	h.ctrl.ddp = xiw_ddp_ctrl(true, true);
	h.ctrl.rdmap = xiw_rdmap_ctrl(XIW_RDMAP_OP_WRITE);
	h.stag = cpu_to_be32(0x12345678);
	h.to = cpu_to_be64(0x0011223344556677ULL);
	Bytes b = bytes_of(h);
	b.insert(b.end(), { 'A', 'B', 'C', 'D', 'E', 'F' });
	const Bytes expect = {
		0x00, 0x14, 0xc1, 0x40, 0x12, 0x34, 0x56, 0x78,
		0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
		0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x00, 0x00,
		0xf8, 0xf6, 0xa5, 0x97,
	};
	EXPECT_BYTES(finish_fpdu(b), expect);
	EXPECT_EQ(xiw_mpa_fpdu_len(20), expect.size());
}

TEST(Fpdu, UntaggedSend)
{
	xiw_ddp_untagged h;
	set_untagged(h, XIW_RDMAP_OP_SEND, XIW_QN_SEND, 1, 0, 5);
	Bytes b = bytes_of(h);
	b.insert(b.end(), { 'h', 'e', 'l', 'l', 'o' });
	const Bytes expect = {
		0x00, 0x17, 0x41, 0x43, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
		0x00, 0x00, 0x00, 0x00, 0x68, 0x65, 0x6c, 0x6c,
		0x6f, 0x00, 0x00, 0x00, 0xb9, 0x90, 0xb1, 0x0c,
	};
	EXPECT_BYTES(finish_fpdu(b), expect);
}

TEST(Fpdu, SendWithSeAndInvalidateMiddleSegment)
{
	xiw_ddp_untagged h;
	set_untagged(h, XIW_RDMAP_OP_SEND_SE_INV, XIW_QN_SEND, 0x01020304,
		     0, 1436);
	h.ctrl.ddp = xiw_ddp_ctrl(false, false);
	h.inval_stag = cpu_to_be32(0xaabbccdd);
	h.mo = cpu_to_be32(2872);
	const Bytes expect = {
		0x05, 0xae, 0x01, 0x46, 0xaa, 0xbb, 0xcc, 0xdd,
		0x00, 0x00, 0x00, 0x00, 0x01, 0x02, 0x03, 0x04,
		0x00, 0x00, 0x0b, 0x38,
	};
	EXPECT_BYTES(bytes_of(h), expect);
}

TEST(Fpdu, ReadRequest)
{
	xiw_rdmap_rreq r;
	set_untagged(r.hdr, XIW_RDMAP_OP_READ_REQ, XIW_QN_REQ, 7,
		     XIW_RDMAP_RREQ_LEN, 0);
	r.sink_stag = cpu_to_be32(0x11111111);
	r.sink_to = cpu_to_be64(0x2222222233333333ULL);
	r.read_size = cpu_to_be32(0x1000);
	r.src_stag = cpu_to_be32(0x44444444);
	r.src_to = cpu_to_be64(0x5555555566666666ULL);
	const Bytes expect = {
		0x00, 0x2e, 0x41, 0x41, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x07,
		0x00, 0x00, 0x00, 0x00, 0x11, 0x11, 0x11, 0x11,
		0x22, 0x22, 0x22, 0x22, 0x33, 0x33, 0x33, 0x33,
		0x00, 0x00, 0x10, 0x00, 0x44, 0x44, 0x44, 0x44,
		0x55, 0x55, 0x55, 0x55, 0x66, 0x66, 0x66, 0x66,
		0xe9, 0x53, 0x68, 0x73,
	};
	EXPECT_BYTES(finish_fpdu(bytes_of(r)), expect);
}

TEST(Terminate, ControlWordBits)
{
	xiw_term_code tc = { 0x2, 0x0, 0x02, XIW_TERM_HDRCT_M };
	EXPECT_EQ(be32_to_cpu(xiw_term_ctrl(&tc)), 0x20028000u);
	tc = { 0x1, 0x2, 0x01, XIW_TERM_HDRCT_M | XIW_TERM_HDRCT_D };
	EXPECT_EQ(be32_to_cpu(xiw_term_ctrl(&tc)), 0x1201c000u);
	tc = { 0x0, 0x1, 0xff, 0xe0 };
	EXPECT_EQ(be32_to_cpu(xiw_term_ctrl(&tc)), 0x01ffe000u);
	tc = { 0xff, 0xff, 0xff, 0xff }; // out-of-range bits are dropped
	EXPECT_EQ(be32_to_cpu(xiw_term_ctrl(&tc)), 0xffffe000u);
	EXPECT_EQ(XIW_TERM_HDRCT_M, 0x80);
	EXPECT_EQ(XIW_TERM_HDRCT_D, 0x40);
	EXPECT_EQ(XIW_TERM_HDRCT_R, 0x20);

	xiw_term_code p;
	xiw_term_parse(cpu_to_be32(0x2307a5ffu), &p);
	EXPECT_EQ(p.layer, 0x2);
	EXPECT_EQ(p.etype, 0x3);
	EXPECT_EQ(p.ecode, 0x07);
	EXPECT_EQ(p.hdrct, 0xa0); // reserved bits ignored
}

TEST(Terminate, Length)
{
	const u8 M = XIW_TERM_HDRCT_M, D = XIW_TERM_HDRCT_D,
		 R = XIW_TERM_HDRCT_R;
	EXPECT_EQ(xiw_term_len(0, false), 4u);
	EXPECT_EQ(xiw_term_len(M, false), 6u);
	EXPECT_EQ(xiw_term_len(M | D, true), 20u);
	EXPECT_EQ(xiw_term_len(M | D, false), 24u);
	EXPECT_EQ(xiw_term_len(D, false), 24u);
	EXPECT_EQ(xiw_term_len(M | D | R, false), 52u);
	EXPECT_EQ(xiw_term_len(M | R, false), 6u); // R needs D
	EXPECT_EQ(xiw_term_len(M | D | R, false), u32(XIW_RDMAP_TERM_MAX));
}

// Terminate answering a Send that arrived on QN 5: DDP / untagged /
// invalid QN, with segment length and the offending DDP header.
TEST(Terminate, Frame)
{
	xiw_ddp_untagged bad;
	set_untagged(bad, XIW_RDMAP_OP_SEND, 5, 1, 0, 5);

	xiw_rdmap_term t;
	xiw_term_code tc = { XIW_TERM_LAYER_DDP, XIW_DDP_ET_UNTAGGED,
			     XIW_DDP_EC_UT_INV_QN,
			     XIW_TERM_HDRCT_M | XIW_TERM_HDRCT_D };
	u32 len = xiw_term_len(tc.hdrct, false);
	set_untagged(t.hdr, XIW_RDMAP_OP_TERMINATE, XIW_QN_TERM, 1, len, 0);
	t.term_ctrl = xiw_term_ctrl(&tc);
	t.ddp_seg_len = bad.ctrl.mpa_len;
	memcpy(t.term_hdrs, &bad.ctrl.ddp, XIW_DDP_UNTAGGED_HDR_LEN);

	const Bytes expect = {
		0x00, 0x2a, 0x41, 0x47, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x01,
		0x00, 0x00, 0x00, 0x00, 0x12, 0x01, 0xc0, 0x00,
		0x00, 0x17, 0x41, 0x43, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x01,
		0x00, 0x00, 0x00, 0x00,
	};
	EXPECT_BYTES(bytes_of(t, XIW_MPA_HDR_LEN + XIW_DDP_UNTAGGED_HDR_LEN +
				     len),
		     expect);
	// The copied FPDU header is exactly "segment length + DDP header".
	EXPECT_EQ(0, memcmp(&t.ddp_seg_len, &bad, 2 + 18));
}

TEST(Fpdu, AtomicFetchAddRequest)
{
	xiw_rdmap_atomic_req a;
	set_untagged(a.hdr, XIW_RDMAP_OP_ATOMIC_REQ, XIW_QN_REQ, 3,
		     XIW_RDMAP_ATOMIC_REQ_LEN, 0);
	a.aopcode = cpu_to_be32(XIW_AOP_FETCH_ADD);
	a.req_id = cpu_to_be32(0x01020304);
	a.stag = cpu_to_be32(0xa0b0c0d0);
	a.to = cpu_to_be64(0x1000);
	a.add_swap = cpu_to_be64(5);
	a.add_swap_mask = 0;
	a.cmp = 0;
	a.cmp_mask = cpu_to_be64(~0ULL);
	const Bytes expect = {
		0x00, 0x46, 0x41, 0x4a, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x03,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x01, 0x02, 0x03, 0x04, 0xa0, 0xb0, 0xc0, 0xd0,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	};
	EXPECT_BYTES(bytes_of(a), expect);
	EXPECT_EQ(XIW_AOP_FETCH_ADD, 0);
	EXPECT_EQ(XIW_AOP_RESERVED, 1);
	EXPECT_EQ(XIW_AOP_CMP_SWAP, 2);
}

TEST(Fpdu, AtomicResponse)
{
	xiw_rdmap_atomic_resp r;
	set_untagged(r.hdr, XIW_RDMAP_OP_ATOMIC_RESP, XIW_QN_RESP, 3,
		     XIW_RDMAP_ATOMIC_RESP_LEN, 0);
	r.req_id = cpu_to_be32(0x01020304);
	r.orig = cpu_to_be64(0x0123456789abcdefULL);
	const Bytes expect = {
		0x00, 0x1e, 0x41, 0x4b, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x03,
		0x00, 0x00, 0x00, 0x00, 0x01, 0x02, 0x03, 0x04,
		0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
	};
	EXPECT_BYTES(bytes_of(r), expect);
}

TEST(Fpdu, ImmediateDataWithSe)
{
	xiw_rdmap_imm m;
	set_untagged(m.hdr, XIW_RDMAP_OP_IMM_SE, XIW_QN_SEND, 9,
		     XIW_RDMAP_IMM_LEN, 0);
	m.data = cpu_to_be64(0xdeadbeefcafef00dULL);
	const Bytes expect = {
		0x00, 0x1a, 0x41, 0x49, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x09,
		0x00, 0x00, 0x00, 0x00, 0xde, 0xad, 0xbe, 0xef,
		0xca, 0xfe, 0xf0, 0x0d,
	};
	EXPECT_BYTES(bytes_of(m), expect);
	EXPECT_EQ(be64_to_cpu(m.data), 0xdeadbeefcafef00dULL);
}

TEST(Fpdu, FlushRequestAndResponse)
{
	xiw_rdmap_flush_req f;
	set_untagged(f.hdr, XIW_RDMAP_OP_FLUSH_REQ, XIW_QN_REQ, 2,
		     XIW_RDMAP_FLUSH_REQ_LEN, 0);
	f.sink_stag = cpu_to_be32(0x00abcd01);
	f.sink_len = cpu_to_be32(0x10000);
	f.sink_to = cpu_to_be64(0x7f0000001000ULL);
	f.flags = cpu_to_be32(XIW_FLUSH_PERSISTENT | XIW_FLUSH_GLOBAL);
	const Bytes expect = {
		0x00, 0x26, 0x41, 0x4c, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02,
		0x00, 0x00, 0x00, 0x00, 0x00, 0xab, 0xcd, 0x01,
		0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x7f, 0x00,
		0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x03,
	};
	EXPECT_BYTES(bytes_of(f), expect);
	EXPECT_EQ(XIW_FLUSH_PERSISTENT, 0x1);
	EXPECT_EQ(XIW_FLUSH_GLOBAL, 0x2);

	xiw_ddp_untagged r;
	set_untagged(r, XIW_RDMAP_OP_FLUSH_RESP, XIW_QN_RESP, 2, 0, 0);
	const Bytes rexpect = {
		0x00, 0x12, 0x41, 0x4d, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x02,
		0x00, 0x00, 0x00, 0x00,
	};
	EXPECT_BYTES(bytes_of(r), rexpect);
}

TEST(Fpdu, VerifyRequest)
{
	xiw_rdmap_verify_req v;
	set_untagged(v.hdr, XIW_RDMAP_OP_VERIFY_REQ, XIW_QN_REQ, 4,
		     XIW_RDMAP_VERIFY_REQ_MIN, 4);
	v.sink_stag = cpu_to_be32(0x01);
	v.sink_len = cpu_to_be32(0x200);
	v.sink_to = cpu_to_be64(0x8);
	const Bytes expect = {
		0x00, 0x26, 0x41, 0x4e, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x04,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
		0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x08,
	};
	// the hash follows the fixed part; none here (MPA length 0x26)
	Bytes got = bytes_of(v);
	got.resize(offsetof(xiw_rdmap_verify_req, hash));
	EXPECT_BYTES(got, expect);
}

TEST(Fpdu, VerifyResponseCarriesTheDigest)
{
	xiw_rdmap_verify_resp r;
	set_untagged(r.hdr, XIW_RDMAP_OP_VERIFY_RESP, XIW_QN_RESP, 4, 0, 4);
	const u8 crc[4] = { 0xe3, 0x06, 0x9a, 0x28 };
	memcpy(r.hash, crc, sizeof(crc));
	r.hdr.ctrl.mpa_len = cpu_to_be16(XIW_DDP_UNTAGGED_HDR_LEN + 4);
	const Bytes expect = {
		0x00, 0x16, 0x41, 0x4f, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x04,
		0x00, 0x00, 0x00, 0x00, 0xe3, 0x06, 0x9a, 0x28,
	};
	Bytes got = bytes_of(r);
	got.resize(XIW_UT_FPDU_HDR_LEN(0) + 4);
	EXPECT_BYTES(got, expect);
}

TEST(Fpdu, AtomicWriteRequestAndResponse)
{
	xiw_rdmap_awrite_req w;
	set_untagged(w.hdr, XIW_RDMAP_OP_ATOMIC_WRITE_REQ, XIW_QN_REQ, 5,
		     XIW_RDMAP_AWRITE_REQ_LEN, 0);
	w.sink_stag = cpu_to_be32(0x11223344);
	w.sink_len = cpu_to_be32(XIW_ATOMIC_WRITE_LEN);
	w.sink_to = cpu_to_be64(0x40);
	w.data = cpu_to_be64(0x0102030405060708ULL);
	const Bytes expect = {
		0x00, 0x2a, 0x41, 0xc0, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x05,
		0x00, 0x00, 0x00, 0x00, 0x11, 0x22, 0x33, 0x44,
		0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x40, 0x01, 0x02, 0x03, 0x04,
		0x05, 0x06, 0x07, 0x08,
	};
	EXPECT_BYTES(bytes_of(w), expect);

	xiw_ddp_untagged r;
	set_untagged(r, XIW_RDMAP_OP_ATOMIC_WRITE_RESP, XIW_QN_RESP, 5, 0, 0);
	EXPECT_EQ(bytes_of(r)[3], 0xc1);
	EXPECT_EQ(bytes_of(r)[11], 0x03);
}

} // namespace

// The classes of a Terminate (IBA chapter 9), from which the kernel derives
// the completion status and the asynchronous event.
TEST(Terminate, Classes)
{
	struct Case {
		u8 layer, etype, ecode;
		xiw_term_class want;
	} cases[] = {
		{ 0, 1, 0x00, XIW_TERM_CLASS_ACCESS },	// invalid STag
		{ 0, 1, 0x02, XIW_TERM_CLASS_ACCESS },	// access rights
		{ 0, 2, 0x05, XIW_TERM_CLASS_INVALID },	// RDMAP version
		{ 0, 2, 0x06, XIW_TERM_CLASS_INVALID },	// opcode
		{ 0, 2, 0x07, XIW_TERM_CLASS_OPERATION },	// stream catastrophic
		{ 0, 2, 0xff, XIW_TERM_CLASS_OPERATION },	// e.g. Verify mismatch
		{ 0, 0, 0x00, XIW_TERM_CLASS_FATAL },	// RDMAP catastrophic
		{ 1, 1, 0x01, XIW_TERM_CLASS_ACCESS },	// DDP tagged bounds
		{ 1, 1, 0x04, XIW_TERM_CLASS_INVALID },	// DDP tagged version
		{ 1, 2, 0x03, XIW_TERM_CLASS_INVALID },	// DDP untagged MSN
		{ 1, 0, 0x00, XIW_TERM_CLASS_FATAL },	// DDP catastrophic
		{ 2, 0, 0x02, XIW_TERM_CLASS_FATAL },	// MPA CRC
	};
	for (const Case &c : cases) {
		xiw_term_code tc = { c.layer, c.etype, c.ecode, 0 };

		EXPECT_EQ(xiw_term_classify(&tc), c.want)
			<< unsigned(c.layer) << "/" << unsigned(c.etype) << "/"
			<< unsigned(c.ecode);
	}
}
