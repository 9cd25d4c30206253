// SPDX-License-Identifier: GPL-2.0
/*
 * xiw - RX engine: FPDU parsing and direct placement in sk_data_ready.
 *
 * TCP calls sk_data_ready in softirq (or from the socket backlog in
 * process context) with the socket lock held; xiw_rx_data_ready() drains
 * the receive queue with tcp_read_sock() and places payload straight
 * from the skb into the target pages with skb_copy_bits() (one copy). The
 * CRC is computed over the placed bytes. The socket lock serialises RX,
 * so struct xiw_rx_ctx has no lock of its own; what RX shares with TX (ORQ,
 * IRQ, completion ring) is under dp->lock. No sleeping, no allocation.
 *
 * Per FPDU: read the 4-byte MPA/DDP/RDMAP control, then the DDP header,
 * validate it with xiw_rx_check_hdr() (xiw_wire.h), read the rest of the
 * RDMAP header, check it against QP state (MSN, MO, STag, PD, rights,
 * bounds, ORQ/IRQ), place the payload, check pad and CRC, and only then
 * act on the message (completions, IRQ, atomics and Atomic Writes executed
 * at once, invalidation, Terminate).
 * Requests queued in the IRQ are answered, and a TX waiting for ORD is
 * kicked, once per pass, after tcp_read_sock() (xiw_rx_data_ready()).
 *
 * Any error: xiw_dp_refuse() with the Terminate RFC 5040/5041/5044
 * prescribe (Documentation/wire-format.md); RX then drops everything,
 * and TX answers the requests queued before the Terminate.
 */
#include <linux/highmem.h>
#include <linux/skbuff.h>
#include <linux/tcp.h>
#include <net/tcp.h>

#include "xiw_rx.h"
#include "xiw_sched.h"
#include "xiw_tx.h"
#include "xiw_commit.h"
#include "xiw_trace.h"

#define XIW_RX_OPS	XIW_OPMASK_RX	/* xiw_wire.h */

/*
 * Is the FPDU being received a Terminate, by its control fields alone
 * (untagged, RDMAP opcode 0x7; whatever else in it is wrong)?
 */
static bool xiw_rx_is_term(const struct xiw_rx_ctx *rx)
{
	return !(rx->hdr.ctrl.ddp & XIW_DDP_T) &&
	       (rx->hdr.ctrl.rdmap & XIW_RDMAP_OPCODE_MASK) ==
	       XIW_RDMAP_OP_TERMINATE;
}

/*
 * Bad input: RX stops, the Terminate @tc goes out, the QP goes to ERROR.
 * The first error of the QP also raises the asynchronous event (later
 * ones find the data path already failed and change nothing).
 */
static void xiw_rx_fail(struct xiw_qp_dp *dp, const struct xiw_term_code *tc)
{
	dp->rx.state = XIW_RX_DEAD;
	if (test_bit(XIW_DP_ERROR, &dp->flags))
		return;
	/*
	 * RFC 5040 section 7.2: a Terminate is not answered with one, not
	 * even a malformed Terminate (bad QN, MSN, length, CRC, ...): the
	 * stream is torn down.
	 */
	if (xiw_rx_is_term(&dp->rx)) {
		xiw_dp_dbg(dp, "malformed Terminate (layer %u type %u code %#x)\n",
			   tc->layer, tc->etype, tc->ecode);
		xiw_qp_event(dp->qp, IB_EVENT_QP_FATAL);
		xiw_dp_fatal(dp, NULL, NULL, 0, -EPROTO);
		return;
	}
	xiw_qp_event(dp->qp, xiw_dp_term_event(tc));
	/* the requests before this message are answered first */
	xiw_dp_refuse(dp, tc, &dp->rx.hdr, dp->rx.hdr_got, -EPROTO);
}

static void xiw_rx_term(struct xiw_qp_dp *dp, u8 layer, u8 etype, u8 ecode,
			u8 hdrct)
{
	struct xiw_term_code tc = {
		.layer = layer, .etype = etype, .ecode = ecode, .hdrct = hdrct,
	};

	xiw_rx_fail(dp, &tc);
}

#define XIW_HDRCT_MD	(XIW_TERM_HDRCT_M | XIW_TERM_HDRCT_D)

/* Terminate for a failed tagged (DDP-placed) STag check. */
static void xiw_rx_term_tagged(struct xiw_qp_dp *dp, enum xiw_mem_err err)
{
	static const u8 code[] = {
		[XIW_MEM_INV_STAG] = XIW_DDP_EC_T_INV_STAG,
		[XIW_MEM_PD] = XIW_DDP_EC_T_STAG_NOT_ASSOC,
		[XIW_MEM_BOUNDS] = XIW_DDP_EC_T_BASE_BOUNDS,
		[XIW_MEM_WRAP] = XIW_DDP_EC_T_TO_WRAP,
	};

	if (err == XIW_MEM_ACCESS)
		xiw_rx_term(dp, XIW_TERM_LAYER_RDMAP, XIW_RDMAP_ET_REMOTE_PROT,
			    XIW_RDMAP_EC_ACCESS, XIW_HDRCT_MD);
	else
		xiw_rx_term(dp, XIW_TERM_LAYER_DDP, XIW_DDP_ET_TAGGED,
			    code[err], XIW_HDRCT_MD);
}

/* Terminate for a failed Read Request source STag check (RDMAP layer). */
/*
 * A request naming remote memory (Read, Atomic) failed the STag check:
 * RDMAP remote protection error. @hdrct: headers copied (an Atomic's
 * RDMAP header is not, RFC 7306 section 8.1).
 */
static void xiw_rx_term_prot(struct xiw_qp_dp *dp, enum xiw_mem_err err,
			     u8 hdrct)
{
	static const u8 code[] = {
		[XIW_MEM_INV_STAG] = XIW_RDMAP_EC_INV_STAG,
		[XIW_MEM_PD] = XIW_RDMAP_EC_STAG_NOT_ASSOC,
		[XIW_MEM_ACCESS] = XIW_RDMAP_EC_ACCESS,
		[XIW_MEM_BOUNDS] = XIW_RDMAP_EC_BASE_BOUNDS,
		[XIW_MEM_WRAP] = XIW_RDMAP_EC_TO_WRAP,
	};

	xiw_rx_term(dp, XIW_TERM_LAYER_RDMAP, XIW_RDMAP_ET_REMOTE_PROT,
		    code[err], hdrct);
}

static void xiw_rx_untagged_err(struct xiw_qp_dp *dp, u8 ecode)
{
	xiw_rx_term(dp, XIW_TERM_LAYER_DDP, XIW_DDP_ET_UNTAGGED, ecode,
		    XIW_HDRCT_MD);
}

/* ------------------------------------------------------------------------
 * Receive WQEs
 */
static void xiw_rx_srq_limit_check(struct xiw_srq *srq, bool *event)
{
	u32 i;

	if (!srq->armed)
		return;
	for (i = 0; i < srq->limit; i++)
		if (!xiw_wq_published(&srq->rq, srq->rq.cons, i))
			break;
	if (i < srq->limit) {
		srq->armed = false;
		*event = true;
	}
}

/* Take the next RQE (copied out of the ring) of the QP or its SRQ. */
static bool xiw_rx_get_rqe(struct xiw_qp *qp, struct xiw_rqe *out)
{
	struct xiw_queue *q = qp->srq ? &qp->srq->rq : &qp->rq;
	spinlock_t *lock = qp->srq ? &qp->srq->lock : &qp->rq_lock;
	unsigned long flags;
	bool got, event = false;

	spin_lock_irqsave(lock, flags);
	got = xiw_wq_take(q, out);
	if (got && qp->srq)
		xiw_rx_srq_limit_check(qp->srq, &event);
	spin_unlock_irqrestore(lock, flags);
	if (event && qp->srq->base.event_handler) {
		struct ib_event ev = {
			.device = qp->base.device,
			.event = IB_EVENT_SRQ_LIMIT_REACHED,
			.element.srq = &qp->srq->base,
		};

		qp->srq->base.event_handler(&ev, qp->srq->base.srq_context);
	}
	return got;
}

static void xiw_rx_recv_cqe(struct xiw_qp_dp *dp, u8 status, u32 flags,
			    u32 inv_stag, bool solicited)
{
	struct xiw_rx_ctx *rx = &dp->rx;
	struct xiw_cqe cqe = {
		.wr_id = rx->wr_id,
		.opcode = IB_WC_RECV,
		.status = status,
		.byte_len = status == IB_WC_SUCCESS ? rx->msg_len : 0,
		.flags = flags,
	};

	if (flags & XIW_CQE_WITH_INV)
		cqe.inv_stag = inv_stag;
	xiw_cq_add(dp->qp->rcq, dp->qp, &cqe, solicited);
}

/* First segment of a Send: consume an RQE and resolve its buffers. */
static bool xiw_rx_start_send(struct xiw_qp_dp *dp)
{
	struct xiw_qp *qp = dp->qp;
	struct xiw_rx_ctx *rx = &dp->rx;
	u32 max = qp->srq ? qp->srq->max_sge : qp->max_recv_sge;
	/* an SRQ's buffers belong to the SRQ's PD, not the QP's */
	const struct xiw_mem_user who =
		xiw_mem_local(qp->srq ? to_xiw_pd(qp->srq->base.pd) : qp->pd);
	struct xiw_rqe rqe;
	enum xiw_mem_err err;
	u64 cap = 0;
	int i;

	if (!xiw_rx_get_rqe(qp, &rqe)) {
		xiw_dp_dbg(dp, "no receive WQE\n");
		xiw_rx_untagged_err(dp, XIW_DDP_EC_UT_MSN_NO_BUF);
		return false;
	}
	rx->wr_id = rqe.wr_id;
	rx->msg_len = 0;
	rx->nsge = 0;
	rx->msg_active = true;
	if (rqe.num_sge > max)
		goto bad;
	for (i = 0; i < rqe.num_sge; i++) {
		struct xiw_sge *s = &rqe.sge[i];
		struct xiw_lsge *l = &rx->sge[rx->nsge];

		if (!s->length)
			continue;
		l->mr = xiw_stag_resolve(to_xiw_dev(qp->base.device), &who,
					 s->lkey, IB_ACCESS_LOCAL_WRITE,
					 s->addr, s->length, &err);
		if (!l->mr)
			goto bad;
		l->addr = s->addr;
		l->len = s->length;
		cap += s->length;
		rx->nsge++;
	}
	rx->msg_cap = min_t(u64, cap, U32_MAX);
	return true;
bad:
	xiw_dp_dbg(dp, "bad receive WQE\n");
	xiw_dp_put_lsges(rx->sge, rx->nsge);
	rx->nsge = 0;
	rx->msg_active = false;
	xiw_rx_recv_cqe(dp, IB_WC_LOC_PROT_ERR, 0, 0, false);
	xiw_rx_term(dp, XIW_TERM_LAYER_RDMAP, XIW_RDMAP_ET_CATASTROPHIC, 0, 0);
	return false;
}

