// SPDX-License-Identifier: GPL-2.0
/*
 * xiw - data-path core: what the engines share for one connection.
 *
 * A connected QP has a struct xiw_qp_dp from xiw_llp_start() to
 * xiw_llp_stop() (xiw_llp.c, which attaches it to its socket and takes it
 * away). This file is what TX (xiw_tx*.c) and RX (xiw_rx*.c) report to
 * while it lives: the completion order of SQ WRs (xiw_dp_cmpl_done(), the
 * zero-copy holds of xiw_tx_zc.c), the one fatal-error path, the
 * references on the data path and the regions it keeps, and the kick of
 * new SQ work. It calls only downwards: the scheduler (xiw_sched.c), the
 * CQs and the STag table; what must reach the QP's state or the CM is
 * queued as work that xiw_llp.c installed (err_work, rtr_work).
 *
 * The error path, in order: xiw_dp_fatal() (any context) sets
 * XIW_DP_ERROR, records the Terminate and kicks TX; TX sends it at the next
 * FPDU boundary (or xiw_dp_term_timeout() gives up after 1 s) and queues
 * err_work. When RX refused a request of the peer (xiw_dp_refuse()), TX
 * first answers the requests the peer sent before it (the IRQ), as an
 * InfiniBand responder does, and only then sends the Terminate. Then
 * err_work (xiw_llp.c) asks xiw_qp.c to move the QP to ERROR (which
 * flushes the data path first: xiw_llp_flush(), then xiw_dp_cmpl_flush()
 * here) and tells the CM, which closes the connection and finally calls
 * xiw_llp_stop().
 */
#include <linux/slab.h>
#include <net/sock.h>

#include "xiw_dp.h"
#include "xiw_sched.h"

struct workqueue_struct *xiw_exec_wq;

int xiw_dp_init(void)
{
	/*
	 * Long responder work (xiw_tx_resp_exec_work): any CPU, never TX's. It
	 * holds a reference on the data path, which xiw_llp_stop() waits
	 * for from the CM's WQ_MEM_RECLAIM work (users_done: a completion,
	 * so check_flush_dependency() cannot see it), so it needs a rescuer
	 * like the TX workqueues (xiw_sched_init()).
	 */
	xiw_exec_wq = alloc_workqueue("xiw_exec", WQ_UNBOUND | WQ_MEM_RECLAIM,
				      0);
	return xiw_exec_wq ? 0 : -ENOMEM;
}

void xiw_dp_exit(void)
{
	destroy_workqueue(xiw_exec_wq);
}

/* ------------------------------------------------------------------------
 * Completion ordering
 *
 * Every WR taken from the SQ gets a slot in dp->cmpl, in SQ order. A WR is
 * done when TCP accepted its last FPDU (Send, Write), when its last Read
 * Response arrived (Read) or at once (local operations); CQEs are emitted
 * from the head while the head is done, so the SQ completes in order even
 * when a Send finishes before an earlier Read. A WR sent zero-copy is
 * done only once TCP released its pages, whatever else completed it
 * (struct xiw_dp_cmpl.zc, xiw_tx_zc.c). Caller holds dp->lock.
 */
static bool xiw_dp_cmpl_reap(struct xiw_qp_dp *dp)
{
	bool notify = false;

	while (dp->cmpl_head != dp->cmpl_tail) {
		struct xiw_dp_cmpl *c =
			&dp->cmpl[dp->cmpl_head & (dp->cmpl_num - 1)];
		struct xiw_cqe cqe = {};

		if (c->state != XIW_CMPL_DONE || c->zc)
			break;
		if (c->signaled || c->status != IB_WC_SUCCESS) {
			cqe.wr_id = c->wr_id;
			cqe.opcode = c->opcode;
			cqe.status = c->status;
			cqe.byte_len = c->byte_len;
			cqe.vendor_err = c->vendor_err >> 8;
			cqe.vendor_code = c->vendor_err & 0xff;
			__xiw_cq_add(dp->qp->scq, dp->qp, &cqe, false,
				     &notify);
		}
		c->state = 0;
		c->vendor_err = 0;
		dp->cmpl_head++;
	}
	return notify;
}

