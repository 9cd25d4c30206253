// SPDX-License-Identifier: GPL-2.0
/*
 * xiw - TX engine: FPDU framing, pushing FPDUs to TCP, the batch, and the
 * loop that picks what goes next; Terminate and RTR frames. The two
 * halves that fill it are the requester (xiw_tx_sq.c: SQ WRs) and the
 * responder (xiw_tx_resp.c: answers to inbound requests); who runs the
 * engine, and where, is xiw_sched.c's. It reports completions and fatal
 * errors to the data-path core (xiw_dp.c), which owns the connection's
 * lifetime, the completion order and the error path.
 *
 * Work sources, in priority order at every FPDU boundary: a Terminate, the
 * RTR frame, then the SQ and the IRQ (inbound Read Requests) alternating
 * message by message so neither starves the other. A Terminate for a
 * request RX refused waits for the answers to the requests before it
 * (xiw_tx_term_next()).
 *
 * Every sendmsg is MSG_DONTWAIT: when TCP is full, TX records its
 * position inside the FPDU, sets XIW_DP_TX_NOSPACE and sk_write_space
 * requeues the work; when TCP is short of memory, a backoff timer does
 * too (xiw_tx_backoff()).
 *
 * Zero copy: payload pages of registered memory, a user's or a kernel
 * consumer's, are handed to TCP by reference (MSG_ZEROCOPY with xiw's own
 * ubuf_info, xiw_tx_zc.c) when the message is at least a page and every
 * page may be lent (xiw_tx_page_lendable()). Such a WR is done
 * only when TCP has released every page (acknowledged, no skb left), so a
 * completion - its own or any later one - always means the buffer is free.
 * The FPDU's header and trailer go with its payload, in one sendmsg, from
 * the QP's TX pages (xiw_tx_pages_frame_zc()); when those are all in
 * flight, from the QP's own (slab) memory, copied, in sendmsg calls of
 * their own. Copied FPDUs of up to a page
 * of payload go whole into a batch that one sendmsg hands to TCP (see
 * "The batch" below). Read Responses (nothing tells the responder when
 * its memory may change) and inline data are copied.
 */
#include <linux/highmem.h>
#include <linux/net.h>
#include <linux/tcp.h>
#include <linux/uio.h>
#include <net/sock.h>
#include <net/tcp.h>

#include "xiw_tx.h"
#include "xiw_sched.h"
#include "xiw_trace.h"

/* ------------------------------------------------------------------------
 * FPDU framing
 */
/*
 * May TCP hold @page of @mr by reference until it is acknowledged? Pages
 * of a user MR, of the DMA MR and of fast-registered MRs (a kernel
 * consumer's page cache, bio or page-allocator pages) that TCP may take a
 * reference on: not slab (sendpage_ok()) and not device memory, whose
 * references mean something else to its driver (ZONE_DEVICE: pmem,
 * device-dax).
 */
static bool xiw_tx_page_lendable(struct xiw_mr *mr, struct page *page)
{
	return mr->type != XIW_MR_MW && sendpage_ok(page) &&
	       !is_zone_device_page(page);
}

/*
 * Add payload bytes [@from, @from + @n) of the current message to the
 * FPDU as page pieces. Returns the bytes added (less than @n if the piece
 * array filled up) or -EFAULT.
 */
int xiw_tx_add_sges(struct xiw_tx_ctx *tx, struct xiw_lsge *sge,
		    int nsge, u32 from, u32 n, bool *splice_ok)
{
	u32 added = 0;
	int i = 0;

	/* Find the SGE holding byte @from. */
	while (i < nsge && from >= sge[i].len) {
		from -= sge[i].len;
		i++;
	}
	while (added < n && i < nsge && tx->nbv < XIW_TX_BVEC + 1) {
		u32 off, avail, chunk;
		struct page *page;

		page = xiw_stag_page(sge[i].mr, sge[i].addr + from, &off,
				     &avail);
		if (!page)
			return -EFAULT;
		chunk = min3(avail, sge[i].len - from, n - added);
		if (!xiw_tx_page_lendable(sge[i].mr, page))
			*splice_ok = false;
		bvec_set_page(&tx->bv[tx->nbv++], page, chunk, off);
		added += chunk;
		from += chunk;
		if (from == sge[i].len) {
			from = 0;
			i++;
		}
	}
	return added;
}

/*
 * May the FPDU being sealed, of @fpdu_len bytes, go into the batch (see
 * "The batch" below)? A copied FPDU of an SQ WR not sent zero-copy, or
 * of a response, that fits.
 */
