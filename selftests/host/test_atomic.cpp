// SPDX-License-Identifier: GPL-2.0
// RFC 7306 masked FetchAdd / CmpSwap against bit-by-bit reference models.
#include "wire_test.h"

#include <random>

namespace {

// RFC 7306 section 5.1.1 pseudocode, transcribed literally.
u64 ref_fadd(u64 orig, u64 add, u64 mask)
{
	u64 bit_location = 1, carry = 0, result = 0;
	for (int bit = 0; bit < 64; bit++) {
		if (bit != 0)
			bit_location <<= 1;
		u64 val1 = (orig & bit_location) >> bit;
		u64 val2 = (add & bit_location) >> bit;
		u64 sum = carry + val1 + val2;
		carry = (sum & 2) >> 1;
		sum &= 1;
		if (sum)
			result |= bit_location;
		carry = carry && !(mask & bit_location);
	}
	return result;
}

// RFC 7306 section 5.1.2 semantics, bit by bit.
u64 ref_cswap(u64 orig, u64 cmp, u64 cmp_mask, u64 swap, u64 swap_mask)
{
	for (int b = 0; b < 64; b++) {
		u64 m = 1ULL << b;
		if ((cmp_mask & m) && ((cmp & m) != (orig & m)))
			return orig;
	}
	u64 r = 0;
	for (int b = 0; b < 64; b++) {
		u64 m = 1ULL << b;
		r |= (swap_mask & m) ? (swap & m) : (orig & m);
	}
	return r;
}

TEST(MaskedFetchAdd, MaskZeroIsPlainAdd)
{
	EXPECT_EQ(xiw_masked_fadd(1, 2, 0), 3u);
	EXPECT_EQ(xiw_masked_fadd(~0ULL, 1, 0), 0u);
	EXPECT_EQ(xiw_masked_fadd(0x00000000ffffffffULL, 1, 0),
		  0x0000000100000000ULL);
	EXPECT_EQ(xiw_masked_fadd(0x8000000000000000ULL, 0x8000000000000000ULL,
				  0), 0u);
	EXPECT_EQ(xiw_masked_fadd(0x123456789abcdef0ULL, 0x0fedcba987654321ULL,
				  0), 0x2222222222222211ULL);
}

// Bit 63 as the only boundary changes nothing: its carry-out is lost
// anyway.
TEST(MaskedFetchAdd, TopBitBoundaryIsPlainAdd)
{
	const u64 m = 0x8000000000000000ULL;
	EXPECT_EQ(xiw_masked_fadd(~0ULL, 1, m), 0u);
	EXPECT_EQ(xiw_masked_fadd(0x7fffffffffffffffULL, 1, m),
		  0x8000000000000000ULL);
}

// Every bit its own field: no carries at all.
TEST(MaskedFetchAdd, AllOnesMaskIsXor)
{
	EXPECT_EQ(xiw_masked_fadd(0xff00ff00ff00ff00ULL, 0x0ff00ff00ff00ff0ULL,
				  ~0ULL), 0xf0f0f0f0f0f0f0f0ULL);
	EXPECT_EQ(xiw_masked_fadd(~0ULL, ~0ULL, ~0ULL), 0u);
	EXPECT_EQ(xiw_masked_fadd(1, 1, ~0ULL), 0u);
}

TEST(MaskedFetchAdd, TwoIndependent32BitFields)
{
	const u64 m = 0x8000000080000000ULL;
	// Low field wraps to 0 without carrying into the high field.
	EXPECT_EQ(xiw_masked_fadd(0x00000001ffffffffULL, 0x0000000100000001ULL,
				  m), 0x0000000200000000ULL);
	EXPECT_EQ(xiw_masked_fadd(0xffffffffffffffffULL, 0x0000000100000001ULL,
				  m), 0u);
	EXPECT_EQ(xiw_masked_fadd(0x7fffffff7fffffffULL, 0x0000000100000001ULL,
				  m), 0x8000000080000000ULL);
}

TEST(MaskedFetchAdd, EightByteFields)
{
	const u64 m = 0x8080808080808080ULL;
	EXPECT_EQ(xiw_masked_fadd(0xff01ff01ff01ff01ULL, 0x0101010101010101ULL,
				  m), 0x0002000200020002ULL);
	EXPECT_EQ(xiw_masked_fadd(0x80ff7f0001020304ULL, 0x8001810001010101ULL,
				  m), 0x0000000002030405ULL);
}

TEST(MaskedFetchAdd, UnevenFields)
{
	// Fields: bits 0-15 and 16-63.
	const u64 m = 0x0000000000008000ULL;
	EXPECT_EQ(xiw_masked_fadd(0x000000000000ffffULL, 1, m), 0u);
	EXPECT_EQ(xiw_masked_fadd(0x000000000001ffffULL, 0x10001ULL, m),
		  0x0000000000020000ULL);
	// Fields: bits 0-3, 4-62 (boundary 62), 63 alone.
	const u64 m2 = 0x4000000000000008ULL | 0x8000000000000000ULL;
	EXPECT_EQ(xiw_masked_fadd(0xffffffffffffffffULL, 0x11, m2),
		  0x8000000000000000ULL);
	EXPECT_EQ(xiw_masked_fadd(0xffffffffffffffffULL, 0x8000000000000011ULL,
				  m2), 0u);
}

TEST(MaskedFetchAdd, AddZeroLeavesValue)
{
	std::mt19937_64 rng(7);
	for (int i = 0; i < 10000; i++) {
		u64 o = rng(), m = rng();
		ASSERT_EQ(xiw_masked_fadd(o, 0, m), o);
	}
}

// Exhaustive over the low 6 bits of every operand (upper bits 0 and,
// separately, upper bits 1 so carries enter and leave the window).
TEST(MaskedFetchAdd, ExhaustiveLowBitsMatchReference)
{
	for (u64 hi : { 0ULL, ~0ULL << 6 })
		for (u64 o = 0; o < 64; o++)
			for (u64 a = 0; a < 64; a++)
				for (u64 m = 0; m < 64; m++) {
					u64 oo = o | hi, mm = m | (hi & 0x5555555555555540ULL);
					ASSERT_EQ(xiw_masked_fadd(oo, a, mm),
						  ref_fadd(oo, a, mm))
						<< oo << " " << a << " " << mm;
				}
}

TEST(MaskedFetchAdd, RandomMatchesReference)
{
	std::mt19937_64 rng(0x786977);
	for (int i = 0; i < 200000; i++) {
		u64 o = rng(), a = rng(), m;
		switch (i % 4) {
		case 0: m = rng(); break;
		case 1: m = rng() & rng() & rng(); break; // sparse boundaries
		case 2: m = 0; break;
		default: m = 1ULL << (rng() % 64); break;
		}
		ASSERT_EQ(xiw_masked_fadd(o, a, m), ref_fadd(o, a, m))
			<< o << " " << a << " " << m;
	}
}

TEST(MaskedCmpSwap, Unmasked)
{
	EXPECT_EQ(xiw_masked_cswap(5, 5, ~0ULL, 9, ~0ULL), 9u);
	EXPECT_EQ(xiw_masked_cswap(5, 6, ~0ULL, 9, ~0ULL), 5u);
	EXPECT_EQ(xiw_masked_cswap(0x8000000000000000ULL, 0, ~0ULL, 1, ~0ULL),
		  0x8000000000000000ULL);
}

TEST(MaskedCmpSwap, MaskedCompareAndSwap)
{
	// Compare only the high byte of the low half-word, swap the low byte.
	EXPECT_EQ(xiw_masked_cswap(0x1234, 0x12ff, 0xff00, 0xabcd, 0x00ff),
		  0x12cdu);
	EXPECT_EQ(xiw_masked_cswap(0x1234, 0x13ff, 0xff00, 0xabcd, 0x00ff),
		  0x1234u);
	// Compare mask 0 always matches.
	EXPECT_EQ(xiw_masked_cswap(0xdead, 0xbeef, 0, 0x1111, ~0ULL), 0x1111u);
	// Swap mask 0 never changes memory.
	EXPECT_EQ(xiw_masked_cswap(0xdead, 0xdead, ~0ULL, 0x1111, 0), 0xdeadu);
	// Swap bits outside the mask are ignored.
	EXPECT_EQ(xiw_masked_cswap(0xffff000000000000ULL, 0, 0xffffULL,
				   0x0123456789abcdefULL, 0x00000000ffffffffULL),
		  0xffff000089abcdefULL);
}

TEST(MaskedCmpSwap, RandomMatchesReference)
{
	std::mt19937_64 rng(42);
	for (int i = 0; i < 200000; i++) {
		u64 o = rng(), cm = rng(), s = rng(), sm = rng();
		// Half the cases compare equal under the mask.
		u64 c = (i & 1) ? ((o & cm) | (rng() & ~cm)) : rng();
		ASSERT_EQ(xiw_masked_cswap(o, c, cm, s, sm),
			  ref_cswap(o, c, cm, s, sm));
	}
}

} // namespace
