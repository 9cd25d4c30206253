/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause */
/*
 * xiw send queue element contract: what a struct xiw_sqe (xiw-abi.h) may
 * hold, opcode by opcode. The one statement of these rules in the tree;
 * used unchanged by
 *
 *	- libxiw (userspace/libxiw/xiw_ring.c), before it publishes an SQE,
 *	- xiw.ko's post path for kernel consumers (kernel/xiw_qp.c), after it
 *	  built an SQE from an ib_send_wr,
 *	- xiw.ko's TX engine (kernel/xiw_tx_sq.c), on its private copy of
 *	  every SQE it takes from a ring, user or kernel, before it looks at
 *	  a buffer,
 *	- the host unit tests (selftests/host/test_sqe_contract.cpp).
 *
 * Pure: fixed-width types, one constant table and static inline functions,
 * nothing that needs kernel or libibverbs headers. Must compile as C (the
 * kernel, the provider) and as C++20 (the host tests), so the table is
 * written in opcode order without array designators and with every field
 * in every row; each row names its opcode and the host tests check that
 * row and index agree.
 *
 * The rules hold for the SQE itself. How a verbs work request becomes an
 * SQE (ibv_send_wr, ib_send_wr, ibv_qp_ex builders: opcode mapping, the
 * length of sg_list, IBV_SEND_INLINE on a Read) stays with each producer.
 */
#ifndef XIW_SQE_USER_H
#define XIW_SQE_USER_H

#include <linux/types.h>
#ifndef __KERNEL__
#include <stdbool.h>
#include <stddef.h>
#endif
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/xiw-abi.h>

#define XIW_MAX_SGE_RD		1	/* local sink SGEs of an RDMA Read */
#define XIW_ATOMIC_LEN		8	/* RFC 7306: 64-bit operands, result */

/* What an opcode does with the buffers an SQE describes. */
enum xiw_sqe_kind {
	XIW_SQE_KIND_NONE,	/* not implemented: refused everywhere */
	XIW_SQE_KIND_DATA,	/* Send, Write: SGEs or inline data to send */
	XIW_SQE_KIND_READ,	/* RDMA Read: sink SGEs (none: zero length) */
	XIW_SQE_KIND_ATOMIC,	/* one 8-byte result SGE, operands in the SQE */
	XIW_SQE_KIND_IMM,	/* Immediate Data alone: no buffer */
	XIW_SQE_KIND_LOCAL,	/* executed by the local RNIC: no buffer */
	XIW_SQE_KIND_FLUSH,	/* commit draft Flush: operands in the SQE */
	XIW_SQE_KIND_AWRITE,	/* commit draft Atomic Write: data in SQE */
	XIW_SQE_KIND_VERIFY,	/* commit draft Verify: optional digest SGE */
};

/* struct xiw_sqe_rule.flags */
enum xiw_sqe_rule_flags {
	XIW_SQE_USER	= 1 << 0,	/* may come from a user SQ ring */
	XIW_SQE_INLINE	= 1 << 1,	/* XIW_WQE_INLINE allowed */
	XIW_SQE_ORD	= 1 << 2,	/* waits for a response: ORD slot */
};

struct xiw_sqe_rule {
	__u8 opcode;		/* enum xiw_wr_opcode of this row */
	__u8 kind;		/* enum xiw_sqe_kind */
	__u8 flags;		/* enum xiw_sqe_rule_flags */
	__u8 min_sge;		/* SGEs, unless XIW_WQE_INLINE */
	__u8 max_sge;		/* ... also bounded by the QP's limit */
	/*
	 * enum ib_uverbs_access_flags (= IB_ACCESS_*, IBV_ACCESS_*): the
	 * rights the MRs of the local SGEs must grant (local read always
	 * is), and those the peer checks on its STag.
	 */
	__u16 local_access;
	__u16 remote_access;
};

/*
 * The rights a memory window may grant (XIW_OP_BIND_MW): remote ones
 * only. Zero-based windows (IB_UVERBS_ACCESS_ZERO_BASED) are not offered:
 * a window's tagged offsets are the addresses of the MR under it.
 */
#define XIW_SQE_MW_ACCESS	(IB_UVERBS_ACCESS_REMOTE_READ |		\
				 IB_UVERBS_ACCESS_REMOTE_WRITE |	\
				 IB_UVERBS_ACCESS_REMOTE_ATOMIC |	\
				 XIW_ACCESS_FLUSH_GLOBAL |		\
				 XIW_ACCESS_FLUSH_PERSISTENT)

