// SPDX-License-Identifier: GPL-2.0
/*
 * xiw - TX engine: SQ processing, FPDU framing, Read and Atomic Responses,
 * Terminate and RTR frames. A pure engine: it reports completions and
 * fatal errors to the data-path core (xiw_dp.c), which owns the
 * connection's lifetime, the completion order and the error path.
 *
 * Work sources, in priority order at every FPDU boundary: a Terminate, the
 * RTR frame, then the SQ and the IRQ (inbound Read Requests) alternating
 * message by message so neither starves the other.
 *
 * Who runs TX: whoever wins XIW_DP_TX_BUSY. A user doorbell that may
 * sleep (preemptible) runs it inline, so a Send goes to TCP in the
 * poster's own syscall when the socket has room; RX answers short inbound
 * requests at the end of its pass (xiw_dp_tx_from_rx(), responses only);
 * otherwise (softirq, spinlock held, a long Read Response) the TX work
 * item runs it. A kernel consumer's posts and a user poster in a burst
 * (XIW_DOORBELL_SQ_BATCH) hand TX to the work item on another CPU and go
 * on (xiw_dp_tx_defer()), so WRs pile up and leave in batches. Every sendmsg is
 * MSG_DONTWAIT: when TCP is full, TX records its position inside the
 * FPDU, sets XIW_DP_TX_NOSPACE and sk_write_space requeues the work; when
 * TCP is short of memory, a backoff timer does too (xiw_tx_backoff()).
 *
 * Zero copy: payload pages of a user MR are handed to TCP by reference
 * (MSG_ZEROCOPY with xiw's own ubuf_info, xiw_tx_zcopy.c) when the message
 * is at least a page and every page passes sendpage_ok(). Such a WR is done
 * only when TCP has released every page (acknowledged, no skb left), so a
 * completion - its own or any later one - always means the buffer is free.
 * The FPDU header and trailer live in the QP's own (slab) memory and are
 * always copied, in separate sendmsg calls. Copied FPDUs of up to a page
 * of payload go whole into a batch that one sendmsg hands to TCP (see
 * "The batch" below).
 * Kernel buffers (DMA MRs,
 * fast-reg pages) and Read Responses (nothing tells the responder when its
 * memory may change) are copied.
 */
#include <linux/delay.h>
#include <linux/highmem.h>
#include <linux/net.h>
#include <linux/slab.h>
#include <linux/tcp.h>
#include <linux/uio.h>
#include <net/sock.h>
#include <net/tcp.h>

#include "xiw_dp.h"
#include "xiw_commit.h"
#include "xiw_trace.h"

/* ------------------------------------------------------------------------
 * Local SGEs
 */

/*
 * Resolve the SGEs of a send-side WR: every non-empty SGE must name a
 * valid MR of the QP's PD covering it with @access. Returns an ib_wc
 * status.
 */
static u8 xiw_tx_resolve_sges(struct xiw_qp_dp *dp, const struct xiw_sge *in,
			      int n, int access, struct xiw_lsge *out,
			      int *nout, u32 *total)
{
	enum xiw_mem_err err;
	u64 sum = 0;
	int i, k = 0;

	for (i = 0; i < n; i++) {
		u32 len = in[i].length;

		if (!len)
			continue;
		out[k].mr = xiw_mr_resolve(xiw_dp_dev(dp), dp->qp->pd,
					   in[i].lkey, access, in[i].addr,
					   len, &err);
		if (!out[k].mr) {
			xiw_dp_dbg(dp, "SGE %d lkey %#x addr %#llx len %u: error %d\n",
				   i, in[i].lkey, in[i].addr, len, err);
			xiw_dp_put_lsges(out, k);
			return IB_WC_LOC_PROT_ERR;
		}
		out[k].addr = in[i].addr;
		out[k].len = len;
		sum += len;
		k++;
	}
	if (sum > BIT(31)) {
		xiw_dp_put_lsges(out, k);
		return IB_WC_LOC_LEN_ERR;
	}
	*nout = k;
	*total = sum;
	return IB_WC_SUCCESS;
}

/* ------------------------------------------------------------------------
 * FPDU framing
 */
static void xiw_tx_bv_virt(struct bio_vec *bv, void *p, u32 len)
{
	bvec_set_virt(bv, p, len);
}

/*
 * Add payload bytes [@from, @from + @n) of the current message to the
 * FPDU as page pieces. Returns the bytes added (less than @n if the piece
 * array filled up) or -EFAULT.
 */
static int xiw_tx_add_sges(struct xiw_tx_ctx *tx, struct xiw_lsge *sge,
			   int nsge, u32 from, u32 n, bool *splice_ok)
{
	u32 added = 0;
	int i = 0;

	/* Find the SGE holding byte @from. */
	while (i < nsge && from >= sge[i].len) {
		from -= sge[i].len;
		i++;
	}
	while (added < n && i < nsge && tx->nbv < XIW_TX_BVEC + 1) {
		u32 off, avail, chunk;
		struct page *page;

		page = xiw_mr_page(sge[i].mr, sge[i].addr + from, &off,
				   &avail);
		if (!page)
			return -EFAULT;
		chunk = min3(avail, sge[i].len - from, n - added);
		if (sge[i].mr->type != XIW_MR_USER || !sendpage_ok(page))
			*splice_ok = false;
		bvec_set_page(&tx->bv[tx->nbv++], page, chunk, off);
		added += chunk;
		from += chunk;
		if (from == sge[i].len) {
			from = 0;
			i++;
		}
	}
	return added;
}

/* Finish the FPDU: MPA length, pad, CRC, header and trailer pieces. */
static void xiw_tx_seal(struct xiw_qp_dp *dp, u32 hdr_len, u32 payload)
{
	struct xiw_tx_ctx *tx = &dp->tx;
	u32 ulpdu = hdr_len - XIW_MPA_HDR_LEN + payload;
	u32 pad = xiw_mpa_pad(ulpdu);
	u32 fpdu_len = xiw_mpa_fpdu_len(ulpdu);
	__le32 trailer;
	int i;

	tx->hdr.ctrl.mpa_len = cpu_to_be16(ulpdu);
	tx->bv_idx = 0;
	tx->bv_off = 0;
	tx->fpdu_active = true;
	/* too long to batch, copied anyway: into the QP's TX pages */
	tx->spliced = !tx->zcopy && fpdu_len > XIW_TX_BATCH_FPDU &&
		      xiw_tx_pages_frame(dp, hdr_len, pad, fpdu_len);
	if (tx->spliced)
		return;
	memset(tx->trailer, 0, sizeof(tx->trailer));
	xiw_tx_bv_virt(&tx->bv[0], &tx->hdr, hdr_len);
	if (dp->crc) {
		u32 crc = xiw_crc_update(XIW_CRC32C_SEED, &tx->hdr, hdr_len);

		for (i = 1; i < tx->nbv; i++) {
			struct bio_vec *bv = &tx->bv[i];
			void *p = kmap_local_page(bv->bv_page);

			crc = xiw_crc_update(crc, p + bv->bv_offset,
					     bv->bv_len);
			kunmap_local(p);
		}
		crc = xiw_crc_update(crc, tx->trailer, pad);
		trailer = xiw_crc_trailer(crc);
		memcpy(tx->trailer + pad, &trailer, sizeof(trailer));
	}
	xiw_tx_bv_virt(&tx->bv[tx->nbv++], tx->trailer,
		       pad + XIW_MPA_CRC_LEN);
}

static void xiw_tx_untagged(struct xiw_qp_dp *dp, unsigned int op, u32 qn,
			    u32 mo, bool last, u32 inv_stag)
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

static void xiw_tx_tagged(struct xiw_qp_dp *dp, unsigned int op, u32 stag,
			  u64 to, bool last)
{
	struct xiw_ddp_tagged *h = &dp->tx.hdr.tagged;

	h->ctrl.ddp = xiw_ddp_ctrl(true, last);
	h->ctrl.rdmap = xiw_rdmap_ctrl(op);
	h->stag = cpu_to_be32(stag);
	h->to = cpu_to_be64(to);
}

static bool xiw_op_atomic(u8 opcode)
{
	const struct xiw_sqe_rule *r = xiw_sqe_op_rule(opcode);

	return r && r->kind == XIW_SQE_KIND_ATOMIC;
}

/* SQ WRs that complete when the peer's response arrives (use ORD). */
static bool xiw_op_needs_ord(u8 opcode)
{
	const struct xiw_sqe_rule *r = xiw_sqe_op_rule(opcode);

	return r && (r->flags & XIW_SQE_ORD);
}

/*
 * TCP short of memory. tcp_sendmsg_locked() with MSG_DONTWAIT also
 * returns -EAGAIN when it cannot allocate or charge memory: an skb or a
 * page fragment under GFP_ATOMIC, or the tcp_mem hard limit
 * (sk_wmem_schedule(), which then moderates the send buffer down to
 * SOCK_MIN_SNDBUF). The socket may still read as writeable then - a few
 * KiB queued against the moderated buffer - and if nothing is in flight
 * no sk_write_space will ever come, so retrying at once would spin, in
 * softirq when RX runs TX, for as long as the shortage lasts. TX backs
 * off instead, as sk_stream_wait_memory() makes a blocking sender wait:
 * it stays parked with XIW_DP_TX_NOSPACE (tcp_sendmsg_locked() set
 * SOCK_NOSPACE, so an ACK that frees memory still calls sk_write_space,
 * which requeues TX), and tx_retry requeues it after
 * XIW_TX_BACKOFF_MIN_MS, doubling up to XIW_TX_BACKOFF_MAX_MS while the
 * sends keep failing. Any byte TCP takes ends the backoff. Caller owns
 * TX_BUSY (tx->backoff_ms).
 */
static void xiw_tx_backoff(struct xiw_qp_dp *dp)
{
	struct xiw_tx_ctx *tx = &dp->tx;
	u32 ms = tx->backoff_ms ? tx->backoff_ms : XIW_TX_BACKOFF_MIN_MS;

	tx->backoff_ms = min_t(u32, ms * 2, XIW_TX_BACKOFF_MAX_MS);
	xiw_dp_dbg(dp, "TCP short of memory: TX retries in %u ms\n", ms);
	mod_delayed_work(xiw_dp_wq, &dp->tx_retry, msecs_to_jiffies(ms));
}

/* The backoff is over: TX tries again, unless sk_write_space was first. */
void xiw_tx_retry_work(struct work_struct *w)
{
	struct xiw_qp_dp *dp = container_of(to_delayed_work(w),
					    struct xiw_qp_dp, tx_retry);

	if (test_and_clear_bit(XIW_DP_TX_NOSPACE, &dp->flags))
		xiw_dp_tx_queue(dp);
}

/*
 * TCP took nothing (-EAGAIN, or 0): wait for sk_write_space. True if the
 * socket has room again already: try once more. A socket without room
 * (not writeable) always waits for sk_write_space. A writeable one is
 * retried once per push (@retried): sk_write_space may have run between
 * the failed sendmsg and the NOSPACE bit, and nobody would requeue TX;
 * failing again with room is TCP short of memory: back off.
 */
static bool xiw_tx_nospace(struct xiw_qp_dp *dp, bool *retried)
{
	xiw_dp_stat_add(dp, XIW_STAT_TX_NOSPACE, 1);
	set_bit(XIW_DP_TX_NOSPACE, &dp->flags);
	/* sk_write_space may have run already */
	smp_mb__after_atomic();
	if (!sk_stream_is_writeable(dp->sk))
		return false;
	if (*retried) {
		xiw_tx_backoff(dp);
		return false;
	}
	*retried = true;
	return test_and_clear_bit(XIW_DP_TX_NOSPACE, &dp->flags);
}

