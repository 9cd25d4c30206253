// SPDX-License-Identifier: GPL-2.0
/*
 * xiw - device counters as ib_core hw stats: `rdma statistic show link
 * xiwN/1` (and /sys/class/infiniband/xiwN/ports/1/hw_counters). The data
 * path adds to per-CPU counters (xiw_stat_add()); a read sums them.
 *
 * Per-QP counters (`rdma statistic qp`): ib_core's rdma counters, bound to
 * QPs by hand (`rdma statistic qp bind`) or automatically (`rdma statistic
 * qp set ... auto type on`). A bound QP also counts on itself
 * (xiw_qp_stat_add()); a counter's value is what its QPs counted while
 * bound. ib_core shows a port's counters as the driver's value plus every
 * counter's (like a NIC whose QPs count in one counter set at a time), so
 * xiw_get_hw_stats() reports the device's events minus those the
 * counters hold: the sum rdma(8) prints is every event once.
 * All counter operations run in process context under counter_lock.
 */
#include <rdma/ib_verbs.h>

#include "xiw.h"

static const struct rdma_stat_desc xiw_stat_descs[XIW_STAT_NUM] = {
	[XIW_STAT_TX_FPDUS].name = "tx_fpdus",
	[XIW_STAT_TX_BYTES].name = "tx_bytes",
	[XIW_STAT_RX_FPDUS].name = "rx_fpdus",
	[XIW_STAT_RX_BYTES].name = "rx_bytes",
	[XIW_STAT_RX_CRC_ERRORS].name = "rx_crc_errors",
	[XIW_STAT_TERM_SENT].name = "terminates_sent",
	[XIW_STAT_TERM_RECEIVED].name = "terminates_received",
	[XIW_STAT_READ_RESPONSES].name = "read_requests_answered",
	[XIW_STAT_ATOMICS].name = "atomics_executed",
	[XIW_STAT_FLUSHES].name = "flushes_executed",
	[XIW_STAT_ATOMIC_WRITES].name = "atomic_writes_executed",
	[XIW_STAT_VERIFIES].name = "verifies_executed",
	[XIW_STAT_TX_NOSPACE].name = "tx_socket_full",
	[XIW_STAT_DOORBELLS].name = "doorbells",
	[XIW_STAT_MPA_REJECTS].name = "mpa_rejects",
	[XIW_STAT_TX_WORK_QUEUED].name = "tx_work_queued",
	[XIW_STAT_TX_SENDMSG].name = "tx_sendmsg_calls",
	[XIW_STAT_TX_FROM_RX].name = "tx_fpdus_from_rx",
	[XIW_STAT_RESP_HANDOFFS].name = "resp_handoffs",
	[XIW_STAT_TX_PAGE_FPDUS].name = "tx_page_fpdus",
	[XIW_STAT_TX_PAGES_BUSY].name = "tx_pages_busy",
	[XIW_STAT_TX_ZCOPY_SENDS].name = "tx_zcopy_sends",
	[XIW_STAT_TX_ZCOPY_KBYTES].name = "tx_zcopy_kernel_bytes",
	[XIW_STAT_TX_FROM_POST].name = "tx_fpdus_from_post",
};

/*
 * xiw's side of an rdma counter, found by counter->id, which xiw assigns
 * when the counter's first QP is bound (ib_core tracks the counter under
 * that id: it is the `cntn` of rdma(8)).
 */
struct xiw_counter {
	u64 retired[XIW_STAT_NUM];	/* counted by QPs unbound since */
};

#define XIW_MAX_COUNTERS 4096

int xiw_stats_alloc(struct xiw_device *xdev)
{
	mutex_init(&xdev->counter_lock);
	xa_init_flags(&xdev->counters, XA_FLAGS_ALLOC1);
	xdev->stats = alloc_percpu(struct xiw_stats);
	return xdev->stats ? 0 : -ENOMEM;
}

void xiw_stats_free(struct xiw_device *xdev)
{
	/* ib_core deallocates every counter before the device goes */
	WARN_ON(!xa_empty(&xdev->counters));
	xa_destroy(&xdev->counters);
	free_percpu(xdev->stats);
	xdev->stats = NULL;
	mutex_destroy(&xdev->counter_lock);
}

static struct xiw_counter *xiw_counter_find(struct xiw_device *xdev,
					    struct rdma_counter *counter)
{
	lockdep_assert_held(&xdev->counter_lock);
	return counter->id ? xa_load(&xdev->counters, counter->id) : NULL;
}

/*
 * Add to @v what the QPs bound to @counter (any counter if NULL) counted
 * since they were bound.
 */
static void xiw_counter_sum_qps(struct xiw_device *xdev,
				struct rdma_counter *counter, u64 *v)
{
	struct xiw_qp *qp;
	unsigned long id;
	int i;

	lockdep_assert_held(&xdev->counter_lock);
	/*
	 * Bindings change only under counter_lock, which we hold; the QP
	 * counts without it (atomic64). A QP in qp_xa is not freed before
	 * xa_lock is released (destroy_qp erases it first).
	 */
	xa_lock(&xdev->qp_xa);
	xa_for_each(&xdev->qp_xa, id, qp) {
		struct rdma_counter *c = READ_ONCE(qp->base.counter);

		if (!c || (counter && c != counter))
			continue;
		for (i = 0; i < XIW_STAT_NUM; i++)
			v[i] += atomic64_read(&qp->qstats[i]) - qp->qbase[i];
	}
	xa_unlock(&xdev->qp_xa);
}

