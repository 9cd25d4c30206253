/* SPDX-License-Identifier: GPL-2.0 */
/*
 * xiw - tracepoints (events/xiw/ in tracefs; trace-cmd, perf).
 *
 *   xiw_cm_state     a connection endpoint changes state
 *   xiw_cm_mpa_done  MPA negotiation done: revision, CRC, IRD/ORD, RTR,
 *                    the TCP 4-tuple
 *   xiw_cm_close     a connection ends (status, peer or local, abortive)
 *   xiw_fpdu_tx      an FPDU is all in TCP
 *   xiw_fpdu_rx      an FPDU arrived whole and passed its CRC check
 *   xiw_term_tx      a Terminate is all in TCP
 *   xiw_term_rx      a Terminate arrived
 *   xiw_cqe          a completion is written to a CQ
 *
 * Call sites pass the objects they have at hand and every field is
 * derived in TP_fast_assign(), so a disabled tracepoint costs a static
 * branch and nothing else. Documentation/observability.md has an example.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM xiw

#if !defined(_XIW_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _XIW_TRACE_H

#include <linux/tracepoint.h>
#include <net/sock.h>
#include <trace/misc/rdma.h>

#include "xiw.h"
#include "xiw_cm.h"
#include "xiw_dp.h"

#ifndef XIW_TRACE_HELPERS
#define XIW_TRACE_HELPERS

#define XIW_TRACE_DEV_LEN	16	/* device name, truncated */

/* @sk's local or remote address as a struct sockaddr for %pISpc. */
static inline void xiw_trace_sk_addr(struct sockaddr_in6 *sa,
				     const struct sock *sk, bool local)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)sa;

	memset(sa, 0, sizeof(*sa));
	if (!sk)
		return;
	if (sk->sk_family == AF_INET) {
		sin->sin_family = AF_INET;
		sin->sin_addr.s_addr = local ? sk->sk_rcv_saddr : sk->sk_daddr;
		sin->sin_port = local ? htons(sk->sk_num) : sk->sk_dport;
#if IS_ENABLED(CONFIG_IPV6)
	} else if (sk->sk_family == AF_INET6) {
		sa->sin6_family = AF_INET6;
		sa->sin6_addr = local ? sk->sk_v6_rcv_saddr : sk->sk_v6_daddr;
		sa->sin6_port = local ? htons(sk->sk_num) : sk->sk_dport;
#endif
	}
}

static inline struct sock *xiw_trace_cep_sk(const struct xiw_cep *cep)
{
	return cep->sock ? cep->sock->sk : NULL;
}

static inline u32 xiw_trace_cep_qpn(const struct xiw_cep *cep)
{
	return cep->qp ? cep->qp->base.qp_num : 0;
}
#endif /* XIW_TRACE_HELPERS */