static int xiw_tx_sendmsg(struct xiw_qp_dp *dp, struct msghdr *msg)
{
	xiw_dp_stat_add(dp, XIW_STAT_TX_SENDMSG, 1);
	if (dp->tx.from_rx)
		/* RX holds the socket lock: see xiw_dp_tx_from_rx() */
		return tcp_sendmsg_locked(dp->sk, msg, msg_data_left(msg));
	return sock_sendmsg(dp->sock, msg);
}

/* Send the current FPDU. 0 when it is all in TCP, -EAGAIN, or an error. */
static int xiw_tx_push(struct xiw_qp_dp *dp)
{
	struct xiw_tx_ctx *tx = &dp->tx;
	bool retried = false;

	while (tx->bv_idx < tx->nbv) {
		int first = tx->bv_idx, last, i;
		struct msghdr msg = {};
		bool splice = false;
		size_t len = 0;
		int rv;

		if (!tx->zcopy) {
			last = tx->nbv;
		} else if (first == 0 || first == tx->nbv - 1) {
			last = first + 1;
		} else {
			last = tx->nbv - 1;
			splice = true;
		}
		for (i = first; i < last; i++)
			len += tx->bv[i].bv_len;
		iov_iter_bvec(&msg.msg_iter, ITER_SOURCE, &tx->bv[first],
			      last - first, len);
		iov_iter_advance(&msg.msg_iter, tx->bv_off);
		msg.msg_flags = MSG_DONTWAIT | MSG_NOSIGNAL;
		if (last < tx->nbv || tx->more)
			msg.msg_flags |= MSG_MORE;
		if (tx->spliced)
			/* the QP's TX pages, written again only when free */
			msg.msg_flags |= MSG_SPLICE_PAGES;
		if (splice) {
			/* TCP references the pages until they are acked. */
			msg.msg_flags |= MSG_ZEROCOPY;
			msg.msg_ubuf = xiw_tx_zc_uarg(tx->zc);
		}
		rv = xiw_tx_sendmsg(dp, &msg);
		if (rv <= 0) {
			if (rv == -EAGAIN || rv == 0) {
				if (xiw_tx_nospace(dp, &retried))
					continue;
				return -EAGAIN;
			}
			return rv;
		}
		tx->backoff_ms = 0;
		/* Advance by what TCP took, piece by piece. */
		len = rv;
		while (len) {
			u32 left = tx->bv[tx->bv_idx].bv_len - tx->bv_off;

			if (len < left) {
				tx->bv_off += len;
				break;
			}
			len -= left;
			tx->bv_idx++;
			tx->bv_off = 0;
		}
		/* Skip empty pieces. */
		while (tx->bv_idx < tx->nbv &&
		       tx->bv[tx->bv_idx].bv_len == tx->bv_off) {
			tx->bv_idx++;
			tx->bv_off = 0;
		}
	}
	tx->fpdu_active = false;
	return 0;
}

/* ------------------------------------------------------------------------
 * Work sources
 */
static void xiw_tx_build_term(struct xiw_qp_dp *dp)
{
	struct xiw_rdmap_term *t = &dp->tx.hdr.term;
	struct xiw_term_code tc = dp->term;
	bool tagged = false;
	u32 rlen, copy = 0;

	memset(t, 0, sizeof(*t));
	if (dp->term_hdr_len >= XIW_MPA_HDR_LEN + 1)
		tagged = dp->term_hdr[2] & XIW_DDP_T;
	/* Copy only what was received of the offending header. */
	if (tc.hdrct & XIW_TERM_HDRCT_D) {
		copy = xiw_term_len(tc.hdrct, tagged) - XIW_RDMAP_TERM_MIN - 2;
		if (dp->term_hdr_len < XIW_MPA_HDR_LEN + copy) {
			tc.hdrct &= ~(XIW_TERM_HDRCT_D | XIW_TERM_HDRCT_R);
			copy = 0;
		}
	}
	if ((tc.hdrct & XIW_TERM_HDRCT_M) &&
	    dp->term_hdr_len < XIW_MPA_HDR_LEN)
		tc.hdrct &= ~XIW_TERM_HDRCT_M;
	rlen = xiw_term_len(tc.hdrct, tagged);
	t->term_ctrl = xiw_term_ctrl(&tc);
	if (tc.hdrct & (XIW_TERM_HDRCT_M | XIW_TERM_HDRCT_D))
		memcpy(&t->ddp_seg_len, dp->term_hdr, XIW_MPA_HDR_LEN);
	if (copy)
		memcpy(t->term_hdrs, dp->term_hdr + XIW_MPA_HDR_LEN, copy);
	xiw_tx_untagged(dp, XIW_RDMAP_OP_TERMINATE, XIW_QN_TERM, 0, true, 0);
	dp->tx.nbv = 1;
	dp->tx.zcopy = false;
	xiw_tx_seal(dp, XIW_UT_FPDU_HDR_LEN(rlen), 0);
	dp->tx.kind = XIW_TX_TERM;
	dp->tx.fpdu_last = true;
}

/* Reserve an ORQ slot for a request of @type; caller holds dp->lock. */
static struct xiw_orqe *xiw_orq_add(struct xiw_qp_dp *dp, u8 type)
{
	u32 n = roundup_pow_of_two(max_t(u32, dp->ord, 1));
	struct xiw_orqe *o = &dp->orq[dp->orq_tail & (n - 1)];

	memset(o, 0, sizeof(*o));
	o->type = type;
	dp->orq_tail++;
	return o;
}

static void xiw_tx_build_rtr(struct xiw_qp_dp *dp)
{
	struct xiw_tx_ctx *tx = &dp->tx;
	struct xiw_rdmap_rreq *r = &tx->hdr.rreq;
	struct xiw_orqe *o;
	u32 hlen;

	memset(&tx->hdr, 0, sizeof(tx->hdr));
	switch (dp->rtr) {
	case XIW_RTR_WRITE:
		xiw_tx_tagged(dp, XIW_RDMAP_OP_WRITE, XIW_RTR_READ_STAG, 0,
			      true);
		hlen = sizeof(struct xiw_ddp_tagged);
		break;
	case XIW_RTR_READ:
		xiw_tx_untagged(dp, XIW_RDMAP_OP_READ_REQ, XIW_QN_REQ, 0, true,
				0);
		r->sink_stag = cpu_to_be32(XIW_RTR_READ_STAG);
		r->src_stag = cpu_to_be32(XIW_RTR_READ_STAG);
		spin_lock_bh(&dp->lock);
		o = xiw_orq_add(dp, XIW_RQ_READ);
		o->rtr = true;
		o->sink_stag = XIW_RTR_READ_STAG;
		spin_unlock_bh(&dp->lock);
		hlen = sizeof(*r);
		break;
	default:
		xiw_tx_untagged(dp, XIW_RDMAP_OP_SEND, XIW_QN_SEND, 0, true, 0);
		hlen = sizeof(struct xiw_ddp_untagged);
		break;
	}
	tx->nbv = 1;
	tx->zcopy = false;
	xiw_tx_seal(dp, hlen, 0);
	tx->kind = XIW_TX_RTR;
	dp->rtr = XIW_RTR_NONE;
}

/* Release what the current SQ WR holds. */
static void xiw_tx_wqe_end(struct xiw_qp_dp *dp)
{
	xiw_dp_put_lsges(dp->tx.sge, dp->tx.nsge);
	dp->tx.nsge = 0;
	dp->tx.sq_active = false;
}

/* Complete the current SQ WR with @status (error: the QP goes down). */
static void xiw_tx_wqe_complete(struct xiw_qp_dp *dp, u8 status)
{
	struct xiw_tx_zc *zc = dp->tx.zc;

	dp->tx.zc = NULL;
	if (zc && status == IB_WC_SUCCESS)
		/* done once TCP lets go of the pages */
		xiw_tx_zc_finish(zc, dp->tx.len);
	else
		xiw_dp_cmpl_done(dp, dp->tx.cidx, status, dp->tx.len);
	if (zc && status != IB_WC_SUCCESS)
		xiw_tx_zc_put(zc);
	xiw_tx_wqe_end(dp);
	if (status != IB_WC_SUCCESS) {
		struct xiw_term_code tc = {
			.layer = XIW_TERM_LAYER_RDMAP,
			.etype = XIW_RDMAP_ET_CATASTROPHIC,
		};

		xiw_dp_fatal(dp, &tc, NULL, 0, -EINVAL);
	}
}

/* Is the SQ slot TX takes next published? Caller owns TX_BUSY. */
static bool xiw_tx_sq_head_valid(struct xiw_qp *qp)
{
	unsigned long flags;
	bool valid;

	spin_lock_irqsave(&qp->sq_lock, flags);
	valid = xiw_wq_published(&qp->sq, qp->sq.cons, 0);
	spin_unlock_irqrestore(&qp->sq_lock, flags);
	return valid;
}

/*
 * Take the next SQE from the ring into the TX context. The SQE is copied
 * out before anything in it is looked at (user rings are shared with the
 * process) and its slot is returned at once. Returns false if the SQ is
 * empty or no completion slot is free for the WQE at its head. Only a
 * WQE that waits for a slot sets XIW_DP_CMPL_WAIT (the reap that frees
 * one kicks TX): with the ring full and nothing posted the SQ is just
 * empty, and the next post rings or kicks as for any empty SQ. Setting
 * it for a ring that is merely full made every completion of a QP at its
 * SQ depth (every perftest latency run) kick TX for a pass that found
 * nothing.
 */
static bool xiw_tx_fetch(struct xiw_qp_dp *dp)
{
	struct xiw_qp *qp = dp->qp;
	struct xiw_tx_ctx *tx = &dp->tx;
	struct xiw_dp_cmpl *c;
	unsigned long flags;
	bool got = false;

	spin_lock_bh(&dp->lock);
	/*
	 * The flush marks, under dp->lock, every WR the data path took; a WR
	 * taken after it would never complete. Leave it in the ring, whose
	 * own flush follows.
	 */
	if (test_bit(XIW_DP_FLUSHED, &dp->flags)) {
		spin_unlock_bh(&dp->lock);
		tx->sq_empty_seen = false;
		return false;
	}
	if (dp->cmpl_tail - dp->cmpl_head >= dp->cmpl_num) {
		if (!xiw_tx_sq_head_valid(qp)) {
			/* nothing waits for a slot: the SQ is empty */
			spin_unlock_bh(&dp->lock);
			tx->sq_empty_seen = true;
			return false;
		}
		/* under dp->lock: the reaper that frees a slot sees it */
		set_bit(XIW_DP_CMPL_WAIT, &dp->flags);
		spin_unlock_bh(&dp->lock);
		/* blocked, not empty: a completion kicks TX again */
		tx->sq_empty_seen = false;
		return false;
	}
	spin_lock_irqsave(&qp->sq_lock, flags);
	got = xiw_wq_take(&qp->sq, &tx->sqe);
	spin_unlock_irqrestore(&qp->sq_lock, flags);
	tx->sq_empty_seen = !got;
	if (got) {
		c = &dp->cmpl[dp->cmpl_tail & (dp->cmpl_num - 1)];
		c->wr_id = tx->sqe.wr_id;
		/*
		 * Its completion opcode, also if the WR fails its checks
		 * (xiw_tx_start_sqe()); a refused opcode completes as a Send.
		 */
		c->opcode = xiw_sqe_op_allowed(tx->sqe.opcode, qp->user) ?
			    xiw_sq_wc_opcode(qp->user, tx->sqe.opcode) :
			    IB_WC_SEND;
		c->status = IB_WC_SUCCESS;
		c->byte_len = 0;
		c->vendor_err = 0;
		c->signaled = tx->sqe.flags & XIW_WQE_SIGNALED ||
			      qp->sq_sig_type == IB_SIGNAL_ALL_WR;
		c->state = XIW_CMPL_PENDING;
		tx->cidx = dp->cmpl_tail++;
	}
	spin_unlock_bh(&dp->lock);
	if (!got)
		return false;
	tx->sq_active = true;
	tx->done = 0;
	tx->len = 0;
	tx->nsge = 0;
	return true;
}

