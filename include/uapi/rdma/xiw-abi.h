/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause */
/*
 * xiw user/kernel ABI, shared by xiw.ko and the libxiw rdma-core provider.
 *
 * Queues (SQ, RQ, SRQ, CQ) live in kernel memory (vmalloc_user) and are
 * mmap'd into the process through rdma_user_mmap_entry keys returned at
 * object creation. Every queue mapping has the same layout:
 *
 *	offset 0:			struct xiw_queue_ctrl (64 bytes)
 *	offset XIW_QUEUE_HDR_SIZE:	num_entries entries of the element size
 *
 * num_entries is a power of two; producer and consumer indices are
 * free-running u32 counters, the slot is index & (num_entries - 1).
 *
 * Ownership of a slot is carried by the element's flags word, never by the
 * indices: the producer fills the element and then store-releases its
 * flags with XIW_WQE_VALID (XIW_CQE_VALID); the consumer load-acquires the
 * flags, copies the element out, and store-releases flags = 0 to return the
 * slot. The kernel never trusts user-written indices or contents: it copies
 * a work element before validating it and bounds every index it derives.
 *
 * All fields are in host byte order.
 */
#ifndef XIW_ABI_USER_H
#define XIW_ABI_USER_H

#include <linux/types.h>
#include <rdma/ib_user_ioctl_cmds.h>

#define XIW_ABI_VERSION		1

#define XIW_MAX_SGE		6
#define XIW_MAX_INLINE		96	/* sizeof(struct xiw_sge) * XIW_MAX_SGE */
#define XIW_QUEUE_HDR_SIZE	64
#define XIW_INVAL_MMAP_KEY	(~0ULL)
#define XIW_VERIFY_MAX_HASH	32	/* bytes of the longest digest */

/*
 * Digest algorithms of RDMA Verify (draft-talpey-rdma-commit section
 * 3.1.2): an attribute of the MR being verified, chosen when it is
 * registered (struct xiw_ureq_reg_mr, xiwdv_reg_mr(), xiw_mr_set_digest()
 * for kernel MRs). XIW_DIGEST_DEFAULT is crc32c.
 */
enum xiw_digest {
	XIW_DIGEST_DEFAULT	= 0,
	XIW_DIGEST_CRC32C	= 1,	/* 4 bytes, little endian (as MPA's) */
	XIW_DIGEST_SHA256	= 2,	/* 32 bytes */
	XIW_DIGEST_NUM,
};

/*
 * Flush types and levels, MR rights: the values of the kernel's
 * IB_FLUSH_*, IB_UVERBS_ACCESS_FLUSH_* (and of rdma-core's newer
 * IBV_FLUSH_*, IBV_ACCESS_FLUSH_*), which rdma-core 44 lacks.
 */
#define XIW_FLUSH_TYPE_GLOBAL		(1U << 0)
#define XIW_FLUSH_TYPE_PERSISTENT	(1U << 1)
#define XIW_FLUSH_LEVEL_RANGE		0
#define XIW_FLUSH_LEVEL_MR		1
#define XIW_ACCESS_FLUSH_GLOBAL		(1U << 8)
#define XIW_ACCESS_FLUSH_PERSISTENT	(1U << 9)

/* Completion opcode of XIW_OP_VERIFY (rdma-core's IBV_WC_DRIVER1). */
#define XIW_WC_VERIFY		135

/* Work request opcodes in struct xiw_sqe.opcode. */
enum xiw_wr_opcode {
	XIW_OP_WRITE			= 0,
	XIW_OP_WRITE_IMM		= 1,	/* RDMA Write + Immediate Data */
	XIW_OP_SEND			= 2,
	XIW_OP_SEND_INV			= 3,
	XIW_OP_READ			= 4,
	XIW_OP_READ_INV			= 5,	/* kernel ULPs only */
	XIW_OP_ATOMIC_FADD		= 6,
	XIW_OP_ATOMIC_CSWAP		= 7,
	XIW_OP_ATOMIC_MASKED_FADD	= 8,
	XIW_OP_ATOMIC_MASKED_CSWAP	= 9,
	XIW_OP_FLUSH			= 10,
	XIW_OP_ATOMIC_WRITE		= 11,
	XIW_OP_VERIFY			= 12,
	XIW_OP_IMM			= 13,	/* Immediate Data alone */
	XIW_OP_BIND_MW			= 14,	/* bind a memory window */
	XIW_OP_NUM_USER,			/* rows below 32 (xiw-sqe.h) */
	XIW_OP_REG_MR			= 32,	/* kernel only */
	/*
	 * Invalidate a fast-registration MR (kernel consumers) or a type 2
	 * memory window (user SQs too, XIW_FEATURE_MW).
	 */
	XIW_OP_LOCAL_INV		= 33,
};

