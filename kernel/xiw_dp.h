/* SPDX-License-Identifier: GPL-2.0 */
/*
 * xiw - data path: per-connection state shared by the core (xiw_dp.c) and
 * the TX engine (xiw_tx*.c, run as xiw_sched.c decides) and the RX
 * engine (xiw_rx*.c).
 *
 * One struct xiw_qp_dp exists while a QP has a TCP connection, from
 * xiw_llp_start() to xiw_llp_stop(). Everything the engines need at
 * FPDU rate is allocated there once: no allocation per FPDU.
 *
 * Concurrency (see also xiw_sched.c, xiw_tx.c and xiw_rx.c):
 *
 * - RX runs in sk_data_ready (softirq, or process context from the socket
 *   backlog) under the socket lock, so RX context fields need no lock of
 *   their own: TCP serialises its callers.
 * - TX runs in exactly one context at a time, the owner of XIW_DP_TX_BUSY:
 *   the poster (when it may sleep), the TX work item, or RX answering
 *   short inbound requests at the end of its pass (xiw_sched_from_rx()).
 *   A kick that finds the bit taken sets XIW_DP_TX_MORE; the owner
 *   rechecks it after releasing XIW_DP_TX_BUSY, so no kick is lost.
 * - dp->lock (a BH-safe spinlock, per QP) protects what TX and RX share:
 *   the completion-order ring, the ORQ and the IRQ.
 * - Errors found in softirq never take the QP state mutex: they set
 *   XIW_DP_ERROR (an atomic bit, checked by TX, RX and posters), record
 *   the Terminate to send and kick TX, which sends it at an FPDU boundary
 *   (after answering the requests queued before it, when RX refused one:
 *   xiw_dp_refuse()) and then queues err_work; err_work moves the QP to
 *   ERROR under the state mutex (flushing everything) and notifies the CM.
 */
#ifndef XIW_DP_H
#define XIW_DP_H

#include <linux/bvec.h>
#include <linux/workqueue.h>

#include "xiw.h"

#define xiw_dp_dbg(dp, fmt, ...) do {					\
	struct xiw_qp_dp *_dp = (dp);					\
									\
	ibdev_dbg(_dp->qp->base.device, "QP%u: %s: " fmt,		\
		  _dp->qp->base.qp_num, __func__, ##__VA_ARGS__);	\
} while (0)

struct xiw_tx_zc;
struct xiw_zc_owner;

/* dp->flags bits */
enum {
	XIW_DP_TX_BUSY,		/* someone runs the TX engine */
	XIW_DP_TX_MORE,		/* a kick arrived while TX was busy */
	XIW_DP_TX_NOSPACE,	/* TX waits for sk_write_space */
	XIW_DP_RTR_WAIT,	/* passive side: RTR not yet received */
	XIW_DP_TERM_PENDING,	/* a Terminate is to be sent */
	XIW_DP_TERM_DRAIN,	/* ... after the IRQ is answered (xiw_dp_refuse) */
	XIW_DP_ERROR,		/* fatal: no more TX/RX, QP going to ERROR */
	XIW_DP_FAILING,		/* an error CQE goes out ahead of the fatal */
	XIW_DP_FLUSHED,		/* completion ring flushed, nothing completes */
	XIW_DP_STOPPED,		/* xiw_llp_stop() in progress */
	XIW_DP_CMPL_WAIT,	/* TX waits for a free completion slot */
	XIW_DP_EXEC_BUSY,	/* exec_work runs the IRQ head */
	XIW_DP_EXEC_DONE,	/* exec_work executed it: TX answers */
	XIW_DP_ORD_WAIT,	/* an SQ WR waits for ORD or a fence */
	XIW_DP_ZC_RECLAIM,	/* the flush took zero-copy pages back */
	XIW_DP_ZC_HELD,		/* the flush left WRs to their pages */
};

/* Completion-order ring: SQ WRs complete in posting order. */
enum xiw_cmpl_state {
	XIW_CMPL_PENDING = 1,
	XIW_CMPL_DONE,
};

