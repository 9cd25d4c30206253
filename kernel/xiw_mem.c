// SPDX-License-Identifier: GPL-2.0
/*
 * xiw - memory regions and STags.
 *
 * An STag is a 24-bit index into the device's mr_xa plus an 8-bit key
 * (RFC 5040 leaves the layout to the RNIC). Index 0 is never used, so
 * STag 0 and every STag below 0x100 name nothing and can never reach
 * memory from the wire. Indices are allocated cyclically so that a freed
 * STag is not handed out again soon.
 *
 * Lookup (xiw_mr_get) is lockless: RCU for the xarray walk and a
 * reference count that dereg waits for, so the data path never sees a
 * region that dereg_mr has returned from. MR memory is freed after an
 * RCU grace period.
 */
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/random.h>
#include <linux/vmalloc.h>
#include <rdma/ib_umem.h>

#include "xiw.h"

#define XIW_MR_ACCESS_SUPPORTED (IB_ACCESS_LOCAL_WRITE | \
	IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ | \
	IB_ACCESS_REMOTE_ATOMIC | IB_ACCESS_MW_BIND | \
	IB_ACCESS_FLUSH_GLOBAL | IB_ACCESS_FLUSH_PERSISTENT | \
	IB_ACCESS_OPTIONAL)

/*
 * Publish @mr (type, PD and rights set) under a new STag index with @key:
 * from here on lookups find it. Memory regions and the STags of memory
 * windows (xiw_mw.c) share the index space.
 */
int xiw_mem_stag_add(struct xiw_device *xdev, struct xiw_mr *mr, u8 key)
{
	u32 idx;
	int rv;

	if (!mr->digest)
		mr->digest = XIW_DIGEST_CRC32C;
	refcount_set(&mr->ref, 1);
	init_completion(&mr->free);
	rv = xa_alloc_cyclic(&xdev->mr_xa, &idx, mr,
			     XA_LIMIT(1, XIW_STAG_INDEX_MAX), &xdev->mr_next,
			     GFP_KERNEL);
	if (rv < 0)
		return rv;
	mr->stag = (idx << XIW_STAG_KEY_BITS) | key;
	mr->base.lkey = mr->stag;
	mr->base.rkey = mr->stag;
	return 0;
}

static int xiw_mr_add(struct xiw_device *xdev, struct xiw_mr *mr,
		      struct xiw_pd *pd, enum xiw_mr_type type, int access,
		      u8 key)
{
	int rv;

	if (access & ~XIW_MR_ACCESS_SUPPORTED) {
		xiw_dbg(&xdev->ibdev, "unsupported access flags %#x\n",
			access & ~XIW_MR_ACCESS_SUPPORTED);
		return -EINVAL;
	}
	rv = xiw_verbs_obj_count_get(&xdev->ibdev, &xdev->num_mr, XIW_MAX_MR, "MRs");
	if (rv)
		return rv;
	mr->type = type;
	mr->pd = pd;
	mr->access = access;
	rv = xiw_mem_stag_add(xdev, mr, key);
	if (rv)
		atomic_dec(&xdev->num_mr);
	return rv;
}

/*
 * Unpublish the STag and wait for the data path's references. They last
 * one FPDU, which a peer can stretch without limit (see
 * xiw_dp_revoke_mr()): after XIW_MR_DRAIN_MS the connections still
 * holding the region are ended, and waiting goes on until they let go.
 * The data path also keeps regions from a lookup to a later use
 * (xiw_mr_reuse(): RX between a message's FPDUs, IRQ and ORQ entries):
 * those references are taken back at once (xiw_dp_release_mr()).
 * Invalid first, so that a kept region is refused when it is checked
 * again instead of looked up.
 */
void xiw_mem_stag_remove(struct xiw_device *xdev, struct xiw_mr *mr)
{
	WRITE_ONCE(mr->valid, false);
	xa_erase(&xdev->mr_xa, mr->stag >> XIW_STAG_KEY_BITS);
	xiw_mr_put(mr);
	if (!try_wait_for_completion(&mr->free)) {
		xiw_dp_release_mr(xdev, mr);
		while (!wait_for_completion_timeout(&mr->free,
						    msecs_to_jiffies(XIW_MR_DRAIN_MS)))
			xiw_dp_revoke_mr(xdev, mr);
	}
}

struct xiw_mr *xiw_mr_get(struct xiw_device *xdev, u32 stag)
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

void xiw_mr_put(struct xiw_mr *mr)
{
	if (refcount_dec_and_test(&mr->ref))
		complete(&mr->free);
}