/*
 * Reap (caller holds dp->lock); *@wake says whether TX must be kicked:
 * TX found the ring full (xiw_tx_sq_fetch() sets XIW_DP_CMPL_WAIT under
 * dp->lock), and the first reap that frees a slot wakes it.
 */
static bool xiw_dp_cmpl_reap_wake(struct xiw_qp_dp *dp, bool *wake)
{
	u32 head = dp->cmpl_head;
	bool notify = xiw_dp_cmpl_reap(dp);

	*wake = dp->cmpl_head != head &&
		test_and_clear_bit(XIW_DP_CMPL_WAIT, &dp->flags);
	return notify;
}

/* After a reap, dp->lock dropped: a consumer may post from its handler. */
static void xiw_dp_cmpl_kick(struct xiw_qp_dp *dp, bool wake, bool notify)
{
	if (wake)
		xiw_sched_kick(dp, false);
	if (notify)
		xiw_cq_notify(dp->qp->scq);
}

void xiw_dp_cmpl_done(struct xiw_qp_dp *dp, u32 cidx, u8 status,
		      u32 byte_len)
{
	struct xiw_dp_cmpl *c;
	bool notify = false, wake = false;

	spin_lock_bh(&dp->lock);
	if (!test_bit(XIW_DP_FLUSHED, &dp->flags)) {
		c = &dp->cmpl[cidx & (dp->cmpl_num - 1)];
		c->status = status;
		c->byte_len = byte_len;
		c->state = XIW_CMPL_DONE;
		notify = xiw_dp_cmpl_reap_wake(dp, &wake);
	}
	spin_unlock_bh(&dp->lock);
	xiw_dp_cmpl_kick(dp, wake, notify);
}

/*
 * TX sends the WR of completion index @cidx zero-copy: its slot is held
 * until xiw_dp_cmpl_zc_release(). False once the data path failed (the
 * flush may be counting the notifiers already): TX copies instead.
 */
bool xiw_dp_cmpl_zc_hold(struct xiw_qp_dp *dp, u32 cidx)
{
	struct xiw_dp_cmpl *c;
	bool ok = false;

	spin_lock_bh(&dp->lock);
	/* XIW_DP_ERROR is set before the flush reads zc_pending, locked */
	if (!test_bit(XIW_DP_ERROR, &dp->flags)) {
		c = &dp->cmpl[cidx & (dp->cmpl_num - 1)];
		c->zc = true;
		c->zc_seq = cidx;
		atomic_inc(&dp->zc_pending);
		ok = true;
	}
	spin_unlock_bh(&dp->lock);
	return ok;
}

/*
 * The flush could not take every zero-copy page back in time
 * (xiw_tx_zc_reclaim()): the WRs it left hold their slots, which keep
 * every later slot from being reaped, and the SQ ring's WRs, later still,
 * are not flushed either until they completed (xiw_flush_sq_hold()).
 * XIW_DP_ZC_HELD marks that; whoever clears it once zc_pending is zero,
 * the last release or the flush itself, flushes the SQ ring.
 */
static void xiw_dp_zc_unhold(struct xiw_qp_dp *dp)
{
	if (test_and_clear_bit(XIW_DP_ZC_HELD, &dp->flags))
		xiw_flush_sq_release(dp->qp);
}

static void xiw_dp_zc_hold(struct xiw_qp_dp *dp)
{
	xiw_flush_sq_hold(dp->qp);
	set_bit(XIW_DP_ZC_HELD, &dp->flags);
	/* pairs with atomic_dec_and_test() in xiw_dp_cmpl_zc_release() */
	smp_mb__after_atomic();
	if (!atomic_read(&dp->zc_pending))
		xiw_dp_zc_unhold(dp);
}

/*
 * TCP and TX let go of the pages of the WR of completion index @cidx:
 * its slot may be reaped, as a success of @byte_len if @complete (TX
 * handed all of it to TCP), TCP let go because the peer acknowledged it
 * and nothing completed it with an error meanwhile. TCP also frees its
 * skbs when the connection dies (a reset received, tcp_abort() by the
 * flush, tcp_disconnect()), always after setting sk_err: then the WR is
 * left pending, for the flush that follows to complete. @cidx is
 * free-running, so a slot that a discarding flush emptied or a later WR
 * reuses does not match and is left alone.
 */
