// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libxiw control path: provider registration and device matching, the
 * user context, device/port queries, PDs, MRs, memory windows, CQs, SRQs
 * and QPs.
 *
 * Objects are created through the libibverbs ibv_cmd_*() helpers; CQs,
 * SRQs and QPs then map their rings with the keys the kernel returns in
 * the driver part of the response (xiw-abi.h). Every error path undoes
 * what was done and returns/sets a positive errno.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xiw.h"

#ifndef XIW_HAVE_WR_FLUSH
#define XIW_HAVE_WR_FLUSH 0
#endif
#ifndef XIW_IBVERBS_VERSION
#define XIW_IBVERBS_VERSION "unknown"
#endif

static const struct verbs_context_ops xiw_context_ops;
static const struct verbs_context_ops xiw_mw_ops;

/* ---- device / port ----------------------------------------------------- */

static int xiw_query_device_ex(struct ibv_context *ibctx,
			       const struct ibv_query_device_ex_input *input,
			       struct ibv_device_attr_ex *attr,
			       size_t attr_size)
{
	struct ib_uverbs_ex_query_device_resp resp;
	size_t resp_size = sizeof(resp);
	uint64_t fw;
	int rv;

	rv = ibv_cmd_query_device_any(ibctx, input, attr, attr_size, &resp,
				      &resp_size);
	if (rv)
		return rv;

	/* The kernel's u64 fw_ver is major.minor.sub in bits 32/16/0. */
	fw = resp.base.fw_ver;
	snprintf(attr->orig_attr.fw_ver, sizeof(attr->orig_attr.fw_ver),
		 "%d.%d.%d", (int)((fw >> 32) & 0xffff),
		 (int)((fw >> 16) & 0xffff), (int)(fw & 0xffff));
	return 0;
}

static int xiw_query_port(struct ibv_context *ibctx, uint8_t port,
			  struct ibv_port_attr *attr)
{
	struct ibv_query_port cmd = {};

	return ibv_cmd_query_port(ibctx, port, attr, &cmd, sizeof(cmd));
}

/* ---- PD / MR ----------------------------------------------------------- */

static struct ibv_pd *xiw_alloc_pd(struct ibv_context *ibctx)
{
	struct ibv_alloc_pd cmd = {};
	struct ib_uverbs_alloc_pd_resp resp = {};
	struct ibv_pd *pd;
	int rv;

	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return NULL;
	rv = ibv_cmd_alloc_pd(ibctx, pd, &cmd, sizeof(cmd), &resp,
			      sizeof(resp));
	if (rv) {
		free(pd);
		errno = rv;
		return NULL;
	}
	return pd;
}

static int xiw_dealloc_pd(struct ibv_pd *pd)
{
	int rv = ibv_cmd_dealloc_pd(pd);

	if (rv)
		return rv;
	free(pd);
	return 0;
}

/* REG_MR with the driver data of xiw-abi.h (the Verify digest). */
struct xiw_reg_mr_cmd {
	struct ibv_reg_mr ibv_cmd;
	struct xiw_ureq_reg_mr drv;
};

static struct ibv_mr *xiw_reg_mr_digest(struct ibv_pd *pd, void *addr,
					size_t len, uint64_t hca_va,
					int access, uint32_t digest)
{
	struct xiw_reg_mr_cmd cmd = {};
	struct ib_uverbs_reg_mr_resp resp = {};
	struct verbs_mr *vmr;
	int rv;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr)
		return NULL;
	cmd.drv.digest = digest;
	/*
	 * The Flush rights go in the driver data when the kernel takes them
	 * there: ib_uverbs of kernels before 6.2 refuses them in the access
	 * flags.
	 */
	if (to_xctx(pd->context)->features & XIW_FEATURE_REG_MR_ACCESS_EXT) {
		cmd.drv.access_ext = access & (XIW_ACCESS_FLUSH_GLOBAL |
					       XIW_ACCESS_FLUSH_PERSISTENT);
		access &= ~(int)cmd.drv.access_ext;
	}
	/* Defaults: no driver data, which older kernels also accept */
	rv = ibv_cmd_reg_mr(pd, addr, len, hca_va, access, vmr, &cmd.ibv_cmd,
			    digest || cmd.drv.access_ext ? sizeof(cmd) :
			    sizeof(cmd.ibv_cmd), &resp, sizeof(resp));
	if (rv) {
		free(vmr);
		errno = rv;
		return NULL;
	}
	return &vmr->ibv_mr;
}

