// SPDX-License-Identifier: GPL-2.0
// The send queue element contract (include/uapi/rdma/xiw-sqe.h): its
// table, opcode by opcode, and xiw_sqe_check() against every opcode, both
// posters (user ring, kernel consumer), inline and SGE counts over the
// whole range of num_sge, and the limits of the QP.
#include <algorithm>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "kcompat.h"
#include <rdma/xiw-sqe.h>

namespace {

constexpr u8 kind_none = XIW_SQE_KIND_NONE, data = XIW_SQE_KIND_DATA,
	     read = XIW_SQE_KIND_READ, atomic = XIW_SQE_KIND_ATOMIC,
	     imm = XIW_SQE_KIND_IMM, local = XIW_SQE_KIND_LOCAL,
	     flush = XIW_SQE_KIND_FLUSH, awrite = XIW_SQE_KIND_AWRITE,
	     verify = XIW_SQE_KIND_VERIFY;
constexpr u16 LW = IB_UVERBS_ACCESS_LOCAL_WRITE,
	      RW = IB_UVERBS_ACCESS_REMOTE_WRITE,
	      RR = IB_UVERBS_ACCESS_REMOTE_READ,
	      RA = IB_UVERBS_ACCESS_REMOTE_ATOMIC,
	      FG = 1 << 8;	// IB_UVERBS_ACCESS_FLUSH_GLOBAL
constexpr u8 OK = XIW_SQE_OK, LEN = XIW_SQE_LOC_LEN_ERR,
	     OPE = XIW_SQE_LOC_QP_OP_ERR;

// The contract as the documentation states it (Documentation/user-abi.md,
// architecture.md), written out again so that a change of the table has
// to be a change of this list too.
struct Expect {
	u8 op;
	u8 kind;
	bool user;	// a user SQ ring may carry it
	bool inl;	// XIW_WQE_INLINE allowed
	bool ord;	// waits for a response, takes an ORD slot
	u8 min_sge, max_sge;
	u16 local, remote;
};

const Expect expect[] = {
	{ XIW_OP_WRITE, data, true, true, false, 0, XIW_MAX_SGE, 0, RW },
	{ XIW_OP_WRITE_IMM, data, true, true, false, 0, XIW_MAX_SGE, 0, RW },
	{ XIW_OP_SEND, data, true, true, false, 0, XIW_MAX_SGE, 0, 0 },
	{ XIW_OP_SEND_INV, data, true, true, false, 0, XIW_MAX_SGE, 0, 0 },
	{ XIW_OP_READ, read, true, false, true, 0, 1, LW, RR },
	{ XIW_OP_READ_INV, read, false, false, true, 0, 1, LW, RR },
	{ XIW_OP_ATOMIC_FADD, atomic, true, false, true, 1, 1, LW, RA },
	{ XIW_OP_ATOMIC_CSWAP, atomic, true, false, true, 1, 1, LW, RA },
	{ XIW_OP_ATOMIC_MASKED_FADD, atomic, true, false, true, 1, 1, LW, RA },
	{ XIW_OP_ATOMIC_MASKED_CSWAP, atomic, true, false, true, 1, 1, LW, RA },
	// draft-talpey-rdma-commit: operands in the SQE; Verify may name a
	// buffer for the digest
	{ XIW_OP_FLUSH, flush, true, false, true, 0, 0, 0, FG },
	{ XIW_OP_ATOMIC_WRITE, awrite, true, false, true, 0, 0, 0, RW },
	{ XIW_OP_VERIFY, verify, true, false, true, 0, 1, LW, RR },
	{ XIW_OP_IMM, imm, true, false, false, 0, 0, 0, 0 },
	{ XIW_OP_BIND_MW, local, true, false, false, 0, 0, 0, 0 },
	{ XIW_OP_REG_MR, local, false, false, false, 0, 0, 0, 0 },
	{ XIW_OP_LOCAL_INV, local, true, false, false, 0, 0, 0, 0 },
};

const Expect *expect_of(unsigned op)
{
	for (const Expect &e : expect)
		if (e.op == op)
			return &e;
	return nullptr;
}

constexpr xiw_sqe_limits full = { XIW_MAX_SGE, XIW_MAX_INLINE };

struct Sqe {
	xiw_sqe s;