void xiw_dp_cmpl_zc_release(struct xiw_qp_dp *dp, u32 cidx, bool complete,
			    u32 byte_len)
{
	struct xiw_dp_cmpl *c;
	bool notify = false, wake = false;

	spin_lock_bh(&dp->lock);
	c = &dp->cmpl[cidx & (dp->cmpl_num - 1)];
	if (c->zc && c->zc_seq == cidx) {
		c->zc = false;
		if (complete && c->state != XIW_CMPL_DONE &&
		    !READ_ONCE(dp->sk->sk_err) &&
		    !test_bit(XIW_DP_ZC_RECLAIM, &dp->flags)) {
			c->status = IB_WC_SUCCESS;
			c->byte_len = byte_len;
			c->state = XIW_CMPL_DONE;
		}
		notify = xiw_dp_cmpl_reap_wake(dp, &wake);
	}
	spin_unlock_bh(&dp->lock);
	if (atomic_dec_and_test(&dp->zc_pending)) {
		xiw_dp_zc_unhold(dp);
		wake_up_var(&dp->zc_pending);
	}
	xiw_dp_cmpl_kick(dp, wake, notify);
}

/*
 * The asynchronous event of a Terminate we send (our consumer's QP
 * failed the peer's request) and the completion status of one we
 * receive (the WR it answers), from its class (xiw_wire.h).
 */
enum ib_event_type xiw_dp_term_event(const struct xiw_term_code *tc)
{
	switch (xiw_term_classify(tc)) {
	case XIW_TERM_CLASS_ACCESS:
		return IB_EVENT_QP_ACCESS_ERR;
	case XIW_TERM_CLASS_INVALID:
	case XIW_TERM_CLASS_OPERATION:
		return IB_EVENT_QP_REQ_ERR;
	default:
		return IB_EVENT_QP_FATAL;
	}
}

static bool xiw_dp_wc_atomic(u8 opcode)
{
	return opcode == IB_WC_FETCH_ADD || opcode == IB_WC_COMP_SWAP ||
	       opcode == IB_WC_MASKED_FETCH_ADD ||
	       opcode == IB_WC_MASKED_COMP_SWAP || opcode == IB_WC_ATOMIC_WRITE;
}

/*
 * By the WR's type (@opcode, its completion opcode) too: RFC 7306 (8.2)
 * answers an atomic whose target is not 64-bit aligned with RDMAP /
 * Remote Operation / "Catastrophic error, localized to RDMAP Stream", and
 * the commit draft an Atomic Write likewise (3.1.3); for those requests
 * the only such error is a target they cannot be performed on, which the
 * IBA answers with an Invalid Request NAK ("the virtual address ... shall
 * be naturally aligned to an 8-byte boundary"), completed as
 * IB_WC_REM_INV_REQ_ERR (as rxe does).
 */
static u8 xiw_dp_term_status(const struct xiw_term_code *tc, u8 opcode)
{
	switch (xiw_term_classify(tc)) {
	case XIW_TERM_CLASS_ACCESS:
		return IB_WC_REM_ACCESS_ERR;
	case XIW_TERM_CLASS_INVALID:
		return IB_WC_REM_INV_REQ_ERR;
	default:
		if (tc->layer == XIW_TERM_LAYER_RDMAP &&
		    tc->etype == XIW_RDMAP_ET_REMOTE_OP &&
		    tc->ecode == XIW_RDMAP_EC_CATASTROPHIC_STREAM &&
		    xiw_dp_wc_atomic(opcode))
			return IB_WC_REM_INV_REQ_ERR;
		return IB_WC_REM_OP_ERR;
	}
}

/*
 * Does @c stand for the WR a Terminate names? @qn/@msn: the queue number
 * and MSN of the untagged header it copied; XIW_DP_TERM_TAGGED: a tagged
 * header; XIW_DP_TERM_NOHDR: none.
 */
