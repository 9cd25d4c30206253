// SPDX-License-Identifier: GPL-2.0
/*
 * xiw - device, port and context verbs: query_device/port/gid/pkey,
 * user contexts and their mmap()s, protection domains.
 */
#include <linux/ethtool.h>
#include <linux/rtnetlink.h>
#include <linux/vmalloc.h>
#include <rdma/ib_mad.h>
#include <rdma/uverbs_ioctl.h>

#include "xiw.h"

int xiw_query_device(struct ib_device *ibdev, struct ib_device_attr *attr,
		     struct ib_udata *udata)
{
	struct xiw_device *xdev = to_xiw_dev(ibdev);

	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen)) {
		xiw_dbg(ibdev, "unknown driver request data\n");
		return -EINVAL;
	}
	memset(attr, 0, sizeof(*attr));
	attr->fw_ver = XIW_FW_VER;
	attr->sys_image_guid = ibdev->node_guid;
	attr->max_mr_size = XIW_MAX_MR_SIZE;
	attr->page_size_cap = PAGE_SIZE;
	attr->vendor_id = XIW_VENDOR_ID;
	attr->vendor_part_id = xdev->index;
	attr->hw_ver = 0;
	attr->max_qp = XIW_MAX_QP;
	attr->max_qp_wr = XIW_MAX_QP_WR;
	/*
	 * Memory windows of type 1 and 2B: a type 2 window is checked
	 * against both the QP it was bound through and its PD (xiw_stag.c).
	 */
	attr->device_cap_flags = IB_DEVICE_MEM_MGT_EXTENSIONS |
		IB_DEVICE_FLUSH_GLOBAL | IB_DEVICE_FLUSH_PERSISTENT |
		IB_DEVICE_ATOMIC_WRITE | IB_DEVICE_MEM_WINDOW |
		IB_DEVICE_MEM_WINDOW_TYPE_2B;
	attr->kernel_cap_flags = IBK_ALLOW_USER_UNREG;
	attr->max_send_sge = XIW_MAX_SGE;
	attr->max_recv_sge = XIW_MAX_SGE;
	attr->max_sge_rd = XIW_MAX_SGE_RD;
	attr->max_cq = XIW_MAX_CQ;
	attr->max_cqe = XIW_MAX_CQE;
	attr->max_mr = XIW_MAX_MR;
	attr->max_mw = XIW_MAX_MW;
	attr->max_pd = XIW_MAX_PD;
	attr->max_qp_rd_atom = XIW_MAX_IRD;
	attr->max_qp_init_rd_atom = XIW_MAX_ORD;
	attr->max_res_rd_atom = XIW_MAX_QP * XIW_MAX_IRD;
	/*
	 * RFC 7306 atomics run as CPU compare-and-exchange on the target
	 * page, so they are atomic against other QPs, other devices and the
	 * local CPUs: atomic_contention and atomic_2vm take one CmpSwap spinlock from
	 * remote QPs and a local CPU thread at once and count exactly.
	 */
	attr->atomic_cap = IB_ATOMIC_GLOB;
	attr->masked_atomic_cap = IB_ATOMIC_GLOB;
	attr->max_srq = XIW_MAX_SRQ;
	attr->max_srq_wr = XIW_MAX_SRQ_WR;
	attr->max_srq_sge = XIW_MAX_SGE;
	attr->max_fast_reg_page_list_len = XIW_MAX_FR_PAGES;
	attr->max_pkeys = 1;
	return 0;
}

void xiw_get_dev_fw_str(struct ib_device *ibdev, char *str)
{
	snprintf(str, IB_FW_VERSION_NAME_MAX, "%llu.%llu.%llu",
		 XIW_FW_VER >> 32, (XIW_FW_VER >> 16) & 0xffff,
		 XIW_FW_VER & 0xffff);
}

/*
 * Port speed from the netdev's link settings. Like ib_get_eth_speed(), but
 * quiet for netdevs without ethtool link settings (dummy, veth, ...): they
 * report 1 Gb/s, the value ib_core assumes, without a warning per query.
 */