	explicit Sqe(unsigned op, unsigned num_sge = 0, u32 atomic_len = 8)
	{
		memset(&s, 0, sizeof(s));
		s.opcode = op;
		s.num_sge = num_sge;
		s.atomic.sge.length = atomic_len;
		// valid operands: a global Flush of a range of 0 bytes
		if (op == XIW_OP_FLUSH) {
			s.flush.type = XIW_FLUSH_TYPE_GLOBAL;
			s.flush.level = XIW_FLUSH_LEVEL_RANGE;
		}
	}
};

u8 check(const Sqe &x, u16 flags, const xiw_sqe_limits &lim, bool user)
{
	// its own allocation, so ASan sees any read outside the SQE
	std::vector<u8> buf(sizeof(xiw_sqe));
	memcpy(buf.data(), &x.s, sizeof(x.s));
	return xiw_sqe_check(reinterpret_cast<const xiw_sqe *>(buf.data()),
			     flags, &lim, user);
}

TEST(SqeContract, TableHasOneRowPerOpcode)
{
	unsigned rows = 0;

	for (unsigned op = 0; op < 256; op++) {
		const xiw_sqe_rule *r = xiw_sqe_op_rule(op);
		bool defined = op < XIW_OP_NUM_USER || op == XIW_OP_REG_MR ||
			       op == XIW_OP_LOCAL_INV;

		ASSERT_EQ(r != nullptr, defined) << "opcode " << op;
		if (!r)
			continue;
		EXPECT_EQ(r->opcode, op) << "row and index disagree";
		rows++;
	}
	EXPECT_EQ(rows, unsigned(XIW_SQE_NUM_ROWS));
	EXPECT_EQ(rows, sizeof(expect) / sizeof(expect[0]));
}

TEST(SqeContract, EveryOpcodeAsDocumented)
{
	for (const Expect &e : expect) {
		const xiw_sqe_rule *r = xiw_sqe_op_rule(e.op);

		SCOPED_TRACE(testing::Message() << "opcode " << unsigned(e.op));
		ASSERT_NE(r, nullptr);
		EXPECT_EQ(r->kind, e.kind);
		EXPECT_EQ(!!(r->flags & XIW_SQE_USER), e.user);
		EXPECT_EQ(!!(r->flags & XIW_SQE_INLINE), e.inl);
		EXPECT_EQ(!!(r->flags & XIW_SQE_ORD), e.ord);
		EXPECT_EQ(r->flags & ~(XIW_SQE_USER | XIW_SQE_INLINE |
				       XIW_SQE_ORD), 0);
		EXPECT_EQ(r->min_sge, e.min_sge);
		EXPECT_EQ(r->max_sge, e.max_sge);
		EXPECT_EQ(r->local_access, e.local);
		EXPECT_EQ(r->remote_access, e.remote);
		// only what the TX engine can check is asked of local MRs
		EXPECT_EQ(r->local_access & ~LW, 0);
		EXPECT_LE(r->max_sge, XIW_MAX_SGE);
		EXPECT_LE(r->min_sge, r->max_sge);
	}
}

TEST(SqeContract, WhoMayPostWhat)
{
	for (unsigned op = 0; op < 256; op++) {
		const Expect *e = expect_of(op);
		bool known = e && e->kind != kind_none;

		SCOPED_TRACE(testing::Message() << "opcode " << op);
		EXPECT_EQ(xiw_sqe_op_allowed(op, false) != nullptr, known);
		EXPECT_EQ(xiw_sqe_op_allowed(op, true) != nullptr,
			  known && e->user);
		// xiw-abi.h: user rings carry the opcodes below NUM_USER
		// and, of the local ones, LOCAL_INV (type 2 windows)
		if (xiw_sqe_op_allowed(op, true) && op != XIW_OP_LOCAL_INV) {
			EXPECT_LT(op, unsigned(XIW_OP_NUM_USER));
		}
	}
	// the kernel-only ones by name
	EXPECT_EQ(xiw_sqe_op_allowed(XIW_OP_READ_INV, true), nullptr);
	EXPECT_EQ(xiw_sqe_op_allowed(XIW_OP_REG_MR, true), nullptr);
	EXPECT_NE(xiw_sqe_op_allowed(XIW_OP_LOCAL_INV, true), nullptr);
	EXPECT_NE(xiw_sqe_op_allowed(XIW_OP_READ_INV, false), nullptr);
}

// Every opcode, both posters, with and without inline, every num_sge.
TEST(SqeContract, CheckEveryOpcodeAndCount)
{
	for (unsigned op = 0; op < 256; op++) {
		const Expect *e = expect_of(op);

		for (int user = 0; user < 2; user++) {
			bool allowed = e && e->kind != kind_none &&
				       (!user || e->user);

			for (unsigned n = 0; n < 256; n++) {
				Sqe x(op, n);
				u8 want;

				SCOPED_TRACE(testing::Message()
					     << "opcode " << op << " user "
					     << user << " num_sge " << n);
				want = allowed && n >= e->min_sge &&
				       n <= e->max_sge ? OK : OPE;
				EXPECT_EQ(check(x, 0, full, user), want);

				if (!allowed || !e->inl)
					want = OPE;
				else
					want = n <= XIW_MAX_INLINE ? OK : LEN;
				EXPECT_EQ(check(x, XIW_WQE_INLINE, full, user),
					  want);
			}
		}
	}
}

TEST(SqeContract, QpSgeLimit)
{
	for (unsigned max = 0; max <= XIW_MAX_SGE; max++) {
		xiw_sqe_limits lim = { max, XIW_MAX_INLINE };

		SCOPED_TRACE(testing::Message() << "max_send_sge " << max);
		for (unsigned n = 0; n <= XIW_MAX_SGE + 1; n++) {
			EXPECT_EQ(check(Sqe(XIW_OP_SEND, n), 0, lim, true),
				  n <= max ? OK : OPE);
			EXPECT_EQ(check(Sqe(XIW_OP_WRITE, n), 0, lim, false),
				  n <= max ? OK : OPE);
			EXPECT_EQ(check(Sqe(XIW_OP_READ, n), 0, lim, true),
				  n <= std::min(max, 1u) ? OK : OPE);
		}
		// an atomic's result buffer is an SGE like any other
		EXPECT_EQ(check(Sqe(XIW_OP_ATOMIC_FADD, 1), 0, lim, true),
			  max >= 1 ? OK : OPE);
		// no buffer, no SGE limit
		EXPECT_EQ(check(Sqe(XIW_OP_IMM, 0), 0, lim, true), OK);
		EXPECT_EQ(check(Sqe(XIW_OP_REG_MR, 0), 0, lim, false), OK);
		EXPECT_EQ(check(Sqe(XIW_OP_LOCAL_INV, 0), 0, lim, false), OK);
		// the QP's SGE limit says nothing about inline bytes
		EXPECT_EQ(check(Sqe(XIW_OP_SEND, 50), XIW_WQE_INLINE, lim,
				true), OK);
	}
}

TEST(SqeContract, QpInlineLimit)
{
	for (unsigned max : { 0u, 1u, 32u, 95u, unsigned(XIW_MAX_INLINE) }) {
		xiw_sqe_limits lim = { XIW_MAX_SGE, max };

		SCOPED_TRACE(testing::Message() << "max_inline " << max);
		for (unsigned n = 0; n < 256; n++)
			EXPECT_EQ(check(Sqe(XIW_OP_WRITE_IMM, n),
					XIW_WQE_INLINE, lim, true),
				  n <= max ? OK : LEN);
	}
}

// Whatever limits a caller passes, an accepted SQE stays inside its arrays.
TEST(SqeContract, LimitsNeverWidenTheArrays)
{
	const xiw_sqe_limits huge[] = { { 255, 255 }, { ~0u, ~0u } };

	for (const xiw_sqe_limits &lim : huge) {
		for (unsigned op = 0; op < 256; op++) {
			for (unsigned n = 0; n < 256; n++) {
				Sqe x(op, n);

				const xiw_sqe_rule *r = xiw_sqe_op_rule(op);

				if (check(x, 0, lim, false) == OK) {
					EXPECT_LE(n, unsigned(XIW_MAX_SGE));
				}
				if (check(x, XIW_WQE_INLINE, lim, false) == OK) {
					EXPECT_LE(n, unsigned(XIW_MAX_INLINE));
				} else if (r && (r->flags & XIW_SQE_INLINE)) {
					EXPECT_EQ(check(x, XIW_WQE_INLINE, lim,
							false), LEN);
				}
			}
		}
	}
}

TEST(SqeContract, AtomicResultBuffer)
{
	for (unsigned op : { XIW_OP_ATOMIC_FADD, XIW_OP_ATOMIC_CSWAP,
			     XIW_OP_ATOMIC_MASKED_FADD,
			     XIW_OP_ATOMIC_MASKED_CSWAP }) {
		SCOPED_TRACE(testing::Message() << "opcode " << op);
		for (u32 len : { 0u, 1u, 4u, 7u, 9u, 16u, 4096u, ~0u })
			EXPECT_EQ(check(Sqe(op, 1, len), 0, full, true), OPE)
				<< "length " << len;
		EXPECT_EQ(check(Sqe(op, 1, XIW_ATOMIC_LEN), 0, full, true), OK);
		EXPECT_EQ(check(Sqe(op, 1, XIW_ATOMIC_LEN), 0, full, false),
			  OK);
		EXPECT_EQ(check(Sqe(op, 0, XIW_ATOMIC_LEN), 0, full, true), OPE);
		EXPECT_EQ(check(Sqe(op, 2, XIW_ATOMIC_LEN), 0, full, true), OPE);
		EXPECT_EQ(check(Sqe(op, 1, XIW_ATOMIC_LEN), XIW_WQE_INLINE,
				full, true), OPE);
	}
	// the length matters to atomics only
	EXPECT_EQ(check(Sqe(XIW_OP_READ, 1, 4), 0, full, true), OK);
}

// VALID, the completion and fence flags, and unknown bits change nothing.
TEST(SqeContract, OtherFlagsDoNotMatter)
{
	const u16 other = XIW_WQE_VALID | XIW_WQE_SIGNALED |
			  XIW_WQE_SOLICITED | XIW_WQE_READ_FENCE |
			  XIW_WQE_LOCAL_FENCE | 0xff00;

	for (const Expect &e : expect) {
		for (unsigned n = 0; n <= XIW_MAX_INLINE + 1; n++) {
			Sqe x(e.op, n);

			for (int user = 0; user < 2; user++) {
				EXPECT_EQ(check(x, other, full, user),
					  check(x, 0, full, user));
				EXPECT_EQ(check(x, other | XIW_WQE_INLINE, full,
						user),
					  check(x, XIW_WQE_INLINE, full, user));
			}
		}
	}
}

// The operands of the commit operations, checked before anything is sent.
TEST(SqeContract, CommitOperands)
{
	auto flush = [](u8 type, u8 level, u64 len) {
		Sqe x(XIW_OP_FLUSH);

		x.s.flush.type = type;
		x.s.flush.level = level;
		x.s.flush.length = len;
		return check(x, 0, full, true);
	};
	EXPECT_EQ(flush(XIW_FLUSH_TYPE_GLOBAL, XIW_FLUSH_LEVEL_RANGE, 4096), OK);
	EXPECT_EQ(flush(XIW_FLUSH_TYPE_PERSISTENT, XIW_FLUSH_LEVEL_RANGE, 0),
		  OK);
	EXPECT_EQ(flush(XIW_FLUSH_TYPE_GLOBAL | XIW_FLUSH_TYPE_PERSISTENT,
			XIW_FLUSH_LEVEL_RANGE, 0xffffffffULL), OK);
	EXPECT_EQ(flush(0, XIW_FLUSH_LEVEL_RANGE, 64), OPE);	// no type
	EXPECT_EQ(flush(4, XIW_FLUSH_LEVEL_RANGE, 64), OPE);	// unknown type
	EXPECT_EQ(flush(XIW_FLUSH_TYPE_GLOBAL, 2, 64), OPE);	// unknown level
	// the wire's Length is 32 bits ...
	EXPECT_EQ(flush(XIW_FLUSH_TYPE_GLOBAL, XIW_FLUSH_LEVEL_RANGE,
			0x100000000ULL), OPE);
	// ... and means nothing for the whole MR
	EXPECT_EQ(flush(XIW_FLUSH_TYPE_GLOBAL, XIW_FLUSH_LEVEL_MR,
			0x100000000ULL), OK);
	EXPECT_EQ(xiw_sqe_flush_access(XIW_FLUSH_TYPE_GLOBAL), 1u << 8);
	EXPECT_EQ(xiw_sqe_flush_access(XIW_FLUSH_TYPE_PERSISTENT), 1u << 9);
	EXPECT_EQ(xiw_sqe_flush_access(XIW_FLUSH_TYPE_GLOBAL |
				       XIW_FLUSH_TYPE_PERSISTENT), 3u << 8);

	for (u64 raddr : { 0ULL, 8ULL, 0x1000ULL, ~7ULL }) {
		Sqe x(XIW_OP_ATOMIC_WRITE);

		x.s.raddr = raddr;
		EXPECT_EQ(check(x, 0, full, true), OK) << raddr;
	}
	for (u64 raddr : { 1ULL, 4ULL, 0x1004ULL, ~0ULL }) {
		Sqe x(XIW_OP_ATOMIC_WRITE);

		x.s.raddr = raddr;
		EXPECT_EQ(check(x, 0, full, true), OPE) << raddr;
	}
	for (unsigned n = 0; n < 256; n++) {
		Sqe x(XIW_OP_VERIFY);

		x.s.verify.hash_len = n;
		EXPECT_EQ(check(x, 0, full, true),
			  n <= XIW_VERIFY_MAX_HASH ? OK : OPE) << n;
	}
	// the digest buffer is an SGE like any other: one at most
	EXPECT_EQ(check(Sqe(XIW_OP_VERIFY, 1), 0, full, true), OK);
	EXPECT_EQ(check(Sqe(XIW_OP_VERIFY, 2), 0, full, true), OPE);
}

// A window grants remote rights only: anything else is refused at post.
TEST(SqeContract, BindMwRights)
{
	for (unsigned bit = 0; bit < 32; bit++) {
		Sqe x(XIW_OP_BIND_MW);
		bool ok = (1u << bit) & XIW_SQE_MW_ACCESS;

		x.s.bind.access = 1u << bit;
		SCOPED_TRACE(testing::Message() << "access bit " << bit);
		EXPECT_EQ(check(x, 0, full, true),
			  ok ? XIW_SQE_OK : XIW_SQE_LOC_QP_OP_ERR);
	}
	Sqe all(XIW_OP_BIND_MW);
	all.s.bind.access = XIW_SQE_MW_ACCESS;
	EXPECT_EQ(check(all, 0, full, true), XIW_SQE_OK);
	// zero-based windows are not offered (xiw-sqe.h)
	all.s.bind.access |= IB_UVERBS_ACCESS_ZERO_BASED;
	EXPECT_EQ(check(all, 0, full, true), XIW_SQE_LOC_QP_OP_ERR);
	// local rights are never a window's
	Sqe lw(XIW_OP_BIND_MW);
	lw.s.bind.access = IB_UVERBS_ACCESS_LOCAL_WRITE;
	EXPECT_EQ(check(lw, 0, full, true), XIW_SQE_LOC_QP_OP_ERR);
}

TEST(SqeContract, StatusIsAnIbWcStatus)
{
	// enum ib_wc_status / ibv_wc_status; the kernel and the provider
	// assert the same against their own enums
	EXPECT_EQ(OK, 0);
	EXPECT_EQ(LEN, 1);
	EXPECT_EQ(OPE, 2);
	EXPECT_EQ(XIW_MAX_SGE_RD, 1);
	EXPECT_EQ(XIW_ATOMIC_LEN, sizeof(u64));
}

} // namespace