/* The QP's limits: what it was created with. */
struct xiw_sqe_limits {
	__u32 max_sge;		/* max_send_sge, at most XIW_MAX_SGE */
	__u32 max_inline;	/* max_inline_data, at most XIW_MAX_INLINE */
};

/*
 * Result of xiw_sqe_check(): values of enum ib_wc_status / ibv_wc_status,
 * so the TX engine completes a refused SQE with it; the post paths turn
 * any non-zero value into EINVAL.
 */
enum xiw_sqe_status {
	XIW_SQE_OK		= 0,	/* IB_WC_SUCCESS */
	XIW_SQE_LOC_LEN_ERR	= 1,	/* IB_WC_LOC_LEN_ERR: inline too long */
	XIW_SQE_LOC_QP_OP_ERR	= 2,	/* IB_WC_LOC_QP_OP_ERR: the rest */
};

/* Rows 0 .. XIW_OP_NUM_USER - 1, then the local opcodes from 32. */
#define XIW_SQE_ROW_REG_MR	XIW_OP_NUM_USER
#define XIW_SQE_ROW_LOCAL_INV	(XIW_OP_NUM_USER + 1)
#define XIW_SQE_NUM_ROWS	(XIW_OP_NUM_USER + 2)

/*
 * The rule of @opcode, or NULL if @opcode is not an enum xiw_wr_opcode.
 * A row of kind XIW_SQE_KIND_NONE names an opcode that nobody may post yet.
 */