static void xiw_port_speed(struct net_device *ndev, u16 *speed, u8 *width)
{
	static const struct {
		u32 mbps;
		u16 speed;
		u8 width;
	} map[] = {
		{ SPEED_1000, IB_SPEED_SDR, IB_WIDTH_1X },
		{ SPEED_10000, IB_SPEED_FDR10, IB_WIDTH_1X },
		{ SPEED_20000, IB_SPEED_DDR, IB_WIDTH_4X },
		{ SPEED_25000, IB_SPEED_EDR, IB_WIDTH_1X },
		{ SPEED_40000, IB_SPEED_FDR10, IB_WIDTH_4X },
		{ SPEED_50000, IB_SPEED_EDR, IB_WIDTH_2X },
		{ SPEED_100000, IB_SPEED_EDR, IB_WIDTH_4X },
		{ SPEED_200000, IB_SPEED_HDR, IB_WIDTH_4X },
		{ U32_MAX, IB_SPEED_NDR, IB_WIDTH_4X },
	};
	struct ethtool_link_ksettings ks = {};
	u32 mbps = SPEED_1000;
	int i;

	rtnl_lock();
	if (ndev->reg_state == NETREG_REGISTERED &&
	    !__ethtool_get_link_ksettings(ndev, &ks) &&
	    ks.base.speed != (u32)SPEED_UNKNOWN && ks.base.speed)
		mbps = ks.base.speed;
	rtnl_unlock();

	for (i = 0; mbps > map[i].mbps; i++)
		;
	*speed = map[i].speed;
	*width = map[i].width;
}

int xiw_query_port(struct ib_device *ibdev, u32 port,
		   struct ib_port_attr *attr)
{
	struct net_device *ndev;

	ndev = ib_device_get_netdev(ibdev, port);
	if (!ndev)
		return -ENODEV;

	/* ib_core zeroed *attr */
	xiw_port_speed(ndev, &attr->active_speed, &attr->active_width);

	if (netif_running(ndev) && netif_carrier_ok(ndev)) {
		attr->state = IB_PORT_ACTIVE;
		attr->phys_state = IB_PORT_PHYS_STATE_LINK_UP;
	} else {
		attr->state = IB_PORT_DOWN;
		attr->phys_state = IB_PORT_PHYS_STATE_DISABLED;
	}
	attr->max_mtu = ib_mtu_int_to_enum(ndev->mtu);
	attr->active_mtu = attr->max_mtu;
	attr->gid_tbl_len = 1;
	attr->pkey_tbl_len = 1;
	attr->port_cap_flags = IB_PORT_CM_SUP | IB_PORT_DEVICE_MGMT_SUP;
	attr->max_msg_sz = 0x80000000;
	attr->lid = 0;
	attr->sm_lid = 0;
	dev_put(ndev);
	return 0;
}

int xiw_get_port_immutable(struct ib_device *ibdev, u32 port,
			   struct ib_port_immutable *imm)
{
	imm->gid_tbl_len = 1;
	imm->pkey_tbl_len = 1;
	imm->core_cap_flags = RDMA_CORE_PORT_IWARP;
	return 0;
}

/* An iWARP port has one GID: the MAC address, as siw and cxgb4 report. */
int xiw_query_gid(struct ib_device *ibdev, u32 port, int idx,
		  union ib_gid *gid)
{
	struct xiw_device *xdev = to_xiw_dev(ibdev);

	if (idx != 0)
		return -EINVAL;
	memset(gid, 0, sizeof(*gid));
	ether_addr_copy(gid->raw, xdev->mac);
	return 0;
}

int xiw_query_pkey(struct ib_device *ibdev, u32 port, u16 idx, u16 *pkey)
{
	if (idx != 0)
		return -EINVAL;
	*pkey = 0xffff;
	return 0;
}

void xiw_port_event(struct xiw_device *xdev, enum ib_event_type type)
{
	struct ib_event event = {
		.device = &xdev->ibdev,
		.event = type,
		.element.port_num = XIW_PORT,
	};

	ib_dispatch_event(&event);
}

int xiw_alloc_ucontext(struct ib_ucontext *ctx, struct ib_udata *udata)
{
	struct xiw_device *xdev = to_xiw_dev(ctx->device);
	struct xiw_uresp_alloc_ctx uresp = {
		.dev_id = xdev->index,
		.max_inline = XIW_MAX_INLINE,
		.sqe_size = sizeof(struct xiw_sqe),
		.rqe_size = sizeof(struct xiw_rqe),
		.cqe_size = sizeof(struct xiw_cqe),
		.features = XIW_FEATURE_DOORBELL | XIW_FEATURE_REG_MR_ACCESS_EXT |
			    XIW_FEATURE_DOORBELL_BATCH | XIW_FEATURE_MW,
	};
	/* The first ABI 1 response ended at rsvd: its providers still work. */
	size_t min_len = offsetofend(struct xiw_uresp_alloc_ctx, rsvd);
	int rv;

	if (atomic_inc_return(&xdev->num_ctx) > XIW_MAX_QP) {
		rv = -ENOMEM;
		goto err;
	}
	if (udata->outlen < min_len) {
		xiw_dbg(ctx->device, "response buffer too small: %zu\n",
			udata->outlen);
		rv = -EINVAL;
		goto err;
	}
	rv = ib_copy_to_udata(udata, &uresp, min(udata->outlen, sizeof(uresp)));
	if (rv)
		goto err;
	return 0;
err:
	atomic_dec(&xdev->num_ctx);
	return rv;
}

