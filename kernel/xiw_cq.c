// SPDX-License-Identifier: GPL-2.0
/*
 * xiw - completion queues.
 *
 * The kernel is the only producer of every CQ. For a user CQ the process
 * is the consumer, directly in the mapped ring; for a kernel CQ poll_cq is.
 * Lockless protocol with a user consumer: the producer fills a slot whose
 * flags word is 0 and then store-releases flags with XIW_CQE_VALID; the
 * consumer load-acquires flags, copies the CQE and store-releases 0. A
 * slot whose flags are still non-zero when the producer reaches it means
 * the CQ overflowed: the CQE is dropped, ctrl->overflow is bumped and an
 * IB_EVENT_CQ_ERR is raised.
 *
 * Arming: the consumer sets XIW_CQ_ARM_NEXT or XIW_CQ_ARM_SOLICITED in
 * ctrl->flags (user CQs: a plain atomic store in shared memory, no
 * syscall). The producer clears the bits with cmpxchg when it raises the
 * completion event, so exactly one event is delivered per arming.
 * XIW_CQ_ARM_SOLICITED is satisfied by a receive of a message with the
 * Solicited Event bit and by any unsuccessful completion.
 */
#include <rdma/uverbs_ioctl.h>

#include "xiw.h"
#include "xiw_trace.h"

#define XIW_CQ_ARM_MASK (XIW_CQ_ARM_NEXT | XIW_CQ_ARM_SOLICITED)

int xiw_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		  struct uverbs_attr_bundle *attrs)
{
	struct ib_udata *udata = attrs ? &attrs->driver_udata : NULL;
	struct xiw_device *xdev = to_xiw_dev(ibcq->device);
	struct xiw_cq *cq = to_xiw_cq(ibcq);
	struct xiw_uresp_create_cq uresp = {};
	int rv;

	if (attr->flags) {
		xiw_dbg(ibcq->device, "unsupported CQ flags %#x\n",
			attr->flags);
		return -EOPNOTSUPP;
	}
	if (attr->cqe < 1 || attr->cqe > XIW_MAX_CQE) {
		xiw_dbg(ibcq->device, "CQ size %u not in 1..%u\n", attr->cqe,
			XIW_MAX_CQE);
		return -EINVAL;
	}
	if (attr->comp_vector >= ibcq->device->num_comp_vectors) {
		xiw_dbg(ibcq->device, "completion vector %u out of range\n",
			attr->comp_vector);
		return -EINVAL;
	}
	rv = xiw_verbs_udata_resp_fits(ibcq->device, udata, sizeof(uresp)) ?:
	     xiw_verbs_obj_count_get(ibcq->device, &xdev->num_cq, XIW_MAX_CQ, "CQs");
	if (rv)
		return rv;

	spin_lock_init(&cq->lock);
	cq->user = !!udata;
	rv = xiw_queue_init(&cq->q, udata, attr->cqe, sizeof(struct xiw_cqe),
			    &uresp.cq_key);
	if (rv)
		goto err_count;
	if (!cq->user) {
		cq->kqp = kvcalloc(cq->q.num, sizeof(*cq->kqp), GFP_KERNEL);
		if (!cq->kqp) {
			rv = -ENOMEM;
			goto err_queue;
		}
	}
	ibcq->cqe = cq->q.num;

	if (udata) {
		uresp.cq_id = ibcq->res.id;
		uresp.num_cqe = cq->q.num;
		rv = ib_copy_to_udata(udata, &uresp, sizeof(uresp));
		if (rv)
			goto err_queue;
	}
	return 0;

err_queue:
	kvfree(cq->kqp);
	xiw_queue_destroy(&cq->q);
err_count:
	atomic_dec(&xdev->num_cq);
	return rv;
}

int xiw_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct xiw_cq *cq = to_xiw_cq(ibcq);

	kvfree(cq->kqp);
	xiw_queue_destroy(&cq->q);
	atomic_dec(&to_xiw_dev(ibcq->device)->num_cq);
	return 0;
}

/*
 * Clear the arm bits that a new CQE satisfies; true if an event is due.
 * The word may be user memory that a process rewrites concurrently, so the
 * cmpxchg loop is bounded; giving up means one spurious event, which the
 * verbs semantics allow.
 */
static bool xiw_cq_disarm(u32 *arm, bool solicited)
{
	u32 old = READ_ONCE(*arm), cur;
	int tries = 8;

	while (tries--) {
		if (!(old & XIW_CQ_ARM_NEXT) &&
		    !(solicited && (old & XIW_CQ_ARM_SOLICITED)))
			return false;
		cur = cmpxchg(arm, old, old & ~XIW_CQ_ARM_MASK);
		if (cur == old)
			return true;
		old = cur;
	}
	return true;
}

/* Run the consumer's completion handler. Call with no xiw lock held. */
void xiw_cq_notify(struct xiw_cq *cq)
{
	if (cq->base.comp_handler)
		cq->base.comp_handler(&cq->base, cq->base.cq_context);
}

/*
 * Add one completion. Callable from any context; takes cq->lock.
 * Returns -ENOSPC if the CQ overflowed. The completion handler runs from
 * here, so the caller must not hold a lock that a consumer posting from
 * its handler takes (SQ/RQ locks, dp->lock): such callers use
 * __xiw_cq_add() and xiw_cq_notify() once they dropped their locks.
 */
int xiw_cq_add(struct xiw_cq *cq, struct xiw_qp *qp,
	       const struct xiw_cqe *cqe, bool solicited)
{
	bool notify = false;
	int rv = __xiw_cq_add(cq, qp, cqe, solicited, &notify);

	if (notify)
		xiw_cq_notify(cq);
	return rv;
}