/* Enum values for user-space decoders (trace-cmd, perf). */
TRACE_DEFINE_ENUM(XIW_CEP_IDLE);
TRACE_DEFINE_ENUM(XIW_CEP_LISTEN);
TRACE_DEFINE_ENUM(XIW_CEP_CONNECTING);
TRACE_DEFINE_ENUM(XIW_CEP_AWAIT_MPAREP);
TRACE_DEFINE_ENUM(XIW_CEP_AWAIT_MPAREQ);
TRACE_DEFINE_ENUM(XIW_CEP_RECVD_MPAREQ);
TRACE_DEFINE_ENUM(XIW_CEP_AWAIT_RTR);
TRACE_DEFINE_ENUM(XIW_CEP_RDMA_MODE);
TRACE_DEFINE_ENUM(XIW_CEP_CLOSING);
TRACE_DEFINE_ENUM(XIW_CEP_CLOSED);
TRACE_DEFINE_ENUM(XIW_RDMAP_OP_WRITE);
TRACE_DEFINE_ENUM(XIW_RDMAP_OP_READ_REQ);
TRACE_DEFINE_ENUM(XIW_RDMAP_OP_READ_RESP);
TRACE_DEFINE_ENUM(XIW_RDMAP_OP_SEND);
TRACE_DEFINE_ENUM(XIW_RDMAP_OP_SEND_INV);
TRACE_DEFINE_ENUM(XIW_RDMAP_OP_SEND_SE);
TRACE_DEFINE_ENUM(XIW_RDMAP_OP_SEND_SE_INV);
TRACE_DEFINE_ENUM(XIW_RDMAP_OP_TERMINATE);
TRACE_DEFINE_ENUM(XIW_RDMAP_OP_IMM);
TRACE_DEFINE_ENUM(XIW_RDMAP_OP_IMM_SE);
TRACE_DEFINE_ENUM(XIW_RDMAP_OP_ATOMIC_REQ);
TRACE_DEFINE_ENUM(XIW_RDMAP_OP_ATOMIC_RESP);
TRACE_DEFINE_ENUM(XIW_RDMAP_OP_FLUSH_REQ);
TRACE_DEFINE_ENUM(XIW_RDMAP_OP_FLUSH_RESP);
TRACE_DEFINE_ENUM(XIW_RDMAP_OP_VERIFY_REQ);
TRACE_DEFINE_ENUM(XIW_RDMAP_OP_VERIFY_RESP);
TRACE_DEFINE_ENUM(XIW_RDMAP_OP_ATOMIC_WRITE_REQ);
TRACE_DEFINE_ENUM(XIW_RDMAP_OP_ATOMIC_WRITE_RESP);
TRACE_DEFINE_ENUM(IB_WC_SEND);
TRACE_DEFINE_ENUM(IB_WC_RDMA_WRITE);
TRACE_DEFINE_ENUM(IB_WC_RDMA_READ);
TRACE_DEFINE_ENUM(IB_WC_COMP_SWAP);
TRACE_DEFINE_ENUM(IB_WC_FETCH_ADD);
TRACE_DEFINE_ENUM(IB_WC_LOCAL_INV);
TRACE_DEFINE_ENUM(IB_WC_ATOMIC_WRITE);
TRACE_DEFINE_ENUM(IB_WC_REG_MR);
TRACE_DEFINE_ENUM(IB_WC_MASKED_COMP_SWAP);
TRACE_DEFINE_ENUM(IB_WC_MASKED_FETCH_ADD);
TRACE_DEFINE_ENUM(IB_WC_FLUSH);
TRACE_DEFINE_ENUM(IB_WC_RECV);
TRACE_DEFINE_ENUM(IB_WC_RECV_RDMA_WITH_IMM);

#define xiw_show_cep_state(x)						\
	__print_symbolic(x,						\
			 { XIW_CEP_IDLE, "IDLE" },			\
			 { XIW_CEP_LISTEN, "LISTEN" },			\
			 { XIW_CEP_CONNECTING, "CONNECTING" },		\
			 { XIW_CEP_AWAIT_MPAREP, "AWAIT_MPAREP" },	\
			 { XIW_CEP_AWAIT_MPAREQ, "AWAIT_MPAREQ" },	\
			 { XIW_CEP_RECVD_MPAREQ, "RECVD_MPAREQ" },	\
			 { XIW_CEP_AWAIT_RTR, "AWAIT_RTR" },		\
			 { XIW_CEP_RDMA_MODE, "RDMA_MODE" },		\
			 { XIW_CEP_CLOSING, "CLOSING" },		\
			 { XIW_CEP_CLOSED, "CLOSED" })

#define xiw_show_rdmap_op(x)						\
	__print_symbolic(x,						\
			 { XIW_RDMAP_OP_WRITE, "write" },		\
			 { XIW_RDMAP_OP_READ_REQ, "read_req" },		\
			 { XIW_RDMAP_OP_READ_RESP, "read_resp" },	\
			 { XIW_RDMAP_OP_SEND, "send" },			\
			 { XIW_RDMAP_OP_SEND_INV, "send_inv" },		\
			 { XIW_RDMAP_OP_SEND_SE, "send_se" },		\
			 { XIW_RDMAP_OP_SEND_SE_INV, "send_se_inv" },	\
			 { XIW_RDMAP_OP_TERMINATE, "terminate" },	\
			 { XIW_RDMAP_OP_IMM, "imm" },			\
			 { XIW_RDMAP_OP_IMM_SE, "imm_se" },		\
			 { XIW_RDMAP_OP_ATOMIC_REQ, "atomic_req" },	\
			 { XIW_RDMAP_OP_ATOMIC_RESP, "atomic_resp" },	\
			 { XIW_RDMAP_OP_FLUSH_REQ, "flush_req" },	\
			 { XIW_RDMAP_OP_FLUSH_RESP, "flush_resp" },	\
			 { XIW_RDMAP_OP_VERIFY_REQ, "verify_req" },	\
			 { XIW_RDMAP_OP_VERIFY_RESP, "verify_resp" },	\
			 { XIW_RDMAP_OP_ATOMIC_WRITE_REQ, "awrite_req" }, \
			 { XIW_RDMAP_OP_ATOMIC_WRITE_RESP, "awrite_resp" })

