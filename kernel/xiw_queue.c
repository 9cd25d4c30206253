// SPDX-License-Identifier: GPL-2.0
/*
 * xiw - rings in the user ABI layout (struct xiw_queue_ctrl + entries).
 *
 * User queues are vmalloc_user() memory handed to an rdma_user_mmap_entry;
 * the memory is freed by xiw_mmap_free() once the owning object is gone
 * and no mapping is left, so a process that keeps a stale mapping can
 * never reach memory the kernel has reused. Kernel queues are vzalloc()ed.
 */
#include <linux/log2.h>
#include <linux/vmalloc.h>
#include <rdma/uverbs_ioctl.h>

#include "xiw.h"

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
	entry = kzalloc(sizeof(*entry), GFP_KERNEL);
	if (!entry)
		return -ENOMEM;
	entry->addr = vmalloc_user(size);
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