static struct ibv_mr *xiw_reg_mr(struct ibv_pd *pd, void *addr, size_t len,
				 uint64_t hca_va, int access)
{
	return xiw_reg_mr_digest(pd, addr, len, hca_va, access,
				 XIW_DIGEST_DEFAULT);
}

/*
 * xiwdv.h: ibv_reg_mr() with the MR's Verify digest. What libibverbs'
 * ibv_reg_mr() does around the provider is done here too (fork
 * protection, the ibv_mr fields it fills), so ibv_dereg_mr() undoes it.
 */
XIW_EXPORT struct ibv_mr *xiwdv_reg_mr(struct ibv_pd *pd, void *addr,
				       size_t length, int access,
				       enum xiwdv_digest digest)
{
	struct ibv_mr *mr;

	if (!xiwdv_is_xiw_context(pd->context)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if ((unsigned int)digest >= XIW_DIGEST_NUM) {
		errno = EINVAL;
		return NULL;
	}
	if (ibv_dontfork_range(addr, length))
		return NULL;
	mr = xiw_reg_mr_digest(pd, addr, length, (uintptr_t)addr, access,
			       digest);
	if (!mr) {
		int err = errno;

		ibv_dofork_range(addr, length);
		errno = err;
		return NULL;
	}
	mr->context = pd->context;
	mr->pd = pd;
	mr->addr = addr;
	mr->length = length;
	return mr;
}

static int xiw_dereg_mr(struct verbs_mr *vmr)
{
	int rv = ibv_cmd_dereg_mr(vmr);

	if (rv)
		return rv;
	free(vmr);
	return 0;
}

/* ---- memory windows (XIW_FEATURE_MW) ------------------------------------ */

/*
 * A window is a kernel object with an STag of its own (type 1 or 2); it
 * is allocated unbound. Binding and invalidating go through the send
 * queue (xiw_ring.c, xiw_qp_ex.c), in order with the QP's other WRs.
 * These ops are installed only on a context whose kernel offers
 * XIW_FEATURE_MW (xiw_alloc_context()).
 */
static struct ibv_mw *xiw_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct ibv_alloc_mw cmd = {};
	struct ib_uverbs_alloc_mw_resp resp = {};
	struct ibv_mw *mw;
	int rv;

	mw = calloc(1, sizeof(*mw));
	if (!mw)
		return NULL;
	/* fills context, pd, rkey, handle and type */
	rv = ibv_cmd_alloc_mw(pd, type, mw, &cmd, sizeof(cmd), &resp,
			      sizeof(resp));
	if (rv) {
		free(mw);
		errno = rv;
		return NULL;
	}
	return mw;
}

/* A bound window may be deallocated: the kernel unbinds it. */
static int xiw_dealloc_mw(struct ibv_mw *mw)
{
	int rv = ibv_cmd_dealloc_mw(mw);

	if (rv)
		return rv;
	free(mw);
	return 0;
}

/* ---- CQ ---------------------------------------------------------------- */

/*
 * A CQ's or SRQ's ring as user space holds it: the mapping of the ring the
 * kernel created and the lock that serialises this process's side of it.
 * On failure nothing is left mapped.
 */
static int xiw_locked_ring_open(struct xiw_ring *ring, pthread_spinlock_t *lock,
				int cmd_fd, uint64_t key, uint32_t num,
				size_t esize)
{
	int rv = xiw_ring_map(ring, cmd_fd, key, num, esize);

	if (rv)
		return rv;
	rv = pthread_spin_init(lock, PTHREAD_PROCESS_PRIVATE);
	if (rv)
		xiw_ring_unmap(ring);
	return rv;
}

