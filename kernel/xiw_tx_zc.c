// SPDX-License-Identifier: GPL-2.0
/*
 * xiw - zero-copy TX that keeps completion semantics: a completion means
 * the buffer is free.
 *
 * TX hands user payload pages to TCP by reference (MSG_ZEROCOPY with a
 * driver-owned struct ubuf_info, as io_uring's send-zc does). TCP keeps a
 * page referenced until the data is acknowledged and every skb carrying it
 * (queued, in flight, held for retransmission, cloned) is freed; the last
 * such skb drops the ubuf_info's last reference. Only then is the WR done
 * in the completion-order ring, so neither its own completion nor any
 * later one (ordered behind it) reaches the consumer while TCP could still
 * read the buffer. Reusing a buffer after a completion can never change
 * what the peer receives, even when TCP retransmits.
 *
 * One notifier (struct xiw_tx_zc) per WR sent zero-copy. References on its
 * ubuf_info: TX's own while it frames the WR, plus one per skb that TCP
 * attached it to. From xiw_tx_zc_get() to the release, the WR's slot in
 * the completion-order ring is marked (struct xiw_dp_cmpl.zc) and is not
 * reaped, whatever completes it: success, an error completion of TX, a
 * received Terminate (xiw_dp_cmpl_remote_err()) or the flush. Since slots
 * complete in order, no later WR completes either, so no completion of
 * any status tells the consumer a buffer is free while TCP may read it.
 *
 * The flush (QP to ERROR) cannot wait for TCP to let go by itself: a
 * graceful close keeps retransmitting for minutes to a peer that does
 * not acknowledge. It takes the pages back instead (xiw_tx_zc_reclaim()):
 * the connection is aborted, which frees every skb TCP holds for it, TX
 * drops its own reference, and the flush waits for the releases before
 * it completes anything. A release finds its slot by the WR's
 * free-running completion index (zc_seq): a slot reused by a later WR, or
 * emptied by a discarding flush (RESET), does not match and is left alone.
 *
 * The notifier can outlive the QP's data path (an orphaned socket may
 * still hold clones), so it reaches the data path only through a small
 * refcounted owner whose dp pointer is cleared, under its lock, when the
 * data path is freed. Each notifier holds a module reference: the
 * callback is module text and TCP may call it after every xiw object is
 * gone.
 *
 * The release callback runs where TCP frees the last skb: softirq (ACK
 * processing), or process context under the socket lock (release_sock's
 * backlog, tcp_abort()), never in hard IRQ (dev_kfree_skb_any defers).
 * Lock order: socket lock -> owner->lock -> dp->lock -> CQ lock.
 */
#include <linux/module.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <linux/wait_bit.h>
#include <net/dst.h>
#include <net/tcp.h>

#include "xiw_sched.h"
#include "xiw_tx.h"

/*
 * tx_zcopy: off, on, or auto (the default): zero copy for connections
 * whose route leaves the host, copy for those that stay on it. Loopback
 * delivery copies lent pages again (skb_orphan_frags_rx) into pages
 * init_on_alloc zeroes, and a WR then waits for the peer's ACK as well:
 * on one host copying is the faster correct choice, between hosts lending
 * the pages is (Documentation/performance.md, "Zero copy between two
 * VMs"; Documentation/architecture.md, "Zero copy and completion
 * semantics"). A connection decides once, at RTS (xiw_llp_start()).
 */
enum xiw_tx_zc_mode { XIW_ZC_OFF, XIW_ZC_ON, XIW_ZC_AUTO };

static int tx_zcopy = XIW_ZC_AUTO;

static int xiw_tx_zc_param_set(const char *val, const struct kernel_param *kp)
{
	bool on;

	if (sysfs_streq(val, "auto")) {
		WRITE_ONCE(tx_zcopy, XIW_ZC_AUTO);
		return 0;
	}
	if (kstrtobool(val, &on)) {
		pr_debug("xiw: tx_zcopy: '%s' is none of 0, 1, auto\n", val);
		return -EINVAL;
	}
	WRITE_ONCE(tx_zcopy, on ? XIW_ZC_ON : XIW_ZC_OFF);
	return 0;
}