struct xiw_dp_cmpl {
	u64 wr_id;
	u32 byte_len;
	u8 opcode;		/* ib_wc_opcode */
	u8 status;		/* ib_wc_status */
	u8 state;		/* 0 = free, enum xiw_cmpl_state */
	bool signaled;
	u16 vendor_err;		/* peer's Terminate: layer:4 type:4 code:8 */
	/*
	 * TCP may hold pages of the WR (a zero-copy notifier is attached,
	 * xiw_tx_zc.c): the slot is not reaped, whatever its state,
	 * until the notifier's release clears this. zc_seq: the WR's
	 * free-running completion index, which the release must match.
	 */
	bool zc;
	/*
	 * The untagged message the WR is sent as (a Send, Immediate Data,
	 * a request on QN 1): its queue number (XIW_QN_COUNT: none, as for
	 * a Write or a local operation) and MSN, set when TX takes the WR.
	 * A Terminate that copies that header names this WR
	 * (xiw_dp_cmpl_remote_err()).
	 */
	u8 qn;
	u32 zc_seq;
	u32 msn;
};

/*
 * What an ORQ or IRQ entry stands for. Every request on QN 1 takes one
 * ORD slot at the requester and one IRD slot at the responder (RFC 7306
 * section 5.2, commit draft section 3.1): the response must be of the
 * entry's type, anything else is a protocol error.
 */
enum xiw_rq_type {
	XIW_RQ_READ = 1,
	XIW_RQ_ATOMIC,		/* RFC 7306 FetchAdd / CmpSwap */
	XIW_RQ_FLUSH,		/* commit draft */
	XIW_RQ_AWRITE,		/* commit draft Atomic Write */
	XIW_RQ_VERIFY,		/* commit draft */
};

/*
 * Outstanding request of ours on QN 1. For an atomic or a Verify,
 * sink_stag/sink_to name the local result buffer (an lkey; Verify: none
 * if len is 0) and req_id is the Atomic Request Identifier sent.
 */
struct xiw_orqe {
	u32 cidx;		/* completion-order ring index */
	u32 sink_stag;		/* our lkey advertised as Data Sink STag */
	u64 sink_to;
	u32 len;
	u32 placed;
	u32 inv_stag;		/* READ_WITH_INV: STag to invalidate */
	u32 req_id;		/* atomic: Request Identifier */
	u8 type;		/* enum xiw_rq_type */
	bool inv;
	bool rtr;		/* zero-length RTR read: completes silently */
	/*
	 * Atomic: the result buffer's region, TX's reference on its SGE
	 * handed over, for RX to write the Response into
	 * (xiw_rx_resp_result_write()). NULL: look the STag up.
	 */
	struct xiw_mr *mr;
};

/*
 * Inbound request on QN 1 (depth IRD), answered by TX strictly in arrival
 * order (RFC 7306 section 5.2.2 rule 8, commit draft section 4).
 *
 * Execution: RX executes an RFC 7306 atomic or an Atomic Write as soon as
 * its FPDU is complete, before it places any later message of the stream
 * (xiw_rx_req_exec(): IBA C9-28 order, which RFC 7306 allows), and queues it
 * with @executed set and its result; TX frames the response. While an
 * earlier Flush or Verify is not yet executed, an atomic or Atomic Write
 * waits in the IRQ unexecuted instead (the draft orders an Atomic Write
 * after earlier Flushes and Verifies), and TX executes it in IRQ order.
 * TX executes a Flush or Verify right before its response, after every
 * earlier entry. A Read Response copies memory when it is sent: a Read
 * may see what later Writes and atomics stored (RFC 5040 section 5.5,
 * RFC 7306 section 7).
 */
struct xiw_irqe {
	u8 type;		/* enum xiw_rq_type */
	u8 flags;		/* Flush: XIW_FLUSH_* wire flags */
	u8 hash_len;		/* Verify: expected hash length, 0: none */
	u32 sink_stag;		/* Read: requester's sink; others: target */
	u64 sink_to;
	u32 src_stag;		/* Read: source */
	u64 src_to;
	u32 len;
	u32 req_id;		/* atomic: Original Request Identifier */
	u32 aopcode;		/* atomic operands, host order */
	u64 add_swap, add_swap_mask, cmp, cmp_mask;
	u64 orig;		/* atomic: Original Remote Data Value */
	u64 data;		/* Atomic Write: the value, CPU order */
	/* Flush, Verify, Atomic Write: 0, or the STag to invalidate */
	u32 inv_stag;
	bool executed;		/* by RX at receipt: TX only answers */
	u8 hash[XIW_VERIFY_HASH_MAX];	/* Verify: expected, then result */
	/*
	 * Read: the source region, unexecuted atomic or Atomic Write: the
	 * target region, as RX looked it up (reference held); TX takes it
	 * out of the IRQ (xiw_tx_resp_start()) and checks it again. NULL:
	 * look it up (or nothing to look up: @executed).
	 */
	struct xiw_mr *mr;
};

