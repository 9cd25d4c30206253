/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * xiwdv.h - xiw direct verbs: the RFC 7306 operations plain verbs cannot
 * express on an xiw QP. Link with -lxiw (libxiw.so.1, the same library
 * libibverbs loads as libxiw-rdmav34.so).
 *
 * NAME
 *	xiwdv_is_xiw_context, xiwdv_wr_masked_atomic_fetch_add,
 *	xiwdv_wr_masked_atomic_cmp_swp, xiwdv_wr_rdma_write_imm64,
 *	xiwdv_wr_imm64, xiwdv_poll_cq, xiwdv_reg_mr, xiwdv_wr_flush,
 *	xiwdv_wr_verify
 *
 * SYNOPSIS
 *	bool xiwdv_is_xiw_context(struct ibv_context *ctx);
 *
 *	void xiwdv_wr_masked_atomic_fetch_add(struct ibv_qp_ex *qpx,
 *		uint32_t rkey, uint64_t remote_addr, uint64_t add,
 *		uint64_t field_msbs);
 *	void xiwdv_wr_masked_atomic_cmp_swp(struct ibv_qp_ex *qpx,
 *		uint32_t rkey, uint64_t remote_addr, uint64_t compare,
 *		uint64_t compare_mask, uint64_t swap, uint64_t swap_mask);
 *	void xiwdv_wr_rdma_write_imm64(struct ibv_qp_ex *qpx, uint32_t rkey,
 *		uint64_t remote_addr, uint64_t imm);
 *	void xiwdv_wr_imm64(struct ibv_qp_ex *qpx, uint64_t imm);
 *
 *	int xiwdv_poll_cq(struct ibv_cq *cq, int num_entries,
 *		struct ibv_wc *wc, uint64_t *imm64);
 *
 *	struct ibv_mr *xiwdv_reg_mr(struct ibv_pd *pd, void *addr,
 *		size_t length, int access, enum xiwdv_digest digest);
 *	void xiwdv_wr_flush(struct ibv_qp_ex *qpx, uint32_t rkey,
 *		uint64_t remote_addr, size_t len, uint8_t type,
 *		uint8_t level);
 *	void xiwdv_wr_verify(struct ibv_qp_ex *qpx, uint32_t rkey,
 *		uint64_t remote_addr, uint32_t len, const void *hash,
 *		uint8_t hash_len);
 *
 * DESCRIPTION
 *	The xiwdv_wr_* builders are used like the ibv_wr_* ones, between
 *	ibv_wr_start() and ibv_wr_complete() on a QP created with
 *	ibv_create_qp_ex() (any send_ops_flags); set the local buffer with
 *	ibv_wr_set_sge() afterwards where noted.
 *
 *	xiwdv_wr_masked_atomic_fetch_add() adds @add to the 64-bit word at
 *	@remote_addr (8-byte aligned, MR with IBV_ACCESS_REMOTE_ATOMIC) as
 *	independent fields: a set bit in @field_msbs marks the most
 *	significant bit of a field and the carry out of it is discarded
 *	(RFC 7306 section 5.1.1; 0 is a plain 64-bit FetchAdd). The original
 *	value is written to the one 8-byte SGE (ibv_wr_set_sge()).
 *
 *	xiwdv_wr_masked_atomic_cmp_swp() compares the bits of @compare_mask
 *	with @compare; if they all match, the bits of @swap_mask are replaced
 *	by those of @swap (section 5.1.2). The original value goes to the
 *	8-byte SGE; memory is not written when the comparison fails.
 *
 *	xiwdv_wr_rdma_write_imm64() is ibv_wr_rdma_write_imm() with the whole
 *	64-bit RFC 7306 Immediate Data; xiwdv_wr_imm64() sends Immediate
 *	Data alone (no Write, no local buffer). IBV_SEND_SOLICITED makes it
 *	Immediate Data with SE. Each consumes one receive WQE at the peer.
 *
 *	xiwdv_poll_cq() is ibv_poll_cq() that also stores, for each returned
 *	completion with IBV_WC_WITH_IMM, the full 64-bit immediate in
 *	@imm64[i] (0 for the others; wc[i].imm_data holds its low 32 bits in
 *	network byte order, as ibv_poll_cq() reports it).
 *
 *	xiwdv_reg_mr() is ibv_reg_mr() that also picks the digest a peer's
 *	RDMA Verify of the MR computes (crc32c by default, or sha256).
 *	xiwdv_wr_flush() and xiwdv_wr_verify() post the RDMA Flush and
 *	Verify of draft-talpey-rdma-commit (details at their declarations
 *	below); Atomic Write is rdma-core's ibv_wr_atomic_write(), or
 *	IBV_WR_ATOMIC_WRITE in ibv_post_send() with the 8 bytes in its one
 *	8-byte SGE. Write, Flush, Atomic Write make a commit: the Atomic
 *	Write is never placed before the Flush completed at the peer.
 *
 *	Completions: masked atomics complete as IBV_WC_FETCH_ADD and
 *	IBV_WC_COMP_SWAP, Immediate Data alone as IBV_WC_SEND; the receiver
 *	of either immediate form sees IBV_WC_RECV_RDMA_WITH_IMM whose
 *	byte_len is the length of the RDMA Write directly before it (0 for
 *	Immediate Data alone). Flush completes as XIWDV_WC_FLUSH, Atomic
 *	Write as IBV_WC_ATOMIC_WRITE, Verify as XIWDV_WC_VERIFY.
 *
 * RETURN VALUE
 *	xiwdv_is_xiw_context() is true for a context of an xiw device. The
 *	builders latch errors like the ibv_wr_* ones (ibv_wr_complete()
 *	returns ENOMEM if the SQ is full, EINVAL for a bad WR); on a QP of
 *	another provider they do nothing, so check the context first.
 *	xiwdv_poll_cq() returns what ibv_poll_cq() returns, or -1 with errno
 *	EOPNOTSUPP for a CQ of another provider.
 *	xiwdv_reg_mr() returns the MR, or NULL with errno (EINVAL: unknown
 *	digest, or XIWDV_ACCESS_FLUSH_PERSISTENT on memory that is not
 *	persistent memory; EOPNOTSUPP: not an xiw device).
 *
 * ERRORS AT THE PEER
 *	A misaligned target terminates the connection with "RDMAP / Remote
 *	Operation / catastrophic error localized to RDMAP stream" (memory
 *	untouched); an MR without the remote-atomic right with a remote
 *	protection error. The WR completes in error and the QP goes to
 *	IBV_QPS_ERR. A refused Flush, Atomic Write or Verify likewise:
 *	IBV_WC_REM_ACCESS_ERR for a missing right or a range out of bounds,
 *	IBV_WC_REM_OP_ERR for a Verify hash mismatch; wc.vendor_err holds
 *	the peer's Terminate as layer << 12 | type << 8 | code (0x0102:
 *	access rights, 0x0101: bounds, 0x02ff: hash mismatch).
 */
