/* SPDX-License-Identifier: GPL-2.0 */
/*
 * xiw - per-device counters, shown by `rdma statistic show link xiwN/1`
 * (ib_core hw stats, xiw_stats.c). Per CPU, so counting costs one
 * this_cpu_add() in any context and no shared cache line.
 */
#ifndef XIW_STATS_H
#define XIW_STATS_H

#include <linux/percpu.h>

enum xiw_stat {
	XIW_STAT_TX_FPDUS,
	XIW_STAT_TX_BYTES,		/* FPDU bytes incl. headers and CRC */
	XIW_STAT_RX_FPDUS,
	XIW_STAT_RX_BYTES,
	XIW_STAT_RX_CRC_ERRORS,
	XIW_STAT_TERM_SENT,
	XIW_STAT_TERM_RECEIVED,
	XIW_STAT_READ_RESPONSES,	/* Read Requests answered */
	XIW_STAT_ATOMICS,		/* RFC 7306 atomics executed */
	XIW_STAT_FLUSHES,		/* commit draft, executed */
	XIW_STAT_ATOMIC_WRITES,
	XIW_STAT_VERIFIES,
	XIW_STAT_TX_NOSPACE,		/* TX parked on a full socket */
	XIW_STAT_DOORBELLS,		/* user SQ doorbells rung */
	XIW_STAT_MPA_REJECTS,		/* connection requests the ULP rejected */
	XIW_STAT_TX_WORK_QUEUED,	/* TX work items queued */
	XIW_STAT_TX_SENDMSG,		/* sendmsg calls of TX */
	XIW_STAT_TX_FROM_RX,		/* response FPDUs sent by RX itself */
	XIW_STAT_RESP_HANDOFFS,		/* RX passes answered by the next CPU */
	XIW_STAT_TX_PAGE_FPDUS,		/* FPDUs copied into the QP's TX pages */
	XIW_STAT_TX_PAGES_BUSY,		/* ... not: all TX pages in flight */
	XIW_STAT_TX_ZCOPY_SENDS,	/* payload handed to TCP by reference */
	XIW_STAT_TX_ZCOPY_KBYTES,	/* ... of kernel consumers, bytes */
	XIW_STAT_TX_FROM_POST,		/* SQ FPDUs sent by an atomic post */
	XIW_STAT_NUM,
};

struct xiw_stats {
	u64 v[XIW_STAT_NUM];
};

struct xiw_device;

int xiw_stats_alloc(struct xiw_device *xdev);
void xiw_stats_free(struct xiw_device *xdev);

#endif /* XIW_STATS_H */
