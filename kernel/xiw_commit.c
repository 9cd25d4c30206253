// SPDX-License-Identifier: GPL-2.0
/*
 * xiw - the responder's side of draft-talpey-rdma-commit: what an RDMA
 * Flush, an Atomic Write and an RDMA Verify do to memory, and the MR
 * attributes they need (persistent memory, Verify digest).
 *
 * The TX engine runs Flush and Verify in IRQ order, right before it sends
 * the response (xiw_tx_resp.c), so each sees every earlier placement of
 * its stream and every earlier request on queue 1 executed; Writes and
 * Sends that arrive later are placed by RX meanwhile, and may be covered
 * too. RX stores an Atomic Write where it is received, in message order
 * with the Writes and Sends around it, unless an earlier Flush or Verify
 * is still to run: then TX stores it after them, in IRQ order
 * (xiw_rx_req_exec()). Placement by RX is a CPU store into the MR's pages
 * (kmap), so:
 *
 * - Flush G (global visibility): a full barrier; every earlier placement
 *   was made by a CPU store that precedes it.
 * - Flush P (persistence): only pages that are persistent memory (the
 *   kernel's own test, region_intersects(IORES_DESC_PERSISTENT_MEMORY));
 *   the CPU cache lines of the range are written back with
 *   arch_wb_cache_pmem() and ordered with pmem_wmb() before the response.
 * - Atomic Write: one aligned 64-bit store (WRITE_ONCE), so no reader ever
 *   sees a torn value. The RFC 7306 atomics are executed here as well,
 *   with a 64-bit compare-and-exchange (xiw_commit_exec_one()).
 * - Verify: a crypto API digest (crc32c or sha256, the MR's choice) of the
 *   range as placed, page by page; persistent memory is read with the
 *   machine-check-safe copy, so a poisoned line fails the Verify (a
 *   Terminate) instead of the kernel.
 *
 * What is long is judged by the bytes an operation touches, not by its
 * wire length (xiw_commit_heavy(): a Flush with the R flag covers its
 * whole region): TX, which runs in a high-priority work item or in a
 * poster's doorbell syscall, executes at most XIW_COMMIT_LIGHT bytes per
 * request and hands anything longer to the exec work (process context).
 * There each operation yields the CPU every XIW_COMMIT_YIELD bytes
 * counted from its start, whatever its alignment, and stops between two
 * chunks as soon as the connection failed or its region was deregistered
 * or invalidated (xiw_commit_yield()), so neither a CPU nor a teardown
 * waits for the rest of a multi-GiB range.
 *
 * Counters of what was done are in debugfs (xiw/commit_stats), so a test can
 * tell a write-back that happened from one that was skipped.
 */
#include <crypto/hash.h>
#include <linux/debugfs.h>
#include <linux/highmem.h>
#include <linux/ioport.h>
#include <linux/libnvdimm.h>
#include <linux/seq_file.h>
#include <linux/uaccess.h>

#include "xiw_dp.h"
#include "xiw_commit.h"

static struct crypto_shash *xiw_sha256_tfm;
static struct crypto_shash *xiw_crc32c_tfm;
static struct dentry *xiw_commit_dir;

static struct {
	atomic64_t flush_global;	/* Flush requests with G (or no flag) */
	atomic64_t flush_persistent;	/* Flush requests with P */
	atomic64_t flush_wb_bytes;	/* bytes written back for P */
	atomic64_t atomic_writes;
	atomic64_t verify;
	atomic64_t verify_bytes;
	atomic64_t verify_mismatch;
	atomic64_t verify_poisoned;
} xiw_commit_stats;

#define XIW_STAT_ADD(name, n) atomic64_add((n), &xiw_commit_stats.name)

