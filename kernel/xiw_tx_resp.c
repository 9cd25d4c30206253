// SPDX-License-Identifier: GPL-2.0
/*
 * xiw - TX, the responder: answers to the peer's requests on queue 1,
 * oldest first, from the IRQ RX fills. Read Responses are framed from the
 * source region (copied: nothing tells the responder when its memory may
 * change). RFC 7306 atomics and Atomic Writes are executed by RX where
 * they are received, in message order with the Writes and Sends around
 * them (xiw_rx_req_exec()); TX frames their responses from the result in the
 * IRQ entry. Flush and Verify, and an atomic or Atomic Write that arrived
 * while an earlier Flush or Verify was still to run, are executed here on
 * the responder's memory right before their response on queue 3. A
 * request that touches much memory (a long Flush or Verify,
 * xiw_commit_heavy()) runs in a work item of its own while the IRQ head
 * waits, so no later request waiting in the IRQ is executed or answered
 * before it. A region that is gone or changed is answered with a
 * Terminate. Runs as the owner of XIW_DP_TX_BUSY, except the exec work.
 */

#include "xiw_tx.h"
#include "xiw_commit.h"
#include "xiw_sched.h"

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
	xiw_dp_resp_fatal(dp, &tc, reason);
}

static void xiw_tx_resp_prot_fail(struct xiw_qp_dp *dp, enum xiw_mem_err err)
{
	xiw_tx_resp_fail(dp, XIW_RDMAP_ET_REMOTE_PROT,
			 err == XIW_MEM_ACCESS ? XIW_RDMAP_EC_ACCESS :
			 err == XIW_MEM_BOUNDS ? XIW_RDMAP_EC_BASE_BOUNDS :
			 err == XIW_MEM_PD ? XIW_RDMAP_EC_STAG_NOT_ASSOC :
			 err == XIW_MEM_WRAP ? XIW_RDMAP_EC_TO_WRAP :
			 XIW_RDMAP_EC_INV_STAG, -EACCES);
}

/*
 * Execute the Flush or Verify in tx->irqe, or an atomic or Atomic Write
 * RX left unexecuted (held behind an earlier Flush or Verify), on the
 * responder's memory, right before its response. RX checked the request;
 * the region RX kept (an atomic's or Atomic Write's, e->mr, consumed) is
 * checked again, or the STag resolved again (the MR may have changed
 * since). Returns false after a Terminate.
 */
static bool xiw_tx_resp_exec(struct xiw_qp_dp *dp, struct xiw_irqe *e,
			     bool offloaded)
{
	const struct xiw_mem_user who = xiw_mem_peer(dp->qp);
	struct xiw_mr *mr, *kept = e->mr;
	struct xiw_mem_grant grant;
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
			mr = xiw_stag_get(xiw_dp_dev(dp), e->sink_stag);
			if (!mr) {
				if (kept)
					xiw_stag_put(kept);
				xiw_tx_resp_prot_fail(dp, XIW_MEM_INV_STAG);
				return false;
			}
			va = READ_ONCE(mr->base.iova);
			len = READ_ONCE(mr->base.length);
			xiw_stag_put(mr);
		}
		break;
	}
	mr = xiw_stag_reuse(xiw_dp_dev(dp), &who, kept, e->sink_stag,
			    access, va, len, &err);
	if (!mr) {
		xiw_dp_dbg(dp, "IRQ type %u: STag %#x gone: %d\n", e->type,
			   e->sink_stag, err);
		xiw_tx_resp_prot_fail(dp, err);
		return false;
	}
	if (offloaded)
		WRITE_ONCE(dp->exec_mr, mr);	/* xiw_llp_revoke_mr() looks */
	grant = (struct xiw_mem_grant){
		.xdev = xiw_dp_dev(dp), .who = who, .stag = e->sink_stag,
		.access = access,
	};
	switch (e->type) {
	case XIW_RQ_ATOMIC:
	case XIW_RQ_AWRITE:
		rv = xiw_commit_exec_one(mr, &grant, e);
		break;
	case XIW_RQ_FLUSH:
		rv = xiw_commit_flush(mr, &grant, va, len, e->flags,
				      offloaded ? dp : NULL);
		break;
	default:
		rv = xiw_commit_verify(mr, &grant, va, len, dig,
				       offloaded ? dp : NULL);
		if (rv < 0)
			break;
		if (e->hash_len && (e->hash_len != rv ||
				    memcmp(e->hash, dig, rv))) {
			WRITE_ONCE(dp->exec_mr, NULL);
			xiw_stag_put(mr);
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
	xiw_stag_put(mr);
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
		xiw_tx_resp_prot_fail(dp, XIW_MEM_INV_STAG);
		return false;
	}
	if (rv) {
		xiw_dp_dbg(dp, "IRQ type %u at %#llx (%llu bytes) failed: %d\n",
			   e->type, va, len, rv);
		xiw_tx_resp_fail(dp, XIW_RDMAP_ET_REMOTE_OP,
				 XIW_RDMAP_EC_CATASTROPHIC_STREAM, rv);
		return false;
	}
	/* RX checked it (xiw_rx_req_commit_inv_ok()); it may have changed since */
	if (e->inv_stag &&
	    xiw_stag_invalidate(xiw_dp_dev(dp), &who, e->inv_stag, true)) {
		xiw_dp_dbg(dp, "IRQ type %u: cannot invalidate STag %#x\n",
			   e->type, e->inv_stag);
		xiw_tx_resp_fail(dp, XIW_RDMAP_ET_REMOTE_PROT,
				 XIW_RDMAP_EC_CANNOT_INVALIDATE, -EACCES);
		return false;
	}
	return true;
}

