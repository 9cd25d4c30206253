// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libxiw: the ibv_qp_ex work request API (ibv_wr_start(), the ibv_wr_<op>()
 * builders and setters, ibv_wr_complete()).
 *
 * wr_start takes the SQ lock and remembers where the batch begins. Each
 * builder claims the next free SQ slot and fills it in place, the setters
 * complete the last one, and the flags to publish are parked in
 * qp->wr_flags[] so that no slot becomes visible to the kernel before
 * wr_complete, which checks the whole batch, publishes it in order and
 * rings the doorbell. Any error inside the batch is latched in wr_err and
 * returned by wr_complete; then nothing of the batch is posted.
 */
#include <endian.h>
#include <string.h>

#include "xiw.h"

/* Claim and initialise the next SQ slot of the batch. */
static struct xiw_sqe *xiw_wr_new(struct xiw_qp *qp, uint8_t op)
{
	struct ibv_qp_ex *qpex = &qp->vqp.qp_ex;
	struct xiw_sqe *sqe;
	uint16_t f = 0;

	qp->wr_last = NULL;
	if (qp->wr_err)
		return NULL;
	if (qp->wr_next - qp->wr_begin >= qp->sq.num) {
		qp->wr_err = ENOMEM;
		return NULL;
	}
	sqe = xiw_ring_elem(&qp->sq, qp->wr_next);
	if (__atomic_load_n(&sqe->flags, __ATOMIC_ACQUIRE)) {
		qp->wr_err = ENOMEM;
		return NULL;
	}

	if ((qpex->wr_flags & IBV_SEND_SIGNALED) || qp->sq_sig_all)
		f |= XIW_WQE_SIGNALED;
	if (qpex->wr_flags & IBV_SEND_SOLICITED)
		f |= XIW_WQE_SOLICITED;
	if (qpex->wr_flags & IBV_SEND_FENCE)
		f |= XIW_WQE_READ_FENCE;

	sqe->wr_id = qpex->wr_id;
	sqe->opcode = op;
	sqe->num_sge = 0;
	sqe->rkey = 0;
	sqe->raddr = 0;
	sqe->imm = 0;
	qp->wr_flags[qp->wr_next & (qp->sq.num - 1)] = f;
	qp->wr_next++;
	qp->wr_last = sqe;
	return sqe;
}

/* The WR the setters apply to, or NULL (error latched) if none. */
static struct xiw_sqe *xiw_wr_cur(struct xiw_qp *qp)
{
	if (qp->wr_err)
		return NULL;
	if (!qp->wr_last) {
		qp->wr_err = EINVAL;
		return NULL;
	}
	return qp->wr_last;
}

static uint16_t *xiw_wr_cur_flags(struct xiw_qp *qp)
{
	return &qp->wr_flags[(qp->wr_next - 1) & (qp->sq.num - 1)];
}

/* ---- builders ---------------------------------------------------------- */

static void xiw_wr_send(struct ibv_qp_ex *qpex)
{
	xiw_wr_new(qpex_to_xqp(qpex), XIW_OP_SEND);
}

static void xiw_wr_send_inv(struct ibv_qp_ex *qpex, uint32_t invalidate_rkey)
{
	struct xiw_sqe *sqe = xiw_wr_new(qpex_to_xqp(qpex), XIW_OP_SEND_INV);

	if (sqe)
		sqe->rkey = invalidate_rkey;
}

static void xiw_wr_rdma(struct ibv_qp_ex *qpex, uint8_t op, uint32_t rkey,
			uint64_t remote_addr)
{
	struct xiw_sqe *sqe = xiw_wr_new(qpex_to_xqp(qpex), op);

	if (sqe) {
		sqe->rkey = rkey;
		sqe->raddr = remote_addr;
	}
}

static void xiw_wr_rdma_write(struct ibv_qp_ex *qpex, uint32_t rkey,
			      uint64_t remote_addr)
{
	xiw_wr_rdma(qpex, XIW_OP_WRITE, rkey, remote_addr);
}

