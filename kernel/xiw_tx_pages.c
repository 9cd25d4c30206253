// SPDX-License-Identifier: GPL-2.0
/*
 * xiw - TX pages: a QP's own pages for the FPDUs it copies.
 *
 * Why not let TCP copy an FPDU whose payload is not sent by reference
 * (every Read Response, any Write or Send in copy mode) into the socket's
 * page fragment: that fragment is one 32 KiB page per socket, reused only
 * when no skb references it any more; with responses in flight it never
 * is, so TCP allocates a fresh one every 32 KiB, and a kernel with
 * CONFIG_INIT_ON_ALLOC_DEFAULT_ON (Debian's) zeroes every page it
 * allocates, to be overwritten right after (NEWS,
 * "TX pages").
 *
 * Here TX copies header, payload, pad and CRC of such an FPDU into a ring
 * of pages the QP owns and hands them to TCP by reference
 * (MSG_SPLICE_PAGES; TCP takes a page reference per skb fragment). Bytes
 * handed to TCP are never written again while TCP holds a reference to
 * their page: until page_ref_count() is 1 (ours) only the page's unused
 * tail is filled, then the page is reused from its start. So the data a
 * peer receives is what was copied when the FPDU was framed (a Read
 * Response stays a copy of the region at send time, security.md 3.12),
 * even when TCP retransmits, and the CRC is computed over that copy.
 * Pages are allocated on first use, up to XIW_TX_PAGES per QP; when every
 * one is still in flight, TCP copies the FPDU into its page fragment and
 * tx_pages_busy counts it.
 *
 * Only the TX runner (owner of XIW_DP_TX_BUSY) uses the ring; RX and an
 * atomic post run TX with GFP_ATOMIC (xiw_tx_gfp()), and a kernel QP's TX
 * work with NOIO semantics, as it may be in a storage ULP's writeback
 * path. A user QP's pages are charged to
 * the memory cgroup of the process that created it, also when the TX work
 * or softirq RX allocates them (xiw_qp_memcg_enter()); the charge goes
 * with the page. The pages are released with the data path; skbs still
 * holding one keep it until they are freed.
 */
#include <linux/gfp.h>
#include <linux/highmem.h>
#include <linux/mm.h>

#include "xiw_tx.h"

/*
 * The page of the ring at @i, allocated if need be (charged to the QP's
 * creator, see xiw_qp_gfp()); NULL if busy or out of memory.
 */
static struct page *xiw_tx_pages_take(struct xiw_qp_dp *dp, u32 i, gfp_t gfp)
{
	struct xiw_tx_pages *p = &dp->tx.pages;
	struct page *page = p->page[i];
	struct mem_cgroup *memcg;

	if (!page) {
		memcg = xiw_qp_memcg_enter(dp->qp);
		page = alloc_page(xiw_qp_gfp(dp->qp, gfp) | __GFP_NOWARN);
		xiw_qp_memcg_exit(memcg);
		p->page[i] = page;
		return page;
	}
	if (page_ref_count(page) != 1)
		return NULL;
	/*
	 * TCP dropped its last reference after its last read of the page
	 * (put_page() is a full barrier); order our writes after this load.
	 */
	smp_acquire__after_ctrl_dep();
	return page;
}

/*
 * Copy @len bytes from @src into the ring at (p->idx, p->off) and move
 * that position on; update *@crc over the copy unless @crc is NULL.
 */
static void xiw_tx_pages_copy(struct xiw_tx_pages *p, const void *src,
			      u32 len, u32 *crc)
{
	while (len) {
		u32 n = min_t(u32, len, PAGE_SIZE - p->off);
		void *dst;

		if (!n) {
			p->idx = (p->idx + 1) % XIW_TX_PAGES;
			p->off = 0;
			continue;
		}
		dst = kmap_local_page(p->page[p->idx]) + p->off;
		memcpy(dst, src, n);
		if (crc)
			*crc = xiw_crc_update(*crc, dst, n);
		kunmap_local(dst);
		src += n;
		len -= n;
		p->off += n;
	}
}

