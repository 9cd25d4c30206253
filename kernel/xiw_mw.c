// SPDX-License-Identifier: GPL-2.0
/*
 * xiw - memory windows (IBA 10.6.7; the STags of windows in RFC 5040).
 *
 * A window is an STag of its own that grants a peer access to a part of
 * a user memory region, with rights of its own. Its STag is a struct
 * xiw_mr of type XIW_MR_MW in the device's mr_xa, so lookups, keys,
 * validity and the state/PD/rights/bounds checks are those of every STag
 * (xiw_mem.c); struct xiw_mw holds what only a window has.
 *
 * - alloc gives an unbound window: an invalid STag with a random key;
 * - a bind (XIW_OP_BIND_MW, run by the TX engine of the QP it was posted
 *   to, in send queue order: xiw_mw_bind()) gives the window its range,
 *   rights and a new key, and counts it in the region's mw_bound, so
 *   that dereg_mr of the region fails while the window is bound;
 * - a peer's access through the window's STag is checked against the
 *   window alone (state, PD, for type 2 the QP it was bound through,
 *   rights, range: xiw_mw_resolve()), never against the region's wider
 *   range or rights, and then goes to the region under it at the same
 *   addresses. The region is returned with a reference of its own, so
 *   an access in flight keeps the region's pages while the window is
 *   invalidated or rebound meanwhile; the next FPDU asks again and is
 *   refused;
 * - type 2 windows are invalidated by a local invalidate or by the
 *   peer's Send with Invalidate (or the Invalidate STag of a commit
 *   request) arriving through the QP they were bound through; type 1
 *   windows by a bind of length 0 or a rebind only. Dealloc unbinds.
 *
 * Windows are not zero-based: a window's tagged offsets are the addresses
 * of the region under it (the SQE contract refuses
 * IB_UVERBS_ACCESS_ZERO_BASED, xiw-sqe.h). The region itself may be
 * (ibv_reg_mr_iova() with iova 0).
 *
 * Kernel consumers: ib_core offers no memory window verbs to kernel ULPs
 * (no ib_alloc_mw(), no bind work request), so windows are a user verbs
 * feature only.
 *
 * Locking: a window's @lock serialises binds, invalidations, dealloc and
 * the data path's resolution, so a resolution sees one binding whole.
 * It is taken in process context (verbs, TX) and in softirq (RX), and
 * the data path may hold other locks with interrupts disabled: irqsave.
 */
#include <linux/random.h>

#include "xiw.h"

static_assert((int)XIW_ACCESS_FLUSH_GLOBAL == (int)IB_ACCESS_FLUSH_GLOBAL);
static_assert((int)XIW_ACCESS_FLUSH_PERSISTENT ==
	      (int)IB_ACCESS_FLUSH_PERSISTENT);
static_assert((int)IB_UVERBS_ACCESS_REMOTE_ATOMIC ==
	      (int)IB_ACCESS_REMOTE_ATOMIC);

/*
 * The window STag of @stag's index, whatever its key, with a reference
 * held, or NULL: a bind names the window by the STag it is to get.
 */
static struct xiw_mr *xiw_mw_get_index(struct xiw_device *xdev, u32 stag)
{
	struct xiw_mr *mr;

	rcu_read_lock();
	mr = xa_load(&xdev->mr_xa, stag >> XIW_STAG_KEY_BITS);
	if (mr && (mr->type != XIW_MR_MW || !refcount_inc_not_zero(&mr->ref)))
		mr = NULL;
	rcu_read_unlock();
	return mr;
}