static void xiw_wr_rdma_write_imm(struct ibv_qp_ex *qpex, uint32_t rkey,
				  uint64_t remote_addr, __be32 imm_data)
{
	struct xiw_sqe *sqe;

	xiw_wr_rdma(qpex, XIW_OP_WRITE_IMM, rkey, remote_addr);
	sqe = qpex_to_xqp(qpex)->wr_last;
	if (sqe)	/* same mapping as post_send: low 32 bits, host order */
		sqe->imm = be32toh(imm_data);
}

static void xiw_wr_rdma_read(struct ibv_qp_ex *qpex, uint32_t rkey,
			     uint64_t remote_addr)
{
	xiw_wr_rdma(qpex, XIW_OP_READ, rkey, remote_addr);
}

static void xiw_wr_atomic(struct ibv_qp_ex *qpex, uint8_t op, uint32_t rkey,
			  uint64_t remote_addr, uint64_t compare_add,
			  uint64_t swap)
{
	struct xiw_sqe *sqe = xiw_wr_new(qpex_to_xqp(qpex), op);

	if (sqe) {
		sqe->rkey = rkey;
		sqe->raddr = remote_addr;
		sqe->atomic.compare_add = compare_add;
		sqe->atomic.swap = swap;
		sqe->atomic.compare_add_mask = 0;
		sqe->atomic.swap_mask = 0;
	}
}

static void xiw_wr_atomic_cmp_swp(struct ibv_qp_ex *qpex, uint32_t rkey,
				  uint64_t remote_addr, uint64_t compare,
				  uint64_t swap)
{
	xiw_wr_atomic(qpex, XIW_OP_ATOMIC_CSWAP, rkey, remote_addr, compare,
		      swap);
}

static void xiw_wr_atomic_fetch_add(struct ibv_qp_ex *qpex, uint32_t rkey,
				    uint64_t remote_addr, uint64_t add)
{
	xiw_wr_atomic(qpex, XIW_OP_ATOMIC_FADD, rkey, remote_addr, add, 0);
}

/* The 8 bytes at @atomic_wr, stored as they are at @remote_addr. */
static void xiw_wr_atomic_write(struct ibv_qp_ex *qpex, uint32_t rkey,
				uint64_t remote_addr, const void *atomic_wr)
{
	struct xiw_sqe *sqe = xiw_wr_new(qpex_to_xqp(qpex),
					 XIW_OP_ATOMIC_WRITE);

	if (sqe) {
		sqe->rkey = rkey;
		sqe->raddr = remote_addr;
		memcpy(&sqe->atomic_write, atomic_wr, sizeof(sqe->atomic_write));
	}
}

/*
 * Memory windows (XIW_FEATURE_MW; installed only then): bind a type 2
 * window to a new STag @rkey (ibv_post_send()'s IBV_WR_BIND_MW, the same
 * rules: a type 1 window fails the batch with EINVAL), invalidate a type
 * 2 window's STag. Neither takes SGEs or inline data: a setter after
 * them fails the batch at wr_complete (the SQE contract).
 */
static void xiw_wr_bind_mw(struct ibv_qp_ex *qpex, struct ibv_mw *mw,
			   uint32_t rkey,
			   const struct ibv_mw_bind_info *bind_info)
{
	struct xiw_qp *qp = qpex_to_xqp(qpex);
	struct xiw_sqe *sqe;

	if (!mw || mw->type != IBV_MW_TYPE_2) {
		if (!qp->wr_err)
			qp->wr_err = EINVAL;
		qp->wr_last = NULL;
		return;
	}
	sqe = xiw_wr_new(qp, XIW_OP_BIND_MW);
	if (sqe)
		qp->wr_err = xiw_sqe_bind(qp, sqe, rkey, bind_info);
}

