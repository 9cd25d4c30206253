/* SPDX-License-Identifier: GPL-2.0 */
/*
 * xiw - draft-talpey-rdma-commit at the responder (xiw_commit.c): Flush,
 * Atomic Write and Verify on an MR's memory (and the RFC 7306 atomics),
 * persistent-memory checks and Verify digests.
 */
#ifndef XIW_COMMIT_H
#define XIW_COMMIT_H

#include "xiw.h"

struct xiw_irqe;
struct xiw_qp_dp;

int xiw_commit_init(void);
void xiw_commit_exit(void);

int xiw_commit_digest_len(u8 digest);
u8 xiw_commit_digests(void);

bool xiw_commit_heavy(struct xiw_qp_dp *dp, struct xiw_irqe *e);
/*
 * @dp: yield between chunks and stop when it fails or the region is
 * revoked (-ECANCELED, -EKEYREVOKED); NULL: neither (short ranges only)
 */
int xiw_commit_flush(struct xiw_mr *mr, const struct xiw_mem_grant *g,
		     u64 va, u64 len, u32 flags, struct xiw_qp_dp *dp);
int xiw_commit_awrite(struct xiw_mr *mr, u64 va, u64 data);
/* an atomic or Atomic Write: RX where it is received, else TX */
int xiw_commit_exec_one(struct xiw_mr *mr, const struct xiw_mem_grant *g,
			struct xiw_irqe *e);
int xiw_commit_verify(struct xiw_mr *mr, const struct xiw_mem_grant *g,
		      u64 va, u32 len, u8 *out, struct xiw_qp_dp *dp);
void xiw_commit_verify_mismatch(void);

#endif /* XIW_COMMIT_H */