static bool xiw_dp_term_names(const struct xiw_dp_cmpl *c, u32 qn, u32 msn)
{
	switch (qn) {
	case XIW_DP_TERM_NOHDR:
		return true;
	case XIW_DP_TERM_TAGGED:
		return c->opcode == IB_WC_RDMA_WRITE;
	default:
		return c->qn == qn && c->msn == msn;
	}
}

/*
 * A Terminate arrived: the WR it names completes with the status it
 * implies and the Terminate's layer, type and code as vendor_err. RFC
 * 5040 section 4.8: the Terminate carries "the DDP header of the
 * offending DDP Segment" (D), whose queue number and MSN name the
 * message; that is the WR sent as that message (struct xiw_dp_cmpl.qn,
 * .msn: a request on QN 1, or a Send, which is still pending only while
 * TCP holds its pages). A tagged header carries no message number, only
 * an STag: an RDMA Write, which completes when it is sent, so only a
 * Write still held by zero-copy can take it (the oldest). Without a
 * copied header the oldest pending WR takes it: what the peer was
 * working on (the ORQ head, or the WR being sent). The WRs before the
 * named one keep what their responses made of them; every other WR
 * still pending is flushed by the QP's move to ERROR that follows (also
 * a WR before the named one whose response never came: a peer need
 * not answer earlier requests once it stopped, Documentation/wire-format.md).
 * If the named WR completed already, or the header names nothing of
 * ours, no WR takes the error (the QP's asynchronous event tells).
 */
void xiw_dp_cmpl_remote_err(struct xiw_qp_dp *dp,
			    const struct xiw_term_code *tc, u32 qn, u32 msn)
{
	bool notify = false;
	u32 i;

	spin_lock_bh(&dp->lock);
	if (!test_bit(XIW_DP_FLUSHED, &dp->flags)) {
		for (i = dp->cmpl_head; i != dp->cmpl_tail; i++) {
			struct xiw_dp_cmpl *c =
				&dp->cmpl[i & (dp->cmpl_num - 1)];

			if (c->state != XIW_CMPL_PENDING ||
			    !xiw_dp_term_names(c, qn, msn))
				continue;
			c->status = xiw_dp_term_status(tc, c->opcode);
			c->vendor_err = (tc->layer & 0xf) << 12 |
					(tc->etype & 0xf) << 8 | tc->ecode;
			c->byte_len = 0;
			c->state = XIW_CMPL_DONE;
			break;
		}
		notify = xiw_dp_cmpl_reap(dp);
	}
	spin_unlock_bh(&dp->lock);
	if (notify)
		xiw_cq_notify(dp->qp->scq);
}

/*
 * Drop the region references the IRQ and ORQ entries still waiting keep
 * (struct xiw_irqe.mr, struct xiw_orqe.mr): all of them (@mr NULL, the
 * rings are being flushed) or those on @mr (it is being deregistered;
 * whoever takes such an entry then looks its STag up and is refused).
 * Entries taken by TX or RX are no longer between head and tail: their
 * references are the taker's. Caller holds dp->lock.
 */
void xiw_dp_put_kept(struct xiw_mr **kept, struct xiw_mr *mr)
{
	if (*kept && (!mr || *kept == mr)) {
		xiw_stag_put(*kept);
		*kept = NULL;
	}
}

void xiw_dp_put_kept_mrs(struct xiw_qp_dp *dp, struct xiw_mr *mr)
{
	u32 ni = roundup_pow_of_two(max_t(u32, dp->ird, 1));
	u32 no = roundup_pow_of_two(max_t(u32, dp->ord, 1));
	u32 i;

	lockdep_assert_held(&dp->lock);
	for (i = dp->irq_head; i != dp->irq_tail; i++)
		xiw_dp_put_kept(&dp->irq[i & (ni - 1)].mr, mr);
	for (i = dp->orq_head; i != dp->orq_tail; i++)
		xiw_dp_put_kept(&dp->orq[i & (no - 1)].mr, mr);
}

/*
 * The completion side of a flush (xiw_llp_flush()), once: the WRs the
 * data path holds (taken from the SQ, not completed: the one being sent
 * and the outstanding Reads) complete with WR_FLUSH_ERR, oldest first, or
 * are dropped (@discard), and the ORQ and IRQ are forgotten. @held: the
 * zero-copy pages of some WRs did not come back in time; those complete
 * later, and the SQ ring's flush waits for them (xiw_dp_zc_hold()).
 */