static __inline__ const struct xiw_sqe_rule *xiw_sqe_op_rule(__u8 opcode)
{
	static const struct xiw_sqe_rule rules[XIW_SQE_NUM_ROWS] = {
		{ .opcode = XIW_OP_WRITE, .kind = XIW_SQE_KIND_DATA,
		  .flags = XIW_SQE_USER | XIW_SQE_INLINE,
		  .min_sge = 0, .max_sge = XIW_MAX_SGE,
		  .local_access = 0,
		  .remote_access = IB_UVERBS_ACCESS_REMOTE_WRITE },
		{ .opcode = XIW_OP_WRITE_IMM, .kind = XIW_SQE_KIND_DATA,
		  .flags = XIW_SQE_USER | XIW_SQE_INLINE,
		  .min_sge = 0, .max_sge = XIW_MAX_SGE,
		  .local_access = 0,
		  .remote_access = IB_UVERBS_ACCESS_REMOTE_WRITE },
		{ .opcode = XIW_OP_SEND, .kind = XIW_SQE_KIND_DATA,
		  .flags = XIW_SQE_USER | XIW_SQE_INLINE,
		  .min_sge = 0, .max_sge = XIW_MAX_SGE,
		  .local_access = 0,
		  .remote_access = 0 },
		{ .opcode = XIW_OP_SEND_INV, .kind = XIW_SQE_KIND_DATA,
		  .flags = XIW_SQE_USER | XIW_SQE_INLINE,
		  .min_sge = 0, .max_sge = XIW_MAX_SGE,
		  .local_access = 0,
		  .remote_access = 0 },
		{ .opcode = XIW_OP_READ, .kind = XIW_SQE_KIND_READ,
		  .flags = XIW_SQE_USER | XIW_SQE_ORD,
		  .min_sge = 0, .max_sge = XIW_MAX_SGE_RD,
		  .local_access = IB_UVERBS_ACCESS_LOCAL_WRITE,
		  .remote_access = IB_UVERBS_ACCESS_REMOTE_READ },
		/* kernel only: it also invalidates the local sink STag */
		{ .opcode = XIW_OP_READ_INV, .kind = XIW_SQE_KIND_READ,
		  .flags = XIW_SQE_ORD,
		  .min_sge = 0, .max_sge = XIW_MAX_SGE_RD,
		  .local_access = IB_UVERBS_ACCESS_LOCAL_WRITE,
		  .remote_access = IB_UVERBS_ACCESS_REMOTE_READ },
		{ .opcode = XIW_OP_ATOMIC_FADD, .kind = XIW_SQE_KIND_ATOMIC,
		  .flags = XIW_SQE_USER | XIW_SQE_ORD,
		  .min_sge = 1, .max_sge = 1,
		  .local_access = IB_UVERBS_ACCESS_LOCAL_WRITE,
		  .remote_access = IB_UVERBS_ACCESS_REMOTE_ATOMIC },
		{ .opcode = XIW_OP_ATOMIC_CSWAP, .kind = XIW_SQE_KIND_ATOMIC,
		  .flags = XIW_SQE_USER | XIW_SQE_ORD,
		  .min_sge = 1, .max_sge = 1,
		  .local_access = IB_UVERBS_ACCESS_LOCAL_WRITE,
		  .remote_access = IB_UVERBS_ACCESS_REMOTE_ATOMIC },
		{ .opcode = XIW_OP_ATOMIC_MASKED_FADD,
		  .kind = XIW_SQE_KIND_ATOMIC,
		  .flags = XIW_SQE_USER | XIW_SQE_ORD,
		  .min_sge = 1, .max_sge = 1,
		  .local_access = IB_UVERBS_ACCESS_LOCAL_WRITE,
		  .remote_access = IB_UVERBS_ACCESS_REMOTE_ATOMIC },
		{ .opcode = XIW_OP_ATOMIC_MASKED_CSWAP,
		  .kind = XIW_SQE_KIND_ATOMIC,
		  .flags = XIW_SQE_USER | XIW_SQE_ORD,
		  .min_sge = 1, .max_sge = 1,
		  .local_access = IB_UVERBS_ACCESS_LOCAL_WRITE,
		  .remote_access = IB_UVERBS_ACCESS_REMOTE_ATOMIC },
		/*
		 * draft-talpey-rdma-commit. The Flush's remote right depends
		 * on its type (XIW_ACCESS_FLUSH_GLOBAL and/or _PERSISTENT,
		 * xiw_sqe_flush_access()); the row names the global one.
		 */
		{ .opcode = XIW_OP_FLUSH, .kind = XIW_SQE_KIND_FLUSH,
		  .flags = XIW_SQE_USER | XIW_SQE_ORD,
		  .min_sge = 0, .max_sge = 0,
		  .local_access = 0,
		  .remote_access = XIW_ACCESS_FLUSH_GLOBAL },
		{ .opcode = XIW_OP_ATOMIC_WRITE, .kind = XIW_SQE_KIND_AWRITE,
		  .flags = XIW_SQE_USER | XIW_SQE_ORD,
		  .min_sge = 0, .max_sge = 0,
		  .local_access = 0,
		  .remote_access = IB_UVERBS_ACCESS_REMOTE_WRITE },
		{ .opcode = XIW_OP_VERIFY, .kind = XIW_SQE_KIND_VERIFY,
		  .flags = XIW_SQE_USER | XIW_SQE_ORD,
		  .min_sge = 0, .max_sge = 1,
		  .local_access = IB_UVERBS_ACCESS_LOCAL_WRITE,
		  .remote_access = IB_UVERBS_ACCESS_REMOTE_READ },
		{ .opcode = XIW_OP_IMM, .kind = XIW_SQE_KIND_IMM,
		  .flags = XIW_SQE_USER,
		  .min_sge = 0, .max_sge = 0,
		  .local_access = 0,
		  .remote_access = 0 },
		{ .opcode = XIW_OP_BIND_MW, .kind = XIW_SQE_KIND_LOCAL,
		  .flags = XIW_SQE_USER,
		  .min_sge = 0, .max_sge = 0,
		  .local_access = 0,
		  .remote_access = 0 },
		/* fast registration (kernel only), local invalidation */
		{ .opcode = XIW_OP_REG_MR, .kind = XIW_SQE_KIND_LOCAL,
		  .flags = 0,
		  .min_sge = 0, .max_sge = 0,
		  .local_access = 0,
		  .remote_access = 0 },
		{ .opcode = XIW_OP_LOCAL_INV, .kind = XIW_SQE_KIND_LOCAL,
		  .flags = XIW_SQE_USER,
		  .min_sge = 0, .max_sge = 0,
		  .local_access = 0,
		  .remote_access = 0 },
	};

	if (opcode < XIW_OP_NUM_USER)
		return &rules[opcode];
	if (opcode == XIW_OP_REG_MR)
		return &rules[XIW_SQE_ROW_REG_MR];
	if (opcode == XIW_OP_LOCAL_INV)
		return &rules[XIW_SQE_ROW_LOCAL_INV];
	return NULL;
}