bool xiw_tx_batch_fits(struct xiw_tx_ctx *tx, u32 fpdu_len)
{
	return !tx->zcopy && fpdu_len <= XIW_TX_BATCH_FPDU &&
	       (tx->kind == XIW_TX_RRESP ||
		(tx->kind == XIW_TX_SQ && !tx->zc)) &&
	       tx->batch_n < XIW_TX_BATCH_MAX &&
	       tx->batch_len + fpdu_len <= XIW_TX_BATCH_BYTES;
}

/*
 * Seal the FPDU in place at the end of the batch: header, payload pieces
 * (bv[1..nbv), pages or the SQE's inline data), zero pad, and the CRC
 * over those bytes in one pass, with no header or trailer piece of its
 * own. xiw_tx_batch_add() then takes it into the batch.
 */
static void xiw_tx_seal_batch(struct xiw_qp_dp *dp, u32 hdr_len, u32 pad,
			      u32 fpdu_len)
{
	struct xiw_tx_ctx *tx = &dp->tx;
	u8 *start = tx->batch + tx->batch_len, *p = start;
	int i;

	memcpy(p, &tx->hdr, hdr_len);
	p += hdr_len;
	for (i = 1; i < tx->nbv; i++) {
		struct bio_vec *bv = &tx->bv[i];
		void *va = kmap_local_page(bv->bv_page);

		memcpy(p, va + bv->bv_offset, bv->bv_len);
		kunmap_local(va);
		p += bv->bv_len;
	}
	/* pad, and the CRC field: zero without CRC */
	memset(p, 0, pad + XIW_MPA_CRC_LEN);
	if (dp->crc) {
		__le32 trailer = xiw_crc_trailer(xiw_crc_update(XIW_CRC32C_SEED,
								start,
								p + pad - start));

		memcpy(p + pad, &trailer, sizeof(trailer));
	}
	tx->batch_fpdu = fpdu_len;
}

/* The CRC32c @crc continued over the payload pieces tx->bv[1..nbv). */
u32 xiw_tx_crc_payload(const struct xiw_tx_ctx *tx, u32 crc)
{
	int i;

	for (i = 1; i < tx->nbv; i++) {
		const struct bio_vec *bv = &tx->bv[i];
		void *va = kmap_local_page(bv->bv_page);

		crc = xiw_crc_update(crc, va + bv->bv_offset, bv->bv_len);
		kunmap_local(va);
	}
	return crc;
}

/*
 * Finish the FPDU: MPA length, pad, CRC; in place in the batch if it goes
 * there, else the header and trailer pieces around the payload's. Callers
 * set tx->kind first.
 */
void xiw_tx_seal(struct xiw_qp_dp *dp, u32 hdr_len, u32 payload)
{
	struct xiw_tx_ctx *tx = &dp->tx;
	u32 ulpdu = hdr_len - XIW_MPA_HDR_LEN + payload;
	u32 pad = xiw_mpa_pad(ulpdu);
	u32 fpdu_len = xiw_mpa_fpdu_len(ulpdu);
	__le32 trailer;

	tx->hdr.ctrl.mpa_len = cpu_to_be16(ulpdu);
	tx->bv_idx = 0;
	tx->bv_off = 0;
	tx->fpdu_active = true;
	tx->batch_fpdu = 0;
	tx->bounced = false;
	tx->zc_whole = false;
	if (xiw_tx_batch_fits(tx, fpdu_len)) {
		xiw_tx_seal_batch(dp, hdr_len, pad, fpdu_len);
		return;
	}
	/*
	 * Too long to batch, copied anyway: into the QP's TX pages. A Read
	 * Response is copied there whatever its length, while its access
	 * section is open (xiw_tx_resp_build()).
	 */
	tx->spliced = !tx->zcopy &&
		      (fpdu_len > XIW_TX_BATCH_FPDU || tx->kind == XIW_TX_RRESP) &&
		      xiw_tx_pages_frame(dp, hdr_len, pad, fpdu_len);
	if (tx->spliced)
		return;
	/* Zero copy: header and trailer lent from the ring too, if it can. */
	tx->zc_whole = tx->zcopy && xiw_tx_pages_frame_zc(dp, hdr_len, pad);
	if (tx->zc_whole)
		return;
	memset(tx->trailer, 0, sizeof(tx->trailer));
	xiw_tx_bv_virt(&tx->bv[0], &tx->hdr, hdr_len);
	if (dp->crc) {
		u32 crc = xiw_crc_update(XIW_CRC32C_SEED, &tx->hdr, hdr_len);

		crc = xiw_tx_crc_payload(tx, crc);
		crc = xiw_crc_update(crc, tx->trailer, pad);
		trailer = xiw_crc_trailer(crc);
		memcpy(tx->trailer + pad, &trailer, sizeof(trailer));
	}
	xiw_tx_bv_virt(&tx->bv[tx->nbv++], tx->trailer,
		       pad + XIW_MPA_CRC_LEN);
	/*
	 * The ring had no room: a Read Response is still copied now, while
	 * its access section is open, into the bounce pages it was given
	 * (xiw_tx_pages_prepare()), so nothing is read from the responder's
	 * memory once the section ends.
	 */
	if (tx->kind == XIW_TX_RRESP && tx->nbv > 2 &&
	    !WARN_ON_ONCE(xiw_tx_pages_bounce(dp, GFP_ATOMIC)))
		tx->bounced = true;
}

