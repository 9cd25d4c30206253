// SPDX-License-Identifier: GPL-2.0
// fuzz_ddp_hdr: the receive-side DDP/RDMAP header check of kernel/
// xiw_wire.h (xiw_rx_check_hdr() with its opcode table, the RDMAP
// control-byte codec and the header lengths RX stages from it).
//
// Input: one FPDU from its MPA ULPDU_Length on (the corpus holds real
// xiw frames); shorter inputs are zero-padded to XIW_RX_PEEK_LEN.
//
// Properties:
//  - the check reads nothing beyond XIW_RX_PEEK_LEN bytes (exact
//    allocation under ASan) and is deterministic;
//  - an accepted header is consistent with the lengths RX derives from
//    it: known opcode in the mask, T flag and QN of the opcode, RDMAP
//    header within the table's bounds, single-segment rules, and the
//    header RX stages (xiw_rx_hdr_len(), the whole segment for a
//    Terminate) fits both the segment and union xiw_fpdu_hdr, so the
//    payload length ULPDU_Length + 2 - staged never underflows and
//    staged + payload + pad + CRC == xiw_mpa_fpdu_len();
//  - a rejected header yields a Terminate code that exists for its layer,
//    whose header-copy bits are coherent and which survives
//    xiw_term_ctrl()/xiw_term_parse();
//  - reserved bits (DDP Rsvd, RDMAP Rsv), the Invalidate STag and, for
//    tagged segments, STag and TO never change the verdict;
//  - the opcode mask is honoured: a narrower mask accepts a subset, and
//    removing the accepted opcode turns it into Unexpected OpCode;
//  - the verdict and the exact Terminate code equal an independent
//    reference written from the RFCs' opcode lists (RFC 5040, RFC 7306,
//    draft-talpey-rdma-commit; Documentation/wire-format.md),
//    checking in the order xiw_rx_check_hdr()'s kernel-doc promises;
//  - what RX reads of an accepted header (the structure of its opcode:
//    struct xiw_rdmap_rreq, xiw_rdmap_atomic_req, ...) lies inside what
//    it staged;
//  - the opcode table has a descriptor for exactly the 18 logical
//    opcodes, with min <= max, a valid QN and a staged header that fits;
//  - encode then parse: a header built with the wire encoders
//    (xiw_ddp_ctrl(), xiw_rdmap_ctrl()) from any legal choice of opcode
//    and RDMAP length is accepted as that opcode, and every control byte
//    that xiw_rdmap_opcode() decodes re-encodes to itself (Rsv aside).
#include "fuzz_common.h"

using namespace xfuzz;

