// SPDX-License-Identifier: GPL-2.0
/*
 * xiw - TX, the requester: the SQ. WRs are taken from the ring (a private
 * copy: a user ring may be rewritten at any time), checked against the
 * SQE contract of <rdma/xiw-sqe.h>, their buffers resolved, and framed
 * FPDU by FPDU for the engine (xiw_tx.c): Sends, Writes, Immediate Data,
 * Read Requests, RFC 7306 atomics and the commit draft's Flush, Atomic
 * Write and Verify. Requests that expect a response take an ORQ slot (ORD);
 * RX completes them when the response arrives. Everything else completes
 * when its last FPDU is in TCP (or, sent zero-copy, when TCP lets go of
 * its pages). Runs as the owner of XIW_DP_TX_BUSY.
 */
#include <linux/highmem.h>
#include <linux/sizes.h>
#include <linux/slab.h>

#include "xiw_tx.h"

/* ------------------------------------------------------------------------
 * Local SGEs
 */

/*
 * Resolve the SGEs of a send-side WR: every non-empty SGE must name a
 * valid MR of the QP's PD covering it with @access. Returns an ib_wc
 * status.
 */
static u8 xiw_tx_sq_resolve_sges(struct xiw_qp_dp *dp,
				 const struct xiw_sge *in, int n, int access,
				 struct xiw_lsge *out, int *nout, u32 *total)
{
	const struct xiw_mem_user who = xiw_mem_local(dp->qp->pd);
	enum xiw_mem_err err;
	u64 sum = 0;
	int i, k = 0;

