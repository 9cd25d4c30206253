// SPDX-License-Identifier: GPL-2.0
// fuzz_atomic: the RFC 7306 Atomic Request checks and the masked atomic
// arithmetic of kernel/xiw_wire.h (xiw_atomic_req_check(),
// xiw_masked_fadd(), xiw_masked_cswap()), which the responder runs on
// untrusted request fields inside its cmpxchg loop.
//
// Input: an Atomic Request FPDU from its MPA length on (the corpus: the
// FetchAdd and CmpSwap requests xiw sends, masked and plain); any other
// bytes are read as the same fields.
//
// Properties:
//  - the header check accepts an Atomic Request only with the full 52
//    octets of RDMAP header, QN 1, L and MO 0;
//  - xiw_atomic_req_check() accepts exactly AOpCode 0 (FetchAdd) and 2
//    (CmpSwap) in the low 4 bits (upper 28 ignored) with an 8-aligned
//    target, and names Unexpected OpCode before a misalignment, with M|D;
//  - masked FetchAdd equals a bit-serial adder whose carry is dropped out
//    of every field MSB (RFC 7306 section 5.1); mask 0 is a plain 64-bit
//    add, mask ~0 is XOR, and fields never disturb each other;
//  - masked CmpSwap stores only when (orig ^ cmp) & cmp_mask == 0, and
//    then changes exactly the swap_mask bits to swap's.
#include "fuzz_common.h"

using namespace xfuzz;

namespace {

u64 ref_fadd(u64 orig, u64 add, u64 mask)
{
	u64 r = 0, carry = 0;

	for (int i = 0; i < 64; i++) {
		const u64 a = orig >> i & 1, b = add >> i & 1;

		r |= (a ^ b ^ carry) << i;
		carry = (a & b) | (a & carry) | (b & carry);
		if (mask >> i & 1)
			carry = 0; // carry out of a field MSB is discarded
	}
	return r;
}

u64 get_be64(const u8 *p)
{
	return u64(get_be32(p)) << 32 | get_be32(p + 4);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	// Read the request fields from where the FPDU has them.
	const size_t need = sizeof(struct xiw_rdmap_atomic_req);
	Exact f(data, size, need);
	const auto *r = reinterpret_cast<const struct xiw_rdmap_atomic_req *>(
		f.data());
	const u32 aop = be32_to_cpu(r->aopcode);
	const u64 to = be64_to_cpu(r->to);
	const u64 add = be64_to_cpu(r->add_swap);
	const u64 add_mask = be64_to_cpu(r->add_swap_mask);
	const u64 cmp = be64_to_cpu(r->cmp);
	const u64 cmp_mask = be64_to_cpu(r->cmp_mask);
	// The target's current value: the FPDU's STag and TO reused.
	const u64 orig = u64(be32_to_cpu(r->stag)) << 32 ^ to ^ get_be64(
		f.data() + 8);

	const Check c = check_hdr(f.data(), kKernelRxOps);
	if (c.ok && c.op == XIW_RDMAP_OP_ATOMIC_REQ) {
		FUZZ_ASSERT(be16_to_cpu(r->hdr.ctrl.mpa_len) ==
			    XIW_DDP_UNTAGGED_HDR_LEN + XIW_RDMAP_ATOMIC_REQ_LEN);
		FUZZ_ASSERT(be32_to_cpu(r->hdr.qn) == XIW_QN_REQ);
		FUZZ_ASSERT(r->hdr.ctrl.ddp & XIW_DDP_L);
		FUZZ_ASSERT(r->hdr.mo == 0);
		FUZZ_ASSERT(xiw_rx_hdr_len(c.op) == need);
	}

	// Request check.
	xiw_term_code tc = { 0xee, 0xee, 0xee, 0xee };
	const bool ok = xiw_atomic_req_check(aop, to, &tc);
	const u32 low = aop & XIW_AOP_MASK;
	const bool known = low == XIW_AOP_FETCH_ADD || low == XIW_AOP_CMP_SWAP;
	FUZZ_ASSERT(ok == (known && to % XIW_ATOMIC_ALIGN == 0),
		    "aop %#x to %#llx", aop, (unsigned long long)to);
	if (!ok) {
		FUZZ_ASSERT(term_code_plausible(tc));
		FUZZ_ASSERT(tc.layer == XIW_TERM_LAYER_RDMAP &&
			    tc.etype == XIW_RDMAP_ET_REMOTE_OP &&
			    tc.hdrct == kHdrctMD);
		FUZZ_ASSERT(tc.ecode == (known ? XIW_RDMAP_EC_CATASTROPHIC_STREAM
					       : XIW_RDMAP_EC_OPCODE));
	}
	xiw_term_code tc2;
	FUZZ_ASSERT(xiw_atomic_req_check(aop ^ (aop & ~XIW_AOP_MASK), to, &tc2)
		    == ok, "upper AOpCode bits matter");

	// Masked FetchAdd against the bit-serial reference.
	const u64 s = xiw_masked_fadd(orig, add, add_mask);
	FUZZ_ASSERT(s == ref_fadd(orig, add, add_mask),
		    "fadd %#llx + %#llx mask %#llx = %#llx",
		    (unsigned long long)orig, (unsigned long long)add,
		    (unsigned long long)add_mask, (unsigned long long)s);
	FUZZ_ASSERT(xiw_masked_fadd(orig, add, 0) == orig + add);
	FUZZ_ASSERT(xiw_masked_fadd(orig, add, ~0ULL) == (orig ^ add));
	// Fields are independent: changing the addend in one field leaves
	// every bit at or above the next field boundary alone.
	if (add_mask) {
		const int msb = __builtin_ctzll(add_mask); // lowest field MSB
		const u64 field = msb == 63 ? ~0ULL : (2ULL << msb) - 1;
		const u64 s2 = xiw_masked_fadd(orig, add ^ (cmp & field),
					       add_mask);
		FUZZ_ASSERT(((s ^ s2) & ~field) == 0,
			    "a carry crossed a field boundary");
	}

	// Masked CmpSwap.
	const u64 w = xiw_masked_cswap(orig, cmp, cmp_mask, add, add_mask);
	const bool match = ((orig ^ cmp) & cmp_mask) == 0;
	if (!match)
		FUZZ_ASSERT(w == orig);
	else
		FUZZ_ASSERT((w & ~add_mask) == (orig & ~add_mask) &&
			    (w & add_mask) == (add & add_mask));
	FUZZ_ASSERT(xiw_masked_cswap(orig, cmp, 0, add, ~0ULL) == add);
	FUZZ_ASSERT(xiw_masked_cswap(orig, orig, ~0ULL, add, add_mask) ==
		    ((orig & ~add_mask) | (add & add_mask)));
	return 0;
}