static void xiw_rx_end_send(struct xiw_qp_dp *dp)
{
	xiw_dp_put_lsges(dp->rx.sge, dp->rx.nsge);
	dp->rx.nsge = 0;
	dp->rx.msg_active = false;
}

/*
 * The QP is going to ERROR: complete the RQE RX holds with WR_FLUSH_ERR.
 * Called under the socket lock (so RX is not running), RX stays dead.
 */
void xiw_rx_flush(struct xiw_qp_dp *dp)
{
	struct xiw_rx_ctx *rx = &dp->rx;

	rx->state = XIW_RX_DEAD;
	if (rx->msg_active && !rx->rtr_send)
		xiw_rx_recv_cqe(dp, IB_WC_WR_FLUSH_ERR, 0, 0, false);
	xiw_rx_end_send(dp);
	xiw_rx_release(dp);
}

void xiw_rx_release(struct xiw_qp_dp *dp)
{
	xiw_dp_put_lsges(dp->rx.sge, dp->rx.nsge);
	dp->rx.nsge = 0;
	if (dp->rx.tmr)
		xiw_stag_put(dp->rx.tmr);
	dp->rx.tmr = NULL;
	if (dp->rx.qmr)
		xiw_stag_put(dp->rx.qmr);
	dp->rx.qmr = NULL;
	if (dp->rx.rcache)
		xiw_stag_put(dp->rx.rcache);
	dp->rx.rcache = NULL;
}

/* ------------------------------------------------------------------------
 * Header processing (the whole header is in rx->hdr)
 */
static struct xiw_orqe *xiw_rx_orq_head(struct xiw_qp_dp *dp)
{
	u32 n = roundup_pow_of_two(max_t(u32, dp->ord, 1));

	if (dp->orq_head == dp->orq_tail)
		return NULL;
	return &dp->orq[dp->orq_head & (n - 1)];
}

/*
 * A response that does not fit the oldest ORQ entry (type, Request
 * Identifier, STag, offset, length): that entry's WR completes with
 * IB_WC_BAD_RESP_ERR (the verbs status of a bad response), before the
 * Terminate the caller sends; the rest flush.
 */
static void xiw_rx_resp_bad(struct xiw_qp_dp *dp)
{
	struct xiw_orqe *o;
	bool done = false;
	u32 cidx = 0;

	spin_lock_bh(&dp->lock);
	o = xiw_rx_orq_head(dp);
	if (o && !o->rtr) {
		cidx = o->cidx;
		done = true;
	}
	spin_unlock_bh(&dp->lock);
	xiw_dp_mark_failing(dp);
	if (done)
		xiw_dp_cmpl_done(dp, cidx, IB_WC_BAD_RESP_ERR, 0);
}

/*
 * QP access rights (RFC 5040 leaves them to the RNIC; enforced as IB does,
 * on top of the STag's own rights). What rdma_cm's iWARP path leaves on a
 * QP decides the rules (Documentation/security.md):
 * - the passive side and kernel ULPs get REMOTE_WRITE | REMOTE_READ; there
 *   is no way to ask for REMOTE_ATOMIC, so an Atomic Request is allowed by
 *   REMOTE_ATOMIC or by REMOTE_WRITE (it writes memory); the MR must still
 *   carry IB_ACCESS_REMOTE_ATOMIC;
 * - a user QP of the active side keeps the 0 that rdma_create_qp() sets
 *   before the connection exists, and nothing sets it later: flags of 0
 *   mean "not chosen", and the STag rights alone decide. A consumer that
 *   wants no remote access sets a non-zero value without remote bits
 *   (IB_ACCESS_LOCAL_WRITE).
 */
static bool xiw_rx_qp_allows(struct xiw_qp_dp *dp, int access)
{
	int qa = READ_ONCE(dp->qp->access);

	if (!qa)
		return true;
	if (access == IB_ACCESS_REMOTE_ATOMIC)
		access |= IB_ACCESS_REMOTE_WRITE;
	if (qa & access)
		return true;
	xiw_dp_dbg(dp, "QP access flags %#x refuse %#x\n", qa, access);
	return false;
}

/*
 * Who accesses memory with @access for @dp: the peer (remote rights), or
 * the QP itself (IB_ACCESS_LOCAL_WRITE: a Read Response placed into the
 * Read's local sink), which a memory window never serves.
 */
static struct xiw_mem_user xiw_rx_mem_user(struct xiw_qp_dp *dp, int access)
{
	return access == IB_ACCESS_LOCAL_WRITE ? xiw_mem_local(dp->qp->pd) :
						 xiw_mem_peer(dp->qp);
}

/*
 * The region a peer's request or tagged message names, with a reference
 * of its own, through the QP's responder region cache (rx->rcache, see
 * xiw_stag_cached()): the requests of a stream mostly name one region.
 * The cache is RX's: only RX, and holders of the socket lock while RX is
 * not running (xiw_rx_release(), xiw_dp.c's drop of a region being
 * deregistered), touch it.
 */
static struct xiw_mr *xiw_rx_region(struct xiw_qp_dp *dp, u32 stag,
				    int access, u64 to, u64 len,
				    enum xiw_mem_err *err)
{
	const struct xiw_mem_user who = xiw_rx_mem_user(dp, access);

	return xiw_stag_cached(xiw_dp_dev(dp), &who, &dp->rx.rcache,
			       stag, access, to, len, err);
}

/*
 * The region a tagged FPDU of @len bytes at @to places into, in rx->tmr
 * (reference held). The FPDUs of one message all name the same STag, so
 * the region stays in rx->tmr until an FPDU that ends a message (its
 * last, or any other with the L bit: xiw_rx_fpdu_done()), and each
 * further FPDU only checks it again: the STag still names it (not
 * invalidated and registered again under another key, not being
 * deregistered: xiw_mem_stag_remove() makes it invalid first), then state, PD,
 * rights and bounds as xiw_stag_resolve() does (xiw_stag_reuse()). A
 * message's first FPDU finds its region through the QP's region cache
 * (xiw_rx_region()). NULL, *@err set, if the access is refused.
 */
static struct xiw_mr *xiw_rx_tagged_mr(struct xiw_qp_dp *dp, u32 stag,
				       int access, u64 to, u32 len,
				       enum xiw_mem_err *err)
{
	struct xiw_rx_ctx *rx = &dp->rx;

	if (rx->tmr) {
		const struct xiw_mem_user who = xiw_rx_mem_user(dp, access);

		rx->tmr = xiw_stag_reuse(xiw_dp_dev(dp), &who, rx->tmr,
					 stag, access, to, len, err);
	} else {
		rx->tmr = xiw_rx_region(dp, stag, access, to, len, err);
	}
	return rx->tmr;
}

static bool xiw_rx_hdr_tagged(struct xiw_qp_dp *dp, u32 payload)
{
	struct xiw_rx_ctx *rx = &dp->rx;
	u32 stag = be32_to_cpu(rx->hdr.tagged.stag);
	u64 to = be64_to_cpu(rx->hdr.tagged.to);
	enum xiw_mem_err err = XIW_MEM_OK;
	struct xiw_orqe *o;
	bool ok = true;
	u32 lkey = 0;
	int access;

	rx->tto = to;
	if (rx->op == XIW_RDMAP_OP_READ_RESP) {
		spin_lock_bh(&dp->lock);
		o = xiw_rx_orq_head(dp);
		if (!o || o->type != XIW_RQ_READ) {
			/* nothing outstanding, or an atomic/Flush/Verify */
			ok = false;
		} else if (o->rtr) {
			if (payload)
				err = XIW_MEM_BOUNDS;
		} else if (stag != o->sink_stag) {
			err = XIW_MEM_INV_STAG;
		} else if (to != o->sink_to + o->placed ||
			   payload > o->len - o->placed) {
			err = XIW_MEM_BOUNDS;
		} else {
			lkey = o->sink_stag;
			err = XIW_MEM_OK;
		}
		spin_unlock_bh(&dp->lock);
		if (!ok) {
			xiw_dp_dbg(dp, "Read Response answers no Read\n");
			xiw_rx_resp_bad(dp);
			xiw_rx_term(dp, XIW_TERM_LAYER_RDMAP,
				    XIW_RDMAP_ET_REMOTE_OP, XIW_RDMAP_EC_OPCODE,
				    XIW_HDRCT_MD);
			return false;
		}
		if (o->rtr && !payload)
			return true;
		if (err != XIW_MEM_OK) {
			xiw_dp_dbg(dp, "Read Response STag %#x TO %#llx len %u does not fit the Read\n",
				   stag, to, payload);
			xiw_rx_resp_bad(dp);
			xiw_rx_term_tagged(dp, err);
			return false;
		}
		if (!payload)
			return true;
		stag = lkey;
		access = IB_ACCESS_LOCAL_WRITE;
	} else {
		/* RDMA Write; a zero-length one touches nothing (RTR). */
		if (!payload)
			return true;
		if (!xiw_rx_qp_allows(dp, IB_ACCESS_REMOTE_WRITE)) {
			xiw_rx_term_tagged(dp, XIW_MEM_ACCESS);
			return false;
		}
		access = IB_ACCESS_REMOTE_WRITE;
	}
	if (!xiw_rx_tagged_mr(dp, stag, access, to, payload, &err)) {
		xiw_dp_dbg(dp, "STag %#x TO %#llx len %u: error %d\n", stag, to,
			   payload, err);
		xiw_rx_term_tagged(dp, err);
		return false;
	}
	rx->taccess = access;
	return true;
}

