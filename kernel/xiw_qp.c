// SPDX-License-Identifier: GPL-2.0
/*
 * xiw - queue pairs: create/destroy/query, the QP state machine, posting
 * work requests of kernel consumers into the rings, and flushing.
 *
 * IB verbs states map onto the iWARP (RDMAC) QP states like this:
 *
 *	IB_QPS_RESET		Idle, queues empty; posting is an error
 *	IB_QPS_INIT, _RTR	Idle; work requests may be posted, they wait
 *	IB_QPS_RTS		RTS; only entered with an LLP (TCP) connection
 *				handed over by the connection manager
 *	IB_QPS_SQD		Closing (graceful close in progress)
 *	IB_QPS_SQE		Terminate (Terminate message sent/received)
 *	IB_QPS_ERR		Error; every WR completes with WR_FLUSH_ERR
 *
 * The SQ and RQ of every QP are rings in the user ABI format; for a user
 * QP the process is the producer and posts without a syscall, the kernel
 * is the consumer. The kernel copies every entry out of a user ring before
 * it looks at it and never derives a memory access from an unchecked
 * field.
 */
#include <rdma/uverbs_ioctl.h>

#include "xiw.h"

static const char * const xiw_qps_name[] = {
	[XIW_QPS_IDLE_RESET] = "Idle(RESET)",	[XIW_QPS_IDLE] = "Idle(INIT)",
	[XIW_QPS_IDLE_RTR] = "Idle(RTR)",	[XIW_QPS_RTS] = "RTS",
	[XIW_QPS_CLOSING] = "Closing",		[XIW_QPS_TERMINATE] = "Terminate",
	[XIW_QPS_ERROR] = "Error",
};

static const enum ib_qp_state xiw_to_ib_qps[] = {
	[XIW_QPS_IDLE_RESET] = IB_QPS_RESET,	[XIW_QPS_IDLE] = IB_QPS_INIT,
	[XIW_QPS_IDLE_RTR] = IB_QPS_RTR,	[XIW_QPS_RTS] = IB_QPS_RTS,
	[XIW_QPS_CLOSING] = IB_QPS_SQD,	[XIW_QPS_TERMINATE] = IB_QPS_SQE,
	[XIW_QPS_ERROR] = IB_QPS_ERR,
};

void xiw_qp_get(struct ib_qp *ibqp)
{
	refcount_inc(&to_xiw_qp(ibqp)->ref);
}

void xiw_qp_put(struct ib_qp *ibqp)
{
	struct xiw_qp *qp = to_xiw_qp(ibqp);

	if (refcount_dec_and_test(&qp->ref))
		complete(&qp->free);
}

/*
 * QP numbers and lookups. Numbers are allocated cyclically, so a number a
 * consumer still holds after its QP was destroyed names no other QP for a
 * long while (XIW_QPN_MAX allocations).
 *
 * create_qp reserves its number first and stores the QP there only once
 * nothing can fail any more (its response is in user space): a QP whose
 * create fails was never visible to a lookup or a walk of qp_xa.
 *
 * xiw_qp_lookup() takes a reference under the xarray's lock. destroy_qp
 * erases the entry before it drops the QP's own reference, so an entry
 * found under that lock always has a reference left: a lookup never
 * revives a QP whose count reached zero. A QP being destroyed (state
 * ERROR, no longer in the xarray once destroy_qp got that far) is not
 * found.
 */
struct xiw_qp *xiw_qp_lookup(struct xiw_device *xdev, u32 qpn)
{
	struct xiw_qp *qp;

	xa_lock(&xdev->qp_xa);
	qp = xa_load(&xdev->qp_xa, qpn);
	if (qp && !refcount_inc_not_zero(&qp->ref))
		qp = NULL;
	xa_unlock(&xdev->qp_xa);
	return qp;
}

/*
 * iw_cm's get_qp and add_ref: iwcm.c calls get_qp and, when it returns a
 * QP, add_ref right after it, in one section under its cm_id spinlock.
 * get_qp returns with the lookup's reference (taken under the xarray's
 * lock) and counts it in iw_handoff; the add_ref that follows takes that
 * reference over instead of taking one of its own. So the QP is
 * referenced from the lookup to iw_cm's rem_ref without a gap, and
 * destroy_qp, which erases the QP before it drops the QP's own reference,
 * needs no grace period to let such a connect or accept finish. An
 * add_ref with no get_qp before it takes a reference of its own.
 */
struct ib_qp *xiw_get_qp(struct ib_device *ibdev, int qpn)
{
	struct xiw_qp *qp;

	if (qpn <= 0)
		return NULL;
	qp = xiw_qp_lookup(to_xiw_dev(ibdev), qpn);
	if (!qp)
		return NULL;
	atomic_inc(&qp->iw_handoff);
	return &qp->base;
}

void xiw_qp_iw_add_ref(struct ib_qp *ibqp)
{
	struct xiw_qp *qp = to_xiw_qp(ibqp);

	if (!atomic_add_unless(&qp->iw_handoff, -1, 0))
		refcount_inc(&qp->ref);
}

static int xiw_qp_check_caps(struct ib_device *ibdev,
			     struct ib_qp_init_attr *attr)
{
	struct ib_qp_cap *cap = &attr->cap;

