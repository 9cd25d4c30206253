/* SPDX-License-Identifier: GPL-2.0 */
/*
 * xiw - the TX engine's parts and what they give each other.
 *
 * xiw_tx.c      the engine: framing, pushing to TCP, the batch, the loop
 *               that picks the next FPDU, Terminate and RTR frames;
 * xiw_tx_sq.c   the requester: SQ WRs fetched, checked, framed, completed;
 * xiw_tx_resp.c the responder: inbound requests executed and answered;
 * xiw_tx_pages.c and xiw_tx_zc.c: the QP's copy pages and zero copy.
 *
 * Everything here runs as the owner of XIW_DP_TX_BUSY (xiw_sched.c
 * decides who that is), unless a function says otherwise. Nothing outside
 * TX calls these, except the data-path core for set-up and teardown.
 */
#ifndef XIW_TX_H
#define XIW_TX_H

#include "xiw_dp.h"

/* xiw_tx.c: framing helpers for the two halves */
static inline void xiw_tx_bv_virt(struct bio_vec *bv, void *p, u32 len)
{
	bvec_set_virt(bv, p, len);
}

/*
 * Does TX's runner hold the socket's spinlock, not its lock (RX, an
 * atomic post)? Then it must not sleep: it sends with
 * tcp_sendmsg_locked() and allocates with GFP_ATOMIC.
 */
static inline bool xiw_tx_locked(const struct xiw_tx_ctx *tx)
{
	return tx->run != XIW_TX_RUN_WORK;
}

static inline gfp_t xiw_tx_gfp(const struct xiw_tx_ctx *tx)
{
	return xiw_tx_locked(tx) ? GFP_ATOMIC : GFP_KERNEL;
}

/* Untagged DDP header of the FPDU being framed; @last ends the message. */
static inline void xiw_tx_untagged(struct xiw_qp_dp *dp, unsigned int op,
				   u32 qn, u32 mo, bool last, u32 inv_stag)
{
	struct xiw_ddp_untagged *h = &dp->tx.hdr.untagged;

	h->ctrl.ddp = xiw_ddp_ctrl(false, last);
	h->ctrl.rdmap = xiw_rdmap_ctrl(op);
	h->inval_stag = cpu_to_be32(inv_stag);
	h->qn = cpu_to_be32(qn);
	h->msn = cpu_to_be32(dp->tx.msn[qn]);
	h->mo = cpu_to_be32(mo);
	if (last)
		dp->tx.msn[qn]++;
}

/* Tagged DDP header of the FPDU being framed. */
static inline void xiw_tx_tagged(struct xiw_qp_dp *dp, unsigned int op,
				 u32 stag, u64 to, bool last)
{
	struct xiw_ddp_tagged *h = &dp->tx.hdr.tagged;

	h->ctrl.ddp = xiw_ddp_ctrl(true, last);
	h->ctrl.rdmap = xiw_rdmap_ctrl(op);
	h->stag = cpu_to_be32(stag);
	h->to = cpu_to_be64(to);
}

static inline bool xiw_tx_op_atomic(u8 opcode)
{
	const struct xiw_sqe_rule *r = xiw_sqe_op_rule(opcode);

	return r && r->kind == XIW_SQE_KIND_ATOMIC;
}

/* SQ WRs that complete when the peer's response arrives (use ORD). */
static inline bool xiw_tx_op_needs_ord(u8 opcode)
{
	const struct xiw_sqe_rule *r = xiw_sqe_op_rule(opcode);

	return r && (r->flags & XIW_SQE_ORD);
}

int xiw_tx_add_sges(struct xiw_tx_ctx *tx, struct xiw_lsge *sge, int nsge,
		    u32 from, u32 n, bool *splice_ok);
void xiw_tx_seal(struct xiw_qp_dp *dp, u32 hdr_len, u32 payload);
int xiw_tx_loop(struct xiw_qp_dp *dp);
bool xiw_tx_idle(struct xiw_qp_dp *dp);

/*
 * Is the SQ slot TX takes next published? Caller owns TX_BUSY. A look
 * without sq_lock: the consumer index is written only by the owner of
 * TX_BUSY (xiw_tx_sq_fetch(), under sq_lock) and by the flush of a QP in
 * ERROR (under sq_lock), so the caller reads its own index, or one the
 * flush is moving; the slot's flags are read with acquire, which pairs
 * with the poster's release of VALID (xiw_wq_post(), the provider). The
 * answer is a hint: "published" is checked again by xiw_wq_take() under
 * sq_lock, and an "empty" that a post races with is covered as for a
 * locked look: a kernel post kicks TX after publishing (TX_MORE), a user
 * poster's WQE is looked for again by xiw_sched_sq_idle() after the full
 * barrier that pairs with the poster's.
 */