static bool xiw_rx_hdr_send(struct xiw_qp_dp *dp, u32 payload)
{
	struct xiw_rx_ctx *rx = &dp->rx;
	struct xiw_ddp_untagged *h = &rx->hdr.untagged;
	u32 mo = be32_to_cpu(h->mo);

	if (!rx->msg_active) {
		if (mo) {
			xiw_rx_untagged_err(dp, XIW_DDP_EC_UT_INV_MO);
			return false;
		}
		if (test_bit(XIW_DP_RTR_WAIT, &dp->flags)) {
			/* The zero-length Send RTR consumes no RQE. */
			rx->rtr_send = true;
			rx->msg_active = true;
			rx->msg_len = 0;
			rx->msg_cap = 0;
		} else if (!xiw_rx_start_send(dp)) {
			return false;
		}
	} else if (mo != rx->msg_len) {
		xiw_rx_untagged_err(dp, XIW_DDP_EC_UT_INV_MO);
		return false;
	}
	if (payload > rx->msg_cap - rx->msg_len) {
		/*
		 * The receive WR is too short for the message: it completes
		 * with a local length error (IBA: a Send longer than the
		 * receive buffer), not flushed with the rest; the sender
		 * gets the DDP Terminate and an invalid request.
		 */
		if (!rx->rtr_send) {
			xiw_rx_recv_cqe(dp, IB_WC_LOC_LEN_ERR, 0, 0, false);
			xiw_rx_end_send(dp);
		}
		xiw_rx_untagged_err(dp, XIW_DDP_EC_UT_TOO_LONG);
		return false;
	}
	return true;
}

/*
 * IRD is shared by Read and Atomic Requests (RFC 7306 section 5.2).
 *
 * Without dp->lock: RX alone advances irq_tail, and TX frees a slot
 * (irq_head, WRITE_ONCE under dp->lock: xiw_tx_resp_start() for a
 * response of one FPDU, else xiw_tx_resp_irq_pop()) before the
 * response's last FPDU goes to this socket's sendmsg. That send takes
 * and releases the socket lock RX runs under, so RX, handling a request
 * the peer sent after it had that response, sees the slot free. A value
 * older than that only counts a slot as busy that is busy.
 */
static bool xiw_rx_ird_full(struct xiw_qp_dp *dp, u8 hdrct)
{
	u32 busy = dp->irq_tail - READ_ONCE(dp->irq_head);

	if (busy < max_t(u32, dp->ird, 1))
		return false;
	xiw_dp_dbg(dp, "IRD %u exceeded\n", dp->ird);
	xiw_rx_term(dp, XIW_TERM_LAYER_DDP, XIW_DDP_ET_UNTAGGED,
		    XIW_DDP_EC_UT_MSN_RANGE, hdrct);
	return true;
}

/*
 * A Read, Atomic or Atomic Write Request's region, looked up with its
 * header: kept for its execution at receipt (xiw_rx_exec()) or its IRQ
 * entry (xiw_rx_irq_push()), so that it is only checked again.
 */
static void xiw_rx_keep_qmr(struct xiw_qp_dp *dp, struct xiw_mr *mr)
{
	if (dp->rx.qmr)
		xiw_stag_put(dp->rx.qmr);
	dp->rx.qmr = mr;
}

static bool xiw_rx_hdr_rreq(struct xiw_qp_dp *dp)
{
	struct xiw_rdmap_rreq *r = &dp->rx.hdr.rreq;
	u32 len = be32_to_cpu(r->read_size);
	enum xiw_mem_err err;
	struct xiw_mr *mr;

	if (xiw_rx_ird_full(dp, XIW_HDRCT_MD | XIW_TERM_HDRCT_R))
		return false;
	if (!len)
		return true;	/* zero-length Read: no STag check */
	if (!xiw_rx_qp_allows(dp, IB_ACCESS_REMOTE_READ)) {
		xiw_rx_term_prot(dp, XIW_MEM_ACCESS,
				 XIW_HDRCT_MD | XIW_TERM_HDRCT_R);
		return false;
	}
	mr = xiw_rx_region(dp, be32_to_cpu(r->src_stag), IB_ACCESS_REMOTE_READ,
			   be64_to_cpu(r->src_to), len, &err);
	if (!mr) {
		xiw_dp_dbg(dp, "Read source STag %#x: error %d\n",
			   be32_to_cpu(r->src_stag), err);
		xiw_rx_term_prot(dp, err, XIW_HDRCT_MD | XIW_TERM_HDRCT_R);
		return false;
	}
	xiw_rx_keep_qmr(dp, mr);
	return true;
}

/*
 * Atomic Request header: IRD, AOpCode, alignment (of the TO and of the
 * memory behind it), STag with remote-atomic right and bounds. Nothing is
 * touched before the whole FPDU is in and its CRC checked (section 5.4
 * rule 3); then xiw_rx_exec() executes it, with the region kept here.
 */
static bool xiw_rx_hdr_atomic(struct xiw_qp_dp *dp)
{
	struct xiw_rdmap_atomic_req *r = &dp->rx.hdr.atomic_req;
	u64 to = be64_to_cpu(r->to);
	struct xiw_term_code tc;
	enum xiw_mem_err err;
	struct xiw_mr *mr;
	u32 poff, avail;

	if (xiw_rx_ird_full(dp, XIW_HDRCT_MD))
		return false;
	if (!xiw_atomic_req_check(be32_to_cpu(r->aopcode), to, &tc)) {
		xiw_dp_dbg(dp, "Atomic Request: AOpCode %#x TO %#llx refused\n",
			   be32_to_cpu(r->aopcode), to);
		xiw_rx_fail(dp, &tc);
		return false;
	}
	if (!xiw_rx_qp_allows(dp, IB_ACCESS_REMOTE_ATOMIC)) {
		xiw_rx_term_prot(dp, XIW_MEM_ACCESS, XIW_HDRCT_MD);
		return false;
	}
	mr = xiw_rx_region(dp, be32_to_cpu(r->stag), IB_ACCESS_REMOTE_ATOMIC,
			   to, sizeof(u64), &err);
	if (!mr) {
		xiw_dp_dbg(dp, "Atomic STag %#x TO %#llx: error %d\n",
			   be32_to_cpu(r->stag), to, err);
		xiw_rx_term_prot(dp, err, XIW_HDRCT_MD);
		return false;
	}
	/* an MR whose IOVA and memory differ in the low bits */
	if (!xiw_stag_page(mr, to, &poff, &avail) ||
	    poff & (XIW_ATOMIC_ALIGN - 1) || avail < sizeof(u64)) {
		xiw_stag_put(mr);
		xiw_rx_term(dp, XIW_TERM_LAYER_RDMAP, XIW_RDMAP_ET_REMOTE_OP,
			    XIW_RDMAP_EC_CATASTROPHIC_STREAM, XIW_HDRCT_MD);
		return false;
	}
	/* executed when the FPDU is complete (xiw_rx_exec()) */
	xiw_rx_keep_qmr(dp, mr);
	return true;
}

/* Atomic Response header: it must answer the oldest ORQ entry. */
static bool xiw_rx_hdr_aresp(struct xiw_qp_dp *dp)
{
	u32 id = be32_to_cpu(dp->rx.hdr.atomic_resp.req_id);
	struct xiw_orqe *o;
	bool ok;

	spin_lock_bh(&dp->lock);
	o = xiw_rx_orq_head(dp);
	ok = o && o->type == XIW_RQ_ATOMIC && o->req_id == id;
	spin_unlock_bh(&dp->lock);
	if (!ok) {
		xiw_dp_dbg(dp, "Atomic Response %u answers nothing\n", id);
		xiw_rx_resp_bad(dp);
		xiw_rx_term(dp, XIW_TERM_LAYER_RDMAP, XIW_RDMAP_ET_REMOTE_OP,
			    XIW_RDMAP_EC_OPCODE, XIW_HDRCT_MD);
	}
	return ok;
}

/*
 * The Invalidate STag of a Flush, Verify or Atomic Write Request: "Set to
 * zero, or optionally to non-zero by the sender, processed by the
 * receiver" (commit draft section 3.1). Processed as a Send with
 * Invalidate's is (RFC 5040 section 5.2): checked here, so that a STag
 * this peer may not invalidate is refused with the request's header
 * copied (RDMAP / Remote Protection / 0x09), and invalidated once the
 * request is executed (xiw_tx_resp.c), so the operation itself still
 * finds its region valid when it names the same STag.
 */
static bool xiw_rx_commit_inv_ok(struct xiw_qp_dp *dp)
{
	u32 inv = be32_to_cpu(dp->rx.hdr.untagged.inval_stag);
	const struct xiw_mem_user who = xiw_mem_peer(dp->qp);

	if (!inv || !xiw_stag_may_invalidate(xiw_dp_dev(dp), &who, inv))
		return true;
	xiw_dp_dbg(dp, "op %u: cannot invalidate STag %#x\n", dp->rx.op, inv);
	xiw_rx_term(dp, XIW_TERM_LAYER_RDMAP, XIW_RDMAP_ET_REMOTE_PROT,
		    XIW_RDMAP_EC_CANNOT_INVALIDATE, XIW_HDRCT_MD);
	return false;
}

/*
 * Commit draft requests: resolve the Data Sink STag with @access for
 * [@to, @to + @len), or the STag's whole region (@region, Flush R), and
 * report the MR's range in *@va and *@vlen. Protection errors end in a
 * Terminate RDMAP / Remote Protection. Returns the MR (reference held)
 * or NULL.
 */