/* enum ib_wc_opcode (user CQEs too), and xiw's Verify */
#define xiw_show_wc_op(x)						\
	__print_symbolic(x,						\
			 { IB_WC_SEND, "send" },			\
			 { IB_WC_RDMA_WRITE, "write" },			\
			 { IB_WC_RDMA_READ, "read" },			\
			 { IB_WC_COMP_SWAP, "cmp_swap" },		\
			 { IB_WC_FETCH_ADD, "fetch_add" },		\
			 { IB_WC_LOCAL_INV, "local_inv" },		\
			 { IB_WC_ATOMIC_WRITE, "atomic_write" },	\
			 { IB_WC_REG_MR, "reg_mr" },			\
			 { IB_WC_MASKED_COMP_SWAP, "masked_cmp_swap" },	\
			 { IB_WC_MASKED_FETCH_ADD, "masked_fetch_add" }, \
			 { IB_WC_FLUSH, "flush" },			\
			 { IB_WC_RECV, "recv" },			\
			 { IB_WC_RECV_RDMA_WITH_IMM, "recv_imm" },	\
			 { XIW_WC_VERIFY, "verify" })

#define xiw_show_term_layer(x)						\
	__print_symbolic(x, { 0, "rdmap" }, { 1, "ddp" }, { 2, "mpa" })

/* only real changes (a listener may be set to LISTEN again) */
TRACE_EVENT_CONDITION(xiw_cm_state,
	TP_PROTO(const struct xiw_cep *cep, enum xiw_cep_state state),
	TP_ARGS(cep, state),
	TP_CONDITION(cep->state != state),
	TP_STRUCT__entry(
		__array(char, dev, XIW_TRACE_DEV_LEN)
		__field(const void *, cep)
		__field(u32, qpn)
		__field(bool, active)
		__field(u8, old)
		__field(u8, state)
	),
	TP_fast_assign(
		strscpy(__entry->dev, cep->dev_name, XIW_TRACE_DEV_LEN);
		__entry->cep = cep;
		__entry->qpn = xiw_trace_cep_qpn(cep);
		__entry->active = cep->active;
		__entry->old = cep->state;
		__entry->state = state;
	),
	TP_printk("%s cep=%p qpn=%u %s %s -> %s", __entry->dev, __entry->cep,
		  __entry->qpn, __entry->active ? "active" : "passive",
		  xiw_show_cep_state(__entry->old),
		  xiw_show_cep_state(__entry->state))
);

TRACE_EVENT(xiw_cm_mpa_done,
	TP_PROTO(const struct xiw_cep *cep),
	TP_ARGS(cep),
	TP_STRUCT__entry(
		__array(char, dev, XIW_TRACE_DEV_LEN)
		__field(const void *, cep)
		__field(u32, qpn)
		__field(bool, active)
		__field(u8, rev)
		__field(bool, crc)
		__field(u8, rtr)
		__field(u16, ird)
		__field(u16, ord)
		__array(u8, src, sizeof(struct sockaddr_in6))
		__array(u8, dst, sizeof(struct sockaddr_in6))
	),
	TP_fast_assign(
		strscpy(__entry->dev, cep->dev_name, XIW_TRACE_DEV_LEN);
		__entry->cep = cep;
		__entry->qpn = xiw_trace_cep_qpn(cep);
		__entry->active = cep->active;
		__entry->rev = cep->rev;
		__entry->crc = cep->crc;
		__entry->rtr = cep->rtr;
		__entry->ird = cep->ird;
		__entry->ord = cep->ord;
		xiw_trace_sk_addr((struct sockaddr_in6 *)__entry->src,
				  xiw_trace_cep_sk(cep), true);
		xiw_trace_sk_addr((struct sockaddr_in6 *)__entry->dst,
				  xiw_trace_cep_sk(cep), false);
	),
	TP_printk("%s cep=%p qpn=%u %s %pISpc -> %pISpc rev=%u crc=%u ird=%u ord=%u rtr=%s",
		  __entry->dev, __entry->cep, __entry->qpn,
		  __entry->active ? "active" : "passive",
		  __entry->src, __entry->dst, __entry->rev, __entry->crc,
		  __entry->ird, __entry->ord,
		  __print_symbolic(__entry->rtr, { XIW_RTR_NONE, "none" },
				   { XIW_RTR_SEND, "send" },
				   { XIW_RTR_WRITE, "write" },
				   { XIW_RTR_READ, "read" }))
);

