// SPDX-License-Identifier: GPL-2.0
/*
 * xiw - RX, the responder: the peer's requests on QN 1 (RDMA Read
 * Requests, RFC 7306 atomics, and the commit draft's Flush, Atomic Write
 * and Verify). Their headers are checked against IRD, the QP's rights and
 * the region they name, which is kept for the request (rx->qmr); once the
 * whole FPDU is in and its CRC checked, atomics and Atomic Writes are
 * executed at receipt (unless an earlier Flush or Verify is still to
 * run), and every request is queued in the IRQ, which TX answers in order
 * (xiw_tx_resp.c).
 *
 * Called by the stream core (xiw_rx.c) under the socket lock, which
 * serialises RX; the IRQ is shared with TX under dp->lock (except the
 * IRD check's read of irq_head: xiw_rx_req_ird_full()). No sleeping, no
 * allocation. A refused request ends in xiw_rx.c's Terminates.
 */
#include "xiw_rx.h"
#include "xiw_tx.h"
#include "xiw_commit.h"

/* ------------------------------------------------------------------------
 * Request headers (the whole header is in rx->hdr)
 */

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
static bool xiw_rx_req_ird_full(struct xiw_qp_dp *dp, u8 hdrct)
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
 * header: kept for its execution at receipt (xiw_rx_req_exec()) or its IRQ
 * entry (xiw_rx_req_irq_push()), so that it is only checked again.
 */
static void xiw_rx_req_keep_qmr(struct xiw_qp_dp *dp, struct xiw_mr *mr)
{
	if (dp->rx.qmr)
		xiw_stag_put(dp->rx.qmr);
	dp->rx.qmr = mr;
}

bool xiw_rx_req_hdr_rreq(struct xiw_qp_dp *dp)
{
	struct xiw_rdmap_rreq *r = &dp->rx.hdr.rreq;
	u32 len = be32_to_cpu(r->read_size);
	enum xiw_mem_err err;
	struct xiw_mr *mr;

	if (xiw_rx_req_ird_full(dp, XIW_HDRCT_MD | XIW_TERM_HDRCT_R))
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
	xiw_rx_req_keep_qmr(dp, mr);
	return true;
}

/*
 * Atomic Request header: IRD, AOpCode, alignment (of the TO and of the
 * memory behind it), STag with remote-atomic right and bounds. Nothing is
 * touched before the whole FPDU is in and its CRC checked (section 5.4
 * rule 3); then xiw_rx_req_exec() executes it, with the region kept here.
 */