/* struct xiw_sqe.flags / struct xiw_rqe.flags */
enum xiw_wqe_flags {
	XIW_WQE_VALID		= 1 << 0,
	XIW_WQE_INLINE		= 1 << 1,
	XIW_WQE_SIGNALED	= 1 << 2,
	XIW_WQE_SOLICITED	= 1 << 3,
	XIW_WQE_READ_FENCE	= 1 << 4,
	XIW_WQE_LOCAL_FENCE	= 1 << 5,
};

/* Layout-compatible with struct ibv_sge. */
struct xiw_sge {
	__aligned_u64 addr;
	__u32 length;
	__u32 lkey;
};

/* Send queue element: 128 bytes, two cache lines. */
struct xiw_sqe {
	__aligned_u64 wr_id;
	__u16 flags;
	__u8 num_sge;		/* SGE count, or inline byte count if INLINE */
	__u8 opcode;		/* enum xiw_wr_opcode */
	__u32 rkey;		/* remote STag; STag to invalidate for *_INV */
	__aligned_u64 raddr;
	__aligned_u64 imm;	/* RFC 7306 64-bit Immediate Data */
	union {
		struct xiw_sge sge[XIW_MAX_SGE];
		__u8 inline_data[XIW_MAX_INLINE];
		struct {
			struct xiw_sge sge;	/* 8-byte result buffer */
			__aligned_u64 compare_add;
			__aligned_u64 swap;
			__aligned_u64 compare_add_mask;
			__aligned_u64 swap_mask;
		} atomic;
		/*
		 * XIW_OP_FLUSH (rkey, raddr): @length bytes at raddr, at
		 * most 2^32 - 1 (0: no byte, an ordering point that still
		 * checks the STag); XIW_FLUSH_LEVEL_MR flushes the whole MR of
		 * rkey, raddr and length ignored. num_sge 0.
		 */
		struct {
			__aligned_u64 length;
			__u8 type;	/* XIW_FLUSH_TYPE_* bits */
			__u8 level;	/* XIW_FLUSH_LEVEL_* */
		} flush;
		/*
		 * XIW_OP_ATOMIC_WRITE (rkey, raddr 8-byte aligned): these 8
		 * bytes, stored as they are in memory (no byte swapping).
		 * num_sge 0.
		 */
		__aligned_u64 atomic_write;
		/*
		 * XIW_OP_VERIFY (rkey, raddr): digest of @length bytes with
		 * the algorithm of the peer's MR (enum xiw_digest). With
		 * @hash_len > 0 the peer compares @hash and terminates the
		 * connection on a mismatch; the digest it computed goes to
		 * @sge (num_sge 1, at least the digest's length) or nowhere
		 * (num_sge 0).
		 */
		struct {
			struct xiw_sge sge;
			__u32 length;
			__u8 hash_len;
			__u8 rsvd[3];
			__u8 hash[XIW_VERIFY_MAX_HASH];
		} verify;
		/*
		 * XIW_OP_BIND_MW (XIW_FEATURE_MW): bind the memory window
		 * whose STag index is @rkey's to @length bytes at @raddr, in
		 * the addresses of the MR whose lkey is @mr_lkey, granting
		 * @access (IB_UVERBS_ACCESS_REMOTE_READ, _REMOTE_WRITE,
		 * _REMOTE_ATOMIC, XIW_ACCESS_FLUSH_*). The window's STag
		 * becomes @rkey: its key must differ from the window's
		 * current one, so an old STag stops working. A type 2 window
		 * must be unbound (invalidated) first; a type 1 window is
		 * rebound in one step, and unbound by @length 0 (@mr_lkey,
		 * @raddr and @access ignored). num_sge 0. Completes with
		 * IB_UVERBS_WC_BIND_MW, or IB_WC_MW_BIND_ERR and the QP in
		 * error when the kernel refuses it (its reason in the
		 * kernel log at debug level).
		 */
		struct {
			__aligned_u64 length;
			__u32 mr_lkey;
			__u32 access;
		} bind;
	};
};