static inline bool xiw_tx_sq_head_valid(struct xiw_qp *qp)
{
	return xiw_wq_published(&qp->sq, READ_ONCE(qp->sq.cons), 0);
}

/* xiw_tx_sq.c: the requester */
struct xiw_orqe *xiw_tx_sq_orq_add(struct xiw_qp_dp *dp, u8 type);
int xiw_tx_sq_next(struct xiw_qp_dp *dp);
void xiw_tx_sq_complete(struct xiw_qp_dp *dp, u8 status);

/* Release what the current SQ WR holds. */
static inline void xiw_tx_sq_wqe_end(struct xiw_qp_dp *dp)
{
	xiw_dp_put_lsges(dp->tx.sge, dp->tx.nsge);
	dp->tx.nsge = 0;
	dp->tx.sq_active = false;
}

/*
 * An FPDU of the SQ WR is in TCP, or (@batched) in the batch, whose
 * sending completes the WR (xiw_tx.c). After its last FPDU the WR is
 * done, unless it waits for the peer's response (ORD): RX completes it.
 * Inline: the engine calls it for every FPDU it sends.
 */
static inline void xiw_tx_sq_sent(struct xiw_qp_dp *dp, bool batched)
{
	struct xiw_tx_ctx *tx = &dp->tx;

	if (tx->run == XIW_TX_RUN_POST)
		xiw_dp_stat_add(dp, XIW_STAT_TX_FROM_POST, 1);
	if (!tx->fpdu_last)
		return;
	if (batched || xiw_tx_op_needs_ord(tx->sqe.opcode))
		xiw_tx_sq_wqe_end(dp);
	else
		xiw_tx_sq_complete(dp, IB_WC_SUCCESS);
	tx->last_was_irq = false;
}

/* xiw_tx_resp.c: the responder */
int xiw_tx_resp_next(struct xiw_qp_dp *dp, bool short_only);
int xiw_tx_resp_next_rx(struct xiw_qp_dp *dp);
bool xiw_tx_resp_head_short(struct xiw_qp_dp *dp);

/* An FPDU of the response in progress is in TCP (or in the batch). */
static inline void xiw_tx_resp_sent(struct xiw_qp_dp *dp)
{
	struct xiw_tx_ctx *tx = &dp->tx;

	if (tx->run == XIW_TX_RUN_RX)
		xiw_dp_stat_add(dp, XIW_STAT_TX_FROM_RX, 1);
	if (!tx->fpdu_last)
		return;
	xiw_dp_put_lsges(&tx->rr_sge, 1);
	if (tx->irqe.type == XIW_RQ_READ)
		xiw_dp_stat_add(dp, XIW_STAT_READ_RESPONSES, 1);
	tx->rr_active = false;
	tx->last_was_irq = true;
}

void xiw_tx_resp_exec_work(struct work_struct *w);

/* xiw_tx_zc.c: zero copy */
bool xiw_tx_zc_enabled(const struct xiw_qp_dp *dp);
bool xiw_tx_zc_forced(void);
bool xiw_tx_zc_off_host(struct sock *sk);
int xiw_tx_zc_attach(struct xiw_qp_dp *dp, gfp_t gfp);
void xiw_tx_zc_free(struct xiw_qp_dp *dp);
struct xiw_tx_zc *xiw_tx_zc_get(struct xiw_qp_dp *dp, u32 cidx);
bool xiw_tx_zc_reclaim(struct xiw_qp_dp *dp);
void xiw_tx_zc_wait_held(struct xiw_qp_dp *dp);
void xiw_tx_zc_abandon(struct xiw_qp_dp *dp);
struct ubuf_info *xiw_tx_zc_uarg(struct xiw_tx_zc *zc);
void xiw_tx_zc_put(struct xiw_tx_zc *zc);
void xiw_tx_zc_finish(struct xiw_tx_zc *zc, u32 byte_len);

/* xiw_tx_pages.c: the QP's own pages for copied FPDUs */
bool xiw_tx_pages_frame(struct xiw_qp_dp *dp, u32 hdr_len, u32 pad,
			u32 total);
bool xiw_tx_pages_frame_zc(struct xiw_qp_dp *dp, u32 hdr_len, u32 pad);
u32 xiw_tx_crc_payload(const struct xiw_tx_ctx *tx, u32 crc);
bool xiw_tx_batch_fits(struct xiw_tx_ctx *tx, u32 fpdu_len);
int xiw_tx_pages_prepare(struct xiw_qp_dp *dp, u32 total);
int xiw_tx_pages_bounce(struct xiw_qp_dp *dp, gfp_t gfp);
void xiw_tx_pages_free(struct xiw_qp_dp *dp);

#endif /* XIW_TX_H */
