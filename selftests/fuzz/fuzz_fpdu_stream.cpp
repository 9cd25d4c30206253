// SPDX-License-Identifier: GPL-2.0
// fuzz_fpdu_stream: FPDU delineation and segment reassembly of a received
// byte stream, driven by kernel/xiw_wire.h as the kernel's receive engine
// (kernel/xiw_rx.c, which needs sockets) walks it: the header is staged
// in the steps the kernel's own xiw_rx_hdr_next() asks for (the 4-byte
// FPDU control, the DDP header judged by xiw_rx_check_hdr(), the RDMAP
// header of the opcode; a Terminate or Verify: the whole segment), then
// payload, pad and CRC with xiw_mpa_pad() and the running
// xiw_crc_update() / xiw_crc_trailer(), as xiw_rx_hdr_done() and
// xiw_rx_trailer_done() do.
//
// Input: one control byte (bit 0: CRC negotiated; the rest seeds how the
// stream is cut into TCP reads), then the stream after MPA negotiation.
//
// Properties:
//  - RX never stages more header than union xiw_fpdu_hdr holds (the kernel
//    copies into it with no bound of its own) and the payload length
//    derived from an accepted header never underflows;
//  - xiw_rx_check_hdr() reads only the header bytes staged so far (it is
//    given an allocation of exactly that size: a tagged header is 16
//    bytes, less than XIW_RX_PEEK_LEN);
//  - the outcome (accepted FPDUs with opcode, lengths and CRC verdict, and
//    the first error) does not depend on how TCP cut the stream: whole,
//    input-seeded cuts (1 to 1500 bytes) and, up to 512 bytes, one byte
//    at a time all agree;
//  - the running CRC over staged header, payload pieces and pad equals a
//    bit-at-a-time CRC32c of the whole FPDU, and a trailer computed by
//    xiw_crc_trailer() over the FPDU's own bytes is always accepted.
#include "fuzz_common.h"

#include <string>

using namespace xfuzz;

namespace {

enum class Stop { kNone, kShort, kHdr, kCrc };

struct Event {
	unsigned op;
	u32 ulpdu;
	u32 staged;
	u32 payload;
	size_t start; // stream offset of the FPDU
	bool complete; // trailer received and (with CRC) verified
	bool operator==(const Event &) const = default;
};

struct Outcome {
	std::vector<Event> fpdus;
	Stop stop = Stop::kNone;
	xiw_term_code tc = {};
	bool operator==(const Outcome &o) const
	{
		return fpdus == o.fpdus && stop == o.stop &&
		       (stop != Stop::kHdr || term_code_eq(tc, o.tc));
	}
};

class Rx {
public:
	explicit Rx(bool crc) : crc_on_(crc) { reset(0); }

	// One TCP read; false once RX is dead.
	bool feed(const u8 *p, size_t n)
	{
		while (n && !dead_) {
			size_t k;

			switch (state_) {
			case kHdr:
				FUZZ_ASSERT(need_ <= sizeof(hdr_),
					    "staging %u header bytes", need_);
				k = std::min<size_t>(n, need_ - got_);
				std::memcpy(reinterpret_cast<u8 *>(&hdr_) + got_,
					    p, k);
				got_ += k;
				advance(p, n, k);
				if (got_ == need_)
					hdr_step();
				break;
			case kData:
				k = std::min<size_t>(n, data_left_);
				if (crc_on_)
					crc_ = xiw_crc_update(crc_, p, k);
				data_left_ -= k;
				advance(p, n, k);
				if (!data_left_)
					state_ = kTrailer;
				break;
			default:
				k = std::min<size_t>(n, trailer_need_ - trailer_got_);
				std::memcpy(trailer_ + trailer_got_, p, k);
				trailer_got_ += k;
				advance(p, n, k);
				if (trailer_got_ == trailer_need_)
					trailer_done();
				break;
			}
		}
		return !dead_;
	}

	Outcome finish()
	{
		if (!dead_ && (state_ != kHdr || got_))
			out_.stop = Stop::kShort;
		return out_;
	}
	u32 last_crc() const { return crc_; }

private:
	enum { kHdr, kData, kTrailer } state_ = kHdr;
	const bool crc_on_;
	union xiw_fpdu_hdr hdr_ = {};
	u32 got_ = 0, need_ = 0;
	unsigned op_ = 0;
	u32 data_left_ = 0, trailer_got_ = 0, trailer_need_ = 0;
	u8 trailer_[8] = {};
	u32 crc_ = 0;
	size_t pos_ = 0, start_ = 0;
	bool dead_ = false;
	Outcome out_;

	void advance(const u8 *&p, size_t &n, size_t k)
	{
		p += k;
		n -= k;
		pos_ += k;
	}

	u32 ulpdu() const { return be16_to_cpu(hdr_.ctrl.mpa_len); }

	void reset(size_t at)
	{
		state_ = kHdr;
		got_ = 0;
		need_ = sizeof(struct xiw_fpdu_ctrl);
		start_ = at;
	}

	void fail(const xiw_term_code &tc)
	{
		out_.stop = Stop::kHdr;
		out_.tc = tc;
		dead_ = true;
	}