namespace {

// The RDMAP header RX reads after accepting @op, as a structure of
// xiw_wire.h: its size from the MPA length on bounds what must be staged.
size_t struct_read(unsigned op)
{
	switch (op) {
	case XIW_RDMAP_OP_WRITE:
	case XIW_RDMAP_OP_READ_RESP:
		return sizeof(struct xiw_ddp_tagged);
	case XIW_RDMAP_OP_READ_REQ:
		return sizeof(struct xiw_rdmap_rreq);
	case XIW_RDMAP_OP_TERMINATE:
		return offsetof(struct xiw_rdmap_term, ddp_seg_len);
	case XIW_RDMAP_OP_IMM:
	case XIW_RDMAP_OP_IMM_SE:
		return sizeof(struct xiw_rdmap_imm);
	case XIW_RDMAP_OP_ATOMIC_REQ:
		return sizeof(struct xiw_rdmap_atomic_req);
	case XIW_RDMAP_OP_ATOMIC_RESP:
		return sizeof(struct xiw_rdmap_atomic_resp);
	case XIW_RDMAP_OP_FLUSH_REQ:
		return sizeof(struct xiw_rdmap_flush_req);
	case XIW_RDMAP_OP_VERIFY_REQ:
		// the hash is staged with the whole ULPDU (below)
		return offsetof(struct xiw_rdmap_verify_req, hash);
	case XIW_RDMAP_OP_ATOMIC_WRITE_REQ:
		return sizeof(struct xiw_rdmap_awrite_req);
	default:
		return sizeof(struct xiw_ddp_untagged);
	}
}

// Independent reference: the rules as RFC 5040/5041/7306 and
// draft-talpey-rdma-commit state them (Documentation/wire-format.md,
// "RDMAP opcodes"), checked in the order the kernel-doc of
// xiw_rx_check_hdr() promises. Exact Terminate codes are compared.
struct Spec {
	bool tagged;
	u32 qn, min, max; // RDMAP header octets after the DDP header
	bool single;
};
constexpr u32 kAny = ~0U;
constexpr Spec kSpec[XIW_RDMAP_OP_COUNT] = {
	{ true, 0, 0, kAny, false },	// 0x0 RDMA Write
	{ false, 1, 28, 28, true },	// 0x1 Read Request
	{ true, 0, 0, kAny, false },	// 0x2 Read Response
	{ false, 0, 0, kAny, false },	// 0x3 Send
	{ false, 0, 0, kAny, false },	// 0x4 Send with Invalidate
	{ false, 0, 0, kAny, false },	// 0x5 Send with SE
	{ false, 0, 0, kAny, false },	// 0x6 Send with SE and Invalidate
	{ false, 2, 4, 52, true },	// 0x7 Terminate
	{ false, 0, 8, 8, true },	// 0x8 Immediate Data
	{ false, 0, 8, 8, true },	// 0x9 Immediate Data with SE
	{ false, 1, 52, 52, true },	// 0xa Atomic Request
	{ false, 3, 12, 12, true },	// 0xb Atomic Response
	{ false, 1, 20, 20, true },	// 0xc Flush Request
	{ false, 3, 0, 0, true },	// 0xd Flush Response
	{ false, 1, 16, 48, true },	// 0xe Verify Request (+ hash of <= 32)
	{ false, 3, 0, 32, true },	// 0xf Verify Response (hash of <= 32)
	{ false, 1, 24, 24, true },	// 0x10 Atomic Write Request
	{ false, 3, 0, 0, true },	// 0x11 Atomic Write Response
};

Check ref_check(const u8 *h, u32 mask)
{
	const u32 ulpdu = get_be16(h);
	const bool t = h[2] & 0x80, last = h[2] & 0x40;
	const u32 ddp = t ? 14 : 18, qn = get_be32(h + 8), mo = get_be32(h + 16);
	const unsigned rv = h[3] >> 6, code = h[3] & 0xf;
	const u8 md = 0xc0;
	auto term = [](u8 l, u8 e, u8 c, u8 hc) {
		return Check{ false, 0, { l, e, c, hc } };
	};

	if (ulpdu < ddp)
		return term(2, 0, 0x03, 0); // LLP: length / marker mismatch
	if ((h[2] & 3) != 1)
		return t ? term(1, 1, 0x04, 0) : term(1, 2, 0x06, 0);
	if (!t && qn > 3)
		return term(1, 2, 0x01, md);
	int op = -1;
	if (rv == 1)
		op = code;
	else if (rv == 3 && code < 2)
		op = 0x10 + code;
	if (op < 0)
		return term(0, 2, 0x05, md); // RDMAP version
	const Spec &sp = kSpec[op];
	if (!(mask >> op & 1) || sp.tagged != t)
		return term(0, 2, 0x06, md); // unexpected opcode
	if (!t && qn != sp.qn)
		return term(1, 2, 0x01, md);
	const u32 rlen = ulpdu - ddp;
	if (rlen < sp.min)
		return term(2, 0, 0x03, md);
	const u8 hc = op == 1 ? 0xe0 : md;
	if (sp.single && mo)
		return term(1, 2, 0x04, hc);
	if (sp.single && (!last || (sp.max != kAny && rlen > sp.max)))
		return term(1, 2, 0x05, hc);
	return Check{ true, unsigned(op), {} };
}

void check_accepted(const u8 *h, const Check &r, u32 mask)
{
	const u32 ulpdu = get_be16(h);
	const bool tagged = h[2] & XIW_DDP_T;
	const u32 ddp_len = xiw_ddp_hdr_len(h[2]);
	const u32 d = xiw_rdmap_op_desc(r.op);

	FUZZ_ASSERT(r.op < XIW_RDMAP_OP_COUNT, "op %u", r.op);
	FUZZ_ASSERT(d & XIW_OPD_VALID);
	FUZZ_ASSERT(mask & (1U << r.op));
	FUZZ_ASSERT(xiw_rdmap_opcode(h[3]) == int(r.op));
	FUZZ_ASSERT((h[2] & XIW_DDP_DV_MASK) == XIW_DDP_VERSION);
	FUZZ_ASSERT(tagged == !!(d & XIW_OPD_T), "op %u tagged %d", r.op,
		    tagged);
	FUZZ_ASSERT(ulpdu >= ddp_len + XIW_OPD_MIN(d), "op %u ulpdu %u", r.op,
		    ulpdu);
	if (!tagged) {
		FUZZ_ASSERT(get_be32(h + 8) == XIW_OPD_QN(d));
		FUZZ_ASSERT(get_be32(h + 8) < XIW_QN_COUNT);
	}
	if (d & XIW_OPD_ONE) {
		FUZZ_ASSERT(!tagged);
		FUZZ_ASSERT(get_be32(h + 16) == 0, "single-segment MO");
		FUZZ_ASSERT(h[2] & XIW_DDP_L, "single-segment without L");
		if (XIW_OPD_MAX(d) != XIW_OPD_ANY)
			FUZZ_ASSERT(ulpdu - ddp_len <= XIW_OPD_MAX(d));
	}

	// What xiw_rx_hdr_step() stages into rx->hdr before the payload.
	u32 staged = xiw_rx_hdr_len(r.op);
	FUZZ_ASSERT(staged == XIW_MPA_HDR_LEN + ddp_len + XIW_OPD_MIN(d));
	// Everything RX reads of the header after accepting it is staged.
	FUZZ_ASSERT(staged >= struct_read(r.op), "op %u stages %u, reads %zu",
		    r.op, staged, struct_read(r.op));
	if (r.op == XIW_RDMAP_OP_TERMINATE ||
	    r.op == XIW_RDMAP_OP_VERIFY_REQ ||
	    r.op == XIW_RDMAP_OP_VERIFY_RESP)
		staged = XIW_MPA_HDR_LEN + ulpdu;
	FUZZ_ASSERT(staged >= XIW_MPA_HDR_LEN + ddp_len);
	FUZZ_ASSERT(staged <= sizeof(union xiw_fpdu_hdr),
		    "op %u stages %u > %zu", r.op, staged,
		    sizeof(union xiw_fpdu_hdr));
	FUZZ_ASSERT(staged <= XIW_MPA_HDR_LEN + ulpdu, "op %u payload < 0",
		    r.op);
	const u32 payload = XIW_MPA_HDR_LEN + ulpdu - staged;
	FUZZ_ASSERT(staged + payload + xiw_mpa_pad(ulpdu) + XIW_MPA_CRC_LEN ==
		    xiw_mpa_fpdu_len(ulpdu));
	FUZZ_ASSERT(xiw_mpa_fpdu_len(ulpdu) % 4 == 0);
}

void check_rejected(const Check &r)
{
	FUZZ_ASSERT(term_code_plausible(r.tc), "layer %u etype %u ecode %u "
		    "hdrct %#x", r.tc.layer, r.tc.etype, r.tc.ecode,
		    r.tc.hdrct);
	xiw_term_code back;
	xiw_term_parse(xiw_term_ctrl(&r.tc), &back);
	FUZZ_ASSERT(term_code_eq(back, r.tc));
}

// Encode then parse: a legal header for an opcode chosen by the input.
void round_trip(const u8 *data, size_t size)
{
	if (size < 4)
		return;
	const unsigned op = data[0] % XIW_RDMAP_OP_COUNT;
	const u32 d = xiw_rdmap_op_desc(op);
	const bool tagged = d & XIW_OPD_T;
	const u32 ddp_len = tagged ? XIW_DDP_TAGGED_HDR_LEN :
				     XIW_DDP_UNTAGGED_HDR_LEN;
	u32 max = XIW_OPD_MAX(d) == XIW_OPD_ANY ?
			  XIW_MPA_ULPDU_MAX - ddp_len : XIW_OPD_MAX(d);
	u32 span = max - XIW_OPD_MIN(d) + 1;
	u32 rlen = XIW_OPD_MIN(d) + get_be16(data + 1) % span;
	bool last = (d & XIW_OPD_ONE) || (data[3] & 1);
	union xiw_fpdu_hdr h = {};

	h.ctrl.mpa_len = cpu_to_be16(ddp_len + rlen);
	h.ctrl.ddp = xiw_ddp_ctrl(tagged, last) | (data[3] & XIW_DDP_RSVD_MASK);
	h.ctrl.rdmap = xiw_rdmap_ctrl(op) | (data[3] & XIW_RDMAP_RSV_MASK);
	if (!tagged) {
		h.untagged.qn = cpu_to_be32(XIW_OPD_QN(d));
		h.untagged.msn = cpu_to_be32(get_be16(data + 1) + 1);
		if (!(d & XIW_OPD_ONE))
			h.untagged.mo = cpu_to_be32(data[3] >> 1);
	} else {
		h.tagged.stag = cpu_to_be32(get_be16(data + 1));
	}
	Check r = check_hdr(reinterpret_cast<const u8 *>(&h), XIW_OPMASK_ALL);
	FUZZ_ASSERT(r.ok && r.op == op, "op %u rlen %u rejected: %u/%u/%u",
		    op, rlen, r.tc.layer, r.tc.etype, r.tc.ecode);
	check_accepted(reinterpret_cast<const u8 *>(&h), r, XIW_OPMASK_ALL);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	u8 h[XIW_RX_PEEK_LEN] = {};
	std::memcpy(h, data, size < sizeof(h) ? size : sizeof(h));

	const Check all = check_hdr(h, XIW_OPMASK_ALL);
	FUZZ_ASSERT(all == check_hdr(h, XIW_OPMASK_ALL), "not deterministic");
	for (u32 mask : { XIW_OPMASK_ALL, kKernelRxOps }) {
		const Check ref = ref_check(h, mask);
		const Check got = mask == XIW_OPMASK_ALL ? all :
							   check_hdr(h, mask);
		FUZZ_ASSERT(got == ref, "mask %#x: kernel %s op %u tc %u/%u/%#x/%#x,"
			    " reference %s op %u tc %u/%u/%#x/%#x", mask,
			    got.ok ? "accepts" : "rejects", got.op,
			    got.tc.layer, got.tc.etype, got.tc.ecode,
			    got.tc.hdrct, ref.ok ? "accepts" : "rejects",
			    ref.op, ref.tc.layer, ref.tc.etype, ref.tc.ecode,
			    ref.tc.hdrct);
	}
	if (all.ok)
		check_accepted(h, all, XIW_OPMASK_ALL);
	else
		check_rejected(all);

	// The kernel's own receive mask: a subset of everything.
	const Check k = check_hdr(h, kKernelRxOps);
	if (k.ok) {
		FUZZ_ASSERT(all.ok && all.op == k.op);
		check_accepted(h, k, kKernelRxOps);
	} else {
		check_rejected(k);
		if (all.ok)
			FUZZ_ASSERT(!(kKernelRxOps & (1U << all.op)));
		else
			FUZZ_ASSERT(term_code_eq(all.tc, k.tc) ||
				    k.tc.ecode == XIW_RDMAP_EC_OPCODE);
	}
	if (all.ok) {
		const Check narrow =
			check_hdr(h, XIW_OPMASK_ALL & ~(1U << all.op));
		FUZZ_ASSERT(!narrow.ok);
		FUZZ_ASSERT(narrow.tc.layer == XIW_TERM_LAYER_RDMAP &&
			    narrow.tc.etype == XIW_RDMAP_ET_REMOTE_OP &&
			    narrow.tc.ecode == XIW_RDMAP_EC_OPCODE);
	}

	// Fields the check must ignore, flipped by the input's own bytes.
	u8 m[XIW_RX_PEEK_LEN];
	std::memcpy(m, h, sizeof(m));
	const u8 x = size > XIW_RX_PEEK_LEN ? data[XIW_RX_PEEK_LEN] : 0xff;
	m[2] ^= x & XIW_DDP_RSVD_MASK;
	m[3] ^= x & XIW_RDMAP_RSV_MASK;
	for (size_t i = 4; i < (m[2] & XIW_DDP_T ? 16U : 8U); i++)
		m[i] ^= size > XIW_RX_PEEK_LEN + i ?
				data[XIW_RX_PEEK_LEN + i] : 0xa5;
	FUZZ_ASSERT(check_hdr(m, XIW_OPMASK_ALL) == all,
		    "verdict depends on a reserved or unchecked field");

	// Control-byte codec: decode then encode is the identity (Rsv aside).
	const int op = xiw_rdmap_opcode(h[3]);
	if (op >= 0) {
		FUZZ_ASSERT(op < XIW_RDMAP_OP_COUNT);
		const u8 back = xiw_rdmap_ctrl(op);
		FUZZ_ASSERT(back == (h[3] & ~XIW_RDMAP_RSV_MASK),
			    "ctrl %#x -> op %d -> %#x", h[3], op, back);
	}
	round_trip(data, size);

	// The opcode table: exactly the logical opcodes have a descriptor,
	// with coherent bounds and a staged header that fits the union.
	const unsigned any = size >= 2 ? get_be16(data) % 0x40 : 0xff;
	const u32 d = xiw_rdmap_op_desc(any);
	FUZZ_ASSERT(!!d == (any < XIW_RDMAP_OP_COUNT), "op %#x", any);
	FUZZ_ASSERT(!!xiw_rx_hdr_len(any) == (any < XIW_RDMAP_OP_COUNT));
	if (d) {
		FUZZ_ASSERT(XIW_OPD_MIN(d) <= XIW_OPD_MAX(d));
		FUZZ_ASSERT(xiw_rx_hdr_len(any) <= sizeof(union xiw_fpdu_hdr));
		FUZZ_ASSERT(XIW_OPD_QN(d) < XIW_QN_COUNT);
	}
	return 0;
}