/*
 * Long Flush P and Verify run in an unbound work item of their own, in
 * process context, so neither this QP's SQ nor other QPs' TX wait for a
 * 1 GiB digest. It executes a copy of the IRQ head (dp->exec_irqe) and
 * kicks TX when done; the IRQ head stays where it is meanwhile, so no
 * later request of the stream is answered before it, and none that waits
 * in the IRQ is executed before it (RX holds atomics and Atomic Writes
 * back while it is there: xiw_rx_req_exec_held()). Later Writes and Sends are
 * placed meanwhile, and later Reads may see them, as for any Read.
 */
void xiw_tx_resp_exec_work(struct work_struct *w)
{
	struct xiw_qp_dp *dp = container_of(w, struct xiw_qp_dp, exec_work);

	if (xiw_dp_answering(dp) &&
	    xiw_tx_resp_exec(dp, &dp->exec_irqe, true))
		set_bit(XIW_DP_EXEC_DONE, &dp->flags);
	/* the result before the kick that takes it */
	smp_mb__before_atomic();
	clear_bit(XIW_DP_EXEC_BUSY, &dp->flags);
	xiw_sched_kick(dp, false);
	xiw_dp_put(dp);		/* taken when queued */
}

/*
 * The IRQ head is long: hand it to the exec work, or take its result.
 * True when tx->irqe is executed and its response may be framed.
 */