/*
 * Validate the fetched SQE and resolve its buffers. Returns 0, or an
 * ib_wc status to complete it with. Local operations are executed here.
 * The rules are the contract of <rdma/xiw-sqe.h>, applied to TX's private
 * copy of the SQE (a user ring may be rewritten at any time).
 */
static int xiw_tx_start_sqe(struct xiw_qp_dp *dp)
{
	struct xiw_qp *qp = dp->qp;
	struct xiw_tx_ctx *tx = &dp->tx;
	struct xiw_sqe *s = &tx->sqe;
	const struct xiw_sqe_limits lim = {
		.max_sge = qp->max_send_sge,
		.max_inline = qp->max_inline,
	};
	const struct xiw_sqe_rule *r;
	u8 st;

	BUILD_BUG_ON((int)XIW_SQE_LOC_LEN_ERR != (int)IB_WC_LOC_LEN_ERR ||
		     (int)XIW_SQE_LOC_QP_OP_ERR != (int)IB_WC_LOC_QP_OP_ERR);
	BUILD_BUG_ON((int)IB_UVERBS_ACCESS_LOCAL_WRITE !=
		     (int)IB_ACCESS_LOCAL_WRITE);
	r = xiw_sqe_op_allowed(s->opcode, qp->user);
	if (!r) {
		xiw_dp_dbg(dp, "opcode %u refused in a %s SQ\n", s->opcode,
			   qp->user ? "user" : "kernel");
		return IB_WC_LOC_QP_OP_ERR;
	}
	st = xiw_sqe_check(s, s->flags, &lim, qp->user);
	if (st)
		return st;

	switch (s->opcode) {
	case XIW_OP_REG_MR:
		if (xiw_mr_fast_reg(to_xiw_mr((struct ib_mr *)(uintptr_t)
					      s->raddr), qp->pd, s->rkey,
				    (int)s->imm))
			return IB_WC_MW_BIND_ERR;
		return -EALREADY;
	case XIW_OP_LOCAL_INV:
		if (xiw_mr_invalidate(xiw_dp_dev(dp), qp->pd, s->rkey, false))
			return IB_WC_MW_BIND_ERR;
		return -EALREADY;
	}
	if (r->kind == XIW_SQE_KIND_IMM || r->kind == XIW_SQE_KIND_FLUSH ||
	    r->kind == XIW_SQE_KIND_AWRITE) {
		/* no local buffer: the operands are in the SQE */
		tx->len = 0;
		return 0;
	}
	if (s->flags & XIW_WQE_INLINE) {
		tx->len = s->num_sge;
		return 0;
	}
	st = xiw_tx_resolve_sges(dp, s->sge, s->num_sge, r->local_access,
				 tx->sge, &tx->nsge, &tx->len);
	return st == IB_WC_SUCCESS ? 0 : st;
}

/*
 * May the SQ WR in the context go now? Read fence: wait until no Read or
 * Atomic is outstanding; Reads and Atomics: wait for a free ORD slot
 * (RFC 7306: they share ORD/IRD). Local fence (every prior
 * WR complete): WRs before this one have been handed to TCP in order, and
 * the only ones that can still be incomplete are Reads waiting for their
 * Response, so it waits for the same condition as the read fence.
 */
static bool xiw_tx_sq_blocked(struct xiw_qp_dp *dp)
{
	struct xiw_sqe *s = &dp->tx.sqe;
	bool read = xiw_op_needs_ord(s->opcode);
	bool fence = s->flags & (XIW_WQE_READ_FENCE | XIW_WQE_LOCAL_FENCE);
	bool blocked;
	u32 busy;

	if (!read && !fence)
		return false;
	spin_lock_bh(&dp->lock);
	busy = dp->orq_tail - dp->orq_head;
	blocked = (fence && busy) || (read && busy >= max_t(u32, dp->ord, 1));
	/*
	 * Under dp->lock, like every ORQ pop (xiw_qp_rx.c): the pop after
	 * this sees the bit and kicks TX; a pop before it made busy smaller.
	 * So the Response that unblocks this WR always kicks, and no other
	 * Response needs to.
	 */
	if (blocked)
		set_bit(XIW_DP_ORD_WAIT, &dp->flags);
	spin_unlock_bh(&dp->lock);
	return blocked;
}

/* RFC 7306 Immediate Data [with SE]: untagged, QN 0, 8 bytes. */
static void xiw_tx_build_imm(struct xiw_qp_dp *dp)
{
	struct xiw_tx_ctx *tx = &dp->tx;
	struct xiw_rdmap_imm *h = &tx->hdr.imm;
	bool se = tx->sqe.flags & XIW_WQE_SOLICITED;

	xiw_tx_untagged(dp, se ? XIW_RDMAP_OP_IMM_SE : XIW_RDMAP_OP_IMM,
			XIW_QN_SEND, 0, true, 0);
	h->data = cpu_to_be64(tx->sqe.imm);
	tx->zcopy = false;
	xiw_tx_seal(dp, sizeof(*h), 0);
	tx->fpdu_last = true;
}

/*
 * RFC 7306 Atomic Request: untagged on QN 1 like a Read Request, one ORD
 * slot. Unmasked operations go on the wire in their masked form: FetchAdd
 * with Add Mask 0 (one 64-bit field), CmpSwap with all-ones masks.
 */
static void xiw_tx_build_atomic(struct xiw_qp_dp *dp)
{
	struct xiw_tx_ctx *tx = &dp->tx;
	struct xiw_sqe *s = &tx->sqe;
	struct xiw_rdmap_atomic_req *r = &tx->hdr.atomic_req;
	bool masked = s->opcode == XIW_OP_ATOMIC_MASKED_FADD ||
		      s->opcode == XIW_OP_ATOMIC_MASKED_CSWAP;
	struct xiw_orqe *o;
	u32 req_id;

	xiw_tx_untagged(dp, XIW_RDMAP_OP_ATOMIC_REQ, XIW_QN_REQ, 0, true, 0);
	spin_lock_bh(&dp->lock);
	req_id = dp->orq_tail;
	o = xiw_orq_add(dp, XIW_RQ_ATOMIC);
	o->cidx = tx->cidx;
	o->req_id = req_id;
	o->sink_stag = READ_ONCE(tx->sge[0].mr->stag);
	o->sink_to = tx->sge[0].addr;
	o->len = sizeof(u64);
	/* the result buffer's region goes to RX with the entry */
	o->mr = tx->sge[0].mr;
	tx->sge[0].mr = NULL;
	spin_unlock_bh(&dp->lock);

	r->req_id = cpu_to_be32(req_id);
	r->stag = cpu_to_be32(s->rkey);
	r->to = cpu_to_be64(s->raddr);
	if (s->opcode == XIW_OP_ATOMIC_CSWAP ||
	    s->opcode == XIW_OP_ATOMIC_MASKED_CSWAP) {
		r->aopcode = cpu_to_be32(XIW_AOP_CMP_SWAP);
		r->add_swap = cpu_to_be64(s->atomic.swap);
		r->add_swap_mask = cpu_to_be64(masked ? s->atomic.swap_mask :
						~0ULL);
		r->cmp = cpu_to_be64(s->atomic.compare_add);
		r->cmp_mask = cpu_to_be64(masked ?
					  s->atomic.compare_add_mask : ~0ULL);
	} else {
		r->aopcode = cpu_to_be32(XIW_AOP_FETCH_ADD);
		r->add_swap = cpu_to_be64(s->atomic.compare_add);
		r->add_swap_mask = cpu_to_be64(masked ?
					       s->atomic.compare_add_mask : 0);
		r->cmp = 0;
		r->cmp_mask = cpu_to_be64(~0ULL);
	}
	tx->zcopy = false;
	xiw_tx_seal(dp, sizeof(*r), 0);
	tx->fpdu_last = true;
}

/*
 * Commit draft requests (Flush, Atomic Write, Verify): untagged on QN 1,
 * one ORD slot each, completed by their Response.
 */
static void xiw_tx_build_commit(struct xiw_qp_dp *dp)
{
	struct xiw_tx_ctx *tx = &dp->tx;
	struct xiw_sqe *s = &tx->sqe;
	union xiw_fpdu_hdr *h = &tx->hdr;
	struct xiw_orqe *o;
	u32 hlen;

	spin_lock_bh(&dp->lock);
	o = xiw_orq_add(dp, s->opcode == XIW_OP_FLUSH ? XIW_RQ_FLUSH :
			    s->opcode == XIW_OP_ATOMIC_WRITE ? XIW_RQ_AWRITE :
			    XIW_RQ_VERIFY);
	o->cidx = tx->cidx;
	if (s->opcode == XIW_OP_VERIFY && tx->nsge) {
		o->sink_stag = READ_ONCE(tx->sge[0].mr->stag);
		o->sink_to = tx->sge[0].addr;
		o->len = tx->sge[0].len;
	}
	spin_unlock_bh(&dp->lock);

	switch (s->opcode) {
	case XIW_OP_FLUSH: {
		struct xiw_rdmap_flush_req *r = &h->flush_req;
		bool region = s->flush.level == XIW_FLUSH_LEVEL_MR;
		u32 flags = 0;

		xiw_tx_untagged(dp, XIW_RDMAP_OP_FLUSH_REQ, XIW_QN_REQ, 0,
				true, 0);
		if (s->flush.type & XIW_FLUSH_TYPE_GLOBAL)
			flags |= XIW_FLUSH_GLOBAL;
		if (s->flush.type & XIW_FLUSH_TYPE_PERSISTENT)
			flags |= XIW_FLUSH_PERSISTENT;
		if (region)
			flags |= XIW_FLUSH_REGION;
		r->sink_stag = cpu_to_be32(s->rkey);
		/* R: a peer ignoring it fails the bounds check */
		r->sink_len = cpu_to_be32(region ? U32_MAX :
					  (u32)s->flush.length);
		r->sink_to = cpu_to_be64(s->raddr);
		r->flags = cpu_to_be32(flags);
		hlen = sizeof(*r);
		break;
	}
	case XIW_OP_ATOMIC_WRITE: {
		struct xiw_rdmap_awrite_req *r = &h->awrite_req;

		xiw_tx_untagged(dp, XIW_RDMAP_OP_ATOMIC_WRITE_REQ, XIW_QN_REQ,
				0, true, 0);
		r->sink_stag = cpu_to_be32(s->rkey);
		r->sink_len = cpu_to_be32(XIW_ATOMIC_WRITE_LEN);
		r->sink_to = cpu_to_be64(s->raddr);
		/* the 8 bytes as they are in memory: no byte swapping */
		memcpy(&r->data, &s->atomic_write, sizeof(r->data));
		hlen = sizeof(*r);
		break;
	}
	default: {	/* Verify */
		struct xiw_rdmap_verify_req *r = &h->verify_req;
		u32 n = s->verify.hash_len;

		xiw_tx_untagged(dp, XIW_RDMAP_OP_VERIFY_REQ, XIW_QN_REQ, 0,
				true, 0);
		r->sink_stag = cpu_to_be32(s->rkey);
		r->sink_len = cpu_to_be32(s->verify.length);
		r->sink_to = cpu_to_be64(s->raddr);
		memcpy(r->hash, s->verify.hash, n);
		hlen = XIW_UT_FPDU_HDR_LEN(XIW_RDMAP_VERIFY_REQ_MIN) + n;
		break;
	}
	}
	tx->zcopy = false;
	xiw_tx_seal(dp, hlen, 0);
	tx->fpdu_last = true;
}