static struct xiw_mr *xiw_rx_commit_mr(struct xiw_qp_dp *dp, u32 stag,
				       int access, u64 to, u64 len,
				       bool region, u64 *va, u64 *vlen)
{
	const struct xiw_mem_user who = xiw_mem_peer(dp->qp);
	struct xiw_device *xdev = xiw_dp_dev(dp);
	enum xiw_mem_err err;
	struct xiw_mr *mr;

	if (region) {
		mr = xiw_stag_get(xdev, stag);
		if (!mr) {
			err = XIW_MEM_INV_STAG;
			goto fail;
		}
		to = READ_ONCE(mr->base.iova);
		len = READ_ONCE(mr->base.length);
		xiw_stag_put(mr);
	}
	mr = xiw_stag_resolve(xdev, &who, stag, access, to, len, &err);
	if (!mr)
		goto fail;
	if (!xiw_rx_commit_inv_ok(dp)) {
		xiw_stag_put(mr);
		return NULL;
	}
	*va = to;
	*vlen = len;
	return mr;
fail:
	xiw_dp_dbg(dp, "op %u: STag %#x TO %#llx len %llu access %#x: error %d\n",
		   dp->rx.op, stag, to, len, access, err);
	xiw_rx_term_prot(dp, err, XIW_HDRCT_MD);
	return NULL;
}

/*
 * RDMA Flush Request: IRD, the flush right(s) its flags ask for (P:
 * IB_ACCESS_FLUSH_PERSISTENT, G or neither: IB_ACCESS_FLUSH_GLOBAL), the
 * QP's remote-write right (a Flush is about writes), bounds. Length 0 is
 * an ordering point that still checks the STag; R flushes the region.
 */
static bool xiw_rx_hdr_flush(struct xiw_qp_dp *dp)
{
	struct xiw_rdmap_flush_req *r = &dp->rx.hdr.flush_req;
	u32 flags = be32_to_cpu(r->flags);
	int access = 0;
	struct xiw_mr *mr;
	u64 va, len;

	if (xiw_rx_ird_full(dp, XIW_HDRCT_MD))
		return false;
	if (flags & XIW_FLUSH_PERSISTENT)
		access |= IB_ACCESS_FLUSH_PERSISTENT;
	if ((flags & XIW_FLUSH_GLOBAL) || !access)
		access |= IB_ACCESS_FLUSH_GLOBAL;
	if (!xiw_rx_qp_allows(dp, IB_ACCESS_REMOTE_WRITE)) {
		xiw_rx_term_prot(dp, XIW_MEM_ACCESS, XIW_HDRCT_MD);
		return false;
	}
	mr = xiw_rx_commit_mr(dp, be32_to_cpu(r->sink_stag), access,
			      be64_to_cpu(r->sink_to),
			      be32_to_cpu(r->sink_len),
			      flags & XIW_FLUSH_REGION, &va, &len);
	if (!mr)
		return false;
	xiw_stag_put(mr);
	return true;
}

/*
 * Atomic Write Request: IRD, Length exactly 8, an 8-byte aligned target
 * (in the IOVA and in memory), remote-write right, bounds. A request that
 * cannot be placed atomically is refused like a misaligned atomic: RDMAP
 * Remote Operation / catastrophic error localized to the stream.
 */
static bool xiw_rx_hdr_awrite(struct xiw_qp_dp *dp)
{
	struct xiw_rdmap_awrite_req *r = &dp->rx.hdr.awrite_req;
	u64 to = be64_to_cpu(r->sink_to);
	struct xiw_mr *mr;
	u32 poff, avail;
	u64 va, len;

	if (xiw_rx_ird_full(dp, XIW_HDRCT_MD))
		return false;
	if (be32_to_cpu(r->sink_len) != XIW_ATOMIC_WRITE_LEN ||
	    to & (XIW_ATOMIC_ALIGN - 1)) {
		xiw_dp_dbg(dp, "Atomic Write: length %u TO %#llx refused\n",
			   be32_to_cpu(r->sink_len), to);
		goto not_atomic;
	}
	if (!xiw_rx_qp_allows(dp, IB_ACCESS_REMOTE_WRITE)) {
		xiw_rx_term_prot(dp, XIW_MEM_ACCESS, XIW_HDRCT_MD);
		return false;
	}
	mr = xiw_rx_commit_mr(dp, be32_to_cpu(r->sink_stag),
			      IB_ACCESS_REMOTE_WRITE, to, XIW_ATOMIC_WRITE_LEN,
			      false, &va, &len);
	if (!mr)
		return false;
	if (!xiw_stag_page(mr, to, &poff, &avail) ||
	    poff & (XIW_ATOMIC_ALIGN - 1) || avail < sizeof(u64)) {
		xiw_stag_put(mr);
		goto not_atomic;
	}
	/* stored when the FPDU is complete (xiw_rx_exec()) */
	xiw_rx_keep_qmr(dp, mr);
	return true;
not_atomic:
	xiw_rx_term(dp, XIW_TERM_LAYER_RDMAP, XIW_RDMAP_ET_REMOTE_OP,
		    XIW_RDMAP_EC_CATASTROPHIC_STREAM, XIW_HDRCT_MD);
	return false;
}

/*
 * RDMA Verify Request (staged whole, hash included): IRD, remote-read
 * right (the digest tells about the contents), bounds, and a supplied
 * hash must have the length of the MR's digest.
 */
static bool xiw_rx_hdr_verify(struct xiw_qp_dp *dp)
{
	struct xiw_rdmap_verify_req *r = &dp->rx.hdr.verify_req;
	u32 hash_len = be16_to_cpu(r->hdr.ctrl.mpa_len) -
		       XIW_DDP_UNTAGGED_HDR_LEN - XIW_RDMAP_VERIFY_REQ_MIN;
	struct xiw_mr *mr;
	u64 va, len;
	int dlen;

	if (xiw_rx_ird_full(dp, XIW_HDRCT_MD))
		return false;
	if (!xiw_rx_qp_allows(dp, IB_ACCESS_REMOTE_READ)) {
		xiw_rx_term_prot(dp, XIW_MEM_ACCESS, XIW_HDRCT_MD);
		return false;
	}
	mr = xiw_rx_commit_mr(dp, be32_to_cpu(r->sink_stag),
			      IB_ACCESS_REMOTE_READ, be64_to_cpu(r->sink_to),
			      be32_to_cpu(r->sink_len), false, &va, &len);
	if (!mr)
		return false;
	dlen = xiw_commit_digest_len(READ_ONCE(mr->digest));
	xiw_stag_put(mr);
	if (hash_len && hash_len != dlen) {
		xiw_dp_dbg(dp, "Verify: %u-byte hash for a %d-byte digest\n",
			   hash_len, dlen);
		xiw_rx_term(dp, XIW_TERM_LAYER_RDMAP, XIW_RDMAP_ET_REMOTE_OP,
			    XIW_RDMAP_EC_UNSPECIFIED, XIW_HDRCT_MD);
		return false;
	}
	return true;
}

/*
 * A Response on QN 3 to a commit-draft request: it must answer the
 * oldest ORQ entry, and be of its type.
 */
static bool xiw_rx_hdr_cresp(struct xiw_qp_dp *dp, u8 type)
{
	struct xiw_orqe *o;
	bool ok;

	spin_lock_bh(&dp->lock);
	o = xiw_rx_orq_head(dp);
	ok = o && o->type == type;
	spin_unlock_bh(&dp->lock);
	if (!ok) {
		xiw_dp_dbg(dp, "Response op %u answers no request of its type\n",
			   dp->rx.op);
		xiw_rx_resp_bad(dp);
		xiw_rx_term(dp, XIW_TERM_LAYER_RDMAP, XIW_RDMAP_ET_REMOTE_OP,
			    XIW_RDMAP_EC_OPCODE, XIW_HDRCT_MD);
	}
	return ok;
}

/* Immediate Data [with SE]: one untagged buffer (RQE) per message. */
static bool xiw_rx_hdr_imm(struct xiw_qp_dp *dp)
{
	if (dp->rx.msg_active) {
		/* a Send in progress owns the MSN the peer reused */
		xiw_rx_untagged_err(dp, XIW_DDP_EC_UT_MSN_RANGE);
		return false;
	}
	return xiw_rx_start_send(dp);
}

/*
 * Is this the RTR the passive side waits for? RFC 6581 section 3: the
 * initiator sends "the RTR message" of the type the responder chose in
 * its Reply; a zero-length message of another type is no RTR, and as
 * the first FPDU it gets the "no matching RTR" Terminate. After the RTR a
 * zero-length message is an ordinary one.
 */
static bool xiw_rx_is_rtr(struct xiw_qp_dp *dp, u32 payload)
{
	switch (dp->rx.op) {
	case XIW_RDMAP_OP_SEND:
		return dp->rx.rtr_type == XIW_RTR_SEND && !payload;
	case XIW_RDMAP_OP_WRITE:
		return dp->rx.rtr_type == XIW_RTR_WRITE && !payload;
	case XIW_RDMAP_OP_READ_REQ:
		return dp->rx.rtr_type == XIW_RTR_READ &&
		       !dp->rx.hdr.rreq.read_size;
	default:
		return false;
	}
}

