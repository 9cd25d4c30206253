// SPDX-License-Identifier: GPL-2.0
/*
 * xiw: the SQ doorbell file of user QPs.
 *
 * A process posts by writing WQEs into its mmap'd SQ ring; when the kernel
 * is not already draining the SQ (XIW_SQ_KERNEL_ACTIVE) it must be told.
 * The legacy way (what siw does) is a write() of a zero-WR POST_SEND
 * command on the uverbs command fd: the uverbs dispatcher copies and
 * checks the command header, enters the device's SRCU section, looks the
 * QP handle up and locks its uobject, allocates the WR buffer, calls
 * post_send(NULL) and copies a response back.
 *
 * The doorbell file is a driver-defined uverbs FD object, allocated once
 * per QP by the ioctl method XIW_METHOD_DOORBELL_ALLOC with the QP's
 * handle. A write() on it goes straight from the VFS to
 * xiw_doorbell_write(), which finds the QP and runs the SQ.
 *
 * Lifetimes: the file and the QP are destroyed independently (close,
 * destroy_qp, process exit, device disassociation, in any order).
 * struct xiw_doorbell is the file's uobject; the QP holds a uobject
 * reference on it from the allocation to its own destruction, so
 * qp->db stays valid. db->qp is the only link the other way: under
 * db->lock it is read and a QP reference taken (refcount_inc_not_zero),
 * and it is cleared before the QP waits for its references to go
 * (xiw_destroy_qp()) and when the file is destroyed. A doorbell that
 * finds no QP fails with -ENXIO.
 */

#include <linux/fs.h>
#include <linux/spinlock.h>
#include <rdma/uverbs_types.h>
#include <rdma/uverbs_std_types.h>

#define UVERBS_MODULE_NAME xiw_ib
#include <rdma/uverbs_named_ioctl.h>

#include "xiw.h"

struct xiw_doorbell {
	struct ib_uobject uobj;		/* first: uverbs allocates the whole */
	spinlock_t lock;		/* protects qp */
	struct xiw_qp *qp;		/* NULL once either side is gone */
};

static struct xiw_qp *xiw_doorbell_get_qp(struct xiw_doorbell *db)
{
	struct xiw_qp *qp;

	spin_lock(&db->lock);
	qp = db->qp;
	if (qp && !refcount_inc_not_zero(&qp->ref))
		qp = NULL;
	spin_unlock(&db->lock);
	return qp;
}

/*
 * The doorbell: any write, of any length (the data is not read). Runs the
 * SQ in the caller's context like the legacy zero-WR POST_SEND.
 */
static ssize_t xiw_doorbell_write(struct file *filp, const char __user *buf,
				  size_t count, loff_t *pos)
{
	struct ib_uobject *uobj = filp->private_data;
	struct xiw_doorbell *db = container_of(uobj, struct xiw_doorbell, uobj);
	struct xiw_qp *qp = xiw_doorbell_get_qp(db);

	if (!qp)
		return -ENXIO;
	xiw_qp_sq_doorbell(qp);
	xiw_qp_put(&qp->base);
	return count;
}

static const struct file_operations xiw_doorbell_fops = {
	.owner = THIS_MODULE,
	.write = xiw_doorbell_write,
	.release = uverbs_uobject_fd_release,
};

/* The file is closed, or its context torn down: cut the link to the QP. */
static void xiw_doorbell_destroy_uobj(struct ib_uobject *uobj,
				      enum rdma_remove_reason why)
{
	struct xiw_doorbell *db = container_of(uobj, struct xiw_doorbell, uobj);

	/*
	 * Also called when the allocation is aborted (the handler failed or
	 * never ran): then qp was never set and the lock never initialized.
	 */
	if (!READ_ONCE(db->qp))
		return;
	spin_lock(&db->lock);
	db->qp = NULL;
	spin_unlock(&db->lock);
}

/*
 * Called by xiw_destroy_qp() before it waits for the QP's references: no
 * doorbell finds the QP afterwards, one in flight holds a reference.
 */
void xiw_doorbell_detach(struct xiw_qp *qp)
{
	struct xiw_doorbell *db = qp->db;

	if (!db)
		return;
	spin_lock(&db->lock);
	db->qp = NULL;
	spin_unlock(&db->lock);
	qp->db = NULL;
	uverbs_uobject_put(&db->uobj);
}

static int UVERBS_HANDLER(XIW_METHOD_DOORBELL_ALLOC)(struct uverbs_attr_bundle *attrs)
{
	struct ib_uobject *uobj =
		uverbs_attr_get_uobject(attrs, XIW_ATTR_DOORBELL_ALLOC_FD);
	struct xiw_doorbell *db = container_of(uobj, struct xiw_doorbell, uobj);
	struct ib_qp *ibqp = uverbs_attr_get_obj(attrs, XIW_ATTR_DOORBELL_ALLOC_QP);
	struct xiw_qp *qp;

	if (IS_ERR(ibqp))
		return PTR_ERR(ibqp);
	qp = to_xiw_qp(ibqp);
	if (!qp->user) {
		xiw_qp_dbg(qp, "doorbell file: not a user QP\n");
		return -EINVAL;
	}
	/*
	 * The QP's uobject is held for read here and destroy_qp needs it
	 * exclusively, so qp->db cannot go away under us. A QP has one
	 * doorbell file at a time; one that was closed is replaced.
	 */
	if (qp->db) {
		struct xiw_doorbell *old = qp->db;
		bool live;

		spin_lock(&old->lock);
		live = old->qp;
		spin_unlock(&old->lock);
		if (live) {
			xiw_qp_dbg(qp, "doorbell file: the QP has one\n");
			return -EEXIST;
		}
		qp->db = NULL;
		uverbs_uobject_put(&old->uobj);
	}
	spin_lock_init(&db->lock);
	db->qp = qp;
	uverbs_uobject_get(&db->uobj);
	qp->db = db;
	return 0;
}

DECLARE_UVERBS_NAMED_METHOD(XIW_METHOD_DOORBELL_ALLOC,
			    UVERBS_ATTR_FD(XIW_ATTR_DOORBELL_ALLOC_FD,
					   XIW_OBJECT_DOORBELL,
					   UVERBS_ACCESS_NEW, UA_MANDATORY),
			    UVERBS_ATTR_IDR(XIW_ATTR_DOORBELL_ALLOC_QP,
					    UVERBS_OBJECT_QP,
					    UVERBS_ACCESS_READ, UA_MANDATORY));

DECLARE_UVERBS_NAMED_OBJECT(XIW_OBJECT_DOORBELL,
			    UVERBS_TYPE_ALLOC_FD(sizeof(struct xiw_doorbell),
						 xiw_doorbell_destroy_uobj,
						 &xiw_doorbell_fops,
						 "[xiw_doorbell]", O_WRONLY),
			    &UVERBS_METHOD(XIW_METHOD_DOORBELL_ALLOC));

const struct uapi_definition xiw_uapi_defs[] = {
	UAPI_DEF_CHAIN_OBJ_TREE_NAMED(XIW_OBJECT_DOORBELL),
	{},
};