bool xiw_rx_req_hdr_atomic(struct xiw_qp_dp *dp)
{
	struct xiw_rdmap_atomic_req *r = &dp->rx.hdr.atomic_req;
	u64 to = be64_to_cpu(r->to);
	struct xiw_term_code tc;
	enum xiw_mem_err err;
	struct xiw_mr *mr;
	u32 poff, avail;

	if (xiw_rx_req_ird_full(dp, XIW_HDRCT_MD))
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
	/* executed when the FPDU is complete (xiw_rx_req_exec()) */
	xiw_rx_req_keep_qmr(dp, mr);
	return true;
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
static bool xiw_rx_req_commit_inv_ok(struct xiw_qp_dp *dp)
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
static struct xiw_mr *xiw_rx_req_commit_mr(struct xiw_qp_dp *dp, u32 stag,
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
	if (!xiw_rx_req_commit_inv_ok(dp)) {
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
bool xiw_rx_req_hdr_flush(struct xiw_qp_dp *dp)
{
	struct xiw_rdmap_flush_req *r = &dp->rx.hdr.flush_req;
	u32 flags = be32_to_cpu(r->flags);
	int access = 0;
	struct xiw_mr *mr;
	u64 va, len;

	if (xiw_rx_req_ird_full(dp, XIW_HDRCT_MD))
		return false;
	if (flags & XIW_FLUSH_PERSISTENT)
		access |= IB_ACCESS_FLUSH_PERSISTENT;
	if ((flags & XIW_FLUSH_GLOBAL) || !access)
		access |= IB_ACCESS_FLUSH_GLOBAL;
	if (!xiw_rx_qp_allows(dp, IB_ACCESS_REMOTE_WRITE)) {
		xiw_rx_term_prot(dp, XIW_MEM_ACCESS, XIW_HDRCT_MD);
		return false;
	}
	mr = xiw_rx_req_commit_mr(dp, be32_to_cpu(r->sink_stag), access,
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
bool xiw_rx_req_hdr_awrite(struct xiw_qp_dp *dp)
{
	struct xiw_rdmap_awrite_req *r = &dp->rx.hdr.awrite_req;
	u64 to = be64_to_cpu(r->sink_to);
	struct xiw_mr *mr;
	u32 poff, avail;
	u64 va, len;

	if (xiw_rx_req_ird_full(dp, XIW_HDRCT_MD))
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
	mr = xiw_rx_req_commit_mr(dp, be32_to_cpu(r->sink_stag),
				  IB_ACCESS_REMOTE_WRITE, to,
				  XIW_ATOMIC_WRITE_LEN, false, &va, &len);
	if (!mr)
		return false;
	if (!xiw_stag_page(mr, to, &poff, &avail) ||
	    poff & (XIW_ATOMIC_ALIGN - 1) || avail < sizeof(u64)) {
		xiw_stag_put(mr);
		goto not_atomic;
	}
	/* stored when the FPDU is complete (xiw_rx_req_exec()) */
	xiw_rx_req_keep_qmr(dp, mr);
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
bool xiw_rx_req_hdr_verify(struct xiw_qp_dp *dp)
{
	struct xiw_rdmap_verify_req *r = &dp->rx.hdr.verify_req;
	u32 hash_len = be16_to_cpu(r->hdr.ctrl.mpa_len) -
		       XIW_DDP_UNTAGGED_HDR_LEN - XIW_RDMAP_VERIFY_REQ_MIN;
	struct xiw_mr *mr;
	u64 va, len;
	int dlen;

	if (xiw_rx_req_ird_full(dp, XIW_HDRCT_MD))
		return false;
	if (!xiw_rx_qp_allows(dp, IB_ACCESS_REMOTE_READ)) {
		xiw_rx_term_prot(dp, XIW_MEM_ACCESS, XIW_HDRCT_MD);
		return false;
	}
	mr = xiw_rx_req_commit_mr(dp, be32_to_cpu(r->sink_stag),
				  IB_ACCESS_REMOTE_READ,
				  be64_to_cpu(r->sink_to),
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

/* ------------------------------------------------------------------------
 * Whole request received and its CRC checked: execute or queue it
 */

/*
 * Queue an inbound QN 1 request for TX, which answers IRQ entries in
 * arrival order, executing first those RX did not (xiw_rx_req_exec()). IRD
 * was checked with the header.
 */
static void xiw_rx_req_irq_push(struct xiw_qp_dp *dp, struct xiw_irqe *e)
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
static bool xiw_rx_req_exec_held(struct xiw_qp_dp *dp)
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
 * Not while an earlier Flush or Verify waits for TX (xiw_rx_req_exec_held()):
 * the commit draft orders an Atomic Write "after the successful completion
 * of any previous requested RDMA Flush or RDMA Verify" (section 3.1.3),
 * and RFC 7306 atomics wait with it. Such a request stays unexecuted in
 * the IRQ and TX executes it in IRQ order (xiw_tx_resp_exec()).
 *
 * The region kept with the header (rx->qmr) is checked again (the STag
 * may have been invalidated meanwhile) and consumed. False after a
 * Terminate.
 */
static bool xiw_rx_req_exec(struct xiw_qp_dp *dp, struct xiw_irqe *e)
{
	const struct xiw_mem_user who = xiw_mem_peer(dp->qp);
	bool atomic = e->type == XIW_RQ_ATOMIC;
	int access = atomic ? IB_ACCESS_REMOTE_ATOMIC : IB_ACCESS_REMOTE_WRITE;
	struct xiw_rx_ctx *rx = &dp->rx;
	struct xiw_mem_grant grant;
	enum xiw_mem_err err;
	struct xiw_mr *mr;
	int rv;

	if (xiw_rx_req_exec_held(dp))
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
	/* checked with the header (xiw_rx_req_commit_inv_ok()); as in TX */
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

void xiw_rx_req_rreq_done(struct xiw_qp_dp *dp)
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

	xiw_rx_req_irq_push(dp, &e);
	if (rtr)
		xiw_rx_rtr_done(dp);
}

/* Atomic Request delivered: executed now (xiw_rx_req_exec()), TX answers. */
void xiw_rx_req_atomic_done(struct xiw_qp_dp *dp)
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

	if (xiw_rx_req_exec(dp, &e))
		xiw_rx_req_irq_push(dp, &e);
}

/*
 * Flush, Atomic Write or Verify Request delivered (checked with the
 * header). An Atomic Write is executed now (xiw_rx_req_exec()); TX executes a
 * Flush or Verify once every earlier request is done, right before its
 * response.
 */
void xiw_rx_req_commit_done(struct xiw_qp_dp *dp)
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
		if (!xiw_rx_req_exec(dp, &e))
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
	xiw_rx_req_irq_push(dp, &e);
}
