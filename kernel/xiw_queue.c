// SPDX-License-Identifier: GPL-2.0
/*
 * xiw - rings in the user ABI layout (struct xiw_queue_ctrl + entries).
 *
 * User queues are zeroed pages, vmap()ed for user mapping (VM_USERMAP)
 * and handed to an rdma_user_mmap_entry; the memory is freed by
 * xiw_mmap_free() (vfree(), which frees the pages of a VM_MAP_PUT_PAGES
 * area) once the owning object is gone and no mapping is left, so a
 * process that keeps a stale mapping can never reach memory the kernel
 * has reused. They are charged to the memory cgroup of the process that
 * creates the object (xiw_queue_user_alloc()). Kernel queues are
 * vzalloc()ed.
 *
 * The kernel's side of the work queue rings (SQ, RQ, SRQ; the provider's
 * twin is userspace/libxiw/xiw_ring.c) is here too: filling a slot for a
 * kernel consumer (xiw_wq_full(), xiw_wq_post(), xiw_wq_post_recv()) and
 * taking the next entry of any ring, user or kernel (xiw_wq_take()), and
 * looking whether an entry is published without taking it
 * (xiw_wq_published(): TX's idle and head tests, the SRQ limit).
 * Ownership of a slot is its flags word only (xiw-abi.h): the producer
 * may fill a slot whose flags are 0 and publishes it with a release store
 * of flags | VALID; the consumer acquires the flags, copies the entry out
 * and hands the slot back with a release store of 0. Indices are private
 * to each side. Every caller holds the lock of its side of the ring (for
 * kernel rings both sides take the same one); the flag protocol is what
 * orders the entry against the other side when that side is a process,
 * and against the lockless looks at a slot's flags (TX's idle test, the
 * SRQ limit).
 */
#include <linux/log2.h>
#include <linux/vmalloc.h>
#include <rdma/uverbs_ioctl.h>

#include "xiw.h"

/*
 * User rings and their mmap entries are charged to the memory cgroup of
 * the calling process (the create verbs run in its context); at the
 * cgroup's limit the verb fails with -ENOMEM, quietly, rather than
 * invoking the cgroup's OOM killer (as xiw_qp_gfp()).
 */
#define XIW_QUEUE_USER_GFP \
	(GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL | __GFP_NOWARN)

/*
 * The memory of a user ring, @size bytes (page aligned), zeroed: what
 * vmalloc_user() gives, but charged (vmalloc_user() cannot be asked for
 * __GFP_ACCOUNT). Freed with vfree().
 */
static void *xiw_queue_user_alloc(size_t size)
{
	const gfp_t gfp = XIW_QUEUE_USER_GFP;
	unsigned int i, n = size >> PAGE_SHIFT;
	struct page **pages;
	void *addr;

	pages = kvcalloc(n, sizeof(*pages), gfp);
	if (!pages)
		return NULL;
	for (i = 0; i < n; i++) {
		pages[i] = alloc_page(gfp | __GFP_ZERO);
		if (!pages[i])
			goto err;
	}
	/* from here on vfree() frees the pages and the array */
	addr = vmap(pages, n, VM_MAP | VM_USERMAP | VM_MAP_PUT_PAGES,
		    PAGE_KERNEL);
	if (addr)
		return addr;
err:
	while (i--)
		__free_page(pages[i]);
	kvfree(pages);
	return NULL;
}

int xiw_queue_init(struct xiw_queue *q, struct ib_udata *udata, u32 min_num,
		   u32 esize, u64 *mmap_key)
{
	struct xiw_ucontext *uctx;
	struct xiw_mmap_entry *entry;
	u32 num = roundup_pow_of_two(max_t(u32, min_num, 1));
	size_t size;
	int rv;

	size = PAGE_ALIGN(XIW_QUEUE_HDR_SIZE + (size_t)num * esize);
	memset(q, 0, sizeof(*q));
	q->num = num;
	q->esize = esize;
	q->size = size;

	if (!udata) {
		q->ctrl = vzalloc(size);
		if (!q->ctrl)
			return -ENOMEM;
		goto done;
	}

	uctx = rdma_udata_to_drv_context(udata, struct xiw_ucontext, base);
	entry = kzalloc(sizeof(*entry), XIW_QUEUE_USER_GFP);
	if (!entry)
		return -ENOMEM;
	entry->addr = xiw_queue_user_alloc(size);
	if (!entry->addr) {
		kfree(entry);
		return -ENOMEM;
	}
	entry->size = size;
	rv = rdma_user_mmap_entry_insert(&uctx->base, &entry->rdma, size);
	if (rv) {
		vfree(entry->addr);
		kfree(entry);
		return rv;
	}
	q->mmap_entry = &entry->rdma;
	q->ctrl = entry->addr;
	*mmap_key = rdma_user_mmap_get_offset(&entry->rdma);
done:
	q->entries = (void *)q->ctrl + XIW_QUEUE_HDR_SIZE;
	q->ctrl->num_entries = num;
	q->ctrl->entry_size = esize;
	return 0;
}