/*
 * TCP did not take all of an FPDU whose payload pieces are still the
 * consumer's memory (copy mode, not batched, the ring busy): the rest
 * goes to the bounce pages. The WR's completion, which a Terminate or a
 * flush may bring before this FPDU is all in TCP, then means that its
 * buffer is free, as every completion does. Without memory for them the
 * pieces stay as they are, and the consumer's buffer is read until the
 * FPDU is sent.
 */
static void xiw_tx_unborrow(struct xiw_qp_dp *dp)
{
	struct xiw_tx_ctx *tx = &dp->tx;

	if (tx->spliced || tx->zcopy || tx->bounced || tx->nbv <= 2 ||
	    tx->kind != XIW_TX_SQ)
		return;
	if (xiw_tx_pages_bounce(dp, xiw_tx_gfp(tx)))
		xiw_dp_dbg(dp, "no bounce pages: the FPDU stays in the WR's buffer\n");
	else
		tx->bounced = true;
}

/*
 * TCP short of memory. tcp_sendmsg_locked() with MSG_DONTWAIT also
 * returns -EAGAIN when it cannot allocate or charge memory: an skb or a
 * page fragment under GFP_ATOMIC, or the tcp_mem hard limit
 * (sk_wmem_schedule(), which then moderates the send buffer down to
 * SOCK_MIN_SNDBUF). The socket may still read as writeable then - a few
 * KiB queued against the moderated buffer - and if nothing is in flight
 * no sk_write_space will ever come, so retrying at once would spin, in
 * softirq when RX runs TX, for as long as the shortage lasts. TX backs
 * off instead, as sk_stream_wait_memory() makes a blocking sender wait:
 * it stays parked with XIW_DP_TX_NOSPACE (tcp_sendmsg_locked() set
 * SOCK_NOSPACE, so an ACK that frees memory still calls sk_write_space,
 * which requeues TX), and tx_retry requeues it after
 * XIW_TX_BACKOFF_MIN_MS, doubling up to XIW_TX_BACKOFF_MAX_MS while the
 * sends keep failing. Any byte TCP takes ends the backoff. Caller owns
 * TX_BUSY (tx->backoff_ms).
 */
static void xiw_tx_backoff(struct xiw_qp_dp *dp)
{
	struct xiw_tx_ctx *tx = &dp->tx;
	u32 ms = tx->backoff_ms ? tx->backoff_ms : XIW_TX_BACKOFF_MIN_MS;

	tx->backoff_ms = min_t(u32, ms * 2, XIW_TX_BACKOFF_MAX_MS);
	xiw_dp_dbg(dp, "TCP short of memory: TX retries in %u ms\n", ms);
	mod_delayed_work(xiw_sched_hi_wq, &dp->tx_retry, msecs_to_jiffies(ms));
}

/*
 * TCP took nothing (-EAGAIN, or 0): wait for sk_write_space. True if the
 * socket has room again already: try once more. A socket without room
 * (not writeable) always waits for sk_write_space. A writeable one is
 * retried once per push (@retried): sk_write_space may have run between
 * the failed sendmsg and the NOSPACE bit, and nobody would requeue TX;
 * failing again with room is TCP short of memory: back off.
 */
static bool xiw_tx_nospace(struct xiw_qp_dp *dp, bool *retried)
{
	xiw_dp_stat_add(dp, XIW_STAT_TX_NOSPACE, 1);
	set_bit(XIW_DP_TX_NOSPACE, &dp->flags);
	/* sk_write_space may have run already */
	smp_mb__after_atomic();
	if (!sk_stream_is_writeable(dp->sk))
		return false;
	if (*retried) {
		xiw_tx_backoff(dp);
		return false;
	}
	*retried = true;
	return test_and_clear_bit(XIW_DP_TX_NOSPACE, &dp->flags);
}

/* Inlined into both pushes: one call per FPDU or batch is TCP's. */
static __always_inline int xiw_tx_sendmsg(struct xiw_qp_dp *dp,
					  struct msghdr *msg)
{
	xiw_dp_stat_add(dp, XIW_STAT_TX_SENDMSG, 1);
	if (xiw_tx_locked(&dp->tx))
		/* the socket's spinlock: xiw_sched_from_rx(), _from_post() */
		return tcp_sendmsg_locked(dp->sk, msg, msg_data_left(msg));
	return sock_sendmsg(dp->sock, msg);
}