/* Frame the next FPDU of the SQ WR. */
static int xiw_tx_build_sq(struct xiw_qp_dp *dp)
{
	struct xiw_tx_ctx *tx = &dp->tx;
	struct xiw_sqe *s = &tx->sqe;
	bool tagged = s->opcode == XIW_OP_WRITE ||
		      s->opcode == XIW_OP_WRITE_IMM;
	bool splice_ok = dp->qp->user && tx->len >= PAGE_SIZE &&
			 !(s->flags & XIW_WQE_INLINE) &&
			 (tx->zc || xiw_tx_zcopy_enabled());
	u32 n, hlen;
	int rv;

	memset(&tx->hdr, 0, sizeof(tx->hdr));
	tx->nbv = 1;
	if (xiw_op_atomic(s->opcode)) {
		xiw_tx_build_atomic(dp);
		return 0;
	}
	if (s->opcode == XIW_OP_FLUSH || s->opcode == XIW_OP_ATOMIC_WRITE ||
	    s->opcode == XIW_OP_VERIFY) {
		xiw_tx_build_commit(dp);
		return 0;
	}
	/* Write with Immediate: the Write's FPDUs, then Immediate Data. */
	if (s->opcode == XIW_OP_IMM ||
	    (s->opcode == XIW_OP_WRITE_IMM && tx->done == tx->len)) {
		xiw_tx_build_imm(dp);
		return 0;
	}
	if (s->opcode == XIW_OP_READ || s->opcode == XIW_OP_READ_INV) {
		struct xiw_rdmap_rreq *r = &tx->hdr.rreq;
		struct xiw_orqe *o;

		xiw_tx_untagged(dp, XIW_RDMAP_OP_READ_REQ, XIW_QN_REQ, 0, true,
				0);
		spin_lock_bh(&dp->lock);
		o = xiw_orq_add(dp, XIW_RQ_READ);
		o->cidx = tx->cidx;
		o->sink_stag = tx->nsge ? READ_ONCE(tx->sge[0].mr->stag) :
					  XIW_RTR_READ_STAG;
		o->sink_to = tx->nsge ? tx->sge[0].addr : 0;
		o->len = tx->len;
		o->inv = s->opcode == XIW_OP_READ_INV;
		/*
		 * READ_WITH_INV invalidates the sink MR. rdma_rw sets
		 * invalidate_rkey before it bumps the MR's key, so trust the
		 * STag the sink SGE really uses (as siw does).
		 */
		o->inv_stag = o->sink_stag;
		spin_unlock_bh(&dp->lock);
		r->sink_stag = cpu_to_be32(o->sink_stag);
		r->sink_to = cpu_to_be64(o->sink_to);
		r->read_size = cpu_to_be32(tx->len);
		r->src_stag = cpu_to_be32(s->rkey);
		r->src_to = cpu_to_be64(s->raddr);
		tx->zcopy = false;
		xiw_tx_seal(dp, sizeof(*r), 0);
		tx->fpdu_last = true;
		return 0;
	}

	hlen = tagged ? sizeof(struct xiw_ddp_tagged) :
			sizeof(struct xiw_ddp_untagged);
	n = min(tx->len - tx->done, xiw_ddp_max_payload(dp->mss, tagged));
	if (s->flags & XIW_WQE_INLINE) {
		if (n)
			xiw_tx_bv_virt(&tx->bv[tx->nbv++],
				       s->inline_data + tx->done, n);
	} else if (n) {
		rv = xiw_tx_add_sges(tx, tx->sge, tx->nsge, tx->done, n,
				     &splice_ok);
		if (rv < 0)
			return rv;
		n = rv;
	}
	tx->fpdu_last = tx->done + n == tx->len;
	if (tagged) {
		xiw_tx_tagged(dp, XIW_RDMAP_OP_WRITE, s->rkey,
			      s->raddr + tx->done, tx->fpdu_last);
		/* the WR ends with the Immediate Data that follows */
		if (s->opcode == XIW_OP_WRITE_IMM)
			tx->fpdu_last = false;
	} else {
		bool inv = s->opcode == XIW_OP_SEND_INV;
		bool se = s->flags & XIW_WQE_SOLICITED;
		unsigned int op = inv ? (se ? XIW_RDMAP_OP_SEND_SE_INV :
					      XIW_RDMAP_OP_SEND_INV) :
					(se ? XIW_RDMAP_OP_SEND_SE :
					      XIW_RDMAP_OP_SEND);

		xiw_tx_untagged(dp, op, XIW_QN_SEND, tx->done, tx->fpdu_last,
				inv ? s->rkey : 0);
	}
	if (splice_ok && n && !tx->zc)
		tx->zc = xiw_tx_zc_get(dp, tx->cidx);	/* NULL: copy */
	tx->zcopy = splice_ok && n && tx->zc;
	xiw_tx_seal(dp, hlen, n);
	tx->done += n;
	return 0;
}

/* Terminate for a responder-side failure found by TX (no header copy). */
static void xiw_tx_resp_fail(struct xiw_qp_dp *dp, u8 etype, u8 ecode,
			     int reason)
{
	struct xiw_term_code tc = {
		.layer = XIW_TERM_LAYER_RDMAP, .etype = etype, .ecode = ecode,
	};

	/* the consumer learns it as from RX: the peer's request failed */
	if (!test_bit(XIW_DP_ERROR, &dp->flags))
		xiw_qp_event(dp->qp, xiw_dp_term_event(&tc));
	xiw_dp_fatal(dp, &tc, NULL, 0, reason);
}

static void xiw_tx_prot_fail(struct xiw_qp_dp *dp, enum xiw_mem_err err)
{
	xiw_tx_resp_fail(dp, XIW_RDMAP_ET_REMOTE_PROT,
			 err == XIW_MEM_ACCESS ? XIW_RDMAP_EC_ACCESS :
			 err == XIW_MEM_BOUNDS ? XIW_RDMAP_EC_BASE_BOUNDS :
			 err == XIW_MEM_PD ? XIW_RDMAP_EC_STAG_NOT_ASSOC :
			 err == XIW_MEM_WRAP ? XIW_RDMAP_EC_TO_WRAP :
			 XIW_RDMAP_EC_INV_STAG, -EACCES);
}

/*
 * Execute an RFC 7306 atomic on the target memory with the CPU's 64-bit
 * compare-and-exchange, so it is atomic against other QPs, other devices
 * and the local CPUs alike; the value is in the CPU's byte order in
 * memory, big-endian on the wire. A CmpSwap that does not match (or a
 * FetchAdd of nothing) stores nothing.
 */
static bool xiw_tx_exec_atomic(struct xiw_mr *mr, struct xiw_irqe *e)
{
	bool fadd = (e->aopcode & XIW_AOP_MASK) == XIW_AOP_FETCH_ADD;
	u64 *p, old, new;
	struct page *page;
	u32 poff, avail;
	void *va;

	page = xiw_mr_page(mr, e->sink_to, &poff, &avail);
	if (!page || poff & (XIW_ATOMIC_ALIGN - 1) || avail < sizeof(u64))
		return false;
	va = kmap_local_page(page);
	p = va + poff;
	old = READ_ONCE(*p);
	do {
		new = fadd ? xiw_masked_fadd(old, e->add_swap,
					     e->add_swap_mask) :
			     xiw_masked_cswap(old, e->cmp, e->cmp_mask,
					      e->add_swap, e->add_swap_mask);
		if (new == old)
			break;
	} while (!try_cmpxchg64(p, &old, new));
	kunmap_local(va);
	e->orig = old;
	return true;
}

/*
 * Execute the atomic, Atomic Write, Flush or Verify in tx->irqe on the
 * responder's memory, right before its response. RX checked the request;
 * the region RX kept (an atomic's, e->mr, consumed) is checked again, or
 * the STag resolved again (the MR may have changed since). Returns false
 * after a Terminate.
 */
static bool xiw_tx_exec_irqe(struct xiw_qp_dp *dp, struct xiw_irqe *e,
			     bool offloaded)
{
	struct xiw_mr *mr, *kept = e->mr;
	enum xiw_mem_err err;
	u8 dig[XIW_VERIFY_HASH_MAX];
	u64 va = e->sink_to, len = e->len;
	int access, rv;

	e->mr = NULL;

	switch (e->type) {
	case XIW_RQ_ATOMIC:
		access = IB_ACCESS_REMOTE_ATOMIC;
		break;
	case XIW_RQ_AWRITE:
		access = IB_ACCESS_REMOTE_WRITE;
		break;
	case XIW_RQ_VERIFY:
		access = IB_ACCESS_REMOTE_READ;
		break;
	default:	/* Flush */
		access = 0;
		if (e->flags & XIW_FLUSH_PERSISTENT)
			access |= IB_ACCESS_FLUSH_PERSISTENT;
		if ((e->flags & XIW_FLUSH_GLOBAL) || !access)
			access |= IB_ACCESS_FLUSH_GLOBAL;
		if (e->flags & XIW_FLUSH_REGION) {
			mr = xiw_mr_get(xiw_dp_dev(dp), e->sink_stag);
			if (!mr) {
				if (kept)
					xiw_mr_put(kept);
				xiw_tx_prot_fail(dp, XIW_MEM_INV_STAG);
				return false;
			}
			va = READ_ONCE(mr->base.iova);
			len = READ_ONCE(mr->base.length);
			xiw_mr_put(mr);
		}
		break;
	}
	mr = xiw_mr_reuse(xiw_dp_dev(dp), dp->qp->pd, kept, e->sink_stag,
			  access, va, len, &err);
	if (!mr) {
		xiw_dp_dbg(dp, "IRQ type %u: STag %#x gone: %d\n", e->type,
			   e->sink_stag, err);
		xiw_tx_prot_fail(dp, err);
		return false;
	}
	if (offloaded)
		WRITE_ONCE(dp->exec_mr, mr);	/* xiw_dp_revoke_mr() looks */
	switch (e->type) {
	case XIW_RQ_ATOMIC:
		rv = xiw_tx_exec_atomic(mr, e) ? 0 : -EIO;
		break;
	case XIW_RQ_AWRITE:
		rv = xiw_commit_awrite(mr, va, e->data);
		break;
	case XIW_RQ_FLUSH:
		rv = xiw_commit_flush(mr, va, len, e->flags,
				      offloaded ? dp : NULL);
		break;
	default:
		rv = xiw_commit_verify(mr, va, len, dig, offloaded ? dp : NULL);
		if (rv < 0)
			break;
		if (e->hash_len && (e->hash_len != rv ||
				    memcmp(e->hash, dig, rv))) {
			WRITE_ONCE(dp->exec_mr, NULL);
			xiw_mr_put(mr);
			xiw_commit_verify_mismatch();
			xiw_dp_dbg(dp, "Verify of %llu bytes at %#llx: hash mismatch\n",
				   len, va);
			xiw_tx_resp_fail(dp, XIW_RDMAP_ET_REMOTE_OP,
					 XIW_RDMAP_EC_UNSPECIFIED, -EBADMSG);
			return false;
		}
		memcpy(e->hash, dig, rv);
		e->hash_len = rv;
		rv = 0;
		break;
	}
	WRITE_ONCE(dp->exec_mr, NULL);
	xiw_mr_put(mr);
	if (!rv) {
		static const u8 stat[] = {
			[XIW_RQ_ATOMIC] = XIW_STAT_ATOMICS,
			[XIW_RQ_FLUSH] = XIW_STAT_FLUSHES,
			[XIW_RQ_AWRITE] = XIW_STAT_ATOMIC_WRITES,
			[XIW_RQ_VERIFY] = XIW_STAT_VERIFIES,
		};

		xiw_dp_stat_add(dp, stat[e->type], 1);
	}
	if (rv == -ECANCELED)
		return false;	/* the data path failed meanwhile */
	if (rv == -EKEYREVOKED) {
		/* deregistered or invalidated between two chunks */
		xiw_dp_dbg(dp, "IRQ type %u: STag %#x revoked while executed\n",
			   e->type, e->sink_stag);
		xiw_tx_prot_fail(dp, XIW_MEM_INV_STAG);
		return false;
	}
	if (rv) {
		xiw_dp_dbg(dp, "IRQ type %u at %#llx (%llu bytes) failed: %d\n",
			   e->type, va, len, rv);
		xiw_tx_resp_fail(dp, XIW_RDMAP_ET_REMOTE_OP,
				 XIW_RDMAP_EC_CATASTROPHIC_STREAM, rv);
		return false;
	}
	return true;
}

