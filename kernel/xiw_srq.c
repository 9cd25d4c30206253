// SPDX-License-Identifier: GPL-2.0
/*
 * xiw - shared receive queues.
 *
 * An SRQ is one receive ring in the user ABI format; QPs attached to it
 * have no RQ of their own. The limit event (IB_EVENT_SRQ_LIMIT_REACHED)
 * is armed through modify_srq(IB_SRQ_LIMIT) and fires once when the
 * number of posted receives drops below the limit.
 */
#include <rdma/uverbs_ioctl.h>

#include "xiw.h"

int xiw_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *attr,
		   struct ib_udata *udata)
{
	struct xiw_device *xdev = to_xiw_dev(ibsrq->device);
	struct xiw_srq *srq = to_xiw_srq(ibsrq);
	struct xiw_uresp_create_srq uresp = {};
	struct ib_srq_attr *a = &attr->attr;
	int rv;

	if (attr->srq_type != IB_SRQT_BASIC) {
		xiw_dbg(ibsrq->device, "SRQ type %d unsupported\n",
			attr->srq_type);
		return -EOPNOTSUPP;
	}
	if (!a->max_wr || a->max_wr > XIW_MAX_SRQ_WR ||
	    a->max_sge > XIW_MAX_SGE || a->srq_limit > a->max_wr) {
		xiw_dbg(ibsrq->device, "bad SRQ attrs wr %u sge %u limit %u\n",
			a->max_wr, a->max_sge, a->srq_limit);
		return -EINVAL;
	}
	rv = xiw_verbs_udata_resp_fits(ibsrq->device, udata, sizeof(uresp)) ?:
	     xiw_verbs_obj_count_get(ibsrq->device, &xdev->num_srq, XIW_MAX_SRQ,
				     "SRQs");
	if (rv)
		return rv;

	spin_lock_init(&srq->lock);
	srq->user = !!udata;
	srq->max_sge = a->max_sge;
	srq->limit = a->srq_limit;
	srq->armed = !!a->srq_limit;
	rv = xiw_queue_init(&srq->rq, udata, a->max_wr, sizeof(struct xiw_rqe),
			    &uresp.srq_key);
	if (rv)
		goto err_count;
	a->max_wr = srq->rq.num;

	if (udata) {
		uresp.num_rqe = srq->rq.num;
		rv = ib_copy_to_udata(udata, &uresp, sizeof(uresp));
		if (rv)
			goto err_queue;
	}
	return 0;

err_queue:
	xiw_queue_destroy(&srq->rq);
err_count:
	atomic_dec(&xdev->num_srq);
	return rv;
}

int xiw_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct xiw_srq *srq = to_xiw_srq(ibsrq);

	xiw_queue_destroy(&srq->rq);
	atomic_dec(&to_xiw_dev(ibsrq->device)->num_srq);
	return 0;
}

int xiw_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		   enum ib_srq_attr_mask mask, struct ib_udata *udata)
{
	struct xiw_srq *srq = to_xiw_srq(ibsrq);
	unsigned long flags;

	if (mask & IB_SRQ_MAX_WR) {
		/* IB_DEVICE_SRQ_RESIZE is not advertised. */
		xiw_dbg(ibsrq->device, "SRQ resize not supported\n");
		return -EINVAL;
	}
	if (mask & ~IB_SRQ_LIMIT) {
		xiw_dbg(ibsrq->device, "bad SRQ attr mask %#x\n", mask);
		return -EINVAL;
	}
	if (mask & IB_SRQ_LIMIT) {
		if (attr->srq_limit > srq->rq.num) {
			xiw_dbg(ibsrq->device, "SRQ limit %u > %u\n",
				attr->srq_limit, srq->rq.num);
			return -EINVAL;
		}
		spin_lock_irqsave(&srq->lock, flags);
		srq->limit = attr->srq_limit;
		srq->armed = !!attr->srq_limit;
		spin_unlock_irqrestore(&srq->lock, flags);
	}
	return 0;
}

int xiw_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct xiw_srq *srq = to_xiw_srq(ibsrq);
	unsigned long flags;

	spin_lock_irqsave(&srq->lock, flags);
	attr->max_wr = srq->rq.num;
	attr->max_sge = srq->max_sge;
	attr->srq_limit = srq->armed ? srq->limit : 0;
	spin_unlock_irqrestore(&srq->lock, flags);
	return 0;
}

int xiw_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
		      const struct ib_recv_wr **bad_wr)
{
	struct xiw_srq *srq = to_xiw_srq(ibsrq);
	unsigned long flags;
	int rv;

	if (srq->user) {
		xiw_dbg(ibsrq->device, "user SRQs post through the ring\n");
		*bad_wr = wr;
		return -EINVAL;
	}
	spin_lock_irqsave(&srq->lock, flags);
	rv = xiw_wq_post_recv(&srq->rq, wr, srq->max_sge, bad_wr);
	spin_unlock_irqrestore(&srq->lock, flags);
	if (rv)
		xiw_dbg(ibsrq->device, "post_srq_recv: %d\n", rv);
	return rv;
}
