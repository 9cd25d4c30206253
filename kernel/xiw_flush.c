// SPDX-License-Identifier: GPL-2.0
/*
 * xiw - flushing a QP's work rings into its CQs.
 *
 * When a QP enters ERROR every WR still in its SQ and RQ ring completes
 * with IB_WC_WR_FLUSH_ERR, and when it is reset (or destroyed) the rings
 * are emptied without completions. The WRs the data path took from the SQ
 * are older and complete first (xiw_llp_flush()); those whose zero-copy
 * pages TCP still holds keep the SQ ring's flush waiting
 * (xiw_flush_sq_hold(), from xiw_dp.c) until their pages come back
 * (xiw_flush_sq_release()). Called by xiw_qp.c and the data path; each
 * ring under its consumer lock (sq_lock, rq_lock).
 */
#include "xiw.h"

/*
 * Complete every valid entry of @q with WR_FLUSH_ERR on @cq, or discard it
 * silently if @cq is NULL. At most one pass over the ring, so a process
 * that keeps refilling its ring cannot keep the kernel here. Caller holds
 * the queue's consumer lock.
 */
static bool xiw_flush_ring(struct xiw_queue *q, struct xiw_qp *qp,
			   struct xiw_cq *cq, bool sq)
{
	bool notify = false;
	struct xiw_cqe cqe = { .status = IB_WC_WR_FLUSH_ERR };
	union {
		struct xiw_sqe sqe;
		struct xiw_rqe rqe;
	} e;
	u32 n;

	for (n = 0; n < q->num; n++) {
		if (!xiw_wq_take(q, &e))
			break;
		/* wr_id is at the same place in both */
		cqe.wr_id = e.sqe.wr_id;
		cqe.opcode = sq ? xiw_wq_wc_opcode(qp->user, e.sqe.opcode) :
				  IB_WC_RECV;
		if (cq)
			__xiw_cq_add(cq, qp, &cqe, false, &notify);
	}
	return notify;
}

/*
 * Flush the SQ ring: WR_FLUSH_ERR completions, or none (@discard). Not
 * while older WRs the data path took wait for their zero-copy pages
 * (sq_flush_held): the ring's WRs complete after them. The completion
 * handler runs after the queue lock is dropped.
 */
void xiw_flush_sq(struct xiw_qp *qp, bool discard)
{
	unsigned long flags;
	bool notify = false;

	spin_lock_irqsave(&qp->sq_lock, flags);
	if (discard)
		qp->sq_flush_held = false;
	if (!qp->sq_flush_held)
		notify = xiw_flush_ring(&qp->sq, qp, discard ? NULL : qp->scq,
					true);
	spin_unlock_irqrestore(&qp->sq_lock, flags);
	if (notify)
		xiw_cq_notify(qp->scq);
}

/*
 * The data path's flush left WRs to their zero-copy pages: hold the SQ
 * ring's flush until xiw_flush_sq_release(). The QP is in ERROR and
 * leaves it only through RESET, whose discarding flush ends the hold.
 */
void xiw_flush_sq_hold(struct xiw_qp *qp)
{
	unsigned long flags;

	spin_lock_irqsave(&qp->sq_lock, flags);
	qp->sq_flush_held = true;
	spin_unlock_irqrestore(&qp->sq_lock, flags);
}

/*
 * Those WRs completed: flush the SQ ring now, unless a RESET discarded it
 * meanwhile. Any context but hard IRQ (the last page's release may come
 * from softirq).
 */
void xiw_flush_sq_release(struct xiw_qp *qp)
{
	unsigned long flags;
	bool notify = false;

	spin_lock_irqsave(&qp->sq_lock, flags);
	if (qp->sq_flush_held) {
		qp->sq_flush_held = false;
		notify = xiw_flush_ring(&qp->sq, qp, qp->scq, true);
	}
	spin_unlock_irqrestore(&qp->sq_lock, flags);
	if (notify)
		xiw_cq_notify(qp->scq);
}

void xiw_flush_rq(struct xiw_qp *qp, bool discard)
{
	unsigned long flags;
	bool notify;

	if (qp->srq)
		return;
	spin_lock_irqsave(&qp->rq_lock, flags);
	notify = xiw_flush_ring(&qp->rq, qp, discard ? NULL : qp->rcq, false);
	spin_unlock_irqrestore(&qp->rq_lock, flags);
	if (notify)
		xiw_cq_notify(qp->rcq);
}