/* A local SGE checked against its MR, reference held. */
struct xiw_lsge {
	struct xiw_mr *mr;
	u64 addr;
	u32 len;
};

enum xiw_tx_kind {
	XIW_TX_NONE,
	XIW_TX_SQ,		/* Send/Write/Read Request from the SQ */
	XIW_TX_RRESP,		/* Read/Atomic/Flush/Verify Response (IRQ) */
	XIW_TX_TERM,		/* Terminate */
	XIW_TX_RTR,		/* RTR frame */
};

/*
 * Who runs the TX engine (xiw_sched.c). RX and an atomic post hold the
 * socket's spinlock, not its lock (xiw_tx_locked()): they send with
 * tcp_sendmsg_locked() and allocate with GFP_ATOMIC, and each takes only
 * its part of TX's work.
 */
enum xiw_tx_runner {
	XIW_TX_RUN_WORK,	/* may sleep: the TX work, a doorbell */
	XIW_TX_RUN_RX,		/* short responses (xiw_sched_from_rx()) */
	XIW_TX_RUN_POST,	/* short SQ WRs (xiw_sched_from_post()) */
};

#define XIW_TX_BVEC		40	/* payload pieces per FPDU */
#define XIW_TERM_TIMEOUT_MS	1000	/* a Terminate TCP will not take */
#define XIW_TX_BURST		64	/* FPDUs before yielding */
#define XIW_TX_RX_BURST		32	/* FPDUs RX or a post sends per pass */
#define XIW_TX_RX_READ_MAX	4096	/* longest Read RX answers itself */
#define XIW_TX_POST_MAX		4096	/* longest WR an atomic post sends */
#define XIW_TX_RX_CORK		256	/* FPDUs RX may batch (MSG_MORE) */
#define XIW_TX_BATCH_BYTES	16384	/* copied FPDUs sent by one sendmsg */
#define XIW_TX_BATCH_FPDU	4352	/* longest FPDU that is batched */
#define XIW_TX_BATCH_MAX	32	/* FPDUs per batch */
#define XIW_TX_PAGES		64	/* TX pages per QP (xiw_tx_pages.c) */
/* bounce pages: the longest FPDU MPA can frame (xiw_tx_pages.c) */
#define XIW_TX_BOUNCE_PAGES	DIV_ROUND_UP(XIW_MPA_HDR_LEN + U16_MAX + 3 + \
					     XIW_MPA_CRC_LEN, PAGE_SIZE)
#define XIW_TX_BACKOFF_MIN_MS	2	/* TCP short of memory: first wait */
#define XIW_TX_BACKOFF_MAX_MS	128	/* ... doubling up to this */

/*
 * A short response: one RX may send itself (xiw_sched_from_rx()): an
 * atomic, an Atomic Write, a Read of up to XIW_TX_RX_READ_MAX bytes.
 * Flush and Verify (which may write back or hash a lot) and longer Reads
 * are left to the TX work.
 */
static inline bool xiw_irqe_short(const struct xiw_irqe *e)
{
	return e->type == XIW_RQ_ATOMIC || e->type == XIW_RQ_AWRITE ||
	       (e->type == XIW_RQ_READ && e->len <= XIW_TX_RX_READ_MAX);
}

/*
 * The QP's ring of pages for copied FPDUs sent by reference
 * (xiw_tx_pages.c): page[idx] is being filled, up to off.
 */
struct xiw_tx_pages {
	struct page *page[XIW_TX_PAGES];
	u32 idx;
	u32 off;
	struct page *bounce[XIW_TX_BOUNCE_PAGES];
};