static int xiw_tx_zc_param_get(char *buf, const struct kernel_param *kp)
{
	static const char * const names[] = {
		[XIW_ZC_OFF] = "0", [XIW_ZC_ON] = "1", [XIW_ZC_AUTO] = "auto",
	};

	return sysfs_emit(buf, "%s\n", names[READ_ONCE(tx_zcopy)]);
}

static const struct kernel_param_ops xiw_tx_zc_param_ops = {
	.set = xiw_tx_zc_param_set,
	.get = xiw_tx_zc_param_get,
};

module_param_cb(tx_zcopy, &xiw_tx_zc_param_ops, NULL, 0644);
MODULE_PARM_DESC(tx_zcopy,
		 "send payload pages of registered memory (user and kernel) by reference, completing WRs once TCP no longer needs them: 0 (copy), 1, auto (default: for connections that leave the host)");

struct xiw_zc_owner {
	refcount_t ref;
	spinlock_t lock;		/* dp */
	struct xiw_qp_dp *dp;		/* NULL once the data path is freed */
};

struct xiw_tx_zc {
	struct ubuf_info uarg;		/* refcnt: TX's own + one per skb */
	struct xiw_zc_owner *owner;
	struct xiw_qp_dp *tx_dp;	/* TX's, only while TX frames the WR */
	u32 cidx;			/* the WR's completion index */
	u32 byte_len;
	bool complete;			/* WR fully framed: complete on release */
};

bool xiw_tx_zc_enabled(const struct xiw_qp_dp *dp)
{
	int mode = READ_ONCE(tx_zcopy);

	return mode == XIW_ZC_ON || (mode == XIW_ZC_AUTO && dp->off_host);
}

/* tx_zcopy=1: messages are lent from a page on (xiw_tx_sq_lend_len()) */
bool xiw_tx_zc_forced(void)
{
	return READ_ONCE(tx_zcopy) == XIW_ZC_ON;
}

/*
 * Whether @sk's route leaves the host: its device is not a loopback
 * device. A local address routes through lo; a socket without a route
 * (reset already) counts as local, so it copies.
 */
bool xiw_tx_zc_off_host(struct sock *sk)
{
	struct dst_entry *dst = sk_dst_get(sk);
	bool off;

	off = dst && dst->dev && !(dst->dev->flags & IFF_LOOPBACK);
	dst_release(dst);
	return off;
}

/* @gfp: the data path's allocation flags (xiw_qp_gfp()) */
int xiw_tx_zc_attach(struct xiw_qp_dp *dp, gfp_t gfp)
{
	struct xiw_zc_owner *o = kzalloc(sizeof(*o), gfp);

	if (!o)
		return -ENOMEM;
	refcount_set(&o->ref, 1);
	spin_lock_init(&o->lock);
	o->dp = dp;
	dp->zc_owner = o;
	atomic_set(&dp->zc_pending, 0);
	return 0;
}

static void xiw_tx_zc_owner_put(struct xiw_zc_owner *o)
{
	if (refcount_dec_and_test(&o->ref))
		kfree(o);
}

/*
 * The data path is being freed: notifiers still held (a discarding
 * flush, RESET, does not wait for them) complete nothing from now on.
 */
static void xiw_tx_zc_detach(struct xiw_qp_dp *dp)
{
	struct xiw_zc_owner *o = dp->zc_owner;

	if (!o)
		return;
	spin_lock_bh(&o->lock);
	o->dp = NULL;
	spin_unlock_bh(&o->lock);
}

/*
 * The data path is freed (TX quiesced): drop the notifier of a WR TX
 * abandoned mid-message and the data path's reference on the owner.
 */