	// The kernel's own step (xiw_rx_hdr_step() calls xiw_rx_hdr_next()).
	void hdr_step()
	{
		// Exactly the bytes staged so far, nothing stale.
		Exact staged(reinterpret_cast<const u8 *>(&hdr_), got_, got_);
		xiw_term_code tc = { 0xee, 0xee, 0xee, 0xee };
		unsigned op = op_;
		u32 need = 0xdeadbeef;

		switch (xiw_rx_hdr_next(staged.data(), got_, kKernelRxOps, &op,
					&need, &tc)) {
		case XIW_RX_HDR_BAD:
			FUZZ_ASSERT(term_code_plausible(tc));
			// only the control field and the DDP header are judged
			FUZZ_ASSERT(got_ == sizeof(struct xiw_fpdu_ctrl) ||
				    got_ == XIW_MPA_HDR_LEN +
					    xiw_ddp_hdr_len(hdr_.ctrl.ddp));
			fail(tc);
			return;
		case XIW_RX_HDR_MORE:
			FUZZ_ASSERT(need > got_, "asks for %u, has %u", need,
				    got_);
			op_ = op;
			need_ = need;
			return;
		case XIW_RX_HDR_DONE:
			op_ = op;
			break;
		}
		// Whole header staged (xiw_rx_hdr_done()).
		FUZZ_ASSERT(need_ <= XIW_MPA_HDR_LEN + ulpdu(),
			    "op %u: staged %u > FPDU %u", op_, need_,
			    XIW_MPA_HDR_LEN + ulpdu());
		data_left_ = ulpdu() + XIW_MPA_HDR_LEN - need_;
		trailer_need_ = xiw_mpa_pad(ulpdu()) + XIW_MPA_CRC_LEN;
		FUZZ_ASSERT(trailer_need_ <= sizeof(trailer_));
		trailer_got_ = 0;
		crc_ = xiw_crc_update(XIW_CRC32C_SEED, &hdr_, need_);
		out_.fpdus.push_back(
			{ op_, ulpdu(), need_, data_left_, start_, false });
		state_ = data_left_ ? kData : kTrailer;
	}

	void trailer_done()
	{
		const u32 pad = trailer_need_ - XIW_MPA_CRC_LEN;

		crc_ = xiw_crc_update(crc_, trailer_, pad);
		if (crc_on_) {
			__le32 want = xiw_crc_trailer(crc_);

			if (std::memcmp(&want, trailer_ + pad, sizeof(want))) {
				out_.stop = Stop::kCrc;
				dead_ = true;
				return;
			}
		}
		out_.fpdus.back().complete = true;
		// A Terminate ends the stream (xiw_rx_term_done()).
		if (op_ == XIW_RDMAP_OP_TERMINATE) {
			dead_ = true;
			return;
		}
		reset(pos_);
	}
};

// Cuts from a small xorshift seeded by the control byte and the length.
Outcome run(const u8 *p, size_t n, bool crc, int mode, u32 seed)
{
	Rx rx(crc);
	size_t off = 0;

	while (off < n) {
		size_t k;

		if (mode == 0) {
			k = n - off;
		} else if (mode == 1) {
			k = 1;
		} else {
			seed ^= seed << 13;
			seed ^= seed >> 17;
			seed ^= seed << 5;
			k = 1 + seed % (seed & 0x100 ? 7 : 1500);
			k = std::min(k, n - off);
		}
		if (!rx.feed(p + off, k))
			break;
		off += k;
	}
	return rx.finish();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const bool crc = data[0] & 1;
	const u8 *s = data + 1;
	const size_t n = size - 1;
	const Outcome whole = run(s, n, crc, 0, 0);

	FUZZ_ASSERT(run(s, n, crc, 2, 0x9e3779b9U ^ data[0] ^ u32(n) << 8) ==
		    whole, "outcome depends on how the stream was cut");
	if (n <= 512)
		FUZZ_ASSERT(run(s, n, crc, 1, 0) == whole,
			    "outcome differs when fed byte by byte");

	// XIW_FUZZ_VERBOSE=1: what RX made of the stream (corpus checks).
	static const bool verbose = std::getenv("XIW_FUZZ_VERBOSE");
	if (verbose) {
		size_t done = 0;
		for (const Event &e : whole.fpdus)
			done += e.complete;
		std::fprintf(stderr, "stream %zu bytes crc %d: %zu FPDUs "
			     "complete, stop %d (term %u/%u/%u)\n", n, crc, done,
			     int(whole.stop), whole.tc.layer, whole.tc.etype,
			     whole.tc.ecode);
	}

	// Every FPDU that passed: the running CRC against a bitwise one.
	for (const Event &e : whole.fpdus) {
		const size_t flen = xiw_mpa_fpdu_len(e.ulpdu);

		if (!e.complete)
			break;
		FUZZ_ASSERT(e.start + flen <= n);
		const size_t covered = flen - XIW_MPA_CRC_LEN;
		const u32 ref = ~crc32c_bitwise(0xffffffffU, s + e.start,
						covered);
		const __le32 t = xiw_crc_trailer(
			xiw_crc_update(XIW_CRC32C_SEED, s + e.start, covered));
		FUZZ_ASSERT(le32_to_cpu(t) == ref);
		if (crc)
			FUZZ_ASSERT(!std::memcmp(&t, s + e.start + covered, 4),
				    "accepted FPDU with a CRC RX did not compute");
		// Re-sealed with its own CRC the FPDU passes with CRC on.
		std::vector<u8> one(s + e.start, s + e.start + flen);
		std::memcpy(one.data() + covered, &t, 4);
		const Outcome o = run(one.data(), one.size(), true, 0, 0);
		FUZZ_ASSERT(o.fpdus.size() == 1 && o.fpdus[0].op == e.op &&
			    o.stop == Stop::kNone, "resealed FPDU refused");
	}
	return 0;
}