void xiw_dp_cmpl_flush(struct xiw_qp_dp *dp, bool discard, bool held)
{
	bool notify = false;
	u32 i;

	spin_lock_bh(&dp->lock);
	if (!test_and_set_bit(XIW_DP_FLUSHED, &dp->flags)) {
		for (i = dp->cmpl_head; i != dp->cmpl_tail; i++) {
			struct xiw_dp_cmpl *c =
				&dp->cmpl[i & (dp->cmpl_num - 1)];

			if (discard) {
				c->state = 0;
				c->zc = false;
			} else if (c->state != XIW_CMPL_DONE) {
				c->status = IB_WC_WR_FLUSH_ERR;
				c->byte_len = 0;
				c->state = XIW_CMPL_DONE;
			}
		}
		if (discard)
			dp->cmpl_head = dp->cmpl_tail;
		else
			notify = xiw_dp_cmpl_reap(dp);
		xiw_dp_put_kept_mrs(dp, NULL);
		dp->orq_head = dp->orq_tail;
		WRITE_ONCE(dp->irq_head, dp->irq_tail);	/* xiw_rx_req_ird_full() */
	}
	spin_unlock_bh(&dp->lock);
	if (held)
		xiw_dp_zc_hold(dp);
	else if (discard && test_and_clear_bit(XIW_DP_ZC_HELD, &dp->flags))
		wake_up_var(&dp->zc_pending);	/* xiw_tx_zc_wait_held() */
	if (notify)
		xiw_cq_notify(dp->qp->scq);
}

/*
 * RX took the peer's RTR frame (passive side, RFC 6581): the connection
 * is fully up. Any context; rtr_work tells the CM (xiw_llp.c).
 */
void xiw_dp_rtr_received(struct xiw_qp_dp *dp)
{
	queue_work(xiw_sched_hi_wq, &dp->rtr_work);
}

/* ------------------------------------------------------------------------
 * Errors
 */
/*
 * Stop answering the requests before a refused one (XIW_DP_TERM_DRAIN):
 * TX sends the pending Terminate at its next FPDU boundary. True if a
 * drain was running; the caller kicks TX if TX is not the caller. Under
 * dp->lock, which orders it with xiw_dp_resp_fatal(): the Terminate is
 * replaced only while the drain runs. The release pairs with TX's
 * test_bit_acquire() before it reads dp->term.
 */
bool xiw_dp_drain_stop(struct xiw_qp_dp *dp)
{
	bool was;

	spin_lock_bh(&dp->lock);
	was = test_bit(XIW_DP_TERM_DRAIN, &dp->flags);
	if (was)
		clear_bit_unlock(XIW_DP_TERM_DRAIN, &dp->flags);
	spin_unlock_bh(&dp->lock);
	return was;
}

/*
 * The Terminate did not leave in time: go to ERROR without it. While TX
 * answers the requests before a refused one, the time runs from its last
 * progress: TX framed another FPDU of them since the last look (so TCP
 * took the one before), or the exec work is executing one. A peer that
 * does not read stops that within a period; one that reads slowly gets
 * the answers it is owed, a finite amount.
 */
void xiw_dp_term_timeout(struct work_struct *w)
{
	struct xiw_qp_dp *dp = container_of(to_delayed_work(w),
					    struct xiw_qp_dp, term_work);
	u32 drained = READ_ONCE(dp->term_drained);

	if (test_bit(XIW_DP_TERM_DRAIN, &dp->flags) &&
	    test_bit(XIW_DP_TERM_PENDING, &dp->flags) &&
	    (drained != dp->term_drained_seen ||
	     test_bit(XIW_DP_EXEC_BUSY, &dp->flags))) {
		dp->term_drained_seen = drained;
		queue_delayed_work(xiw_sched_hi_wq, &dp->term_work,
				   msecs_to_jiffies(XIW_TERM_TIMEOUT_MS));
		return;
	}
	if (!test_and_clear_bit(XIW_DP_TERM_PENDING, &dp->flags))
		return;
	xiw_dp_drain_stop(dp);
	ibdev_warn_ratelimited(dp->qp->base.device,
			       "QP%u: Terminate not sent in %u ms (peer not reading): closing without it\n",
			       dp->qp->base.qp_num, XIW_TERM_TIMEOUT_MS);
	/* nothing of ours gets through: the CM resets the connection */
	dp->err_reason = -ETIMEDOUT;
	queue_work(xiw_sched_hi_wq, &dp->err_work);
}