/* Only once the kernel agreed to destroy the object: a busy one stays usable. */
static void xiw_locked_ring_close(struct xiw_ring *ring,
				  pthread_spinlock_t *lock)
{
	xiw_ring_unmap(ring);
	pthread_spin_destroy(lock);
}

static struct ibv_cq *xiw_create_cq(struct ibv_context *ibctx, int num_cqe,
				    struct ibv_comp_channel *channel,
				    int comp_vector)
{
	struct ibv_create_cq cmd = {};
	struct xiw_create_cq_resp resp = {};
	struct xiw_cq *cq;
	int rv;

	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return NULL;
	rv = ibv_cmd_create_cq(ibctx, num_cqe, channel, comp_vector,
			       &cq->vcq.cq, &cmd, sizeof(cmd),
			       (void *)resp.core, sizeof(resp));
	if (rv)
		goto err_free;

	cq->cq_id = resp.drv.cq_id;
	rv = xiw_locked_ring_open(&cq->ring, &cq->lock, ibctx->cmd_fd,
				  resp.drv.cq_key, resp.drv.num_cqe,
				  sizeof(struct xiw_cqe));
	if (rv) {
		xiw_err(ibctx, "CQ %u: mapping %u CQEs failed: %d\n",
			cq->cq_id, resp.drv.num_cqe, rv);
		ibv_cmd_destroy_cq(&cq->vcq.cq);
		goto err_free;
	}
	return &cq->vcq.cq;

err_free:
	free(cq);
	errno = rv;
	return NULL;
}

static int xiw_destroy_cq(struct ibv_cq *ibcq)
{
	struct xiw_cq *cq = to_xcq(ibcq);
	int rv;

	rv = ibv_cmd_destroy_cq(ibcq);
	if (rv)
		return rv;
	xiw_locked_ring_close(&cq->ring, &cq->lock);
	free(cq);
	return 0;
}

/* ---- SRQ --------------------------------------------------------------- */

static struct ibv_srq *xiw_create_srq(struct ibv_pd *pd,
				      struct ibv_srq_init_attr *attr)
{
	struct ibv_create_srq cmd = {};
	struct xiw_create_srq_resp resp = {};
	struct ibv_context *ibctx = pd->context;
	struct xiw_srq *srq;
	int rv;

	if (attr->attr.max_sge > XIW_MAX_SGE) {
		errno = EINVAL;
		return NULL;
	}
	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return NULL;
	rv = ibv_cmd_create_srq(pd, &srq->vsrq.srq, attr, &cmd, sizeof(cmd),
				(void *)resp.core, sizeof(resp));
	if (rv)
		goto err_free;

	/* ibv_cmd_create_srq() wrote the kernel's attributes back */
	srq->max_sge = attr->attr.max_sge;
	rv = xiw_locked_ring_open(&srq->ring, &srq->lock, ibctx->cmd_fd,
				  resp.drv.srq_key, resp.drv.num_rqe,
				  sizeof(struct xiw_rqe));
	if (rv) {
		xiw_err(ibctx, "SRQ: mapping %u RQEs failed: %d\n",
			resp.drv.num_rqe, rv);
		ibv_cmd_destroy_srq(&srq->vsrq.srq);
		goto err_free;
	}
	return &srq->vsrq.srq;

err_free:
	free(srq);
	errno = rv;
	return NULL;
}

static int xiw_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr,
			  int attr_mask)
{
	struct ibv_modify_srq cmd = {};

	return ibv_cmd_modify_srq(ibsrq, attr, attr_mask, &cmd, sizeof(cmd));
}

static int xiw_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	struct ibv_query_srq cmd = {};

	return ibv_cmd_query_srq(ibsrq, attr, &cmd, sizeof(cmd));
}

static int xiw_destroy_srq(struct ibv_srq *ibsrq)
{
	struct xiw_srq *srq = to_xsrq(ibsrq);
	int rv;

	rv = ibv_cmd_destroy_srq(ibsrq);
	if (rv)
		return rv;
	xiw_locked_ring_close(&srq->ring, &srq->lock);
	free(srq);
	return 0;
}

