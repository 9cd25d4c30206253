// SPDX-License-Identifier: GPL-2.0
// CRC32c known answers (RFC 3720 B.4) through the function the kernel
// uses, and the MPA trailer byte order.
#include "rfc3720_vectors.h"
#include "wire_test.h"

namespace {

u32 crc_value(const Bytes &b)
{
	return ~xiw_crc_update(XIW_CRC32C_SEED, b.data(), b.size());
}

Bytes trailer(const Bytes &b)
{
	return bytes_of(xiw_crc_trailer(
		xiw_crc_update(XIW_CRC32C_SEED, b.data(), b.size())));
}

TEST(Crc32c, Rfc3720Values)
{
	for (const auto &v : rfc3720_vectors())
		EXPECT_EQ(crc_value(v.data), v.value) << v.name;
}

// The trailer bytes on the wire are exactly what RFC 3720 B.4 prints:
// least significant byte first.
TEST(Crc32c, TrailerByteOrderMatchesRfc3720)
{
	for (const auto &v : rfc3720_vectors())
		EXPECT_BYTES(trailer(v.data), v.wire) << v.name;
}

TEST(Crc32c, CheckValue)
{
	const char *s = "123456789";
	EXPECT_EQ(crc_value(Bytes(s, s + 9)), 0xe3069283u);
	EXPECT_EQ(crc_value(Bytes()), 0u);
	EXPECT_EQ(crc32c(0, "", 0), 0u);
}

TEST(Crc32c, IncrementalEqualsOneShot)
{
	Bytes b(61);
	for (size_t i = 0; i < b.size(); i++)
		b[i] = u8(i * 37 + 11);
	u32 whole = xiw_crc_update(XIW_CRC32C_SEED, b.data(), b.size());
	for (size_t cut = 0; cut <= b.size(); cut++) {
		u32 c = xiw_crc_update(XIW_CRC32C_SEED, b.data(), cut);
		c = xiw_crc_update(c, b.data() + cut, b.size() - cut);
		EXPECT_EQ(c, whole) << cut;
	}
}

// With the trailer appended least significant byte first, running the
// CRC over data + trailer always ends in the CRC32c residue 0xb798b438;
// a big-endian trailer would not. A receiver may use either check.
TEST(Crc32c, ResidueOverTrailer)
{
	for (const auto &v : rfc3720_vectors()) {
		Bytes b = v.data;
		Bytes t = trailer(b);
		b.insert(b.end(), t.begin(), t.end());
		EXPECT_EQ(xiw_crc_update(XIW_CRC32C_SEED, b.data(), b.size()),
			  0xb798b438u)
			<< v.name;
		std::swap(b[b.size() - 1], b[b.size() - 4]);
		std::swap(b[b.size() - 2], b[b.size() - 3]);
		EXPECT_NE(xiw_crc_update(XIW_CRC32C_SEED, b.data(), b.size()),
			  0xb798b438u)
			<< v.name;
	}
}

// A complete untagged Send FPDU ("hello"): CRC covers MPA length, DDP
// header, payload and the 3 pad bytes. Reference computed independently
// (bitwise CRC32c).
TEST(MpaCrc, KnownSendFpdu)
{
	Bytes expect = {
		0x00, 0x17, 0x41, 0x43, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
		0x00, 0x00, 0x00, 0x00, 0x68, 0x65, 0x6c, 0x6c,
		0x6f, 0x00, 0x00, 0x00, 0xb9, 0x90, 0xb1, 0x0c,
	};
	Bytes body(expect.begin(), expect.end() - 4);
	EXPECT_EQ(crc_value(body), 0x0cb190b9u);
	EXPECT_BYTES(trailer(body), Bytes(expect.end() - 4, expect.end()));
	// Without the pad the CRC differs: pad is covered.
	Bytes nopad(expect.begin(), expect.begin() + 25);
	EXPECT_NE(crc_value(nopad), 0x0cb190b9u);
	EXPECT_BYTES(finish_fpdu(Bytes(expect.begin(), expect.begin() + 25)),
		     expect);
}

} // namespace