/* Send the current FPDU. 0 when it is all in TCP, -EAGAIN, or an error. */
static int xiw_tx_push(struct xiw_qp_dp *dp)
{
	struct xiw_tx_ctx *tx = &dp->tx;
	bool retried = false;

	while (tx->bv_idx < tx->nbv) {
		int first = tx->bv_idx, last, i;
		struct msghdr msg = {};
		bool splice = false;
		size_t len = 0;
		int rv;

		if (!tx->zcopy) {
			last = tx->nbv;
		} else if (tx->zc_whole) {
			last = tx->nbv;
			splice = true;
		} else if (first == 0 || first == tx->nbv - 1) {
			last = first + 1;
		} else {
			last = tx->nbv - 1;
			splice = true;
		}
		for (i = first; i < last; i++)
			len += tx->bv[i].bv_len;
		iov_iter_bvec(&msg.msg_iter, ITER_SOURCE, &tx->bv[first],
			      last - first, len);
		iov_iter_advance(&msg.msg_iter, tx->bv_off);
		msg.msg_flags = MSG_DONTWAIT | MSG_NOSIGNAL;
		if (last < tx->nbv || tx->more)
			msg.msg_flags |= MSG_MORE;
		if (tx->spliced)
			/* the QP's TX pages, written again only when free */
			msg.msg_flags |= MSG_SPLICE_PAGES;
		if (splice) {
			/* TCP references the pages until they are acked. */
			msg.msg_flags |= MSG_ZEROCOPY;
			msg.msg_ubuf = xiw_tx_zc_uarg(tx->zc);
		}
		rv = xiw_tx_sendmsg(dp, &msg);
		if (rv <= 0) {
			if (rv == -EAGAIN || rv == 0) {
				if (xiw_tx_nospace(dp, &retried))
					continue;
				xiw_tx_unborrow(dp);
				return -EAGAIN;
			}
			return rv;
		}
		tx->backoff_ms = 0;
		/* Advance by what TCP took, piece by piece. */
		len = rv;
		while (len) {
			u32 left = tx->bv[tx->bv_idx].bv_len - tx->bv_off;

			if (len < left) {
				tx->bv_off += len;
				break;
			}
			len -= left;
			tx->bv_idx++;
			tx->bv_off = 0;
		}
		/* Skip empty pieces. */
		while (tx->bv_idx < tx->nbv &&
		       tx->bv[tx->bv_idx].bv_len == tx->bv_off) {
			tx->bv_idx++;
			tx->bv_off = 0;
		}
	}
	tx->fpdu_active = false;
	return 0;
}

/* ------------------------------------------------------------------------
 * Terminate and RTR frames
 */
static void xiw_tx_build_term(struct xiw_qp_dp *dp)
{
	struct xiw_rdmap_term *t = &dp->tx.hdr.term;
	struct xiw_term_code tc = dp->term;
	bool tagged = false;
	u32 rlen, copy = 0;

	memset(t, 0, sizeof(*t));
	if (dp->term_hdr_len >= XIW_MPA_HDR_LEN + 1)
		tagged = dp->term_hdr[2] & XIW_DDP_T;
	/* Copy only what was received of the offending header. */
	if (tc.hdrct & XIW_TERM_HDRCT_D) {
		copy = xiw_term_len(tc.hdrct, tagged) - XIW_RDMAP_TERM_MIN - 2;
		if (dp->term_hdr_len < XIW_MPA_HDR_LEN + copy) {
			tc.hdrct &= ~(XIW_TERM_HDRCT_D | XIW_TERM_HDRCT_R);
			copy = 0;
		}
	}
	if ((tc.hdrct & XIW_TERM_HDRCT_M) &&
	    dp->term_hdr_len < XIW_MPA_HDR_LEN)
		tc.hdrct &= ~XIW_TERM_HDRCT_M;
	rlen = xiw_term_len(tc.hdrct, tagged);
	t->term_ctrl = xiw_term_ctrl(&tc);
	if (tc.hdrct & (XIW_TERM_HDRCT_M | XIW_TERM_HDRCT_D))
		memcpy(&t->ddp_seg_len, dp->term_hdr, XIW_MPA_HDR_LEN);
	if (copy)
		memcpy(t->term_hdrs, dp->term_hdr + XIW_MPA_HDR_LEN, copy);
	xiw_tx_untagged(dp, XIW_RDMAP_OP_TERMINATE, XIW_QN_TERM, 0, true, 0);
	dp->tx.nbv = 1;
	dp->tx.zcopy = false;
	dp->tx.kind = XIW_TX_TERM;
	xiw_tx_seal(dp, XIW_UT_FPDU_HDR_LEN(rlen), 0);
	dp->tx.fpdu_last = true;
}