static void xiw_wr_local_inv(struct ibv_qp_ex *qpex, uint32_t invalidate_rkey)
{
	struct xiw_sqe *sqe = xiw_wr_new(qpex_to_xqp(qpex), XIW_OP_LOCAL_INV);

	if (sqe)
		sqe->rkey = invalidate_rkey;
}

/* ---- xiwdv.h builders -------------------------------------------------- */

/* A builder of xiwdv.h on a QP of another provider latches nothing. */
static struct xiw_qp *xiwdv_qp(struct ibv_qp_ex *qpx)
{
	if (!xiwdv_is_xiw_context(qpx->qp_base.context))
		return NULL;
	return qpex_to_xqp(qpx);
}

XIW_EXPORT void xiwdv_wr_masked_atomic_fetch_add(struct ibv_qp_ex *qpx,
						 uint32_t rkey,
						 uint64_t remote_addr,
						 uint64_t add,
						 uint64_t field_msbs)
{
	struct xiw_qp *qp = xiwdv_qp(qpx);
	struct xiw_sqe *sqe;

	if (!qp)
		return;
	sqe = xiw_wr_new(qp, XIW_OP_ATOMIC_MASKED_FADD);
	if (sqe) {
		sqe->rkey = rkey;
		sqe->raddr = remote_addr;
		sqe->atomic.compare_add = add;
		sqe->atomic.compare_add_mask = field_msbs;
		sqe->atomic.swap = 0;
		sqe->atomic.swap_mask = 0;
	}
}

XIW_EXPORT void xiwdv_wr_masked_atomic_cmp_swp(struct ibv_qp_ex *qpx,
					       uint32_t rkey,
					       uint64_t remote_addr,
					       uint64_t compare,
					       uint64_t compare_mask,
					       uint64_t swap,
					       uint64_t swap_mask)
{
	struct xiw_qp *qp = xiwdv_qp(qpx);
	struct xiw_sqe *sqe;

	if (!qp)
		return;
	sqe = xiw_wr_new(qp, XIW_OP_ATOMIC_MASKED_CSWAP);
	if (sqe) {
		sqe->rkey = rkey;
		sqe->raddr = remote_addr;
		sqe->atomic.compare_add = compare;
		sqe->atomic.compare_add_mask = compare_mask;
		sqe->atomic.swap = swap;
		sqe->atomic.swap_mask = swap_mask;
	}
}

XIW_EXPORT void xiwdv_wr_rdma_write_imm64(struct ibv_qp_ex *qpx,
					  uint32_t rkey, uint64_t remote_addr,
					  uint64_t imm)
{
	struct xiw_qp *qp = xiwdv_qp(qpx);
	struct xiw_sqe *sqe;

	if (!qp)
		return;
	sqe = xiw_wr_new(qp, XIW_OP_WRITE_IMM);
	if (sqe) {
		sqe->rkey = rkey;
		sqe->raddr = remote_addr;
		sqe->imm = imm;
	}
}

XIW_EXPORT void xiwdv_wr_imm64(struct ibv_qp_ex *qpx, uint64_t imm)
{
	struct xiw_qp *qp = xiwdv_qp(qpx);
	struct xiw_sqe *sqe;

	if (!qp)
		return;
	sqe = xiw_wr_new(qp, XIW_OP_IMM);
	if (sqe)
		sqe->imm = imm;
}

/* RDMA Flush: rdma-core's wr_flush (where it has one) and xiwdv's. */
static void xiw_wr_flush_on(struct xiw_qp *qp, uint32_t rkey,
			    uint64_t remote_addr, size_t len, uint8_t type,
			    uint8_t level)
{
	struct xiw_sqe *sqe = xiw_wr_new(qp, XIW_OP_FLUSH);

	if (sqe) {
		sqe->rkey = rkey;
		sqe->raddr = remote_addr;
		sqe->flush.length = len;
		sqe->flush.type = type;
		sqe->flush.level = level;
	}
}