/*
 * Long Flush P and Verify run in an unbound work item of their own, in
 * process context, so neither this QP's SQ nor other QPs' TX wait for a
 * 1 GiB digest. It executes a copy of the IRQ head (dp->exec_irqe) and
 * kicks TX when done; the IRQ head stays where it is meanwhile, so no
 * later request of the stream is executed or answered before it.
 */
void xiw_dp_exec_work(struct work_struct *w)
{
	struct xiw_qp_dp *dp = container_of(w, struct xiw_qp_dp, exec_work);

	if (!test_bit(XIW_DP_ERROR, &dp->flags) &&
	    xiw_tx_exec_irqe(dp, &dp->exec_irqe, true))
		set_bit(XIW_DP_EXEC_DONE, &dp->flags);
	/* the result before the kick that takes it */
	smp_mb__before_atomic();
	clear_bit(XIW_DP_EXEC_BUSY, &dp->flags);
	xiw_dp_tx_kick(dp, false);
	xiw_dp_put(dp);		/* taken when queued */
}

/*
 * The IRQ head is long: hand it to the exec work, or take its result.
 * True when tx->irqe is executed and its response may be framed.
 */
static bool xiw_tx_exec_offload(struct xiw_qp_dp *dp)
{
	struct xiw_tx_ctx *tx = &dp->tx;

	if (test_bit(XIW_DP_EXEC_BUSY, &dp->flags))
		return false;		/* running: it kicks TX when done */
	if (test_and_clear_bit(XIW_DP_EXEC_DONE, &dp->flags)) {
		/* pairs with the barrier in xiw_dp_exec_work() */
		smp_mb__after_atomic();
		tx->irqe = dp->exec_irqe;
		return true;
	}
	/* the work's reference; none once llp_stop dropped the last one */
	if (test_bit(XIW_DP_ERROR, &dp->flags) ||
	    !refcount_inc_not_zero(&dp->users))
		return false;
	dp->exec_irqe = tx->irqe;
	set_bit(XIW_DP_EXEC_BUSY, &dp->flags);
	queue_work(xiw_exec_wq, &dp->exec_work);
	return false;
}

/*
 * Start answering the oldest inbound request (@short_only: only if it is
 * short, xiw_irqe_short(), as when RX runs TX). True if a response is
 * ready to frame; false if there is none (or it is not short), it is
 * being executed by the exec work, or a Terminate replaced it.
 */
static bool xiw_tx_start_rresp(struct xiw_qp_dp *dp, bool short_only)
{
	struct xiw_tx_ctx *tx = &dp->tx;
	enum xiw_mem_err err;
	bool got = false;

	spin_lock_bh(&dp->lock);
	if (dp->irq_head != dp->irq_tail) {
		u32 n = roundup_pow_of_two(max_t(u32, dp->ird, 1));
		struct xiw_irqe *head = &dp->irq[dp->irq_head & (n - 1)];

		if (!short_only || xiw_irqe_short(head)) {
			tx->irqe = *head;
			/* RX's region reference is ours now (tx->irqe.mr) */
			head->mr = NULL;
			got = true;
		}
	}
	spin_unlock_bh(&dp->lock);
	if (!got)
		return false;
	tx->rr_done = 0;
	tx->rr_sge.mr = NULL;
	tx->rr_sge.len = tx->irqe.len;
	tx->rr_sge.addr = tx->irqe.src_to;
	if (xiw_commit_heavy(dp, &tx->irqe)) {
		if (tx->irqe.mr) {	/* only Reads and atomics keep one */
			xiw_mr_put(tx->irqe.mr);
			tx->irqe.mr = NULL;
		}
		if (!xiw_tx_exec_offload(dp))
			return false;
	} else if (tx->irqe.type != XIW_RQ_READ) {
		if (!xiw_tx_exec_irqe(dp, &tx->irqe, false))
			return false;
	} else if (tx->irqe.len) {
		/* Checked by RX already; the MR may have changed since. */
		tx->rr_sge.mr = xiw_mr_reuse(xiw_dp_dev(dp), dp->qp->pd,
					     tx->irqe.mr, tx->irqe.src_stag,
					     IB_ACCESS_REMOTE_READ,
					     tx->irqe.src_to, tx->irqe.len,
					     &err);
		tx->irqe.mr = NULL;
		if (!tx->rr_sge.mr) {
			xiw_tx_prot_fail(dp, err);
			return false;
		}
	}
	tx->rr_active = true;
	return true;
}

/*
 * Free the IRD slot of the response being sent, before its last FPDU can
 * reach the peer: once it has the whole response it may send the next
 * request at once. tx->irqe is our own copy.
 */
static void xiw_tx_irq_pop(struct xiw_qp_dp *dp)
{
	spin_lock_bh(&dp->lock);
	if (dp->irq_head != dp->irq_tail)
		dp->irq_head++;
	spin_unlock_bh(&dp->lock);
}

/*
 * Responses on QN 3, matched by their MSN: RFC 7306 Atomic Response, and
 * the commit draft's Flush and Atomic Write Responses (bare) and Verify
 * Response (the digest). The request was executed by xiw_tx_exec_irqe().
 */
static int xiw_tx_build_qn3_resp(struct xiw_qp_dp *dp)
{
	struct xiw_tx_ctx *tx = &dp->tx;
	u32 hlen = sizeof(struct xiw_ddp_untagged);
	unsigned int op;

	xiw_tx_irq_pop(dp);
	switch (tx->irqe.type) {
	case XIW_RQ_ATOMIC:
		op = XIW_RDMAP_OP_ATOMIC_RESP;
		tx->hdr.atomic_resp.req_id = cpu_to_be32(tx->irqe.req_id);
		tx->hdr.atomic_resp.orig = cpu_to_be64(tx->irqe.orig);
		hlen = sizeof(struct xiw_rdmap_atomic_resp);
		break;
	case XIW_RQ_FLUSH:
		op = XIW_RDMAP_OP_FLUSH_RESP;
		break;
	case XIW_RQ_AWRITE:
		op = XIW_RDMAP_OP_ATOMIC_WRITE_RESP;
		break;
	default:
		op = XIW_RDMAP_OP_VERIFY_RESP;
		memcpy(tx->hdr.verify_resp.hash, tx->irqe.hash,
		       tx->irqe.hash_len);
		hlen += tx->irqe.hash_len;
		break;
	}
	xiw_tx_untagged(dp, op, XIW_QN_RESP, 0, true, 0);
	tx->zcopy = false;
	xiw_tx_seal(dp, hlen, 0);
	tx->fpdu_last = true;
	tx->kind = XIW_TX_RRESP;
	return 1;
}

static int xiw_tx_build_rresp(struct xiw_qp_dp *dp)
{
	struct xiw_tx_ctx *tx = &dp->tx;
	bool splice_ok = false;
	u32 len = tx->irqe.len;
	u32 n;
	int rv;

	memset(&tx->hdr, 0, sizeof(tx->hdr));
	tx->nbv = 1;
	if (tx->irqe.type != XIW_RQ_READ)
		return xiw_tx_build_qn3_resp(dp);
	n = min(len - tx->rr_done, xiw_ddp_max_payload(dp->mss, true));
	if (n) {
		rv = xiw_tx_add_sges(tx, &tx->rr_sge, 1, tx->rr_done, n,
				     &splice_ok);
		if (rv < 0)
			return rv;
		n = rv;
	}
	tx->fpdu_last = tx->rr_done + n == len;
	if (tx->fpdu_last)
		xiw_tx_irq_pop(dp);
	xiw_tx_tagged(dp, XIW_RDMAP_OP_READ_RESP, tx->irqe.sink_stag,
		      tx->irqe.sink_to + tx->rr_done, tx->fpdu_last);
	/*
	 * The responder's memory may change right after the response and
	 * nothing tells the responder when TCP is done with it: copy.
	 */
	tx->zcopy = false;
	xiw_tx_seal(dp, sizeof(struct xiw_ddp_tagged), n);
	tx->rr_done += n;
	tx->kind = XIW_TX_RRESP;
	return 1;
}

/*
 * The FPDU in the context is all in TCP, or (@batched) copied into the
 * batch, whose sending completes its WR: account for it.
 */
static void xiw_tx_fpdu_sent(struct xiw_qp_dp *dp, bool batched)
{
	struct xiw_tx_ctx *tx = &dp->tx;

	trace_xiw_fpdu_tx(dp, &tx->hdr);
	xiw_dp_stat_add(dp, XIW_STAT_TX_FPDUS, 1);
	xiw_dp_stat_add(dp, XIW_STAT_TX_BYTES,
			xiw_mpa_fpdu_len(be16_to_cpu(tx->hdr.ctrl.mpa_len)));

	switch (tx->kind) {
	case XIW_TX_TERM:
		trace_xiw_term_tx(dp, tx->hdr.term.term_ctrl);
		xiw_dp_stat_add(dp, XIW_STAT_TERM_SENT, 1);
		clear_bit(XIW_DP_TERM_PENDING, &dp->flags);
		queue_work(xiw_dp_wq, &dp->err_work);
		break;
	case XIW_TX_SQ:
		if (!tx->fpdu_last)
			break;
		if (batched || xiw_op_needs_ord(tx->sqe.opcode))
			xiw_tx_wqe_end(dp);	/* the batch or RX completes it */
		else
			xiw_tx_wqe_complete(dp, IB_WC_SUCCESS);
		tx->last_was_irq = false;
		break;
	case XIW_TX_RRESP:
		if (tx->from_rx)
			xiw_dp_stat_add(dp, XIW_STAT_TX_FROM_RX, 1);
		if (!tx->fpdu_last)
			break;
		xiw_dp_put_lsges(&tx->rr_sge, 1);
		if (tx->irqe.type == XIW_RQ_READ)
			xiw_dp_stat_add(dp, XIW_STAT_READ_RESPONSES, 1);
		tx->rr_active = false;
		tx->last_was_irq = true;
		break;
	default:
		break;
	}
	tx->kind = XIW_TX_NONE;
}

