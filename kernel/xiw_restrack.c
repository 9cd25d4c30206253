// SPDX-License-Identifier: GPL-2.0
/*
 * xiw - driver details of resource tracking: what `rdma resource show
 * qp|cq|mr|srq -dd` (and -j) prints after ib_core's generic fields.
 *
 *   QP:  xiw state, SQ/RQ depth and WQEs posted but not yet taken by the
 *        kernel, SQ WRs in flight; once connected the MPA revision, CRC,
 *        negotiated IRD/ORD, the TCP 4-tuple and MSS, the
 *        next MSNs, outstanding inbound/outbound Read/atomic requests and
 *        whether the data path has failed.
 *   CQ:  depth, completions not yet polled, completions lost to overflow.
 *   MR:  type, access rights (remote read/write, atomic, global and
 *        persistent Flush), STag state, Verify digest.
 *   SRQ: depth, receives posted, limit.
 *
 * ib_core calls these in process context with a restrack reference on
 * the object and no driver lock. The reference keeps the driver's destroy
 * away, not only the memory: ib_core drains every dump's reference
 * (rdma_restrack_begin_del(), or rdma_restrack_del() for an MR) before
 * it calls destroy_qp, destroy_cq, destroy_srq or dereg_mr, in 6.12 and
 * in the 6.1 stable kernels xiw is built for (6.1.0-56 exports
 * rdma_restrack_begin_del). So a fill never meets a ring, a mutex or a
 * data path that destroy has freed; obs_restrack_race runs dumps against
 * object cycles to keep it so. They only read: ring occupancy is a
 * snapshot of the slots' ownership flags, taken without the rings' locks,
 * so it may be stale by the time it is printed but never changes anything.
 * A QP's connection state is read under its state mutex, which keeps
 * qp->dp and its socket.
 */
#include <net/inet_sock.h>
#include <net/ipv6.h>
#include <rdma/restrack.h>
#include <rdma/rdma_netlink.h>

#include "xiw.h"
#include "xiw_dp.h"
#include "xiw_restrack.h"

static const char * const xiw_res_qp_state[] = {
	[XIW_QPS_IDLE_RESET] = "idle(reset)",	[XIW_QPS_IDLE] = "idle(init)",
	[XIW_QPS_IDLE_RTR] = "idle(rtr)",	[XIW_QPS_RTS] = "rts",
	[XIW_QPS_CLOSING] = "closing",	[XIW_QPS_TERMINATE] = "terminate",
	[XIW_QPS_ERROR] = "error",
};

static const char * const xiw_res_mr_type[] = {
	[XIW_MR_DMA] = "dma",	[XIW_MR_USER] = "user",	[XIW_MR_FRMR] = "frmr",
	[XIW_MR_MW] = "mw",
};

static const char * const xiw_res_digest[XIW_DIGEST_NUM] = {
	[XIW_DIGEST_DEFAULT] = "default",
	[XIW_DIGEST_CRC32C] = "crc32c",
	[XIW_DIGEST_SHA256] = "sha256",
};

/* Completions produced and not yet polled. Lockless snapshot. */
static u32 xiw_res_cq_used(struct xiw_queue *q)
{
	u32 i, n = 0;

	for (i = 0; q->entries && i < q->num; i++) {
		struct xiw_cqe *e = xiw_queue_entry(q, i);

		if (READ_ONCE(e->flags) & XIW_CQE_VALID)
			n++;
	}
	return n;
}

static int xiw_res_put_addr(struct sk_buff *msg, const char *name,
			    struct sock *sk, bool local)
{
	struct sockaddr_storage ss = {};
	char buf[64];

	if (sk->sk_family == AF_INET) {
		struct sockaddr_in *s = (struct sockaddr_in *)&ss;

		s->sin_family = AF_INET;
		s->sin_addr.s_addr = local ? sk->sk_rcv_saddr : sk->sk_daddr;
		s->sin_port = local ? htons(sk->sk_num) : sk->sk_dport;
#if IS_ENABLED(CONFIG_IPV6)
	} else if (sk->sk_family == AF_INET6) {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)&ss;