/* ---- QP ---------------------------------------------------------------- */

static int xiw_check_qp_cap(const struct ibv_qp_cap *cap)
{
	if (cap->max_send_sge > XIW_MAX_SGE ||
	    cap->max_recv_sge > XIW_MAX_SGE ||
	    cap->max_inline_data > XIW_MAX_INLINE)
		return EINVAL;
	return 0;
}

/*
 * Map the rings of a QP the kernel just created; undone by xiw_qp_fini.
 * @cap: the capabilities as ibv_cmd_create_qp*() wrote them back from the
 * kernel's response.
 */
static int xiw_qp_setup(struct xiw_qp *qp, bool with_srq, bool sq_sig_all,
			const struct ibv_qp_cap *cap,
			const struct xiw_uresp_create_qp *u)
{
	struct ibv_context *ibctx = qp->vqp.qp.context;
	int rv;

	qp->qp_id = u->qp_id;
	/*
	 * qp->vqp.qp.state stays as libibverbs set it (RESET): ibv_modify_qp
	 * and ibv_query_qp update it. The kernel reports the new QP in Idle,
	 * as INIT, through ibv_query_qp.
	 */
	qp->sq_sig_all = sq_sig_all;
	qp->max_inline = to_xctx(ibctx)->max_inline;
	qp->max_send_sge = cap->max_send_sge;
	qp->max_recv_sge = cap->max_recv_sge;

	rv = xiw_ring_map(&qp->sq, ibctx->cmd_fd, u->sq_key, u->num_sqe,
			  sizeof(struct xiw_sqe));
	if (rv) {
		xiw_err(ibctx, "QP %u: mapping %u SQEs failed: %d\n",
			qp->qp_id, u->num_sqe, rv);
		return rv;
	}
	if (!with_srq) {
		rv = xiw_ring_map(&qp->rq, ibctx->cmd_fd, u->rq_key,
				  u->num_rqe, sizeof(struct xiw_rqe));
		if (rv) {
			xiw_err(ibctx, "QP %u: mapping %u RQEs failed: %d\n",
				qp->qp_id, u->num_rqe, rv);
			goto err_sq;
		}
	}
	rv = pthread_spin_init(&qp->sq_lock, PTHREAD_PROCESS_PRIVATE);
	if (rv)
		goto err_rq;
	rv = pthread_spin_init(&qp->rq_lock, PTHREAD_PROCESS_PRIVATE);
	if (rv)
		goto err_sq_lock;
	xiw_qp_init_doorbells(qp);
	return 0;

err_sq_lock:
	pthread_spin_destroy(&qp->sq_lock);
err_rq:
	xiw_ring_unmap(&qp->rq);
err_sq:
	xiw_ring_unmap(&qp->sq);
	return rv;
}

static void xiw_qp_fini(struct xiw_qp *qp)
{
	xiw_cq_unlink_qp(qp);
	xiw_qp_close_doorbell(qp);
	pthread_spin_destroy(&qp->rq_lock);
	pthread_spin_destroy(&qp->sq_lock);
	xiw_ring_unmap(&qp->rq);
	xiw_ring_unmap(&qp->sq);
	free(qp->wr_flags);
}

static struct ibv_qp *xiw_create_qp(struct ibv_pd *pd,
				    struct ibv_qp_init_attr *attr)
{
	struct ibv_create_qp cmd = {};
	struct xiw_create_qp_resp resp = {};
	struct xiw_qp *qp;
	int rv;