/* ------------------------------------------------------------------------
 * The batch: many small FPDUs, one sendmsg
 *
 * An FPDU of at most XIW_TX_BATCH_FPDU bytes whose payload is copied
 * anyway (an atomic, Read or commit request, any FPDU of a Send or Write
 * not sent by reference: a message of up to a page, or a segment of a
 * longer one where the MSS is small; any response on QN 3, a Read
 * Response RX answers) is not pushed on its own: its bytes are copied
 * into tx->batch, and the batch goes to TCP in one sendmsg when TX has
 * nothing more to frame, when the next FPDU does not go in, or when the
 * batch is full. A burst of small WRs thus leaves as one TCP segment, and
 * a responder reading it answers all of it in one RX pass, with one send
 * again (xiw_dp_tx_from_rx()). A page is batched too: a kernel ULP's
 * 4 KiB Write and the Send that follows it (an NVMe-oF read's data and
 * response) cost one sendmsg instead of two, which is worth more than
 * the page's second copy (Documentation/testing.md).
 *
 * Completion stays exact: a WR that completes when it is sent completes
 * when the last byte of its last FPDU is in TCP (xiw_tx_batch_done()),
 * so after a partial send (-EAGAIN) only the WRs wholly in TCP are done
 * and the rest of the batch is resumed first thing on the next run, as
 * the rest of a single FPDU is. The batch holds no references (the payload
 * is copied when the FPDU is added, and the WR's SGEs are released then).
 * Nothing else is sent while a batch is pending, so the order on the wire
 * is the order of framing; a Terminate is framed only at an FPDU boundary
 * and goes after the batch, like an FPDU already framed.
 */

/* Complete the WRs whose FPDUs are all in TCP now. */
static void xiw_tx_batch_done(struct xiw_qp_dp *dp)
{
	struct xiw_tx_ctx *tx = &dp->tx;

	while (tx->batch_done < tx->batch_n &&
	       tx->batch_rec[tx->batch_done].end <= tx->batch_sent) {
		struct xiw_tx_batch_rec *r = &tx->batch_rec[tx->batch_done++];

		if (r->complete)
			xiw_dp_cmpl_done(dp, r->cidx, IB_WC_SUCCESS,
					 r->byte_len);
	}
}

static void xiw_tx_batch_reset(struct xiw_tx_ctx *tx)
{
	tx->batch_len = 0;
	tx->batch_sent = 0;
	tx->batch_n = 0;
	tx->batch_done = 0;
}

/*
 * Add the FPDU just framed to the batch if it is a small copied one and
 * fits. True if it did: the FPDU is accounted for and TX may frame the
 * next one.
 */
static bool xiw_tx_batch_add(struct xiw_qp_dp *dp)
{
	struct xiw_tx_ctx *tx = &dp->tx;
	struct xiw_tx_batch_rec *r;
	u32 len = 0;
	u8 *p;
	int i;

	if (tx->zcopy || tx->batch_n == XIW_TX_BATCH_MAX ||
	    (tx->kind != XIW_TX_SQ && tx->kind != XIW_TX_RRESP) ||
	    (tx->kind == XIW_TX_SQ && tx->zc) || tx->nbv < 2)
		return false;
	for (i = 0; i < tx->nbv; i++)
		len += tx->bv[i].bv_len;
	if (len > XIW_TX_BATCH_FPDU ||
	    tx->batch_len + len > XIW_TX_BATCH_BYTES)
		return false;
	/* header, payload pieces (pages or the SQE's inline data), trailer */
	p = tx->batch + tx->batch_len;
	memcpy(p, &tx->hdr, tx->bv[0].bv_len);
	p += tx->bv[0].bv_len;
	for (i = 1; i < tx->nbv - 1; i++) {
		struct bio_vec *bv = &tx->bv[i];
		void *va = kmap_local_page(bv->bv_page);

		memcpy(p, va + bv->bv_offset, bv->bv_len);
		kunmap_local(va);
		p += bv->bv_len;
	}
	memcpy(p, tx->trailer, tx->bv[tx->nbv - 1].bv_len);
	tx->batch_len += len;

	r = &tx->batch_rec[tx->batch_n++];
	r->end = tx->batch_len;
	r->complete = tx->kind == XIW_TX_SQ && tx->fpdu_last &&
		      !xiw_op_needs_ord(tx->sqe.opcode);
	r->cidx = tx->cidx;
	r->byte_len = tx->len;
	tx->fpdu_active = false;
	xiw_tx_fpdu_sent(dp, true);
	return true;
}

/*
 * Hand the batch to TCP: 0 when all of it is in TCP (the batch is empty
 * again), -EAGAIN (TX resumes it on the next run), or an error.
 */
static int xiw_tx_batch_push(struct xiw_qp_dp *dp)
{
	struct xiw_tx_ctx *tx = &dp->tx;
	bool retried = false;

	while (tx->batch_sent < tx->batch_len) {
		struct kvec kv = {
			.iov_base = tx->batch + tx->batch_sent,
			.iov_len = tx->batch_len - tx->batch_sent,
		};
		struct msghdr msg = {
			.msg_flags = MSG_DONTWAIT | MSG_NOSIGNAL,
		};
		int rv;

		iov_iter_kvec(&msg.msg_iter, ITER_SOURCE, &kv, 1, kv.iov_len);
		rv = xiw_tx_sendmsg(dp, &msg);
		if (rv <= 0) {
			if (rv && rv != -EAGAIN)
				return rv;
			if (xiw_tx_nospace(dp, &retried))
				continue;
			return -EAGAIN;
		}
		tx->backoff_ms = 0;
		tx->batch_sent += rv;
		xiw_tx_batch_done(dp);
	}
	xiw_tx_batch_reset(tx);
	return 0;
}

static bool xiw_irq_pending(struct xiw_qp_dp *dp)
{
	return READ_ONCE(dp->irq_head) != READ_ONCE(dp->irq_tail);
}

static int xiw_tx_frame_sq(struct xiw_qp_dp *dp)
{
	if (xiw_tx_build_sq(dp)) {
		xiw_tx_wqe_complete(dp, IB_WC_LOC_PROT_ERR);
		return 0;
	}
	dp->tx.kind = XIW_TX_SQ;
	return 1;
}

/*
 * Choose and frame the next FPDU. Returns 1 if there is one, 0 if TX has
 * nothing to do, or a negative error. A message in progress is finished
 * before another starts; at message boundaries Read Responses and SQ
 * messages alternate, and a Read Response always may go when the SQ is
 * blocked by ORD or a fence (else two peers could wait on each other).
 */
static int xiw_tx_next(struct xiw_qp_dp *dp)
{
	struct xiw_tx_ctx *tx = &dp->tx;
	bool blocked;
	int rv;

	if (test_bit_acquire(XIW_DP_TERM_PENDING, &dp->flags)) {
		xiw_tx_build_term(dp);
		return 1;
	}
	if (test_bit(XIW_DP_ERROR, &dp->flags))
		return 0;
	if (dp->rtr != XIW_RTR_NONE) {
		xiw_tx_build_rtr(dp);
		return 1;
	}
	if (test_bit(XIW_DP_RTR_WAIT, &dp->flags))
		return 0;

	if (tx->rr_active && tx->rr_done)
		return xiw_tx_build_rresp(dp);
	if (tx->sq_active && tx->done)
		return xiw_tx_frame_sq(dp);

	while (!tx->sq_active) {
		if (!xiw_tx_fetch(dp))
			break;
		rv = xiw_tx_start_sqe(dp);
		if (rv == -EALREADY) {
			xiw_tx_wqe_complete(dp, IB_WC_SUCCESS);
			continue;
		}
		if (rv) {
			xiw_tx_wqe_complete(dp, rv);
			return 0;
		}
	}
	blocked = tx->sq_active && xiw_tx_sq_blocked(dp);
	if ((tx->rr_active || xiw_irq_pending(dp)) &&
	    (!tx->last_was_irq || !tx->sq_active || blocked)) {
		if (tx->rr_active || xiw_tx_start_rresp(dp, false))
			return xiw_tx_build_rresp(dp);
		if (test_bit(XIW_DP_ERROR, &dp->flags))
			return 0;
	}
	if (tx->sq_active && !blocked)
		return xiw_tx_frame_sq(dp);
	return 0;
}

/* Is the IRQ head one RX would answer itself (xiw_irqe_short())? */
static bool xiw_tx_rx_head_ok(struct xiw_qp_dp *dp)
{
	u32 n = roundup_pow_of_two(max_t(u32, dp->ird, 1));
	const struct xiw_irqe *e;
	bool ok = false;

	spin_lock_bh(&dp->lock);
	if (dp->irq_head != dp->irq_tail) {
		e = &dp->irq[dp->irq_head & (n - 1)];
		ok = xiw_irqe_short(e);
	}
	spin_unlock_bh(&dp->lock);
	return ok;
}

/*
 * Choose the next FPDU when RX runs TX: the rest of the Read Response in
 * progress, else a new response to the IRQ head if it is short; nothing
 * else (no SQ WR, no Terminate). Same returns as xiw_tx_next().
 */
static int xiw_tx_next_rx(struct xiw_qp_dp *dp)
{
	struct xiw_tx_ctx *tx = &dp->tx;

	if (test_bit(XIW_DP_TERM_PENDING, &dp->flags) ||
	    test_bit(XIW_DP_ERROR, &dp->flags))
		return 0;
	if (tx->rr_active && tx->rr_done)
		return xiw_tx_build_rresp(dp);
	if (tx->rr_active || !xiw_tx_start_rresp(dp, true))
		return 0;
	return xiw_tx_build_rresp(dp);
}

/*
 * May the FPDU just framed go with MSG_MORE, so that TCP puts the next
 * one in the same segment? Only when RX answers a burst of short
 * requests (xiw_dp_tx_from_rx()) and the next response certainly follows
 * in this pass: the last one goes without it, so nothing stays corked (an
 * error on the way leaves a Terminate, sent uncorked, or ends the
 * connection). The requests one RX pass brought are answered in one
 * segment. TX in process context does not cork: holding FPDUs back until
 * the end of a pass cost ~12% of 64 KiB Write bandwidth on one host (the
 * receiver idles meanwhile) and gained nothing measurable. @burst: FPDUs
 * left in the pass's budget.
 */
static bool xiw_tx_more(struct xiw_qp_dp *dp, int burst)
{
	struct xiw_tx_ctx *tx = &dp->tx;

	return tx->from_rx && burst && tx->fpdu_last &&
	       xiw_mpa_fpdu_len(be16_to_cpu(tx->hdr.ctrl.mpa_len)) <=
	       XIW_TX_RX_CORK && xiw_tx_rx_head_ok(dp);
}