static void xiw_tx_build_rtr(struct xiw_qp_dp *dp)
{
	struct xiw_tx_ctx *tx = &dp->tx;
	struct xiw_rdmap_rreq *r = &tx->hdr.rreq;
	struct xiw_orqe *o;
	u32 hlen;

	memset(&tx->hdr, 0, sizeof(tx->hdr));
	switch (dp->rtr) {
	case XIW_RTR_WRITE:
		xiw_tx_tagged(dp, XIW_RDMAP_OP_WRITE, XIW_RTR_READ_STAG, 0,
			      true);
		hlen = sizeof(struct xiw_ddp_tagged);
		break;
	case XIW_RTR_READ:
		xiw_tx_untagged(dp, XIW_RDMAP_OP_READ_REQ, XIW_QN_REQ, 0, true,
				0);
		r->sink_stag = cpu_to_be32(XIW_RTR_READ_STAG);
		r->src_stag = cpu_to_be32(XIW_RTR_READ_STAG);
		spin_lock_bh(&dp->lock);
		o = xiw_tx_sq_orq_add(dp, XIW_RQ_READ);
		o->rtr = true;
		o->sink_stag = XIW_RTR_READ_STAG;
		spin_unlock_bh(&dp->lock);
		hlen = sizeof(*r);
		break;
	default:
		xiw_tx_untagged(dp, XIW_RDMAP_OP_SEND, XIW_QN_SEND, 0, true, 0);
		hlen = sizeof(struct xiw_ddp_untagged);
		break;
	}
	tx->nbv = 1;
	tx->zcopy = false;
	tx->kind = XIW_TX_RTR;
	xiw_tx_seal(dp, hlen, 0);
	dp->rtr = XIW_RTR_NONE;
}

/*
 * The FPDU in the context is all in TCP, or (@batched) copied into the
 * batch, whose sending completes its WR: account for it.
 */
static void xiw_tx_fpdu_sent(struct xiw_qp_dp *dp, bool batched)
{
	struct xiw_tx_ctx *tx = &dp->tx;

	trace_xiw_fpdu_tx(dp, &tx->hdr);
	xiw_dp_stat_add(dp, XIW_STAT_TX_FPDUS, 1);
	xiw_dp_stat_add(dp, XIW_STAT_TX_BYTES,
			xiw_mpa_fpdu_len(be16_to_cpu(tx->hdr.ctrl.mpa_len)));

	switch (tx->kind) {
	case XIW_TX_TERM:
		trace_xiw_term_tx(dp, tx->hdr.term.term_ctrl);
		xiw_dp_stat_add(dp, XIW_STAT_TERM_SENT, 1);
		clear_bit(XIW_DP_TERM_PENDING, &dp->flags);
		queue_work(xiw_sched_hi_wq, &dp->err_work);
		break;
	case XIW_TX_SQ:
		xiw_tx_sq_sent(dp, batched);
		break;
	case XIW_TX_RRESP:
		xiw_tx_resp_sent(dp);
		break;
	default:
		break;
	}
	tx->kind = XIW_TX_NONE;
}

/* ------------------------------------------------------------------------
 * The batch: many small FPDUs, one sendmsg
 *
 * An FPDU of at most XIW_TX_BATCH_FPDU bytes whose payload is copied
 * anyway (an atomic, Read or commit request, any FPDU of a Send or Write
 * not sent by reference: a message of up to a page, or a segment of a
 * longer one where the MSS is small; any response on QN 3, a Read
 * Response RX answers) is not pushed on its own: its bytes are copied
 * into tx->batch, and the batch goes to TCP in one sendmsg when TX has
 * nothing more to frame, when the next FPDU does not go in, or when the
 * batch is full. A burst of small WRs thus leaves as one TCP segment, and
 * a responder reading it answers all of it in one RX pass, with one send
 * again (xiw_sched_from_rx()). A page is batched too: a kernel ULP's
 * 4 KiB Write and the Send that follows it (an NVMe-oF read's data and
 * response) cost one sendmsg instead of two, which is worth more than
 * the page's second copy (NEWS, "TX batches and
 * the burst doorbell").
 *
 * Completion stays exact: a WR that completes when it is sent completes
 * when the last byte of its last FPDU is in TCP (xiw_tx_batch_done()),
 * so after a partial send (-EAGAIN) only the WRs wholly in TCP are done
 * and the rest of the batch is resumed first thing on the next run, as
 * the rest of a single FPDU is. The batch holds no references (the payload
 * is copied when the FPDU is added, and the WR's SGEs are released then).
 * Nothing else is sent while a batch is pending, so the order on the wire
 * is the order of framing; a Terminate is framed only at an FPDU boundary
 * and goes after the batch, like an FPDU already framed.
 */

