/* SPDX-License-Identifier: GPL-2.0 */
/*
 * xiw - compatibility with older kernels.
 *
 * xiw is written against Linux 6.12 and also builds and runs on 6.1
 * (Debian 12's default kernel). Every kernel API that differs between
 * the two is bridged here, and only here: each block names the kernel
 * change and the first release that has it, and on kernels that have it
 * the block compiles to nothing, so the 6.12 build sees the kernel's own
 * definitions. Where a helper is missing, xiw_<name> is defined and
 * <name> points to it, so callers use the kernel's name throughout.
 *
 * Kernels between 6.1 and 6.12 take the path of the first release
 * named; they are not tested (Documentation/testing.md, "Other kernels").
 */
#ifndef XIW_COMPAT_H
#define XIW_COMPAT_H

#include <linux/bvec.h>
#include <linux/mm.h>
#include <linux/netdevice.h>
#include <linux/skbuff.h>
#include <linux/version.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

/*
 * 6.2, "RDMA: Extend RDMA user ABI to support flush" and "RDMA: Extend
 * RDMA kernel verbs ABI to support flush" / "...atomic write": the
 * device capabilities, MR rights, Flush type/level and completion
 * opcodes of RDMA Flush and Atomic Write. Before, xiw defines them with
 * the values 6.2 gave them (they are uverbs ABI: rdma-core sees the same
 * bits on either kernel). ib_uverbs of those kernels refuses the MR
 * rights in REG_MR's access flags, so libxiw passes them in the driver
 * data (struct xiw_ureq_reg_mr.access_ext) on every kernel.
 */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 2, 0)
#define IB_DEVICE_FLUSH_GLOBAL		BIT_ULL(38)
#define IB_DEVICE_FLUSH_PERSISTENT	BIT_ULL(39)
#define IB_DEVICE_ATOMIC_WRITE		BIT_ULL(40)
/* IB_UVERBS_WC_FLUSH, IB_UVERBS_WC_ATOMIC_WRITE */
#define IB_WC_FLUSH			((enum ib_wc_opcode)8)
#define IB_WC_ATOMIC_WRITE		((enum ib_wc_opcode)9)
enum {
	IB_ACCESS_FLUSH_GLOBAL		= 1 << 8,
	IB_ACCESS_FLUSH_PERSISTENT	= 1 << 9,
	IB_FLUSH_GLOBAL			= 1 << 0,
	IB_FLUSH_PERSISTENT		= 1 << 1,
	IB_FLUSH_RANGE			= 0,
	IB_FLUSH_MR			= 1,
};
#endif

/*
 * 6.3, "block: add a bvec_set_virt helper": a bio_vec for a kernel
 * virtual address.
 */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 3, 0)
static inline void xiw_bvec_set_virt(struct bio_vec *bv, void *vaddr,
				     unsigned int len)
{
	bv->bv_page = virt_to_page(vaddr);
	bv->bv_offset = offset_in_page(vaddr);
	bv->bv_len = len;
}

#define bvec_set_virt xiw_bvec_set_virt
#endif

/*
 * 6.3, "mm: introduce vma->vm_flags wrapper functions": vm_flags became
 * read-only outside the wrappers. Before, the flags are set directly
 * (the caller holds mmap_lock for writing, as the wrapper requires).
 */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 3, 0)
static inline void xiw_vm_flags_set(struct vm_area_struct *vma,
				    vm_flags_t flags)
{
	vma->vm_flags |= flags;
}

#define vm_flags_set xiw_vm_flags_set
#endif

