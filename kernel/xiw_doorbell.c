// SPDX-License-Identifier: GPL-2.0
/*
 * xiw: the doorbell object of user QPs.
 *
 * A process posts by writing WQEs into its mmap'd SQ and RQ rings; the
 * kernel must be told when it is not already draining the SQ
 * (XIW_SQ_KERNEL_ACTIVE), and, for a QP in ERROR, when receive WRs were
 * posted (they must be flushed). The legacy way (what siw does) is a
 * write() of a zero-WR POST_SEND / POST_RECV command on the uverbs command
 * fd: the uverbs dispatcher copies and checks the command header, enters
 * the device's SRCU section, looks the QP handle up and locks its
 * uobject, allocates the WR buffer, calls post_send/post_recv(NULL) and
 * copies a response back.
 *
 * The doorbell is a driver-defined uverbs FD object, allocated per QP by
 * the ioctl method XIW_METHOD_DOORBELL_ALLOC with the QP's handle and
 * advertised to the provider as XIW_FEATURE_DOORBELL in the context
 * response. A write() on it goes straight from the VFS to
 * xiw_doorbell_write(), which finds the QP and kicks its SQ and/or RQ.
 *
 * The link between a QP and its doorbell has one owner, the QP's word
 * qp->db, and changes only by atomic operations on it:
 *
 *	NULL --alloc: cmpxchg--> db --close: cmpxchg--> NULL
 *	NULL or db --destroy_qp: xchg--> XIW_DB_GONE (for good)
 *
 * Whoever makes a transition owns its consequences, exactly once: the
 * allocation that installs db has given the link a uobject reference on
 * db (so db outlives the file for as long as the QP points to it); the
 * close or the destroy_qp that takes db out drops that reference. A
 * second allocation finds a doorbell installed and fails with -EEXIST,
 * one after destroy_qp finds XIW_DB_GONE and fails with -ENXIO; a closed
 * doorbell is simply no longer installed, so nothing is ever replaced and
 * nothing dropped twice.
 *
 * The way back, db->qp, is what a doorbell write uses. It is set before
 * db is installed (the fd is not installed before the handler returns, so
 * nobody can write it yet) and cleared under db->lock by whoever takes db
 * out of qp->db, so "db->qp == qp" implies "qp->db == db". destroy_qp
 * takes db out and clears db->qp before it drops its own reference on the
 * QP and waits for the others (xiw_destroy_qp()); hence a writer that
 * finds db->qp set under db->lock finds a QP that is not freed, takes a
 * reference, and destroy_qp waits for it; a writer that comes later finds
 * NULL and fails with -ENXIO. It never dereferences a destroyed QP.
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
	struct xiw_qp *qp;		/* NULL once unlinked */
};

/* qp->db after destroy_qp: no doorbell can be linked any more */
#define XIW_DB_GONE	((struct xiw_doorbell *)ERR_PTR(-ENXIO))

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
 * The doorbell (enum xiw_doorbell_kick in xiw-abi.h): a write of 0 bytes
 * rings the SQ, one of 4 bytes carries the kick bits (SQ_BATCH only with
 * SQ: the poster is in a burst, TX may run on another CPU). Runs in the
 * caller's context like the legacy zero-WR POST_SEND / POST_RECV
 * commands, which stay for providers that predate XIW_FEATURE_DOORBELL.
 * The RQ needs a kick only in ERROR (RX consumes the RQ ring on its own):
 * receive WRs posted then must be flushed.
 */
static ssize_t xiw_doorbell_write(struct file *filp, const char __user *buf,
				  size_t count, loff_t *pos)
{
	struct ib_uobject *uobj = filp->private_data;
	struct xiw_doorbell *db = container_of(uobj, struct xiw_doorbell, uobj);
	u32 kick = XIW_DOORBELL_SQ;
	struct xiw_qp *qp;
	int rv = 0;

	if (count) {
		if (count != sizeof(kick))
			return -EINVAL;
		if (get_user(kick, (const u32 __user *)buf))
			return -EFAULT;
		if (!kick || (kick & ~(XIW_DOORBELL_SQ | XIW_DOORBELL_RQ |
					XIW_DOORBELL_SQ_BATCH)) ||
		    (kick & (XIW_DOORBELL_SQ | XIW_DOORBELL_SQ_BATCH)) ==
		    XIW_DOORBELL_SQ_BATCH)
			return -EINVAL;
	}
	qp = xiw_doorbell_get_qp(db);
	if (!qp)
		return -ENXIO;
	if (kick & XIW_DOORBELL_RQ) {
		const struct ib_recv_wr *bad;

		/* a user QP's post_recv(NULL) is its RQ kick */
		rv = xiw_post_recv(&qp->base, NULL, &bad);
	}
	if (kick & XIW_DOORBELL_SQ)
		xiw_qp_sq_doorbell(qp, kick & XIW_DOORBELL_SQ_BATCH);
	xiw_qp_put(&qp->base);
	return rv ? rv : count;
}

