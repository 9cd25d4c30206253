// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// checks.h: the "ok WHAT" / "FAIL WHAT" lines and their counts that the
// commit-operation test programs print (xiw_commit, xiw_commitops), the
// summary line that closes them, hex() for the bytes they compare and
// fmt() for the texts of the checks.
#pragma once

#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

namespace checks {

inline int failures, passes;

inline void check(bool ok, const std::string &what)
{
	std::printf("%s %s\n", ok ? "ok" : "FAIL", what.c_str());
	if (ok)
		passes++;
	else
		failures++;
}

// The closing line, "ok: N passed, M failed" ("FAIL: ..." if a check
// failed), and the exit code: 0 if every check passed, else 1.
inline int summary()
{
	std::printf("%s: %d passed, %d failed\n", failures ? "FAIL" : "ok",
		    passes, failures);
	return failures ? 1 : 0;
}

inline std::string hex(const uint8_t *p, size_t n)
{
	std::string s;
	char b[3];

	for (size_t i = 0; i < n; i++) {
		std::snprintf(b, sizeof(b), "%02x", p[i]);
		s += b;
	}
	return s;
}

// printf into a string (up to 511 bytes), for a check's text
inline std::string fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
inline std::string fmt(const char *f, ...)
{
	char b[512];
	va_list ap;

	va_start(ap, f);
	std::vsnprintf(b, sizeof(b), f, ap);
	va_end(ap);
	return b;
}

} // namespace checks