void xiw_queue_destroy(struct xiw_queue *q)
{
	if (q->mmap_entry)
		rdma_user_mmap_entry_remove(q->mmap_entry); /* frees later */
	else
		vfree(q->ctrl);
	q->ctrl = NULL;
	q->entries = NULL;
	q->mmap_entry = NULL;
}

/*
 * Work queue entries (struct xiw_sqe, struct xiw_rqe): same size, and
 * wr_id and the flags word at the same place in both.
 */
#define XIW_WQE_SIZE	sizeof(struct xiw_sqe)
#define XIW_WQE_FLAGS	offsetof(struct xiw_sqe, flags)

static u16 *xiw_wqe_flags(void *wqe)
{
	BUILD_BUG_ON(sizeof(struct xiw_sqe) != sizeof(struct xiw_rqe));
	BUILD_BUG_ON(offsetof(struct xiw_sqe, flags) !=
		     offsetof(struct xiw_rqe, flags));
	BUILD_BUG_ON(offsetof(struct xiw_sqe, wr_id) !=
		     offsetof(struct xiw_rqe, wr_id));
	return wqe + XIW_WQE_FLAGS;
}

/*
 * Producer: is the next slot still the consumer's? Caller holds the
 * producer lock of @q.
 */
bool xiw_wq_full(struct xiw_queue *q)
{
	u16 *flags = xiw_wqe_flags(xiw_queue_entry(q, q->prod));

	/*
	 * Acquire pairs with the consumer's release of 0: it has finished
	 * copying the old entry before xiw_wq_post() overwrites it.
	 */
	return xiw_wqe_flags_acquire(flags);
}

/*
 * Producer: publish @wqe (a struct xiw_sqe or xiw_rqe whose flags word
 * holds the flags to publish, without VALID) in the next slot, which
 * xiw_wq_full() found free. Caller holds the producer lock of @q.
 */
void xiw_wq_post(struct xiw_queue *q, const void *wqe)
{
	void *slot = xiw_queue_entry(q, q->prod);
	u16 flags = ((const struct xiw_sqe *)wqe)->flags;

	/* everything but the flags word, which only the release writes */
	memcpy(slot, wqe, XIW_WQE_FLAGS);
	memcpy(slot + XIW_WQE_FLAGS + sizeof(u16),
	       wqe + XIW_WQE_FLAGS + sizeof(u16),
	       XIW_WQE_SIZE - XIW_WQE_FLAGS - sizeof(u16));
	/* the entry is visible before the consumer sees VALID */
	xiw_wqe_flags_release(xiw_wqe_flags(slot), flags | XIW_WQE_VALID);
	q->prod++;
}

/*
 * Consumer: take the entry at the consumer index, if it is published:
 * copy it to @wqe (a struct xiw_sqe or xiw_rqe, with the flags that were
 * published) and give the slot back. False if the ring is empty. Caller
 * holds the consumer lock of @q. The copy is all the caller may look at:
 * a process can rewrite a slot of its ring at any time, also while it is
 * copied, so the copy must be validated like any user input.
 */
bool xiw_wq_take(struct xiw_queue *q, void *wqe)
{
	void *slot = xiw_queue_entry(q, q->cons);
	/* pairs with the producer's release: the entry is complete */
	u16 flags = xiw_wqe_flags_acquire(xiw_wqe_flags(slot));

	if (!(flags & XIW_WQE_VALID))
		return false;
	memcpy(wqe, slot, XIW_WQE_SIZE);
	*xiw_wqe_flags(wqe) = flags;
	/* our reads of the entry are done before the producer may refill */
	xiw_wqe_flags_release(xiw_wqe_flags(slot), 0);
	q->cons++;
	return true;
}