#if XIW_HAVE_WR_FLUSH
static void xiw_wr_flush(struct ibv_qp_ex *qpex, uint32_t rkey,
			 uint64_t remote_addr, size_t len, uint8_t type,
			 uint8_t level)
{
	xiw_wr_flush_on(qpex_to_xqp(qpex), rkey, remote_addr, len, type,
			level);
}
#endif

XIW_EXPORT void xiwdv_wr_flush(struct ibv_qp_ex *qpx, uint32_t rkey,
			       uint64_t remote_addr, size_t len, uint8_t type,
			       uint8_t level)
{
	struct xiw_qp *qp = xiwdv_qp(qpx);

	if (qp)
		xiw_wr_flush_on(qp, rkey, remote_addr, len, type, level);
}

XIW_EXPORT void xiwdv_wr_verify(struct ibv_qp_ex *qpx, uint32_t rkey,
				uint64_t remote_addr, uint32_t len,
				const void *hash, uint8_t hash_len)
{
	struct xiw_qp *qp = xiwdv_qp(qpx);
	struct xiw_sqe *sqe;

	if (!qp)
		return;
	if (hash_len > XIW_VERIFY_MAX_HASH || (hash_len && !hash)) {
		if (!qp->wr_err)
			qp->wr_err = EINVAL;
		qp->wr_last = NULL;
		return;
	}
	sqe = xiw_wr_new(qp, XIW_OP_VERIFY);
	if (sqe) {
		sqe->rkey = rkey;
		sqe->raddr = remote_addr;
		memset(&sqe->verify.sge, 0, sizeof(sqe->verify.sge));
		sqe->verify.length = len;
		sqe->verify.hash_len = hash_len;
		if (hash_len)
			memcpy(sqe->verify.hash, hash, hash_len);
	}
}

/* ---- setters ----------------------------------------------------------- */

static void xiw_wr_set_sge(struct ibv_qp_ex *qpex, uint32_t lkey,
			   uint64_t addr, uint32_t length)
{
	struct xiw_qp *qp = qpex_to_xqp(qpex);
	struct xiw_sqe *sqe = xiw_wr_cur(qp);

	if (!sqe)
		return;
	sqe->sge[0].addr = addr;
	sqe->sge[0].length = length;
	sqe->sge[0].lkey = lkey;
	sqe->num_sge = 1;
	*xiw_wr_cur_flags(qp) &= ~XIW_WQE_INLINE;
}

static void xiw_wr_set_sge_list(struct ibv_qp_ex *qpex, size_t num_sge,
				const struct ibv_sge *sg_list)
{
	struct xiw_qp *qp = qpex_to_xqp(qpex);
	struct xiw_sqe *sqe = xiw_wr_cur(qp);

	if (!sqe)
		return;
	/* wr_complete fails the batch with EINVAL */
	if (num_sge > qp->max_send_sge) {
		qp->wr_err = EINVAL;
		return;
	}
	if (num_sge)
		memcpy(sqe->sge, sg_list, num_sge * sizeof(struct ibv_sge));
	sqe->num_sge = num_sge;
	*xiw_wr_cur_flags(qp) &= ~XIW_WQE_INLINE;
}

static void xiw_wr_set_inline_data_list(struct ibv_qp_ex *qpex,
					size_t num_buf,
					const struct ibv_data_buf *buf_list)
{
	struct xiw_qp *qp = qpex_to_xqp(qpex);
	struct xiw_sqe *sqe = xiw_wr_cur(qp);
	size_t total = 0, i;

	if (!sqe)
		return;
	for (i = 0; i < num_buf; i++) {
		size_t len = buf_list[i].length;

		if (len > qp->max_inline - total) {
			qp->wr_err = EINVAL;
			return;
		}
		if (len)
			memcpy(sqe->inline_data + total, buf_list[i].addr, len);
		total += len;
	}
	sqe->num_sge = total;
	*xiw_wr_cur_flags(qp) |= XIW_WQE_INLINE;
}

