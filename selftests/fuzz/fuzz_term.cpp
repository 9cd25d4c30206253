// SPDX-License-Identifier: GPL-2.0
// fuzz_term: Terminate messages (RFC 5040 section 4.8) as kernel/
// xiw_wire.h parses and sizes them: xiw_term_parse(), xiw_term_ctrl(),
// xiw_term_len() and struct xiw_rdmap_term, behind xiw_rx_check_hdr().
//
// Input: one FPDU from its MPA ULPDU_Length on (the corpus: Terminates
// xiw sends for each error class, with M/D/R header copies, plus the
// other opcodes).
//
// Properties:
//  - a Terminate the header check accepts (QN 2, L, MO 0, RDMAP part 4 to
//    52 octets) is staged whole by RX (2 + ULPDU_Length octets) inside
//    struct xiw_rdmap_term / union xiw_fpdu_hdr, and parsing reads only
//    those staged bytes (exact allocation);
//  - xiw_term_parse() yields a 4-bit layer and type, and xiw_term_ctrl()
//    of the parsed code re-encodes the control word with only the
//    reserved 13 bits cleared; encode then parse is the identity for any
//    code built from the input;
//  - xiw_term_len() for any header-copy bits lies within
//    [XIW_RDMAP_TERM_MIN, XIW_RDMAP_TERM_MAX], grows with M, D, R and the
//    untagged header, and the offending-header copy it implies fits in
//    term_hdrs; for a received Terminate the copied DDP header decides
//    the form, and a well-formed Terminate (length == xiw_term_len())
//    always passes the header check.
#include "fuzz_common.h"

using namespace xfuzz;