int xiw_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata)
{
	struct xiw_device *xdev = to_xiw_dev(ibmw->device);
	struct xiw_mw *mw = to_xiw_mw(ibmw);
	struct xiw_mr *stag;
	int rv;

	if (ibmw->type != IB_MW_TYPE_1 && ibmw->type != IB_MW_TYPE_2) {
		xiw_dbg(ibmw->device, "memory window type %d unknown\n",
			ibmw->type);
		return -EINVAL;
	}
	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen)) {
		xiw_dbg(ibmw->device, "ALLOC_MW: unknown driver request data\n");
		return -EINVAL;
	}
	rv = xiw_verbs_obj_count_get(ibmw->device, &xdev->num_mw, XIW_MAX_MW,
				     "MWs");
	if (rv)
		return rv;
	stag = kzalloc(sizeof(*stag), GFP_KERNEL);
	if (!stag) {
		rv = -ENOMEM;
		goto err_count;
	}
	spin_lock_init(&mw->lock);
	stag->type = XIW_MR_MW;
	stag->pd = to_xiw_pd(ibmw->pd);
	stag->mw = mw;
	mw->stag = stag;
	/* published invalid: unbound until the first bind */
	rv = xiw_mem_stag_add(xdev, stag, get_random_u8());
	if (rv)
		goto err_free;
	ibmw->rkey = stag->stag;
	return 0;

err_free:
	kfree(stag);
err_count:
	atomic_dec(&xdev->num_mw);
	return rv;
}

/*
 * Unbind @mw, lock held: invalid, and the region lets go of it. Returns
 * the region it was bound to with a reference of the caller's, or NULL:
 * the caller fences it once the lock is dropped (xiw_mw_unbound()).
 */
static struct xiw_mr *xiw_mw_unbind_locked(struct xiw_mw *mw)
{
	struct xiw_mr *mr = mw->mr;

	WRITE_ONCE(mw->stag->valid, false);
	if (mr) {
		refcount_inc(&mr->ref);
		atomic_dec(&mr->mw_bound);
		mw->mr = NULL;
	}
	return mr;
}

/*
 * After an unbind (lock dropped: a section checking the window takes
 * it): wait out the data path's accesses to @mr that the window granted
 * (xiw_mr_fence()), then drop the reference xiw_mw_unbind_locked() took.
 */
static void xiw_mw_unbound(struct xiw_mr *mr)
{
	if (!mr)
		return;
	xiw_mr_fence(mr);
	xiw_mr_put(mr);
}

int xiw_dealloc_mw(struct ib_mw *ibmw)
{
	struct xiw_device *xdev = to_xiw_dev(ibmw->device);
	struct xiw_mw *mw = to_xiw_mw(ibmw);
	struct xiw_mr *old, *stag = mw->stag;
	unsigned long flags;

	/*
	 * Unpublish first and wait for every reference: a bind or a
	 * resolution that found the window has ended then, and none can
	 * start, so the unbind below is the last word.
	 */
	xiw_mem_stag_remove(xdev, stag);
	spin_lock_irqsave(&mw->lock, flags);
	old = xiw_mw_unbind_locked(mw);
	spin_unlock_irqrestore(&mw->lock, flags);
	xiw_mw_unbound(old);
	kfree_rcu(stag, rcu);
	atomic_dec(&xdev->num_mw);
	return 0;
}

/*
 * May the region @mr (a lookup's reference held) carry a window of @len
 * bytes at @addr with @access for a QP in @pd? The verbs' rules: a user
 * region of the PD that allows binds; a window that grants Remote Write
 * or Remote Atomic needs Local Write on the region; and, xiw's own rule,
 * a window's Flush rights need the same rights on the region (the
 * persistent one was checked against the region's pages at its
 * registration). The window must lie inside the region.
 */
static const char *xiw_mw_region_refuses(struct xiw_mr *mr, struct xiw_pd *pd,
					 u64 addr, u64 len, int access)
{
	int flush = access & (IB_ACCESS_FLUSH_GLOBAL |
			      IB_ACCESS_FLUSH_PERSISTENT);
	u64 iova = READ_ONCE(mr->base.iova);

	if (mr->type != XIW_MR_USER)
		return "not a user memory region";
	if (!READ_ONCE(mr->valid) || mr->pd != pd)
		return "region invalid or of another PD";
	if (!(mr->access & IB_ACCESS_MW_BIND))
		return "region registered without IB_ACCESS_MW_BIND";
	if ((access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC)) &&
	    !(mr->access & IB_ACCESS_LOCAL_WRITE))
		return "remote write or atomic rights on a region without local write";
	if (flush & ~mr->access)
		return "Flush rights the region does not have";
	if (addr + len < addr || addr < iova ||
	    addr + len - iova > mr->base.length)
		return "range outside the region";
	return NULL;
}