/* Complete the WRs whose FPDUs are all in TCP now. */
static void xiw_tx_batch_done(struct xiw_qp_dp *dp)
{
	struct xiw_tx_ctx *tx = &dp->tx;

	while (tx->batch_done < tx->batch_n &&
	       tx->batch_rec[tx->batch_done].end <= tx->batch_sent) {
		struct xiw_tx_batch_rec *r = &tx->batch_rec[tx->batch_done++];

		if (r->complete)
			xiw_dp_cmpl_done(dp, r->cidx, IB_WC_SUCCESS,
					 r->byte_len);
	}
}

static void xiw_tx_batch_reset(struct xiw_tx_ctx *tx)
{
	tx->batch_len = 0;
	tx->batch_sent = 0;
	tx->batch_n = 0;
	tx->batch_done = 0;
}

/*
 * Add the FPDU just framed to the batch if xiw_tx_seal() sealed it there
 * (a small copied one that fits). True if it did: the FPDU is accounted
 * for and TX may frame the next one.
 */
static bool xiw_tx_batch_add(struct xiw_qp_dp *dp)
{
	struct xiw_tx_ctx *tx = &dp->tx;
	struct xiw_tx_batch_rec *r;

	if (!tx->batch_fpdu)
		return false;
	tx->batch_len += tx->batch_fpdu;
	tx->batch_fpdu = 0;

	r = &tx->batch_rec[tx->batch_n++];
	r->end = tx->batch_len;
	r->complete = tx->kind == XIW_TX_SQ && tx->fpdu_last &&
		      !xiw_tx_op_needs_ord(tx->sqe.opcode);
	r->cidx = tx->cidx;
	r->byte_len = tx->len;
	tx->fpdu_active = false;
	xiw_tx_fpdu_sent(dp, true);
	return true;
}

/*
 * Hand the batch to TCP: 0 when all of it is in TCP (the batch is empty
 * again), -EAGAIN (TX resumes it on the next run), or an error.
 */
static int xiw_tx_batch_push(struct xiw_qp_dp *dp)
{
	struct xiw_tx_ctx *tx = &dp->tx;
	bool retried = false;

	while (tx->batch_sent < tx->batch_len) {
		struct kvec kv = {
			.iov_base = tx->batch + tx->batch_sent,
			.iov_len = tx->batch_len - tx->batch_sent,
		};
		struct msghdr msg = {
			.msg_flags = MSG_DONTWAIT | MSG_NOSIGNAL,
		};
		int rv;

		iov_iter_kvec(&msg.msg_iter, ITER_SOURCE, &kv, 1, kv.iov_len);
		rv = xiw_tx_sendmsg(dp, &msg);
		if (rv <= 0) {
			if (rv && rv != -EAGAIN)
				return rv;
			if (xiw_tx_nospace(dp, &retried))
				continue;
			return -EAGAIN;
		}
		tx->backoff_ms = 0;
		tx->batch_sent += rv;
		xiw_tx_batch_done(dp);
	}
	xiw_tx_batch_reset(tx);
	return 0;
}

/*
 * A Terminate is pending. If it is for a request RX refused
 * (XIW_DP_TERM_DRAIN, xiw_dp_refuse()), the requests the peer sent
 * before that one are answered first, oldest first, as usual: every IRQ
 * entry (RX queued none after the refusal), including the one whose
 * response is half sent or with the exec work. An SQ message of ours
 * that is half sent is finished first, so that no response goes between
 * two of its FPDUs; no other SQ WR is started. A response that cannot be
 * given replaces the Terminate with its own and ends the drain
 * (xiw_dp_resp_fatal()), as does any later failure, the flush or the
 * timeout (xiw_dp_drain_stop()). Before the RTR exchange is done nothing
 * is answered. Then the Terminate: framed only once the responses before
 * it are framed and pushed, behind them on the wire. Same returns as
 * xiw_tx_next(); 0 also while the exec work has the IRQ head (it kicks
 * TX when done).
 */