TRACE_EVENT(xiw_cm_close,
	TP_PROTO(const struct xiw_cep *cep, int status, bool peer,
		 bool abortive),
	TP_ARGS(cep, status, peer, abortive),
	TP_STRUCT__entry(
		__array(char, dev, XIW_TRACE_DEV_LEN)
		__field(const void *, cep)
		__field(u32, qpn)
		__field(int, status)
		__field(u8, state)
		__field(bool, peer)
		__field(bool, abortive)
	),
	TP_fast_assign(
		strscpy(__entry->dev, cep->dev_name, XIW_TRACE_DEV_LEN);
		__entry->cep = cep;
		__entry->qpn = xiw_trace_cep_qpn(cep);
		__entry->status = status;
		__entry->state = cep->state;
		__entry->peer = peer;
		__entry->abortive = abortive;
	),
	TP_printk("%s cep=%p qpn=%u in %s status=%d by %s%s", __entry->dev,
		  __entry->cep, __entry->qpn, xiw_show_cep_state(__entry->state),
		  __entry->status, __entry->peer ? "peer" : "local",
		  __entry->abortive ? " abortive" : "")
);

/*
 * len is the ULPDU length (MPA length field: DDP and RDMAP headers and
 * payload). Tagged FPDUs (T) carry stag/to, untagged ones (U) qn/msn/mo.
 */
DECLARE_EVENT_CLASS(xiw_fpdu_class,
	TP_PROTO(const struct xiw_qp_dp *dp, const union xiw_fpdu_hdr *hdr),
	TP_ARGS(dp, hdr),
	TP_STRUCT__entry(
		__array(char, dev, XIW_TRACE_DEV_LEN)
		__field(u32, qpn)
		__field(u16, len)
		__field(u8, ddp)
		__field(int, op)
		__field(u32, stag)
		__field(u64, to)
		__field(u32, qn)
		__field(u32, msn)
		__field(u32, mo)
	),
	TP_fast_assign(
		strscpy(__entry->dev, dp->qp->base.device->name,
			XIW_TRACE_DEV_LEN);
		__entry->qpn = dp->qp->base.qp_num;
		__entry->len = be16_to_cpu(hdr->ctrl.mpa_len);
		__entry->ddp = hdr->ctrl.ddp;
		__entry->op = xiw_rdmap_opcode(hdr->ctrl.rdmap);
		if (hdr->ctrl.ddp & XIW_DDP_T) {
			__entry->stag = be32_to_cpu(hdr->tagged.stag);
			__entry->to = be64_to_cpu(hdr->tagged.to);
			__entry->qn = 0;
			__entry->msn = 0;
			__entry->mo = 0;
		} else {
			__entry->stag = 0;
			__entry->to = 0;
			__entry->qn = be32_to_cpu(hdr->untagged.qn);
			__entry->msn = be32_to_cpu(hdr->untagged.msn);
			__entry->mo = be32_to_cpu(hdr->untagged.mo);
		}
	),
	TP_printk("%s qpn=%u %s len=%u %s%s stag=0x%x to=0x%llx qn=%u msn=%u mo=%u",
		  __entry->dev, __entry->qpn, xiw_show_rdmap_op(__entry->op),
		  __entry->len, __entry->ddp & XIW_DDP_T ? "T" : "U",
		  __entry->ddp & XIW_DDP_L ? "L" : "", __entry->stag,
		  __entry->to, __entry->qn, __entry->msn, __entry->mo)
);

DEFINE_EVENT(xiw_fpdu_class, xiw_fpdu_tx,
	TP_PROTO(const struct xiw_qp_dp *dp, const union xiw_fpdu_hdr *hdr),
	TP_ARGS(dp, hdr));

DEFINE_EVENT(xiw_fpdu_class, xiw_fpdu_rx,
	TP_PROTO(const struct xiw_qp_dp *dp, const union xiw_fpdu_hdr *hdr),
	TP_ARGS(dp, hdr));

