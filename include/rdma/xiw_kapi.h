/* SPDX-License-Identifier: GPL-2.0 */
/*
 * xiw kernel API: the draft-talpey-rdma-commit operations for kernel
 * consumers. Linux 6.12's struct ib_send_wr has opcodes for Flush and
 * Atomic Write but no work request layout to carry their operands, and
 * nothing for Verify, so xiw.ko exports one post function per operation.
 * Each posts one WR on @qp's send queue exactly as ib_post_send() does
 * (same ordering, same CQ, @send_flags IB_SEND_SIGNALED / IB_SEND_FENCE),
 * and returns 0, -EINVAL (not an xiw QP, bad operands) or -ENOMEM (SQ
 * full). Completion opcodes: IB_WC_FLUSH, IB_WC_ATOMIC_WRITE and
 * XIW_WC_VERIFY (<rdma/xiw-abi.h>).
 *
 * Use xiw_is_xiw_device() first: the symbols come from xiw.ko.
 *
 * Kernels before 6.2 have none of the IB_FLUSH_*, IB_ACCESS_FLUSH_*,
 * IB_WC_FLUSH and IB_WC_ATOMIC_WRITE names used here: the driver's
 * xiw_compat.h defines them with 6.2's values.
 */
#ifndef XIW_KAPI_H
#define XIW_KAPI_H

#include <rdma/ib_verbs.h>
#include <rdma/xiw-abi.h>

bool xiw_is_xiw_device(struct ib_device *dev);

/* @type: IB_FLUSH_GLOBAL | IB_FLUSH_PERSISTENT; @level: IB_FLUSH_RANGE/_MR */
int xiw_post_flush(struct ib_qp *qp, u64 wr_id, u32 rkey, u64 raddr,
		   u64 len, u8 type, u8 level, unsigned int send_flags);

/* The 8 bytes of @value as they are in memory go to @raddr (aligned). */
int xiw_post_atomic_write(struct ib_qp *qp, u64 wr_id, u32 rkey, u64 raddr,
			  u64 value, unsigned int send_flags);

/*
 * @hash_len 0: the peer's digest is written to @digest (may be NULL);
 * else the peer compares it with @hash.
 */
int xiw_post_verify(struct ib_qp *qp, u64 wr_id, u32 rkey, u64 raddr,
		    u32 len, const void *hash, u8 hash_len,
		    const struct ib_sge *digest, unsigned int send_flags);

/* Verify digest algorithm of a kernel MR (default XIW_DIGEST_CRC32C). */
int xiw_mr_set_digest(struct ib_mr *mr, enum xiw_digest digest);

#endif /* XIW_KAPI_H */