#ifndef XIWDV_H
#define XIWDV_H

#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * draft-talpey-rdma-commit (RDMA Flush, Atomic Write, Verify). Atomic
 * Write is rdma-core's ibv_wr_atomic_write() (send_ops_flags
 * IBV_QP_EX_WITH_ATOMIC_WRITE); Flush and Verify are below (a libxiw built
 * against rdma-core 45 or later also serves ibv_wr_flush(), the same as
 * xiwdv_wr_flush()). The device
 * reports IB_UVERBS_DEVICE_FLUSH_GLOBAL, _FLUSH_PERSISTENT and
 * _ATOMIC_WRITE (bits 38, 39, 40 of ibv_device_attr_ex.device_cap_flags_ex).
 */
#define XIWDV_ACCESS_FLUSH_GLOBAL	(1 << 8)   /* IBV_ACCESS_FLUSH_GLOBAL */
#define XIWDV_ACCESS_FLUSH_PERSISTENT	(1 << 9)   /* ..._FLUSH_PERSISTENT */
#define XIWDV_FLUSH_GLOBAL		(1 << 0)   /* IBV_FLUSH_GLOBAL */
#define XIWDV_FLUSH_PERSISTENT		(1 << 1)   /* IBV_FLUSH_PERSISTENT */
#define XIWDV_FLUSH_RANGE		0	   /* IBV_FLUSH_RANGE */
#define XIWDV_FLUSH_MR			1	   /* IBV_FLUSH_MR */
#define XIWDV_WC_FLUSH			8	   /* IBV_WC_FLUSH */
#define XIWDV_WC_ATOMIC_WRITE		9	   /* IBV_WC_ATOMIC_WRITE */
#define XIWDV_WC_VERIFY			135	   /* IBV_WC_DRIVER1 */
#define XIWDV_DEVICE_FLUSH_GLOBAL	(1ULL << 38)
#define XIWDV_DEVICE_FLUSH_PERSISTENT	(1ULL << 39)
#define XIWDV_DEVICE_ATOMIC_WRITE	(1ULL << 40)
#define XIWDV_VERIFY_MAX_HASH		32