	if (attr->qp_type != IB_QPT_RC) {
		xiw_dbg(ibdev, "QP type %d unsupported, iWARP is RC only\n",
			attr->qp_type);
		return -EOPNOTSUPP;
	}
	if (attr->create_flags) {
		xiw_dbg(ibdev, "unsupported create flags %#x\n",
			attr->create_flags);
		return -EOPNOTSUPP;
	}
	if (!attr->send_cq || !attr->recv_cq) {
		xiw_dbg(ibdev, "send and receive CQ required\n");
		return -EINVAL;
	}
	if (attr->sq_sig_type != IB_SIGNAL_ALL_WR &&
	    attr->sq_sig_type != IB_SIGNAL_REQ_WR) {
		xiw_dbg(ibdev, "bad sq_sig_type %d\n", attr->sq_sig_type);
		return -EINVAL;
	}
	/*
	 * max_send_wr 0 is a receive-only QP (qperf's server side asks for
	 * one): it gets a one-slot SQ, as any size is rounded up. RTR and
	 * Terminate frames and Read Responses never take SQ slots.
	 */
	if (cap->max_send_wr > XIW_MAX_QP_WR ||
	    cap->max_send_sge > XIW_MAX_SGE ||
	    cap->max_inline_data > XIW_MAX_INLINE) {
		xiw_dbg(ibdev, "bad SQ caps wr %u sge %u inline %u\n",
			cap->max_send_wr, cap->max_send_sge,
			cap->max_inline_data);
		return -EINVAL;
	}
	if (!attr->srq && (cap->max_recv_wr > XIW_MAX_QP_WR ||
			   cap->max_recv_sge > XIW_MAX_SGE)) {
		xiw_dbg(ibdev, "bad RQ caps wr %u sge %u\n", cap->max_recv_wr,
			cap->max_recv_sge);
		return -EINVAL;
	}
	return 0;
}

int xiw_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *attr,
		  struct ib_udata *udata)
{
	struct xiw_device *xdev = to_xiw_dev(ibqp->device);
	struct xiw_qp *qp = to_xiw_qp(ibqp);
	struct xiw_uresp_create_qp uresp = {
		.rq_key = XIW_INVAL_MMAP_KEY,
	};
	u32 qpn;
	int rv;

	rv = xiw_qp_check_caps(ibqp->device, attr);
	if (rv)
		return rv;
	rv = xiw_verbs_udata_resp_fits(ibqp->device, udata, sizeof(uresp)) ?:
	     xiw_verbs_obj_count_get(ibqp->device, &xdev->num_qp, XIW_MAX_QP, "QPs");
	if (rv)
		return rv;

	refcount_set(&qp->ref, 1);
	init_completion(&qp->free);
	mutex_init(&qp->state_lock);
	spin_lock_init(&qp->sq_lock);
	spin_lock_init(&qp->rq_lock);
	/*
	 * iWARP (RDMAC) verbs create a QP in Idle, which is IB's INIT (siw
	 * reports it so too): query_qp right after create says INIT.
	 */
	qp->state = XIW_QPS_IDLE;
	qp->user = !!udata;
	qp->pd = to_xiw_pd(ibqp->pd);
	qp->scq = to_xiw_cq(attr->send_cq);
	qp->rcq = to_xiw_cq(attr->recv_cq);
	qp->srq = attr->srq ? to_xiw_srq(attr->srq) : NULL;
	qp->sq_sig_type = attr->sq_sig_type;

	rv = xiw_queue_init(&qp->sq, udata, attr->cap.max_send_wr,
			    sizeof(struct xiw_sqe), &uresp.sq_key);
	if (rv)
		goto err_count;
	qp->max_send_sge = attr->cap.max_send_sge;
	qp->max_inline = XIW_MAX_INLINE;

	if (!qp->srq) {
		rv = xiw_queue_init(&qp->rq, udata, attr->cap.max_recv_wr,
				    sizeof(struct xiw_rqe), &uresp.rq_key);
		if (rv)
			goto err_sq;
		qp->max_recv_sge = attr->cap.max_recv_sge;
	}

	/*
	 * Reserve the number only (a NULL entry): xa_load() and
	 * xa_for_each() see no QP at a reserved index, so neither a lookup
	 * (iw_cm's get_qp) nor a walk of qp_xa reaches the QP yet. It is
	 * stored there below, once nothing can fail any more: ib_core frees
	 * a QP whose create failed at once, without the grace period and
	 * the wait for references that xiw_destroy_qp() gives a published
	 * one.
	 */
	rv = xa_alloc_cyclic(&xdev->qp_xa, &qpn, NULL, XA_LIMIT(1, XIW_QPN_MAX),
			     &xdev->qp_next, GFP_KERNEL);
	if (rv < 0)
		goto err_rq;
	rv = 0;
	ibqp->qp_num = qpn;

	/* Report what was really allocated. */
	attr->cap.max_send_wr = qp->sq.num;
	attr->cap.max_inline_data = qp->max_inline;
	if (!qp->srq)
		attr->cap.max_recv_wr = qp->rq.num;

	if (udata) {
		/* only this process may connect it (xiw_qp_caller_owns()) */
		qp->owner = get_pid(task_tgid(current));
		/* its connection's memory is charged there (xiw_qp_gfp()) */
		qp->memcg = get_mem_cgroup_from_mm(current->mm);
		uresp.qp_id = qpn;
		uresp.num_sqe = qp->sq.num;
		uresp.num_rqe = qp->srq ? 0 : qp->rq.num;
		rv = ib_copy_to_udata(udata, &uresp, sizeof(uresp));
		if (rv)
			goto err_xa;
	}
	/* Publish. The reserved slot exists: storing into it allocates nothing. */
	rv = xa_err(xa_store(&xdev->qp_xa, qpn, qp, GFP_KERNEL));
	if (rv)
		goto err_xa;
	xiw_qp_dbg(qp, "created (%s), sq %u rq %u\n",
		   udata ? "user" : "kernel", qp->sq.num,
		   qp->srq ? 0 : qp->rq.num);
	return 0;

err_xa:
	mem_cgroup_put(qp->memcg);
	put_pid(qp->owner);
	/* the reservation; nothing found the QP there */
	xa_erase(&xdev->qp_xa, qpn);
err_rq:
	if (!qp->srq)
		xiw_queue_destroy(&qp->rq);
err_sq:
	xiw_queue_destroy(&qp->sq);
err_count:
	atomic_dec(&xdev->num_qp);
	return rv;
}