/* xiw_dp_fatal(), xiw_dp_refuse(): @drain, the IRQ is answered first */
static void xiw_dp_fail(struct xiw_qp_dp *dp, const struct xiw_term_code *tc,
			const void *hdr, u32 hdr_len, int reason, bool drain)
{
	if (test_and_set_bit(XIW_DP_ERROR, &dp->flags)) {
		/*
		 * A later failure (TX's, a revocation) while TX answers the
		 * requests before a refused one: answer no more of them.
		 */
		if (xiw_dp_drain_stop(dp))
			xiw_sched_kick(dp, false);
		return;
	}
	dp->err_reason = reason;
	if (tc) {
		ibdev_warn_ratelimited(dp->qp->base.device,
				       "QP%u: Terminate layer %u type %u code %#x\n",
				       dp->qp->base.qp_num, tc->layer,
				       tc->etype, tc->ecode);
		dp->term = *tc;
		hdr_len = min_t(u32, hdr_len, sizeof(dp->term_hdr));
		if (hdr)
			memcpy(dp->term_hdr, hdr, hdr_len);
		dp->term_hdr_len = hdr ? hdr_len : 0;
		if (drain)
			set_bit(XIW_DP_TERM_DRAIN, &dp->flags);
		/*
		 * TX reads term* and TERM_DRAIN after
		 * test_bit_acquire(TERM_PENDING)
		 */
		smp_mb__before_atomic();
		set_bit(XIW_DP_TERM_PENDING, &dp->flags);
		/* Order the Terminate before the kick that sends it. */
		smp_mb__after_atomic();
		xiw_sched_kick(dp, false);
		/*
		 * A peer that does not read (zero window, TX parked in an
		 * FPDU) must not keep the QP out of ERROR: give up on the
		 * Terminate after a while and close anyway.
		 */
		queue_delayed_work(xiw_sched_hi_wq, &dp->term_work,
				   msecs_to_jiffies(XIW_TERM_TIMEOUT_MS));
	} else {
		xiw_dp_dbg(dp, "fatal error %d\n", reason);
		queue_work(xiw_sched_hi_wq, &dp->err_work);
	}
}

/*
 * The data path cannot go on: stop TX and RX, send the Terminate @tc (if
 * any) at the next FPDU boundary, then move the QP to ERROR and tell the
 * CM (err_work). @hdr/@hdr_len: the offending FPDU from its MPA length on,
 * for the Terminate's copied headers. Any context; first caller wins.
 */
void xiw_dp_fatal(struct xiw_qp_dp *dp, const struct xiw_term_code *tc,
		  const void *hdr, u32 hdr_len, int reason)
{
	xiw_dp_fail(dp, tc, hdr, hdr_len, reason, false);
}

/*
 * RX refused a message of the peer (@tc, @hdr, @hdr_len, @reason as for
 * xiw_dp_fatal()): nothing after it is placed, executed or answered, but
 * the requests the peer sent before it are answered before the Terminate
 * goes (XIW_DP_TERM_DRAIN, xiw_tx.c), the way an InfiniBand responder
 * executes requests in order and NAKs only the bad one: RFC 5040's
 * Terminate reports the offending message, not the valid ones before it.
 * Those requests are the whole IRQ: RX queues each one once its FPDU is
 * complete and checked, and nothing more after the refusal. The SQ
 * stops at once. Called by RX only.
 */
void xiw_dp_refuse(struct xiw_qp_dp *dp, const struct xiw_term_code *tc,
		   const void *hdr, u32 hdr_len, int reason)
{
	xiw_dp_fail(dp, tc, hdr, hdr_len, reason, true);
}

