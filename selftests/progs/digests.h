// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// digests.h: the RDMA Verify digests written out from their
// specifications (CRC32C of RFC 3720, SHA-256 of FIPS 180-4), independent
// of the kernel's crypto API the responder uses, so a test can check the
// digest a peer returns. Used by xiw_commitops and xiw_verifybg.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace digests {

inline uint32_t crc32c(const uint8_t *p, size_t n)
{
	static const std::array<uint32_t, 256> table = [] {
		std::array<uint32_t, 256> t{};

		for (uint32_t i = 0; i < 256; i++) {
			uint32_t c = i;

			for (int k = 0; k < 8; k++)
				c = c & 1 ? (c >> 1) ^ 0x82f63b78U : c >> 1;
			t[i] = c;
		}
		return t;
	}();
	uint32_t c = ~0U;

	while (n--)
		c = table[(c ^ *p++) & 0xff] ^ (c >> 8);
	return ~c;
}

// The digest bytes of crc32c as the responder sends them: little endian.
inline std::vector<uint8_t> crc32c_bytes(const uint8_t *p, size_t n)
{
	uint32_t c = crc32c(p, n);

	return { uint8_t(c), uint8_t(c >> 8), uint8_t(c >> 16),
		 uint8_t(c >> 24) };
}

// FIPS 180-4 SHA-256.
inline std::vector<uint8_t> sha256(const uint8_t *p, size_t n)
{
	static const uint32_t k[64] = {
		0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b,
		0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01,
		0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7,
		0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc,
		0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152,
		0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
		0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
		0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
		0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
		0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08,
		0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f,
		0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
		0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
	};
	uint32_t h[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
			  0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };
	auto rotr = [](uint32_t x, int r) { return x >> r | x << (32 - r); };
	std::vector<uint8_t> m(p, p + n);

	m.push_back(0x80);
	while (m.size() % 64 != 56)
		m.push_back(0);
	for (int i = 7; i >= 0; i--)
		m.push_back(uint8_t((uint64_t)n * 8 >> (8 * i)));
	for (size_t off = 0; off < m.size(); off += 64) {
		uint32_t w[64], a[8];

		for (int i = 0; i < 16; i++)
			w[i] = (uint32_t)m[off + 4 * i] << 24 |
			       m[off + 4 * i + 1] << 16 |
			       m[off + 4 * i + 2] << 8 | m[off + 4 * i + 3];
		for (int i = 16; i < 64; i++) {
			uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^
				      w[i - 15] >> 3;
			uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^
				      w[i - 2] >> 10;

			w[i] = w[i - 16] + s0 + w[i - 7] + s1;
		}
		std::memcpy(a, h, sizeof(a));
		for (int i = 0; i < 64; i++) {
			uint32_t s1 = rotr(a[4], 6) ^ rotr(a[4], 11) ^
				      rotr(a[4], 25);
			uint32_t ch = (a[4] & a[5]) ^ (~a[4] & a[6]);
			uint32_t t1 = a[7] + s1 + ch + k[i] + w[i];
			uint32_t s0 = rotr(a[0], 2) ^ rotr(a[0], 13) ^
				      rotr(a[0], 22);
			uint32_t mj = (a[0] & a[1]) ^ (a[0] & a[2]) ^
				      (a[1] & a[2]);
			uint32_t t2 = s0 + mj;

			std::memmove(a + 1, a, 7 * sizeof(a[0]));
			a[4] += t1;
			a[0] = t1 + t2;
		}
		for (int i = 0; i < 8; i++)
			h[i] += a[i];
	}
	std::vector<uint8_t> d;
	for (uint32_t v : h)
		for (int i = 3; i >= 0; i--)
			d.push_back(uint8_t(v >> (8 * i)));
	return d;
}

} // namespace digests
