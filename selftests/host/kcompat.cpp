// SPDX-License-Identifier: GPL-2.0
// Host implementation of the kernel's crc32c(): byte-wise, table-driven.
#include "kcompat.h"

#include <array>

namespace {

constexpr std::array<u32, 256> make_table()
{
	std::array<u32, 256> t{};
	for (u32 i = 0; i < 256; i++) {
		u32 c = i;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ ((c & 1) ? 0x82f63b78U : 0);
		t[i] = c;
	}
	return t;
}

constexpr std::array<u32, 256> table = make_table();

} // namespace

u32 crc32c(u32 crc, const void *p, size_t len)
{
	const u8 *b = static_cast<const u8 *>(p);

	while (len--)
		crc = table[(crc ^ *b++) & 0xff] ^ (crc >> 8);
	return crc;
}