/*
 * XIW_OP_BIND_MW posted to @qp (its TX engine, in SQ order): bind the
 * window of @stag's index to @len bytes at @addr of the region whose lkey
 * is @mr_lkey, with @access (XIW_SQE_MW_ACCESS bits, checked by the SQE
 * contract), under the STag @stag. A type 1 window with @len 0 is
 * unbound instead. 0, or -EINVAL with the reason in the kernel log.
 */
int xiw_mw_bind(struct xiw_device *xdev, struct xiw_qp *qp, u32 stag,
		u32 mr_lkey, u64 addr, u64 len, int access)
{
	struct xiw_mr *wmr, *old = NULL, *mr = NULL;
	const char *why = NULL;
	unsigned long flags;
	struct xiw_mw *mw;
	bool unbind;

	wmr = xiw_mw_get_index(xdev, stag);
	if (!wmr) {
		xiw_dbg(&xdev->ibdev, "bind: STag %#x is not a memory window\n",
			stag);
		return -EINVAL;
	}
	mw = wmr->mw;
	unbind = mw->base.type == IB_MW_TYPE_1 && !len;
	if (wmr->pd != qp->pd) {
		why = "window of another PD";
		goto out;
	}
	if (!unbind) {
		mr = xiw_mr_get(xdev, mr_lkey);
		why = mr ? xiw_mw_region_refuses(mr, qp->pd, addr, len, access) :
			   "no memory region";
		if (why)
			goto out;
	}
	spin_lock_irqsave(&mw->lock, flags);
	if (!((stag ^ wmr->stag) & GENMASK(XIW_STAG_KEY_BITS - 1, 0)))
		why = "new STag has the window's current key";
	else if (mw->base.type == IB_MW_TYPE_2 && wmr->valid)
		why = "type 2 window still bound";
	else if (!unbind && !atomic_inc_unless_negative(&mr->mw_bound))
		why = "region being deregistered";
	if (why) {
		spin_unlock_irqrestore(&mw->lock, flags);
		goto out;
	}
	/* a type 1 window is rebound in one step: drop its old binding */
	old = xiw_mw_unbind_locked(mw);
	if (!unbind) {
		mw->mr = mr;
		mw->qpn = mw->base.type == IB_MW_TYPE_2 ? qp->base.qp_num : 0;
		WRITE_ONCE(wmr->base.iova, addr);
		WRITE_ONCE(wmr->base.length, len);
		WRITE_ONCE(wmr->access, access);
	}
	WRITE_ONCE(wmr->stag, stag);
	wmr->base.lkey = stag;
	wmr->base.rkey = stag;
	mw->base.rkey = stag;
	/* lockless readers (xiw_mr_get()) see the binding before it is valid */
	smp_wmb();
	if (!unbind)
		WRITE_ONCE(wmr->valid, true);
	spin_unlock_irqrestore(&mw->lock, flags);
	/* the bind completes once the old binding grants nothing more */
	xiw_mw_unbound(old);
out:
	if (why)
		xiw_dbg(&xdev->ibdev,
			"bind of window %#x to lkey %#x [%#llx, +%llu) access %#x: %s\n",
			stag, mr_lkey, addr, len, access, why);
	if (mr)
		xiw_mr_put(mr);
	xiw_mr_put(wmr);
	return why ? -EINVAL : 0;
}

/*
 * xiw_mr_resolve() of @stag, whose lookup found the window STag @wmr (its
 * reference held, consumed): check the access against the window alone
 * (the STag first: a rebind may have moved the key since the lookup) and
 * return the
 * region under it with a reference of its own (the region's addresses
 * are the window's), or NULL with *@err set. A local access (@who->qpn
 * 0) is refused: windows grant remote access only. A type 2 window
 * reached through another QP than the one it was bound through is "not
 * associated with this stream" (XIW_MEM_PD).
 */
