// SPDX-License-Identifier: GPL-2.0
// Shared helpers for the xiw_wire.h host tests.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "xiw_wire.h"

using Bytes = std::vector<u8>;

template <typename T> Bytes bytes_of(const T &v, size_t len = sizeof(T))
{
	const u8 *p = reinterpret_cast<const u8 *>(&v);
	return Bytes(p, p + len);
}

inline std::string hex(const Bytes &b)
{
	static const char d[] = "0123456789abcdef";
	std::string s;
	for (size_t i = 0; i < b.size(); i++) {
		if (i)
			s += (i % 16) ? ' ' : '\n';
		s += d[b[i] >> 4];
		s += d[b[i] & 15];
	}
	return s;
}

#define EXPECT_BYTES(actual, expected) \
	EXPECT_EQ(hex(actual), hex(expected))

// Complete FPDU around a header+payload image that starts with the MPA
// length field (which must already be set): pad and CRC appended.
inline Bytes finish_fpdu(Bytes b)
{
	u32 ulpdu = (u32(b[0]) << 8) | b[1];
	b.resize(XIW_MPA_HDR_LEN + ulpdu + xiw_mpa_pad(ulpdu), 0);
	__le32 t = xiw_crc_trailer(xiw_crc_update(XIW_CRC32C_SEED, b.data(),
						  b.size()));
	Bytes tb = bytes_of(t);
	b.insert(b.end(), tb.begin(), tb.end());
	return b;
}