/*
 * An FPDU in the batch: where it ends, and the SQ WR its sending
 * completes (cidx valid if @complete).
 */
struct xiw_tx_batch_rec {
	u32 end;
	u32 cidx;
	u32 byte_len;
	bool complete;
};

struct xiw_tx_ctx {
	enum xiw_tx_kind kind;		/* what the current FPDU belongs to */

	/* SQ WR being sent (sq_active). */
	bool sq_active;
	struct xiw_sqe sqe;		/* copy of the SQE */
	u32 cidx;			/* its completion-order slot */
	u32 len;			/* message length */
	u32 done;			/* payload bytes framed so far */
	int nsge;
	struct xiw_lsge sge[XIW_MAX_SGE];
	struct xiw_orqe *orqe;		/* its ORQ entry, until framed */

	/* Read Response being sent (rr_active). */
	bool rr_active;
	bool rr_popped;			/* its IRQ slot is free already */
	struct xiw_irqe irqe;
	u32 rr_done;
	struct xiw_lsge rr_sge;

	u32 msn[XIW_QN_COUNT];		/* next MSN to send per QN */
	bool sq_empty_seen;		/* last fetch found no posted WQE */
	bool last_was_irq;		/* fairness between SQ and IRQ */
	bool zcopy;			/* send this FPDU's payload by reference */
	enum xiw_tx_runner run;		/* who runs TX now */
	bool post_left;			/* a post left a WR to the TX work */
	bool more;			/* RX: another response follows at once */
	u32 backoff_ms;			/* next memory-pressure wait, 0: none */
	bool bulk;			/* more to send than a run: xiw_sched_wq() */
	struct xiw_tx_zc *zc;		/* the SQ WR's zero-copy notifier */

	/* Current FPDU: header | payload pieces | pad + CRC. */
	union xiw_fpdu_hdr hdr;
	u8 trailer[8];
	struct bio_vec bv[XIW_TX_BVEC + 2];
	int nbv;
	int bv_idx;			/* first piece not fully sent */
	u32 bv_off;			/* bytes of it already sent */
	bool fpdu_active;
	bool fpdu_last;			/* completes the message */
	bool spliced;			/* bv[] are TX pages: MSG_SPLICE_PAGES */
	bool zc_whole;			/* zcopy, all of bv[] lent: one sendmsg */
	bool bounced;			/* bv[] are the bounce pages */
	struct xiw_tx_pages pages;

	/*
	 * Batch (xiw_tx.c): small copied FPDUs framed back to back and
	 * handed to TCP by one sendmsg. Holds no references: payload is
	 * copied in when an FPDU is added. Always sent before the FPDU
	 * above. XIW_TX_BATCH_BYTES of its own (kvmalloc, so that the QP's
	 * context stays a small allocation).
	 */
	u32 batch_len;			/* bytes in the batch */
	u32 batch_fpdu;			/* bytes of the FPDU sealed behind them */
	u32 batch_sent;			/* of them already in TCP */
	int batch_n;			/* FPDUs in the batch */
	int batch_done;			/* of them all in TCP */
	struct xiw_tx_batch_rec batch_rec[XIW_TX_BATCH_MAX];
	u8 *batch;
};

enum xiw_rx_state {
	XIW_RX_HDR,
	XIW_RX_DATA,
	XIW_RX_TRAILER,
	XIW_RX_DEAD,		/* after a fatal error: drop everything */
};

struct xiw_rx_ctx {
	enum xiw_rx_state state;
	union xiw_fpdu_hdr hdr;
	u32 hdr_got;
	u32 hdr_need;
	unsigned int op;
	u32 data_left;		/* payload bytes of this FPDU still to come */
	u32 trailer_got;
	u32 trailer_need;	/* pad + CRC */
	u8 trailer[8];
	u32 crc;
	u32 msn[XIW_QN_COUNT];	/* next expected MSN per QN */

	/* Tagged segment target. */
	struct xiw_mr *tmr;
	u64 tto;
	int taccess;			/* rights tmr is placed into with */