/* Digest algorithm of an MR for RDMA Verify. */
enum xiwdv_digest {
	XIWDV_DIGEST_DEFAULT	= 0,	/* crc32c */
	XIWDV_DIGEST_CRC32C	= 1,	/* 4 bytes, little endian */
	XIWDV_DIGEST_SHA256	= 2,	/* 32 bytes */
};

/*
 * ibv_reg_mr() with the MR's Verify digest chosen (ibv_reg_mr() gives
 * XIWDV_DIGEST_DEFAULT). NULL with errno EINVAL for an unknown digest,
 * EOPNOTSUPP on another provider.
 */
struct ibv_mr *xiwdv_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
			    int access, enum xiwdv_digest digest);

/*
 * RDMA Flush of @len bytes at @remote_addr (@len < 2^32; 0: an ordering
 * point only) with @type XIWDV_FLUSH_GLOBAL and/or _PERSISTENT, or of
 * the whole MR of @rkey with @level XIWDV_FLUSH_MR. No local buffer.
 * Completes as XIWDV_WC_FLUSH once the peer answered.
 */
void xiwdv_wr_flush(struct ibv_qp_ex *qpx, uint32_t rkey,
		    uint64_t remote_addr, size_t len, uint8_t type,
		    uint8_t level);

/*
 * RDMA Verify of @len bytes at @remote_addr, digest algorithm of the
 * peer's MR. @hash_len 0: the peer returns its digest; else the peer
 * compares with @hash and a mismatch terminates the connection (the WR
 * completes with IBV_WC_REM_OP_ERR). The computed digest goes to the SGE
 * set with ibv_wr_set_sge() afterwards (optional: ibv_wr_set_sge_list()
 * with 0 SGEs discards it). Completes as XIWDV_WC_VERIFY with byte_len
 * the digest's length.
 */
void xiwdv_wr_verify(struct ibv_qp_ex *qpx, uint32_t rkey,
		     uint64_t remote_addr, uint32_t len, const void *hash,
		     uint8_t hash_len);

bool xiwdv_is_xiw_context(struct ibv_context *ctx);

void xiwdv_wr_masked_atomic_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey,
				      uint64_t remote_addr, uint64_t add,
				      uint64_t field_msbs);
void xiwdv_wr_masked_atomic_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey,
				    uint64_t remote_addr, uint64_t compare,
				    uint64_t compare_mask, uint64_t swap,
				    uint64_t swap_mask);
void xiwdv_wr_rdma_write_imm64(struct ibv_qp_ex *qpx, uint32_t rkey,
			       uint64_t remote_addr, uint64_t imm);
void xiwdv_wr_imm64(struct ibv_qp_ex *qpx, uint64_t imm);

int xiwdv_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc,
		  uint64_t *imm64);

#ifdef __cplusplus
}
#endif

#endif /* XIWDV_H */