static void xiw_queue_set_error(struct xiw_queue *q, bool error)
{
	if (!q->ctrl)
		return;
	/*
	 * In error the doorbell must ring again (it flushes what is posted
	 * from now on), so XIW_SQ_KERNEL_ACTIVE goes with it.
	 */
	if (error)
		xiw_ctrl_update(&q->ctrl->flags, XIW_QUEUE_ERROR,
				XIW_SQ_KERNEL_ACTIVE);
	else
		xiw_ctrl_update(&q->ctrl->flags, 0, XIW_QUEUE_ERROR);
}

/* Caller holds state_lock. */
static void xiw_qp_enter_error(struct xiw_qp *qp)
{
	enum xiw_qp_state old = qp->state;

	WRITE_ONCE(qp->state, XIW_QPS_ERROR);
	xiw_queue_set_error(&qp->sq, true);
	if (!qp->srq)
		xiw_queue_set_error(&qp->rq, true);
	/* Posters that saw the old state must see ERROR before flushing. */
	smp_mb();
	/* WRs the data path took from the SQ are older: flush them first. */
	xiw_llp_flush(qp, false);
	xiw_flush_sq(qp, false);
	xiw_flush_rq(qp, false);
	if (qp->srq && old != XIW_QPS_IDLE_RESET)
		xiw_qp_event(qp, IB_EVENT_QP_LAST_WQE_REACHED);
}

/*
 * The data path lost its connection (Terminate sent or received, TCP
 * error, LLP closed): a connected QP goes to ERROR. Process context.
 */
void xiw_qp_llp_error_state_locked(struct xiw_qp *qp)
{
	lockdep_assert_held(&qp->state_lock);
	if (qp->state == XIW_QPS_RTS || qp->state == XIW_QPS_CLOSING ||
	    qp->state == XIW_QPS_TERMINATE) {
		xiw_qp_dbg(qp, "%s -> Error (LLP)\n", xiw_qps_name[qp->state]);
		xiw_qp_enter_error(qp);
	}
}

/*
 * The data-path core asks, the QP decides (state_lock held by the caller
 * for all of these): may a connection start on it, it is connected (RTS),
 * is it closing gracefully, and the data path goes away.
 */
bool xiw_qp_llp_may_start_locked(struct xiw_qp *qp)
{
	lockdep_assert_held(&qp->state_lock);
	return qp->state == XIW_QPS_IDLE || qp->state == XIW_QPS_IDLE_RTR;
}

void xiw_qp_llp_enter_rts_locked(struct xiw_qp *qp)
{
	lockdep_assert_held(&qp->state_lock);
	xiw_qp_dbg(qp, "%s -> RTS (LLP)\n", xiw_qps_name[qp->state]);
	WRITE_ONCE(qp->state, XIW_QPS_RTS);
}

bool xiw_qp_llp_closing_locked(struct xiw_qp *qp)
{
	lockdep_assert_held(&qp->state_lock);
	return qp->state == XIW_QPS_CLOSING;
}

/* A connected QP goes to ERROR; otherwise the data path's WRs are flushed. */
void xiw_qp_llp_down_locked(struct xiw_qp *qp)
{
	lockdep_assert_held(&qp->state_lock);
	if (qp->state == XIW_QPS_RTS || qp->state == XIW_QPS_CLOSING ||
	    qp->state == XIW_QPS_TERMINATE)
		xiw_qp_llp_error_state_locked(qp);
	else
		xiw_llp_flush(qp, false);
}

void xiw_qp_llp_error_state(struct xiw_qp *qp)
{
	mutex_lock(&qp->state_lock);
	xiw_qp_llp_error_state_locked(qp);
	mutex_unlock(&qp->state_lock);
}

static int xiw_ib_to_qps(enum ib_qp_state s, enum xiw_qp_state *out)
{
	switch (s) {
	case IB_QPS_RESET:
		*out = XIW_QPS_IDLE_RESET;
		return 0;
	case IB_QPS_INIT:
		*out = XIW_QPS_IDLE;
		return 0;
	case IB_QPS_RTR:
		*out = XIW_QPS_IDLE_RTR;
		return 0;
	case IB_QPS_RTS:
		*out = XIW_QPS_RTS;
		return 0;
	case IB_QPS_SQD:
		*out = XIW_QPS_CLOSING;
		return 0;
	case IB_QPS_SQE:
		*out = XIW_QPS_TERMINATE;
		return 0;
	case IB_QPS_ERR:
		*out = XIW_QPS_ERROR;
		return 0;
	default:
		return -EINVAL;
	}
}

/* Is @from -> @to a transition the verbs consumer may ask for? */
static bool xiw_qps_transition_ok(struct xiw_qp *qp, enum xiw_qp_state from,
				  enum xiw_qp_state to)
{
	switch (to) {
	case XIW_QPS_IDLE_RESET:
		return true;
	case XIW_QPS_IDLE:
		return from == XIW_QPS_IDLE_RESET || from == XIW_QPS_IDLE;
	case XIW_QPS_IDLE_RTR:
		return from == XIW_QPS_IDLE || from == XIW_QPS_IDLE_RTR;
	case XIW_QPS_RTS:
		/*
		 * Idle -> RTS needs the LLP connection, which only the
		 * connection manager hands over. RTS -> RTS is a no-op.
		 */
		return from == XIW_QPS_RTS;
	case XIW_QPS_CLOSING:
	case XIW_QPS_TERMINATE:
		return from == XIW_QPS_RTS;
	case XIW_QPS_ERROR:
		return true;
	}
	return false;
}

