// SPDX-License-Identifier: GPL-2.0
/*
 * xiw - device counters as ib_core hw stats: `rdma statistic show link
 * xiwN/1` (and /sys/class/infiniband/xiwN/ports/1/hw_counters). The data
 * path adds to per-CPU counters (xiw_stat_add()); a read sums them.
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
};

int xiw_stats_alloc(struct xiw_device *xdev)
{
	xdev->stats = alloc_percpu(struct xiw_stats);
	return xdev->stats ? 0 : -ENOMEM;
}

void xiw_stats_free(struct xiw_device *xdev)
{
	free_percpu(xdev->stats);
	xdev->stats = NULL;
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
	int cpu, i;

	for (i = 0; i < XIW_STAT_NUM; i++)
		stats->value[i] = 0;
	for_each_possible_cpu(cpu) {
		const struct xiw_stats *c = per_cpu_ptr(xdev->stats, cpu);

		for (i = 0; i < XIW_STAT_NUM; i++)
			stats->value[i] += READ_ONCE(c->v[i]);
	}
	return XIW_STAT_NUM;
}
