// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// target_info.h: what xiw_target tells a peer in its accept private data
// (where its two regions are), shared by the programs that talk to it
// (xiw_badpeer, xiw_unsup). All fields big-endian on the wire.
#pragma once

#include <endian.h>

#include <cstdint>
#include <cstring>

namespace target_info {

constexpr uint32_t kMagic = 0x58495754;	// "XIWT"
constexpr uint32_t kRegion = 4096;	// size of each region
constexpr uint32_t kWindow = 1 << 20;	// xiw_target --window: its region

struct Wire {
	uint32_t magic;
	uint32_t conn_id;
	uint64_t rw_addr;	// remote read + write
	uint32_t rw_stag;
	uint32_t rw_len;
	uint64_t ro_addr;	// remote read only, filled with 0xa5
	uint32_t ro_stag;
	uint32_t ro_len;
} __attribute__((packed));
static_assert(sizeof(Wire) == 40);

// Host-order view.
struct Info {
	uint32_t conn_id;
	uint64_t rw_addr;
	uint32_t rw_stag, rw_len;
	uint64_t ro_addr;
	uint32_t ro_stag, ro_len;
};

inline Wire encode(const Info &i)
{
	return Wire{ htobe32(kMagic), htobe32(i.conn_id),
		     htobe64(i.rw_addr), htobe32(i.rw_stag), htobe32(i.rw_len),
		     htobe64(i.ro_addr), htobe32(i.ro_stag), htobe32(i.ro_len) };
}

// Decode @len bytes at @p; false if too short or not from xiw_target.
inline bool decode(const void *p, size_t len, Info *i)
{
	Wire w;

	if (len < sizeof(w))
		return false;
	std::memcpy(&w, p, sizeof(w));
	if (be32toh(w.magic) != kMagic)
		return false;
	*i = Info{ be32toh(w.conn_id), be64toh(w.rw_addr), be32toh(w.rw_stag),
		   be32toh(w.rw_len), be64toh(w.ro_addr), be32toh(w.ro_stag),
		   be32toh(w.ro_len) };
	return true;
}

} // namespace target_info