static bool xiw_tx_resp_offload(struct xiw_qp_dp *dp)
{
	struct xiw_tx_ctx *tx = &dp->tx;

	if (test_bit(XIW_DP_EXEC_BUSY, &dp->flags))
		return false;		/* running: it kicks TX when done */
	if (test_and_clear_bit(XIW_DP_EXEC_DONE, &dp->flags)) {
		/* pairs with the barrier in xiw_tx_resp_exec_work() */
		smp_mb__after_atomic();
		tx->irqe = dp->exec_irqe;
		return true;
	}
	/* the work's reference; none once llp_stop dropped the last one */
	if (!xiw_dp_answering(dp) || !refcount_inc_not_zero(&dp->users))
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
static bool xiw_tx_resp_start(struct xiw_qp_dp *dp, bool short_only)
{
	struct xiw_tx_ctx *tx = &dp->tx;
	enum xiw_mem_err err;
	bool got = false;

	/*
	 * An empty IRQ takes no lock. irq_tail is written by RX, irq_head by
	 * the owner of TX_BUSY (us) and by the flush, each under dp->lock;
	 * xiw_dp_irq_pending() reads both with READ_ONCE(). A request RX
	 * queues after this look is answered all the same: RX kicks TX at
	 * the end of its pass (xiw_sched_answer()), which sets TX_MORE for a
	 * runner that owns TX_BUSY, as for a look under the lock.
	 */
	if (!xiw_dp_irq_pending(dp))
		return false;
	spin_lock_bh(&dp->lock);
	if (dp->irq_head != dp->irq_tail) {
		u32 n = roundup_pow_of_two(max_t(u32, dp->ird, 1));
		struct xiw_irqe *head = &dp->irq[dp->irq_head & (n - 1)];

		if (!short_only || xiw_irqe_short(head)) {
			tx->irqe = *head;
			/* RX's region reference is ours now (tx->irqe.mr) */
			head->mr = NULL;
			got = true;
			/*
			 * A response of one FPDU, for a request executed or
			 * a Read, frees its IRD slot here, in the same
			 * section, rather than in one of its own right
			 * before the FPDU goes (xiw_tx_resp_irq_pop()): either
			 * way before the peer can have it. An entry still to
			 * be executed is popped only once executed
			 * (xiw_rx_req_exec_held() waits for that).
			 */
			tx->rr_popped = head->executed ||
					(head->type == XIW_RQ_READ &&
					 head->len <=
					 xiw_ddp_max_payload(dp->fpdu_mss, true));
			if (tx->rr_popped)	/* xiw_rx_req_ird_full() */
				WRITE_ONCE(dp->irq_head, dp->irq_head + 1);
		}
	}
	spin_unlock_bh(&dp->lock);
	if (!got)
		return false;
	tx->rr_done = 0;
	tx->rr_sge.mr = NULL;
	tx->rr_sge.len = tx->irqe.len;
	tx->rr_sge.addr = tx->irqe.src_to;
	if (tx->irqe.executed) {
		/* RX executed it at receipt: its result is in tx->irqe */
	} else if (xiw_commit_heavy(dp, &tx->irqe)) {
		if (tx->irqe.mr) {	/* not kept for Flush and Verify */
			xiw_stag_put(tx->irqe.mr);
			tx->irqe.mr = NULL;
		}
		if (!xiw_tx_resp_offload(dp))
			return false;
	} else if (tx->irqe.type != XIW_RQ_READ) {
		if (!xiw_tx_resp_exec(dp, &tx->irqe, false))
			return false;
	} else if (tx->irqe.len) {
		const struct xiw_mem_user who = xiw_mem_peer(dp->qp);

		/* Checked by RX already; the MR may have changed since. */
		tx->rr_sge.mr = xiw_stag_reuse(xiw_dp_dev(dp), &who,
					       tx->irqe.mr, tx->irqe.src_stag,
					       IB_ACCESS_REMOTE_READ,
					       tx->irqe.src_to, tx->irqe.len,
					       &err);
		tx->irqe.mr = NULL;
		if (!tx->rr_sge.mr) {
			xiw_tx_resp_prot_fail(dp, err);
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
static void xiw_tx_resp_irq_pop(struct xiw_qp_dp *dp)
{
	if (dp->tx.rr_popped)
		return;		/* xiw_tx_resp_start() did */
	dp->tx.rr_popped = true;
	spin_lock_bh(&dp->lock);
	if (dp->irq_head != dp->irq_tail)
		WRITE_ONCE(dp->irq_head, dp->irq_head + 1);	/* ird_full */
	spin_unlock_bh(&dp->lock);
}

/*
 * Responses on QN 3, matched by their MSN: RFC 7306 Atomic Response, and
 * the commit draft's Flush and Atomic Write Responses (bare) and Verify
 * Response (the digest). The request was executed by RX at receipt or by
 * xiw_tx_resp_exec().
 */
static int xiw_tx_resp_build_qn3(struct xiw_qp_dp *dp)
{
	struct xiw_tx_ctx *tx = &dp->tx;
	u32 hlen = sizeof(struct xiw_ddp_untagged);
	unsigned int op;

	xiw_tx_resp_irq_pop(dp);
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
	return 1;
}

/*
 * Open the access section of the next Read Response FPDU (@n bytes from
 * rr_done on): a copy target that needs no allocation, then the source
 * STag checked again (xiw_stag_access_begin()), so that an invalidation the
 * consumer was told of stops the response here. 0 with the section open,
 * -ENOMEM, or -EACCES after the Terminate.
 */
static int xiw_tx_resp_access(struct xiw_qp_dp *dp, u32 n)
{
	const struct xiw_mem_user who = xiw_mem_peer(dp->qp);
	struct xiw_tx_ctx *tx = &dp->tx;
	enum xiw_mem_err err;
	int rv;

	rv = xiw_tx_pages_prepare(dp, xiw_mpa_fpdu_len(sizeof(struct xiw_ddp_tagged) -
						       XIW_MPA_HDR_LEN + n));
	if (rv)
		return rv;
	err = xiw_stag_access_begin(xiw_dp_dev(dp), &who, tx->rr_sge.mr,
				    tx->irqe.src_stag, IB_ACCESS_REMOTE_READ,
				    tx->irqe.src_to + tx->rr_done, n);
	if (err == XIW_MEM_OK)
		return 0;
	xiw_dp_dbg(dp, "Read Response: STag %#x revoked after %u of %u bytes\n",
		   tx->irqe.src_stag, tx->rr_done, tx->irqe.len);
	xiw_tx_resp_prot_fail(dp, err);
	return -EACCES;
}

static int xiw_tx_resp_build(struct xiw_qp_dp *dp)
{
	struct xiw_tx_ctx *tx = &dp->tx;
	bool splice_ok = false;
	u32 len = tx->irqe.len;
	u32 n;
	int rv;

	memset(&tx->hdr, 0, sizeof(tx->hdr));
	tx->nbv = 1;
	tx->kind = XIW_TX_RRESP;	/* before xiw_tx_seal() */
	if (tx->irqe.type != XIW_RQ_READ)
		return xiw_tx_resp_build_qn3(dp);
	/*
	 * The responder's memory may change right after the response and
	 * nothing tells the responder when TCP is done with it: copy, in
	 * the section, so the peer gets nothing read after it. Set before
	 * the section: the copy target is chosen then (xiw_tx_batch_fits()).
	 */
	tx->zcopy = false;
	n = min(len - tx->rr_done, xiw_ddp_max_payload(dp->fpdu_mss, true));
	if (n) {
		rv = xiw_tx_resp_access(dp, n);
		if (rv) {
			tx->kind = XIW_TX_NONE;
			return rv == -EACCES ? 0 : rv;
		}
		rv = xiw_tx_add_sges(tx, &tx->rr_sge, 1, tx->rr_done, n,
				     &splice_ok);
		if (rv < 0) {
			xiw_stag_access_end(tx->rr_sge.mr);
			tx->kind = XIW_TX_NONE;
			return rv;
		}
		n = rv;
	}
	tx->fpdu_last = tx->rr_done + n == len;
	if (tx->fpdu_last)
		xiw_tx_resp_irq_pop(dp);
	xiw_tx_tagged(dp, XIW_RDMAP_OP_READ_RESP, tx->irqe.sink_stag,
		      tx->irqe.sink_to + tx->rr_done, tx->fpdu_last);
	xiw_tx_seal(dp, sizeof(struct xiw_ddp_tagged), n);
	if (n)
		xiw_stag_access_end(tx->rr_sge.mr);
	tx->rr_done += n;
	return 1;
}

/* Is the IRQ head one RX would answer itself (xiw_irqe_short())? */
bool xiw_tx_resp_head_short(struct xiw_qp_dp *dp)
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
 * Frame the next FPDU of a response: the rest of the one in progress, else
 * the first of the response to the IRQ head (@short_only: only if that is
 * short, xiw_irqe_short()). 1 if an FPDU is framed; 0 if there is none, it
 * is being executed by the exec work, or a Terminate replaced it; or a
 * negative error.
 */
int xiw_tx_resp_next(struct xiw_qp_dp *dp, bool short_only)
{
	if (!dp->tx.rr_active && !xiw_tx_resp_start(dp, short_only))
		return 0;
	return xiw_tx_resp_build(dp);
}

/*
 * Choose the next FPDU when RX runs TX: the rest of the Read Response in
 * progress, else a new response to the IRQ head if it is short; nothing
 * else (no SQ WR, no Terminate). Same returns as xiw_tx_next().
 */
int xiw_tx_resp_next_rx(struct xiw_qp_dp *dp)
{
	struct xiw_tx_ctx *tx = &dp->tx;

	if (test_bit(XIW_DP_TERM_PENDING, &dp->flags) ||
	    test_bit(XIW_DP_ERROR, &dp->flags) ||
	    (tx->rr_active && !tx->rr_done))
		return 0;
	return xiw_tx_resp_next(dp, true);
}