struct ib_mr *xiw_get_dma_mr(struct ib_pd *ibpd, int access)
{
	struct xiw_device *xdev = to_xiw_dev(ibpd->device);
	struct xiw_mr *mr;
	int rv;

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	rv = xiw_mr_add(xdev, mr, to_xiw_pd(ibpd), XIW_MR_DMA, access,
			get_random_u8());
	if (rv) {
		kfree(mr);
		return ERR_PTR(rv);
	}
	mr->base.iova = 0;
	mr->base.length = U64_MAX;
	mr->valid = true;
	return &mr->base;
}

/* Page array of a user MR, so the data path finds a page in O(1). */
static int xiw_mr_pin_pages(struct xiw_mr *mr)
{
	unsigned long n = ib_umem_num_pages(mr->umem), i = 0;
	struct sg_page_iter piter;

	mr->upages = kvcalloc(n, sizeof(*mr->upages), GFP_KERNEL);
	if (!mr->upages)
		return -ENOMEM;
	for_each_sgtable_page(&mr->umem->sgt_append.sgt, &piter, 0) {
		if (i == n)
			break;
		mr->upages[i++] = sg_page_iter_page(&piter);
	}
	mr->nupages = i;
	return 0;
}

/* REG_MR driver data: struct xiw_ureq_reg_mr, or a prefix of it. */
/* May an MR of @ibdev digest with @digest (Verify)? */
static bool xiw_mem_digest_ok(struct ib_device *ibdev, u8 digest)
{
	return digest < XIW_DIGEST_NUM &&
	       (to_xiw_dev(ibdev)->digests & BIT(digest));
}

/* Is @page persistent memory (what a Flush P may write back)? */
bool xiw_mem_page_is_pmem(struct page *page)
{
	return region_intersects(page_to_phys(page), PAGE_SIZE, IORESOURCE_MEM,
				 IORES_DESC_PERSISTENT_MEMORY) ==
	       REGION_INTERSECTS;
}

/*
 * User MR registration (process context) asking for
 * IB_ACCESS_FLUSH_PERSISTENT: all pinned pages persistent memory? A GiB
 * of device-dax is a quarter of a million pages: yield every MiB.
 */
static bool xiw_mem_pages_are_pmem(struct page **pages, unsigned long n)
{
	unsigned long i;

	for (i = 0; i < n; i++) {
		if (!xiw_mem_page_is_pmem(pages[i]))
			return false;
		if (!((i + 1) % (SZ_1M >> PAGE_SHIFT)))
			cond_resched();
	}
	return n > 0;
}

static int xiw_reg_mr_udata(struct ib_device *ibdev, struct ib_udata *udata,
			    struct xiw_ureq_reg_mr *ureq)
{
	size_t n = min(udata->inlen, sizeof(*ureq));

	if (udata->inlen > sizeof(*ureq) &&
	    !ib_is_udata_cleared(udata, sizeof(*ureq),
				 udata->inlen - sizeof(*ureq))) {
		xiw_dbg(ibdev, "unknown driver request data\n");
		return -EINVAL;
	}
	if (ib_copy_from_udata(ureq, udata, n))
		return -EFAULT;
	if (ureq->access_ext &
	    ~(XIW_ACCESS_FLUSH_GLOBAL | XIW_ACCESS_FLUSH_PERSISTENT)) {
		xiw_dbg(ibdev, "REG_MR request: unknown access_ext %#x\n",
			ureq->access_ext);
		return -EINVAL;
	}
	if (ureq->digest && !xiw_mem_digest_ok(ibdev, ureq->digest)) {
		xiw_dbg(ibdev, "REG_MR request: Verify digest %u unknown or unavailable\n",
			ureq->digest);
		return -EINVAL;
	}
	return 0;
}

/*
 * xiw_kapi.h: the Verify digest of a kernel MR, before its STag is used.
 */
int xiw_mr_set_digest(struct ib_mr *ibmr, enum xiw_digest digest)
{
	if (!xiw_ibdev_is_xiw(ibmr->device))
		return -EINVAL;
	if (digest == XIW_DIGEST_DEFAULT)
		digest = XIW_DIGEST_CRC32C;
	if (!xiw_mem_digest_ok(ibmr->device, digest))
		return -EINVAL;
	WRITE_ONCE(to_xiw_mr(ibmr)->digest, digest);
	return 0;
}
EXPORT_SYMBOL_GPL(xiw_mr_set_digest);