	/*
	 * Read, Atomic or Atomic Write Request being received: its region,
	 * for its execution (xiw_rx_req_exec()) or the IRQ
	 */
	struct xiw_mr *qmr;
	/* the responder's region cache (xiw_rx_region()), reference held */
	struct xiw_mr *rcache;
	/*
	 * The last IRQ entry RX left for TX to execute (a Flush, a Verify,
	 * a held atomic): atomics and Atomic Writes wait until TX popped it
	 * (xiw_rx_req_exec_held()).
	 */
	bool exec_wait;
	u32 exec_wait_idx;

	/* Bytes of the last RDMA Write message (Immediate Data byte_len). */
	u32 write_len;
	bool write_open;	/* that Write message is not complete yet */

	/* Untagged Send message in progress. */
	bool msg_active;
	u64 wr_id;
	u32 msg_len;		/* bytes placed so far */
	u32 msg_cap;		/* buffer size of the RQE */
	int nsge;
	struct xiw_lsge sge[XIW_MAX_SGE];
	bool rtr_send;		/* this message is the zero-length RTR */
	u8 rtr_type;		/* enum xiw_rtr the passive side waits for */

	/* Set during one tcp_read_sock() pass, acted on after it. */
	u32 irq_new;		/* requests queued in the IRQ: answer */
	bool irq_long;		/* one of them not short (xiw_irqe_short()) */
	bool tx_wake;		/* TX waited for ORD or a fence: kick */

	/* xiw_rx_data_ready() is running; it was called again meanwhile */
	bool running;
	bool again;
};

struct xiw_qp_dp {
	struct xiw_qp *qp;
	struct xiw_cep *cep;
	struct socket *sock;
	struct sock *sk;
	struct xiw_sk_ctx *sk_ctx;	/* sk_user_data: ->dp is us */
	unsigned long flags;
	refcount_t users;		/* kickers and socket callbacks */
	struct completion users_done;
	struct rcu_head rcu;		/* xiw_dp_get() may still read users */
	bool crc;
	u8 mpa_rev;			/* for restrack */
	enum xiw_rtr rtr;
	u32 mss;			/* TCP's, at RTS */
	u32 fpdu_mss;			/* FPDUs are sized for it (xiw_llp.c) */
	bool off_host;			/* the route leaves the host: tx_zcopy=auto */

	void (*saved_data_ready)(struct sock *sk);
	void (*saved_write_space)(struct sock *sk);

	struct work_struct tx_work;
	/*
	 * Kernel posts handed to the TX work on the next CPU since it last
	 * started, and whether its last start found several (posts then
	 * pile up: keep handing them over), xiw_sched_defer().
	 */
	atomic_t defer_posts;
	bool defer_batch;
	u8 defer_probe;
	struct work_struct err_work;
	struct work_struct rtr_work;	/* the peer's RTR, for the CM */
	struct delayed_work term_work;	/* Terminate send timeout */
	struct delayed_work tx_retry;	/* TX backing off: TCP short of memory */
	struct work_struct exec_work;	/* long Flush P / Verify */
	struct xiw_irqe exec_irqe;	/* what exec_work executes */
	struct xiw_mr *exec_mr;		/* its MR while it runs */
	int err_reason;

	spinlock_t lock;		/* cmpl ring, ORQ, IRQ */
	struct xiw_dp_cmpl *cmpl;	/* sq.num entries */
	u32 cmpl_num;
	u32 cmpl_head;			/* oldest pending */
	u32 cmpl_tail;			/* next free */
	struct xiw_orqe *orq;
	u32 ord;
	u32 orq_head, orq_tail;
	struct xiw_irqe *irq;
	u32 ird;
	u32 irq_head, irq_tail;

	/* Terminate to send (valid with XIW_DP_TERM_PENDING). */
	struct xiw_term_code term;
	u8 term_hdr[XIW_DDP_UNTAGGED_HDR_LEN + XIW_RDMAP_RREQ_LEN +
		    XIW_MPA_HDR_LEN];
	u32 term_hdr_len;
	/*
	 * FPDUs TX framed while it answered the IRQ before the Terminate
	 * (written by TX only), and the count xiw_dp_term_timeout() saw last
	 * (term_work only): the timeout waits on while it moves.
	 */
	u32 term_drained;
	u32 term_drained_seen;