/*
 * Room in the ring for an FPDU of @total bytes: the rest of the current
 * page (the whole of it if TCP is done with it), then whole pages nobody
 * references, allocated with @gfp where missing. True with its start in
 * *@pidx, *@poff. Room only grows while nobody frames (TCP lets go of
 * pages, never takes one back), so room found for @total is still there
 * for an FPDU of at most @total framed later by the same TX runner.
 */
static bool xiw_tx_pages_room(struct xiw_qp_dp *dp, u32 total, gfp_t gfp,
			      u32 *pidx, u32 *poff)
{
	struct xiw_tx_pages *p = &dp->tx.pages;
	u32 idx = p->idx, off = 0, need, i;

	if (total > (XIW_TX_PAGES - 1) * PAGE_SIZE)
		return false;
	if (!xiw_tx_pages_take(dp, idx, gfp)) {
		if (!p->page[idx])
			return false;
		off = p->off;		/* in flight: only its unused tail */
		if (off == PAGE_SIZE) {
			idx = (idx + 1) % XIW_TX_PAGES;
			off = 0;
			if (!xiw_tx_pages_take(dp, idx, gfp))
				return false;
		}
	}
	need = total > PAGE_SIZE - off ?
	       DIV_ROUND_UP(total - (PAGE_SIZE - off), PAGE_SIZE) : 0;
	if (1 + need > ARRAY_SIZE(dp->tx.bv))
		return false;
	for (i = 1; i <= need; i++)
		if (!xiw_tx_pages_take(dp, (idx + i) % XIW_TX_PAGES, gfp))
			return false;
	*pidx = idx;
	*poff = off;
	return true;
}

/*
 * The FPDU's end at the ring's position: @pad zero bytes, counted in *@crc
 * unless it is NULL, then the CRC field (zero without CRC).
 */
static void xiw_tx_pages_trailer(struct xiw_qp_dp *dp, u32 pad, u32 *crc)
{
	struct xiw_tx_ctx *tx = &dp->tx;
	__le32 trailer;

	memset(tx->trailer, 0, sizeof(tx->trailer));
	xiw_tx_pages_copy(&tx->pages, tx->trailer, pad, crc);
	trailer = crc ? xiw_crc_trailer(*crc) : 0;
	xiw_tx_pages_copy(&tx->pages, &trailer, sizeof(trailer), NULL);
}

/*
 * Frame the FPDU in tx (header of @hdr_len bytes in tx->hdr, payload
 * pieces tx->bv[1..nbv), @pad bytes of pad; @total bytes with the CRC) in
 * the ring: on success tx->bv holds the ring pieces of the whole FPDU, CRC
 * included, and TX sends them with MSG_SPLICE_PAGES. False if the ring
 * has no room: the caller sends the FPDU's pieces as they are.
 */
bool xiw_tx_pages_frame(struct xiw_qp_dp *dp, u32 hdr_len, u32 pad,
			u32 total)
{
	struct xiw_tx_ctx *tx = &dp->tx;
	struct xiw_tx_pages *p = &tx->pages;
	/*
	 * A kernel QP's TX runs with NOIO semantics (xiw_sched_tx_pass()).
	 * A Read Response is framed inside its access section, which may
	 * not sleep; its room was found before (xiw_tx_pages_prepare()).
	 */
	gfp_t gfp = xiw_tx_locked(tx) || tx->kind == XIW_TX_RRESP ?
		    GFP_ATOMIC : GFP_KERNEL;
	u32 idx, off, i, crc = XIW_CRC32C_SEED;
	u32 *crcp = dp->crc ? &crc : NULL;
	int nbv, k;

	if (!xiw_tx_pages_room(dp, total, gfp, &idx, &off)) {
		xiw_dp_stat_add(dp, XIW_STAT_TX_PAGES_BUSY, 1);
		return false;
	}

	/* Copy; the CRC covers the copy, which is what goes out. */
	p->idx = idx;
	p->off = off;
	xiw_tx_pages_copy(p, &tx->hdr, hdr_len, crcp);
	for (i = 1; i < tx->nbv; i++) {
		struct bio_vec *bv = &tx->bv[i];
		void *va = kmap_local_page(bv->bv_page);

		xiw_tx_pages_copy(p, va + bv->bv_offset, bv->bv_len, crcp);
		kunmap_local(va);
	}
	xiw_tx_pages_trailer(dp, pad, crcp);

	/* The pieces: from (idx, off) on, page by page. */
	nbv = 0;
	for (k = total; k > 0; ) {
		u32 n = min_t(u32, k, PAGE_SIZE - off);

		bvec_set_page(&tx->bv[nbv++], p->page[idx], n, off);
		k -= n;
		idx = (idx + 1) % XIW_TX_PAGES;
		off = 0;
	}
	tx->nbv = nbv;
	xiw_dp_stat_add(dp, XIW_STAT_TX_PAGE_FPDUS, 1);
	return true;
}