/* @ctrl: the Terminate Control field, as on the wire (RFC 5040 4.8) */
DECLARE_EVENT_CLASS(xiw_term_class,
	TP_PROTO(const struct xiw_qp_dp *dp, __be32 ctrl),
	TP_ARGS(dp, ctrl),
	TP_STRUCT__entry(
		__array(char, dev, XIW_TRACE_DEV_LEN)
		__field(u32, qpn)
		__field(u8, layer)
		__field(u8, etype)
		__field(u8, ecode)
		__field(u8, hdrct)
	),
	TP_fast_assign(
		u32 c = be32_to_cpu(ctrl);

		strscpy(__entry->dev, dp->qp->base.device->name,
			XIW_TRACE_DEV_LEN);
		__entry->qpn = dp->qp->base.qp_num;
		__entry->layer = c >> 28;
		__entry->etype = (c >> 24) & 0xf;
		__entry->ecode = (c >> 16) & 0xff;
		__entry->hdrct = (c >> 8) & 0xe0;
	),
	TP_printk("%s qpn=%u layer=%s type=0x%x code=0x%02x hdrct=%s%s%s",
		  __entry->dev, __entry->qpn,
		  xiw_show_term_layer(__entry->layer), __entry->etype,
		  __entry->ecode, __entry->hdrct & 0x80 ? "M" : "",
		  __entry->hdrct & 0x40 ? "D" : "",
		  __entry->hdrct & 0x20 ? "R" : "")
);

DEFINE_EVENT(xiw_term_class, xiw_term_tx,
	TP_PROTO(const struct xiw_qp_dp *dp, __be32 ctrl),
	TP_ARGS(dp, ctrl));

DEFINE_EVENT(xiw_term_class, xiw_term_rx,
	TP_PROTO(const struct xiw_qp_dp *dp, __be32 ctrl),
	TP_ARGS(dp, ctrl));

/*
 * One pass of the TX loop (xiw_tx_loop()): who ran it (work: the TX work
 * or a doorbell, which may sleep; rx, post: under the socket's spinlock),
 * the FPDUs it framed and their bytes on the wire, and whether it stopped
 * at its budget with work left (left=1).
 */
TRACE_EVENT(xiw_tx_pass,
	TP_PROTO(const struct xiw_qp_dp *dp, u32 fpdus, u32 bytes, int left),
	TP_ARGS(dp, fpdus, bytes, left),
	TP_STRUCT__entry(
		__array(char, dev, XIW_TRACE_DEV_LEN)
		__field(u32, qpn)
		__field(u8, run)
		__field(u32, fpdus)
		__field(u32, bytes)
		__field(int, left)
	),
	TP_fast_assign(
		strscpy(__entry->dev, dp->qp->base.device->name,
			XIW_TRACE_DEV_LEN);
		__entry->qpn = dp->qp->base.qp_num;
		__entry->run = dp->tx.run;
		__entry->fpdus = fpdus;
		__entry->bytes = bytes;
		__entry->left = left;
	),
	TP_printk("%s qpn=%u run=%s fpdus=%u bytes=%u left=%d",
		  __entry->dev, __entry->qpn,
		  __print_symbolic(__entry->run,
				   { XIW_TX_RUN_WORK, "work" },
				   { XIW_TX_RUN_RX, "rx" },
				   { XIW_TX_RUN_POST, "post" }),
		  __entry->fpdus, __entry->bytes, __entry->left)
);

/* cq is the CQ's restrack id: "cqn" of `rdma resource show cq` */
TRACE_EVENT(xiw_cqe,
	TP_PROTO(const struct xiw_cq *cq, const struct xiw_qp *qp,
		 const struct xiw_cqe *cqe),
	TP_ARGS(cq, qp, cqe),
	TP_STRUCT__entry(
		__array(char, dev, XIW_TRACE_DEV_LEN)
		__field(u32, cq)
		__field(u32, qpn)
		__field(u64, wr_id)
		__field(u32, byte_len)
		__field(u8, opcode)
		__field(u8, status)
		__field(u8, vendor_err)
		__field(u8, vendor_code)
	),
	TP_fast_assign(
		strscpy(__entry->dev, qp->base.device->name,
			XIW_TRACE_DEV_LEN);
		__entry->cq = cq->base.res.id;
		__entry->qpn = qp->base.qp_num;
		__entry->wr_id = cqe->wr_id;
		__entry->byte_len = cqe->byte_len;
		__entry->opcode = cqe->opcode;
		__entry->status = cqe->status;
		__entry->vendor_err = cqe->vendor_err;
		__entry->vendor_code = cqe->vendor_code;
	),
	TP_printk("%s cq=%u qpn=%u wr_id=0x%llx %s %s len=%u vendor_err=0x%02x%02x",
		  __entry->dev, __entry->cq, __entry->qpn, __entry->wr_id,
		  xiw_show_wc_op(__entry->opcode),
		  rdma_show_wc_status(__entry->status), __entry->byte_len,
		  __entry->vendor_err, __entry->vendor_code)
);

#endif /* _XIW_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE xiw_trace

#include <trace/define_trace.h>
