/* SPDX-License-Identifier: GPL-2.0 */
/*
 * xiw - the RX engine (xiw_rx.c), as the data-path core starts, drains
 * and stops it.
 */
#ifndef XIW_RX_H
#define XIW_RX_H

#include "xiw_dp.h"

void xiw_rx_data_ready(struct sock *sk);
void xiw_rx_release(struct xiw_qp_dp *dp);
void xiw_rx_flush(struct xiw_qp_dp *dp);

#endif /* XIW_RX_H */