static void xiw_wr_set_inline_data(struct ibv_qp_ex *qpex, void *addr,
				   size_t length)
{
	struct ibv_data_buf buf = { .addr = addr, .length = length };

	xiw_wr_set_inline_data_list(qpex, 1, &buf);
}

/* ---- batch ------------------------------------------------------------- */

static void xiw_wr_start(struct ibv_qp_ex *qpex)
{
	struct xiw_qp *qp = qpex_to_xqp(qpex);

	pthread_spin_lock(&qp->sq_lock);
	qp->wr_begin = qp->sq.idx;
	qp->wr_next = qp->sq.idx;
	qp->wr_last = NULL;
	qp->wr_err = 0;
}

static int xiw_wr_complete(struct ibv_qp_ex *qpex)
{
	struct xiw_qp *qp = qpex_to_xqp(qpex);
	uint32_t mask = qp->sq.num - 1;
	bool posted = false;
	int rv = qp->wr_err;
	uint32_t i;

	for (i = qp->wr_begin; !rv && i != qp->wr_next; i++)
		rv = xiw_sqe_post_check(qp, xiw_ring_elem(&qp->sq, i),
					qp->wr_flags[i & mask]);
	if (!rv && qp->wr_next != qp->wr_begin) {
		for (i = qp->wr_begin; i != qp->wr_next; i++) {
			struct xiw_sqe *sqe = xiw_ring_elem(&qp->sq, i);

			__atomic_store_n(&sqe->flags,
					 qp->wr_flags[i & mask] | XIW_WQE_VALID,
					 __ATOMIC_RELEASE);
		}
		qp->sq.idx = qp->wr_next;
		posted = true;
	}
	qp->wr_last = NULL;
	pthread_spin_unlock(&qp->sq_lock);

	if (posted)
		xiw_sq_doorbell(qp);
	return rv;
}

static void xiw_wr_abort(struct ibv_qp_ex *qpex)
{
	struct xiw_qp *qp = qpex_to_xqp(qpex);

	/* nothing was published: the claimed slots still read as free */
	qp->wr_last = NULL;
	pthread_spin_unlock(&qp->sq_lock);
}

/*
 * Install the builders. All implemented ones are set whatever the
 * application asked for in send_ops_flags (create_qp_ex rejects flags we
 * do not implement, and the memory window ones without the kernel's
 * XIW_FEATURE_MW); the others stay NULL.
 */
void xiw_qp_ex_set_ops(struct xiw_qp *qp)
{
	struct ibv_qp_ex *qpex = &qp->vqp.qp_ex;

	qpex->wr_send = xiw_wr_send;
	qpex->wr_send_inv = xiw_wr_send_inv;
	qpex->wr_rdma_write = xiw_wr_rdma_write;
	qpex->wr_rdma_write_imm = xiw_wr_rdma_write_imm;
	qpex->wr_rdma_read = xiw_wr_rdma_read;
	qpex->wr_atomic_cmp_swp = xiw_wr_atomic_cmp_swp;
	qpex->wr_atomic_fetch_add = xiw_wr_atomic_fetch_add;
	qpex->wr_atomic_write = xiw_wr_atomic_write;
#if XIW_HAVE_WR_FLUSH
	qpex->wr_flush = xiw_wr_flush;
#endif
	if (xiw_ctx_has(qp->vqp.qp.context, XIW_FEATURE_MW)) {
		qpex->wr_bind_mw = xiw_wr_bind_mw;
		qpex->wr_local_inv = xiw_wr_local_inv;
	}

	qpex->wr_set_sge = xiw_wr_set_sge;
	qpex->wr_set_sge_list = xiw_wr_set_sge_list;
	qpex->wr_set_inline_data = xiw_wr_set_inline_data;
	qpex->wr_set_inline_data_list = xiw_wr_set_inline_data_list;

	qpex->wr_start = xiw_wr_start;
	qpex->wr_complete = xiw_wr_complete;
	qpex->wr_abort = xiw_wr_abort;
}