struct xiw_mr *xiw_mw_resolve(struct xiw_mr *wmr, u32 stag,
			      const struct xiw_mem_user *who, int access,
			      u64 va, u64 len, enum xiw_mem_err *err)
{
	struct xiw_mw *mw = wmr->mw;
	struct xiw_mr *mr = NULL;
	unsigned long flags;

	if (!who->qpn) {
		*err = XIW_MEM_ACCESS;
		goto out;
	}
	spin_lock_irqsave(&mw->lock, flags);
	if (wmr->stag != stag)
		*err = XIW_MEM_INV_STAG;
	else
		*err = xiw_mr_check(wmr, who->pd, access, va, len);
	if (*err == XIW_MEM_OK && mw->base.type == IB_MW_TYPE_2 &&
	    mw->qpn != who->qpn)
		*err = XIW_MEM_PD;
	if (*err == XIW_MEM_OK) {
		/* bound: mw_bound keeps the region registered */
		mr = mw->mr;
		refcount_inc(&mr->ref);
	}
	spin_unlock_irqrestore(&mw->lock, flags);
out:
	xiw_mr_put(wmr);
	return mr;
}

/*
 * May the window STag @wmr, looked up as @stag, be invalidated by @who (a
 * local invalidate, or the peer's if @remote)? Only a bound type 2 window
 * of @who's PD under that STag still, and by the peer only through the QP
 * it was bound through. 0 or -EACCES.
 */
int xiw_mw_inv_check(struct xiw_mr *wmr, u32 stag,
		     const struct xiw_mem_user *who, bool remote)
{
	struct xiw_mw *mw = wmr->mw;

	if (READ_ONCE(wmr->stag) != stag || mw->base.type != IB_MW_TYPE_2 || wmr->pd != who->pd ||
	    !READ_ONCE(wmr->valid))
		return -EACCES;
	if (remote && READ_ONCE(mw->qpn) != who->qpn)
		return -EACCES;
	return 0;
}

/* Invalidate the window STag @wmr for @who: xiw_mw_inv_check(), unbind. */
int xiw_mw_invalidate(struct xiw_mr *wmr, u32 stag,
		      const struct xiw_mem_user *who, bool remote)
{
	struct xiw_mw *mw = wmr->mw;
	struct xiw_mr *old = NULL;
	unsigned long flags;
	int rv;

	spin_lock_irqsave(&mw->lock, flags);
	rv = xiw_mw_inv_check(wmr, stag, who, remote);
	if (!rv)
		old = xiw_mw_unbind_locked(mw);
	spin_unlock_irqrestore(&mw->lock, flags);
	xiw_mw_unbound(old);
	return rv;
}

/*
 * Does the window STag @stag still grant @who @access to [@va, +@len)
 * of the region @mr, which an earlier resolution of @stag gave
 * (xiw_mw_resolve())? The check of an access section
 * (xiw_mr_access_begin()): the window is looked up again, and checked as
 * xiw_mw_resolve() checks it, under its lock, and must still be bound to
 * @mr.
 */
enum xiw_mem_err xiw_mw_grants(struct xiw_device *xdev,
			       const struct xiw_mem_user *who,
			       struct xiw_mr *mr, u32 stag, int access,
			       u64 va, u64 len)
{
	enum xiw_mem_err err = XIW_MEM_INV_STAG;
	struct xiw_mr *wmr = xiw_mr_get(xdev, stag);
	unsigned long flags;
	struct xiw_mw *mw;

	if (!wmr)
		return err;
	if (wmr->type != XIW_MR_MW || !who->qpn)
		goto out;
	mw = wmr->mw;
	spin_lock_irqsave(&mw->lock, flags);
	if (wmr->stag == stag && mw->mr == mr)
		err = xiw_mr_check(wmr, who->pd, access, va, len);
	if (err == XIW_MEM_OK && mw->base.type == IB_MW_TYPE_2 &&
	    mw->qpn != who->qpn)
		err = XIW_MEM_PD;
	spin_unlock_irqrestore(&mw->lock, flags);
out:
	xiw_mr_put(wmr);
	return err;
}