void xiw_dealloc_ucontext(struct ib_ucontext *ctx)
{
	atomic_dec(&to_xiw_dev(ctx->device)->num_ctx);
}

/*
 * The device is going away (netdev unregistered, rdma link delete, rmmod)
 * while a process still has it open. Providing this op lets ib_core
 * revoke the context instead of waiting for the process: it zaps every
 * mapping of our rings (the process then sees zero pages) and destroys
 * the process's objects through the normal destroy verbs. Nothing else
 * here is tied to the process, so there is nothing more to do.
 */
void xiw_disassociate_ucontext(struct ib_ucontext *ctx)
{
	xiw_dbg(ctx->device, "user context revoked\n");
}

int xiw_mmap(struct ib_ucontext *ctx, struct vm_area_struct *vma)
{
	struct rdma_user_mmap_entry *rentry;
	struct xiw_mmap_entry *entry;
	size_t len = vma->vm_end - vma->vm_start;
	int rv;

	rentry = rdma_user_mmap_entry_get(ctx, vma);
	if (!rentry) {
		xiw_dbg(ctx->device, "no queue at offset %#lx\n",
			vma->vm_pgoff << PAGE_SHIFT);
		return -EINVAL;
	}
	entry = container_of(rentry, struct xiw_mmap_entry, rdma);
	if (len != entry->size) {
		xiw_dbg(ctx->device, "mapping length %zu != queue size %zu\n",
			len, entry->size);
		rv = -EINVAL;
		goto out;
	}
	rv = remap_vmalloc_range(vma, entry->addr, 0);
	if (rv) {
		xiw_dbg(ctx->device, "remap_vmalloc_range: %d\n", rv);
		goto out;
	}
	/*
	 * A ring is shared with the kernel and indexed by the producer
	 * state libxiw keeps in the process's private memory. A forked
	 * child gets a copy of that state but, with an inherited mapping,
	 * the very same ring: a post or poll in the child would move the
	 * parent's queue under it. Like the doorbell pages of hardware
	 * providers, the rings are not inherited: the child faults on
	 * them instead of corrupting the parent's queues.
	 */
	vm_flags_set(vma, VM_DONTCOPY);
out:
	rdma_user_mmap_entry_put(rentry);
	return rv;
}

/* Last reference to a user queue: its memory can go now. */
void xiw_mmap_free(struct rdma_user_mmap_entry *rentry)
{
	struct xiw_mmap_entry *entry =
		container_of(rentry, struct xiw_mmap_entry, rdma);

	vfree(entry->addr);
	kfree(entry);
}

/*
 * Count one more object of a kind against the device's limit for it:
 * -ENOMEM, with the count unchanged, once the limit is reached.
 */
int xiw_verbs_obj_count_get(struct ib_device *ibdev, atomic_t *count, u32 max,
			    const char *what)
{
	if (atomic_inc_return(count) <= max)
		return 0;
	atomic_dec(count);
	xiw_dbg(ibdev, "too many %s (limit %u)\n", what, max);
	return -ENOMEM;
}

/* Does a user object's create response fit the caller's buffer? */
int xiw_verbs_udata_resp_fits(struct ib_device *ibdev, struct ib_udata *udata,
			      size_t len)
{
	if (!udata || udata->outlen >= len)
		return 0;
	xiw_dbg(ibdev, "response buffer too small: %zu < %zu\n",
		udata->outlen, len);
	return -EINVAL;
}

int xiw_alloc_pd(struct ib_pd *pd, struct ib_udata *udata)
{
	struct xiw_device *xdev = to_xiw_dev(pd->device);

	return xiw_verbs_obj_count_get(pd->device, &xdev->num_pd, XIW_MAX_PD, "PDs");
}

int xiw_dealloc_pd(struct ib_pd *pd, struct ib_udata *udata)
{
	atomic_dec(&to_xiw_dev(pd->device)->num_pd);
	return 0;
}