#define XIW_QP_ATTR_SUPPORTED (IB_QP_STATE | IB_QP_CUR_STATE | \
	IB_QP_ACCESS_FLAGS | IB_QP_PKEY_INDEX | IB_QP_PORT | \
	IB_QP_MAX_QP_RD_ATOMIC | IB_QP_MAX_DEST_RD_ATOMIC | \
	IB_QP_EN_SQD_ASYNC_NOTIFY)

#define XIW_QP_ACCESS_SUPPORTED (IB_ACCESS_LOCAL_WRITE | \
	IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ | \
	IB_ACCESS_REMOTE_ATOMIC)

/*
 * The state query_qp reports, and IB_QP_CUR_STATE is checked against: a
 * connected QP whose data path failed is in ERROR for its consumer from
 * the moment the failure is known, before err_work has moved it there. A
 * requester that polled the Terminate's completion or got QP_FATAL and
 * then queries its QP sees ERROR, as on an RNIC.
 */
static enum ib_qp_state xiw_qp_ib_state_locked(struct xiw_qp *qp)
{
	if ((qp->state == XIW_QPS_RTS || qp->state == XIW_QPS_CLOSING) &&
	    xiw_llp_failed_locked(qp))
		return IB_QPS_ERR;
	return xiw_to_ib_qps[qp->state];
}

int xiw_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		  struct ib_udata *udata)
{
	struct xiw_qp *qp = to_xiw_qp(ibqp);
	enum xiw_qp_state cur, next;
	struct xiw_cep *cep = NULL;
	bool abort = false;
	int rv = 0;

	if (mask & ~XIW_QP_ATTR_SUPPORTED) {
		xiw_qp_dbg(qp, "unsupported attribute mask %#x\n",
			   mask & ~XIW_QP_ATTR_SUPPORTED);
		return -EOPNOTSUPP;
	}
	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen)) {
		xiw_qp_dbg(qp, "unknown driver request data\n");
		return -EINVAL;
	}
	if ((mask & IB_QP_ACCESS_FLAGS) &&
	    (attr->qp_access_flags & ~XIW_QP_ACCESS_SUPPORTED)) {
		xiw_qp_dbg(qp, "unsupported access flags %#x\n",
			   attr->qp_access_flags);
		return -EINVAL;
	}
	if ((mask & IB_QP_PORT) && attr->port_num != XIW_PORT) {
		xiw_qp_dbg(qp, "bad port %u\n", attr->port_num);
		return -EINVAL;
	}
	if ((mask & IB_QP_PKEY_INDEX) && attr->pkey_index) {
		xiw_qp_dbg(qp, "bad pkey index %u\n", attr->pkey_index);
		return -EINVAL;
	}
	if ((mask & IB_QP_MAX_QP_RD_ATOMIC) &&
	    attr->max_rd_atomic > XIW_MAX_ORD) {
		xiw_qp_dbg(qp, "ORD %u > %u\n", attr->max_rd_atomic,
			   XIW_MAX_ORD);
		return -EINVAL;
	}
	if ((mask & IB_QP_MAX_DEST_RD_ATOMIC) &&
	    attr->max_dest_rd_atomic > XIW_MAX_IRD) {
		xiw_qp_dbg(qp, "IRD %u > %u\n", attr->max_dest_rd_atomic,
			   XIW_MAX_IRD);
		return -EINVAL;
	}

	mutex_lock(&qp->state_lock);
	cur = qp->state;
	if ((mask & IB_QP_CUR_STATE) &&
	    attr->cur_qp_state != xiw_qp_ib_state_locked(qp)) {
		xiw_qp_dbg(qp, "current state is %s, not %d\n",
			   xiw_qps_name[cur], attr->cur_qp_state);
		rv = -EINVAL;
		goto out;
	}
	next = cur;
	if (mask & IB_QP_STATE) {
		rv = xiw_ib_to_qps(attr->qp_state, &next);
		/*
		 * iw_cm asks for SQD (graceful close) of a QP whose
		 * connection may be closing or gone already: a no-op.
		 */
		if (!rv && next == XIW_QPS_CLOSING &&
		    (cur == XIW_QPS_CLOSING || cur == XIW_QPS_TERMINATE ||
		     cur == XIW_QPS_ERROR))
			next = cur;
		if (rv || (next != cur &&
			   !xiw_qps_transition_ok(qp, cur, next))) {
			xiw_qp_dbg(qp, "transition %s -> %d refused%s\n",
				   xiw_qps_name[cur], attr->qp_state,
				   next == XIW_QPS_RTS ?
				   " (no LLP connection)" : "");
			rv = -EINVAL;
			goto out;
		}
	}

	if (mask & IB_QP_ACCESS_FLAGS)
		WRITE_ONCE(qp->access, attr->qp_access_flags);	/* RX reads it */
	if (mask & IB_QP_MAX_QP_RD_ATOMIC)
		qp->ord = attr->max_rd_atomic;
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC)
		qp->ird = attr->max_dest_rd_atomic;

	if (next == cur)
		goto out;
	xiw_qp_dbg(qp, "%s -> %s\n", xiw_qps_name[cur], xiw_qps_name[next]);
	/* Leaving RTS closes the LLP connection: gracefully to CLOSING. */
	if (cur == XIW_QPS_RTS && qp->cep &&
	    (next == XIW_QPS_CLOSING || next == XIW_QPS_ERROR))
		cep = qp->cep;
	/* A QP in RESET has no connection: abort whatever is left of it. */
	if (next == XIW_QPS_IDLE_RESET && qp->cep) {
		cep = qp->cep;
		abort = true;
	}
	switch (next) {
	case XIW_QPS_ERROR:
		xiw_qp_enter_error(qp);
		break;
	case XIW_QPS_IDLE_RESET:
		/*
		 * Anything still queued is discarded without completion, and
		 * the data path (if still attached) stops executing the
		 * peer's requests now, not when the connection is gone.
		 */
		WRITE_ONCE(qp->state, XIW_QPS_IDLE_RESET);
		xiw_queue_set_error(&qp->sq, true);
		if (!qp->srq)
			xiw_queue_set_error(&qp->rq, true);
		/* as in xiw_qp_enter_error(): posters see it before the flush */
		smp_mb();
		xiw_llp_flush(qp, true);
		xiw_flush_sq(qp, true);
		xiw_flush_rq(qp, true);
		xiw_queue_set_error(&qp->sq, false);
		if (!qp->srq)
			xiw_queue_set_error(&qp->rq, false);
		break;
	default:
		WRITE_ONCE(qp->state, next);
		break;
	}
	/* Only posts an event; the CEP lives while qp->cep points to it. */
	if (cep)
		xiw_cm_qp_disconnect(cep, abort || next == XIW_QPS_ERROR);
