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
 * attached it to. The notifier can outlive the QP's data path (an orphaned
 * socket may retransmit for minutes after a close), so it reaches the data
 * path only through a small refcounted owner whose dp pointer is cleared,
 * under its lock, when the data path stops (the flush then reports the WR
 * as WR_FLUSH_ERR). Each notifier holds a module reference: the callback
 * is module text and TCP may call it after every xiw object is gone.
 *
 * The release callback runs where TCP frees the last skb: softirq (ACK
 * processing), or process context under the socket lock (release_sock's
 * backlog), never in hard IRQ (dev_kfree_skb_any defers). Lock order:
 * socket lock -> owner->lock -> dp->lock -> CQ lock.
 */
#include <linux/module.h>
#include <linux/skbuff.h>
#include <linux/slab.h>

#include "xiw_dp.h"

/*
 * Off by default: measured in the VM bench (one VM, TCG, loopback), copying
 * is the faster correct choice - 64 KiB ib_write_bw 315 vs 214 MB/s, 1 MiB
 * 725 vs 259 MB/s, 64 KiB write latency 145 vs 290 us - because loopback
 * delivery copies zero-copy pages anyway (skb_orphan_frags_rx) and a WR
 * waits for the peer's ACK before it completes. See Documentation/
 * architecture.md ("Zero copy and completion semantics").
 */
static bool tx_zcopy;
module_param(tx_zcopy, bool, 0644);
MODULE_PARM_DESC(tx_zcopy,
		 "send user payload pages by reference, completing WRs once TCP no longer needs them (default off: copy)");

struct xiw_zc_owner {
	refcount_t ref;
	spinlock_t lock;		/* dp */
	struct xiw_qp_dp *dp;		/* NULL once the data path stopped */
};

struct xiw_tx_zc {
	struct ubuf_info uarg;		/* refcnt: TX's own + one per skb */
	struct xiw_zc_owner *owner;
	u32 cidx;			/* completion-order slot of the WR */
	u32 byte_len;
	bool complete;			/* WR fully framed: complete on release */
};

bool xiw_tx_zcopy_enabled(void)
{
	return READ_ONCE(tx_zcopy);
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

static void xiw_zc_owner_put(struct xiw_zc_owner *o)
{
	if (refcount_dec_and_test(&o->ref))
		kfree(o);
}

/*
 * The data path stops: notifiers still held by TCP complete nothing from
 * now on (the flush reports their WRs). Idempotent; TX may still run.
 */
void xiw_tx_zc_detach(struct xiw_qp_dp *dp)
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
		xiw_zc_owner_put(dp->zc_owner);
		dp->zc_owner = NULL;
	}
}

/* TCP and TX are done with the pages: complete the WR in order. */
static void xiw_tx_zc_release(struct xiw_tx_zc *zc)
{
	struct xiw_zc_owner *o = zc->owner;
	struct xiw_qp_dp *dp;

	spin_lock_bh(&o->lock);
	dp = o->dp;
	if (dp && zc->complete) {
		xiw_dp_cmpl_done(dp, zc->cidx, IB_WC_SUCCESS, zc->byte_len);
		atomic_dec(&dp->zc_pending);
		/* TX stopped on a full completion ring: a slot is free now. */
		if (test_and_clear_bit(XIW_DP_CMPL_WAIT, &dp->flags))
			xiw_dp_tx_kick(dp, false);
	}
	spin_unlock_bh(&o->lock);
	xiw_zc_owner_put(o);
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
 * A notifier for the WR in dp->tx, or NULL (no memory, module going
 * away): then TX copies. TX context.
 */
struct xiw_tx_zc *xiw_tx_zc_get(struct xiw_qp_dp *dp)
{
	struct xiw_tx_zc *zc;

	if (!dp->zc_owner || !try_module_get(THIS_MODULE))
		return NULL;
	zc = kzalloc(sizeof(*zc), GFP_NOWAIT | __GFP_NOWARN);
	if (!zc) {
		module_put(THIS_MODULE);
		return NULL;
	}
	xiw_ubuf_set_ops(&zc->uarg, &xiw_tx_zc_ops);
	zc->uarg.flags = SKBFL_ZEROCOPY_FRAG | SKBFL_DONT_ORPHAN;
	refcount_set(&zc->uarg.refcnt, 1);
	zc->owner = dp->zc_owner;
	refcount_inc(&zc->owner->ref);
	return zc;
}

struct ubuf_info *xiw_tx_zc_uarg(struct xiw_tx_zc *zc)
{
	return &zc->uarg;
}

/* Drop TX's reference (the WR was not completed through it). */
void xiw_tx_zc_put(struct xiw_tx_zc *zc)
{
	xiw_tx_zc_complete(NULL, &zc->uarg, true);
}

/*
 * The WR in completion slot @cidx is fully handed to TCP: it completes
 * (successfully, @byte_len) once TCP releases the last page, possibly
 * right here.
 */
void xiw_tx_zc_finish(struct xiw_qp_dp *dp, struct xiw_tx_zc *zc, u32 cidx,
		      u32 byte_len)
{
	zc->cidx = cidx;
	zc->byte_len = byte_len;
	zc->complete = true;
	atomic_inc(&dp->zc_pending);
	xiw_tx_zc_put(zc);
}