/*
 * 6.10, "net: extend ubuf_info callback to ops structure": the
 * completion of a zerocopy notifier moved from ubuf_info.callback to
 * ubuf_info.ops->complete. XIW_UBUF_OPS() defines the ops (before 6.10:
 * a struct of xiw's with the same member) and xiw_ubuf_set_ops() hooks
 * them to a ubuf_info.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 10, 0)
#define XIW_UBUF_OPS(name, fn) \
	static const struct ubuf_info_ops name = { .complete = fn }
static inline void xiw_ubuf_set_ops(struct ubuf_info *uarg,
				    const struct ubuf_info_ops *ops)
{
	uarg->ops = ops;
}
#else
struct xiw_ubuf_ops {
	void (*complete)(struct sk_buff *skb, struct ubuf_info *uarg,
			 bool zerocopy_success);
};

#define XIW_UBUF_OPS(name, fn) \
	static const struct xiw_ubuf_ops name = { .complete = fn }
static inline void xiw_ubuf_set_ops(struct ubuf_info *uarg,
				    const struct xiw_ubuf_ops *ops)
{
	uarg->callback = ops->complete;
}
#endif

/*
 * 6.11, "RDMA: Pass entire uverbs attr bundle to create cq function":
 * ib_device_ops.create_cq gets the uverbs_attr_bundle, not the udata.
 * The driver's create_cq takes the bundle; XIW_CREATE_CQ_OP(fn) is what
 * the device ops point to: fn itself, or before 6.11 fn_udata(), which
 * XIW_DEFINE_CREATE_CQ_OP(fn) defines and which finds the bundle around
 * the udata (ib_uverbs always passes &attrs->driver_udata; kernel CQs:
 * NULL). From 6.11 on, XIW_DEFINE_CREATE_CQ_OP(fn) checks that fn has the
 * op's type.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 11, 0)
#define XIW_DEFINE_CREATE_CQ_OP(fn)					\
static_assert(__same_type(&(fn), ((const struct ib_device_ops *)0)->create_cq))
#define XIW_CREATE_CQ_OP(fn) fn
#else
#define XIW_DEFINE_CREATE_CQ_OP(fn)					\
static int fn##_udata(struct ib_cq *ibcq,				\
		      const struct ib_cq_init_attr *attr,		\
		      struct ib_udata *udata)				\
{									\
	return fn(ibcq, attr, udata ?					\
		  rdma_udata_to_uverbs_attr_bundle(udata) : NULL);	\
}

#define XIW_CREATE_CQ_OP(fn) fn##_udata
#endif

/*
 * 6.11, "RDMA/core: Introduce "name_assign_type" for an IB device": a
 * device named by "rdma link add" is marked so that rdma-core's udev
 * rule does not rename it. Before, there is no such mark (the rule's
 * default policy, NAME_KERNEL, keeps the name anyway).
 */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 11, 0)
static inline void xiw_ib_mark_name_assigned_by_user(struct ib_device *ibdev)
{
}

#define ib_mark_name_assigned_by_user xiw_ib_mark_name_assigned_by_user
#endif

/*
 * 6.12, "RDMA/device: Export ib_device_get_netdev": before, ib_core has
 * the function but does not export it. The fallback reads the netdev
 * that ib_device_set_netdev() stored in the port data, under the lock
 * ib_core stores it with, and takes a reference as ib_core does; a
 * netdev that is being unregistered counts as none.
 */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 12, 0)
static inline struct net_device *
xiw_ib_device_get_netdev(struct ib_device *ibdev, u32 port)
{
	struct ib_port_data *pdata;
	struct net_device *ndev;
	unsigned long flags;

	if (!rdma_is_port_valid(ibdev, port))
		return NULL;
	pdata = &ibdev->port_data[port];
	spin_lock_irqsave(&pdata->netdev_lock, flags);
	ndev = rcu_dereference_protected(pdata->netdev,
					 lockdep_is_held(&pdata->netdev_lock));
	if (ndev && ndev->reg_state == NETREG_REGISTERED)
		dev_hold(ndev);
	else
		ndev = NULL;
	spin_unlock_irqrestore(&pdata->netdev_lock, flags);
	return ndev;
}

#define ib_device_get_netdev xiw_ib_device_get_netdev
#endif

/*
 * 6.2: ib_core's restrack reports SRQs too (fill_res_srq_entry). Before,
 * an SRQ has only the generic lines.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 2, 0)
#define XIW_HAVE_RES_SRQ 1
#else
#define XIW_HAVE_RES_SRQ 0
#endif

/*
 * 6.14, backported to 6.12.y (Debian's 6.12 has it): sk_net_refcnt_upgrade()
 * makes a kernel socket hold its netns the way a user socket does. On 6.1
 * a kernel socket has no netns reference or tracker to hand over yet, and
 * sk_destruct()/__sk_free() drop what is taken here once sk_net_refcnt is
 * set.
 */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 12, 0)
#include <net/net_namespace.h>
#include <net/sock.h>

static inline void xiw_sk_net_refcnt_upgrade(struct sock *sk)
{
	struct net *net = sock_net(sk);

	sk->sk_net_refcnt = 1;
	get_net_track(net, &sk->ns_tracker, GFP_KERNEL);
	sock_inuse_add(net, 1);
}

#define sk_net_refcnt_upgrade xiw_sk_net_refcnt_upgrade
#endif

#endif /* XIW_COMPAT_H */