	rv = xiw_check_qp_cap(&attr->cap);
	if (rv) {
		errno = rv;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;
	rv = ibv_cmd_create_qp(pd, &qp->vqp.qp, attr, &cmd, sizeof(cmd),
			       (void *)resp.core, sizeof(resp));
	if (rv)
		goto err_free;
	rv = xiw_qp_setup(qp, attr->srq != NULL, attr->sq_sig_all,
			  &attr->cap, &resp.drv);
	if (rv)
		goto err_destroy;
	xiw_cq_link_qp(qp, attr->send_cq);
	return &qp->vqp.qp;

err_destroy:
	ibv_cmd_destroy_qp(&qp->vqp.qp);
err_free:
	free(qp);
	errno = rv;
	return NULL;
}

enum {
	XIW_QP_INIT_ATTR_MASK = IBV_QP_INIT_ATTR_PD |
				IBV_QP_INIT_ATTR_CREATE_FLAGS |
				IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
};

static struct ibv_qp *xiw_create_qp_ex(struct ibv_context *ibctx,
				       struct ibv_qp_init_attr_ex *attr)
{
	uint64_t send_ops = XIW_SUPPORTED_SEND_OPS;
	struct ibv_create_qp_ex cmd = {};
	struct xiw_create_qp_ex_resp resp = {};
	struct xiw_qp *qp;
	int rv;

	if (xiw_ctx_has(ibctx, XIW_FEATURE_MW))
		send_ops |= XIW_SEND_OPS_MW;
	if ((attr->comp_mask & ~(uint32_t)XIW_QP_INIT_ATTR_MASK) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
	     attr->create_flags) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	     (attr->send_ops_flags & ~send_ops))) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	rv = xiw_check_qp_cap(&attr->cap);
	if (rv) {
		errno = rv;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;
	rv = ibv_cmd_create_qp_ex2(ibctx, &qp->vqp, attr, &cmd, sizeof(cmd),
				   (void *)resp.core, sizeof(resp));
	if (rv)
		goto err_free;
	rv = xiw_qp_setup(qp, attr->srq != NULL, attr->sq_sig_all,
			  &attr->cap, &resp.drv);
	if (rv)
		goto err_destroy;

	qp->wr_flags = calloc(qp->sq.num, sizeof(*qp->wr_flags));
	if (!qp->wr_flags) {
		rv = ENOMEM;
		goto err_fini;
	}
	/* ibv_cmd_create_qp_ex2() reset comp_mask: we do implement qp_ex */
	qp->vqp.comp_mask |= VERBS_QP_EX;
	xiw_qp_ex_set_ops(qp);
	xiw_cq_link_qp(qp, attr->send_cq);
	return &qp->vqp.qp;

err_fini:
	xiw_qp_fini(qp);
err_destroy:
	ibv_cmd_destroy_qp(&qp->vqp.qp);
err_free:
	free(qp);
	errno = rv;
	return NULL;
}

/*
 * Ring indices are never rewound, not even at RESET: the kernel discards
 * (RESET) or flushes (ERR) the WQEs from its consumer index up to the first
 * slot that is not VALID, which leaves it equal to our producer index.
 */
static int xiw_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
			 int attr_mask)
{
	struct ibv_modify_qp cmd = {};

	return ibv_cmd_modify_qp(ibqp, attr, attr_mask, &cmd, sizeof(cmd));
}

static int xiw_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
			int attr_mask, struct ibv_qp_init_attr *init_attr)
{
	struct ibv_query_qp cmd = {};

	return ibv_cmd_query_qp(ibqp, attr, attr_mask, init_attr, &cmd,
				sizeof(cmd));
}

static int xiw_destroy_qp(struct ibv_qp *ibqp)
{
	struct xiw_qp *qp = to_xqp(ibqp);
	int rv;

	rv = ibv_cmd_destroy_qp(ibqp);
	if (rv)
		return rv;
	xiw_qp_fini(qp);
	free(qp);
	return 0;
}

static bool xiw_esize_ok(uint32_t reported, size_t ours)
{
	return !reported || reported == ours;
}

/* ---- context ----------------------------------------------------------- */

