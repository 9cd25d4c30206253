// SPDX-License-Identifier: GPL-2.0
/*
 * xiw - the data path on its LLP connection: start, stop, flush.
 *
 * The CM hands a QP its connected socket with xiw_llp_start(): the data
 * path (struct xiw_qp_dp, xiw_dp.c) is allocated once for the
 * connection, published in the QP and in the socket's context, the
 * socket callbacks go to RX (xiw_rx_data_ready()) and to the write space
 * here, and the QP enters RTS. xiw_llp_stop() undoes it: callbacks
 * restored, the QP out of RTS, every user of the data path waited for,
 * its work cancelled, what it keeps released. QP state is decided only
 * by xiw_qp.c: this file asks it (xiw_qp_llp_enter_rts_locked(),
 * xiw_qp_llp_down_locked()), and xiw_qp.c calls xiw_llp_flush() when the
 * QP enters ERROR or RESET. What the engines report upwards arrives here
 * as work: err_work (the QP to ERROR, then the CM told) and rtr_work
 * (the peer's RTR, for the CM).
 *
 * The walks over every connection of a device for a region that goes
 * away (deregistration, invalidation: xiw_llp_release_mr(),
 * xiw_llp_revoke_mr()) are here too: they reach RX's region cache and
 * end connections that stall on the region.
 */
#include <linux/delay.h>
#include <linux/tcp.h>
#include <net/sock.h>
#include <net/tcp.h>

#include "xiw_dp.h"
#include "xiw_rx.h"
#include "xiw_sched.h"
#include "xiw_tx.h"

/*
 * FPDU length in TCP segments. RFC 5044 sizes an FPDU to fit one segment
 * (MULPDU from the MSS), so that a receiver can place each segment as it
 * arrives; with markers off nothing on the wire depends on it, and a
 * longer FPDU costs its framing, CRC setup and TX pieces once for several
 * segments. The receiver must accept FPDUs longer than its MSS: xiw and
 * siw do (interop.md). Read at RTS. Default 16: between two hosts at an
 * MSS of 1448 it moved 1.5 to 3 times the bytes of one segment
 * (Documentation/performance.md, "FPDU length"); 1 is the RFC's.
 */
static unsigned int fpdu_segments = 16;
module_param(fpdu_segments, uint, 0644);
MODULE_PARM_DESC(fpdu_segments,
		 "FPDU length in TCP segments of the connection's MSS, 1-64, at most an MPA ULPDU of 65535 bytes (default 16; 1: one FPDU per segment, RFC 5044's MULPDU)");

static void xiw_llp_err_work(struct work_struct *w)
{
	struct xiw_qp_dp *dp = container_of(w, struct xiw_qp_dp, err_work);

	if (test_bit(XIW_DP_STOPPED, &dp->flags))
		return;
	xiw_qp_llp_error_state(dp->qp);
	xiw_cm_llp_error(dp->cep, dp->err_reason);
}

/* The peer's RTR (xiw_dp_rtr_received()): the CM completes the setup. */
static void xiw_llp_rtr_work(struct work_struct *w)
{
	struct xiw_qp_dp *dp = container_of(w, struct xiw_qp_dp, rtr_work);

	if (test_bit(XIW_DP_STOPPED, &dp->flags))
		return;
	xiw_cm_rtr_received(dp->cep);
}

/*
 * Flush the WRs the data path holds (taken from the SQ, not completed:
 * the one being sent and the outstanding Reads), oldest first, and forget
 * the ORQ and IRQ. Called by xiw_qp.c when the QP enters ERROR (@discard
 * false: WR_FLUSH_ERR completions) or RESET (@discard: no completions),
 * with the state mutex held, before the SQ ring itself is flushed. On
 * return RX executes nothing more: no placement, no Read Response, no
 * atomic. Zero-copy pages TCP still holds are taken back first
 * (xiw_tx_zc_reclaim(): a completion, also WR_FLUSH_ERR, means the buffer
 * is free); WRs whose pages do not come back in time complete later, and
 * the SQ ring's flush waits for them (xiw_dp_cmpl_flush()). A discard
 * completes nothing and need not wait.
 */