/* Whole header received: check it against QP state, set up placement. */
static bool xiw_rx_hdr_done(struct xiw_qp_dp *dp)
{
	struct xiw_rx_ctx *rx = &dp->rx;
	u32 ulpdu = be16_to_cpu(rx->hdr.ctrl.mpa_len);
	u32 payload = ulpdu + XIW_MPA_HDR_LEN - rx->hdr_need;
	bool tagged = rx->hdr.ctrl.ddp & XIW_DDP_T;

	rx->data_left = payload;
	rx->trailer_need = xiw_mpa_pad(ulpdu) + XIW_MPA_CRC_LEN;
	rx->trailer_got = 0;
	if (dp->crc)
		rx->crc = xiw_crc_update(XIW_CRC32C_SEED, &rx->hdr,
					 rx->hdr_need);

	if (test_bit(XIW_DP_RTR_WAIT, &dp->flags) &&
	    !xiw_rx_is_rtr(dp, payload)) {
		xiw_dp_dbg(dp, "first FPDU (op %u) is no RTR\n", rx->op);
		xiw_rx_term(dp, XIW_TERM_LAYER_LLP, XIW_MPA_ET_MPA,
			    XIW_MPA_EC_NO_MATCHING_RTR, 0);
		return false;
	}
	if (!tagged) {
		u32 qn = be32_to_cpu(rx->hdr.untagged.qn);

		if (be32_to_cpu(rx->hdr.untagged.msn) != rx->msn[qn]) {
			xiw_dp_dbg(dp, "QN %u MSN %u, expected %u\n", qn,
				   be32_to_cpu(rx->hdr.untagged.msn),
				   rx->msn[qn]);
			xiw_rx_untagged_err(dp, XIW_DDP_EC_UT_MSN_RANGE);
			return false;
		}
	}
	switch (rx->op) {
	case XIW_RDMAP_OP_WRITE:
	case XIW_RDMAP_OP_READ_RESP:
		return xiw_rx_hdr_tagged(dp, payload);
	case XIW_RDMAP_OP_SEND:
	case XIW_RDMAP_OP_SEND_INV:
	case XIW_RDMAP_OP_SEND_SE:
	case XIW_RDMAP_OP_SEND_SE_INV:
		return xiw_rx_hdr_send(dp, payload);
	case XIW_RDMAP_OP_READ_REQ:
		return xiw_rx_hdr_rreq(dp);
	case XIW_RDMAP_OP_IMM:
	case XIW_RDMAP_OP_IMM_SE:
		return xiw_rx_hdr_imm(dp);
	case XIW_RDMAP_OP_ATOMIC_REQ:
		return xiw_rx_hdr_atomic(dp);
	case XIW_RDMAP_OP_ATOMIC_RESP:
		return xiw_rx_hdr_aresp(dp);
	case XIW_RDMAP_OP_FLUSH_REQ:
		return xiw_rx_hdr_flush(dp);
	case XIW_RDMAP_OP_ATOMIC_WRITE_REQ:
		return xiw_rx_hdr_awrite(dp);
	case XIW_RDMAP_OP_VERIFY_REQ:
		return xiw_rx_hdr_verify(dp);
	case XIW_RDMAP_OP_FLUSH_RESP:
		return xiw_rx_hdr_cresp(dp, XIW_RQ_FLUSH);
	case XIW_RDMAP_OP_ATOMIC_WRITE_RESP:
		return xiw_rx_hdr_cresp(dp, XIW_RQ_AWRITE);
	case XIW_RDMAP_OP_VERIFY_RESP:
		return xiw_rx_hdr_cresp(dp, XIW_RQ_VERIFY);
	case XIW_RDMAP_OP_TERMINATE:
		return true;
	default:
		xiw_rx_term(dp, XIW_TERM_LAYER_RDMAP, XIW_RDMAP_ET_REMOTE_OP,
			    XIW_RDMAP_EC_OPCODE, XIW_HDRCT_MD);
		return false;
	}
}

/* ------------------------------------------------------------------------
 * Placement
 */
static int xiw_rx_copy(struct xiw_qp_dp *dp, struct xiw_mr *mr, u64 va,
		       struct sk_buff *skb, unsigned int off, u32 n)
{
	while (n) {
		u32 poff, avail, chunk;
		struct page *page = xiw_stag_page(mr, va, &poff, &avail);
		void *p;
		int rv;

		if (!page)
			return -EFAULT;
		chunk = min(avail, n);
		p = kmap_local_page(page);
		rv = skb_copy_bits(skb, off, p + poff, chunk);
		if (!rv && dp->crc)
			dp->rx.crc = xiw_crc_update(dp->rx.crc, p + poff,
						    chunk);
		kunmap_local(p);
		if (rv)
			return rv;
		va += chunk;
		off += chunk;
		n -= chunk;
	}
	return 0;
}

/* Place @n payload bytes at @off in @skb. */
static int xiw_rx_place(struct xiw_qp_dp *dp, struct sk_buff *skb,
			unsigned int off, u32 n)
{
	struct xiw_rx_ctx *rx = &dp->rx;
	int rv, i;

	if (rx->hdr.ctrl.ddp & XIW_DDP_T) {
		const struct xiw_mem_user who = xiw_rx_mem_user(dp, rx->taccess);
		enum xiw_mem_err err;

		/*
		 * The header's check is done again for every piece placed:
		 * the STag may have been invalidated since (an access
		 * section, xiw_stag_access_begin()). The Terminate names it
		 * as the header's check would have.
		 */
		err = xiw_stag_access_begin(xiw_dp_dev(dp), &who, rx->tmr,
					    be32_to_cpu(rx->hdr.tagged.stag),
					    rx->taccess, rx->tto, n);
		if (err != XIW_MEM_OK) {
			xiw_dp_dbg(dp, "STag %#x revoked while placed\n",
				   be32_to_cpu(rx->hdr.tagged.stag));
			xiw_rx_term_tagged(dp, err);
			return -EKEYREVOKED;
		}
		rv = xiw_rx_copy(dp, rx->tmr, rx->tto, skb, off, n);
		xiw_stag_access_end(rx->tmr);
		rx->tto += n;
		return rv;
	}
	/* Send: scatter by message offset over the RQE's SGEs. */
	while (n) {
		u32 pos = rx->msg_len, chunk;

		for (i = 0; i < rx->nsge && pos >= rx->sge[i].len; i++)
			pos -= rx->sge[i].len;
		if (i == rx->nsge)
			return -EFAULT;
		chunk = min(n, rx->sge[i].len - pos);
		rv = xiw_rx_copy(dp, rx->sge[i].mr, rx->sge[i].addr + pos, skb,
				 off, chunk);
		if (rv)
			return rv;
		rx->msg_len += chunk;
		off += chunk;
		n -= chunk;
	}
	return 0;
}

/* ------------------------------------------------------------------------
 * Whole FPDU received and its CRC checked: act on it.
 */
static void xiw_rx_rtr_done(struct xiw_qp_dp *dp)
{
	clear_bit(XIW_DP_RTR_WAIT, &dp->flags);
	xiw_dp_dbg(dp, "RTR received\n");
	xiw_dp_rtr_received(dp);
	xiw_sched_kick(dp, false);
}

static void xiw_rx_send_done(struct xiw_qp_dp *dp)
{
	struct xiw_rx_ctx *rx = &dp->rx;
	struct xiw_qp *qp = dp->qp;
	const struct xiw_mem_user peer = xiw_mem_peer(qp);
	u32 inv = be32_to_cpu(rx->hdr.untagged.inval_stag);
	bool se = rx->op == XIW_RDMAP_OP_SEND_SE ||
		  rx->op == XIW_RDMAP_OP_SEND_SE_INV;
	bool with_inv = rx->op == XIW_RDMAP_OP_SEND_INV ||
			rx->op == XIW_RDMAP_OP_SEND_SE_INV;

	rx->msn[XIW_QN_SEND]++;
	rx->write_len = 0;
	if (rx->rtr_send) {
		rx->rtr_send = false;
		rx->msg_active = false;
		xiw_rx_rtr_done(dp);
		return;
	}
	if (with_inv && xiw_stag_invalidate(to_xiw_dev(qp->base.device),
					    &peer, inv, true)) {
		xiw_dp_dbg(dp, "cannot invalidate STag %#x\n", inv);
		xiw_rx_recv_cqe(dp, IB_WC_REM_INV_REQ_ERR, 0, 0, false);
		xiw_rx_end_send(dp);
		xiw_rx_term(dp, XIW_TERM_LAYER_RDMAP, XIW_RDMAP_ET_REMOTE_PROT,
			    XIW_RDMAP_EC_CANNOT_INVALIDATE, XIW_HDRCT_MD);
		return;
	}
	xiw_rx_recv_cqe(dp, IB_WC_SUCCESS, with_inv ? XIW_CQE_WITH_INV : 0,
			inv, se);
	xiw_rx_end_send(dp);
}

/*
 * An ORQ entry was popped (caller holds dp->lock): an ORD slot is free and
 * a fence may have lifted. TX needs a kick only if it waits for that,
 * which it says with XIW_DP_ORD_WAIT, set under dp->lock too
 * (xiw_tx_sq_blocked()), so the kick is never lost. It is given at the end
 * of the RX pass (xiw_rx_data_ready()), after the completion.
 */
static void xiw_rx_orq_freed(struct xiw_qp_dp *dp)
{
	if (test_and_clear_bit(XIW_DP_ORD_WAIT, &dp->flags))
		dp->rx.tx_wake = true;
}

static void xiw_rx_rresp_done(struct xiw_qp_dp *dp, u32 payload, bool last)
{
	struct xiw_qp *qp = dp->qp;
	struct xiw_orqe *o, orqe;

	spin_lock_bh(&dp->lock);
	o = xiw_rx_orq_head(dp);
	if (!o) {
		spin_unlock_bh(&dp->lock);
		return;		/* flushed meanwhile */
	}
	o->placed += payload;
	orqe = *o;
	if (last) {
		dp->orq_head++;
		xiw_rx_orq_freed(dp);
	}
	spin_unlock_bh(&dp->lock);
	if (!last)
		return;
	if (orqe.rtr) {
		xiw_dp_dbg(dp, "RTR Read answered\n");
	} else {
		const struct xiw_mem_user local = xiw_mem_local(qp->pd);
		u8 st = IB_WC_SUCCESS;

		if (orqe.placed != orqe.len)
			st = IB_WC_BAD_RESP_ERR;	/* a short Response */
		else if (orqe.inv &&
			 xiw_stag_invalidate(to_xiw_dev(qp->base.device),
					     &local, orqe.inv_stag, false))
			st = IB_WC_MW_BIND_ERR;
		if (st != IB_WC_SUCCESS)
			xiw_dp_dbg(dp, "Read done: placed %u of %u, inv %d %#x\n",
				   orqe.placed, orqe.len, orqe.inv,
				   orqe.inv_stag);
		xiw_dp_cmpl_done(dp, orqe.cidx, st, orqe.placed);
		if (st != IB_WC_SUCCESS) {
			xiw_rx_term(dp, XIW_TERM_LAYER_DDP, XIW_DDP_ET_TAGGED,
				    XIW_DDP_EC_T_BASE_BOUNDS, XIW_HDRCT_MD);
			return;
		}
	}
}

/*
 * Queue an inbound QN 1 request for TX, which answers IRQ entries in
 * arrival order, executing first those RX did not (xiw_rx_exec()). IRD
 * was checked with the header.
 */