static struct verbs_context *xiw_alloc_context(struct ibv_device *ibdev,
					       int cmd_fd, void *private_data)
{
	struct ibv_get_context cmd = {};
	struct xiw_get_context_resp resp = {};
	struct xiw_context *ctx;
	const char *env;
	int rv;

	(void)private_data;
	_Static_assert(offsetof(struct xiw_context, vctx) == 0,
		       "verbs_context first in xiw_context");
	/* closes cmd_fd on failure */
	ctx = _verbs_init_and_alloc_context(ibdev, cmd_fd, sizeof(*ctx), NULL,
					    RDMA_DRIVER_UNKNOWN);
	if (!ctx)
		return NULL;

	rv = ibv_cmd_get_context(&ctx->vctx, &cmd, sizeof(cmd),
				 (void *)resp.core, sizeof(resp));
	if (rv)
		goto err;

	/* Element sizes are fixed by XIW_ABI_VERSION; 0 means "as defined". */
	if (!xiw_esize_ok(resp.drv.sqe_size, sizeof(struct xiw_sqe)) ||
	    !xiw_esize_ok(resp.drv.rqe_size, sizeof(struct xiw_rqe)) ||
	    !xiw_esize_ok(resp.drv.cqe_size, sizeof(struct xiw_cqe))) {
		xiw_err(&ctx->vctx.context,
			"element sizes %u/%u/%u, expected %zu/%zu/%zu\n",
			resp.drv.sqe_size, resp.drv.rqe_size,
			resp.drv.cqe_size, sizeof(struct xiw_sqe),
			sizeof(struct xiw_rqe), sizeof(struct xiw_cqe));
		rv = EPROTO;
		goto err;
	}
	ctx->dev_id = resp.drv.dev_id;
	ctx->max_inline = resp.drv.max_inline < XIW_MAX_INLINE ?
			  resp.drv.max_inline : XIW_MAX_INLINE;
	/*
	 * An older kernel writes a shorter response: features stays 0 from
	 * the zeroed buffer. XIW_LEGACY_DOORBELL makes the provider behave
	 * as with a kernel without the doorbell object (comparisons, tests).
	 */
	ctx->features = resp.drv.features & (XIW_FEATURE_DOORBELL |
					     XIW_FEATURE_REG_MR_ACCESS_EXT |
					     XIW_FEATURE_DOORBELL_BATCH |
					     XIW_FEATURE_MW);
	if (getenv("XIW_LEGACY_DOORBELL"))
		ctx->features &= ~(uint64_t)(XIW_FEATURE_DOORBELL |
					     XIW_FEATURE_DOORBELL_BATCH);
	/* every doorbell runs TX in the poster's syscall (comparisons) */
	if (getenv("XIW_NO_BATCH_DOORBELL"))
		ctx->features &= ~(uint64_t)XIW_FEATURE_DOORBELL_BATCH;
	/* XIW_POLL_YIELD=0: empty polls never yield (xiw_poll(); comparisons) */
	env = getenv("XIW_POLL_YIELD");
	ctx->poll_yield = !env || strcmp(env, "0");

	verbs_set_ops(&ctx->vctx, &xiw_context_ops);
	/*
	 * Without the kernel's memory windows the ops stay libibverbs'
	 * defaults: ibv_alloc_mw() fails with EOPNOTSUPP.
	 */
	if (ctx->features & XIW_FEATURE_MW)
		verbs_set_ops(&ctx->vctx, &xiw_mw_ops);
	return &ctx->vctx;

err:
	verbs_uninit_context(&ctx->vctx);
	free(ctx);
	errno = rv;
	return NULL;
}

static void xiw_free_context(struct ibv_context *ibctx)
{
	struct xiw_context *ctx = to_xctx(ibctx);

	verbs_uninit_context(&ctx->vctx);
	free(ctx);
}

static const struct verbs_context_ops xiw_context_ops = {
	.alloc_pd = xiw_alloc_pd,
	.create_cq = xiw_create_cq,
	.create_qp = xiw_create_qp,
	.create_qp_ex = xiw_create_qp_ex,
	.create_srq = xiw_create_srq,
	.dealloc_pd = xiw_dealloc_pd,
	.dereg_mr = xiw_dereg_mr,
	.destroy_cq = xiw_destroy_cq,
	.destroy_qp = xiw_destroy_qp,
	.destroy_srq = xiw_destroy_srq,
	.free_context = xiw_free_context,
	.modify_qp = xiw_modify_qp,
	.modify_srq = xiw_modify_srq,
	.poll_cq = xiw_poll_cq,
	.post_recv = xiw_post_recv,
	.post_send = xiw_post_send,
	.post_srq_recv = xiw_post_srq_recv,
	.query_device_ex = xiw_query_device_ex,
	.query_port = xiw_query_port,
	.query_qp = xiw_query_qp,
	.query_srq = xiw_query_srq,
	.reg_mr = xiw_reg_mr,
	.req_notify_cq = xiw_req_notify_cq,
};