static const struct file_operations xiw_doorbell_fops = {
	.owner = THIS_MODULE,
	.write = xiw_doorbell_write,
	.release = uverbs_uobject_fd_release,
};

/*
 * The file is closed, or its context torn down (the fd may stay open
 * then: its writes fail with -ENXIO from now on). Unlink it from its QP
 * if it still is linked.
 */
static void xiw_doorbell_destroy_uobj(struct ib_uobject *uobj,
				      enum rdma_remove_reason why)
{
	struct xiw_doorbell *db = container_of(uobj, struct xiw_doorbell, uobj);
	struct xiw_qp *qp;
	bool unlinked = false;

	/*
	 * Also called when the allocation is aborted (the handler failed or
	 * never ran): then db->qp is NULL and db->lock maybe not initialized.
	 * Once db->qp was set the lock is, and an unlocked NULL here only
	 * means somebody else unlinked it already.
	 */
	if (!READ_ONCE(db->qp))
		return;
	spin_lock(&db->lock);
	qp = db->qp;
	if (qp) {
		/*
		 * db->qp == qp, so destroy_qp has not passed this lock for
		 * db yet: qp is not freed. If it already took db out of
		 * qp->db (XIW_DB_GONE), it owns the reference and clears
		 * db->qp itself.
		 */
		db->qp = NULL;
		unlinked = cmpxchg(&qp->db, db, NULL) == db;
	}
	spin_unlock(&db->lock);
	/* the link's reference; the file still holds its own */
	if (unlinked)
		uverbs_uobject_put(&db->uobj);
}

/*
 * Called by xiw_destroy_qp() before it waits for the QP's references: no
 * doorbell finds the QP afterwards, one in flight holds a reference, and
 * no new one can be linked.
 */
void xiw_doorbell_detach(struct xiw_qp *qp)
{
	struct xiw_doorbell *db = xchg(&qp->db, XIW_DB_GONE);

	if (!db || IS_ERR(db))
		return;
	/* we took db out: the link's reference keeps it */
	spin_lock(&db->lock);
	db->qp = NULL;
	spin_unlock(&db->lock);
	uverbs_uobject_put(&db->uobj);
}

static int UVERBS_HANDLER(XIW_METHOD_DOORBELL_ALLOC)(struct uverbs_attr_bundle *attrs)
{
	struct ib_uobject *uobj =
		uverbs_attr_get_uobject(attrs, XIW_ATTR_DOORBELL_ALLOC_FD);
	struct xiw_doorbell *db = container_of(uobj, struct xiw_doorbell, uobj);
	struct ib_qp *ibqp = uverbs_attr_get_obj(attrs, XIW_ATTR_DOORBELL_ALLOC_QP);
	struct xiw_doorbell *cur;
	struct xiw_qp *qp;

	if (IS_ERR(ibqp))
		return PTR_ERR(ibqp);
	qp = to_xiw_qp(ibqp);
	if (!qp->user) {
		xiw_qp_dbg(qp, "doorbell file: not a user QP\n");
		return -EINVAL;
	}
	/*
	 * The QP's uobject is only read-locked: allocations for the same QP
	 * run concurrently, and only the cmpxchg decides. The fd is not
	 * installed before we return, so nobody writes db before it is
	 * linked; the link's reference is taken before it exists.
	 */
	spin_lock_init(&db->lock);
	WRITE_ONCE(db->qp, qp);
	uverbs_uobject_get(&db->uobj);
	cur = cmpxchg(&qp->db, NULL, db);
	if (!cur)
		return 0;

	WRITE_ONCE(db->qp, NULL);
	uverbs_uobject_put(&db->uobj);
	if (IS_ERR(cur)) {
		xiw_qp_dbg(qp, "doorbell file: the QP is being destroyed\n");
		return PTR_ERR(cur);
	}
	xiw_qp_dbg(qp, "doorbell file: the QP has one\n");
	return -EEXIST;
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