		s->sin6_family = AF_INET6;
		s->sin6_addr = local ? sk->sk_v6_rcv_saddr : sk->sk_v6_daddr;
		s->sin6_port = local ? htons(sk->sk_num) : sk->sk_dport;
#endif
	} else {
		return 0;
	}
	snprintf(buf, sizeof(buf), "%pISpc", &ss);
	return rdma_nl_put_driver_string(msg, name, buf);
}

/* What the connection negotiated and where its data path stands. */
static int xiw_res_qp_conn(struct sk_buff *msg, struct xiw_qp_dp *dp)
{
	u32 sq_inflight, orq_used, irq_used;

	spin_lock_bh(&dp->lock);
	sq_inflight = dp->cmpl_tail - dp->cmpl_head;
	orq_used = dp->orq_tail - dp->orq_head;
	irq_used = dp->irq_tail - dp->irq_head;
	spin_unlock_bh(&dp->lock);

	if (rdma_nl_put_driver_u32(msg, "mpa_rev", dp->mpa_rev) ||
	    rdma_nl_put_driver_string(msg, "crc", dp->crc ? "on" : "off") ||
	    rdma_nl_put_driver_u32(msg, "ird", dp->ird) ||
	    rdma_nl_put_driver_u32(msg, "ord", dp->ord) ||
	    xiw_res_put_addr(msg, "src", dp->sk, true) ||
	    xiw_res_put_addr(msg, "dst", dp->sk, false) ||
	    rdma_nl_put_driver_u32(msg, "mss", dp->mss) ||
	    rdma_nl_put_driver_u32(msg, "sq_inflight", sq_inflight) ||
	    rdma_nl_put_driver_u32(msg, "orq_used", orq_used) ||
	    rdma_nl_put_driver_u32(msg, "irq_used", irq_used) ||
	    /* MSNs: TX and RX own them; a racy read is only a snapshot */
	    rdma_nl_put_driver_u32(msg, "tx_msn_send",
				   READ_ONCE(dp->tx.msn[XIW_QN_SEND])) ||
	    rdma_nl_put_driver_u32(msg, "rx_msn_send",
				   READ_ONCE(dp->rx.msn[XIW_QN_SEND])) ||
	    rdma_nl_put_driver_string(msg, "dp",
				      test_bit(XIW_DP_ERROR, &dp->flags) ?
				      "error" : "ok"))
		return -EMSGSIZE;
	return 0;
}

int xiw_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp)
{
	struct xiw_qp *qp = to_xiw_qp(ibqp);
	struct nlattr *table;
	struct xiw_qp_dp *dp;
	int rv = -EMSGSIZE;

	table = nla_nest_start(msg, RDMA_NLDEV_ATTR_DRIVER);
	if (!table)
		return -EMSGSIZE;

	mutex_lock(&qp->state_lock);
	if (rdma_nl_put_driver_string(msg, "xiw_state",
				      xiw_res_qp_state[qp->state]) ||
	    rdma_nl_put_driver_u32(msg, "sq_depth", qp->sq.num) ||
	    rdma_nl_put_driver_u32(msg, "sq_posted",
				   xiw_wq_count_published(&qp->sq)))
		goto out;
	if (!qp->srq &&
	    (rdma_nl_put_driver_u32(msg, "rq_depth", qp->rq.num) ||
	     rdma_nl_put_driver_u32(msg, "rq_posted",
				    xiw_wq_count_published(&qp->rq))))
		goto out;
	dp = rcu_dereference_protected(qp->dp,
				       lockdep_is_held(&qp->state_lock));
	if (dp) {
		if (xiw_res_qp_conn(msg, dp))
			goto out;
	} else if (rdma_nl_put_driver_u32(msg, "ird", qp->ird) ||
		   rdma_nl_put_driver_u32(msg, "ord", qp->ord)) {
		goto out;
	}
	rv = 0;
out:
	mutex_unlock(&qp->state_lock);
	if (rv) {
		nla_nest_cancel(msg, table);
		return rv;
	}
	nla_nest_end(msg, table);
	return 0;
}

