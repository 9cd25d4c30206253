// SPDX-License-Identifier: GPL-2.0
/*
 * xiw - RX, the requester: the peer's responses to this QP's requests,
 * Read Responses and, on QN 3, Atomic Responses and the commit draft's
 * Flush, Atomic Write and Verify Responses. Each must answer the oldest
 * ORQ entry (TX adds them: xiw_tx_sq.c), and be of its type; a Read
 * Response's sink is checked with the other tagged FPDUs
 * (xiw_rx_hdr_tagged(), xiw_rx.c). The entry is read and popped under
 * dp->lock, a response's result goes to the WR's local buffer, and the WR
 * completes. A response that answers nothing completes the oldest WR with
 * IB_WC_BAD_RESP_ERR before the Terminate.
 *
 * Called by the stream core (xiw_rx.c) under the socket lock, which
 * serialises RX; the ORQ is shared with TX under dp->lock. No sleeping,
 * no allocation.
 */
#include <linux/highmem.h>

#include "xiw_rx.h"

/* ------------------------------------------------------------------------
 * Response headers (the whole header is in rx->hdr)
 */
struct xiw_orqe *xiw_rx_resp_orq_head(struct xiw_qp_dp *dp)
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
void xiw_rx_resp_bad(struct xiw_qp_dp *dp)
{
	struct xiw_orqe *o;
	bool done = false;
	u32 cidx = 0;

	spin_lock_bh(&dp->lock);
	o = xiw_rx_resp_orq_head(dp);
	if (o && !o->rtr) {
		cidx = o->cidx;
		done = true;
	}
	spin_unlock_bh(&dp->lock);
	xiw_dp_mark_failing(dp);
	if (done)
		xiw_dp_cmpl_done(dp, cidx, IB_WC_BAD_RESP_ERR, 0);
}

/* Atomic Response header: it must answer the oldest ORQ entry. */
bool xiw_rx_resp_hdr_aresp(struct xiw_qp_dp *dp)
{
	u32 id = be32_to_cpu(dp->rx.hdr.atomic_resp.req_id);
	struct xiw_orqe *o;
	bool ok;

	spin_lock_bh(&dp->lock);
	o = xiw_rx_resp_orq_head(dp);
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
 * A Response on QN 3 to a commit-draft request: it must answer the
 * oldest ORQ entry, and be of its type.
 */
bool xiw_rx_resp_hdr_cresp(struct xiw_qp_dp *dp, u8 type)
{
	struct xiw_orqe *o;
	bool ok;

	spin_lock_bh(&dp->lock);
	o = xiw_rx_resp_orq_head(dp);
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

/* ------------------------------------------------------------------------
 * Whole response received and its CRC checked: the WR completes
 */

/*
 * An ORQ entry was popped (caller holds dp->lock): an ORD slot is free and
 * a fence may have lifted. TX needs a kick only if it waits for that,
 * which it says with XIW_DP_ORD_WAIT, set under dp->lock too
 * (xiw_tx_sq_blocked()), so the kick is never lost. It is given at the end
 * of the RX pass (xiw_rx_data_ready()), after the completion.
 */
static void xiw_rx_resp_orq_freed(struct xiw_qp_dp *dp)
{
	if (test_and_clear_bit(XIW_DP_ORD_WAIT, &dp->flags))
		dp->rx.tx_wake = true;
}

void xiw_rx_resp_rresp_done(struct xiw_qp_dp *dp, u32 payload, bool last)
{
	struct xiw_qp *qp = dp->qp;
	struct xiw_orqe *o, orqe;

	spin_lock_bh(&dp->lock);
	o = xiw_rx_resp_orq_head(dp);
	if (!o) {
		spin_unlock_bh(&dp->lock);
		return;		/* flushed meanwhile */
	}
	o->placed += payload;
	orqe = *o;
	if (last) {
		dp->orq_head++;
		xiw_rx_resp_orq_freed(dp);
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

/* Copy @n bytes of kernel memory into an MR. */
static int xiw_rx_resp_mr_write(struct xiw_mr *mr, u64 va, const void *src,
				u32 n)
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
static bool xiw_rx_resp_orq_pop(struct xiw_qp_dp *dp, struct xiw_orqe *o)
{
	struct xiw_orqe *head;

	dp->rx.msn[XIW_QN_RESP]++;
	spin_lock_bh(&dp->lock);
	head = xiw_rx_resp_orq_head(dp);
	if (head) {
		*o = *head;
		dp->orq_head++;
		xiw_rx_resp_orq_freed(dp);
	}
	spin_unlock_bh(&dp->lock);
	return head;
}

/*
 * Write what a Response returns (an atomic's original value, a Verify's
 * digest) to the WR's local result buffer. An ib_wc status. @o is the
 * entry xiw_rx_resp_orq_pop() copied out: its region reference, if any, is
 * consumed.
 */
static u8 xiw_rx_resp_result_write(struct xiw_qp_dp *dp, struct xiw_orqe *o,
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
	if (!mr || xiw_rx_resp_mr_write(mr, o->sink_to, src, n))
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
void xiw_rx_resp_aresp_done(struct xiw_qp_dp *dp)
{
	u64 orig = be64_to_cpu(dp->rx.hdr.atomic_resp.orig);
	struct xiw_orqe o;

	if (!xiw_rx_resp_orq_pop(dp, &o))
		return;		/* flushed meanwhile */
	xiw_rx_resp_complete(dp, &o, xiw_rx_resp_result_write(dp, &o, &orig,
							      sizeof(orig)),
			     sizeof(orig));
}

/*
 * Flush, Atomic Write or Verify Response delivered: the WR completes. A
 * Verify's digest goes to its result buffer (if it has one; too short a
 * buffer completes the WR with IB_WC_LOC_LEN_ERR).
 */
void xiw_rx_resp_cresp_done(struct xiw_qp_dp *dp)
{
	struct xiw_rx_ctx *rx = &dp->rx;
	u8 st = IB_WC_SUCCESS;
	struct xiw_orqe o;
	u32 n = 0;

	if (!xiw_rx_resp_orq_pop(dp, &o))
		return;		/* flushed meanwhile */
	if (o.type == XIW_RQ_VERIFY) {
		n = be16_to_cpu(rx->hdr.ctrl.mpa_len) -
		    XIW_DDP_UNTAGGED_HDR_LEN;
		if (o.len && n > o.len)
			st = IB_WC_LOC_LEN_ERR;
		else if (o.len)
			st = xiw_rx_resp_result_write(dp, &o,
						      rx->hdr.verify_resp.hash,
						      n);
	}
	if (o.mr)		/* only atomics keep one: not reached */
		xiw_stag_put(o.mr);
	xiw_rx_resp_complete(dp, &o, st, n);
}