void xiw_llp_flush(struct xiw_qp *qp, bool discard)
{
	struct xiw_qp_dp *dp = rcu_dereference_protected(qp->dp,
				lockdep_is_held(&qp->state_lock));
	bool held = false;

	if (!dp)
		return;
	set_bit(XIW_DP_ERROR, &dp->flags);
	/* nothing is answered any more, not even before a refused request */
	xiw_dp_drain_stop(dp);
	/* RX runs under the socket lock: stop it before its RQE is flushed. */
	lock_sock(dp->sk);
	xiw_rx_flush(dp);
	release_sock(dp->sk);
	if (!discard && !test_bit(XIW_DP_FLUSHED, &dp->flags))
		held = !xiw_tx_zc_reclaim(dp);
	xiw_dp_cmpl_flush(dp, discard, held);
}

/* ------------------------------------------------------------------------
 * Regions that go away
 */
/* Does @dp hold a reference on @mr? A racy look: the caller retries. */
static bool xiw_llp_holds_mr(struct xiw_qp_dp *dp, struct xiw_mr *mr)
{
	int i;

	/* data_race: RX/TX change these without our lock; a miss retries */
	if (data_race(dp->rx.tmr) == mr || data_race(dp->tx.rr_sge.mr) == mr ||
	    /* data_race: as above */
	    data_race(dp->rx.rcache) == mr ||
	    /* data_race: as above */
	    data_race(dp->rx.qmr) == mr || data_race(dp->tx.irqe.mr) == mr ||
	    READ_ONCE(dp->exec_mr) == mr)
		return true;
	for (i = 0; i < XIW_MAX_SGE; i++) {
		/* data_race: as above */
		if (data_race(dp->rx.sge[i].mr) == mr ||
		    /* data_race: as above */
		    data_race(dp->tx.sge[i].mr) == mr)
			return true;
	}
	return false;
}

/* Call @fn(dp, @mr) for the data path of every QP of @xdev. Sleeps. */
static void xiw_llp_for_each(struct xiw_device *xdev, struct xiw_mr *mr,
			     void (*fn)(struct xiw_qp_dp *dp,
					struct xiw_mr *mr))
{
	unsigned long index;
	struct xiw_qp *qp;

	xa_lock(&xdev->qp_xa);
	xa_for_each(&xdev->qp_xa, index, qp) {
		struct xiw_qp_dp *dp;

		if (!refcount_inc_not_zero(&qp->ref))
			continue;
		xa_unlock(&xdev->qp_xa);
		dp = xiw_dp_get(qp);
		if (dp) {
			fn(dp, mr);
			xiw_dp_put(dp);
		}
		xiw_qp_put(&qp->base);
		xa_lock(&xdev->qp_xa);
	}
	xa_unlock(&xdev->qp_xa);
}

/*
 * Regions the data path keeps from a lookup to a later use: IRQ entries
 * (RX's lookup for TX), ORQ entries (TX's for RX), and RX's region of a
 * tagged message from one FPDU to the next (xiw_rx_tagged_mr()), which
 * only an FPDU whose payload is being placed uses, and RX's region cache
 * (xiw_rx_region()). Take them back (RX's
 * under the socket lock, which RX runs under, when it is between FPDUs),
 * so that dereg waits neither for the rest of a message nor for requests
 * and responses a peer may never let through: whoever comes to them then
 * looks the STag up and is refused, as if nothing had been kept.
 */
static void xiw_llp_drop_kept_mr(struct xiw_qp_dp *dp, struct xiw_mr *mr)
{
	struct xiw_rx_ctx *rx = &dp->rx;

	spin_lock_bh(&dp->lock);
	xiw_dp_put_kept_mrs(dp, mr);
	spin_unlock_bh(&dp->lock);
	/* data_race: racy looks first, checked again under the lock */
	if (data_race(rx->tmr) != mr && data_race(rx->rcache) != mr)
		return;
	lock_sock(dp->sk);
	if (rx->tmr == mr && rx->state != XIW_RX_DATA) {
		rx->tmr = NULL;
		xiw_stag_put(mr);
	}
	/* only a cache: RX looks the STag up again, and is refused */
	if (rx->rcache == mr) {
		rx->rcache = NULL;
		xiw_stag_put(mr);
	}
	release_sock(dp->sk);
}

/*
 * xiw_mem_stag_remove(): the data path lets go of @mr wherever it only kept it:
 * RX between the FPDUs of a message, IRQ and ORQ entries not taken yet.
 */
void xiw_llp_release_mr(struct xiw_device *xdev, struct xiw_mr *mr)
{
	xiw_llp_for_each(xdev, mr, xiw_llp_drop_kept_mr);
}

