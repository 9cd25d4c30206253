// SPDX-License-Identifier: GPL-2.0
// fuzz_mpa: the MPA layer of kernel/xiw_wire.h: Request/Reply frames with
// the RFC 6581 block and private data, FPDU framing lengths and the CRC.
//
// The kernel reads MPA Request/Reply frames in kernel/xiw_cm.c
// (xiw_cep_recv_rr(), xiw_cep_proc_request(), xiw_cep_proc_reply()), which
// need sockets and the iw_cm. The header check is the kernel's own
// xiw_mpa_rr_check() (key, PD_Length), which xiw_cep_recv_rr() calls; the
// RFC 6581 block is read with the wire definitions (struct xiw_mpa_v2,
// flags, limits) as the proc functions read it. The harness also checks
// the pure functions the kernel shares: xiw_mpa_pad(), xiw_mpa_fpdu_len(),
// xiw_mpa_mulpdu(), xiw_mpa_mulpdu_markers(), xiw_ddp_max_payload(),
// xiw_crc_update() and xiw_crc_trailer().
//
// Input: an MPA Request or Reply (20-byte header, private data) and
// whatever follows it on the stream (the corpus: real xiw frames).
//
// Properties:
//  - a frame accepted by the kernel's rules (right key, PD_Length <= 512,
//    an enhanced one with PD_Length >= 4) has a private data length
//    consistent with the bytes present, and the ULP's private data after
//    the RFC 6581 block never starts beyond its end;
//  - IRD/ORD and the P2P/RTR bits decode to the 14-bit values and flags
//    they were encoded from; encode (as xiw_cep_send_rr() lays the frame
//    out) then parse gives back every field and the private data;
//  - framing, for every MSS the input names: the pad makes the FPDU
//    4-aligned, MULPDU is the largest ULPDU whose FPDU fits the MSS (and
//    at most XIW_MPA_ULPDU_MAX), DDP payload + header <= MULPDU;
//  - CRC: xiw_crc_update() over any split equals one pass and equals a
//    bit-at-a-time CRC32c; the trailer is its inverse, little-endian.
#include "fuzz_common.h"

using namespace xfuzz;