struct ib_mr *xiw_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 len,
			      u64 va, int access, struct ib_udata *udata)
{
	struct xiw_device *xdev = to_xiw_dev(ibpd->device);
	struct xiw_ureq_reg_mr ureq = {};
	struct ib_umem *umem;
	struct xiw_mr *mr;
	int rv;

	if (!len || len > XIW_MAX_MR_SIZE) {
		xiw_dbg(ibpd->device, "MR length %llu not in 1..%llu\n", len,
			XIW_MAX_MR_SIZE);
		return ERR_PTR(-EINVAL);
	}
	if (va + len < va) {
		xiw_dbg(ibpd->device, "MR iova range wraps\n");
		return ERR_PTR(-EINVAL);
	}
	if (udata && udata->inlen) {
		rv = xiw_reg_mr_udata(ibpd->device, udata, &ureq);
		if (rv)
			return ERR_PTR(rv);
		access |= ureq.access_ext;	/* the Flush rights */
	}
	if (access & ~XIW_MR_ACCESS_SUPPORTED) {
		xiw_dbg(ibpd->device, "unsupported access flags %#x\n",
			access & ~XIW_MR_ACCESS_SUPPORTED);
		return ERR_PTR(-EINVAL);
	}

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	umem = ib_umem_get(ibpd->device, start, len, access);
	if (IS_ERR(umem)) {
		rv = PTR_ERR(umem);
		xiw_dbg(ibpd->device, "cannot pin %llu bytes: %d\n", len, rv);
		goto err_free;
	}
	mr->umem = umem;
	rv = xiw_mr_pin_pages(mr);
	if (rv)
		goto err_umem;
	if ((access & IB_ACCESS_FLUSH_PERSISTENT) &&
	    !xiw_mem_pages_are_pmem(mr->upages, mr->nupages)) {
		xiw_dbg(ibpd->device,
			"IB_ACCESS_FLUSH_PERSISTENT on memory that is not persistent memory\n");
		rv = -EINVAL;
		goto err_umem;
	}
	mr->digest = ureq.digest ? ureq.digest : XIW_DIGEST_CRC32C;
	rv = xiw_mr_add(xdev, mr, to_xiw_pd(ibpd), XIW_MR_USER, access,
			get_random_u8());
	if (rv)
		goto err_umem;
	mr->base.iova = va;
	mr->base.length = len;
	mr->valid = true;
	return &mr->base;

err_umem:
	kvfree(mr->upages);
	ib_umem_release(umem);
err_free:
	kfree(mr);
	return ERR_PTR(rv);
}

struct ib_mr *xiw_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			   u32 max_sg)
{
	struct xiw_device *xdev = to_xiw_dev(ibpd->device);
	struct xiw_mr *mr;
	int rv;

	if (type != IB_MR_TYPE_MEM_REG) {
		xiw_dbg(ibpd->device, "MR type %d unsupported\n", type);
		return ERR_PTR(-EINVAL);
	}
	if (!max_sg || max_sg > XIW_MAX_FR_PAGES) {
		xiw_dbg(ibpd->device, "max_sg %u not in 1..%u\n", max_sg,
			XIW_MAX_FR_PAGES);
		return ERR_PTR(-EINVAL);
	}
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->pages = kcalloc(max_sg, sizeof(*mr->pages), GFP_KERNEL);
	if (!mr->pages) {
		rv = -ENOMEM;
		goto err_free;
	}
	mr->max_pages = max_sg;
	/* Invalid until a REG_MR work request makes it valid. */
	rv = xiw_mr_add(xdev, mr, to_xiw_pd(ibpd), XIW_MR_FRMR, 0, 0);
	if (rv)
		goto err_free;
	return &mr->base;

err_free:
	kfree(mr->pages);
	kfree(mr);
	return ERR_PTR(rv);
}

static int xiw_set_page(struct ib_mr *ibmr, u64 addr)
{
	struct xiw_mr *mr = to_xiw_mr(ibmr);

	if (mr->npages == mr->max_pages)
		return -ENOMEM;
	mr->pages[mr->npages++] = addr;
	return 0;
}

int xiw_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int nents,
		  unsigned int *sg_off)
{
	struct xiw_mr *mr = to_xiw_mr(ibmr);

	mr->npages = 0;
	return ib_sg_to_pages(ibmr, sg, nents, sg_off, xiw_set_page);
}

int xiw_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct xiw_device *xdev = to_xiw_dev(ibmr->device);
	struct xiw_mr *mr = to_xiw_mr(ibmr);
	int bound;

	/*
	 * The verbs refuse to deregister a region with memory windows bound
	 * to it. From here on no bind can start (xiw_mw_bind()).
	 */
	bound = atomic_cmpxchg(&mr->mw_bound, 0, INT_MIN);
	if (bound) {
		xiw_dbg(ibmr->device, "MR %#x: %d memory windows bound\n",
			mr->stag, bound);
		return -EBUSY;
	}
	xiw_mem_stag_remove(xdev, mr);
	atomic_dec(&xdev->num_mr);
	ib_umem_release(mr->umem);
	kvfree(mr->upages);
	kfree(mr->pages);
	kfree_rcu(mr, rcu);
	return 0;
}