static void xiw_llp_revoke_one(struct xiw_qp_dp *dp, struct xiw_mr *mr)
{
	struct xiw_term_code tc = {
		.layer = XIW_TERM_LAYER_RDMAP,
		.etype = XIW_RDMAP_ET_CATASTROPHIC,
	};

	/* kept since the first pass (a request checked just before it) */
	xiw_llp_drop_kept_mr(dp, mr);
	if (xiw_llp_holds_mr(dp, mr)) {
		xiw_dp_dbg(dp, "holds STag %#x being deregistered: ending the connection\n",
			   READ_ONCE(mr->stag));
		xiw_dp_fatal(dp, &tc, NULL, 0, -ETIMEDOUT);
	}
}

/*
 * dereg_mr waits for the data path's references on a region; normally
 * they go within one FPDU. A peer controls how long an FPDU takes (a
 * header and then silence, a Read Response into a closed window), so
 * after a grace period xiw_mem_stag_remove() calls this: every connection
 * still holding @mr ends with a Terminate and goes to ERROR, which
 * releases the region. A process can always deregister and exit.
 */
void xiw_llp_revoke_mr(struct xiw_device *xdev, struct xiw_mr *mr)
{
	xiw_llp_for_each(xdev, mr, xiw_llp_revoke_one);
}

/* ------------------------------------------------------------------------
 * Socket callbacks
 */
static void xiw_llp_write_space(struct sock *sk)
{
	struct xiw_qp_dp *dp;

	read_lock_bh(&sk->sk_callback_lock);
	dp = xiw_dp_get_sk(sk);
	read_unlock_bh(&sk->sk_callback_lock);
	if (!dp)
		return;
	if (sk_stream_is_writeable(sk) &&
	    test_and_clear_bit(XIW_DP_TX_NOSPACE, &dp->flags)) {
		if (sk->sk_socket)
			clear_bit(SOCK_NOSPACE, &sk->sk_socket->flags);
		xiw_sched_queue(dp);
	}
	xiw_dp_put(dp);
}

/* ------------------------------------------------------------------------
 * LLP hand-over
 */
static void xiw_llp_free(struct xiw_qp_dp *dp)
{
	xiw_tx_zc_free(dp);
	xiw_tx_pages_free(dp);
	kvfree(dp->tx.batch);
	kvfree(dp->cmpl);
	kfree(dp->orq);
	kfree(dp->irq);
	/* a lookup that found it before llp_stop unpublished it (xiw_dp_get) */
	kfree_rcu(dp, rcu);
}