static int xiw_commit_stats_show(struct seq_file *m, void *unused)
{
#define XIW_STAT_SHOW(name)						\
	seq_printf(m, "%-18s %lld\n", #name,				\
		   (long long)atomic64_read(&xiw_commit_stats.name))
	XIW_STAT_SHOW(flush_global);
	XIW_STAT_SHOW(flush_persistent);
	XIW_STAT_SHOW(flush_wb_bytes);
	XIW_STAT_SHOW(atomic_writes);
	XIW_STAT_SHOW(verify);
	XIW_STAT_SHOW(verify_bytes);
	XIW_STAT_SHOW(verify_mismatch);
	XIW_STAT_SHOW(verify_poisoned);
#undef XIW_STAT_SHOW
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(xiw_commit_stats);

/*
 * Ranges at most this long are executed by TX itself; a longer Flush P
 * or Verify goes to the exec work (xiw_tx_resp_exec_work()).
 */
#define XIW_COMMIT_LIGHT	(64 * 1024)

/* Yield the CPU after this many bytes of one Verify or write-back. */
#define XIW_COMMIT_YIELD	(1024 * 1024)

int xiw_commit_digest_len(u8 digest)
{
	switch (digest) {
	case XIW_DIGEST_CRC32C:
		return 4;
	case XIW_DIGEST_SHA256:
		return 32;
	default:
		return -EINVAL;
	}
}

/*
 * The digests this module can compute (BIT(enum xiw_digest)): those whose
 * crypto transform xiw_commit_init() got. A device records them when it
 * is created (struct xiw_device.digests), for registration to check.
 */
u8 xiw_commit_digests(void)
{
	u8 d = 0;

	if (xiw_crc32c_tfm)
		d |= BIT(XIW_DIGEST_CRC32C);
	if (xiw_sha256_tfm)
		d |= BIT(XIW_DIGEST_SHA256);
	return d;
}

/*
 * Is the IRQ entry @e (a copy TX owns) too long for TX to execute itself?
 * By the bytes it touches: a Verify's and a Flush P's range (a Flush
 * without P touches no memory). A Flush P with R covers its region, of
 * any length (more than 4 GiB too): its region is looked up now, and if
 * it is short the request is turned into the Flush of that range (R
 * cleared), so that what TX executes is what was judged here even if the
 * region changes meanwhile (a fast-registration MR registered again); a
 * long or unknown region goes to the exec work, which looks it up itself.
 */
bool xiw_commit_heavy(struct xiw_qp_dp *dp, struct xiw_irqe *e)
{
	struct xiw_mr *mr;
	u64 iova, len;

	if (e->type == XIW_RQ_VERIFY)
		return e->len > XIW_COMMIT_LIGHT;
	if (e->type != XIW_RQ_FLUSH || !(e->flags & XIW_FLUSH_PERSISTENT))
		return false;
	if (!(e->flags & XIW_FLUSH_REGION))
		return e->len > XIW_COMMIT_LIGHT;
	mr = xiw_stag_get(xiw_dp_dev(dp), e->sink_stag);
	if (!mr)
		return true;
	iova = READ_ONCE(mr->base.iova);
	len = READ_ONCE(mr->base.length);
	xiw_stag_put(mr);
	if (len > XIW_COMMIT_LIGHT)
		return true;
	e->sink_to = iova;
	e->len = len;
	e->flags &= ~XIW_FLUSH_REGION;
	return false;
}

/*
 * After @done more bytes of an operation (*@since counts them since the
 * last yield): every XIW_COMMIT_YIELD bytes in the exec work (@dp; NULL:
 * TX executes a short one and never yields), let others run, then 0 to
 * go on, or -ECANCELED once the connection failed (TX answers nothing
 * more). Every page itself is touched in an access section
 * (xiw_commit_begin()), which stops the operation at the first page after
 * a deregistration or invalidation of its region or window.
 */
static int xiw_commit_yield(struct xiw_qp_dp *dp, u32 *since, u32 done)
{
	*since += done;
	if (!dp || *since < XIW_COMMIT_YIELD)
		return 0;
	*since = 0;
	cond_resched();
	if (!xiw_dp_answering(dp))
		return -ECANCELED;
	return 0;
}

/*
 * Open the access section of @len bytes at @va of @mr for @g: 0, or
 * -EKEYREVOKED once @g's STag no longer grants them (the caller answers
 * with a Terminate and lets go of the region, which a deregistration
 * waits for, xiw_mem_stag_remove()).
 */
static int xiw_commit_begin(struct xiw_mr *mr, const struct xiw_mem_grant *g,
			    u64 va, u64 len)
{
	if (xiw_stag_access_begin(g->xdev, &g->who, mr, g->stag, g->access, va,
				  len) != XIW_MEM_OK)
		return -EKEYREVOKED;
	return 0;
}

/*
 * Flush [@va, @va + @len) of @mr with the wire flags @flags (P, G; the
 * caller resolved R into the MR's range). @dp: see xiw_commit_yield().
 * For P every page is checked to be persistent memory right before its
 * cache lines are written back (fast-registration MRs change pages at any
 * time), in the same pass, so that a check too yields between chunks; a
 * page that is not ends the Flush with -EIO, the earlier pages written
 * back for nothing (harmless). 0, -EIO (also a page that cannot be
 * mapped), or xiw_commit_yield()'s error.
 */
int xiw_commit_flush(struct xiw_mr *mr, const struct xiw_mem_grant *g,
		     u64 va, u64 len, u32 flags, struct xiw_qp_dp *dp)
{
	u32 since_yield = 0;
	struct page *last = NULL;
	u64 done = 0;
	int rv;

	/* every earlier placement was a CPU store before this point */
	smp_mb();
	if (!(flags & XIW_FLUSH_PERSISTENT)) {
		XIW_STAT_ADD(flush_global, 1);
		return 0;
	}
	while (len) {
		u32 off, avail;
		struct page *page;
		void *p;

		rv = xiw_commit_begin(mr, g, va, len);
		if (rv)
			return rv;
		page = xiw_stag_page(mr, va, &off, &avail);
		if (!page || (page != last && !xiw_stag_page_is_pmem(page))) {
			xiw_stag_access_end(mr);
			return -EIO;
		}
		last = page;
		avail = min_t(u64, avail, len);
		p = kmap_local_page(page);
		arch_wb_cache_pmem(p + off, avail);
		kunmap_local(p);
		xiw_stag_access_end(mr);
		va += avail;
		len -= avail;
		done += avail;
		rv = xiw_commit_yield(dp, &since_yield, avail);
		if (rv)
			return rv;
	}
	pmem_wmb();
	XIW_STAT_ADD(flush_persistent, 1);
	XIW_STAT_ADD(flush_wb_bytes, done);
	if (flags & XIW_FLUSH_GLOBAL)
		XIW_STAT_ADD(flush_global, 1);
	return 0;
}

/* Atomic Write: the value @data (CPU order) with one 64-bit store. */
int xiw_commit_awrite(struct xiw_mr *mr, u64 va, u64 data)
{
	u32 off, avail;
	struct page *page = xiw_stag_page(mr, va, &off, &avail);
	void *p;

	if (!page || off & (XIW_ATOMIC_ALIGN - 1) || avail < sizeof(u64))
		return -EIO;
	p = kmap_local_page(page);
	WRITE_ONCE(*(u64 *)(p + off), data);
	kunmap_local(p);
	XIW_STAT_ADD(atomic_writes, 1);
	return 0;
}

/*
 * Execute an RFC 7306 atomic on the target memory with the CPU's 64-bit
 * compare-and-exchange, so it is atomic against other QPs, other devices
 * and the local CPUs alike; the value is in the CPU's byte order in
 * memory, big-endian on the wire. A CmpSwap that does not match (or a
 * FetchAdd of nothing) stores nothing. The original value goes to
 * e->orig. False if the target is not aligned memory of @mr.
 */
static bool xiw_commit_atomic(struct xiw_mr *mr, struct xiw_irqe *e)
{
	bool fadd = (e->aopcode & XIW_AOP_MASK) == XIW_AOP_FETCH_ADD;
	u64 *p, old, new;
	struct page *page;
	u32 poff, avail;
	void *va;

	page = xiw_stag_page(mr, e->sink_to, &poff, &avail);
	if (!page || poff & (XIW_ATOMIC_ALIGN - 1) || avail < sizeof(u64))
		return false;
	va = kmap_local_page(page);
	p = va + poff;
	old = READ_ONCE(*p);
	do {
		new = fadd ? xiw_masked_fadd(old, e->add_swap,
					     e->add_swap_mask) :
			     xiw_masked_cswap(old, e->cmp, e->cmp_mask,
					      e->add_swap, e->add_swap_mask);
		if (new == old)
			break;
	} while (!try_cmpxchg64(p, &old, new));
	kunmap_local(va);
	e->orig = old;
	return true;
}

/*
 * Execute the atomic or Atomic Write @e on @mr in an access section of
 * @g, for RX, which executes them where they are received
 * (xiw_rx_req_exec()), and for TX, which runs those held behind a Flush or
 * Verify in IRQ order (xiw_tx_resp.c): 0, -EKEYREVOKED (the STag no
 * longer grants it) or -EIO (the target is not aligned memory of @mr).
 */
int xiw_commit_exec_one(struct xiw_mr *mr, const struct xiw_mem_grant *g,
			struct xiw_irqe *e)
{
	int rv;

	if (xiw_stag_access_begin(g->xdev, &g->who, mr, g->stag, g->access,
				  e->sink_to, sizeof(u64)) != XIW_MEM_OK)
		return -EKEYREVOKED;
	if (e->type == XIW_RQ_ATOMIC)
		rv = xiw_commit_atomic(mr, e) ? 0 : -EIO;
	else
		rv = xiw_commit_awrite(mr, e->sink_to, e->data);
	xiw_stag_access_end(mr);
	return rv;
}

/*
 * Feed @len bytes at @off of @page to @desc. A page the kernel knows to be
 * poisoned is not read at all: memory_failure() marks the page, or for
 * device-dax the head of its folio, which then stands for the whole folio
 * (it is remapped uncached). Persistent
 * memory (@pmem) is read through copy_mc_to_kernel() in XIW_COMMIT_MC_CHUNK
 * pieces: a poisoned line that nobody reported yet then ends the read
 * with -EHWPOISON instead of a machine check in the kernel, which is what
 * makes Verify usable as a scrub of persistent memory. DRAM is read
 * directly (its errors are the platform's to report; a bounce copy would
 * halve Verify's speed).
 */
#define XIW_COMMIT_MC_CHUNK	256

static int xiw_commit_digest_page(struct shash_desc *desc, struct page *page,
				  u32 off, u32 len, bool pmem)
{
	u8 buf[XIW_COMMIT_MC_CHUNK];
	int rv = 0;
	void *p;

	if (PageHWPoison(page) || PageHWPoison(&page_folio(page)->page))
		return -EHWPOISON;
	p = kmap_local_page(page);
	if (!pmem)
		rv = crypto_shash_update(desc, p + off, len);
	while (pmem && !rv && len) {
		u32 n = min_t(u32, len, sizeof(buf));

		if (copy_mc_to_kernel(buf, p + off, n)) {
			rv = -EHWPOISON;
			break;
		}
		rv = crypto_shash_update(desc, buf, n);
		off += n;
		len -= n;
	}
	kunmap_local(p);
	return rv;
}

/*
 * Verify: digest of [@va, @va + @len) of @mr with the MR's algorithm into
 * @out (XIW_VERIFY_HASH_MAX bytes). @dp: see xiw_commit_yield(). Returns
 * the digest length, -EHWPOISON (a poisoned page or line of the range,
 * xiw_commit_digest_page()), -EIO, or xiw_commit_yield()'s error.
 */
int xiw_commit_verify(struct xiw_mr *mr, const struct xiw_mem_grant *g,
		      u64 va, u32 len, u8 *out, struct xiw_qp_dp *dp)
{
	u8 alg = READ_ONCE(mr->digest);
	struct crypto_shash *tfm = alg == XIW_DIGEST_SHA256 ? xiw_sha256_tfm :
				   alg == XIW_DIGEST_CRC32C ? xiw_crc32c_tfm :
				   NULL;
	u32 since_yield = 0;
	struct page *last = NULL;
	int rv, stop = 0;
	bool pmem = false;

	if (!tfm)
		return -EIO;
	{
		SHASH_DESC_ON_STACK(desc, tfm);

		desc->tfm = tfm;
		rv = crypto_shash_init(desc);
		while (!rv && len) {
			u32 off, avail;
			struct page *page;

			stop = xiw_commit_begin(mr, g, va, len);
			if (stop)
				break;
			page = xiw_stag_page(mr, va, &off, &avail);
			if (!page) {
				xiw_stag_access_end(mr);
				rv = -EIO;
				break;
			}
			if (page != last)
				pmem = xiw_stag_page_is_pmem(page);
			last = page;
			avail = min(avail, len);
			rv = xiw_commit_digest_page(desc, page, off, avail,
						    pmem);
			xiw_stag_access_end(mr);
			if (rv)
				break;
			va += avail;
			len -= avail;
			XIW_STAT_ADD(verify_bytes, avail);
			stop = xiw_commit_yield(dp, &since_yield, avail);
			if (stop)
				break;
		}
		if (!rv && !stop)
			rv = crypto_shash_final(desc, out);
		shash_desc_zero(desc);
	}
	if (stop)
		return stop;
	if (rv == -EHWPOISON) {
		XIW_STAT_ADD(verify_poisoned, 1);
		return rv;
	}
	if (rv)
		return -EIO;
	XIW_STAT_ADD(verify, 1);
	return crypto_shash_digestsize(tfm);
}

void xiw_commit_verify_mismatch(void)
{
	XIW_STAT_ADD(verify_mismatch, 1);
}

int xiw_commit_init(void)
{
	struct crypto_shash *tfm;

	/* Either may be missing from a kernel: MRs then cannot choose it. */
	tfm = crypto_alloc_shash("crc32c", 0, 0);
	xiw_crc32c_tfm = IS_ERR(tfm) ? NULL : tfm;
	tfm = crypto_alloc_shash("sha256", 0, 0);
	xiw_sha256_tfm = IS_ERR(tfm) ? NULL : tfm;
	if (!xiw_crc32c_tfm)
		pr_info("xiw: no crc32c shash: RDMA Verify with crc32c unavailable\n");
	if (!xiw_sha256_tfm)
		pr_info("xiw: no sha256 shash: RDMA Verify with sha256 unavailable\n");

	xiw_commit_dir = debugfs_create_dir("xiw", NULL);
	debugfs_create_file("commit_stats", 0444, xiw_commit_dir, NULL,
			    &xiw_commit_stats_fops);
	return 0;
}

void xiw_commit_exit(void)
{
	debugfs_remove_recursive(xiw_commit_dir);
	if (xiw_sha256_tfm)
		crypto_free_shash(xiw_sha256_tfm);
	if (xiw_crc32c_tfm)
		crypto_free_shash(xiw_crc32c_tfm);
}