out:
	mutex_unlock(&qp->state_lock);
	return rv;
}

int xiw_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		 struct ib_qp_init_attr *init)
{
	struct xiw_qp *qp = to_xiw_qp(ibqp);

	memset(attr, 0, sizeof(*attr));
	memset(init, 0, sizeof(*init));

	mutex_lock(&qp->state_lock);
	attr->qp_state = xiw_qp_ib_state_locked(qp);
	attr->cur_qp_state = attr->qp_state;
	attr->qp_access_flags = qp->access;
	attr->max_rd_atomic = qp->ord;
	attr->max_dest_rd_atomic = qp->ird;
	/* connected: what MPA negotiated (rdma_cm never sets them on iWARP) */
	xiw_llp_ord_ird_locked(qp, &attr->max_rd_atomic,
			       &attr->max_dest_rd_atomic);
	mutex_unlock(&qp->state_lock);

	attr->port_num = XIW_PORT;
	attr->path_mtu = IB_MTU_4096;
	attr->cap.max_send_wr = qp->sq.num;
	attr->cap.max_send_sge = qp->max_send_sge;
	attr->cap.max_inline_data = qp->max_inline;
	if (!qp->srq) {
		attr->cap.max_recv_wr = qp->rq.num;
		attr->cap.max_recv_sge = qp->max_recv_sge;
	}

	init->event_handler = ibqp->event_handler;
	init->qp_context = ibqp->qp_context;
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->srq = ibqp->srq;
	init->cap = attr->cap;
	init->sq_sig_type = qp->sq_sig_type;
	init->qp_type = IB_QPT_RC;
	return 0;
}

int xiw_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct xiw_device *xdev = to_xiw_dev(ibqp->device);
	struct xiw_qp *qp = to_xiw_qp(ibqp);
	bool graceful;

	/* No doorbell reaches the QP from now on (xiw_doorbell.c). */
	xiw_doorbell_detach(qp);

	mutex_lock(&qp->state_lock);
	/*
	 * Connected: the CM closes the connection and lets the QP go. If the
	 * consumer already asked for a graceful close (rdma_disconnect, then
	 * destroy at once: the common teardown) it stays graceful - an abort
	 * would reset the connection and drop what TCP still holds of WRs
	 * that completed.
	 */
	graceful = qp->state == XIW_QPS_CLOSING;
	qp->state = XIW_QPS_ERROR;
	if (qp->cep)
		xiw_cm_qp_disconnect(qp->cep, !graceful);
	mutex_unlock(&qp->state_lock);

	xa_erase(&xdev->qp_xa, ibqp->qp_num);
	/*
	 * Lookups take their reference under the xarray's lock, iw_cm's
	 * get_qp included (xiw_get_qp()): none can find the QP from here
	 * on, and what found it before holds a reference. Wait for the
	 * connection manager and the data path to let go.
	 */
	xiw_qp_put(ibqp);
	wait_for_completion(&qp->free);

	xiw_queue_destroy(&qp->sq);
	if (!qp->srq)
		xiw_queue_destroy(&qp->rq);
	/* the data path is gone: nothing is charged through it any more */
	mem_cgroup_put(qp->memcg);
	put_pid(qp->owner);
	mutex_destroy(&qp->state_lock);
	atomic_dec(&xdev->num_qp);
	return 0;
}

/*
 * May the caller connect or accept with user QP @qp? rdma_cm lets a
 * process name any QP number: a user QP only by the process that created
 * it. Kernel QPs are checked against the rdma_cm id (xiw_cm_check_qp()).
 */
bool xiw_qp_caller_owns(struct xiw_qp *qp)
{
	return !qp->user || task_tgid(current) == qp->owner;
}

/* Connected QPs go to ERROR when their netdev goes down. */
void xiw_qp_dev_to_error(struct xiw_device *xdev)
{
	struct xiw_qp *qp;
	unsigned long index;

	xa_lock(&xdev->qp_xa);
	xa_for_each(&xdev->qp_xa, index, qp) {
		if (!refcount_inc_not_zero(&qp->ref))
			continue;
		xa_unlock(&xdev->qp_xa);

		mutex_lock(&qp->state_lock);
		if (qp->state >= XIW_QPS_RTS && qp->state != XIW_QPS_ERROR)
			xiw_qp_enter_error(qp);
		/* the connection goes with the QP: RST, no half-open socket */
		if (qp->cep)
			xiw_cm_qp_disconnect(qp->cep, true);
		mutex_unlock(&qp->state_lock);
		xiw_qp_put(&qp->base);

		xa_lock(&xdev->qp_xa);
	}
	xa_unlock(&xdev->qp_xa);
}