static void xiw_rx_irq_push(struct xiw_qp_dp *dp, struct xiw_irqe *e)
{
	u32 n = roundup_pow_of_two(max_t(u32, dp->ird, 1));
	struct xiw_rx_ctx *rx = &dp->rx;

	/* the region its header was checked against goes with it */
	e->mr = rx->qmr;
	rx->qmr = NULL;
	rx->msn[XIW_QN_REQ]++;
	spin_lock_bh(&dp->lock);
	if (e->type != XIW_RQ_READ && !e->executed) {
		/* later atomics and Atomic Writes wait for it */
		rx->exec_wait = true;
		rx->exec_wait_idx = dp->irq_tail;
	}
	dp->irq[dp->irq_tail & (n - 1)] = *e;
	WRITE_ONCE(dp->irq_tail, dp->irq_tail + 1);	/* xiw_dp_irq_pending() */
	spin_unlock_bh(&dp->lock);
	/* answered when this RX pass ends (xiw_rx_data_ready()) */
	rx->irq_new++;
	if (!xiw_irqe_short(e))
		rx->irq_long = true;
}

/*
 * Is an earlier request of the stream still to be executed by TX (a Flush
 * or a Verify, or an atomic or Atomic Write held behind one)? TX pops an
 * IRQ entry, under dp->lock, only once it executed it.
 */
static bool xiw_rx_exec_held(struct xiw_qp_dp *dp)
{
	struct xiw_rx_ctx *rx = &dp->rx;

	if (!rx->exec_wait)
		return false;
	spin_lock_bh(&dp->lock);
	if ((s32)(dp->irq_head - rx->exec_wait_idx) > 0)
		rx->exec_wait = false;
	spin_unlock_bh(&dp->lock);
	return rx->exec_wait;
}

/*
 * Execute an RFC 7306 atomic or an Atomic Write @e where it is received,
 * its FPDU complete and CRC checked, before any later message of the
 * stream is placed: a Write or Send that follows it finds it done, as
 * InfiniBand's responder orders them (IBA C9-28) and as applications
 * ported through RFC 7306 expect. The result (e->orig) goes into the IRQ
 * entry; TX only frames the response, in IRQ order, after the responses
 * to earlier Reads.
 *
 * Not while an earlier Flush or Verify waits for TX (xiw_rx_exec_held()):
 * the commit draft orders an Atomic Write "after the successful completion
 * of any previous requested RDMA Flush or RDMA Verify" (section 3.1.3),
 * and RFC 7306 atomics wait with it. Such a request stays unexecuted in
 * the IRQ and TX executes it in IRQ order (xiw_tx_resp_exec()).
 *
 * The region kept with the header (rx->qmr) is checked again (the STag
 * may have been invalidated meanwhile) and consumed. False after a
 * Terminate.
 */
static bool xiw_rx_exec(struct xiw_qp_dp *dp, struct xiw_irqe *e)
{
	const struct xiw_mem_user who = xiw_mem_peer(dp->qp);
	bool atomic = e->type == XIW_RQ_ATOMIC;
	int access = atomic ? IB_ACCESS_REMOTE_ATOMIC : IB_ACCESS_REMOTE_WRITE;
	struct xiw_rx_ctx *rx = &dp->rx;
	struct xiw_mem_grant grant;
	enum xiw_mem_err err;
	struct xiw_mr *mr;
	int rv;

	if (xiw_rx_exec_held(dp))
		return true;
	mr = xiw_stag_reuse(xiw_dp_dev(dp), &who, rx->qmr, e->sink_stag,
			    access, e->sink_to, sizeof(u64), &err);
	rx->qmr = NULL;
	if (!mr) {
		xiw_dp_dbg(dp, "IRQ type %u: STag %#x gone: %d\n", e->type,
			   e->sink_stag, err);
		xiw_rx_term_prot(dp, err, XIW_HDRCT_MD);
		return false;
	}
	grant = (struct xiw_mem_grant){
		.xdev = xiw_dp_dev(dp), .who = who, .stag = e->sink_stag,
		.access = access,
	};
	rv = xiw_commit_exec_one(mr, &grant, e);
	xiw_stag_put(mr);
	if (rv == -EKEYREVOKED) {
		xiw_rx_term_prot(dp, XIW_MEM_INV_STAG, XIW_HDRCT_MD);
		return false;
	}
	if (rv) {
		xiw_dp_dbg(dp, "IRQ type %u at %#llx failed: %d\n", e->type,
			   e->sink_to, rv);
		xiw_rx_term(dp, XIW_TERM_LAYER_RDMAP, XIW_RDMAP_ET_REMOTE_OP,
			    XIW_RDMAP_EC_CATASTROPHIC_STREAM, XIW_HDRCT_MD);
		return false;
	}
	xiw_dp_stat_add(dp, atomic ? XIW_STAT_ATOMICS :
				     XIW_STAT_ATOMIC_WRITES, 1);
	/* checked with the header (xiw_rx_commit_inv_ok()); as in TX */
	if (e->inv_stag &&
	    xiw_stag_invalidate(xiw_dp_dev(dp), &who, e->inv_stag, true)) {
		xiw_dp_dbg(dp, "IRQ type %u: cannot invalidate STag %#x\n",
			   e->type, e->inv_stag);
		xiw_rx_term(dp, XIW_TERM_LAYER_RDMAP, XIW_RDMAP_ET_REMOTE_PROT,
			    XIW_RDMAP_EC_CANNOT_INVALIDATE, XIW_HDRCT_MD);
		return false;
	}
	e->executed = true;
	return true;
}

static void xiw_rx_rreq_done(struct xiw_qp_dp *dp)
{
	struct xiw_rdmap_rreq *r = &dp->rx.hdr.rreq;
	bool rtr = test_bit(XIW_DP_RTR_WAIT, &dp->flags);
	struct xiw_irqe e = {
		.type = XIW_RQ_READ,
		.sink_stag = be32_to_cpu(r->sink_stag),
		.sink_to = be64_to_cpu(r->sink_to),
		.src_stag = be32_to_cpu(r->src_stag),
		.src_to = be64_to_cpu(r->src_to),
		.len = be32_to_cpu(r->read_size),
	};

	xiw_rx_irq_push(dp, &e);
	if (rtr)
		xiw_rx_rtr_done(dp);
}

/*
 * Immediate Data delivered: complete the RQE as RECV_RDMA_WITH_IMM with
 * the whole 64-bit value (kernel ULPs and verbs see its low 32 bits).
 * byte_len is the length of the last RDMA Write message received before
 * it, 0 if a Send or another Immediate Data came in between.
 */
static void xiw_rx_imm_done(struct xiw_qp_dp *dp)
{
	struct xiw_rx_ctx *rx = &dp->rx;
	struct xiw_cqe cqe = {
		.wr_id = rx->wr_id,
		.opcode = IB_WC_RECV_RDMA_WITH_IMM,
		.status = IB_WC_SUCCESS,
		.byte_len = rx->write_open ? 0 : rx->write_len,
		.flags = XIW_CQE_WITH_IMM,
		.imm = be64_to_cpu(rx->hdr.imm.data),
	};

	rx->msn[XIW_QN_SEND]++;
	rx->write_len = 0;
	xiw_cq_add(dp->qp->rcq, dp->qp, &cqe,
		   rx->op == XIW_RDMAP_OP_IMM_SE);
	xiw_rx_end_send(dp);
}

/* Atomic Request delivered: executed now (xiw_rx_exec()), TX answers. */
static void xiw_rx_atomic_done(struct xiw_qp_dp *dp)
{
	struct xiw_rdmap_atomic_req *r = &dp->rx.hdr.atomic_req;
	struct xiw_irqe e = {
		.type = XIW_RQ_ATOMIC,
		.sink_stag = be32_to_cpu(r->stag),
		.sink_to = be64_to_cpu(r->to),
		.len = sizeof(u64),
		.req_id = be32_to_cpu(r->req_id),
		.aopcode = be32_to_cpu(r->aopcode),
		.add_swap = be64_to_cpu(r->add_swap),
		.add_swap_mask = be64_to_cpu(r->add_swap_mask),
		.cmp = be64_to_cpu(r->cmp),
		.cmp_mask = be64_to_cpu(r->cmp_mask),
	};

	if (xiw_rx_exec(dp, &e))
		xiw_rx_irq_push(dp, &e);
}

/*
 * Flush, Atomic Write or Verify Request delivered (checked with the
 * header). An Atomic Write is executed now (xiw_rx_exec()); TX executes a
 * Flush or Verify once every earlier request is done, right before its
 * response.
 */
static void xiw_rx_commit_req_done(struct xiw_qp_dp *dp)
{
	union xiw_fpdu_hdr *h = &dp->rx.hdr;
	struct xiw_irqe e = {
		.inv_stag = be32_to_cpu(h->untagged.inval_stag),
	};

	switch (dp->rx.op) {
	case XIW_RDMAP_OP_FLUSH_REQ:
		e.type = XIW_RQ_FLUSH;
		e.sink_stag = be32_to_cpu(h->flush_req.sink_stag);
		e.sink_to = be64_to_cpu(h->flush_req.sink_to);
		e.len = be32_to_cpu(h->flush_req.sink_len);
		e.flags = be32_to_cpu(h->flush_req.flags) & XIW_FLUSH_FLAGS;
		break;
	case XIW_RDMAP_OP_ATOMIC_WRITE_REQ:
		e.type = XIW_RQ_AWRITE;
		e.sink_stag = be32_to_cpu(h->awrite_req.sink_stag);
		e.sink_to = be64_to_cpu(h->awrite_req.sink_to);
		e.len = XIW_ATOMIC_WRITE_LEN;
		/* a big-endian value on the wire (the draft), stored as a u64 */
		e.data = be64_to_cpu(h->awrite_req.data);
		if (!xiw_rx_exec(dp, &e))
			return;
		break;
	default:	/* Verify */
		e.type = XIW_RQ_VERIFY;
		e.sink_stag = be32_to_cpu(h->verify_req.sink_stag);
		e.sink_to = be64_to_cpu(h->verify_req.sink_to);
		e.len = be32_to_cpu(h->verify_req.sink_len);
		e.hash_len = be16_to_cpu(h->ctrl.mpa_len) -
			     XIW_DDP_UNTAGGED_HDR_LEN - XIW_RDMAP_VERIFY_REQ_MIN;
		memcpy(e.hash, h->verify_req.hash, e.hash_len);
		break;
	}
	xiw_rx_irq_push(dp, &e);
}