/* A sendmsg failed: -EAGAIN waits for space, anything else is fatal. */
static void xiw_tx_push_failed(struct xiw_qp_dp *dp, int rv)
{
	if (rv == -EAGAIN)
		return;
	xiw_dp_dbg(dp, "sendmsg: %d\n", rv);
	dp->tx.fpdu_active = false;
	xiw_tx_batch_reset(&dp->tx);
	clear_bit(XIW_DP_TERM_PENDING, &dp->flags);
	if (!test_and_set_bit(XIW_DP_ERROR, &dp->flags))
		dp->err_reason = rv;
	queue_work(xiw_dp_wq, &dp->err_work);
}

/*
 * The TX loop, run by the owner of XIW_DP_TX_BUSY. Returns 1 if the burst
 * budget ran out with work left. Small FPDUs go into the batch, which is
 * sent before any other FPDU and when the loop ends.
 */
static int xiw_tx_loop(struct xiw_qp_dp *dp)
{
	struct xiw_tx_ctx *tx = &dp->tx;
	int burst = tx->from_rx ? XIW_TX_RX_BURST : XIW_TX_BURST;
	int rv, left = 1;

	if (test_bit(XIW_DP_STOPPED, &dp->flags))
		return 0;
	for (;;) {
		if (!tx->fpdu_active) {
			if (!burst)
				break;
			rv = tx->from_rx ? xiw_tx_next_rx(dp) : xiw_tx_next(dp);
			if (rv <= 0) {
				if (rv < 0)
					xiw_dp_fatal(dp, NULL, NULL, 0, rv);
				left = 0;
				break;
			}
			burst--;
			if (xiw_tx_batch_add(dp))
				continue;
			tx->more = xiw_tx_more(dp, burst);
		}
		rv = xiw_tx_batch_push(dp);
		if (!rv)
			rv = xiw_tx_push(dp);
		if (rv) {
			xiw_tx_push_failed(dp, rv);
			return 0;
		}
		xiw_tx_fpdu_sent(dp, false);
	}
	rv = xiw_tx_batch_push(dp);
	if (rv) {
		xiw_tx_push_failed(dp, rv);
		return 0;
	}
	return left;
}

/*
 * Runner takes the SQ: set XIW_SQ_KERNEL_ACTIVE unless the queue is in
 * error (xiw_qp_enter_error() clears the flag in the same word, so the
 * two updates are ordered and an erroring QP never keeps the flag: its
 * posters must ring to get their WQEs flushed). Giving up after lost
 * races only costs doorbells.
 */
static void xiw_tx_sq_set_active(struct xiw_qp *qp)
{
	u32 *word = &qp->sq.ctrl->flags;
	int tries = 8;
	u32 old;

	do {
		old = READ_ONCE(*word);
		if (old & (XIW_QUEUE_ERROR | XIW_SQ_KERNEL_ACTIVE))
			return;
	} while (cmpxchg(word, old, old | XIW_SQ_KERNEL_ACTIVE) != old &&
		 --tries);
}

/*
 * Doorbell suppression for user SQs (XIW_SQ_KERNEL_ACTIVE, see xiw-abi.h).
 * The flag is set while a TX runner owns the SQ and will look at it again
 * without a doorbell: while it runs, while its work is requeued after a
 * burst, and while it waits for an event that requeues it (socket space,
 * the end of a memory backoff, a Read Response for ORD or a fence).
 * Otherwise it is cleared on the way out, and then the head slot is
 * checked once more: the poster publishes
 * its WQE, issues a full barrier and loads the flag; we clear the flag,
 * issue a full barrier and load the slot's flags, so at least one of the
 * two sees the other's store and no WQE is left without a runner. The
 * recheck loops only if TX's last fetch found the ring empty (a WQE TX
 * left because it is blocked is no race: its wakeup requeues TX). In
 * error the flag is just cleared: xiw_qp_enter_error() flushes what is in
 * the ring.
 * Returns true if TX must run again.
 */
static bool xiw_tx_sq_idle(struct xiw_qp_dp *dp, int rv)
{
	struct xiw_qp *qp = dp->qp;
	bool head_seen;

	if (rv > 0)
		return false;		/* requeued: stays active */
	if (!test_bit(XIW_DP_ERROR, &dp->flags) &&
	    !test_bit(XIW_DP_STOPPED, &dp->flags) &&
	    (test_bit(XIW_DP_TX_NOSPACE, &dp->flags) || dp->tx.sq_active))
		return false;		/* an event requeues TX */
	/*
	 * A WQE posted after TX's last fetch found the ring empty is in the
	 * race window even if it is visible already: look again for it.
	 */
	head_seen = !dp->tx.sq_empty_seen;
	xiw_ctrl_update(&qp->sq.ctrl->flags, 0, XIW_SQ_KERNEL_ACTIVE);
	/* Pairs with the poster's barrier between VALID and the flag load. */
	smp_mb();
	return !head_seen && !test_bit(XIW_DP_ERROR, &dp->flags) &&
	       xiw_tx_sq_head_valid(qp);
}

/*
 * The workqueue of the TX work. xiw_dp_wq's workers run at nice -20, so
 * that a poster's burst or a peer's requests are answered at once, ahead
 * of whatever else the CPU runs. TX work that keeps a CPU busy would take
 * it from every normal task there for as long as it lasts (a nice 0 task
 * gets about 1% beside a nice -20 one that never sleeps), so it goes to
 * xiw_dp_bulk_wq (nice 0, a fair share) instead, in two cases:
 *
 * - the QP is a bulk flow: its last run had more to send than a run
 *   takes (its budget of XIW_TX_BURST FPDUs spent, or TCP full or short
 *   of memory), until a run ends with nothing left that it could send;
 * - the CPU is loaded: TX work ran on it for more than half of the last
 *   window of XIW_TX_LOAD_WINDOW_NS (xiw_tx_cpu_account()), whichever QPs
 *   it was for - many QPs whose runs each drain their work can keep a CPU
 *   just as busy as one bulk flow.
 *
 * A latency-bound QP on a CPU with time to spare never leaves xiw_dp_wq.
 * tx.bulk is written by the owner of TX_BUSY, a CPU's load by the TX work
 * on that CPU; both are read without a lock: a stale value picks the
 * other queue once, and a work item queued on either runs TX all the
 * same (TX_BUSY serialises the runners).
 */
#define XIW_TX_LOAD_WINDOW_NS	(10 * NSEC_PER_MSEC)

struct xiw_tx_cpu_load {
	u64 win_start;		/* local_clock() at the window's start */
	u64 busy;		/* ns of TX work in the window so far */
	bool loaded;		/* the last window was more than half busy */
};

static DEFINE_PER_CPU(struct xiw_tx_cpu_load, xiw_tx_load);

/* A run of the TX work on this CPU took from @t0 to now. */
static void xiw_tx_cpu_account(u64 t0)
{
	struct xiw_tx_cpu_load *l = get_cpu_ptr(&xiw_tx_load);
	u64 now = local_clock(), span;

	l->busy += now - t0;
	span = now - l->win_start;
	if (span >= XIW_TX_LOAD_WINDOW_NS) {
		WRITE_ONCE(l->loaded, l->busy * 2 > span);
		l->win_start = now;
		l->busy = 0;
	}
	put_cpu_ptr(&xiw_tx_load);
}

static struct workqueue_struct *xiw_tx_wq(struct xiw_qp_dp *dp,
					  unsigned int cpu)
{
	return READ_ONCE(dp->tx.bulk) ||
	       READ_ONCE(per_cpu_ptr(&xiw_tx_load, cpu)->loaded) ?
	       xiw_dp_bulk_wq : xiw_dp_wq;
}

/* After a run of the TX loop that returned @rv: bulk flow or not. */
static void xiw_tx_note_load(struct xiw_qp_dp *dp, int rv)
{
	bool bulk = rv > 0 || test_bit(XIW_DP_TX_NOSPACE, &dp->flags);

	if (bulk != dp->tx.bulk)
		WRITE_ONCE(dp->tx.bulk, bulk);
}

/*
 * A resume of TX can hold a split FPDU, so an RTR or Terminate arriving
 * mid-FPDU waits until the FPDU is out: they are framed only when
 * !fpdu_active (xiw_tx_next).
 */
static void xiw_tx_run(struct xiw_qp_dp *dp)
{
	bool user = dp->qp->user && dp->qp->sq.ctrl;
	int rv;

	for (;;) {
		if (test_and_set_bit_lock(XIW_DP_TX_BUSY, &dp->flags))
			return;
		clear_bit(XIW_DP_TX_MORE, &dp->flags);
		if (user)
			xiw_tx_sq_set_active(dp->qp);
		dp->tx.sq_empty_seen = false;
		rv = xiw_tx_loop(dp);
		/* the flush took zero-copy pages back: let go of the WR's */
		xiw_tx_zc_abandon(dp);
		xiw_tx_note_load(dp, rv);
		if (user && xiw_tx_sq_idle(dp, rv))
			set_bit(XIW_DP_TX_MORE, &dp->flags);
		clear_bit_unlock(XIW_DP_TX_BUSY, &dp->flags);
		/* Pairs with the set_bit(TX_MORE) in xiw_tx_request(). */
		smp_mb__after_atomic();
		if (rv > 0) {
			xiw_dp_tx_queue(dp);
			return;
		}
		if (!test_bit(XIW_DP_TX_MORE, &dp->flags))
			return;
	}
}

void xiw_tx_work(struct work_struct *w)
{
	struct xiw_qp_dp *dp = container_of(w, struct xiw_qp_dp, tx_work);
	u64 t0 = local_clock();

	/*
	 * Like a kick: if RX holds TX_BUSY to send responses only
	 * (xiw_dp_tx_from_rx), it sees TX_MORE and queues the work again.
	 */
	set_bit(XIW_DP_TX_MORE, &dp->flags);
	/* TX_MORE before TX_BUSY; pairs with xiw_dp_tx_from_rx() */
	smp_mb__after_atomic();
	xiw_tx_run(dp);
	xiw_tx_cpu_account(t0);
}

/* Queue the TX work item (counted: the per-op cost of a hop). */
void xiw_dp_tx_queue(struct xiw_qp_dp *dp)
{
	/* a bound workqueue: the work runs on this CPU */
	if (queue_work(xiw_tx_wq(dp, raw_smp_processor_id()), &dp->tx_work))
		xiw_dp_stat_add(dp, XIW_STAT_TX_WORK_QUEUED, 1);
}

/*
 * May RX send responses now? Caller owns TX_BUSY. TX must be idle at a
 * message boundary: no FPDU half in TCP, no SQ message between two of its
 * FPDUs, no response started (a Read Response in progress is finished by
 * whoever owns TX, a heavy request is with the exec work), and nothing
 * that only the TX work sends or waits for (Terminate, RTR, socket space).
 */
static bool xiw_tx_rx_may_send(struct xiw_qp_dp *dp)
{
	struct xiw_tx_ctx *tx = &dp->tx;

	return !(READ_ONCE(dp->flags) &
		 (BIT(XIW_DP_ERROR) | BIT(XIW_DP_TERM_PENDING) |
		  BIT(XIW_DP_STOPPED) | BIT(XIW_DP_TX_NOSPACE) |
		  BIT(XIW_DP_RTR_WAIT) | BIT(XIW_DP_EXEC_BUSY) |
		  BIT(XIW_DP_EXEC_DONE))) &&
	       dp->rtr == XIW_RTR_NONE && !tx->fpdu_active && !tx->rr_active &&
	       !tx->batch_len && !(tx->sq_active && tx->done);
}

