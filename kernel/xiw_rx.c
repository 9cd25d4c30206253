// SPDX-License-Identifier: GPL-2.0
/*
 * xiw - RX, the stream core: FPDU parsing and direct placement in
 * sk_data_ready.
 *
 * TCP calls sk_data_ready in softirq (or from the socket backlog in
 * process context) with the socket lock held; xiw_rx_data_ready() drains
 * the receive queue with tcp_read_sock() and places payload straight
 * from the skb into the target pages with skb_copy_bits() (one copy). The
 * CRC is computed over the placed bytes. The socket lock serialises RX,
 * so struct xiw_rx_ctx has no lock of its own; what RX shares with TX (ORQ,
 * IRQ, completion ring) is under dp->lock. No sleeping, no allocation.
 * That holds for the three RX files (xiw_rx.h).
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
 * This file owns the stream (header steps, trailer and CRC, the dispatch
 * of each FPDU by opcode), placement, the tagged-access checks both roles
 * share (QP rights, the region cache, the STag of a tagged FPDU: RDMA
 * Writes and Read Responses), untagged Sends and Immediate Data with
 * their receive WQEs, the RTR, a Terminate received, and the errors of
 * all of RX. The peer's requests are xiw_rx_req.c's, its responses
 * xiw_rx_resp.c's; a Write or a Send is handled here from header to
 * completion without leaving this file.
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
void xiw_rx_fail(struct xiw_qp_dp *dp, const struct xiw_term_code *tc)
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

void xiw_rx_term(struct xiw_qp_dp *dp, u8 layer, u8 etype, u8 ecode,
		 u8 hdrct)
{
	struct xiw_term_code tc = {
		.layer = layer, .etype = etype, .ecode = ecode, .hdrct = hdrct,
	};

	xiw_rx_fail(dp, &tc);
}

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
void xiw_rx_term_prot(struct xiw_qp_dp *dp, enum xiw_mem_err err,
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
					 s->lkey, IB_ACCESS_LOCAL_WRITE, s->addr,
					 s->length, &err);
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
bool xiw_rx_qp_allows(struct xiw_qp_dp *dp, int access)
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
struct xiw_mr *xiw_rx_region(struct xiw_qp_dp *dp, u32 stag,
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
		o = xiw_rx_resp_orq_head(dp);
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
		return xiw_rx_req_hdr_rreq(dp);
	case XIW_RDMAP_OP_IMM:
	case XIW_RDMAP_OP_IMM_SE:
		return xiw_rx_hdr_imm(dp);
	case XIW_RDMAP_OP_ATOMIC_REQ:
		return xiw_rx_req_hdr_atomic(dp);
	case XIW_RDMAP_OP_ATOMIC_RESP:
		return xiw_rx_resp_hdr_aresp(dp);
	case XIW_RDMAP_OP_FLUSH_REQ:
		return xiw_rx_req_hdr_flush(dp);
	case XIW_RDMAP_OP_ATOMIC_WRITE_REQ:
		return xiw_rx_req_hdr_awrite(dp);
	case XIW_RDMAP_OP_VERIFY_REQ:
		return xiw_rx_req_hdr_verify(dp);
	case XIW_RDMAP_OP_FLUSH_RESP:
		return xiw_rx_resp_hdr_cresp(dp, XIW_RQ_FLUSH);
	case XIW_RDMAP_OP_ATOMIC_WRITE_RESP:
		return xiw_rx_resp_hdr_cresp(dp, XIW_RQ_AWRITE);
	case XIW_RDMAP_OP_VERIFY_RESP:
		return xiw_rx_resp_hdr_cresp(dp, XIW_RQ_VERIFY);
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
void xiw_rx_rtr_done(struct xiw_qp_dp *dp)
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
		xiw_rx_resp_rresp_done(dp, payload, last);
		break;
	case XIW_RDMAP_OP_SEND:
	case XIW_RDMAP_OP_SEND_INV:
	case XIW_RDMAP_OP_SEND_SE:
	case XIW_RDMAP_OP_SEND_SE_INV:
		if (last)
			xiw_rx_send_done(dp);
		break;
	case XIW_RDMAP_OP_READ_REQ:
		xiw_rx_req_rreq_done(dp);
		break;
	case XIW_RDMAP_OP_IMM:
	case XIW_RDMAP_OP_IMM_SE:
		xiw_rx_imm_done(dp);
		break;
	case XIW_RDMAP_OP_ATOMIC_REQ:
		xiw_rx_req_atomic_done(dp);
		break;
	case XIW_RDMAP_OP_ATOMIC_RESP:
		xiw_rx_resp_aresp_done(dp);
		break;
	case XIW_RDMAP_OP_FLUSH_REQ:
	case XIW_RDMAP_OP_ATOMIC_WRITE_REQ:
	case XIW_RDMAP_OP_VERIFY_REQ:
		xiw_rx_req_commit_done(dp);
		break;
	case XIW_RDMAP_OP_FLUSH_RESP:
	case XIW_RDMAP_OP_ATOMIC_WRITE_RESP:
	case XIW_RDMAP_OP_VERIFY_RESP:
		xiw_rx_resp_cresp_done(dp);
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
 * or process context owning the socket (backlog, xiw_llp_start()).
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