/* Copy @n bytes of kernel memory into an MR. */
static int xiw_rx_mr_write(struct xiw_mr *mr, u64 va, const void *src, u32 n)
{
	while (n) {
		u32 poff, avail, chunk;
		struct page *page = xiw_stag_page(mr, va, &poff, &avail);
		void *p;

		if (!page)
			return -EFAULT;
		chunk = min(avail, n);
		p = kmap_local_page(page);
		memcpy(p + poff, src, chunk);
		kunmap_local(p);
		va += chunk;
		src += chunk;
		n -= chunk;
	}
	return 0;
}

/*
 * A Response on QN 3 arrived: take the oldest ORQ entry (the header check
 * proved it is of the Response's type) into *@o. False if the QP was
 * flushed meanwhile.
 */
static bool xiw_rx_orq_pop(struct xiw_qp_dp *dp, struct xiw_orqe *o)
{
	struct xiw_orqe *head;

	dp->rx.msn[XIW_QN_RESP]++;
	spin_lock_bh(&dp->lock);
	head = xiw_rx_orq_head(dp);
	if (head) {
		*o = *head;
		dp->orq_head++;
		xiw_rx_orq_freed(dp);
	}
	spin_unlock_bh(&dp->lock);
	return head;
}

/*
 * Write what a Response returns (an atomic's original value, a Verify's
 * digest) to the WR's local result buffer. An ib_wc status. @o is the
 * entry xiw_rx_orq_pop() copied out: its region reference, if any, is
 * consumed.
 */
static u8 xiw_rx_result_write(struct xiw_qp_dp *dp, struct xiw_orqe *o,
			      const void *src, u32 n)
{
	struct xiw_qp *qp = dp->qp;
	enum xiw_mem_err err;
	struct xiw_mr *mr;
	u8 st = IB_WC_SUCCESS;

	/* the popped entry's kept region (an atomic's), if any, is ours */
	const struct xiw_mem_user who = xiw_mem_local(qp->pd);

	mr = xiw_stag_reuse(to_xiw_dev(qp->base.device), &who, o->mr,
			    o->sink_stag, IB_ACCESS_LOCAL_WRITE, o->sink_to, n,
			    &err);
	o->mr = NULL;
	if (!mr || xiw_rx_mr_write(mr, o->sink_to, src, n))
		st = IB_WC_LOC_PROT_ERR;
	if (mr)
		xiw_stag_put(mr);
	return st;
}

/*
 * Complete the WR of a Response with @st and @byte_len. A WR whose result
 * could not be delivered ends the connection (the peer did its part: RDMAP
 * catastrophic).
 */
static void xiw_rx_resp_complete(struct xiw_qp_dp *dp,
				 const struct xiw_orqe *o, u8 st, u32 byte_len)
{
	xiw_dp_cmpl_done(dp, o->cidx, st, st ? 0 : byte_len);
	if (st != IB_WC_SUCCESS) {
		xiw_dp_dbg(dp, "result of request type %u (%u bytes) not delivered to STag %#x: %u\n",
			   o->type, byte_len, o->sink_stag, st);
		xiw_rx_term(dp, XIW_TERM_LAYER_RDMAP, XIW_RDMAP_ET_CATASTROPHIC,
			    0, 0);
	}
}

/*
 * Atomic Response delivered: the original value goes to the WR's result
 * buffer in the CPU's byte order, and the WR completes (section 5.4
 * rule 7: not before this).
 */
static void xiw_rx_aresp_done(struct xiw_qp_dp *dp)
{
	u64 orig = be64_to_cpu(dp->rx.hdr.atomic_resp.orig);
	struct xiw_orqe o;

	if (!xiw_rx_orq_pop(dp, &o))
		return;		/* flushed meanwhile */
	xiw_rx_resp_complete(dp, &o, xiw_rx_result_write(dp, &o, &orig,
							 sizeof(orig)),
			     sizeof(orig));
}

/*
 * Flush, Atomic Write or Verify Response delivered: the WR completes. A
 * Verify's digest goes to its result buffer (if it has one; too short a
 * buffer completes the WR with IB_WC_LOC_LEN_ERR).
 */
static void xiw_rx_cresp_done(struct xiw_qp_dp *dp)
{
	struct xiw_rx_ctx *rx = &dp->rx;
	u8 st = IB_WC_SUCCESS;
	struct xiw_orqe o;
	u32 n = 0;

	if (!xiw_rx_orq_pop(dp, &o))
		return;		/* flushed meanwhile */
	if (o.type == XIW_RQ_VERIFY) {
		n = be16_to_cpu(rx->hdr.ctrl.mpa_len) -
		    XIW_DDP_UNTAGGED_HDR_LEN;
		if (o.len && n > o.len)
			st = IB_WC_LOC_LEN_ERR;
		else if (o.len)
			st = xiw_rx_result_write(dp, &o,
						 rx->hdr.verify_resp.hash, n);
	}
	if (o.mr)		/* only atomics keep one: not reached */
		xiw_stag_put(o.mr);
	xiw_rx_resp_complete(dp, &o, st, n);
}

/*
 * A Terminate's own fields, RFC 5040 section 4.8: a layer of the three,
 * R only with D, and at least as long as its flags say (the copied DDP
 * header's T flag gives that header's length). Longer is taken, the rest
 * ignored: siw encodes M/D/R in the low bits of their octet
 * (Documentation/interop.md), which reads as no flags, and sends the
 * header after them. True if it is well formed; then *@qn and *@msn name
 * what it copied (xiw_dp_cmpl_remote_err()).
 */
static bool xiw_rx_term_check(struct xiw_qp_dp *dp,
			      const struct xiw_term_code *tc, u32 *qn,
			      u32 *msn)
{
	const struct xiw_rdmap_term *t = &dp->rx.hdr.term;
	u32 rlen = be16_to_cpu(t->hdr.ctrl.mpa_len) -
		   XIW_DDP_UNTAGGED_HDR_LEN;
	bool tagged = (tc->hdrct & XIW_TERM_HDRCT_D) &&
		      (t->term_hdrs[0] & XIW_DDP_T);
	const u8 *h = t->term_hdrs - XIW_MPA_HDR_LEN;
	__be32 v;

	if (tc->layer > XIW_TERM_LAYER_LLP ||
	    (tc->hdrct & (XIW_TERM_HDRCT_R | XIW_TERM_HDRCT_D)) ==
	    XIW_TERM_HDRCT_R || rlen < xiw_term_len(tc->hdrct, tagged)) {
		xiw_dp_dbg(dp, "malformed Terminate: layer %u hdrct %#x, %u bytes\n",
			   tc->layer, tc->hdrct, rlen);
		return false;
	}
	*qn = XIW_DP_TERM_NOHDR;
	if (!(tc->hdrct & XIW_TERM_HDRCT_D))
		return true;
	if (tagged) {
		*qn = XIW_DP_TERM_TAGGED;
		return true;
	}
	/* term_hdrs is the copied header from its DDP control on */
	memcpy(&v, h + offsetof(struct xiw_ddp_untagged, qn), sizeof(v));
	*qn = be32_to_cpu(v);
	memcpy(&v, h + offsetof(struct xiw_ddp_untagged, msn), sizeof(v));
	*msn = be32_to_cpu(v);
	if (*qn >= XIW_QN_COUNT)
		*qn = XIW_DP_TERM_NOHDR;
	return true;
}

static void xiw_rx_term_done(struct xiw_qp_dp *dp)
{
	struct xiw_term_code tc;
	u32 qn, msn = 0;

	dp->rx.msn[XIW_QN_TERM]++;
	xiw_dp_stat_add(dp, XIW_STAT_TERM_RECEIVED, 1);
	trace_xiw_term_rx(dp, dp->rx.hdr.term.term_ctrl);
	xiw_term_parse(dp->rx.hdr.term.term_ctrl, &tc);
	ibdev_warn_ratelimited(dp->qp->base.device,
			       "QP%u: Terminate received: layer %u type %u code %#x\n",
			       dp->qp->base.qp_num, tc.layer, tc.etype,
			       tc.ecode);
	dp->rx.state = XIW_RX_DEAD;
	/*
	 * The WR it names learns why, the later ones flush; a malformed
	 * one names nothing: every WR still pending flushes. Either way no
	 * Terminate answers it.
	 */
	xiw_dp_mark_failing(dp);
	if (xiw_rx_term_check(dp, &tc, &qn, &msn))
		xiw_dp_cmpl_remote_err(dp, &tc, qn, msn);
	if (!test_bit(XIW_DP_ERROR, &dp->flags))
		xiw_qp_event(dp->qp, IB_EVENT_QP_FATAL);
	xiw_dp_fatal(dp, NULL, NULL, 0, -ECONNRESET);
}