/*
 * Frame a zero-copy FPDU's own bytes in the ring: its header (@hdr_len
 * bytes of tx->hdr), then @pad zero bytes and the CRC, back to back in
 * one page, around the payload pieces tx->bv[1..nbv), which stay the
 * consumer's pages. On success tx->bv[0] is the header's piece and a new
 * last piece the trailer's, so the whole FPDU goes to TCP by reference
 * in one sendmsg (MSG_ZEROCOPY: TCP takes a reference on every page it
 * is given, ring pages included, and the ring writes a page again only
 * once TCP let go of it). False if the ring has no room: the caller
 * frames header and trailer in the QP's memory, sent apart and copied.
 */
bool xiw_tx_pages_frame_zc(struct xiw_qp_dp *dp, u32 hdr_len, u32 pad)
{
	struct xiw_tx_ctx *tx = &dp->tx;
	struct xiw_tx_pages *p = &tx->pages;
	gfp_t gfp = xiw_tx_gfp(tx);
	u32 len = hdr_len + pad + XIW_MPA_CRC_LEN;
	u32 idx, off, crc = XIW_CRC32C_SEED;
	u32 *crcp = dp->crc ? &crc : NULL;
	struct page *page;

	if (!xiw_tx_pages_room(dp, len, gfp, &idx, &off))
		goto busy;
	if (off + len > PAGE_SIZE) {
		/* one piece each: leave the tail, take the next page */
		p->idx = idx;
		p->off = PAGE_SIZE;
		if (!xiw_tx_pages_room(dp, len, gfp, &idx, &off) ||
		    off + len > PAGE_SIZE)
			goto busy;
	}
	page = p->page[idx];
	p->idx = idx;
	p->off = off;
	xiw_tx_pages_copy(p, &tx->hdr, hdr_len, crcp);
	if (crcp)
		crc = xiw_tx_crc_payload(tx, crc);
	xiw_tx_pages_trailer(dp, pad, crcp);
	bvec_set_page(&tx->bv[0], page, hdr_len, off);
	bvec_set_page(&tx->bv[tx->nbv++], page, pad + XIW_MPA_CRC_LEN,
		      off + hdr_len);
	return true;
busy:
	xiw_dp_stat_add(dp, XIW_STAT_TX_PAGES_BUSY, 1);
	return false;
}

/*
 * The bounce pages: where the unsent rest of a copied FPDU goes when it
 * must not stay in the consumer's memory and the ring has no room. TCP
 * copies them at sendmsg (no MSG_SPLICE_PAGES), so they are free again as
 * soon as the FPDU is all in TCP; only the TX runner uses them, for the
 * one FPDU in flight. Allocated on first need, released with the data
 * path. -ENOMEM if they cannot be had.
 */