namespace {

struct Rr {
	bool request;
	u8 flags;
	u8 rev;
	u16 pd_len;
	bool enhanced;
	u16 ird, ord; // raw 16-bit fields of the RFC 6581 block
	std::vector<u8> ulp_pd;
};

// The checks of xiw_cep_recv_rr() and the block handling of
// xiw_cep_proc_request() / xiw_cep_proc_reply(), on wire definitions.
bool parse_rr(const u8 *p, size_t n, bool request, Rr *out)
{
	const size_t hlen = sizeof(struct xiw_mpa_rr);

	if (n < hlen)
		return false;
	Exact hdr(p, hlen, hlen);
	const auto *rr = reinterpret_cast<const struct xiw_mpa_rr *>(
		hdr.data());
	u16 pd_len = 0xdead;
	// the kernel's own check (xiw_cep_recv_rr())
	const int rv = xiw_mpa_rr_check(rr, request, &pd_len);
	FUZZ_ASSERT(pd_len == get_be16(p + 18));
	FUZZ_ASSERT(rv == 0 || rv == -EPROTO || rv == -EMSGSIZE);
	FUZZ_ASSERT((rv == -EPROTO) ==
		    !!std::memcmp(p, request ? XIW_MPA_KEY_REQ :
				  XIW_MPA_KEY_REP, XIW_MPA_KEY_LEN));
	if (rv)
		return false;
	FUZZ_ASSERT(pd_len <= XIW_MPA_PD_MAX);
	if (n < hlen + pd_len)
		return false; // the kernel waits for the rest
	out->request = request;
	out->flags = rr->flags;
	out->rev = rr->rev;
	out->pd_len = pd_len;
	out->enhanced = rr->rev == XIW_MPA_REV2 &&
			(rr->flags & XIW_MPA_FLAG_ENHANCED);
	// The kernel's cep->pdata is XIW_MPA_PD_MAX bytes.
	Exact pdata(p + hlen, pd_len, XIW_MPA_PD_MAX);
	const u8 *pd = pdata.data();
	u16 left = pd_len;
	if (out->enhanced) {
		if (left < sizeof(struct xiw_mpa_v2))
			return false;
		const auto *v2 = reinterpret_cast<const struct xiw_mpa_v2 *>(pd);
		out->ird = be16_to_cpu(v2->ird);
		out->ord = be16_to_cpu(v2->ord);
		pd += sizeof(*v2);
		left -= sizeof(*v2);
	}
	FUZZ_ASSERT(pd + left <= pdata.data() + pd_len);
	FUZZ_ASSERT(left <= XIW_MPA_PD_MAX);
	out->ulp_pd.assign(pd, pd + left);
	return true;
}

// Lay a frame out as xiw_cep_send_rr() does: header, block, private data.
std::vector<u8> encode_rr(bool request, u8 flags, u8 rev, const u16 *irdord,
			  const u8 *pd, u16 pd_len)
{
	struct xiw_mpa_rr rr = {};
	std::vector<u8> f;

	std::memcpy(rr.key, request ? XIW_MPA_KEY_REQ : XIW_MPA_KEY_REP,
		    XIW_MPA_KEY_LEN);
	rr.flags = flags;
	rr.rev = rev;
	rr.pd_len = cpu_to_be16((irdord ? sizeof(struct xiw_mpa_v2) : 0) +
				pd_len);
	f.insert(f.end(), reinterpret_cast<u8 *>(&rr),
		 reinterpret_cast<u8 *>(&rr) + sizeof(rr));
	if (irdord) {
		struct xiw_mpa_v2 v2 = { cpu_to_be16(irdord[0]),
					 cpu_to_be16(irdord[1]) };
		f.insert(f.end(), reinterpret_cast<u8 *>(&v2),
			 reinterpret_cast<u8 *>(&v2) + sizeof(v2));
	}
	f.insert(f.end(), pd, pd + pd_len);
	return f;
}

void check_frame(const u8 *data, size_t size)
{
	for (bool request : { true, false }) {
		Rr r;

		if (!parse_rr(data, size, request, &r))
			continue;
		const u16 ird = r.ird & XIW_MPA_V2_IRD_ORD_MASK;
		const u16 ord = r.ord & XIW_MPA_V2_IRD_ORD_MASK;
		if (r.enhanced) {
			FUZZ_ASSERT(ird <= 0x3fff && ord <= 0x3fff);
			FUZZ_ASSERT((r.ird & ~XIW_MPA_V2_IRD_ORD_MASK) ==
				    (r.ird & (XIW_MPA_V2_P2P |
					      XIW_MPA_V2_RTR_SEND)));
			FUZZ_ASSERT((r.ord & ~XIW_MPA_V2_IRD_ORD_MASK) ==
				    (r.ord & (XIW_MPA_V2_RTR_WRITE |
					      XIW_MPA_V2_RTR_READ)));
			FUZZ_ASSERT(r.ulp_pd.size() + 4 == r.pd_len);
		} else {
			FUZZ_ASSERT(r.ulp_pd.size() == r.pd_len);
		}
		// Re-encode what was parsed: identical bytes.
		const u16 io[2] = { r.ird, r.ord };
		std::vector<u8> again = encode_rr(request, r.flags, r.rev,
						  r.enhanced ? io : nullptr,
						  r.ulp_pd.data(),
						  u16(r.ulp_pd.size()));
		FUZZ_ASSERT(again.size() == 20U + r.pd_len);
		FUZZ_ASSERT(!std::memcmp(again.data(), data, again.size()),
			    "re-encoded MPA frame differs");
	}
}

// Encode then parse, from fields the input chooses.
void round_trip(const u8 *data, size_t size)
{
	if (size < 8)
		return;
	const bool request = data[0] & 1;
	const u8 flags = data[1];
	const u8 rev = data[0] & 2 ? XIW_MPA_REV2 : XIW_MPA_REV1;
	const bool enh = rev == XIW_MPA_REV2 && (flags & XIW_MPA_FLAG_ENHANCED);
	const u16 io[2] = { get_be16(data + 2), get_be16(data + 4) };
	const u16 max = enh ? XIW_MPA_PD_MAX - 4 : XIW_MPA_PD_MAX;
	const u16 pd_len = std::min<size_t>(size - 6, max);
	std::vector<u8> f = encode_rr(request, flags, rev, enh ? io : nullptr,
				      data + 6, pd_len);
	Rr r;

	FUZZ_ASSERT(!parse_rr(f.data(), f.size(), !request, &r),
		    "a Request key also matches the Reply key");
	FUZZ_ASSERT(parse_rr(f.data(), f.size(), request, &r));
	FUZZ_ASSERT(r.flags == flags && r.rev == rev && r.enhanced == enh);
	if (enh)
		FUZZ_ASSERT(r.ird == io[0] && r.ord == io[1]);
	FUZZ_ASSERT(r.ulp_pd.size() == pd_len &&
		    !std::memcmp(r.ulp_pd.data(), data + 6, pd_len));
	// One byte short: never complete.
	FUZZ_ASSERT(!parse_rr(f.data(), f.size() - 1, request, &r));
}

void check_framing(u32 mss)
{
	for (u32 len : { mss & 0xffff, mss >> 16, mss }) {
		const u32 pad = xiw_mpa_pad(len);
		FUZZ_ASSERT(pad < 4 && (XIW_MPA_HDR_LEN + len + pad) % 4 == 0);
		if (len <= 0xffff)
			FUZZ_ASSERT(xiw_mpa_fpdu_len(len) ==
				    XIW_MPA_HDR_LEN + len + pad +
					    XIW_MPA_CRC_LEN);
	}
	const u32 m = xiw_mpa_mulpdu(mss);
	if (mss < XIW_MPA_MIN_FPDU) {
		FUZZ_ASSERT(m == 0);
	} else {
		FUZZ_ASSERT(m <= XIW_MPA_ULPDU_MAX);
		FUZZ_ASSERT(xiw_mpa_fpdu_len(m) <= mss, "mss %u mulpdu %u", mss,
			    m);
		// Largest: one more octet no longer fits (unless capped).
		if (m < XIW_MPA_ULPDU_MAX)
			FUZZ_ASSERT(xiw_mpa_fpdu_len(m + 1) > mss,
				    "mss %u: mulpdu %u not maximal", mss, m);
	}
	for (bool tagged : { true, false }) {
		const u32 h = tagged ? XIW_DDP_TAGGED_HDR_LEN :
				       XIW_DDP_UNTAGGED_HDR_LEN;
		const u32 pl = xiw_ddp_max_payload(mss, tagged);
		FUZZ_ASSERT(pl == 0 || pl + h <= m);
		FUZZ_ASSERT(pl > 0 || m <= h);
	}
	// Markers (reference only): TCP MSS and EMSS are 16-bit quantities.
	const u32 emss = mss & 0xffff;
	const u32 mk = xiw_mpa_mulpdu_markers(emss);
	const u32 ovh = 6 + 4 * ((emss + 511) / 512) + emss % 4;
	FUZZ_ASSERT(mk == (emss > ovh ? emss - ovh : 0));
	FUZZ_ASSERT(mk < emss || emss == 0);
}

void check_crc(const u8 *data, size_t size)
{
	const u32 one = xiw_crc_update(XIW_CRC32C_SEED, data, size);
	FUZZ_ASSERT(one == crc32c_bitwise(XIW_CRC32C_SEED, data, size));
	const size_t cut = size ? data[0] % (size + 1) : 0;
	const u32 two = xiw_crc_update(xiw_crc_update(XIW_CRC32C_SEED, data,
						      cut),
				       data + cut, size - cut);
	FUZZ_ASSERT(one == two, "split CRC differs");
	const __le32 t = xiw_crc_trailer(one);
	u8 b[4];
	std::memcpy(b, &t, 4);
	const u32 inv = ~one;
	FUZZ_ASSERT(b[0] == (inv & 0xff) && b[3] == inv >> 24,
		    "trailer is not little-endian ~crc");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_frame(data, size);
	round_trip(data, size);
	if (size >= 4)
		check_framing(get_be32(data + size - 4));
	if (size >= 2)
		check_framing(get_be16(size >= 20 ? data + 18 : data));
	check_crc(data, size);
	return 0;
}