/*
 * The rule of @opcode if this side may post it (@user: the SQE comes from
 * a user SQ ring), else NULL: unknown, not implemented, or kernel only.
 */
static __inline__ const struct xiw_sqe_rule *xiw_sqe_op_allowed(__u8 opcode,
								bool user)
{
	const struct xiw_sqe_rule *r = xiw_sqe_op_rule(opcode);

	if (!r || r->kind == XIW_SQE_KIND_NONE)
		return NULL;
	if (user && !(r->flags & XIW_SQE_USER))
		return NULL;
	return r;
}

/*
 * Check a filled SQE against the contract. @flags are the SQE's flags
 * (a producer that publishes later passes the flags it will publish, the
 * TX engine those of its copy); VALID and the completion/fence flags do
 * not matter. Reads only opcode, num_sge and, for atomics, the result
 * SGE's length: MR rights and bounds are the TX engine's to check when it
 * resolves the SGEs (with rule->local_access).
 *
 * An SQE that passes has num_sge <= XIW_MAX_SGE, or <= XIW_MAX_INLINE
 * with XIW_WQE_INLINE, whatever the limits say.
 */
static __inline__ __u8 xiw_sqe_check(const struct xiw_sqe *sqe, __u16 flags,
				     const struct xiw_sqe_limits *lim, bool user)
{
	const struct xiw_sqe_rule *r = xiw_sqe_op_allowed(sqe->opcode, user);
	__u32 max;

	if (!r)
		return XIW_SQE_LOC_QP_OP_ERR;
	if (flags & XIW_WQE_INLINE) {
		if (!(r->flags & XIW_SQE_INLINE))
			return XIW_SQE_LOC_QP_OP_ERR;
		max = lim->max_inline < XIW_MAX_INLINE ? lim->max_inline :
							 XIW_MAX_INLINE;
		return sqe->num_sge <= max ? XIW_SQE_OK : XIW_SQE_LOC_LEN_ERR;
	}
	max = lim->max_sge < r->max_sge ? lim->max_sge : r->max_sge;
	if (sqe->num_sge < r->min_sge || sqe->num_sge > max)
		return XIW_SQE_LOC_QP_OP_ERR;
	switch (r->kind) {
	case XIW_SQE_KIND_ATOMIC:
		if (sqe->atomic.sge.length != XIW_ATOMIC_LEN)
			return XIW_SQE_LOC_QP_OP_ERR;
		break;
	case XIW_SQE_KIND_FLUSH:
		if (!sqe->flush.type ||
		    sqe->flush.type & ~(XIW_FLUSH_TYPE_GLOBAL | XIW_FLUSH_TYPE_PERSISTENT))
			return XIW_SQE_LOC_QP_OP_ERR;
		if (sqe->flush.level == XIW_FLUSH_LEVEL_MR)
			break;
		if (sqe->flush.level != XIW_FLUSH_LEVEL_RANGE ||
		    sqe->flush.length > 0xffffffffULL)
			return XIW_SQE_LOC_QP_OP_ERR;
		break;
	case XIW_SQE_KIND_AWRITE:
		if (sqe->raddr & (XIW_ATOMIC_LEN - 1))
			return XIW_SQE_LOC_QP_OP_ERR;
		break;
	case XIW_SQE_KIND_VERIFY:
		if (sqe->verify.hash_len > XIW_VERIFY_MAX_HASH)
			return XIW_SQE_LOC_QP_OP_ERR;
		break;
	case XIW_SQE_KIND_LOCAL:
		if (sqe->opcode == XIW_OP_BIND_MW &&
		    sqe->bind.access & ~XIW_SQE_MW_ACCESS)
			return XIW_SQE_LOC_QP_OP_ERR;
		break;
	default:
		break;
	}
	return XIW_SQE_OK;
}

/*
 * The rights a Flush of @type (XIW_FLUSH_TYPE_* bits) needs on the peer's
 * MR: XIW_ACCESS_FLUSH_GLOBAL / _PERSISTENT.
 */
static __inline__ __u32 xiw_sqe_flush_access(__u8 type)
{
	return ((type & XIW_FLUSH_TYPE_GLOBAL) ? XIW_ACCESS_FLUSH_GLOBAL : 0) |
	       ((type & XIW_FLUSH_TYPE_PERSISTENT) ?
			XIW_ACCESS_FLUSH_PERSISTENT : 0);
}

#endif /* XIW_SQE_USER_H */