static int xiw_tx_term_next(struct xiw_qp_dp *dp)
{
	struct xiw_tx_ctx *tx = &dp->tx;
	int rv;

	while (test_bit_acquire(XIW_DP_TERM_DRAIN, &dp->flags)) {
		bool rtr = dp->rtr != XIW_RTR_NONE ||
			   test_bit(XIW_DP_RTR_WAIT, &dp->flags);

		if (!rtr && tx->sq_active && tx->done) {
			/* 0: the WR failed, and its failure ends the drain */
			rv = xiw_tx_sq_next(dp) > 0;
		} else if (!rtr && (tx->rr_active || xiw_dp_irq_pending(dp))) {
			rv = xiw_tx_resp_next(dp, false);
		} else {
			xiw_dp_drain_stop(dp);	/* nothing (more) to answer */
			break;
		}
		if (rv) {
			/* xiw_dp_term_timeout() waits on while this moves */
			if (rv > 0)
				WRITE_ONCE(dp->term_drained,
					   dp->term_drained + 1);
			return rv;
		}
		if (test_bit(XIW_DP_TERM_DRAIN, &dp->flags))
			return 0;	/* the exec work kicks TX */
	}
	/* the timeout gave up meanwhile */
	if (!test_bit(XIW_DP_TERM_PENDING, &dp->flags))
		return 0;
	xiw_tx_build_term(dp);
	return 1;
}

/*
 * Choose and frame the next FPDU. Returns 1 if there is one, 0 if TX has
 * nothing to do, or a negative error. A message in progress is finished
 * before another starts; at message boundaries Read Responses and SQ
 * messages alternate, and a Read Response always may go when the SQ is
 * blocked by ORD or a fence (else two peers could wait on each other).
 */
static int xiw_tx_next(struct xiw_qp_dp *dp)
{
	struct xiw_tx_ctx *tx = &dp->tx;
	bool waiting;
	int rv;

	if (test_bit_acquire(XIW_DP_TERM_PENDING, &dp->flags))
		return xiw_tx_term_next(dp);
	if (test_bit(XIW_DP_ERROR, &dp->flags))
		return 0;
	if (dp->rtr != XIW_RTR_NONE) {
		xiw_tx_build_rtr(dp);
		return 1;
	}
	if (test_bit(XIW_DP_RTR_WAIT, &dp->flags))
		return 0;

	/* a message in progress first */
	if (tx->rr_active && tx->rr_done)
		return xiw_tx_resp_next(dp, false);
	if (tx->sq_active && tx->done)
		return xiw_tx_sq_next(dp);

	/* a response if the SQ went last, else the SQ if it may go */
	waiting = tx->rr_active || xiw_dp_irq_pending(dp);
	if (waiting && !tx->last_was_irq) {
		rv = xiw_tx_resp_next(dp, false);
		if (rv)
			return rv;
		if (test_bit(XIW_DP_ERROR, &dp->flags))
			return 0;
		waiting = false;
	}
	rv = xiw_tx_sq_next(dp);
	if (rv)
		return rv > 0;
	if (!waiting || test_bit(XIW_DP_ERROR, &dp->flags))
		return 0;
	return xiw_tx_resp_next(dp, false);
}

/*
 * Choose the next FPDU when an atomic post runs TX (xiw_sched_from_post()):
 * the SQ's short WRs only (xiw_tx_sq_ready() leaves a longer one to the
 * TX work and sets tx->post_left). Nothing else: a Terminate, the RTR
 * frame and responses are someone else's to send, and whoever made them
 * due kicked TX for them (TX_MORE or the TX work), so the post runs only
 * when none is due. Same returns as xiw_tx_next().
 */
static int xiw_tx_next_post(struct xiw_qp_dp *dp)
{
	struct xiw_tx_ctx *tx = &dp->tx;

	if ((READ_ONCE(dp->flags) &
	     (BIT(XIW_DP_TERM_PENDING) | BIT(XIW_DP_ERROR) |
	      BIT(XIW_DP_RTR_WAIT))) ||
	    dp->rtr != XIW_RTR_NONE || tx->rr_active ||
	    xiw_dp_irq_pending(dp))
		return 0;
	return xiw_tx_sq_next(dp) > 0;
}

/* The runner's choice of the next FPDU: all of TX's work, or its part. */
static int xiw_tx_pick(struct xiw_qp_dp *dp)
{
	switch (dp->tx.run) {
	case XIW_TX_RUN_RX:
		return xiw_tx_resp_next_rx(dp);
	case XIW_TX_RUN_POST:
		return xiw_tx_next_post(dp);
	default:
		return xiw_tx_next(dp);
	}
}

/*
 * May the FPDU just framed go with MSG_MORE, so that TCP puts the next
 * one in the same segment? Only when RX answers a burst of short
 * requests (xiw_sched_from_rx()) and the next response certainly follows
 * in this pass: the last one goes without it, so nothing stays corked (an
 * error on the way leaves a Terminate, sent uncorked, or ends the
 * connection). The requests one RX pass brought are answered in one
 * segment. TX in process context does not cork: holding FPDUs back until
 * the end of a pass leaves the receiver idle meanwhile, which costs
 * bandwidth and gains nothing (NEWS, "Corking in
 * process context"). @burst: FPDUs left in the pass's budget.
 */