/* Receive queue element: 128 bytes. */
struct xiw_rqe {
	__aligned_u64 wr_id;
	__u16 flags;
	__u8 num_sge;
	__u8 rsvd0;
	__u32 rsvd1;
	struct xiw_sge sge[XIW_MAX_SGE];
	__aligned_u64 rsvd2[2];
};

/* struct xiw_cqe.flags */
enum xiw_cqe_flags {
	XIW_CQE_VALID		= 1 << 0,
	XIW_CQE_WITH_IMM	= 1 << 1,
	XIW_CQE_WITH_INV	= 1 << 2,
	XIW_CQE_SOLICITED	= 1 << 3,
};

/* Completion queue element: 32 bytes. opcode/status use ib_uverbs values. */
struct xiw_cqe {
	__aligned_u64 wr_id;
	__u32 flags;
	__u8 opcode;		/* enum ib_uverbs_wc_opcode */
	__u8 status;		/* enum ib_wc_status */
	/*
	 * Error completions caused by a Terminate from the peer: its layer
	 * << 4 | error type, and its error code (0, 0 otherwise). The
	 * provider reports (vendor_err << 8 | vendor_code) as
	 * ibv_wc.vendor_err, the upper 16 bits of the Terminate Control.
	 */
	__u8 vendor_err;
	__u8 vendor_code;
	__u32 byte_len;
	__u32 qp_num;
	union {
		__aligned_u64 imm;	/* full 64-bit RFC 7306 immediate */
		__u32 inv_stag;
	};
};

/* struct xiw_queue_ctrl.flags */
enum xiw_queue_ctrl_flags {
	XIW_CQ_ARM_NEXT		= 1 << 0,	/* CQ: event on next completion */
	XIW_CQ_ARM_SOLICITED	= 1 << 1,	/* CQ: event on solicited one */
	XIW_SQ_KERNEL_ACTIVE	= 1 << 8,	/* SQ: kernel is draining */
	XIW_QUEUE_ERROR		= 1 << 16,	/* queue is in error */
};

/* Head of every mapped queue, 64 bytes. */
struct xiw_queue_ctrl {
	__u32 flags;		/* enum xiw_queue_ctrl_flags */
	__u32 num_entries;
	__u32 entry_size;
	__u32 overflow;		/* CQ: completions lost to a full ring */
	__u32 rsvd[12];
};

/*
 * struct xiw_uresp_alloc_ctx.features: what the kernel offers beyond the
 * first ABI 1 kernel, one bit per capability (like io_uring's
 * params.features). The provider uses a capability only if its bit is set.
 */
enum xiw_ctx_features {
	/*
	 * Each user QP may have a doorbell object (XIW_OBJECT_DOORBELL
	 * below), which rings the SQ and kicks the RQ (enum
	 * xiw_doorbell_kick). Without it the doorbells are the legacy
	 * zero-WR POST_SEND / POST_RECV write()s on the command fd.
	 */
	XIW_FEATURE_DOORBELL	= 1 << 0,
	/*
	 * struct xiw_ureq_reg_mr.access_ext carries the Flush rights of a
	 * user MR (ib_uverbs of kernels before 6.2 refuses them in REG_MR's
	 * access flags). Without it they go in the access flags.
	 */
	XIW_FEATURE_REG_MR_ACCESS_EXT	= 1 << 1,
	/* The doorbell object takes XIW_DOORBELL_SQ_BATCH. */
	XIW_FEATURE_DOORBELL_BATCH	= 1 << 2,
	/*
	 * Memory windows: ALLOC_MW / DEALLOC_MW, and user SQs take
	 * XIW_OP_BIND_MW and XIW_OP_LOCAL_INV.
	 */
	XIW_FEATURE_MW			= 1 << 3,
};