/* xiw_cq_add() without the handler: sets *@notify if it is due. */
int __xiw_cq_add(struct xiw_cq *cq, struct xiw_qp *qp,
		 const struct xiw_cqe *cqe, bool solicited, bool *notify)
{
	struct xiw_cqe *slot;
	unsigned long flags;
	bool event;

	trace_xiw_cqe(cq, qp, cqe);
	spin_lock_irqsave(&cq->lock, flags);
	slot = xiw_queue_entry(&cq->q, cq->q.prod);
	if (READ_ONCE(slot->flags)) {
		WRITE_ONCE(cq->q.ctrl->overflow,
			   READ_ONCE(cq->q.ctrl->overflow) + 1);
		spin_unlock_irqrestore(&cq->lock, flags);
		if (cq->base.event_handler) {
			struct ib_event ev = {
				.device = cq->base.device,
				.event = IB_EVENT_CQ_ERR,
				.element.cq = &cq->base,
			};

			cq->base.event_handler(&ev, cq->base.cq_context);
		}
		return -ENOSPC;
	}
	slot->wr_id = cqe->wr_id;
	slot->opcode = cqe->opcode;
	slot->status = cqe->status;
	slot->vendor_err = cqe->vendor_err;
	slot->vendor_code = cqe->vendor_code;
	slot->byte_len = cqe->byte_len;
	slot->qp_num = qp->base.qp_num;
	slot->imm = cqe->imm;
	if (cq->kqp)
		cq->kqp[cq->q.prod & (cq->q.num - 1)] = &qp->base;
	xiw_cqe_flags_release(&slot->flags, cqe->flags | XIW_CQE_VALID);
	cq->q.prod++;

	/* Order the CQE before reading the consumer's arm request. */
	smp_mb();
	/*
	 * An unsuccessful completion satisfies a solicited-only arming too
	 * (the verbs definition of a solicited CQE): a consumer sleeping on
	 * solicited events must learn that its QP failed.
	 */
	event = xiw_cq_disarm(cq->user ? &cq->q.ctrl->flags : &cq->kernel_arm,
			      solicited || cqe->status != IB_WC_SUCCESS);
	spin_unlock_irqrestore(&cq->lock, flags);

	if (event)
		*notify = true;
	return 0;
}

static void xiw_cqe_to_wc(const struct xiw_cqe *cqe, struct ib_qp *qp,
			  struct ib_wc *wc)
{
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = cqe->wr_id;
	wc->status = cqe->status;
	wc->opcode = cqe->opcode;
	wc->vendor_err = (u32)cqe->vendor_err << 8 | cqe->vendor_code;
	wc->byte_len = cqe->byte_len;
	wc->qp = qp;
	wc->port_num = XIW_PORT;
	if (cqe->flags & XIW_CQE_WITH_IMM) {
		wc->wc_flags |= IB_WC_WITH_IMM;
		wc->ex.imm_data = cpu_to_be32(lower_32_bits(cqe->imm));
	} else if (cqe->flags & XIW_CQE_WITH_INV) {
		wc->wc_flags |= IB_WC_WITH_INVALIDATE;
		wc->ex.invalidate_rkey = cqe->inv_stag;
	}
}

int xiw_poll_cq(struct ib_cq *ibcq, int num, struct ib_wc *wc)
{
	struct xiw_cq *cq = to_xiw_cq(ibcq);
	struct xiw_cqe *slot;
	unsigned long flags;
	int n;

	if (cq->user) {
		/* Reached only through a hand-made uverbs POLL_CQ command. */
		xiw_dbg(ibcq->device, "user CQs are polled in user space\n");
		return -EINVAL;
	}
	spin_lock_irqsave(&cq->lock, flags);
	for (n = 0; n < num; n++) {
		u32 idx = cq->q.cons & (cq->q.num - 1);

		slot = xiw_queue_entry(&cq->q, idx);
		if (!(xiw_cqe_flags_acquire(&slot->flags) & XIW_CQE_VALID))
			break;
		xiw_cqe_to_wc(slot, cq->kqp[idx], &wc[n]);
		cq->kqp[idx] = NULL;
		xiw_cqe_flags_release(&slot->flags, 0);
		cq->q.cons++;
	}
	spin_unlock_irqrestore(&cq->lock, flags);
	return n;
}

int xiw_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags nflags)
{
	struct xiw_cq *cq = to_xiw_cq(ibcq);
	u32 arm = (nflags & IB_CQ_SOLICITED_MASK) == IB_CQ_SOLICITED ?
		  XIW_CQ_ARM_SOLICITED : XIW_CQ_ARM_NEXT;
	u32 *word = cq->user ? &cq->q.ctrl->flags : &cq->kernel_arm;
	unsigned long flags;
	struct xiw_cqe *slot;
	bool missed = false;
	int tries = 8;
	u32 old;

	spin_lock_irqsave(&cq->lock, flags);
	do {
		old = READ_ONCE(*word);
	} while (cmpxchg(word, old, (old & ~XIW_CQ_ARM_MASK) | arm) != old &&
		 --tries);
	if (!cq->user && (nflags & IB_CQ_REPORT_MISSED_EVENTS)) {
		/* Pairs with the smp_mb() in xiw_cq_add(). */
		smp_mb();
		slot = xiw_queue_entry(&cq->q, cq->q.cons);
		missed = READ_ONCE(slot->flags) & XIW_CQE_VALID;
	}
	spin_unlock_irqrestore(&cq->lock, flags);
	return missed ? 1 : 0;
}