int xiw_llp_start(struct xiw_qp *qp, struct xiw_cep *cep,
		  const struct xiw_llp_params *p)
{
	struct sock *sk = p->sock->sk;
	gfp_t gfp = xiw_qp_gfp(qp, GFP_KERNEL);
	struct mem_cgroup *memcg;
	struct xiw_qp_dp *dp;
	bool nomem;
	u32 n;
	int i;

	/* the CM attached the socket: its endpoint's context is there */
	if (WARN_ON_ONCE(!sk->sk_user_data))
		return -EINVAL;
	/* charged to the QP's creator, not to the CM work that runs this */
	memcg = xiw_qp_memcg_enter(qp);
	dp = kzalloc(sizeof(*dp), gfp);
	if (!dp) {
		xiw_qp_memcg_exit(memcg);
		return -ENOMEM;
	}
	dp->qp = qp;
	dp->cep = cep;
	dp->sock = p->sock;
	dp->sk = sk;
	dp->crc = p->crc;
	dp->mpa_rev = p->mpa_rev;
	dp->rtr = p->rtr_send_first ? p->rtr : XIW_RTR_NONE;
	dp->ord = min_t(u32, p->ord, XIW_MAX_ORD);
	dp->ird = min_t(u32, p->ird, XIW_MAX_IRD);
	dp->mss = tcp_sk(sk)->mss_cache ?: 1460;
	if (!xiw_ddp_max_payload(dp->mss, false))
		dp->mss = 536;
	/* xiw_mpa_mulpdu() caps what it allows at an MPA ULPDU */
	dp->fpdu_mss = dp->mss * clamp(READ_ONCE(fpdu_segments), 1U, 64U);
	dp->off_host = xiw_tx_zc_off_host(sk);
	refcount_set(&dp->users, 1);
	init_completion(&dp->users_done);
	spin_lock_init(&dp->lock);
	INIT_WORK(&dp->tx_work, xiw_sched_work);
	INIT_WORK(&dp->err_work, xiw_llp_err_work);
	INIT_WORK(&dp->rtr_work, xiw_llp_rtr_work);
	INIT_DELAYED_WORK(&dp->term_work, xiw_dp_term_timeout);
	INIT_DELAYED_WORK(&dp->tx_retry, xiw_sched_retry_work);
	INIT_WORK(&dp->exec_work, xiw_tx_resp_exec_work);
	for (i = 0; i < XIW_QN_COUNT; i++) {
		dp->tx.msn[i] = 1;
		dp->rx.msn[i] = 1;
	}
	if (p->rtr_wait && p->rtr != XIW_RTR_NONE) {
		dp->rx.rtr_type = p->rtr;
		set_bit(XIW_DP_RTR_WAIT, &dp->flags);
	}

	dp->cmpl_num = qp->sq.num;
	dp->cmpl = kvcalloc(dp->cmpl_num, sizeof(*dp->cmpl), gfp);
	n = roundup_pow_of_two(max_t(u32, dp->ord, 1));
	dp->orq = kcalloc(n, sizeof(*dp->orq), gfp);
	n = roundup_pow_of_two(max_t(u32, dp->ird, 1));
	dp->irq = kcalloc(n, sizeof(*dp->irq), gfp);
	dp->tx.batch = kvmalloc(XIW_TX_BATCH_BYTES, gfp);
	nomem = !dp->cmpl || !dp->orq || !dp->irq || !dp->tx.batch ||
		xiw_tx_zc_attach(dp, gfp);
	xiw_qp_memcg_exit(memcg);
	if (nomem) {
		xiw_llp_free(dp);
		return -ENOMEM;
	}

	mutex_lock(&qp->state_lock);
	if (!xiw_qp_llp_may_start_locked(qp)) {
		mutex_unlock(&qp->state_lock);
		xiw_llp_free(dp);
		return -EINVAL;
	}
	xiw_qp_get(&qp->base);
	qp->cep = cep;
	rcu_assign_pointer(qp->dp, dp);

	tcp_sock_set_nodelay(sk);
	lock_sock(sk);
	/*
	 * RX may send responses from softirq (xiw_sched_from_rx()), where
	 * current's page fragment belongs to whoever was interrupted.
	 */
	sk->sk_use_task_frag = false;
	write_lock_bh(&sk->sk_callback_lock);
	dp->sk_ctx = sk->sk_user_data;
	dp->sk_ctx->dp = dp;
	dp->saved_data_ready = sk->sk_data_ready;
	dp->saved_write_space = sk->sk_write_space;
	sk->sk_data_ready = xiw_rx_data_ready;
	sk->sk_write_space = xiw_llp_write_space;
	write_unlock_bh(&sk->sk_callback_lock);
	release_sock(sk);

	xiw_qp_llp_enter_rts_locked(qp);
	mutex_unlock(&qp->state_lock);
	xiw_dp_dbg(dp, "RTS, mss %u crc %d ord %u ird %u rtr %d/%d/%d\n", dp->mss,
		   dp->crc, dp->ord, dp->ird, p->rtr, p->rtr_send_first,
		   p->rtr_wait);

	/* Data that arrived with the MPA reply, and WRs posted early. */
	lock_sock(sk);
	xiw_rx_data_ready(sk);
	release_sock(sk);
	xiw_dp_sq_kick(qp, false);
	return 0;
}

/*
 * The ORD and IRD the connection negotiated, if the QP has one (query_qp);
 * the caller holds the QP's state mutex, which keeps qp->dp.
 */
void xiw_llp_ord_ird_locked(struct xiw_qp *qp, u8 *ord, u8 *ird)
{
	struct xiw_qp_dp *dp = rcu_dereference_protected(qp->dp,
				lockdep_is_held(&qp->state_lock));

	if (dp) {
		*ord = dp->ord;
		*ird = dp->ird;
	}
}

/*
 * Has the connection failed for good (a Terminate sent or received, a
 * socket error)? The QP is then on its way to ERROR: err_work moves it
 * there, after the completion and the event that tell the consumer why.
 * The caller holds the QP's state mutex, which keeps qp->dp; llp_stop
 * sets XIW_DP_ERROR too, but with XIW_DP_STOPPED and under that mutex.
 */