/*
 * Data path helpers. All of them run in any context (softirq included):
 * xiw_mr_get() is RCU + refcount, the checks read fields that only
 * registration (before the STag is visible) and the QP's own fast-reg /
 * invalidate work requests change, with READ_ONCE/WRITE_ONCE.
 */

/*
 * Check an access of @len bytes at @va through @mr for a QP in @pd.
 * @access: 0 for a local read (always allowed), else IB_ACCESS_* bits
 * that must all be granted. Checks in RFC 5040 order: state, PD, rights,
 * wrap, bounds.
 */
enum xiw_mem_err xiw_mr_check(struct xiw_mr *mr, struct xiw_pd *pd,
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
 * Resolve @stag for an access of @len bytes at @va with @access rights
 * by @who. Returns the MR with a reference held (drop with xiw_mr_put())
 * or NULL with *@err set. A memory window's STag is checked as the window
 * (its state, PD, QP, rights and range) and gives the region under it
 * (xiw_mw_resolve()), at the same addresses: so a region returned here is
 * never a window, and a caller that keeps it for a later access of the
 * same STag (xiw_mr_reuse(), xiw_mr_cached()) sees that the region's own
 * STag differs and asks again.
 */
struct xiw_mr *xiw_mr_resolve(struct xiw_device *xdev,
			      const struct xiw_mem_user *who, u32 stag,
			      int access, u64 va, u64 len,
			      enum xiw_mem_err *err)
{
	struct xiw_mr *mr;

	if (stag >> XIW_STAG_KEY_BITS == 0) {
		*err = XIW_MEM_INV_STAG;
		return NULL;
	}
	mr = xiw_mr_get(xdev, stag);
	if (!mr) {
		*err = XIW_MEM_INV_STAG;
		return NULL;
	}
	if (mr->type == XIW_MR_MW)
		return xiw_mw_resolve(mr, stag, who, access, va, len, err);
	*err = xiw_mr_check(mr, who->pd, access, va, len);
	if (*err != XIW_MEM_OK) {
		xiw_mr_put(mr);
		return NULL;
	}
	return mr;
}

/*
 * xiw_mr_resolve() for a data path that kept the region of an earlier
 * lookup of @stag (@kept, its reference held, or NULL; consumed either
 * way): the kept region if a lookup would still give it and it allows
 * the access (the STag still names it, then xiw_mr_check()), else a fresh
 * lookup, so the verdict is always the lookup's. A region being
 * deregistered is invalid before its STag is unpublished
 * (xiw_mem_stag_remove()), so it is never reused.
 */
struct xiw_mr *xiw_mr_reuse(struct xiw_device *xdev,
			    const struct xiw_mem_user *who, struct xiw_mr *kept,
			    u32 stag, int access, u64 va, u64 len,
			    enum xiw_mem_err *err)
{
	if (kept) {
		if (READ_ONCE(kept->stag) == stag &&
		    xiw_mr_check(kept, who->pd, access, va, len) ==
		    XIW_MEM_OK) {
			*err = XIW_MEM_OK;
			return kept;
		}
		xiw_mr_put(kept);
	}
	return xiw_mr_resolve(xdev, who, stag, access, va, len, err);
}

/*
 * xiw_mr_resolve() through a one-region cache a data path keeps
 * (@cache: its own reference held, or NULL): the cached region if the
 * STag still names it and it allows the access (the verdict a lookup
 * would give, as in xiw_mr_reuse()), else a lookup whose region then
 * replaces the cached one. Either way the caller gets a reference of its
 * own. STag index 0 never hits (no region has it: xiw_mr_add()) and
 * the lookup refuses it. A stream of requests naming one STag (a ULP's buffer, perftest's
 * region) so takes a reference instead of an RCU walk of the STag xarray
 * each. The cache's holder drops it when the region is deregistered
 * (xiw_dp_release_mr()) and when the data path ends.
 */
struct xiw_mr *xiw_mr_cached(struct xiw_device *xdev,
			     const struct xiw_mem_user *who,
			     struct xiw_mr **cache, u32 stag, int access,
			     u64 va, u64 len, enum xiw_mem_err *err)
{
	struct xiw_mr *mr = *cache;

	if (mr && READ_ONCE(mr->stag) == stag) {
		*err = xiw_mr_check(mr, who->pd, access, va, len);
		if (*err != XIW_MEM_OK)
			return NULL;
		refcount_inc(&mr->ref);
		return mr;
	}
	mr = xiw_mr_resolve(xdev, who, stag, access, va, len, err);
	if (!mr)
		return NULL;
	if (*cache)
		xiw_mr_put(*cache);
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
 * xiw_mr_access_begin() .. xiw_mr_access_end(), that checks the STag
 * again (the region's own, or the window that named it: xiw_mw_grants())
 * after announcing itself in mr->accessing; and an invalidation marks the
 * STag invalid, then waits until no section is open on the region
 * (xiw_mr_fence()) before it reports its completion. Either the section
 * sees the STag invalid, or the invalidation sees the section and waits
 * for it: both sides order their store before their load with a full
 * barrier. A section copies at most an FPDU or a chunk, never sleeps and
 * runs with bottom halves off, so the wait is short, and an invalidation
 * that runs in softirq never waits for a section it interrupted.
 */
enum xiw_mem_err xiw_mr_access_begin(struct xiw_device *xdev,
				     const struct xiw_mem_user *who,
				     struct xiw_mr *mr, u32 stag, int access,
				     u64 va, u64 len)
{
	enum xiw_mem_err err;

	local_bh_disable();
	atomic_inc(&mr->accessing);
	/* pairs with the barrier in xiw_mr_fence() */
	smp_mb__after_atomic();
	if (READ_ONCE(mr->stag) == stag)
		err = xiw_mr_check(mr, who->pd, access, va, len);
	else
		err = xiw_mw_grants(xdev, who, mr, stag, access, va, len);
	if (err != XIW_MEM_OK)
		xiw_mr_access_end(mr);
	return err;
}

void xiw_mr_access_end(struct xiw_mr *mr)
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
void xiw_mr_fence(struct xiw_mr *mr)
{
	/* the invalid state before the count (xiw_mr_access_begin()) */
	smp_mb();
	while (atomic_read_acquire(&mr->accessing))
		cpu_relax();
}

static struct page *xiw_kva_page(u64 kva, u32 *off, u32 *avail)
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
struct page *xiw_mr_page(struct xiw_mr *mr, u64 va, u32 *off, u32 *avail)
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
		return xiw_kva_page(mr->pages[idx] + o, off, avail);
	}
	default:
		*avail = PAGE_SIZE;
		return xiw_kva_page(va, off, avail);
	}
}

