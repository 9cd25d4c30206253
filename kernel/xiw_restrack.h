/* SPDX-License-Identifier: GPL-2.0 */
/*
 * xiw - driver details for `rdma resource show qp|cq|mr|srq -dd`
 * (ib_core restrack fill_res_*_entry hooks, xiw_restrack.c).
 */
#ifndef XIW_RESTRACK_H
#define XIW_RESTRACK_H

#include <linux/skbuff.h>
#include <rdma/ib_verbs.h>

int xiw_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp);
int xiw_fill_res_cq_entry(struct sk_buff *msg, struct ib_cq *ibcq);
int xiw_fill_res_mr_entry(struct sk_buff *msg, struct ib_mr *ibmr);
int xiw_fill_res_srq_entry(struct sk_buff *msg, struct ib_srq *ibsrq);

#endif /* XIW_RESTRACK_H */