void xiw_tx_zc_free(struct xiw_qp_dp *dp)
{
	xiw_tx_zc_detach(dp);
	if (dp->tx.zc) {
		xiw_tx_zc_put(dp->tx.zc);
		dp->tx.zc = NULL;
	}
	if (dp->zc_owner) {
		xiw_tx_zc_owner_put(dp->zc_owner);
		dp->zc_owner = NULL;
	}
}

/* TCP and TX are done with the pages: the WR may complete, in order. */
static void xiw_tx_zc_release(struct xiw_tx_zc *zc)
{
	struct xiw_zc_owner *o = zc->owner;

	spin_lock_bh(&o->lock);
	if (o->dp)
		xiw_dp_cmpl_zc_release(o->dp, zc->cidx, zc->complete,
				       zc->byte_len);
	spin_unlock_bh(&o->lock);
	xiw_tx_zc_owner_put(o);
	kfree(zc);
	module_put(THIS_MODULE);
}

static void xiw_tx_zc_complete(struct sk_buff *skb, struct ubuf_info *uarg,
			       bool zerocopy_success)
{
	if (refcount_dec_and_test(&uarg->refcnt))
		xiw_tx_zc_release(container_of(uarg, struct xiw_tx_zc, uarg));
}

XIW_UBUF_OPS(xiw_tx_zc_ops, xiw_tx_zc_complete);

/*
 * A notifier for the WR in dp->tx (completion index @cidx), holding its
 * slot, or NULL (no memory, module going away, the data path failed):
 * then TX copies. TX context.
 */
struct xiw_tx_zc *xiw_tx_zc_get(struct xiw_qp_dp *dp, u32 cidx)
{
	struct xiw_tx_zc *zc;

	if (!dp->zc_owner || !try_module_get(THIS_MODULE))
		return NULL;
	zc = kzalloc(sizeof(*zc), GFP_NOWAIT | __GFP_NOWARN);
	if (!zc || !xiw_dp_cmpl_zc_hold(dp, cidx)) {
		kfree(zc);
		module_put(THIS_MODULE);
		return NULL;
	}
	xiw_ubuf_set_ops(&zc->uarg, &xiw_tx_zc_ops);
	zc->uarg.flags = SKBFL_ZEROCOPY_FRAG | SKBFL_DONT_ORPHAN;
	refcount_set(&zc->uarg.refcnt, 1);
	zc->cidx = cidx;
	zc->tx_dp = dp;
	zc->owner = dp->zc_owner;
	refcount_inc(&zc->owner->ref);
	return zc;
}

/*
 * The notifier for a sendmsg that hands the WR's payload pages to TCP by
 * reference (MSG_ZEROCOPY). TX context, the data path alive: counted as
 * tx_zcopy_sends, one per FPDU sent zero-copy plus one per resumption of
 * an FPDU whose payload TCP took in parts; the proof that zero copy ran.
 */
struct ubuf_info *xiw_tx_zc_uarg(struct xiw_tx_zc *zc)
{
	xiw_dp_stat_add(zc->tx_dp, XIW_STAT_TX_ZCOPY_SENDS, 1);
	return &zc->uarg;
}

/* Drop TX's reference (the WR was not completed through it). */
void xiw_tx_zc_put(struct xiw_tx_zc *zc)
{
	xiw_tx_zc_complete(NULL, &zc->uarg, true);
}

/*
 * The WR of @zc (its completion index was given to xiw_tx_zc_get()) is
 * fully handed to TCP: it completes (successfully, @byte_len) once TCP
 * releases the last page, possibly right here.
 */
void xiw_tx_zc_finish(struct xiw_tx_zc *zc, u32 byte_len)
{
	zc->byte_len = byte_len;
	zc->complete = true;
	xiw_tx_zc_put(zc);
}