/*
 * The responder (TX or the exec work) cannot execute or answer the IRQ
 * head: xiw_dp_fatal() with the Terminate @tc, no header copied. If that
 * request is one a refused request left before it (XIW_DP_TERM_DRAIN),
 * it is the first request of the stream that failed: its Terminate
 * replaces the refused one's and no later request is answered. TX frames
 * nothing of the Terminate while the drain runs, so dp->term may change
 * until the drain stops (both under dp->lock).
 */
void xiw_dp_resp_fatal(struct xiw_qp_dp *dp, const struct xiw_term_code *tc,
		       int reason)
{
	bool replaced = false;

	spin_lock_bh(&dp->lock);
	if (test_bit(XIW_DP_TERM_DRAIN, &dp->flags)) {
		dp->term = *tc;
		dp->term_hdr_len = 0;
		dp->err_reason = reason;
		/* TX reads term* after test_bit_acquire(TERM_DRAIN) */
		clear_bit_unlock(XIW_DP_TERM_DRAIN, &dp->flags);
		replaced = true;
	}
	spin_unlock_bh(&dp->lock);
	if (!replaced) {
		xiw_dp_fatal(dp, tc, NULL, 0, reason);
		return;
	}
	ibdev_warn_ratelimited(dp->qp->base.device,
			       "QP%u: Terminate layer %u type %u code %#x instead (an earlier request failed)\n",
			       dp->qp->base.qp_num, tc->layer, tc->etype,
			       tc->ecode);
	xiw_sched_kick(dp, false);
}

/* ------------------------------------------------------------------------
 * Local SGEs
 */
void xiw_dp_put_lsges(struct xiw_lsge *sge, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		if (sge[i].mr)
			xiw_stag_put(sge[i].mr);
		sge[i].mr = NULL;
	}
}

/*
 * Take a reference on the QP's data path, NULL if it has none. Once
 * xiw_llp_stop() unpublished it, a lookup that still sees it gets no
 * reference after the count reached zero; the count stays readable for
 * such a lookup because the structure is freed after a grace period.
 */
struct xiw_qp_dp *xiw_dp_get(struct xiw_qp *qp)
{
	struct xiw_qp_dp *dp;

	rcu_read_lock();
	dp = rcu_dereference(qp->dp);
	if (dp && !refcount_inc_not_zero(&dp->users))
		dp = NULL;
	rcu_read_unlock();
	return dp;
}

void xiw_dp_put(struct xiw_qp_dp *dp)
{
	if (refcount_dec_and_test(&dp->users))
		complete(&dp->users_done);
}

/*
 * New SQ work (post_send, doorbell) or RTS entered: run TX. @burst: a
 * kernel consumer's post or a user poster in a burst
 * (XIW_DOORBELL_SQ_BATCH): TX runs on another CPU and the poster goes on
 * (xiw_sched_defer()).
 */
void xiw_dp_sq_kick(struct xiw_qp *qp, bool burst)
{
	struct xiw_qp_dp *dp = xiw_dp_get(qp);

	if (!dp)
		return;
	if (!test_bit(XIW_DP_ERROR, &dp->flags)) {
		if (burst)
			xiw_sched_defer(dp);
		else
			xiw_sched_kick(dp, true);
	}
	xiw_dp_put(dp);
}

/*
 * The data path of a socket's QP, with a reference, or NULL. For the
 * socket callbacks; the caller holds sk_callback_lock (read).
 */
struct xiw_qp_dp *xiw_dp_get_sk(struct sock *sk)
{
	struct xiw_qp_dp *dp = xiw_dp_of_sk(sk);

	if (dp && !refcount_inc_not_zero(&dp->users))
		dp = NULL;
	return dp;
}

/*
 * RX is about to complete a WR with the error that ends the connection (a
 * Terminate received, a response that answers nothing) and only then
 * calls xiw_dp_fatal(). A consumer may poll that completion from the
 * mmap'd ring and query its QP in between: from here on it is in ERROR
 * (xiw_llp_failed_locked()), never RTS.
 */
void xiw_dp_mark_failing(struct xiw_qp_dp *dp)
{
	set_bit(XIW_DP_FAILING, &dp->flags);
	/* the bit before the completion that the consumer polls */
	smp_mb__after_atomic();
}
