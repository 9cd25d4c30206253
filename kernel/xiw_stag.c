// SPDX-License-Identifier: GPL-2.0
/*
 * xiw - STags on the data path: lookup, checks, access sections, the STag
 * changes work requests make (fast registration, window binds,
 * invalidation) and the page under a tagged address. The registration
 * verbs that publish and unpublish STags are in xiw_mem.c (regions) and
 * xiw_mw.c (windows); this file calls nothing of the data path engines,
 * the CM or the QP code, so they can all use it.
 *
 * Lookup (xiw_stag_get) is lockless: RCU for the xarray walk and a
 * reference count that dereg waits for, so the data path never sees a
 * region that dereg_mr has returned from. MR memory is freed after an
 * RCU grace period.
 *
 * Everything here runs in any context (softirq included): the checks
 * read fields that only registration (before the STag is visible) and
 * the QP's own fast-reg / invalidate work requests change, with
 * READ_ONCE/WRITE_ONCE. A window's @lock serialises binds,
 * invalidations, dealloc and the data path's resolution, so a resolution
 * sees one binding whole. It is taken in process context (verbs, TX) and
 * in softirq (RX), and the data path may hold other locks with
 * interrupts disabled: irqsave.
 */
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/vmalloc.h>
#include <rdma/ib_umem.h>

#include "xiw.h"

struct xiw_mr *xiw_stag_get(struct xiw_device *xdev, u32 stag)
{
	struct xiw_mr *mr;

	rcu_read_lock();
	mr = xa_load(&xdev->mr_xa, stag >> XIW_STAG_KEY_BITS);
	if (mr && (READ_ONCE(mr->stag) != stag ||
		   !refcount_inc_not_zero(&mr->ref)))
		mr = NULL;
	rcu_read_unlock();
	return mr;
}

void xiw_stag_put(struct xiw_mr *mr)
{
	if (refcount_dec_and_test(&mr->ref))
		complete(&mr->free);
}

/*
 * Check an access of @len bytes at @va through @mr for a QP in @pd.
 * @access: 0 for a local read (always allowed), else IB_ACCESS_* bits
 * that must all be granted. Checks in RFC 5040 order: state, PD, rights,
 * wrap, bounds.
 */
enum xiw_mem_err xiw_stag_check(struct xiw_mr *mr, struct xiw_pd *pd,
				int access, u64 va, u64 len)
{
	u64 iova = READ_ONCE(mr->base.iova);
	u64 mlen = READ_ONCE(mr->base.length);

	if (!READ_ONCE(mr->valid))
		return XIW_MEM_INV_STAG;
	if (mr->pd != pd)
		return XIW_MEM_PD;
	if ((READ_ONCE(mr->access) & access) != access)
		return XIW_MEM_ACCESS;
	if (va + len < va)
		return XIW_MEM_WRAP;
	if (va < iova || va + len - iova > mlen)
		return XIW_MEM_BOUNDS;
	return XIW_MEM_OK;
}

/*
 * The window STag of @stag's index, whatever its key, with a reference
 * held, or NULL: a bind names the window by the STag it is to get.
 */
static struct xiw_mr *xiw_stag_mw_get_index(struct xiw_device *xdev, u32 stag)
{
	struct xiw_mr *mr;

	rcu_read_lock();
	mr = xa_load(&xdev->mr_xa, stag >> XIW_STAG_KEY_BITS);
	if (mr && (mr->type != XIW_MR_MW || !refcount_inc_not_zero(&mr->ref)))
		mr = NULL;
	rcu_read_unlock();
	return mr;
}

/*
 * Unbind @mw, lock held: invalid, and the region lets go of it. Returns
 * the region it was bound to with a reference of the caller's, or NULL:
 * the caller fences it once the lock is dropped (xiw_stag_mw_unbound()).
 */
static struct xiw_mr *xiw_stag_mw_unbind_locked(struct xiw_mw *mw)
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
 * (xiw_stag_fence()), then drop the reference xiw_stag_mw_unbind_locked() took.
 */
static void xiw_stag_mw_unbound(struct xiw_mr *mr)
{
	if (!mr)
		return;
	xiw_stag_fence(mr);
	xiw_stag_put(mr);
}

/*
 * Dealloc of @mw, once its STag is unpublished and no reference to it is
 * left (xiw_mem_stag_remove()): unbind it, then wait out the accesses it
 * granted.
 */
