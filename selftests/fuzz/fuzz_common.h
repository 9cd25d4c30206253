// SPDX-License-Identifier: GPL-2.0
// Shared helpers of the libFuzzer harnesses over kernel/xiw_wire.h, which
// they compile unchanged through the host tests' shim (selftests/host/
// kcompat.h), exactly as selftests/host does.
#pragma once

#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include "kcompat.h"
#include "xiw_wire.h"

namespace xfuzz {

// A violated property: print it and abort, so libFuzzer stores the input
// as a crash artifact (crash-<sha1>) and the run fails.
[[noreturn]] inline void fail(const char *file, int line, const char *cond,
			      const char *fmt = nullptr, ...)
	__attribute__((format(printf, 4, 5)));

[[noreturn]] inline void fail(const char *file, int line, const char *cond,
			      const char *fmt, ...)
{
	std::fprintf(stderr, "\n==xiw-fuzz== property violated at %s:%d: %s\n",
		     file, line, cond);
	if (fmt) {
		va_list ap;

		va_start(ap, fmt);
		std::fputs("==xiw-fuzz== ", stderr);
		std::vfprintf(stderr, fmt, ap);
		std::fputc('\n', stderr);
		va_end(ap);
	}
	std::abort();
}

#define FUZZ_ASSERT(cond, ...)                                                 \
	do {                                                                   \
		if (!(cond))                                                   \
			::xfuzz::fail(__FILE__, __LINE__, #cond __VA_OPT__(, ) \
					      __VA_ARGS__);                    \
	} while (0)

// Bytes in an allocation of exactly their size, so AddressSanitizer
// reports any read past what a check may touch.
class Exact {
public:
	Exact(const u8 *p, size_t n, size_t size)
		: buf_(new u8[size]), size_(size)
	{
		std::memset(buf_.get(), 0, size);
		std::memcpy(buf_.get(), p, n < size ? n : size);
	}
	u8 *data() { return buf_.get(); }
	const u8 *data() const { return buf_.get(); }
	size_t size() const { return size_; }

private:
	std::unique_ptr<u8[]> buf_;
	size_t size_;
};

inline u16 get_be16(const u8 *p) { return u16(p[0] << 8 | p[1]); }
inline u32 get_be32(const u8 *p)
{
	return u32(p[0]) << 24 | u32(p[1]) << 16 | u32(p[2]) << 8 | p[3];
}

// Bit-at-a-time CRC32c (reflected 0x82f63b78), independent of the shim's
// table-driven crc32c(): the reference the wire CRC is compared with.
inline u32 crc32c_bitwise(u32 crc, const u8 *p, size_t n)
{
	while (n--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82f63b78U & (0U - (crc & 1)));
	}
	return crc;
}

// The receive opcode set of kernel/xiw_rx.c (XIW_RX_OPS is this).
constexpr u32 kKernelRxOps = XIW_OPMASK_RX;

constexpr u8 kHdrctMD = XIW_TERM_HDRCT_M | XIW_TERM_HDRCT_D;

// A Terminate code that xiw_rx_check_hdr() / xiw_atomic_req_check() may
// produce: a defined layer, an error type and code of that layer, and
// header-copy bits where R implies D and D implies M.
inline bool term_code_plausible(const xiw_term_code &tc)
{
	if (tc.hdrct & ~(XIW_TERM_HDRCT_M | XIW_TERM_HDRCT_D |
			 XIW_TERM_HDRCT_R))
		return false;
	if ((tc.hdrct & XIW_TERM_HDRCT_R) && !(tc.hdrct & XIW_TERM_HDRCT_D))
		return false;
	if ((tc.hdrct & XIW_TERM_HDRCT_D) && !(tc.hdrct & XIW_TERM_HDRCT_M))
		return false;
	switch (tc.layer) {
	case XIW_TERM_LAYER_RDMAP:
		return tc.etype == XIW_RDMAP_ET_REMOTE_OP &&
		       (tc.ecode == XIW_RDMAP_EC_VERSION ||
			tc.ecode == XIW_RDMAP_EC_OPCODE ||
			tc.ecode == XIW_RDMAP_EC_CATASTROPHIC_STREAM);
	case XIW_TERM_LAYER_DDP:
		if (tc.etype == XIW_DDP_ET_TAGGED)
			return tc.ecode == XIW_DDP_EC_T_VERSION;
		return tc.etype == XIW_DDP_ET_UNTAGGED &&
		       (tc.ecode == XIW_DDP_EC_UT_INV_QN ||
			tc.ecode == XIW_DDP_EC_UT_INV_MO ||
			tc.ecode == XIW_DDP_EC_UT_TOO_LONG ||
			tc.ecode == XIW_DDP_EC_UT_VERSION);
	case XIW_TERM_LAYER_LLP:
		return tc.etype == XIW_MPA_ET_MPA &&
		       tc.ecode == XIW_MPA_EC_MARKER_LEN;
	default:
		return false;
	}
}

inline bool term_code_eq(const xiw_term_code &a, const xiw_term_code &b)
{
	return a.layer == b.layer && a.etype == b.etype &&
	       a.ecode == b.ecode && a.hdrct == b.hdrct;
}

// Result of one xiw_rx_check_hdr() call on an exact XIW_RX_PEEK_LEN copy.
struct Check {
	bool ok;
	unsigned op;
	xiw_term_code tc;

	bool operator==(const Check &o) const
	{
		return ok == o.ok &&
		       (ok ? op == o.op : term_code_eq(tc, o.tc));
	}
};

inline Check check_hdr(const u8 *hdr, u32 op_mask)
{
	Exact peek(hdr, XIW_RX_PEEK_LEN, XIW_RX_PEEK_LEN);
	Check r = { false, 0xdeadU, { 0xee, 0xee, 0xee, 0xee } };

	r.ok = xiw_rx_check_hdr(peek.data(), op_mask, &r.op, &r.tc);
	return r;
}

} // namespace xfuzz
