// SPDX-License-Identifier: GPL-2.0
// Receive-side header validation: the Terminate each bad header earns.
#include "wire_test.h"

namespace {

constexpr u8 M = XIW_TERM_HDRCT_M, D = XIW_TERM_HDRCT_D,
	     R = XIW_TERM_HDRCT_R;

// A header image of exactly XIW_RX_PEEK_LEN bytes in its own allocation,
// so AddressSanitizer catches any read beyond what the check may touch.
struct Hdr {
	union xiw_fpdu_hdr h = {};

	// Minimal valid header for @op: rdmap_len = table minimum, L=1, MO=0.
	explicit Hdr(unsigned op, u32 extra = 0)
	{
		u32 d = xiw_rdmap_op_desc(op);
		bool t = d & XIW_OPD_T;
		u32 len = (t ? XIW_DDP_TAGGED_HDR_LEN :
			       XIW_DDP_UNTAGGED_HDR_LEN) +
			  XIW_OPD_MIN(d) + extra;
		h.ctrl.mpa_len = cpu_to_be16(len);
		h.ctrl.ddp = xiw_ddp_ctrl(t, true);
		h.ctrl.rdmap = xiw_rdmap_ctrl(op);
		if (!t) {
			h.untagged.qn = cpu_to_be32(XIW_OPD_QN(d));
			h.untagged.msn = cpu_to_be32(1);
		}
	}
	Hdr &qn(u32 v) { h.untagged.qn = cpu_to_be32(v); return *this; }
	Hdr &mo(u32 v) { h.untagged.mo = cpu_to_be32(v); return *this; }
	Hdr &len(u32 v) { h.ctrl.mpa_len = cpu_to_be16(v); return *this; }
	Hdr &ddp(u8 v) { h.ctrl.ddp = v; return *this; }
	Hdr &rdmap(u8 v) { h.ctrl.rdmap = v; return *this; }
	Hdr &not_last() { h.ctrl.ddp &= ~XIW_DDP_L; return *this; }
	Hdr &tagged(bool t)
	{
		h.ctrl.ddp = (h.ctrl.ddp & ~XIW_DDP_T) | (t ? XIW_DDP_T : 0);
		return *this;
	}
};

struct Result {
	bool ok;
	unsigned op;
	xiw_term_code tc;
};

Result check(const Hdr &x, u32 mask = XIW_OPMASK_ALL)
{
	std::vector<u8> buf(XIW_RX_PEEK_LEN);
	memcpy(buf.data(), &x.h, XIW_RX_PEEK_LEN);
	Result r = { false, 0xdead, { 0xee, 0xee, 0xee, 0xee } };
	r.ok = xiw_rx_check_hdr(buf.data(), mask, &r.op, &r.tc);
	return r;
}

::testing::AssertionResult term_is(const Result &r, u8 layer, u8 etype,
				   u8 ecode, u8 hdrct)
{
	if (r.ok)
		return ::testing::AssertionFailure() << "accepted";
	if (r.tc.layer != layer || r.tc.etype != etype ||
	    r.tc.ecode != ecode || r.tc.hdrct != hdrct)
		return ::testing::AssertionFailure()
		       << "got " << int(r.tc.layer) << "/" << int(r.tc.etype)
		       << "/" << int(r.tc.ecode) << " hdrct " << int(r.tc.hdrct);
	return ::testing::AssertionSuccess();
}

#define EXPECT_TERM(r, l, t, c, h) EXPECT_TRUE(term_is(r, l, t, c, h))

TEST(RxCheck, EveryOpcodeMinimalHeaderIsValid)
{
	for (unsigned op = 0; op < XIW_RDMAP_OP_COUNT; op++) {
		Result r = check(Hdr(op));
		EXPECT_TRUE(r.ok) << op;
		EXPECT_EQ(r.op, op);
	}
}

TEST(RxCheck, PayloadAndSegmentationWhereAllowed)
{
	for (unsigned op : { 0u, 2u, 3u, 4u, 5u, 6u }) {
		Hdr h(op, 1436);
		h.not_last();
		if (op >= 3)
			h.mo(2872);
		EXPECT_TRUE(check(h).ok) << op;
	}
	// Verify: a hash of at most 32 bytes (SHA-256) after the header
	// (the extra bytes beyond the 16-byte Verify Request header)
	EXPECT_TRUE(check(Hdr(XIW_RDMAP_OP_VERIFY_REQ, 32)).ok);
	EXPECT_FALSE(check(Hdr(XIW_RDMAP_OP_VERIFY_REQ, 33)).ok);
	EXPECT_TRUE(check(Hdr(XIW_RDMAP_OP_VERIFY_RESP, 32)).ok);
	EXPECT_FALSE(check(Hdr(XIW_RDMAP_OP_VERIFY_RESP, 33)).ok);
	EXPECT_TRUE(check(Hdr(XIW_RDMAP_OP_TERMINATE, 48)).ok); // max 52
	EXPECT_TRUE(check(Hdr(XIW_RDMAP_OP_SEND, 0)).ok); // zero-length RTR
}

TEST(RxCheck, ReservedBitsIgnored)
{
	Hdr h(XIW_RDMAP_OP_SEND);
	h.ddp(h.h.ctrl.ddp | XIW_DDP_RSVD_MASK);
	h.rdmap(h.h.ctrl.rdmap | XIW_RDMAP_RSV_MASK);
	h.h.untagged.inval_stag = cpu_to_be32(0x12345678);
	Result r = check(h);
	EXPECT_TRUE(r.ok);
	EXPECT_EQ(r.op, unsigned(XIW_RDMAP_OP_SEND));
	Hdr w(XIW_RDMAP_OP_ATOMIC_WRITE_REQ);
	w.rdmap(0xf0); // RV=11b, Rsv=11b, opcode 0
	EXPECT_TRUE(check(w).ok);
}

TEST(RxCheck, BadDdpVersion)
{
	for (u8 dv : { 0, 2, 3 }) {
		Hdr t(XIW_RDMAP_OP_WRITE);
		t.ddp(XIW_DDP_T | XIW_DDP_L | dv);
		EXPECT_TERM(check(t), 1, 1, 0x04, 0) << int(dv);
		Hdr u(XIW_RDMAP_OP_SEND);
		u.ddp(XIW_DDP_L | dv);
		EXPECT_TERM(check(u), 1, 2, 0x06, 0) << int(dv);
	}
}

TEST(RxCheck, BadRdmapVersion)
{
	for (u8 c : { 0x03, 0x83, 0xc2, 0xcf, 0x00, 0x80 }) {
		Hdr h(XIW_RDMAP_OP_SEND);
		h.rdmap(c);
		EXPECT_TERM(check(h), 0, 2, 0x05, M | D) << int(c);
	}
	Hdr t(XIW_RDMAP_OP_WRITE);
	t.rdmap(0x00);
	EXPECT_TERM(check(t), 0, 2, 0x05, M | D);
}

TEST(RxCheck, QueueNumberOutOfRange)
{
	for (u32 qn : { 4u, 5u, 0x100u, 0xffffffffu }) {
		Hdr h(XIW_RDMAP_OP_SEND);
		h.qn(qn);
		EXPECT_TERM(check(h), 1, 2, 0x01, M | D) << qn;
	}
}

TEST(RxCheck, WrongQueueForOpcode)
{
	struct {
		unsigned op;
		u32 qn;
	} bad[] = {
		{ XIW_RDMAP_OP_SEND, 1 }, { XIW_RDMAP_OP_SEND, 2 },
		{ XIW_RDMAP_OP_SEND_SE_INV, 3 }, { XIW_RDMAP_OP_READ_REQ, 0 },
		{ XIW_RDMAP_OP_READ_REQ, 3 }, { XIW_RDMAP_OP_TERMINATE, 0 },
		{ XIW_RDMAP_OP_IMM, 1 }, { XIW_RDMAP_OP_ATOMIC_REQ, 3 },
		{ XIW_RDMAP_OP_ATOMIC_RESP, 1 }, { XIW_RDMAP_OP_FLUSH_REQ, 0 },
		{ XIW_RDMAP_OP_FLUSH_RESP, 1 }, { XIW_RDMAP_OP_VERIFY_RESP, 2 },
		{ XIW_RDMAP_OP_ATOMIC_WRITE_REQ, 3 },
		{ XIW_RDMAP_OP_ATOMIC_WRITE_RESP, 1 },
	};
	for (const auto &b : bad) {
		Hdr h(b.op);
		h.qn(b.qn);
		EXPECT_TERM(check(h), 1, 2, 0x01, M | D) << b.op << "@" << b.qn;
	}
}

TEST(RxCheck, TaggedFlagMismatch)
{
	// Untagged opcodes with T=1, tagged ones with T=0.
	for (unsigned op : { 1u, 3u, 7u, 8u, 0xau, 0xbu, 0xcu, 0x10u }) {
		Hdr h(op, 8);
		h.tagged(true);
		EXPECT_TERM(check(h), 0, 2, 0x06, M | D) << op;
	}
	for (unsigned op : { 0u, 2u }) {
		Hdr h(op, 4);
		h.tagged(false);
		EXPECT_TERM(check(h), 0, 2, 0x06, M | D) << op;
	}
}

TEST(RxCheck, OpcodeNotEnabled)
{
	// An RFC 5040-only receiver: every extension is Unexpected OpCode,
	// Atomic Write included (not an RDMAP version error).
	for (unsigned op = 8; op < XIW_RDMAP_OP_COUNT; op++)
		EXPECT_TERM(check(Hdr(op), XIW_OPMASK_RFC5040), 0, 2, 0x06, M | D)
			<< op;
	for (unsigned op = 0; op < 8; op++)
		EXPECT_TRUE(check(Hdr(op), XIW_OPMASK_RFC5040).ok) << op;
	EXPECT_TRUE(check(Hdr(XIW_RDMAP_OP_ATOMIC_REQ),
			  XIW_OPMASK_RFC5040 | XIW_OPMASK_ATOMIC).ok);
	EXPECT_TERM(check(Hdr(XIW_RDMAP_OP_ATOMIC_WRITE_REQ),
			  XIW_OPMASK_ALL & ~XIW_OPMASK_ATOMIC_WRITE),
		    0, 2, 0x06, M | D);
}

TEST(RxCheck, SegmentShorterThanDdpHeader)
{
	for (u32 len : { 0u, 1u, 2u, 13u }) {
		Hdr t(XIW_RDMAP_OP_WRITE);
		t.len(len);
		EXPECT_TERM(check(t), 2, 0, 0x03, 0) << len;
	}
	for (u32 len : { 0u, 14u, 17u }) {
		Hdr u(XIW_RDMAP_OP_SEND);
		u.len(len);
		EXPECT_TERM(check(u), 2, 0, 0x03, 0) << len;
	}
	Hdr t(XIW_RDMAP_OP_WRITE);
	t.len(14);
	EXPECT_TRUE(check(t).ok);
}

TEST(RxCheck, RdmapHeaderTooShort)
{
	struct {
		unsigned op;
		u32 rlen;
	} bad[] = {
		{ XIW_RDMAP_OP_READ_REQ, 27 }, { XIW_RDMAP_OP_READ_REQ, 0 },
		{ XIW_RDMAP_OP_TERMINATE, 3 }, { XIW_RDMAP_OP_IMM, 7 },
		{ XIW_RDMAP_OP_IMM_SE, 0 }, { XIW_RDMAP_OP_ATOMIC_REQ, 51 },
		{ XIW_RDMAP_OP_ATOMIC_RESP, 11 }, { XIW_RDMAP_OP_FLUSH_REQ, 19 },
		{ XIW_RDMAP_OP_VERIFY_REQ, 15 },
		{ XIW_RDMAP_OP_ATOMIC_WRITE_REQ, 23 },
	};
	for (const auto &b : bad) {
		Hdr h(b.op);
		h.len(XIW_DDP_UNTAGGED_HDR_LEN + b.rlen);
		// R only with a complete Read Request header: never here.
		EXPECT_TERM(check(h), 2, 0, 0x03, M | D) << b.op;
	}
}

TEST(RxCheck, SingleSegmentMessageTooLong)
{
	struct {
		unsigned op;
		u32 extra;
		u8 hdrct;
	} bad[] = {
		{ XIW_RDMAP_OP_READ_REQ, 1, M | D | R },
		{ XIW_RDMAP_OP_TERMINATE, 49, M | D },
		{ XIW_RDMAP_OP_IMM, 1, M | D },
		{ XIW_RDMAP_OP_IMM_SE, 8, M | D },
		{ XIW_RDMAP_OP_ATOMIC_REQ, 4, M | D },
		{ XIW_RDMAP_OP_ATOMIC_RESP, 1, M | D },
		{ XIW_RDMAP_OP_FLUSH_REQ, 4, M | D },
		{ XIW_RDMAP_OP_FLUSH_RESP, 1, M | D },
		{ XIW_RDMAP_OP_ATOMIC_WRITE_REQ, 8, M | D },
		{ XIW_RDMAP_OP_ATOMIC_WRITE_RESP, 1, M | D },
	};
	for (const auto &b : bad)
		EXPECT_TERM(check(Hdr(b.op, b.extra)), 1, 2, 0x05, b.hdrct)
			<< b.op;
}

TEST(RxCheck, SingleSegmentMessageNotLast)
{
	for (unsigned op : { 1u, 7u, 8u, 9u, 0xau, 0xbu, 0xcu, 0xdu, 0xeu,
			     0xfu, 0x10u, 0x11u }) {
		Hdr h(op);
		h.not_last();
		EXPECT_TERM(check(h), 1, 2, 0x05,
			    op == XIW_RDMAP_OP_READ_REQ ? M | D | R : M | D)
			<< op;
	}
}

TEST(RxCheck, SingleSegmentMessageNonzeroOffset)
{
	for (unsigned op : { 1u, 7u, 8u, 0xau, 0xbu, 0xcu, 0x10u }) {
		Hdr h(op);
		h.mo(4);
		EXPECT_TERM(check(h), 1, 2, 0x04,
			    op == XIW_RDMAP_OP_READ_REQ ? M | D | R : M | D)
			<< op;
	}
}

// Lower layers are judged first.
TEST(RxCheck, CheckOrder)
{
	Hdr a(XIW_RDMAP_OP_SEND);
	a.ddp(XIW_DDP_L | 2).qn(9).rdmap(0x03).len(3);
	EXPECT_TERM(check(a), 2, 0, 0x03, 0); // length before DDP version
	a.len(20);
	EXPECT_TERM(check(a), 1, 2, 0x06, 0); // DDP version before QN
	a.ddp(XIW_DDP_L | 1);
	EXPECT_TERM(check(a), 1, 2, 0x01, M | D); // QN range before RV
	a.qn(4);
	EXPECT_TERM(check(a), 1, 2, 0x01, M | D);
	a.qn(0);
	EXPECT_TERM(check(a), 0, 2, 0x05, M | D); // RV before opcode
	a.rdmap(0x40).qn(1);
	EXPECT_TERM(check(a), 0, 2, 0x06, M | D); // T (Write untagged) first
	a.rdmap(0x43);
	EXPECT_TERM(check(a), 1, 2, 0x01, M | D); // then QN vs opcode
}

TEST(RxCheck, TerminateControlOfResult)
{
	Hdr h(XIW_RDMAP_OP_SEND);
	h.rdmap(0x83);
	Result r = check(h);
	ASSERT_FALSE(r.ok);
	EXPECT_BYTES(bytes_of(xiw_term_ctrl(&r.tc)),
		     (Bytes{ 0x02, 0x05, 0xc0, 0x00 }));
	EXPECT_EQ(xiw_term_len(r.tc.hdrct, false), 24u);
}

TEST(AtomicReqCheck, OpcodeAndAlignment)
{
	xiw_term_code tc;
	EXPECT_TRUE(xiw_atomic_req_check(XIW_AOP_FETCH_ADD, 0x1000, &tc));
	EXPECT_TRUE(xiw_atomic_req_check(XIW_AOP_CMP_SWAP, 0x1008, &tc));
	// Reserved upper 28 bits are ignored.
	EXPECT_TRUE(xiw_atomic_req_check(0xfffffff2u, 0, &tc));
	for (u32 aop = 0; aop < 16; aop++) {
		if (aop == XIW_AOP_FETCH_ADD || aop == XIW_AOP_CMP_SWAP)
			continue;
		Result r = { xiw_atomic_req_check(aop, 0x1000, &tc), 0, tc };
		EXPECT_TERM(r, 0, 2, 0x06, M | D) << aop;
	}
	for (u64 a : { 0x1001ULL, 0x1004ULL, 0x1007ULL }) {
		Result r = { xiw_atomic_req_check(XIW_AOP_CMP_SWAP, a, &tc), 0,
			     tc };
		EXPECT_TERM(r, 0, 2, 0x07, M | D) << a;
	}
	EXPECT_EQ(XIW_ATOMIC_ALIGN, 8);
}

TEST(TermCodes, Tables)
{
	EXPECT_EQ(XIW_TERM_LAYER_RDMAP, 0);
	EXPECT_EQ(XIW_TERM_LAYER_DDP, 1);
	EXPECT_EQ(XIW_TERM_LAYER_LLP, 2);
	const int rdmap[] = { XIW_RDMAP_ET_CATASTROPHIC, XIW_RDMAP_ET_REMOTE_PROT,
			      XIW_RDMAP_ET_REMOTE_OP };
	EXPECT_EQ(rdmap[0] + 2 * rdmap[1] + 4 * rdmap[2], 0 + 2 + 8);
	const int rec[] = {
		XIW_RDMAP_EC_INV_STAG, XIW_RDMAP_EC_BASE_BOUNDS,
		XIW_RDMAP_EC_ACCESS, XIW_RDMAP_EC_STAG_NOT_ASSOC,
		XIW_RDMAP_EC_TO_WRAP, XIW_RDMAP_EC_VERSION,
		XIW_RDMAP_EC_OPCODE, XIW_RDMAP_EC_CATASTROPHIC_STREAM,
		XIW_RDMAP_EC_CATASTROPHIC_GLOBAL,
		XIW_RDMAP_EC_CANNOT_INVALIDATE,
	};
	for (int i = 0; i < 10; i++)
		EXPECT_EQ(rec[i], i);
	EXPECT_EQ(XIW_RDMAP_EC_UNSPECIFIED, 0xff);
	EXPECT_EQ(XIW_DDP_ET_CATASTROPHIC, 0);
	EXPECT_EQ(XIW_DDP_ET_TAGGED, 1);
	EXPECT_EQ(XIW_DDP_ET_UNTAGGED, 2);
	EXPECT_EQ(XIW_DDP_ET_LLP_RSVD, 3);
	const int tec[] = { XIW_DDP_EC_T_INV_STAG, XIW_DDP_EC_T_BASE_BOUNDS,
			    XIW_DDP_EC_T_STAG_NOT_ASSOC, XIW_DDP_EC_T_TO_WRAP,
			    XIW_DDP_EC_T_VERSION };
	for (int i = 0; i < 5; i++)
		EXPECT_EQ(tec[i], i);
	const int uec[] = { XIW_DDP_EC_UT_INV_QN, XIW_DDP_EC_UT_MSN_NO_BUF,
			    XIW_DDP_EC_UT_MSN_RANGE, XIW_DDP_EC_UT_INV_MO,
			    XIW_DDP_EC_UT_TOO_LONG, XIW_DDP_EC_UT_VERSION };
	for (int i = 0; i < 6; i++)
		EXPECT_EQ(uec[i], i + 1);
	EXPECT_EQ(XIW_MPA_ET_MPA, 0);
	const int mec[] = { XIW_MPA_EC_TCP_CLOSED, XIW_MPA_EC_CRC,
			    XIW_MPA_EC_MARKER_LEN, XIW_MPA_EC_BAD_RR,
			    XIW_MPA_EC_LOCAL_CATASTROPHIC,
			    XIW_MPA_EC_INSUFFICIENT_IRD,
			    XIW_MPA_EC_NO_MATCHING_RTR };
	for (int i = 0; i < 7; i++)
		EXPECT_EQ(mec[i], i + 1);
}

} // namespace