/*
 * RX queued inbound QN 1 requests in one pass of sk_data_ready: answer
 * the short ones right here instead of waking the TX work (which would
 * preempt whoever runs on this CPU - on one host, the poster that is
 * waiting for exactly this response - and cost two context switches per
 * request). Everything else kicks TX as before.
 *
 * One sender: RX sends only as the owner of XIW_DP_TX_BUSY, taken with
 * the same test_and_set as every TX runner, so its FPDUs never interleave
 * with anyone's. If another runner owns TX, RX kicks it like anyone else
 * (TX_MORE: the owner looks again after releasing the bit). TX state is
 * touched only while owning the bit. A kick that finds RX owning TX sets
 * TX_MORE, and RX, which never clears it, queues the TX work when done.
 *
 * Why sending is legal here (Linux 6.12): RX runs with the socket locked,
 * either in softirq holding the socket spinlock with no owner, or in the
 * owner's own context draining the backlog (release_sock(),
 * xiw_qp_llp_start()), and always with BHs off (sk_callback_lock). That is
 * the lock tcp_sendmsg_locked() wants. It must not sleep, and does not:
 * MSG_DONTWAIT gives it a zero timeout (it returns -EAGAIN instead of
 * waiting for memory or a connection), sk_allocation is GFP_ATOMIC for
 * the duration, its page fragment is the socket's own (sk_use_task_frag
 * is off for xiw sockets, xiw_qp_llp_start(): in softirq "current" is
 * whoever was interrupted), and each call carries at most one FPDU of at
 * most XIW_TX_RX_READ_MAX payload bytes or one batch of copied FPDUs (at
 * most XIW_TX_BATCH_BYTES: every short response of the pass in one
 * call; 12 skbs of an MSS of 1448 even without GSO), below the 16 new
 * skbs after which tcp_sendmsg_locked() flushes the backlog (which would
 * take the spinlock we hold, or re-enter RX). No MSG_ZEROCOPY: responses
 * are copied. Bounded work: XIW_TX_RX_BURST FPDUs, then the TX work goes
 * on.
 * -EAGAIN parks TX in the FPDU as usual (TX_NOSPACE), and sk_write_space
 * queues the TX work, which resumes it.
 */
void xiw_dp_tx_from_rx(struct xiw_qp_dp *dp)
{
	struct sock *sk = dp->sk;
	gfp_t gfp;
	int rv;

	if (test_and_set_bit_lock(XIW_DP_TX_BUSY, &dp->flags)) {
		/* the owner sees TX_MORE and answers */
		xiw_dp_tx_kick(dp, false);
		return;
	}
	if (!xiw_tx_rx_may_send(dp)) {
		clear_bit_unlock(XIW_DP_TX_BUSY, &dp->flags);
		xiw_dp_tx_queue(dp);
		return;
	}
	/*
	 * TX_MORE stays as it is: RX does only part of TX's work, so a kick
	 * that lost the race for TX_BUSY to us must still get a full runner
	 * (below), unlike in xiw_tx_run(), which clears it.
	 */
	gfp = sk->sk_allocation;
	sk->sk_allocation = GFP_ATOMIC | (gfp & __GFP_MEMALLOC);
	dp->tx.from_rx = true;
	rv = xiw_tx_loop(dp);
	dp->tx.from_rx = false;
	dp->tx.more = false;
	sk->sk_allocation = gfp;
	clear_bit_unlock(XIW_DP_TX_BUSY, &dp->flags);
	/* Pairs with the set_bit(TX_MORE) of a kick that saw TX_BUSY. */
	smp_mb__after_atomic();
	/*
	 * The TX work takes over whatever RX left: a kick that came in
	 * meanwhile (SQ work, a Terminate), the budget ran out, or requests
	 * RX does not answer (long Reads, Flush, Verify). A full socket
	 * waits for sk_write_space instead.
	 */
	if (rv > 0 || test_bit(XIW_DP_TX_MORE, &dp->flags) ||
	    (xiw_irq_pending(dp) &&
	     !test_bit(XIW_DP_TX_NOSPACE, &dp->flags)))
		xiw_dp_tx_queue(dp);
}

/*
 * An RX pass that brought at least this many requests, all short, has
 * them answered by the TX work on the next CPU (xiw_dp_tx_answer()).
 */
static unsigned int resp_handoff_min = 8;
module_param(resp_handoff_min, uint, 0644);
MODULE_PARM_DESC(resp_handoff_min,
		 "hand the responses of an RX pass that brought at least this many short requests to the TX work on the next CPU (0: RX always answers itself; default 8)");

/*
 * Ask for a TX pass: set TX_MORE, then look at TX_BUSY. True if a runner
 * owns TX: it sees TX_MORE once it releases the bit and runs again (RX,
 * which sends responses only, queues the TX work), so the caller has
 * nothing more to do.
 */
static bool xiw_tx_request(struct xiw_qp_dp *dp)
{
	set_bit(XIW_DP_TX_MORE, &dp->flags);
	/* TX_MORE before reading TX_BUSY; pairs with xiw_tx_run(). */
	smp_mb__after_atomic();
	return test_bit(XIW_DP_TX_BUSY, &dp->flags);
}

/*
 * The online CPU after this one (wrapping around), nr_cpu_ids if there is
 * no other: posters and RX passes on different CPUs spread their hand-offs.
 */
static unsigned int xiw_tx_next_cpu(void)
{
	unsigned int self = raw_smp_processor_id();
	unsigned int cpu = cpumask_next(self, cpu_online_mask);

	if (cpu >= nr_cpu_ids)
		cpu = cpumask_first(cpu_online_mask);
	return cpu == self ? nr_cpu_ids : cpu;
}

/* Have the TX work run on @cpu, unless a runner owns TX already. */
static void xiw_tx_queue_on(struct xiw_qp_dp *dp, unsigned int cpu)
{
	if (xiw_tx_request(dp))
		return;
	if (queue_work_on(cpu, xiw_tx_wq(dp, cpu), &dp->tx_work))
		xiw_dp_stat_add(dp, XIW_STAT_TX_WORK_QUEUED, 1);
}

/*
 * Hand TX to the work item on another CPU; the poster goes on. For the
 * doorbell of a user poster in a burst (XIW_DOORBELL_SQ_BATCH: it posts
 * again before it looks for this WR's completion) and for every post of a
 * kernel consumer.
 *
 * Run inline, TX would do the whole round trip in the poster's context -
 * on one host the peer's answer is processed on the way back - so only one
 * WR would ever be in flight and every WR would leave alone. On another
 * CPU, TX finds the poster's next WRs piled up and sends them as one
 * batch, while the poster goes on with its own work: for a user, the
 * next WQEs, which need no syscall because XIW_SQ_KERNEL_ACTIVE is set
 * now (that runner looks at the SQ without a doorbell: the flag's
 * contract, see xiw_tx_sq_idle()); for a kernel ULP, the rest of its
 * completion batch (nvmet answers up to 16 commands per CQ poll, each
 * with a Write and a Send) or of its queue_rq calls. Measured on
 * NVMe-oF 4 KiB random reads at QD16: 2.4-2.8x the IOPS of running kernel
 * posts inline, at half the CPU time and a third of the context switches
 * per read, but a lone read (QD1) waits 20-60% longer: the kernel_tx_inline
 * module parameter (xiw_qp.c) keeps kernel posts inline. siw and rxe also
 * hand kernel posts to a worker. A runner that owns TX already just gets
 * TX_MORE.
 *
 * On the poster's own CPU the high-priority work would preempt it at once
 * and nothing would pile up, so with a single CPU online TX runs inline
 * as for any other doorbell. The CPU is a hint: bound work queued on a
 * CPU going offline runs on another one (workqueue unbinds it).
 */
void xiw_dp_tx_defer(struct xiw_qp_dp *dp)
{
	unsigned int cpu = xiw_tx_next_cpu();
	struct xiw_qp *qp = dp->qp;

	if (cpu >= nr_cpu_ids || (qp->user && !qp->sq.ctrl)) {
		xiw_dp_tx_kick(dp, true);
		return;
	}
	if (qp->user)
		xiw_tx_sq_set_active(qp);
	xiw_tx_queue_on(dp, cpu);
}

/*
 * RX queued @n inbound requests in one pass, @all_short if each of them
 * is short (xiw_irqe_short()): answer them from RX (xiw_dp_tx_from_rx()), or,
 * when the pass brought a burst of short ones (a requester with many
 * atomics or small Reads in flight), from the TX work on the next CPU.
 *
 * Why: on one host everything a request causes runs on the CPU whose
 * send delivered it (loopback RX runs in that CPU's softirq): the
 * requester's TX, the responder's RX, the responses RX sends and, through
 * them, the requester's RX and completions. With a burst in flight that
 * one CPU is the bottleneck while the other runs the requester's poller.
 * Answering from the next CPU's TX work moves the responses and the
 * requester's RX that they trigger there, at the cost of one work item
 * per burst. A lone request (a latency test, a pass of fewer than
 * resp_handoff_min) is still answered right here, without the hop.
 * Measured with perf_ab, 200,000 FetchAdds (ib_atomic_bw, 128 in flight),
 * six rounds in one boot: a median of 0.134 Mpps answered from RX, 0.166
 * with the hand-off (Documentation/testing.md). Long Reads, Flush and
 * Verify go to the TX work anyway.
 */
void xiw_dp_tx_answer(struct xiw_qp_dp *dp, u32 n, bool all_short)
{
	unsigned int min = READ_ONCE(resp_handoff_min);
	unsigned int cpu = nr_cpu_ids;

	/* the next CPU is looked up only for a burst: not per lone request */
	if (min && n >= min && all_short)
		cpu = xiw_tx_next_cpu();
	if (cpu >= nr_cpu_ids) {
		xiw_dp_tx_from_rx(dp);
		return;
	}
	xiw_dp_stat_add(dp, XIW_STAT_RESP_HANDOFFS, 1);
	xiw_tx_queue_on(dp, cpu);
}

/*
 * Make TX run. @inline_ok: the caller may run TX itself if it can sleep
 * (false from RX, which holds the socket lock, and from error paths).
 */
void xiw_dp_tx_kick(struct xiw_qp_dp *dp, bool inline_ok)
{
	if (xiw_tx_request(dp))
		return;
	/*
	 * TX may sleep (lock_sock): not in atomic context and not inside an
	 * RCU read-side section, which preemptible() alone does not tell
	 * under PREEMPT_RCU.
	 */
	if (inline_ok && preemptible() && !rcu_preempt_depth() &&
	    !test_bit(XIW_DP_TX_NOSPACE, &dp->flags))
		xiw_tx_run(dp);
	else
		xiw_dp_tx_queue(dp);
}

bool xiw_tx_idle(struct xiw_qp_dp *dp)
{
	struct xiw_qp *qp = dp->qp;

	return !test_bit(XIW_DP_TX_BUSY, &dp->flags) && !dp->tx.fpdu_active &&
	       !dp->tx.batch_len && !dp->tx.sq_active && !dp->tx.rr_active &&
	       !xiw_irq_pending(dp) &&
	       !atomic_read(&dp->zc_pending) &&
	       !xiw_wq_published(&qp->sq, READ_ONCE(qp->sq.cons), 0);
}