void xiw_stag_mw_unbind(struct xiw_mw *mw)
{
	struct xiw_mr *old;
	unsigned long flags;

	spin_lock_irqsave(&mw->lock, flags);
	old = xiw_stag_mw_unbind_locked(mw);
	spin_unlock_irqrestore(&mw->lock, flags);
	xiw_stag_mw_unbound(old);
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
static const char *xiw_stag_mw_region_refuses(struct xiw_mr *mr,
					      struct xiw_pd *pd, u64 addr,
					      u64 len, int access)
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
int xiw_stag_mw_bind(struct xiw_device *xdev, struct xiw_qp *qp, u32 stag,
		     u32 mr_lkey, u64 addr, u64 len, int access)
{
	struct xiw_mr *wmr, *old = NULL, *mr = NULL;
	const char *why = NULL;
	unsigned long flags;
	struct xiw_mw *mw;
	bool unbind;

	wmr = xiw_stag_mw_get_index(xdev, stag);
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
		mr = xiw_stag_get(xdev, mr_lkey);
		why = mr ? xiw_stag_mw_region_refuses(mr, qp->pd, addr, len,
						      access) :
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
	old = xiw_stag_mw_unbind_locked(mw);
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
	/* lockless readers (xiw_stag_get()) see the binding, then valid */
	smp_wmb();
	if (!unbind)
		WRITE_ONCE(wmr->valid, true);
	spin_unlock_irqrestore(&mw->lock, flags);
	/* the bind completes once the old binding grants nothing more */
	xiw_stag_mw_unbound(old);
out:
	if (why)
		xiw_dbg(&xdev->ibdev,
			"bind of window %#x to lkey %#x [%#llx, +%llu) access %#x: %s\n",
			stag, mr_lkey, addr, len, access, why);
	if (mr)
		xiw_stag_put(mr);
	xiw_stag_put(wmr);
	return why ? -EINVAL : 0;
}

/*
 * xiw_stag_resolve() of @stag, whose lookup found the window STag @wmr (its
 * reference held, consumed): check the access against the window alone
 * (the STag first: a rebind may have moved the key since the lookup) and
 * return the
 * region under it with a reference of its own (the region's addresses
 * are the window's), or NULL with *@err set. A local access (@who->qpn
 * 0) is refused: windows grant remote access only. A type 2 window
 * reached through another QP than the one it was bound through is "not
 * associated with this stream" (XIW_MEM_PD).
 */
static struct xiw_mr *xiw_stag_mw_resolve(struct xiw_mr *wmr, u32 stag,
					  const struct xiw_mem_user *who,
					  int access, u64 va, u64 len,
					  enum xiw_mem_err *err)
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
		*err = xiw_stag_check(wmr, who->pd, access, va, len);
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
	xiw_stag_put(wmr);
	return mr;
}

/*
 * May the window STag @wmr, looked up as @stag, be invalidated by @who (a
 * local invalidate, or the peer's if @remote)? Only a bound type 2 window
 * of @who's PD under that STag still, and by the peer only through the QP
 * it was bound through. 0 or -EACCES.
 */
