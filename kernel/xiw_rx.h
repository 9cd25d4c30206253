/* SPDX-License-Identifier: GPL-2.0 */
/*
 * xiw - the RX engine's parts, as the data-path core starts, drains and
 * stops RX, and what the parts give each other.
 *
 * xiw_rx.c      the stream core: sk_data_ready, FPDU parsing and the
 *               dispatch by opcode, placement, tagged-access checks,
 *               Sends and Immediate Data, RTR, Terminate, RX's errors;
 * xiw_rx_req.c  the responder: the peer's requests (Read Requests,
 *               atomics, Flush, Atomic Write, Verify) checked, executed
 *               or queued in the IRQ;
 * xiw_rx_resp.c the requester: the peer's responses matched against the
 *               ORQ, their results written, their WRs completed.
 *
 * All of RX runs under the socket lock (sk_data_ready), which serialises
 * it; what it shares with TX is under dp->lock. No sleeping, no
 * allocation.
 */
#ifndef XIW_RX_H
#define XIW_RX_H

#include "xiw_dp.h"

/* xiw_rx.c: for the data-path core */
void xiw_rx_data_ready(struct sock *sk);
void xiw_rx_release(struct xiw_qp_dp *dp);
void xiw_rx_flush(struct xiw_qp_dp *dp);

/*
 * Between RX's parts only: nothing outside xiw_rx*.c calls these.
 */

/* A Terminate that copies the refused FPDU's DDP header, length valid */
#define XIW_HDRCT_MD	(XIW_TERM_HDRCT_M | XIW_TERM_HDRCT_D)

/* xiw_rx.c: errors, and checks both roles share */
void xiw_rx_fail(struct xiw_qp_dp *dp, const struct xiw_term_code *tc);
void xiw_rx_term(struct xiw_qp_dp *dp, u8 layer, u8 etype, u8 ecode,
		 u8 hdrct);
void xiw_rx_term_prot(struct xiw_qp_dp *dp, enum xiw_mem_err err, u8 hdrct);
bool xiw_rx_qp_allows(struct xiw_qp_dp *dp, int access);
struct xiw_mr *xiw_rx_region(struct xiw_qp_dp *dp, u32 stag, int access,
			     u64 to, u64 len, enum xiw_mem_err *err);
void xiw_rx_rtr_done(struct xiw_qp_dp *dp);

/* xiw_rx_req.c: requests on QN 1, header checks and whole FPDU */
bool xiw_rx_req_hdr_rreq(struct xiw_qp_dp *dp);
bool xiw_rx_req_hdr_atomic(struct xiw_qp_dp *dp);
bool xiw_rx_req_hdr_flush(struct xiw_qp_dp *dp);
bool xiw_rx_req_hdr_awrite(struct xiw_qp_dp *dp);
bool xiw_rx_req_hdr_verify(struct xiw_qp_dp *dp);
void xiw_rx_req_rreq_done(struct xiw_qp_dp *dp);
void xiw_rx_req_atomic_done(struct xiw_qp_dp *dp);
void xiw_rx_req_commit_done(struct xiw_qp_dp *dp);

/* xiw_rx_resp.c: responses, header checks and whole FPDU */
struct xiw_orqe *xiw_rx_resp_orq_head(struct xiw_qp_dp *dp);
void xiw_rx_resp_bad(struct xiw_qp_dp *dp);
bool xiw_rx_resp_hdr_aresp(struct xiw_qp_dp *dp);
bool xiw_rx_resp_hdr_cresp(struct xiw_qp_dp *dp, u8 type);
void xiw_rx_resp_rresp_done(struct xiw_qp_dp *dp, u32 payload, bool last);
void xiw_rx_resp_aresp_done(struct xiw_qp_dp *dp);
void xiw_rx_resp_cresp_done(struct xiw_qp_dp *dp);

#endif /* XIW_RX_H */