	/*
	 * Zero-copy notifiers alive (xiw_tx_zc.c): counted from
	 * xiw_tx_zc_get() to their release; the flush waits for zero.
	 */
	struct xiw_zc_owner *zc_owner;
	atomic_t zc_pending;

	struct xiw_tx_ctx tx;
	struct xiw_rx_ctx rx;
};

static inline struct xiw_device *xiw_dp_dev(struct xiw_qp_dp *dp)
{
	return to_xiw_dev(dp->qp->base.device);
}

/* xiw_qp_stat_add() of the connection's QP */
static inline void xiw_dp_stat_add(struct xiw_qp_dp *dp, enum xiw_stat s,
				   u64 n)
{
	xiw_qp_stat_add(dp->qp, s, n);
}

/* xiw_dp.c: the data-path core */
void xiw_dp_cmpl_done(struct xiw_qp_dp *dp, u32 cidx, u8 status,
		      u32 byte_len);
bool xiw_dp_cmpl_zc_hold(struct xiw_qp_dp *dp, u32 cidx);
void xiw_dp_cmpl_zc_release(struct xiw_qp_dp *dp, u32 cidx, bool complete,
			    u32 byte_len);
enum ib_event_type xiw_dp_term_event(const struct xiw_term_code *tc);
/* What a received Terminate copied, when not an untagged header's QN */
#define XIW_DP_TERM_NOHDR	XIW_QN_COUNT
#define XIW_DP_TERM_TAGGED	(XIW_QN_COUNT + 1)
void xiw_dp_cmpl_remote_err(struct xiw_qp_dp *dp,
			    const struct xiw_term_code *tc, u32 qn, u32 msn);
void xiw_dp_mark_failing(struct xiw_qp_dp *dp);
void xiw_dp_fatal(struct xiw_qp_dp *dp, const struct xiw_term_code *tc,
		  const void *hdr, u32 hdr_len, int reason);
void xiw_dp_refuse(struct xiw_qp_dp *dp, const struct xiw_term_code *tc,
		   const void *hdr, u32 hdr_len, int reason);
void xiw_dp_resp_fatal(struct xiw_qp_dp *dp, const struct xiw_term_code *tc,
		       int reason);
bool xiw_dp_drain_stop(struct xiw_qp_dp *dp);
void xiw_dp_term_timeout(struct work_struct *w);
void xiw_dp_cmpl_flush(struct xiw_qp_dp *dp, bool discard, bool held);
void xiw_dp_put_kept(struct xiw_mr **kept, struct xiw_mr *mr);
void xiw_dp_put_kept_mrs(struct xiw_qp_dp *dp, struct xiw_mr *mr);
void xiw_dp_put_lsges(struct xiw_lsge *sge, int n);
struct xiw_qp_dp *xiw_dp_get(struct xiw_qp *qp);
struct xiw_qp_dp *xiw_dp_get_sk(struct sock *sk);

/*
 * The data path of a socket's QP, without a reference, or NULL, for a
 * socket callback that uses it only while it holds sk_callback_lock
 * (read): xiw_llp_stop() unhooks the data path under the write lock
 * before it waits for the data path's users, so it waits for that
 * callback too.
 */
static inline struct xiw_qp_dp *xiw_dp_of_sk(struct sock *sk)
{
	struct xiw_sk_ctx *ctx = sk->sk_user_data;

	return ctx ? ctx->dp : NULL;
}

void xiw_dp_put(struct xiw_qp_dp *dp);
void xiw_dp_rtr_received(struct xiw_qp_dp *dp);

/*
 * May the responder still execute and answer the peer's requests? Until
 * the data path fails; after that only while TX answers those a refused
 * request left before it (XIW_DP_TERM_DRAIN, xiw_dp_refuse()).
 */
static inline bool xiw_dp_answering(struct xiw_qp_dp *dp)
{
	return !test_bit(XIW_DP_ERROR, &dp->flags) ||
	       test_bit(XIW_DP_TERM_DRAIN, &dp->flags);
}

/* Are inbound requests waiting for their response (TX's IRQ)? */
static inline bool xiw_dp_irq_pending(struct xiw_qp_dp *dp)
{
	return READ_ONCE(dp->irq_head) != READ_ONCE(dp->irq_tail);
}

#endif /* XIW_DP_H */