static int xiw_stag_mw_inv_check(struct xiw_mr *wmr, u32 stag,
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

/* Invalidate the window STag @wmr for @who: xiw_stag_mw_inv_check(), unbind. */
static int xiw_stag_mw_invalidate(struct xiw_mr *wmr, u32 stag,
				  const struct xiw_mem_user *who, bool remote)
{
	struct xiw_mw *mw = wmr->mw;
	struct xiw_mr *old = NULL;
	unsigned long flags;
	int rv;

	spin_lock_irqsave(&mw->lock, flags);
	rv = xiw_stag_mw_inv_check(wmr, stag, who, remote);
	if (!rv)
		old = xiw_stag_mw_unbind_locked(mw);
	spin_unlock_irqrestore(&mw->lock, flags);
	xiw_stag_mw_unbound(old);
	return rv;
}

/*
 * Does the window STag @stag still grant @who @access to [@va, +@len)
 * of the region @mr, which an earlier resolution of @stag gave
 * (xiw_stag_mw_resolve())? The check of an access section
 * (xiw_stag_access_begin()): the window is looked up again, and checked as
 * xiw_stag_mw_resolve() checks it, under its lock, and must still be bound to
 * @mr.
 */
static enum xiw_mem_err xiw_stag_mw_grants(struct xiw_device *xdev,
					   const struct xiw_mem_user *who,
					   struct xiw_mr *mr, u32 stag,
					   int access, u64 va, u64 len)
{
	enum xiw_mem_err err = XIW_MEM_INV_STAG;
	struct xiw_mr *wmr = xiw_stag_get(xdev, stag);
	unsigned long flags;
	struct xiw_mw *mw;

	if (!wmr)
		return err;
	if (wmr->type != XIW_MR_MW || !who->qpn)
		goto out;
	mw = wmr->mw;
	spin_lock_irqsave(&mw->lock, flags);
	if (wmr->stag == stag && mw->mr == mr)
		err = xiw_stag_check(wmr, who->pd, access, va, len);
	if (err == XIW_MEM_OK && mw->base.type == IB_MW_TYPE_2 &&
	    mw->qpn != who->qpn)
		err = XIW_MEM_PD;
	spin_unlock_irqrestore(&mw->lock, flags);
out:
	xiw_stag_put(wmr);
	return err;
}

/*
 * Resolve @stag for an access of @len bytes at @va with @access rights
 * by @who. Returns the MR with a reference held (drop with xiw_stag_put())
 * or NULL with *@err set. A memory window's STag is checked as the window
 * (its state, PD, QP, rights and range) and gives the region under it
 * (xiw_stag_mw_resolve()), at the same addresses: so a region returned here is
 * never a window, and a caller that keeps it for a later access of the
 * same STag (xiw_stag_reuse(), xiw_stag_cached()) sees that the region's own
 * STag differs and asks again.
 */
struct xiw_mr *xiw_stag_resolve(struct xiw_device *xdev,
				const struct xiw_mem_user *who, u32 stag,
				int access, u64 va, u64 len,
				enum xiw_mem_err *err)
{
	struct xiw_mr *mr;

	if (stag >> XIW_STAG_KEY_BITS == 0) {
		*err = XIW_MEM_INV_STAG;
		return NULL;
	}
	mr = xiw_stag_get(xdev, stag);
	if (!mr) {
		*err = XIW_MEM_INV_STAG;
		return NULL;
	}
	if (mr->type == XIW_MR_MW)
		return xiw_stag_mw_resolve(mr, stag, who, access, va, len, err);
	*err = xiw_stag_check(mr, who->pd, access, va, len);
	if (*err != XIW_MEM_OK) {
		xiw_stag_put(mr);
		return NULL;
	}
	return mr;
}

/*
 * xiw_stag_resolve() for a data path that kept the region of an earlier
 * lookup of @stag (@kept, its reference held, or NULL; consumed either
 * way): the kept region if a lookup would still give it and it allows
 * the access (the STag still names it, then xiw_stag_check()), else a fresh
 * lookup, so the verdict is always the lookup's. A region being
 * deregistered is invalid before its STag is unpublished
 * (xiw_mem_stag_remove()), so it is never reused.
 */
struct xiw_mr *xiw_stag_reuse(struct xiw_device *xdev,
			      const struct xiw_mem_user *who,
			      struct xiw_mr *kept, u32 stag, int access,
			      u64 va, u64 len, enum xiw_mem_err *err)
{
	if (kept) {
		if (READ_ONCE(kept->stag) == stag &&
		    xiw_stag_check(kept, who->pd, access, va, len) ==
		    XIW_MEM_OK) {
			*err = XIW_MEM_OK;
			return kept;
		}
		xiw_stag_put(kept);
	}
	return xiw_stag_resolve(xdev, who, stag, access, va, len, err);
}

/*
 * xiw_stag_resolve() through a one-region cache a data path keeps
 * (@cache: its own reference held, or NULL): the cached region if the
 * STag still names it and it allows the access (the verdict a lookup
 * would give, as in xiw_stag_reuse()), else a lookup whose region then
 * replaces the cached one. Either way the caller gets a reference of its
 * own. STag index 0 never hits (no region has it: xiw_mr_add()) and
 * the lookup refuses it. A stream of requests naming one STag (a ULP's buffer, perftest's
 * region) so takes a reference instead of an RCU walk of the STag xarray
 * each. The cache's holder drops it when the region is deregistered
 * (xiw_llp_release_mr()) and when the data path ends.
 */
struct xiw_mr *xiw_stag_cached(struct xiw_device *xdev,
			       const struct xiw_mem_user *who,
			       struct xiw_mr **cache, u32 stag, int access,
			       u64 va, u64 len, enum xiw_mem_err *err)
{
	struct xiw_mr *mr = *cache;

	if (mr && READ_ONCE(mr->stag) == stag) {
		*err = xiw_stag_check(mr, who->pd, access, va, len);
		if (*err != XIW_MEM_OK)
			return NULL;
		refcount_inc(&mr->ref);
		return mr;
	}
	mr = xiw_stag_resolve(xdev, who, stag, access, va, len, err);
	if (!mr)
		return NULL;
	if (*cache)
		xiw_stag_put(*cache);
	refcount_inc(&mr->ref);
	*cache = mr;
	return mr;
}

/*
 * The access fence. A region's STag is checked when a request or a
 * tagged message starts, but its bytes are read or written later, FPDU
 * by FPDU and chunk by chunk, over as many TX runs and RX passes as a
 * peer cares to stretch them. A consumer that is told an invalidation
 * completed (its LOCAL_INV completion, or the receive that carried the
 * peer's Invalidate STag) may reuse the memory at once: from then on no
 * byte of it may be read or written on behalf of any peer.
 *
 * So every touch of a region's memory by the data path is one section,
 * xiw_stag_access_begin() .. xiw_stag_access_end(), that checks the STag
 * again (the region's own, or the window that named it: xiw_stag_mw_grants())
 * after announcing itself in mr->accessing; and an invalidation marks the
 * STag invalid, then waits until no section is open on the region
 * (xiw_stag_fence()) before it reports its completion. Either the section
 * sees the STag invalid, or the invalidation sees the section and waits
 * for it: both sides order their store before their load with a full
 * barrier. A section copies at most an FPDU or a chunk, never sleeps and
 * runs with bottom halves off, so the wait is short, and an invalidation
 * that runs in softirq never waits for a section it interrupted.
 */
enum xiw_mem_err xiw_stag_access_begin(struct xiw_device *xdev,
				       const struct xiw_mem_user *who,
				       struct xiw_mr *mr, u32 stag, int access,
				       u64 va, u64 len)
{
	enum xiw_mem_err err;

	local_bh_disable();
	atomic_inc(&mr->accessing);
	/* pairs with the barrier in xiw_stag_fence() */
	smp_mb__after_atomic();
	if (READ_ONCE(mr->stag) == stag)
		err = xiw_stag_check(mr, who->pd, access, va, len);
	else
		err = xiw_stag_mw_grants(xdev, who, mr, stag, access, va, len);
	if (err != XIW_MEM_OK)
		xiw_stag_access_end(mr);
	return err;
}

void xiw_stag_access_end(struct xiw_mr *mr)
{
	/* the section's accesses before the count the fence reads */
	smp_mb__before_atomic();
	atomic_dec(&mr->accessing);
	local_bh_enable();
}

/*
 * Wait until no data path section is open on @mr. The caller made the
 * STag that grants the access invalid (the region's, or a window's over
 * it) before: a section that begins from now on is refused.
 */
void xiw_stag_fence(struct xiw_mr *mr)
{
	/* the invalid state before the count (xiw_stag_access_begin()) */
	smp_mb();
	while (atomic_read_acquire(&mr->accessing))
		cpu_relax();
}

static struct page *xiw_stag_kva_page(u64 kva, u32 *off, u32 *avail)
{
	void *p = (void *)(uintptr_t)kva;
	struct page *page;

	if (virt_addr_valid(p))
		page = virt_to_page(p);
	else if (is_vmalloc_addr(p))
		page = vmalloc_to_page(p);
	else
		return NULL;
	*off = offset_in_page(p);
	*avail = min_t(u32, *avail, PAGE_SIZE - *off);
	return page;
}

/*
 * Page holding byte @va of a checked MR, the offset in it and how many
 * bytes from there are contiguous (*@avail). NULL if the address cannot
 * be mapped (a DMA MR given a bogus kernel address).
 */
struct page *xiw_stag_page(struct xiw_mr *mr, u64 va, u32 *off, u32 *avail)
{
	u64 iova = READ_ONCE(mr->base.iova);
	u64 o;

	switch (mr->type) {
	case XIW_MR_USER:
		o = va - iova + ib_umem_offset(mr->umem);
		if ((o >> PAGE_SHIFT) >= mr->nupages)
			return NULL;
		*off = o & ~PAGE_MASK;
		*avail = PAGE_SIZE - *off;
		return mr->upages[o >> PAGE_SHIFT];
	case XIW_MR_FRMR: {
		u32 pgsz = READ_ONCE(mr->base.page_size);
		u32 shift;
		u64 idx;

		if (!pgsz || !is_power_of_2(pgsz))
			return NULL;
		shift = ilog2(pgsz);
		o = va - (iova & ~((u64)pgsz - 1));
		idx = o >> shift;
		if (idx >= READ_ONCE(mr->npages))
			return NULL;
		o &= pgsz - 1;
		*avail = pgsz - o;
		return xiw_stag_kva_page(mr->pages[idx] + o, off, avail);
	}
	default:
		*avail = PAGE_SIZE;
		return xiw_stag_kva_page(va, off, avail);
	}
}

/*
 * IB_WR_REG_MR: make a fast-registration MR valid with @key and @access.
 * map_mr_sg() has set iova, length and the page list. Only the QP's own
 * TX engine calls this, one work request at a time.
 */
int xiw_stag_fast_reg(struct xiw_mr *mr, struct xiw_pd *pd, u32 key,
		      int access)
{
	if (mr->type != XIW_MR_FRMR || mr->pd != pd)
		return -EINVAL;
	if ((key ^ mr->stag) >> XIW_STAG_KEY_BITS)
		return -EINVAL;
	if (access & ~XIW_MR_ACCESS_SUPPORTED)
		return -EINVAL;
	if (READ_ONCE(mr->valid))
		return -EBUSY;
	if (!mr->npages || mr->base.length >
	    (u64)mr->npages * mr->base.page_size)
		return -EINVAL;
	WRITE_ONCE(mr->access, access);
	WRITE_ONCE(mr->stag, key);
	/* Fields above are visible before the STag becomes valid. */
	smp_wmb();
	WRITE_ONCE(mr->valid, true);
	return 0;
}

/*
 * May @stag be invalidated (locally, or by the peer if @remote) by @who?
 * Fast-registration MRs of @who's PD (RFC 5040 section 5.2: remote
 * invalidate must be allowed for the STag; xiw allows it for exactly
 * those), remotely only while valid; and type 2 memory windows
 * (xiw_stag_mw_inv_check()). 0, -ENOENT or -EACCES.
 */
static int xiw_stag_inv_check(struct xiw_mr *mr, u32 stag,
			      const struct xiw_mem_user *who, bool remote)
{
	if (mr->type == XIW_MR_MW)
		return xiw_stag_mw_inv_check(mr, stag, who, remote);
	if (mr->type != XIW_MR_FRMR || mr->pd != who->pd ||
	    (remote && !READ_ONCE(mr->valid)))
		return -EACCES;
	return 0;
}

int xiw_stag_may_invalidate(struct xiw_device *xdev,
			    const struct xiw_mem_user *who, u32 stag)
{
	struct xiw_mr *mr = xiw_stag_get(xdev, stag);
	int rv;

	if (!mr)
		return -ENOENT;
	rv = xiw_stag_inv_check(mr, stag, who, true);
	xiw_stag_put(mr);
	return rv;
}

/*
 * Local (IB_WR_LOCAL_INV, READ_WITH_INV) or remote (Send with Invalidate,
 * the Invalidate STag of a Flush, Verify or Atomic Write Request)
 * invalidation of @stag by @who: xiw_stag_inv_check(). A memory window
 * is unbound from its region too (xiw_stag_mw_invalidate()).
 */
int xiw_stag_invalidate(struct xiw_device *xdev, const struct xiw_mem_user *who,
			u32 stag, bool remote)
{
	struct xiw_mr *mr = xiw_stag_get(xdev, stag);
	int rv;

	if (!mr)
		return -ENOENT;
	if (mr->type == XIW_MR_MW) {
		rv = xiw_stag_mw_invalidate(mr, stag, who, remote);
	} else {
		rv = xiw_stag_inv_check(mr, stag, who, remote);
		if (!rv) {
			WRITE_ONCE(mr->valid, false);
			xiw_stag_fence(mr);
		}
	}
	xiw_stag_put(mr);
	return rv;
}

/* Is @page persistent memory (what a Flush P may write back)? */
bool xiw_stag_page_is_pmem(struct page *page)
{
	return region_intersects(page_to_phys(page), PAGE_SIZE, IORESOURCE_MEM,
				 IORES_DESC_PERSISTENT_MEMORY) ==
	       REGION_INTERSECTS;
}