	for (i = 0; i < n; i++) {
		u32 len = in[i].length;

		if (!len)
			continue;
		out[k].mr = xiw_stag_resolve(xiw_dp_dev(dp), &who,
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

/* Reserve an ORQ slot for a request of @type; caller holds dp->lock. */
struct xiw_orqe *xiw_tx_sq_orq_add(struct xiw_qp_dp *dp, u8 type)
{
	u32 n = roundup_pow_of_two(max_t(u32, dp->ord, 1));
	struct xiw_orqe *o = &dp->orq[dp->orq_tail & (n - 1)];

	memset(o, 0, sizeof(*o));
	o->type = type;
	dp->orq_tail++;
	return o;
}

/* Complete the current SQ WR with @status (error: the QP goes down). */
void xiw_tx_sq_complete(struct xiw_qp_dp *dp, u8 status)
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
	xiw_tx_sq_wqe_end(dp);
	if (status != IB_WC_SUCCESS) {
		struct xiw_term_code tc = {
			.layer = XIW_TERM_LAYER_RDMAP,
			.etype = XIW_RDMAP_ET_CATASTROPHIC,
		};

		xiw_dp_fatal(dp, &tc, NULL, 0, -EINVAL);
	}
}

/*
 * The queue of the untagged message an SQ WR is sent as: QN 1 for the
 * requests answered on QN 3, QN 0 for Sends and Immediate Data (a Write
 * with Immediate: its Immediate Data), XIW_QN_COUNT for none (a Write,
 * a local operation).
 */
static u8 xiw_tx_sq_qn(u8 opcode)
{
	if (xiw_tx_op_needs_ord(opcode))
		return XIW_QN_REQ;
	switch (opcode) {
	case XIW_OP_SEND:
	case XIW_OP_SEND_INV:
	case XIW_OP_IMM:
	case XIW_OP_WRITE_IMM:
		return XIW_QN_SEND;
	default:
		return XIW_QN_COUNT;
	}
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
static bool xiw_tx_sq_fetch(struct xiw_qp_dp *dp)
{
	struct xiw_qp *qp = dp->qp;
	struct xiw_tx_ctx *tx = &dp->tx;
	struct xiw_dp_cmpl *c;
	unsigned long flags;
	bool got = false;

	/*
	 * An empty SQ takes no lock (the lockless look and why a stale
	 * answer loses no WQE: xiw_tx_sq_head_valid()). Nothing posted
	 * waits for a completion slot then either.
	 */
	if (!xiw_tx_sq_head_valid(qp)) {
		tx->sq_empty_seen = true;
		return false;
	}
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
		/*
		 * A WQE is posted (looked at above) and waits for a slot;
		 * set under dp->lock: the reaper that frees a slot sees it.
		 */
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
		 * (xiw_tx_sq_start()); a refused opcode completes as a Send.
		 */
		c->opcode = xiw_sqe_op_allowed(tx->sqe.opcode, qp->user) ?
			    xiw_wq_wc_opcode(qp->user, tx->sqe.opcode) :
			    IB_WC_SEND;
		c->status = IB_WC_SUCCESS;
		c->byte_len = 0;
		c->vendor_err = 0;
		c->signaled = tx->sqe.flags & XIW_WQE_SIGNALED ||
			      qp->sq_sig_type == IB_SIGNAL_ALL_WR;
		/*
		 * The WR before it is framed whole (or failed): its message
		 * takes the next MSN of its queue (xiw_tx_untagged()).
		 */
		c->qn = xiw_tx_sq_qn(tx->sqe.opcode);
		c->msn = c->qn < XIW_QN_COUNT ? tx->msn[c->qn] : 0;
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
static int xiw_tx_sq_start(struct xiw_qp_dp *dp)
{
	struct xiw_qp *qp = dp->qp;
	const struct xiw_mem_user who = xiw_mem_local(qp->pd);
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
		if (xiw_stag_fast_reg(to_xiw_mr((struct ib_mr *)(uintptr_t)
					      s->raddr), qp->pd, s->rkey,
				      (int)s->imm))
			return IB_WC_MW_BIND_ERR;
		return -EALREADY;
	case XIW_OP_LOCAL_INV:
		if (xiw_stag_invalidate(xiw_dp_dev(dp), &who, s->rkey, false))
			return IB_WC_MW_BIND_ERR;
		return -EALREADY;
	case XIW_OP_BIND_MW:
		if (xiw_stag_mw_bind(xiw_dp_dev(dp), qp, s->rkey,
				     s->bind.mr_lkey, s->raddr, s->bind.length,
				     s->bind.access))
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
	st = xiw_tx_sq_resolve_sges(dp, s->sge, s->num_sge, r->local_access,
				    tx->sge, &tx->nsge, &tx->len);
	return st == IB_WC_SUCCESS ? 0 : st;
}

/*
 * Reserve and fill the ORQ entry of the SQ WR in the context (a Read, an
 * atomic, a Flush, Atomic Write or Verify), which may go now. Caller holds
 * dp->lock. The entry is left in tx->orqe for the WR's framing, which
 * follows at once: nobody else writes it before its response arrives, and
 * the response cannot come before the request is sent.
 */
static void xiw_tx_sq_orq_fill(struct xiw_qp_dp *dp)
{
	struct xiw_tx_ctx *tx = &dp->tx;
	struct xiw_sqe *s = &tx->sqe;
	u32 req_id = dp->orq_tail;
	struct xiw_orqe *o;

	if (xiw_tx_op_atomic(s->opcode)) {
		o = xiw_tx_sq_orq_add(dp, XIW_RQ_ATOMIC);
		o->req_id = req_id;
		o->sink_stag = READ_ONCE(tx->sge[0].mr->stag);
		o->sink_to = tx->sge[0].addr;
		o->len = sizeof(u64);
		/* the result buffer's region goes to RX with the entry */
		o->mr = tx->sge[0].mr;
		tx->sge[0].mr = NULL;
	} else if (s->opcode == XIW_OP_READ || s->opcode == XIW_OP_READ_INV) {
		o = xiw_tx_sq_orq_add(dp, XIW_RQ_READ);
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
	} else {
		o = xiw_tx_sq_orq_add(dp, s->opcode == XIW_OP_FLUSH ?
				      XIW_RQ_FLUSH :
				      s->opcode == XIW_OP_ATOMIC_WRITE ?
				      XIW_RQ_AWRITE : XIW_RQ_VERIFY);
		if (s->opcode == XIW_OP_VERIFY && tx->nsge) {
			o->sink_stag = READ_ONCE(tx->sge[0].mr->stag);
			o->sink_to = tx->sge[0].addr;
			o->len = tx->sge[0].len;
		}
	}
	o->cidx = tx->cidx;
	tx->orqe = o;
}

/*
 * May the SQ WR in the context go now? Read fence: wait until no Read or
 * Atomic is outstanding; Reads and Atomics: wait for a free ORD slot
 * (RFC 7306: they share ORD/IRD). Local fence (every prior
 * WR complete): WRs before this one have been handed to TCP in order, and
 * the only ones that can still be incomplete are Reads waiting for their
 * Response, so it waits for the same condition as the read fence. A WR
 * that uses ORD and may go gets its ORQ entry in the same dp->lock
 * section (xiw_tx_sq_orq_fill()).
 */
static bool xiw_tx_sq_blocked(struct xiw_qp_dp *dp)
{
	struct xiw_sqe *s = &dp->tx.sqe;
	bool read = xiw_tx_op_needs_ord(s->opcode);
	bool fence = s->flags & (XIW_WQE_READ_FENCE | XIW_WQE_LOCAL_FENCE);
	bool blocked;
	u32 busy;

	if (!read && !fence)
		return false;
	spin_lock_bh(&dp->lock);
	busy = dp->orq_tail - dp->orq_head;
	blocked = (fence && busy) || (read && busy >= max_t(u32, dp->ord, 1));
	/*
	 * Under dp->lock, like every ORQ pop (xiw_rx_resp.c): the pop after
	 * this sees the bit and kicks TX; a pop before it made busy smaller.
	 * So the Response that unblocks this WR always kicks, and no other
	 * Response needs to.
	 */
	if (blocked)
		set_bit(XIW_DP_ORD_WAIT, &dp->flags);
	else if (read)
		xiw_tx_sq_orq_fill(dp);
	spin_unlock_bh(&dp->lock);
	return blocked;
}

/* RFC 7306 Immediate Data [with SE]: untagged, QN 0, 8 bytes. */
static void xiw_tx_sq_build_imm(struct xiw_qp_dp *dp)
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
static void xiw_tx_sq_build_atomic(struct xiw_qp_dp *dp)
{
	struct xiw_tx_ctx *tx = &dp->tx;
	struct xiw_sqe *s = &tx->sqe;
	struct xiw_rdmap_atomic_req *r = &tx->hdr.atomic_req;
	bool masked = s->opcode == XIW_OP_ATOMIC_MASKED_FADD ||
		      s->opcode == XIW_OP_ATOMIC_MASKED_CSWAP;

	/* its ORQ entry: xiw_tx_sq_orq_fill() */
	xiw_tx_untagged(dp, XIW_RDMAP_OP_ATOMIC_REQ, XIW_QN_REQ, 0, true, 0);
	r->req_id = cpu_to_be32(tx->orqe->req_id);
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
static void xiw_tx_sq_build_commit(struct xiw_qp_dp *dp)
{
	struct xiw_tx_ctx *tx = &dp->tx;
	struct xiw_sqe *s = &tx->sqe;
	union xiw_fpdu_hdr *h = &tx->hdr;
	u32 hlen;

	/* its ORQ entry: xiw_tx_sq_orq_fill() */
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
		/*
		 * R: a peer that ignores it must fail the bounds check, even
		 * on a region of 4 GiB or more, where Length 2^32 - 1 at the
		 * region's start would pass and flush less than asked: the
		 * TO is the last byte of the address space, so the range
		 * wraps whatever the region.
		 */
		r->sink_len = cpu_to_be32(region ? U32_MAX :
					  (u32)s->flush.length);
		r->sink_to = cpu_to_be64(region ? U64_MAX : s->raddr);
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
		/*
		 * The draft: "the 64-bit data value to be written, in
		 * big-endian format". The value is the poster's 8 bytes read
		 * as a u64 of this CPU; the responder stores that value in its
		 * CPU's order, so same-endian hosts see the same bytes.
		 */
		r->data = cpu_to_be64(s->atomic_write);
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

/*
 * May the SQ WR's payload be lent to TCP (zero copy, if enabled)? Under
 * tx_zcopy=auto a message of more than XIW_TX_ZC_AUTO_COPY: between two
 * VMs copying moved 3.2 times the 4 KiB user Writes lending did, 1.3
 * times the 16 KiB and 1.1 times the 64 KiB ones, and lending led from 1
 * MiB; nvmet's 128 KiB reads (rdma_rw's WRs of six pages) moved 1.15
 * times as much copied, NFS's 1 MiB reads 1.09 times (performance.md,
 * "Zero copy's threshold"). Under tx_zcopy=1 a user's message of at
 * least a page, a kernel consumer's of more than a page: its one-page
 * message is copied into the batch with the WRs around it (NVMe-oF's 4
 * KiB Write and the Send of its response leave in one sendmsg).
 */
#define XIW_TX_ZC_AUTO_COPY	SZ_64K

static bool xiw_tx_sq_lend_len(const struct xiw_qp_dp *dp, u32 len)
{
	if (!xiw_tx_zc_forced())
		return len > XIW_TX_ZC_AUTO_COPY;
	return dp->qp->user ? len >= PAGE_SIZE : len > PAGE_SIZE;
}

/* Frame the next FPDU of the SQ WR. */
static int xiw_tx_sq_build(struct xiw_qp_dp *dp)
{
	struct xiw_tx_ctx *tx = &dp->tx;
	struct xiw_sqe *s = &tx->sqe;
	bool tagged = s->opcode == XIW_OP_WRITE ||
		      s->opcode == XIW_OP_WRITE_IMM;
	bool splice_ok = xiw_tx_sq_lend_len(dp, tx->len) &&
			 !(s->flags & XIW_WQE_INLINE) &&
			 (tx->zc || xiw_tx_zc_enabled(dp));
	u32 n, hlen;
	int rv;

	memset(&tx->hdr, 0, sizeof(tx->hdr));
	tx->nbv = 1;
	if (xiw_tx_op_atomic(s->opcode)) {
		xiw_tx_sq_build_atomic(dp);
		return 0;
	}
	if (s->opcode == XIW_OP_FLUSH || s->opcode == XIW_OP_ATOMIC_WRITE ||
	    s->opcode == XIW_OP_VERIFY) {
		xiw_tx_sq_build_commit(dp);
		return 0;
	}
	/* Write with Immediate: the Write's FPDUs, then Immediate Data. */
	if (s->opcode == XIW_OP_IMM ||
	    (s->opcode == XIW_OP_WRITE_IMM && tx->done == tx->len)) {
		xiw_tx_sq_build_imm(dp);
		return 0;
	}
	if (s->opcode == XIW_OP_READ || s->opcode == XIW_OP_READ_INV) {
		struct xiw_rdmap_rreq *r = &tx->hdr.rreq;
		const struct xiw_orqe *o = tx->orqe;	/* orq_fill()'s */

		xiw_tx_untagged(dp, XIW_RDMAP_OP_READ_REQ, XIW_QN_REQ, 0, true,
				0);
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
	n = min(tx->len - tx->done, xiw_ddp_max_payload(dp->fpdu_mss, tagged));
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
	if (tx->zcopy && !dp->qp->user)
		xiw_dp_stat_add(dp, XIW_STAT_TX_ZCOPY_KBYTES, n);
	xiw_tx_seal(dp, hlen, n);
	tx->done += n;
	return 0;
}

/* Frame the next FPDU of the current WR (0: it failed and completed). */
static int xiw_tx_sq_frame(struct xiw_qp_dp *dp)
{
	dp->tx.kind = XIW_TX_SQ;	/* before xiw_tx_seal() */
	if (xiw_tx_sq_build(dp)) {
		dp->tx.kind = XIW_TX_NONE;
		xiw_tx_sq_complete(dp, IB_WC_LOC_PROT_ERR);
		return 0;
	}
	return 1;
}

/*
 * May an atomic post (XIW_TX_RUN_POST) send the SQ WR in the context?
 * A request that is one small FPDU (a Read, an atomic, a commit
 * request) or a message of at most XIW_TX_POST_MAX bytes: a few FPDUs
 * under the socket's spinlock, no longer than RX's answers.
 */
static bool xiw_tx_sq_post_ok(const struct xiw_tx_ctx *tx)
{
	return xiw_tx_op_needs_ord(tx->sqe.opcode) ||
	       tx->len <= XIW_TX_POST_MAX;
}

/*
 * Make the SQ's next WR ready to frame: take WRs until one is to be sent
 * or the SQ is empty (tx->sq_active tells which), executing and completing
 * local operations (fast registration, invalidation) on the way. Returns
 * 1 if the WR may go now, 0 if there is none or it waits for ORD or a
 * fence (xiw_tx_sq_blocked()), -1 if a WR failed its checks: it completed
 * in error and the QP goes down. An atomic post leaves a long WR, taken
 * but not framed and without its ORQ entry, to the TX work (0, and
 * tx->post_left), which goes on from here.
 */
static int xiw_tx_sq_ready(struct xiw_qp_dp *dp)
{
	struct xiw_tx_ctx *tx = &dp->tx;
	int rv;

	while (!tx->sq_active) {
		if (!xiw_tx_sq_fetch(dp))
			return 0;
		rv = xiw_tx_sq_start(dp);
		if (rv == -EALREADY) {
			xiw_tx_sq_complete(dp, IB_WC_SUCCESS);
			continue;
		}
		if (rv) {
			xiw_tx_sq_complete(dp, rv);
			return -1;
		}
	}
	if (tx->run == XIW_TX_RUN_POST && !xiw_tx_sq_post_ok(tx)) {
		tx->post_left = true;
		return 0;
	}
	return !xiw_tx_sq_blocked(dp);
}

/*
 * Frame the next FPDU of the SQ: the rest of the WR in progress, else the
 * first of the next WR if it may go (xiw_tx_sq_ready()). 1 if an FPDU is
 * framed; 0 if none (the SQ is empty, its head waits for ORD or a fence,
 * or the WR failed while framed: it completed in error); -1 if a WR failed
 * its checks (it completed in error). After an error the QP goes down.
 */
int xiw_tx_sq_next(struct xiw_qp_dp *dp)
{
	int rv;

	if (!dp->tx.sq_active || !dp->tx.done) {
		rv = xiw_tx_sq_ready(dp);
		if (rv <= 0)
			return rv;
	}
	return xiw_tx_sq_frame(dp);
}