static int xiw_tx_pages_bounce_get(struct xiw_qp_dp *dp, u32 total, gfp_t gfp)
{
	struct xiw_tx_pages *p = &dp->tx.pages;
	struct mem_cgroup *memcg;
	u32 i, n = DIV_ROUND_UP(total, PAGE_SIZE);
	int rv = 0;

	if (n > XIW_TX_BOUNCE_PAGES)
		return -EINVAL;
	memcg = xiw_qp_memcg_enter(dp->qp);
	for (i = 0; i < n && !rv; i++) {
		if (p->bounce[i])
			continue;
		p->bounce[i] = alloc_page(xiw_qp_gfp(dp->qp, gfp) |
					  __GFP_NOWARN);
		if (!p->bounce[i])
			rv = -ENOMEM;
	}
	xiw_qp_memcg_exit(memcg);
	return rv;
}

/*
 * Make sure the Read Response FPDU about to be framed, of up to @total
 * bytes, can be copied out of the responder's memory when it is sealed
 * without allocating anything then: it is sealed inside an access
 * section (xiw_stag_access_begin()), where nothing may sleep. Room in the
 * ring (allocated now), else the bounce pages. 0 or -ENOMEM.
 */
int xiw_tx_pages_prepare(struct xiw_qp_dp *dp, u32 total)
{
	gfp_t gfp = xiw_tx_gfp(&dp->tx);
	u32 idx, off;

	if (xiw_tx_batch_fits(&dp->tx, total) ||
	    xiw_tx_pages_room(dp, total, gfp, &idx, &off))
		return 0;
	return xiw_tx_pages_bounce_get(dp, total, gfp);
}

/*
 * Move the unsent rest of the current FPDU (tx->bv from bv_idx, bv_off on)
 * into the bounce pages, so that nothing of it is read from the pieces it
 * was framed from any more. 0, or -ENOMEM (pieces unchanged).
 */
int xiw_tx_pages_bounce(struct xiw_qp_dp *dp, gfp_t gfp)
{
	struct xiw_tx_ctx *tx = &dp->tx;
	struct xiw_tx_pages *p = &tx->pages;
	struct bio_vec rest[XIW_TX_BOUNCE_PAGES];
	u32 left = 0, dst = 0, n;
	int i, rv;

	for (i = tx->bv_idx; i < tx->nbv; i++)
		left += tx->bv[i].bv_len;
	left -= tx->bv_off;
	rv = xiw_tx_pages_bounce_get(dp, left, gfp);
	if (rv)
		return rv;
	for (i = tx->bv_idx; i < tx->nbv; i++) {
		struct bio_vec *bv = &tx->bv[i];
		u32 from = i == tx->bv_idx ? tx->bv_off : 0;
		u8 *src = kmap_local_page(bv->bv_page);

		while (from < bv->bv_len) {
			u8 *d = kmap_local_page(p->bounce[dst / PAGE_SIZE]);

			n = min_t(u32, bv->bv_len - from,
				  PAGE_SIZE - dst % PAGE_SIZE);
			memcpy(d + dst % PAGE_SIZE, src + bv->bv_offset + from,
			       n);
			kunmap_local(d);
			from += n;
			dst += n;
		}
		kunmap_local(src);
	}
	for (i = 0; dst; i++) {
		n = min_t(u32, dst, PAGE_SIZE);
		bvec_set_page(&rest[i], p->bounce[i], n, 0);
		dst -= n;
	}
	memcpy(tx->bv, rest, i * sizeof(rest[0]));
	tx->nbv = i;
	tx->bv_idx = 0;
	tx->bv_off = 0;
	tx->spliced = false;
	return 0;
}

void xiw_tx_pages_free(struct xiw_qp_dp *dp)
{
	struct xiw_tx_pages *p = &dp->tx.pages;
	int i;

	for (i = 0; i < XIW_TX_PAGES; i++) {
		if (p->page[i])
			put_page(p->page[i]);
		p->page[i] = NULL;
	}
	for (i = 0; i < XIW_TX_BOUNCE_PAGES; i++) {
		if (p->bounce[i])
			put_page(p->bounce[i]);
		p->bounce[i] = NULL;
	}
}