namespace {

void check_term_len(u8 hdrct)
{
	for (bool tagged : { true, false }) {
		const u32 len = xiw_term_len(hdrct, tagged);
		FUZZ_ASSERT(len >= XIW_RDMAP_TERM_MIN &&
			    len <= XIW_RDMAP_TERM_MAX, "hdrct %#x len %u",
			    hdrct, len);
		// Copy of the offending header after the segment length.
		if (hdrct & XIW_TERM_HDRCT_D) {
			const u32 copy = len - XIW_RDMAP_TERM_MIN - 2;
			FUZZ_ASSERT(copy <= sizeof(((struct xiw_rdmap_term *)0)
							   ->term_hdrs));
			FUZZ_ASSERT(copy >= XIW_DDP_TAGGED_HDR_LEN);
		}
		FUZZ_ASSERT(XIW_UT_FPDU_HDR_LEN(len) <=
			    sizeof(struct xiw_rdmap_term));
	}
	FUZZ_ASSERT(xiw_term_len(hdrct, false) >= xiw_term_len(hdrct, true));
	FUZZ_ASSERT(xiw_term_len(hdrct | XIW_TERM_HDRCT_M, false) >=
		    xiw_term_len(hdrct, false));
	FUZZ_ASSERT(xiw_term_len(hdrct | XIW_TERM_HDRCT_D, false) >=
		    xiw_term_len(hdrct, false));
	FUZZ_ASSERT(xiw_term_len(hdrct | XIW_TERM_HDRCT_R, false) >=
		    xiw_term_len(hdrct, false));
}

void check_codec(u32 word)
{
	xiw_term_code tc;

	xiw_term_parse(cpu_to_be32(word), &tc);
	FUZZ_ASSERT(tc.layer < 16 && tc.etype < 16);
	FUZZ_ASSERT((tc.hdrct & ~0xe0) == 0);
	FUZZ_ASSERT(be32_to_cpu(xiw_term_ctrl(&tc)) == (word & 0xffffe000U),
		    "ctrl %#x", word);
	// Encode then parse, from a code the input chooses.
	const xiw_term_code in = { u8(word & 0xf), u8(word >> 4 & 0xf),
				   u8(word >> 8), u8(word >> 16 & 0xe0) };
	xiw_term_code out;
	xiw_term_parse(xiw_term_ctrl(&in), &out);
	FUZZ_ASSERT(term_code_eq(in, out));
	check_term_len(tc.hdrct);
}

// A received Terminate, staged as RX stages it.
void check_received(const u8 *data, size_t size)
{
	u8 peek[XIW_RX_PEEK_LEN] = {};
	std::memcpy(peek, data, std::min(size, sizeof(peek)));
	const Check c = check_hdr(peek, kKernelRxOps);
	if (!c.ok || c.op != XIW_RDMAP_OP_TERMINATE)
		return;
	const u32 ulpdu = get_be16(data);
	const u32 staged = XIW_MPA_HDR_LEN + ulpdu;
	FUZZ_ASSERT(staged <= sizeof(struct xiw_rdmap_term));
	FUZZ_ASSERT(staged >= XIW_UT_FPDU_HDR_LEN(XIW_RDMAP_TERM_MIN));
	if (size < staged)
		return; // RX waits for the rest
	Exact t(data, staged, staged);
	const auto *term = reinterpret_cast<const struct xiw_rdmap_term *>(
		t.data());
	xiw_term_code tc;
	xiw_term_parse(term->term_ctrl, &tc);

	const u32 rlen = ulpdu - XIW_DDP_UNTAGGED_HDR_LEN;
	// The form the peer announced, and what of it is present.
	bool tagged = false;
	if ((tc.hdrct & XIW_TERM_HDRCT_D) && rlen > XIW_RDMAP_TERM_MIN + 2)
		tagged = term->term_hdrs[0] & XIW_DDP_T;
	const u32 want = xiw_term_len(tc.hdrct, tagged);
	if (rlen == want && (tc.hdrct & XIW_TERM_HDRCT_D)) {
		// The copied header lies wholly inside what was staged.
		const u8 *end = term->term_hdrs + (want - XIW_RDMAP_TERM_MIN - 2);
		FUZZ_ASSERT(end <= t.data() + staged);
	}
	check_codec(be32_to_cpu(term->term_ctrl));
}

// A well-formed Terminate as xiw sends it is accepted as a Terminate.
void check_built(const u8 *data, size_t size)
{
	if (size < 4)
		return;
	const xiw_term_code tc = { u8(data[0] % 3), u8(data[1] & 0xf), data[2],
				   u8(data[3] & 0xe0) };
	const bool tagged = data[3] & 1;
	const u32 rlen = xiw_term_len(tc.hdrct, tagged);
	struct xiw_rdmap_term t = {};

	t.hdr.ctrl.mpa_len = cpu_to_be16(XIW_DDP_UNTAGGED_HDR_LEN + rlen);
	t.hdr.ctrl.ddp = xiw_ddp_ctrl(false, true);
	t.hdr.ctrl.rdmap = xiw_rdmap_ctrl(XIW_RDMAP_OP_TERMINATE);
	t.hdr.qn = cpu_to_be32(XIW_QN_TERM);
	t.hdr.msn = cpu_to_be32(1);
	t.term_ctrl = xiw_term_ctrl(&tc);
	if (tc.hdrct & XIW_TERM_HDRCT_D)
		t.term_hdrs[0] = xiw_ddp_ctrl(tagged, true);
	const Check c = check_hdr(reinterpret_cast<const u8 *>(&t),
				  kKernelRxOps);
	FUZZ_ASSERT(c.ok && c.op == XIW_RDMAP_OP_TERMINATE,
		    "own Terminate (hdrct %#x, rlen %u) refused", tc.hdrct,
		    rlen);
	xiw_term_code back;
	xiw_term_parse(t.term_ctrl, &back);
	FUZZ_ASSERT(term_code_eq(back, tc));
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_received(data, size);
	if (size >= 24)
		check_codec(get_be32(data + 20));
	else if (size >= 4)
		check_codec(get_be32(data));
	check_built(data, size);
	for (unsigned h = 0; h < 8; h++)
		check_term_len(u8(h << 5));
	return 0;
}