static bool xiw_tx_more(struct xiw_qp_dp *dp, int burst)
{
	struct xiw_tx_ctx *tx = &dp->tx;

	return tx->run == XIW_TX_RUN_RX && burst && tx->fpdu_last &&
	       xiw_mpa_fpdu_len(be16_to_cpu(tx->hdr.ctrl.mpa_len)) <=
	       XIW_TX_RX_CORK && xiw_tx_resp_head_short(dp);
}

/* A sendmsg failed: -EAGAIN waits for space, anything else is fatal. */
static void xiw_tx_push_failed(struct xiw_qp_dp *dp, int rv)
{
	if (rv == -EAGAIN)
		return;
	xiw_dp_dbg(dp, "sendmsg: %d\n", rv);
	dp->tx.fpdu_active = false;
	xiw_tx_batch_reset(&dp->tx);
	clear_bit(XIW_DP_TERM_PENDING, &dp->flags);
	xiw_dp_drain_stop(dp);
	if (!test_and_set_bit(XIW_DP_ERROR, &dp->flags))
		dp->err_reason = rv;
	queue_work(xiw_sched_hi_wq, &dp->err_work);
}

/*
 * A pass of a runner that may sleep ends after XIW_TX_BURST FPDUs or after
 * FPDUs of tx_budget_kb KiB on the wire, whichever comes first, and the TX
 * work then requeues itself. FPDUs span up to 64 KiB (fpdu_segments), so
 * a count alone let one pass send 4 MiB before the worker could run the
 * next item of its queue; short FPDUs still stop at the count. RX and an
 * atomic post send short FPDUs only and keep their count
 * (XIW_TX_RX_BURST). The default, 1 MiB, is the smallest that costs a
 * storage target nothing: at 256 KiB NVMe-oF's 128 KiB reads in one VM
 * fell by a sixth (performance.md, "A TX pass's budget in bytes").
 */
static unsigned int tx_budget_kb = 1024;
module_param(tx_budget_kb, uint, 0644);
MODULE_PARM_DESC(tx_budget_kb,
		 "KiB of FPDUs a TX pass sends before it yields, besides its 64 FPDUs (0: no byte limit; default 1024)");

/*
 * The TX loop, run by the owner of XIW_DP_TX_BUSY. Returns 1 if the burst
 * budget ran out with work left. Small FPDUs go into the batch, which is
 * sent before any other FPDU and when the loop ends.
 */
int xiw_tx_loop(struct xiw_qp_dp *dp)
{
	struct xiw_tx_ctx *tx = &dp->tx;
	int burst = xiw_tx_locked(tx) ? XIW_TX_RX_BURST : XIW_TX_BURST;
	unsigned int kb = READ_ONCE(tx_budget_kb);
	u32 limit = U32_MAX, framed = 0, fpdus = 0;
	int rv, left = 1;

	if (kb && !xiw_tx_locked(tx))
		limit = min(kb, 1U << 20) * 1024;
	if (test_bit(XIW_DP_STOPPED, &dp->flags))
		return 0;
	for (;;) {
		if (!tx->fpdu_active) {
			if (fpdus == burst || framed >= limit)
				break;
			rv = xiw_tx_pick(dp);
			if (rv <= 0) {
				if (rv < 0)
					xiw_dp_fatal(dp, NULL, NULL, 0, rv);
				left = 0;
				break;
			}
			fpdus++;
			framed += xiw_mpa_fpdu_len(be16_to_cpu(tx->hdr.ctrl.mpa_len));
			if (xiw_tx_batch_add(dp))
				continue;
			tx->more = xiw_tx_more(dp, burst - fpdus);
		}
		rv = xiw_tx_batch_push(dp);
		if (!rv)
			rv = xiw_tx_push(dp);
		if (rv) {
			xiw_tx_push_failed(dp, rv);
			left = 0;
			goto out;
		}
		xiw_tx_fpdu_sent(dp, false);
	}
	rv = xiw_tx_batch_push(dp);
	if (rv) {
		xiw_tx_push_failed(dp, rv);
		left = 0;
	}
out:
	trace_xiw_tx_pass(dp, fpdus, framed, left);
	return left;
}

bool xiw_tx_idle(struct xiw_qp_dp *dp)
{
	struct xiw_qp *qp = dp->qp;

	return !test_bit(XIW_DP_TX_BUSY, &dp->flags) && !dp->tx.fpdu_active &&
	       !dp->tx.batch_len && !dp->tx.sq_active && !dp->tx.rr_active &&
	       !xiw_dp_irq_pending(dp) &&
	       !atomic_read(&dp->zc_pending) &&
	       !xiw_wq_published(&qp->sq, READ_ONCE(qp->sq.cons), 0);
}
