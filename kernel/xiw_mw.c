// SPDX-License-Identifier: GPL-2.0
/*
 * xiw - memory windows (IBA 10.6.7; the STags of windows in RFC 5040).
 *
 * A window is an STag of its own that grants a peer access to a part of
 * a user memory region, with rights of its own. Its STag is a struct
 * xiw_mr of type XIW_MR_MW in the device's mr_xa, so lookups, keys,
 * validity and the state/PD/rights/bounds checks are those of every STag
 * (xiw_stag.c); struct xiw_mw holds what only a window has. This file
 * has the verbs, alloc and dealloc; what the data path does with a window
 * (binds, resolution, access sections, invalidation) is in xiw_stag.c.
 *
 * - alloc gives an unbound window: an invalid STag with a random key;
 * - a bind (XIW_OP_BIND_MW, run by the TX engine of the QP it was posted
 *   to, in send queue order: xiw_stag_mw_bind()) gives the window its range,
 *   rights and a new key, and counts it in the region's mw_bound, so
 *   that dereg_mr of the region fails while the window is bound;
 * - a peer's access through the window's STag is checked against the
 *   window alone (state, PD, for type 2 the QP it was bound through,
 *   rights, range: xiw_stag_mw_resolve()), never against the region's wider
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
 * Locking: a window's @lock, see xiw_stag.c.
 */
#include <linux/random.h>

#include "xiw.h"

static_assert((int)XIW_ACCESS_FLUSH_GLOBAL == (int)IB_ACCESS_FLUSH_GLOBAL);
static_assert((int)XIW_ACCESS_FLUSH_PERSISTENT ==
	      (int)IB_ACCESS_FLUSH_PERSISTENT);
static_assert((int)IB_UVERBS_ACCESS_REMOTE_ATOMIC ==
	      (int)IB_ACCESS_REMOTE_ATOMIC);

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

int xiw_dealloc_mw(struct ib_mw *ibmw)
{
	struct xiw_device *xdev = to_xiw_dev(ibmw->device);
	struct xiw_mw *mw = to_xiw_mw(ibmw);
	struct xiw_mr *stag = mw->stag;

	/*
	 * Unpublish first and wait for every reference: a bind or a
	 * resolution that found the window has ended then, and none can
	 * start, so the unbind below is the last word.
	 */
	xiw_mem_stag_remove(xdev, stag);
	xiw_stag_mw_unbind(mw);
	kfree_rcu(stag, rcu);
	atomic_dec(&xdev->num_mw);
	return 0;
}