static void xiw_rx_fpdu_done(struct xiw_qp_dp *dp)
{
	struct xiw_rx_ctx *rx = &dp->rx;
	u32 ulpdu = be16_to_cpu(rx->hdr.ctrl.mpa_len);
	u32 payload = ulpdu + XIW_MPA_HDR_LEN - rx->hdr_need;
	bool last = rx->hdr.ctrl.ddp & XIW_DDP_L;

	/* The message's region goes with its last FPDU (xiw_rx_tagged_mr()) */
	if (rx->tmr && last) {
		xiw_stag_put(rx->tmr);
		rx->tmr = NULL;
	}
	switch (rx->op) {
	case XIW_RDMAP_OP_WRITE:
		if (!rx->write_open)
			rx->write_len = 0;
		rx->write_len += payload;
		rx->write_open = !last;
		if (test_bit(XIW_DP_RTR_WAIT, &dp->flags))
			xiw_rx_rtr_done(dp);
		break;
	case XIW_RDMAP_OP_READ_RESP:
		xiw_rx_rresp_done(dp, payload, last);
		break;
	case XIW_RDMAP_OP_SEND:
	case XIW_RDMAP_OP_SEND_INV:
	case XIW_RDMAP_OP_SEND_SE:
	case XIW_RDMAP_OP_SEND_SE_INV:
		if (last)
			xiw_rx_send_done(dp);
		break;
	case XIW_RDMAP_OP_READ_REQ:
		xiw_rx_rreq_done(dp);
		break;
	case XIW_RDMAP_OP_IMM:
	case XIW_RDMAP_OP_IMM_SE:
		xiw_rx_imm_done(dp);
		break;
	case XIW_RDMAP_OP_ATOMIC_REQ:
		xiw_rx_atomic_done(dp);
		break;
	case XIW_RDMAP_OP_ATOMIC_RESP:
		xiw_rx_aresp_done(dp);
		break;
	case XIW_RDMAP_OP_FLUSH_REQ:
	case XIW_RDMAP_OP_ATOMIC_WRITE_REQ:
	case XIW_RDMAP_OP_VERIFY_REQ:
		xiw_rx_commit_req_done(dp);
		break;
	case XIW_RDMAP_OP_FLUSH_RESP:
	case XIW_RDMAP_OP_ATOMIC_WRITE_RESP:
	case XIW_RDMAP_OP_VERIFY_RESP:
		xiw_rx_cresp_done(dp);
		break;
	case XIW_RDMAP_OP_TERMINATE:
		xiw_rx_term_done(dp);
		break;
	}
}

/* ------------------------------------------------------------------------
 * Stream parsing
 */
static void xiw_rx_reset(struct xiw_rx_ctx *rx)
{
	rx->state = XIW_RX_HDR;
	rx->hdr_got = 0;
	rx->hdr_need = sizeof(struct xiw_fpdu_ctrl);
}

/* More header bytes are in: decide what comes next (xiw_rx_hdr_next()). */
static bool xiw_rx_hdr_step(struct xiw_qp_dp *dp)
{
	struct xiw_rx_ctx *rx = &dp->rx;
	struct xiw_term_code tc;

	switch (xiw_rx_hdr_next(&rx->hdr, rx->hdr_got, XIW_RX_OPS, &rx->op,
				&rx->hdr_need, &tc)) {
	case XIW_RX_HDR_MORE:
		return true;
	case XIW_RX_HDR_BAD:
		xiw_dp_dbg(dp, "header refused (ULPDU_Length %u, %u staged)\n",
			   be16_to_cpu(rx->hdr.ctrl.mpa_len), rx->hdr_got);
		xiw_rx_fail(dp, &tc);
		return false;
	case XIW_RX_HDR_DONE:
		break;
	}
	if (!xiw_rx_hdr_done(dp))
		return false;
	rx->state = rx->data_left ? XIW_RX_DATA : XIW_RX_TRAILER;
	return true;
}

static bool xiw_rx_trailer_done(struct xiw_qp_dp *dp)
{
	struct xiw_rx_ctx *rx = &dp->rx;
	u32 pad = rx->trailer_need - XIW_MPA_CRC_LEN;
	__le32 want;

	if (dp->crc) {
		rx->crc = xiw_crc_update(rx->crc, rx->trailer, pad);
		want = xiw_crc_trailer(rx->crc);
		if (memcmp(&want, rx->trailer + pad, sizeof(want))) {
			xiw_dp_stat_add(dp, XIW_STAT_RX_CRC_ERRORS, 1);
			xiw_dp_dbg(dp, "CRC error\n");
			xiw_rx_term(dp, XIW_TERM_LAYER_LLP, XIW_MPA_ET_MPA,
				    XIW_MPA_EC_CRC, XIW_HDRCT_MD);
			return false;
		}
	}
	trace_xiw_fpdu_rx(dp, &rx->hdr);
	xiw_dp_stat_add(dp, XIW_STAT_RX_FPDUS, 1);
	xiw_dp_stat_add(dp, XIW_STAT_RX_BYTES,
			xiw_mpa_fpdu_len(be16_to_cpu(rx->hdr.ctrl.mpa_len)));
	xiw_rx_fpdu_done(dp);
	if (rx->state == XIW_RX_DEAD)
		return false;
	xiw_rx_reset(rx);
	return true;
}

/*
 * Header bytes at @off (@left of them in this skb): one copy takes as many
 * as the largest fixed header needs (an Atomic Request's) or the header
 * in progress still needs, whichever is more, and the steps of
 * xiw_rx_hdr_step() (control field, DDP header, RDMAP header) consume
 * them, so a small FPDU's header costs one skb_copy_bits() instead of
 * three. Bytes copied beyond the header (payload, trailer, the next
 * FPDU) are not counted in hdr_got: they only overwrite the stale rest of
 * rx->hdr, and the state that owns them copies them again. *@used: the
 * bytes consumed. Nonzero if the skb could not be read.
 */
static int xiw_rx_hdr_bytes(struct xiw_qp_dp *dp, struct sk_buff *skb,
			    unsigned int off, size_t left, u32 *used)
{
	struct xiw_rx_ctx *rx = &dp->rx;
	u32 want = max_t(u32, rx->hdr_need - rx->hdr_got,
			 sizeof(struct xiw_rdmap_atomic_req));
	u32 got, n;

	want = min_t(u32, want, sizeof(rx->hdr) - rx->hdr_got);
	got = min_t(size_t, left, want);
	if (skb_copy_bits(skb, off, (u8 *)&rx->hdr + rx->hdr_got, got))
		return -EFAULT;
	*used = 0;
	while (rx->state == XIW_RX_HDR && *used < got) {
		n = min(got - *used, rx->hdr_need - rx->hdr_got);
		rx->hdr_got += n;
		*used += n;
		if (rx->hdr_got == rx->hdr_need && !xiw_rx_hdr_step(dp))
			break;
	}
	return 0;
}

static int xiw_rx_actor(read_descriptor_t *desc, struct sk_buff *skb,
			unsigned int off, size_t len)
{
	struct xiw_qp_dp *dp = desc->arg.data;
	struct xiw_rx_ctx *rx = &dp->rx;
	size_t left = len;
	u32 n;
	int rv;

	while (left) {
		if (test_bit(XIW_DP_ERROR, &dp->flags))
			rx->state = XIW_RX_DEAD;
		switch (rx->state) {
		case XIW_RX_HDR:
			if (xiw_rx_hdr_bytes(dp, skb, off, left, &n))
				goto fault;
			off += n;
			left -= n;
			break;
		case XIW_RX_DATA:
			n = min_t(size_t, left, rx->data_left);
			rv = xiw_rx_place(dp, skb, off, n);
			if (rv) {
				if (rv != -EKEYREVOKED)
					xiw_rx_term(dp, XIW_TERM_LAYER_RDMAP,
						    XIW_RDMAP_ET_CATASTROPHIC,
						    0, 0);
				break;
			}
			rx->data_left -= n;
			off += n;
			left -= n;
			if (!rx->data_left)
				rx->state = XIW_RX_TRAILER;
			break;
		case XIW_RX_TRAILER:
			n = min_t(size_t, left,
				  rx->trailer_need - rx->trailer_got);
			/*
			 * Without CRC nothing reads the pad and CRC field
			 * (xiw_rx_trailer_done()): skip them uncopied.
			 */
			if (dp->crc &&
			    skb_copy_bits(skb, off,
					  rx->trailer + rx->trailer_got, n))
				goto fault;
			rx->trailer_got += n;
			off += n;
			left -= n;
			if (rx->trailer_got == rx->trailer_need)
				xiw_rx_trailer_done(dp);
			break;
		case XIW_RX_DEAD:
			return len;
		}
	}
	return len;
fault:
	xiw_rx_term(dp, XIW_TERM_LAYER_RDMAP, XIW_RDMAP_ET_CATASTROPHIC, 0, 0);
	return len;
}

/*
 * sk_data_ready of a connected QP. Softirq with the socket spinlock held,
 * or process context owning the socket (backlog, xiw_dp_llp_start()).
 *
 * Not reentrant, by a flag of the RX context (the socket lock serialises
 * every RX, so only the running pass itself can see it set). RX run by
 * the socket's owner (release_sock() draining the backlog: the TX work,
 * a flush or a dereg that took lock_sock) sends responses at the end of
 * its pass (xiw_sched_from_rx()); tcp_sendmsg_locked() flushes the
 * backlog after 16 new skbs (sk_flush_backlog()), which calls
 * sk_data_ready again from inside that send. xiw_sched_from_rx() keeps
 * each call under 16 skbs only while GSO builds them (without it - IPsec,
 * TCP-MD5 - a batch at a small MSS is more), and the nested pass would
 * parse new FPDUs and act on IRQ state between the running pass's reads
 * and writes of it. The nested call only asks the running pass to read
 * again, which it does once its send is done.
 */
void xiw_rx_data_ready(struct sock *sk)
{
	struct xiw_qp_dp *dp;

	read_lock_bh(&sk->sk_callback_lock);
	dp = xiw_dp_of_sk(sk);
	if (dp && dp->rx.running) {
		dp->rx.again = true;
	} else if (dp) {
		read_descriptor_t desc = { .arg.data = dp };

		dp->rx.running = true;
		do {
			dp->rx.again = false;
			desc.count = 1;
			if (dp->rx.hdr_need == 0)
				xiw_rx_reset(&dp->rx);
			tcp_read_sock(sk, &desc, xiw_rx_actor);
			/*
			 * After the pass, so one send answers every request
			 * it brought and TCP is not sending while
			 * tcp_read_sock() walks the receive queue.
			 */
			if (dp->rx.irq_new) {
				u32 n = dp->rx.irq_new;
				bool all_short = !dp->rx.irq_long;

				dp->rx.irq_new = 0;
				dp->rx.irq_long = false;
				xiw_sched_answer(dp, n, all_short);
			}
			if (dp->rx.tx_wake) {
				dp->rx.tx_wake = false;
				xiw_sched_kick(dp, false);
			}
		} while (dp->rx.again);
		dp->rx.running = false;
	}
	read_unlock_bh(&sk->sk_callback_lock);
}