bool xiw_llp_failed_locked(struct xiw_qp *qp)
{
	struct xiw_qp_dp *dp = rcu_dereference_protected(qp->dp,
				lockdep_is_held(&qp->state_lock));

	return dp && (test_bit(XIW_DP_ERROR, &dp->flags) ||
		      test_bit(XIW_DP_FAILING, &dp->flags)) &&
	       !test_bit(XIW_DP_STOPPED, &dp->flags);
}

/*
 * Graceful close (QP in CLOSING): what the consumer posted before it asked
 * for the close goes out before the FIN. Bounded: a peer that does not
 * read cannot hold the close forever.
 */
static void xiw_llp_drain_tx(struct xiw_qp_dp *dp)
{
	unsigned long end = jiffies + msecs_to_jiffies(2000);

	while (!test_bit(XIW_DP_ERROR, &dp->flags) &&
	       time_before(jiffies, end)) {
		/* no flush_work(): the CM's workqueue reclaims memory */
		xiw_sched_kick(dp, false);
		if (xiw_tx_idle(dp))
			return;
		usleep_range(500, 1000);
	}
}

/*
 * Detach the data path from the socket: restore the callbacks, move the QP
 * to ERROR if it was connected (flushing everything), wait for every user
 * of the data path and free it. Process context; the caller must not hold
 * the QP's state mutex. Safe against concurrent softirq RX and TX work.
 *
 * Only the endpoint that started the data path (@cep) stops it: CM work
 * of an old connection, or of a connect that lost the QP to another, must
 * never stop or move to ERROR a connection it does not own.
 */
void xiw_llp_stop(struct xiw_qp *qp, struct xiw_cep *cep)
{
	struct xiw_qp_dp *dp;
	struct sock *sk;

	mutex_lock(&qp->state_lock);
	dp = rcu_dereference_protected(qp->dp,
				       lockdep_is_held(&qp->state_lock));
	if (!dp || dp->cep != cep) {
		mutex_unlock(&qp->state_lock);
		return;
	}
	if (xiw_qp_llp_closing_locked(qp)) {
		/* Only llp_stop frees dp, and only after this. */
		mutex_unlock(&qp->state_lock);
		xiw_llp_drain_tx(dp);
		mutex_lock(&qp->state_lock);
	}
	set_bit(XIW_DP_STOPPED, &dp->flags);
	set_bit(XIW_DP_ERROR, &dp->flags);
	sk = dp->sk;
	write_lock_bh(&sk->sk_callback_lock);
	dp->sk_ctx->dp = NULL;
	if (sk->sk_data_ready == xiw_rx_data_ready)
		sk->sk_data_ready = dp->saved_data_ready;
	if (sk->sk_write_space == xiw_llp_write_space)
		sk->sk_write_space = dp->saved_write_space;
	write_unlock_bh(&sk->sk_callback_lock);

	xiw_qp_llp_down_locked(qp);
	rcu_assign_pointer(qp->dp, NULL);
	qp->cep = NULL;
	mutex_unlock(&qp->state_lock);

	/*
	 * No grace period here: a lookup that still finds dp (xiw_dp_get())
	 * either took its reference before the count reached zero, and is
	 * waited for, or fails to take one; the structure it read the count
	 * from is freed only after a grace period (xiw_llp_free()).
	 */
	xiw_dp_put(dp);
	wait_for_completion(&dp->users_done);
	cancel_work_sync(&dp->tx_work);
	/* TX, stopped now, arms no backoff; a pending one queues tx_work */
	cancel_delayed_work_sync(&dp->tx_retry);
	cancel_delayed_work_sync(&dp->term_work);
	cancel_work_sync(&dp->err_work);
	cancel_work_sync(&dp->rtr_work);
	cancel_work_sync(&dp->tx_work);
	/* it held a reference: done by now; a no-op kept for clarity */
	cancel_work_sync(&dp->exec_work);

	xiw_dp_put_lsges(dp->tx.sge, dp->tx.nsge);
	xiw_dp_put_lsges(&dp->tx.rr_sge, 1);
	xiw_dp_put_kept(&dp->tx.irqe.mr, NULL);
	spin_lock_bh(&dp->lock);
	xiw_dp_put_kept_mrs(dp, NULL);
	spin_unlock_bh(&dp->lock);
	xiw_rx_release(dp);
	xiw_tx_zc_wait_held(dp);
	xiw_dp_dbg(dp, "stopped\n");
	xiw_llp_free(dp);
	xiw_qp_put(&qp->base);
}