static int xiw_copy_inline(struct xiw_sqe *sqe, const struct ib_send_wr *wr,
			   u32 max)
{
	u32 len = 0;
	int i;

	for (i = 0; i < wr->num_sge; i++) {
		u32 n = wr->sg_list[i].length;

		if (n > max - len)
			return -EINVAL;
		memcpy(sqe->inline_data + len,
		       (void *)(uintptr_t)wr->sg_list[i].addr, n);
		len += n;
	}
	sqe->num_sge = len;
	sqe->flags |= XIW_WQE_INLINE;
	return 0;
}

/* RFC 7306 atomics: operands in the SQE, the result buffer is sge[0]. */
static void xiw_atomic_wr_to_sqe(struct xiw_sqe *sqe,
				 const struct ib_send_wr *wr)
{
	const struct ib_atomic_wr *a = atomic_wr(wr);

	switch (wr->opcode) {
	case IB_WR_ATOMIC_CMP_AND_SWP:
		sqe->opcode = XIW_OP_ATOMIC_CSWAP;
		break;
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		sqe->opcode = XIW_OP_ATOMIC_FADD;
		break;
	case IB_WR_MASKED_ATOMIC_CMP_AND_SWP:
		sqe->opcode = XIW_OP_ATOMIC_MASKED_CSWAP;
		break;
	default:
		sqe->opcode = XIW_OP_ATOMIC_MASKED_FADD;
		break;
	}
	sqe->rkey = a->rkey;
	sqe->raddr = a->remote_addr;
	sqe->atomic.compare_add = a->compare_add;
	sqe->atomic.swap = a->swap;
	sqe->atomic.compare_add_mask = a->compare_add_mask;
	sqe->atomic.swap_mask = a->swap_mask;
}

/*
 * Build the SQE of a kernel consumer's WR: the verbs mapping is here, the
 * rules every SQE obeys are the contract of <rdma/xiw-sqe.h>, which the
 * TX engine applies again to what it takes from the ring.
 */
static int xiw_send_wr_to_sqe(struct xiw_qp *qp, struct xiw_sqe *sqe,
			      const struct ib_send_wr *wr)
{
	const struct xiw_sqe_limits lim = {
		.max_sge = qp->max_send_sge,
		.max_inline = qp->max_inline,
	};
	const struct xiw_sqe_rule *r;
	int i;

	BUILD_BUG_ON(offsetof(struct xiw_sqe, atomic.sge) !=
		     offsetof(struct xiw_sqe, sge[0]));
	memset(sqe, 0, sizeof(*sqe));
	sqe->wr_id = wr->wr_id;
	if ((wr->send_flags & IB_SEND_SIGNALED) ||
	    qp->sq_sig_type == IB_SIGNAL_ALL_WR)
		sqe->flags |= XIW_WQE_SIGNALED;
	if (wr->send_flags & IB_SEND_SOLICITED)
		sqe->flags |= XIW_WQE_SOLICITED;
	if (wr->send_flags & IB_SEND_FENCE)
		sqe->flags |= XIW_WQE_READ_FENCE;

	switch (wr->opcode) {
	case IB_WR_SEND:
		sqe->opcode = XIW_OP_SEND;
		break;
	case IB_WR_SEND_WITH_INV:
		sqe->opcode = XIW_OP_SEND_INV;
		sqe->rkey = wr->ex.invalidate_rkey;
		break;
	case IB_WR_RDMA_WRITE:
		sqe->opcode = XIW_OP_WRITE;
		sqe->rkey = rdma_wr(wr)->rkey;
		sqe->raddr = rdma_wr(wr)->remote_addr;
		break;
	case IB_WR_RDMA_READ:
	case IB_WR_RDMA_READ_WITH_INV:
		sqe->opcode = wr->opcode == IB_WR_RDMA_READ ?
			      XIW_OP_READ : XIW_OP_READ_INV;
		sqe->rkey = rdma_wr(wr)->rkey;
		sqe->raddr = rdma_wr(wr)->remote_addr;
		if (wr->opcode == IB_WR_RDMA_READ_WITH_INV)
			sqe->imm = wr->ex.invalidate_rkey;
		break;
	case IB_WR_RDMA_WRITE_WITH_IMM:
		sqe->opcode = XIW_OP_WRITE_IMM;
		sqe->rkey = rdma_wr(wr)->rkey;
		sqe->raddr = rdma_wr(wr)->remote_addr;
		/* 32-bit verbs immediate: low half of the RFC 7306 one */
		sqe->imm = be32_to_cpu(wr->ex.imm_data);
		break;
	case IB_WR_ATOMIC_CMP_AND_SWP:
	case IB_WR_ATOMIC_FETCH_AND_ADD:
	case IB_WR_MASKED_ATOMIC_CMP_AND_SWP:
	case IB_WR_MASKED_ATOMIC_FETCH_AND_ADD:
		xiw_atomic_wr_to_sqe(sqe, wr);
		break;
	case IB_WR_REG_MR:
		sqe->opcode = XIW_OP_REG_MR;
		sqe->raddr = (uintptr_t)reg_wr(wr)->mr;
		sqe->rkey = reg_wr(wr)->key;
		sqe->imm = reg_wr(wr)->access;
		break;
	case IB_WR_LOCAL_INV:
		sqe->opcode = XIW_OP_LOCAL_INV;
		sqe->rkey = wr->ex.invalidate_rkey;
		break;
	default:
		/* e.g. SEND_WITH_IMM: RFC 7306 has Immediate Data only alone */
		xiw_qp_dbg(qp, "work request opcode %d unsupported\n",
			   wr->opcode);
		return -EINVAL;
	}

	/* Local operations have no buffer: sg_list and INLINE mean nothing. */
	r = xiw_sqe_op_rule(sqe->opcode);
	if (r->kind == XIW_SQE_KIND_LOCAL)
		goto check;
	if (wr->num_sge < 0 || wr->num_sge > qp->max_send_sge) {
		xiw_qp_dbg(qp, "%d SGEs > %u\n", wr->num_sge,
			   qp->max_send_sge);
		return -EINVAL;
	}
	if (wr->send_flags & IB_SEND_INLINE) {
		sqe->flags |= XIW_WQE_INLINE;
		/* the check below refuses INLINE where the contract does */
		if ((r->flags & XIW_SQE_INLINE) &&
		    xiw_copy_inline(sqe, wr, qp->max_inline))
			return -EINVAL;
		goto check;
	}
	for (i = 0; i < wr->num_sge; i++) {
		sqe->sge[i].addr = wr->sg_list[i].addr;
		sqe->sge[i].length = wr->sg_list[i].length;
		sqe->sge[i].lkey = wr->sg_list[i].lkey;
	}
	sqe->num_sge = wr->num_sge;
check:
	if (xiw_sqe_check(sqe, sqe->flags, &lim, false)) {
		xiw_qp_dbg(qp, "WR opcode %d: SQE %u, %u SGEs%s refused\n",
			   wr->opcode, sqe->opcode, sqe->num_sge,
			   sqe->flags & XIW_WQE_INLINE ? " (inline)" : "");
		return -EINVAL;
	}
	return 0;
}

