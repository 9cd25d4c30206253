/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * libxiw: rdma-core provider for the xiw software iWARP RNIC.
 *
 * Provider-private objects, the driver parts of the uverbs responses and
 * the prototypes shared by xiw.c (control path), xiw_ring.c (data path)
 * and xiw_qp_ex.c (the ibv_qp_ex work request builders).
 */
#ifndef XIW_H
#define XIW_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_ioctl_cmds.h>
#include <rdma/xiw-abi.h>
#include <rdma/xiw-sqe.h>

#include "xiw_pabi.h"
#include "xiwdv.h"

#define XIW_NODE_DESC		"xiw software iWARP"

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a)		(sizeof(a) / sizeof((a)[0]))
#endif

#define xiw_container_of(ptr, type, member)				\
	((type *)((char *)(ptr) - offsetof(type, member)))

/*
 * Logging goes through libibverbs (VERBS_LOG_LEVEL / VERBS_LOG_FILE);
 * errno is preserved so that callers can log on their error paths.
 */
#define xiw_log(vctx, level, fmt, ...)					\
	do {								\
		int xiw_log_errno_ = errno;				\
		__verbs_log(vctx, level, "xiw: %s: " fmt, __func__,	\
			    ##__VA_ARGS__);				\
		errno = xiw_log_errno_;					\
	} while (0)
#define xiw_err(ibctx, fmt, ...)					\
	xiw_log(verbs_get_ctx(ibctx), VERBS_LOG_ERR, fmt, ##__VA_ARGS__)
#define xiw_dbg(ibctx, fmt, ...)					\
	xiw_log(verbs_get_ctx(ibctx), VERBS_LOG_DEBUG, fmt, ##__VA_ARGS__)

/* ---- driver data of the uverbs responses ------------------------------- */

/*
 * libibverbs hands the driver part of a response to the kernel as
 * resp + sizeof(core response); the core is kept opaque (its uapi struct
 * ends in a flexible array), is what we pass to ibv_cmd_*() as the core
 * response, and the driver struct must start right after it.
 */
#define XIW_DECLARE_RESP(_name, _kabi, _drv)				\
	struct _name {							\
		_Alignas(8) unsigned char core[sizeof(struct _kabi)];	\
		struct _drv drv;					\
	};								\
	_Static_assert(offsetof(struct _name, drv) ==			\
		       sizeof(struct _kabi), #_name ": driver data offset"); \
	_Static_assert(sizeof(struct _name) ==				\
		       sizeof(struct _kabi) + sizeof(struct _drv),	\
		       #_name ": trailing padding")

XIW_DECLARE_RESP(xiw_get_context_resp, ib_uverbs_get_context_resp,
		 xiw_uresp_alloc_ctx);
XIW_DECLARE_RESP(xiw_create_cq_resp, ib_uverbs_create_cq_resp,
		 xiw_uresp_create_cq);
XIW_DECLARE_RESP(xiw_create_qp_resp, ib_uverbs_create_qp_resp,
		 xiw_uresp_create_qp);
XIW_DECLARE_RESP(xiw_create_qp_ex_resp, ib_uverbs_ex_create_qp_resp,
		 xiw_uresp_create_qp);
XIW_DECLARE_RESP(xiw_create_srq_resp, ib_uverbs_create_srq_resp,
		 xiw_uresp_create_srq);

/* ---- compatibility doorbell: legacy write-ABI post_send/post_recv ------ */

/*
 * Only for kernels without XIW_FEATURE_DOORBELL (see xiw_ring.c):
 * [ib_uverbs_cmd_hdr][ib_uverbs_post_send or ib_uverbs_post_recv] with
 * wr_count = sge_count = 0. Both core structs have the same fields.
 */
struct xiw_db_cmd {
	struct ib_uverbs_cmd_hdr hdr;
	__aligned_u64 response;
	__u32 qp_handle;
	__u32 wr_count;
	__u32 sge_count;
	__u32 wqe_size;
};

_Static_assert(sizeof(struct xiw_db_cmd) ==
	       sizeof(struct ib_uverbs_cmd_hdr) +
	       sizeof(struct ib_uverbs_post_send), "doorbell command size");
_Static_assert(sizeof(struct ib_uverbs_post_send) ==
	       sizeof(struct ib_uverbs_post_recv), "post_recv == post_send");
_Static_assert(offsetof(struct xiw_db_cmd, qp_handle) - 8 ==
	       offsetof(struct ib_uverbs_post_send, qp_handle) &&
	       offsetof(struct xiw_db_cmd, wqe_size) - 8 ==
	       offsetof(struct ib_uverbs_post_send, wqe_size) &&
	       offsetof(struct xiw_db_cmd, qp_handle) - 8 ==
	       offsetof(struct ib_uverbs_post_recv, qp_handle) &&
	       offsetof(struct xiw_db_cmd, wqe_size) - 8 ==
	       offsetof(struct ib_uverbs_post_recv, wqe_size),
	       "doorbell command layout");

/* ---- rings ------------------------------------------------------------- */

struct xiw_ring {
	void *map;			/* mmap()ed area, NULL if none */
	size_t map_len;
	struct xiw_queue_ctrl *ctrl;	/* at offset 0 of the mapping */
	uint8_t *elems;			/* at XIW_QUEUE_HDR_SIZE */
	uint32_t num;			/* power of two */
	uint32_t esize;
	uint32_t idx;			/* our SQ/RQ producer, CQ consumer */
};

static inline void *xiw_ring_elem(const struct xiw_ring *r, uint32_t idx)
{
	return r->elems + (size_t)(idx & (r->num - 1)) * r->esize;
}

/* ---- provider objects -------------------------------------------------- */

struct xiw_device {
	struct verbs_device vdev;
};

struct xiw_context {
	struct verbs_context vctx;
	uint32_t dev_id;
	uint32_t max_inline;		/* min(kernel's, XIW_MAX_INLINE) */
	uint64_t features;		/* enum xiw_ctx_features we use */
	/*
	 * Changed by every poll_cq on the context: a post that finds it as
	 * the QP's previous post left it is part of a burst (xiw_sq_doorbell).
	 */
	uint32_t poll_seq;
	/* an empty poll may yield the CPU to the kernel's TX (xiw_poll()) */
	bool poll_yield;
};

struct xiw_cq {
	struct verbs_cq vcq;
	pthread_spinlock_t lock;
	struct xiw_ring ring;
	uint32_t cq_id;
	/*
	 * The QPs whose send CQ this is, linked through their send_cq_next,
	 * under lock: xiw_poll() looks at their SQs' flags.
	 */
	struct xiw_qp *send_qps;
};

struct xiw_srq {
	struct verbs_srq vsrq;
	pthread_spinlock_t lock;
	struct xiw_ring ring;
	uint32_t max_sge;		/* SGEs per receive WR, as created */
};

struct xiw_qp {
	struct verbs_qp vqp;

	pthread_spinlock_t sq_lock;
	struct xiw_ring sq;
	bool sq_sig_all;
	uint32_t max_inline;
	/*
	 * SGEs per send / receive WR as the kernel created the QP (its
	 * create_qp response): a post beyond them fails with EINVAL, the
	 * kernel would take such a WQE as a local QP operation error.
	 */
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	/* doorbell object (SQ and RQ), or -1: the compatibility commands */
	int db_fd;
	struct xiw_db_cmd sq_db;
	struct ib_uverbs_post_send_resp sq_db_resp;

	pthread_spinlock_t rq_lock;
	struct xiw_ring rq;		/* not mapped if the QP has an SRQ */
	struct xiw_db_cmd rq_db;
	struct ib_uverbs_post_recv_resp rq_db_resp;

	uint32_t qp_id;
	uint32_t sq_poll_seq;		/* ctx poll_seq at the last SQ post */
	/* on its send CQ's send_qps list, NULL if not linked */
	struct xiw_cq *send_cq;
	struct xiw_qp *send_cq_next;

	/* ibv_qp_ex batch, valid under sq_lock from wr_start to wr_complete */
	uint16_t *wr_flags;		/* flags to publish, per SQ slot */
	struct xiw_sqe *wr_last;	/* WR the setters apply to */
	uint32_t wr_begin;		/* sq.idx at wr_start */
	uint32_t wr_next;		/* next slot to build */
	int wr_err;
};

static inline struct xiw_context *to_xctx(struct ibv_context *ibctx)
{
	return xiw_container_of(ibctx, struct xiw_context, vctx.context);
}

static inline struct xiw_cq *to_xcq(struct ibv_cq *ibcq)
{
	return xiw_container_of(ibcq, struct xiw_cq, vcq.cq);
}

static inline struct xiw_srq *to_xsrq(struct ibv_srq *ibsrq)
{
	return xiw_container_of(ibsrq, struct xiw_srq, vsrq.srq);
}

static inline struct xiw_qp *to_xqp(struct ibv_qp *ibqp)
{
	return xiw_container_of(ibqp, struct xiw_qp, vqp.qp);
}

static inline struct xiw_qp *qpex_to_xqp(struct ibv_qp_ex *qpex)
{
	return xiw_container_of(qpex, struct xiw_qp, vqp.qp_ex);
}

/* Symbols of the xiwdv.h API: the only ones the library exports. */
#define XIW_EXPORT __attribute__((visibility("default")))

/* ---- xiw_ring.c -------------------------------------------------------- */

int xiw_ring_map(struct xiw_ring *r, int cmd_fd, uint64_t key, uint32_t num,
		 uint32_t esize);
void xiw_ring_unmap(struct xiw_ring *r);
void xiw_qp_init_doorbells(struct xiw_qp *qp);
void xiw_qp_close_doorbell(struct xiw_qp *qp);
void xiw_cq_link_qp(struct xiw_qp *qp, struct ibv_cq *send_cq);
void xiw_cq_unlink_qp(struct xiw_qp *qp);
void xiw_sq_doorbell(struct xiw_qp *qp);
int xiw_sqe_post_check(const struct xiw_qp *qp, const struct xiw_sqe *sqe,
		       uint16_t flags);

int xiw_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		  struct ibv_send_wr **bad_wr);
int xiw_bind_mw(struct ibv_qp *ibqp, struct ibv_mw *mw,
		struct ibv_mw_bind *mw_bind);
int xiw_sqe_bind(const struct xiw_qp *qp, struct xiw_sqe *sqe, uint32_t rkey,
		 const struct ibv_mw_bind_info *bind_info);
int xiw_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		  struct ibv_recv_wr **bad_wr);
int xiw_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad_wr);
int xiw_poll_cq(struct ibv_cq *ibcq, int num_entries, struct ibv_wc *wc);
int xiw_req_notify_cq(struct ibv_cq *ibcq, int solicited_only);

/* ---- xiw_qp_ex.c ------------------------------------------------------- */

/* rdma-core's ibv_wr_flush() exists from rdma-core 45 on. */
#if XIW_HAVE_WR_FLUSH
#define XIW_SEND_OPS_FLUSH	IBV_QP_EX_WITH_FLUSH
#else
#define XIW_SEND_OPS_FLUSH	0
#endif

/* The IBV_QP_EX_WITH_* operations the provider implements. */
#define XIW_SUPPORTED_SEND_OPS						\
	(IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | \
	 IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_INV |		\
	 IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |	\
	 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_ATOMIC_WRITE | \
	 XIW_SEND_OPS_FLUSH)

/* ... and with the kernel's memory windows (XIW_FEATURE_MW) */
#define XIW_SEND_OPS_MW	(IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV)

static inline bool xiw_ctx_has(struct ibv_context *ibctx, uint64_t feature)
{
	return to_xctx(ibctx)->features & feature;
}

void xiw_qp_ex_set_ops(struct xiw_qp *qp);

#endif /* XIW_H */