/*
 * Consumer side, a look without taking: is the slot @ahead entries past
 * @cons published? @cons is the caller's view of the consumer index: under
 * the consumer lock, or a READ_ONCE() snapshot for the lockless looks (TX's
 * idle test). The acquire pairs with the producer's release, so a caller
 * that goes on to take the entry sees it complete; a stale answer only
 * delays work by one doorbell or one event, never loses an entry, because
 * the taker re-checks with xiw_wq_take().
 */
bool xiw_wq_published(struct xiw_queue *q, u32 cons, u32 ahead)
{
	return xiw_wqe_flags_acquire(xiw_wqe_flags(xiw_queue_entry(q, cons +
								   ahead))) &
	       XIW_WQE_VALID;
}

/*
 * How many slots of @q are published and not yet taken: a lockless
 * snapshot for reports (restrack), stale as soon as it is read.
 */
u32 xiw_wq_count_published(struct xiw_queue *q)
{
	u32 i, n = 0;

	for (i = 0; q->entries && i < q->num; i++)
		n += xiw_wq_published(q, 0, i);
	return n;
}

/*
 * The completion opcode of an SQE's opcode: the one map, used by the TX
 * engine and by the flush of a ring (xiw_flush.c). User CQEs know no
 * masked atomics (rdma-core reports them as the plain ones).
 */
u8 xiw_wq_wc_opcode(bool user, u8 op)
{
	switch (op) {
	case XIW_OP_WRITE:
	case XIW_OP_WRITE_IMM:
		return IB_WC_RDMA_WRITE;
	case XIW_OP_READ:
	case XIW_OP_READ_INV:
		return IB_WC_RDMA_READ;
	case XIW_OP_ATOMIC_FADD:
		return IB_WC_FETCH_ADD;
	case XIW_OP_ATOMIC_CSWAP:
		return IB_WC_COMP_SWAP;
	case XIW_OP_ATOMIC_MASKED_FADD:
		return user ? IB_WC_FETCH_ADD : IB_WC_MASKED_FETCH_ADD;
	case XIW_OP_ATOMIC_MASKED_CSWAP:
		return user ? IB_WC_COMP_SWAP : IB_WC_MASKED_COMP_SWAP;
	case XIW_OP_FLUSH:
		return IB_WC_FLUSH;
	case XIW_OP_ATOMIC_WRITE:
		return IB_WC_ATOMIC_WRITE;
	case XIW_OP_VERIFY:
		return XIW_WC_VERIFY;
	case XIW_OP_REG_MR:
		return IB_WC_REG_MR;
	case XIW_OP_LOCAL_INV:
		return IB_WC_LOCAL_INV;
	case XIW_OP_BIND_MW:
		return IB_WC_BIND_MW;
	default:	/* Send, Send with Invalidate, Immediate Data */
		return IB_WC_SEND;
	}
}

static int xiw_recv_wr_to_rqe(struct xiw_rqe *rqe, const struct ib_recv_wr *wr,
			      u32 max_sge)
{
	int i;

	if (wr->num_sge < 0 || wr->num_sge > max_sge)
		return -EINVAL;
	memset(rqe, 0, sizeof(*rqe));
	rqe->wr_id = wr->wr_id;
	rqe->num_sge = wr->num_sge;
	for (i = 0; i < wr->num_sge; i++) {
		rqe->sge[i].addr = wr->sg_list[i].addr;
		rqe->sge[i].length = wr->sg_list[i].length;
		rqe->sge[i].lkey = wr->sg_list[i].lkey;
	}
	return 0;
}

/*
 * Post a kernel consumer's chain of receive WRs into an RQ or SRQ ring
 * (max_sge: the queue's limit, at most XIW_MAX_SGE). Caller holds the
 * ring's lock. Returns 0, or -ENOMEM (ring full) or -EINVAL (too many
 * SGEs) with *bad_wr the first WR not posted.
 */
int xiw_wq_post_recv(struct xiw_queue *q, const struct ib_recv_wr *wr,
		     u32 max_sge, const struct ib_recv_wr **bad_wr)
{
	struct xiw_rqe rqe;
	int rv;

	for (; wr; wr = wr->next) {
		rv = xiw_wq_full(q) ? -ENOMEM :
		     xiw_recv_wr_to_rqe(&rqe, wr, max_sge);
		if (rv) {
			*bad_wr = wr;
			return rv;
		}
		xiw_wq_post(q, &rqe);
	}
	return 0;
}