/*
 * SQ doorbell of a user QP whose process has written its SQ ring: from the
 * legacy zero-WR POST_SEND (below) or the doorbell file (xiw_doorbell.c).
 * May sleep: TX runs in the caller's context when it can, or, for a
 * poster in a burst (@burst, XIW_DOORBELL_SQ_BATCH), on another CPU.
 */
void xiw_qp_sq_doorbell(struct xiw_qp *qp, bool burst)
{
	enum xiw_qp_state state = READ_ONCE(qp->state);

	xiw_qp_stat_add(qp, XIW_STAT_DOORBELLS, 1);
	if (state == XIW_QPS_ERROR)
		xiw_flush_sq(qp, false);
	else if (state == XIW_QPS_RTS)
		xiw_dp_sq_kick(qp, burst);
}

/*
 * Off by default: handing kernel posts to the TX work on another CPU
 * multiplies a loaded ULP's IOPS but makes a lone request wait for the
 * hop (a lone post that may not sleep is sent at once anyway,
 * xiw_sched_post_alone()); on, every post is sent in the poster's
 * context (NEWS, "Kernel posts on the next CPU";
 * Documentation/architecture.md, "Kernel posts").
 */
static bool kernel_tx_inline;
module_param(kernel_tx_inline, bool, 0644);
MODULE_PARM_DESC(kernel_tx_inline,
		 "every kernel ULP post sends in the poster's context (lower latency at queue depth 1) instead of on the TX work of another CPU (default off: more throughput under load)");

/*
 * A kernel consumer put WRs on the SQ: flush them if the QP is in ERROR
 * (a WR posted then completes with WR_FLUSH_ERR), else hand TX to the
 * work item on another CPU (xiw_sched_defer(): the consumer goes on and
 * its next WRs leave in the same batch), or send here: a lone post that
 * may not sleep, or every post with kernel_tx_inline.
 */
static void xiw_qp_sq_posted(struct xiw_qp *qp)
{
	enum xiw_qp_state state;

	/* Pairs with the smp_mb() in xiw_qp_enter_error(). */
	smp_mb();
	state = READ_ONCE(qp->state);
	if (state == XIW_QPS_ERROR)
		xiw_flush_sq(qp, false);
	else if (state == XIW_QPS_RTS)
		xiw_dp_sq_kick(qp, !READ_ONCE(kernel_tx_inline));
}

/*
 * Post send WRs of a kernel consumer, or, with @wr == NULL, the doorbell
 * of a user QP.
 */
int xiw_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		  const struct ib_send_wr **bad_wr)
{
	struct xiw_qp *qp = to_xiw_qp(ibqp);
	enum xiw_qp_state state = READ_ONCE(qp->state);
	unsigned long flags;
	int rv = 0;

	if (qp->user) {
		if (wr) {
			xiw_qp_dbg(qp, "user QPs post through the SQ ring\n");
			*bad_wr = wr;
			return -EINVAL;
		}
		xiw_qp_sq_doorbell(qp, false);
		return 0;
	}
	if (state == XIW_QPS_IDLE_RESET) {
		xiw_qp_dbg(qp, "post_send in RESET\n");
		*bad_wr = wr;
		return -EINVAL;
	}

	spin_lock_irqsave(&qp->sq_lock, flags);
	for (; wr; wr = wr->next) {
		struct xiw_sqe sqe;

		if (xiw_wq_full(&qp->sq)) {
			xiw_qp_dbg(qp, "SQ full\n");
			rv = -ENOMEM;
			break;
		}
		rv = xiw_send_wr_to_sqe(qp, &sqe, wr);
		if (rv)
			break;
		xiw_wq_post(&qp->sq, &sqe);
	}
	spin_unlock_irqrestore(&qp->sq_lock, flags);
	if (rv)
		*bad_wr = wr;
	xiw_qp_sq_posted(qp);
	return rv;
}

/*
 * xiw_kapi.h: post one SQE built by the kernel API below on a kernel QP,
 * with the contract check and the kick ib_post_send() applies.
 */