/*
 * The response grows at its end only. A kernel accepts any response
 * buffer of at least the first layout (up to rsvd) and fills what fits;
 * a provider zeroes its buffer first, so whatever an older kernel did not
 * write (features) reads as 0.
 */
struct xiw_uresp_alloc_ctx {
	__u32 dev_id;
	__u32 max_inline;
	__u32 sqe_size;
	__u32 rqe_size;
	__u32 cqe_size;
	__u32 rsvd;
	/* added later, 0 from older kernels */
	__aligned_u64 features;	/* enum xiw_ctx_features */
};

/*
 * Driver data of REG_MR (optional: a shorter or absent request means
 * XIW_DIGEST_DEFAULT and no access_ext). Unknown digests and bits of
 * access_ext other than XIW_ACCESS_FLUSH_*: EINVAL. access_ext is ORed
 * into the access flags (XIW_FEATURE_REG_MR_ACCESS_EXT; was rsvd, 0).
 */
struct xiw_ureq_reg_mr {
	__u32 digest;		/* enum xiw_digest */
	__u32 access_ext;	/* XIW_ACCESS_FLUSH_GLOBAL, _PERSISTENT */
};

struct xiw_uresp_create_cq {
	__aligned_u64 cq_key;
	__u32 cq_id;
	__u32 num_cqe;
};

struct xiw_uresp_create_qp {
	__aligned_u64 sq_key;
	__aligned_u64 rq_key;	/* XIW_INVAL_MMAP_KEY if the QP uses an SRQ */
	__u32 qp_id;
	__u32 num_sqe;
	__u32 num_rqe;
	__u32 rsvd;
};

struct xiw_uresp_create_srq {
	__aligned_u64 srq_key;
	__u32 num_rqe;
	__u32 rsvd;
};

/*
 * QP doorbell object (kernel/xiw_doorbell.c), offered when the context
 * response has XIW_FEATURE_DOORBELL. A driver-specific uverbs ioctl on the
 * context's command fd allocates it for one of the context's user QPs:
 *
 *	object XIW_OBJECT_DOORBELL, method XIW_METHOD_DOORBELL_ALLOC,
 *	attributes XIW_ATTR_DOORBELL_ALLOC_FD (new fd, returned in its data)
 *	and XIW_ATTR_DOORBELL_ALLOC_QP (the QP's uverbs handle).
 *
 * A write() on that fd is the QP's doorbell, without the uverbs command
 * dispatch: 0 bytes ring the SQ (XIW_DOORBELL_SQ); 4 bytes are one __u32
 * of enum xiw_doorbell_kick bits; anything else fails with EINVAL. One
 * doorbell per QP (EEXIST for a second one while the first is open; once
 * it is closed a new one may be allocated); after the QP is destroyed a
 * write fails with ENXIO. The fd is closed like any other (close, or
 * process exit).
 */
enum xiw_doorbell_kick {
	XIW_DOORBELL_SQ		= 1 << 0,	/* run the SQ; in error, flush it */
	XIW_DOORBELL_RQ		= 1 << 1,	/* in error, flush the RQ */
	/*
	 * With XIW_DOORBELL_SQ only (alone: EINVAL), a hint: the poster is in
	 * a burst (it posts again before it looks for completions), so the
	 * kernel may return before the WR is sent and drain the SQ from
	 * another CPU, keeping XIW_SQ_KERNEL_ACTIVE set meanwhile. Kernels
	 * with XIW_FEATURE_DOORBELL_BATCH accept it.
	 */
	XIW_DOORBELL_SQ_BATCH	= 1 << 2,
};

enum xiw_objects {
	XIW_OBJECT_DOORBELL = (1U << UVERBS_ID_NS_SHIFT),
};

enum xiw_doorbell_methods {
	XIW_METHOD_DOORBELL_ALLOC = (1U << UVERBS_ID_NS_SHIFT),
};

enum xiw_doorbell_alloc_attrs {
	XIW_ATTR_DOORBELL_ALLOC_FD = (1U << UVERBS_ID_NS_SHIFT),
	XIW_ATTR_DOORBELL_ALLOC_QP,
};

#endif /* XIW_ABI_USER_H */