int xiw_fill_res_cq_entry(struct sk_buff *msg, struct ib_cq *ibcq)
{
	struct xiw_cq *cq = to_xiw_cq(ibcq);
	struct nlattr *table;

	table = nla_nest_start(msg, RDMA_NLDEV_ATTR_DRIVER);
	if (!table)
		return -EMSGSIZE;
	if (rdma_nl_put_driver_u32(msg, "cq_depth", cq->q.num) ||
	    rdma_nl_put_driver_u32(msg, "cq_used", xiw_res_cq_used(&cq->q)) ||
	    rdma_nl_put_driver_u32(msg, "overflow",
				   READ_ONCE(cq->q.ctrl->overflow)) ||
	    rdma_nl_put_driver_string(msg, "owner",
				      cq->user ? "user" : "kernel")) {
		nla_nest_cancel(msg, table);
		return -EMSGSIZE;
	}
	nla_nest_end(msg, table);
	return 0;
}

int xiw_fill_res_mr_entry(struct sk_buff *msg, struct ib_mr *ibmr)
{
	struct xiw_mr *mr = to_xiw_mr(ibmr);
	u8 digest = READ_ONCE(mr->digest);
	struct nlattr *table;
	int access = mr->access;

	table = nla_nest_start(msg, RDMA_NLDEV_ATTR_DRIVER);
	if (!table)
		return -EMSGSIZE;
	if (rdma_nl_put_driver_string(msg, "type", xiw_res_mr_type[mr->type]) ||
	    rdma_nl_put_driver_u32_hex(msg, "access", access) ||
	    rdma_nl_put_driver_string(msg, "rights",
				      access & IB_ACCESS_REMOTE_WRITE ?
				      (access & IB_ACCESS_REMOTE_READ ?
				       "rw" : "w") :
				      (access & IB_ACCESS_REMOTE_READ ?
				       "r" : "local")) ||
	    rdma_nl_put_driver_string(msg, "atomic",
				      access & IB_ACCESS_REMOTE_ATOMIC ?
				      "yes" : "no") ||
	    rdma_nl_put_driver_string(msg, "flush_global",
				      access & IB_ACCESS_FLUSH_GLOBAL ?
				      "yes" : "no") ||
	    rdma_nl_put_driver_string(msg, "persistent",
				      access & IB_ACCESS_FLUSH_PERSISTENT ?
				      "yes" : "no") ||
	    rdma_nl_put_driver_string(msg, "stag",
				      READ_ONCE(mr->valid) ?
				      "valid" : "invalid") ||
	    (digest < XIW_DIGEST_NUM &&
	     rdma_nl_put_driver_string(msg, "digest",
				       xiw_res_digest[digest])) ||
	    (mr->type == XIW_MR_FRMR &&
	     rdma_nl_put_driver_u32(msg, "max_pages", mr->max_pages))) {
		nla_nest_cancel(msg, table);
		return -EMSGSIZE;
	}
	nla_nest_end(msg, table);
	return 0;
}

int xiw_fill_res_srq_entry(struct sk_buff *msg, struct ib_srq *ibsrq)
{
	struct xiw_srq *srq = to_xiw_srq(ibsrq);
	struct nlattr *table;

	table = nla_nest_start(msg, RDMA_NLDEV_ATTR_DRIVER);
	if (!table)
		return -EMSGSIZE;
	if (rdma_nl_put_driver_u32(msg, "srq_depth", srq->rq.num) ||
	    rdma_nl_put_driver_u32(msg, "srq_posted",
				   xiw_wq_count_published(&srq->rq)) ||
	    rdma_nl_put_driver_u32(msg, "limit", READ_ONCE(srq->limit))) {
		nla_nest_cancel(msg, table);
		return -EMSGSIZE;
	}
	nla_nest_end(msg, table);
	return 0;
}
