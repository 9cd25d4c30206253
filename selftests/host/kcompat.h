// SPDX-License-Identifier: GPL-2.0
// Minimal kernel-compat shim so kernel/xiw_wire.h compiles unchanged as
// C++20 on the host. Only what that header needs. The fixed-width and
// __be/__le types come from the uapi <linux/types.h>, so u64 is unsigned
// long long as in the kernel; without sparse they are plain integers.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <endian.h>
#include <linux/types.h> // __u8..__u64, __be16..__le64 (uapi, as the kernel)

typedef __u8 u8;
typedef __u16 u16;
typedef __u32 u32;
typedef __u64 u64;

#define __packed __attribute__((__packed__))
#define __aligned(x) __attribute__((__aligned__(x)))
#define __force
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define BUILD_BUG_ON(cond) static_assert(!(cond), #cond)

#if __BYTE_ORDER == __LITTLE_ENDIAN
constexpr u16 cpu_to_be16(u16 x) { return __builtin_bswap16(x); }
constexpr u32 cpu_to_be32(u32 x) { return __builtin_bswap32(x); }
constexpr u64 cpu_to_be64(u64 x) { return __builtin_bswap64(x); }
constexpr u16 cpu_to_le16(u16 x) { return x; }
constexpr u32 cpu_to_le32(u32 x) { return x; }
constexpr u64 cpu_to_le64(u64 x) { return x; }
#else
constexpr u16 cpu_to_be16(u16 x) { return x; }
constexpr u32 cpu_to_be32(u32 x) { return x; }
constexpr u64 cpu_to_be64(u64 x) { return x; }
constexpr u16 cpu_to_le16(u16 x) { return __builtin_bswap16(x); }
constexpr u32 cpu_to_le32(u32 x) { return __builtin_bswap32(x); }
constexpr u64 cpu_to_le64(u64 x) { return __builtin_bswap64(x); }
#endif
constexpr u16 be16_to_cpu(__be16 x) { return cpu_to_be16(x); }
constexpr u32 be32_to_cpu(__be32 x) { return cpu_to_be32(x); }
constexpr u64 be64_to_cpu(__be64 x) { return cpu_to_be64(x); }
constexpr u16 le16_to_cpu(__le16 x) { return cpu_to_le16(x); }
constexpr u32 le32_to_cpu(__le32 x) { return cpu_to_le32(x); }
constexpr u64 le64_to_cpu(__le64 x) { return cpu_to_le64(x); }

// The kernel's raw CRC32c (Castagnoli, reflected, polynomial 0x82f63b78):
// no pre- or post-inversion, same contract as lib/crc32c's crc32c().
u32 crc32c(u32 crc, const void *p, size_t len);