/* Added to the above by a context with XIW_FEATURE_MW. */
static const struct verbs_context_ops xiw_mw_ops = {
	.alloc_mw = xiw_alloc_mw,
	.bind_mw = xiw_bind_mw,
	.dealloc_mw = xiw_dealloc_mw,
};

/* ---- device and registration ------------------------------------------- */

static struct verbs_device *xiw_alloc_device(struct verbs_sysfs_dev *sdev)
{
	struct xiw_device *dev;

	(void)sdev;
	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return NULL;
	return &dev->vdev;
}

static void xiw_uninit_device(struct verbs_device *vdev)
{
	free(xiw_container_of(vdev, struct xiw_device, vdev));
}

/*
 * Devices are named xiw<N> by default, but "rdma link add NAME type xiw"
 * lets the user pick any name, and xiw has no driver id of its own. So a
 * device matches by name ("xiw*") or, failing that, by the node
 * description the kernel driver sets.
 */
static bool xiw_match_device(struct verbs_sysfs_dev *sdev)
{
	char desc[128];

	if (sdev->match)
		return true;
	if (sdev->driver_id != RDMA_DRIVER_UNKNOWN ||
	    sdev->node_type != IBV_NODE_RNIC)
		return false;
	if (ibv_read_ibdev_sysfs_file(desc, sizeof(desc), sdev,
				      "node_desc") <= 0)
		return false;
	return strncmp(desc, XIW_NODE_DESC, strlen(XIW_NODE_DESC)) == 0;
}

static const struct verbs_match_ent xiw_match_table[] = {
	XIW_NAME_MATCH("xiw", NULL),
	{},
};

static const struct verbs_device_ops xiw_dev_ops = {
	.name = "xiw",
	.match_min_abi_version = XIW_ABI_VERSION,
	.match_max_abi_version = XIW_ABI_VERSION,
	.match_table = xiw_match_table,
	.match_device = xiw_match_device,
	.alloc_device = xiw_alloc_device,
	.uninit_device = xiw_uninit_device,
	.alloc_context = xiw_alloc_context,
};

/*
 * PABI 34 covers rdma-core 34 .. 56, but struct ibv_qp_ex (embedded in
 * verbs_qp, which libibverbs writes) grew in 45 and verbs_context_ops in
 * 35/36. Refuse to register with a libibverbs whose layout differs from
 * the one we were built against, rather than corrupt memory. The release
 * is read from the real file name, libibverbs.so.1.<abi>.<release>.<n>;
 * if it cannot be determined, trust the build.
 */
static bool xiw_libibverbs_layout_ok(void)
{
	unsigned int abi, rel;
	const char *base;
	bool ok = true;
	Dl_info info;
	char *path;

	if (!dladdr((void *)ibv_get_device_name, &info) || !info.dli_fname)
		return true;
	path = realpath(info.dli_fname, NULL);
	if (!path)
		return true;
	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	if (sscanf(base, "libibverbs.so.1.%u.%u", &abi, &rel) == 2 &&
	    (rel < 36 || (rel >= 45) != !!XIW_HAVE_WR_FLUSH)) {
		fprintf(stderr,
			"libxiw: built against libibverbs %s, running with %s: "
			"provider not registered, rebuild it\n",
			XIW_IBVERBS_VERSION, base);
		ok = false;
	}
	free(path);
	return ok;
}

static void __attribute__((constructor)) xiw_register_driver(void)
{
	if (xiw_libibverbs_layout_ok())
		verbs_register_driver_34(&xiw_dev_ops);
}