/*
 * TX context (owner of XIW_DP_TX_BUSY), after each pass: once the flush
 * took the pages back, the WR TX was sending is abandoned (the socket is
 * closed, nothing more of it can go out) and TX's reference on its
 * notifier goes, which the flush waits for.
 */
void xiw_tx_zc_abandon(struct xiw_qp_dp *dp)
{
	struct xiw_tx_ctx *tx = &dp->tx;

	if (likely(!tx->zc) || !test_bit(XIW_DP_ZC_RECLAIM, &dp->flags))
		return;
	/* the FPDU's pieces point into the WR's pages: never resumed */
	tx->fpdu_active = false;
	tx->zcopy = false;
	xiw_tx_zc_put(tx->zc);
	tx->zc = NULL;
}

/*
 * How long the flush waits for the network stack to let go of zero-copy
 * pages once TCP freed its skbs. It holds the QP's state mutex, and RTNL
 * when the netdev goes down (xiw_qp_dev_to_error()), so it must not wait
 * for a stalled qdisc or driver TX ring: that one may only be emptied
 * once the netdev is down, after the notifier that waits here returned.
 */
#define XIW_TX_ZC_RECLAIM_WAIT	HZ

/*
 * The flush (xiw_llp_flush(), QP to ERROR, process context, state
 * mutex held) is about to complete the WRs the data path took: first
 * every zero-copy page must be back. TCP holds them until acknowledged,
 * which a peer that does not answer (a cut path, a graceful close that
 * keeps retransmitting) can put off for minutes, so the connection is
 * aborted instead: tcp_abort() sends a reset and frees every skb of the
 * socket (tcp_done_with_error() purges the write and retransmit queues),
 * and a closed socket takes no new data. What may remain are clones
 * below TCP (a qdisc, a driver's TX ring), usually freed at once; the
 * wait for them is bounded (XIW_TX_ZC_RECLAIM_WAIT). True if every page
 * is back; otherwise the WRs still held complete when their pages come
 * back, and every later WR after them (xiw_dp_cmpl_zc_release(), the SQ
 * ring's flush held meanwhile). A graceful close first waits for the
 * notifiers on a live connection (xiw_llp_drain_tx(), xiw_tx_idle()), so
 * only a close that could not finish loses its data, which is the QP's
 * error anyway.
 */
bool xiw_tx_zc_reclaim(struct xiw_qp_dp *dp)
{
	int n;

	spin_lock_bh(&dp->lock);
	n = atomic_read(&dp->zc_pending);
	spin_unlock_bh(&dp->lock);
	if (!n)
		return true;
	xiw_dp_dbg(dp, "%d zero-copy WRs held: aborting the connection\n", n);
	set_bit(XIW_DP_ZC_RECLAIM, &dp->flags);
	/* -ENOENT: closed already, its queues purged then */
	tcp_abort(dp->sk, ECONNABORTED);
	/* TX drops its own reference (xiw_tx_zc_abandon()) */
	xiw_sched_kick(dp, false);
	return wait_var_event_timeout(&dp->zc_pending,
				      !atomic_read(&dp->zc_pending),
				      XIW_TX_ZC_RECLAIM_WAIT);
}

/*
 * xiw_llp_stop(), no lock held: the flush left WRs to their zero-copy
 * pages (XIW_DP_ZC_HELD). Only the data path completes them, when the
 * network stack frees the pages, so it is freed only after that.
 */
void xiw_tx_zc_wait_held(struct xiw_qp_dp *dp)
{
	unsigned int secs = 0;

	while (!wait_var_event_timeout(&dp->zc_pending,
				       !test_bit(XIW_DP_ZC_HELD, &dp->flags),
				       10 * HZ)) {
		secs += 10;
		ibdev_warn(dp->qp->base.device,
			   "QP%u: %d zero-copy WRs still held by the network stack after %u s\n",
			   dp->qp->base.qp_num,
			   atomic_read(&dp->zc_pending), secs);
	}
}