struct rdma_hw_stats *xiw_counter_alloc_stats(struct rdma_counter *counter)
{
	/*
	 * Nothing of xiw's yet: ib_core frees what this returns without
	 * calling counter_dealloc when the counter fails to come up.
	 */
	return rdma_alloc_hw_stats_struct(xiw_stat_descs, XIW_STAT_NUM,
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

/* The last QP is unbound: what the counter holds moves to the port. */
int xiw_counter_dealloc(struct rdma_counter *counter)
{
	struct xiw_device *xdev = to_xiw_dev(counter->device);
	struct xiw_counter *xc;
	int i;

	mutex_lock(&xdev->counter_lock);
	xc = xiw_counter_find(xdev, counter);
	if (xc) {
		for (i = 0; i < XIW_STAT_NUM; i++)
			xdev->counters_released[i] += xc->retired[i];
		xa_erase(&xdev->counters, counter->id);
	}
	mutex_unlock(&xdev->counter_lock);
	kfree(xc);
	return 0;
}

int xiw_counter_bind_qp(struct rdma_counter *counter, struct ib_qp *ibqp)
{
	struct xiw_device *xdev = to_xiw_dev(ibqp->device);
	struct xiw_qp *qp = to_xiw_qp(ibqp);
	struct xiw_counter *xc;
	u32 id;
	int i, rv;

	mutex_lock(&xdev->counter_lock);
	if (!counter->id) {
		/* a new counter: its first QP */
		xc = kzalloc(sizeof(*xc), GFP_KERNEL);
		if (!xc) {
			rv = -ENOMEM;
			goto out;
		}
		rv = xa_alloc(&xdev->counters, &id, xc,
			      XA_LIMIT(1, XIW_MAX_COUNTERS), GFP_KERNEL);
		if (rv) {
			kfree(xc);
			goto out;
		}
		counter->id = id;
	} else if (!xiw_counter_find(xdev, counter)) {
		rv = -EINVAL;
		goto out;
	}
	for (i = 0; i < XIW_STAT_NUM; i++)
		qp->qbase[i] = atomic64_read(&qp->qstats[i]);
	/* the data path counts on the QP from now on (xiw_qp_stat_add()) */
	WRITE_ONCE(ibqp->counter, counter);
	rv = 0;
out:
	mutex_unlock(&xdev->counter_lock);
	return rv;
}

int xiw_counter_unbind_qp(struct ib_qp *ibqp)
{
	struct xiw_device *xdev = to_xiw_dev(ibqp->device);
	struct xiw_qp *qp = to_xiw_qp(ibqp);
	struct xiw_counter *xc;
	int i;

	mutex_lock(&xdev->counter_lock);
	xc = ibqp->counter ? xiw_counter_find(xdev, ibqp->counter) : NULL;
	WRITE_ONCE(ibqp->counter, NULL);
	for (i = 0; xc && i < XIW_STAT_NUM; i++)
		xc->retired[i] += atomic64_read(&qp->qstats[i]) - qp->qbase[i];
	mutex_unlock(&xdev->counter_lock);
	return 0;
}

int xiw_counter_update_stats(struct rdma_counter *counter)
{
	struct xiw_device *xdev = to_xiw_dev(counter->device);
	u64 v[XIW_STAT_NUM] = {};
	struct xiw_counter *xc;
	int i;

	mutex_lock(&xdev->counter_lock);
	xc = xiw_counter_find(xdev, counter);
	if (xc) {
		for (i = 0; i < XIW_STAT_NUM; i++)
			v[i] = xc->retired[i];
		xiw_counter_sum_qps(xdev, counter, v);
	}
	mutex_unlock(&xdev->counter_lock);
	for (i = 0; i < XIW_STAT_NUM; i++)
		counter->stats->value[i] = v[i];
	return 0;
}

struct rdma_hw_stats *xiw_alloc_hw_port_stats(struct ib_device *ibdev,
					      u32 port_num)
{
	return rdma_alloc_hw_stats_struct(xiw_stat_descs, XIW_STAT_NUM,
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

int xiw_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
		     u32 port_num, int index)
{
	struct xiw_device *xdev = to_xiw_dev(ibdev);
	u64 counted[XIW_STAT_NUM];
	struct xiw_counter *xc;
	unsigned long id;
	int cpu, i;

	/* what the rdma counters hold, which ib_core adds to our values */
	mutex_lock(&xdev->counter_lock);
	memcpy(counted, xdev->counters_released, sizeof(counted));
	xa_for_each(&xdev->counters, id, xc)
		for (i = 0; i < XIW_STAT_NUM; i++)
			counted[i] += xc->retired[i];
	xiw_counter_sum_qps(xdev, NULL, counted);
	mutex_unlock(&xdev->counter_lock);

	/* after the QPs: the device has counted at least as much */
	for (i = 0; i < XIW_STAT_NUM; i++)
		stats->value[i] = 0;
	for_each_possible_cpu(cpu) {
		const struct xiw_stats *c = per_cpu_ptr(xdev->stats, cpu);

		for (i = 0; i < XIW_STAT_NUM; i++)
			stats->value[i] += READ_ONCE(c->v[i]);
	}
	for (i = 0; i < XIW_STAT_NUM; i++)
		stats->value[i] -= min(stats->value[i], counted[i]);
	return XIW_STAT_NUM;
}