/*
 * IB_WR_REG_MR: make a fast-registration MR valid with @key and @access.
 * map_mr_sg() has set iova, length and the page list. Only the QP's own
 * TX engine calls this, one work request at a time.
 */
int xiw_mr_fast_reg(struct xiw_mr *mr, struct xiw_pd *pd, u32 key,
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
 * (xiw_mw_inv_check()). 0, -ENOENT or -EACCES.
 */
static int xiw_mr_inv_check(struct xiw_mr *mr, u32 stag,
			    const struct xiw_mem_user *who, bool remote)
{
	if (mr->type == XIW_MR_MW)
		return xiw_mw_inv_check(mr, stag, who, remote);
	if (mr->type != XIW_MR_FRMR || mr->pd != who->pd ||
	    (remote && !READ_ONCE(mr->valid)))
		return -EACCES;
	return 0;
}

int xiw_mr_may_invalidate(struct xiw_device *xdev,
			  const struct xiw_mem_user *who, u32 stag)
{
	struct xiw_mr *mr = xiw_mr_get(xdev, stag);
	int rv;

	if (!mr)
		return -ENOENT;
	rv = xiw_mr_inv_check(mr, stag, who, true);
	xiw_mr_put(mr);
	return rv;
}

/*
 * Local (IB_WR_LOCAL_INV, READ_WITH_INV) or remote (Send with Invalidate,
 * the Invalidate STag of a Flush, Verify or Atomic Write Request)
 * invalidation of @stag by @who: xiw_mr_inv_check(). A memory window
 * is unbound from its region too (xiw_mw_invalidate()).
 */
int xiw_mr_invalidate(struct xiw_device *xdev, const struct xiw_mem_user *who,
		      u32 stag, bool remote)
{
	struct xiw_mr *mr = xiw_mr_get(xdev, stag);
	int rv;

	if (!mr)
		return -ENOENT;
	if (mr->type == XIW_MR_MW) {
		rv = xiw_mw_invalidate(mr, stag, who, remote);
	} else {
		rv = xiw_mr_inv_check(mr, stag, who, remote);
		if (!rv) {
			WRITE_ONCE(mr->valid, false);
			xiw_mr_fence(mr);
		}
	}
	xiw_mr_put(mr);
	return rv;
}