static int xiw_post_kapi(struct ib_qp *ibqp, struct xiw_sqe *sqe,
			 unsigned int send_flags)
{
	struct xiw_sqe_limits lim;
	struct xiw_qp *qp;
	unsigned long flags;
	int rv = 0;

	if (!ibqp || !xiw_ibdev_is_xiw(ibqp->device))
		return -EINVAL;
	qp = to_xiw_qp(ibqp);
	if (qp->user || READ_ONCE(qp->state) == XIW_QPS_IDLE_RESET) {
		xiw_qp_dbg(qp, "kernel API: not a kernel QP, or in RESET\n");
		return -EINVAL;
	}
	if (send_flags & ~(IB_SEND_SIGNALED | IB_SEND_FENCE)) {
		xiw_qp_dbg(qp, "kernel API: send flags %#x\n", send_flags);
		return -EINVAL;
	}
	if ((send_flags & IB_SEND_SIGNALED) ||
	    qp->sq_sig_type == IB_SIGNAL_ALL_WR)
		sqe->flags |= XIW_WQE_SIGNALED;
	if (send_flags & IB_SEND_FENCE)
		sqe->flags |= XIW_WQE_READ_FENCE;
	lim.max_sge = qp->max_send_sge;
	lim.max_inline = qp->max_inline;
	if (xiw_sqe_check(sqe, sqe->flags, &lim, false)) {
		xiw_qp_dbg(qp, "kernel API: SQE opcode %u refused\n",
			   sqe->opcode);
		return -EINVAL;
	}
	spin_lock_irqsave(&qp->sq_lock, flags);
	if (xiw_wq_full(&qp->sq))
		rv = -ENOMEM;
	else
		xiw_wq_post(&qp->sq, sqe);
	spin_unlock_irqrestore(&qp->sq_lock, flags);
	xiw_qp_sq_posted(qp);
	return rv;
}

int xiw_post_flush(struct ib_qp *qp, u64 wr_id, u32 rkey, u64 raddr,
		   u64 len, u8 type, u8 level, unsigned int send_flags)
{
	struct xiw_sqe sqe = {
		.wr_id = wr_id, .opcode = XIW_OP_FLUSH,
		.rkey = rkey, .raddr = raddr,
	};

	BUILD_BUG_ON(XIW_FLUSH_TYPE_GLOBAL != IB_FLUSH_GLOBAL);
	BUILD_BUG_ON(XIW_FLUSH_TYPE_PERSISTENT != IB_FLUSH_PERSISTENT);
	BUILD_BUG_ON(XIW_FLUSH_LEVEL_RANGE != IB_FLUSH_RANGE);
	BUILD_BUG_ON(XIW_FLUSH_LEVEL_MR != IB_FLUSH_MR);
	BUILD_BUG_ON(XIW_ACCESS_FLUSH_GLOBAL != IB_ACCESS_FLUSH_GLOBAL);
	BUILD_BUG_ON(XIW_ACCESS_FLUSH_PERSISTENT != IB_ACCESS_FLUSH_PERSISTENT);
	sqe.flush.length = len;
	sqe.flush.type = type;
	sqe.flush.level = level;
	return xiw_post_kapi(qp, &sqe, send_flags);
}
EXPORT_SYMBOL_GPL(xiw_post_flush);

int xiw_post_atomic_write(struct ib_qp *qp, u64 wr_id, u32 rkey, u64 raddr,
			  u64 value, unsigned int send_flags)
{
	struct xiw_sqe sqe = {
		.wr_id = wr_id, .opcode = XIW_OP_ATOMIC_WRITE,
		.rkey = rkey, .raddr = raddr,
	};

	sqe.atomic_write = value;
	return xiw_post_kapi(qp, &sqe, send_flags);
}
EXPORT_SYMBOL_GPL(xiw_post_atomic_write);

int xiw_post_verify(struct ib_qp *qp, u64 wr_id, u32 rkey, u64 raddr,
		    u32 len, const void *hash, u8 hash_len,
		    const struct ib_sge *digest, unsigned int send_flags)
{
	struct xiw_sqe sqe = {
		.wr_id = wr_id, .opcode = XIW_OP_VERIFY,
		.rkey = rkey, .raddr = raddr,
	};

	if (hash_len > XIW_VERIFY_MAX_HASH || (hash_len && !hash))
		return -EINVAL;
	sqe.verify.length = len;
	sqe.verify.hash_len = hash_len;
	if (hash_len)
		memcpy(sqe.verify.hash, hash, hash_len);
	if (digest) {
		sqe.verify.sge.addr = digest->addr;
		sqe.verify.sge.length = digest->length;
		sqe.verify.sge.lkey = digest->lkey;
		sqe.num_sge = 1;
	}
	return xiw_post_kapi(qp, &sqe, send_flags);
}
EXPORT_SYMBOL_GPL(xiw_post_verify);

int xiw_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		  const struct ib_recv_wr **bad_wr)
{
	struct xiw_qp *qp = to_xiw_qp(ibqp);
	enum xiw_qp_state state = READ_ONCE(qp->state);
	unsigned long flags;
	int rv = 0;

	if (qp->srq) {
		xiw_qp_dbg(qp, "QP has an SRQ\n");
		*bad_wr = wr;
		return -EINVAL;
	}
	if (qp->user) {
		if (wr) {
			xiw_qp_dbg(qp, "user QPs post through the RQ ring\n");
			*bad_wr = wr;
			return -EINVAL;
		}
		if (state == XIW_QPS_ERROR)
			xiw_flush_rq(qp, false);
		return 0;
	}
	if (state == XIW_QPS_IDLE_RESET) {
		xiw_qp_dbg(qp, "post_recv in RESET\n");
		*bad_wr = wr;
		return -EINVAL;
	}

	spin_lock_irqsave(&qp->rq_lock, flags);
	rv = xiw_wq_post_recv(&qp->rq, wr, qp->max_recv_sge, bad_wr);
	spin_unlock_irqrestore(&qp->rq_lock, flags);
	if (rv)
		xiw_qp_dbg(qp, "post_recv: %d\n", rv);

	/* Pairs with the smp_mb() in xiw_qp_enter_error(). */
	smp_mb();
	if (READ_ONCE(qp->state) == XIW_QPS_ERROR)
		xiw_flush_rq(qp, false);
	return rv;
}
