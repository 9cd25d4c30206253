// SPDX-License-Identifier: GPL-2.0
/*
 * xiw - memory regions: the registration verbs and the STag space.
 *
 * An STag is a 24-bit index into the device's mr_xa plus an 8-bit key
 * (RFC 5040 leaves the layout to the RNIC). Index 0 is never used, so
 * STag 0 and every STag below 0x100 name nothing and can never reach
 * memory from the wire. Indices are allocated cyclically so that a freed
 * STag is not handed out again soon.
 *
 * Registration publishes a region's STag (xiw_mem_stag_add()) and dereg
 * unpublishes it and waits for the data path's references
 * (xiw_mem_stag_remove()); the lookups, checks and access sections the
 * data path does between the two, and their RCU and locking rules, are
 * in xiw_stag.c. MR memory is freed after an RCU grace period.
 */
#include <linux/mm.h>
#include <linux/random.h>
#include <rdma/ib_umem.h>

#include "xiw.h"

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
 * xiw_llp_revoke_mr()): after XIW_MR_DRAIN_MS the connections still
 * holding the region are ended, and waiting goes on until they let go.
 * The data path also keeps regions from a lookup to a later use
 * (xiw_stag_reuse(): RX between a message's FPDUs, IRQ and ORQ entries):
 * those references are taken back at once (xiw_llp_release_mr()).
 * Invalid first, so that a kept region is refused when it is checked
 * again instead of looked up.
 */
void xiw_mem_stag_remove(struct xiw_device *xdev, struct xiw_mr *mr)
{
	WRITE_ONCE(mr->valid, false);
	xa_erase(&xdev->mr_xa, mr->stag >> XIW_STAG_KEY_BITS);
	xiw_stag_put(mr);
	if (!try_wait_for_completion(&mr->free)) {
		xiw_llp_release_mr(xdev, mr);
		while (!wait_for_completion_timeout(&mr->free,
						    msecs_to_jiffies(XIW_MR_DRAIN_MS)))
			xiw_llp_revoke_mr(xdev, mr);
	}
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

/*
 * User MR registration (process context) asking for
 * IB_ACCESS_FLUSH_PERSISTENT: all pinned pages persistent memory? A GiB
 * of device-dax is a quarter of a million pages: yield every MiB.
 */
static bool xiw_mem_pages_are_pmem(struct page **pages, unsigned long n)
{
	unsigned long i;

	for (i = 0; i < n; i++) {
		if (!xiw_stag_page_is_pmem(pages[i]))
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
	 * to it. From here on no bind can start (xiw_stag_mw_bind()).
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

