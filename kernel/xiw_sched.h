/* SPDX-License-Identifier: GPL-2.0 */
/*
 * xiw - who runs TX, and where (xiw_sched.c). Every part of the data path
 * that has work for TX asks through these.
 */
#ifndef XIW_SCHED_H
#define XIW_SCHED_H

#include "xiw_dp.h"

/* TX work (nice -20) and the data path's error and Terminate work */
extern struct workqueue_struct *xiw_sched_hi_wq;
int xiw_sched_init(void);
void xiw_sched_exit(void);

void xiw_sched_kick(struct xiw_qp_dp *dp, bool inline_ok);
void xiw_sched_queue(struct xiw_qp_dp *dp);
void xiw_sched_defer(struct xiw_qp_dp *dp);
void xiw_sched_answer(struct xiw_qp_dp *dp, u32 n, bool all_short);
void xiw_sched_work(struct work_struct *w);
void xiw_sched_retry_work(struct work_struct *w);

#endif /* XIW_SCHED_H */
