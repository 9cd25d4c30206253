// SPDX-License-Identifier: GPL-2.0
/*
 * xiw - software iWARP RNIC: module life cycle and device management.
 *
 * "rdma link add xiwN type xiw netdev DEV" creates one iWARP ib_device per
 * Ethernet netdev; "rdma link delete", unregistration of the netdev and
 * module unload remove it. The port follows the netdev's operational state
 * through a netdevice notifier. The device never caches a usable netdev
 * pointer: the verbs look it up through ib_device_get_netdev(), which holds
 * a reference, and the notifier matches devices by pointer identity only.
 */
#include <linux/if_arp.h>
#include <linux/module.h>
#include <linux/rtnetlink.h>
#include <net/addrconf.h>
#include <rdma/rdma_netlink.h>

#include "xiw.h"
#include "xiw_commit.h"
#include "xiw_cm.h"
#include "xiw_restrack.h"
#include "xiw_sched.h"

MODULE_AUTHOR("The xiw authors");
MODULE_DESCRIPTION("Software iWARP RNIC with RFC 7306 atomics");
MODULE_LICENSE("GPL");
MODULE_ALIAS_RDMA_LINK("xiw");

/*
 * All xiw devices, for duplicate checks in newlink and for the netdev
 * notifier. Only the control path takes xiw_dev_mutex; it is never held
 * across ib_register_device()/ib_unregister_device().
 */
static LIST_HEAD(xiw_dev_list);
static DEFINE_MUTEX(xiw_dev_mutex);
static DEFINE_IDA(xiw_dev_ida);

XIW_DEFINE_CREATE_CQ_OP(xiw_create_cq);

static const struct ib_device_ops xiw_device_ops = {
	.owner = THIS_MODULE,
	.uverbs_abi_ver = XIW_ABI_VERSION,
	.driver_id = RDMA_DRIVER_UNKNOWN,

	.alloc_hw_port_stats = xiw_alloc_hw_port_stats,
	.alloc_mr = xiw_alloc_mr,
	.alloc_mw = xiw_alloc_mw,
	.alloc_pd = xiw_alloc_pd,
	.alloc_ucontext = xiw_alloc_ucontext,
	.counter_alloc_stats = xiw_counter_alloc_stats,
	.counter_bind_qp = xiw_counter_bind_qp,
	.counter_dealloc = xiw_counter_dealloc,
	.counter_unbind_qp = xiw_counter_unbind_qp,
	.counter_update_stats = xiw_counter_update_stats,
	.create_cq = XIW_CREATE_CQ_OP(xiw_create_cq),
	.create_qp = xiw_create_qp,
	.create_srq = xiw_create_srq,
	.dealloc_mw = xiw_dealloc_mw,
	.dealloc_pd = xiw_dealloc_pd,
	.dealloc_ucontext = xiw_dealloc_ucontext,
	.dereg_mr = xiw_dereg_mr,
	.disassociate_ucontext = xiw_disassociate_ucontext,
	.destroy_cq = xiw_destroy_cq,
	.destroy_qp = xiw_destroy_qp,
	.destroy_srq = xiw_destroy_srq,
	.fill_res_cq_entry = xiw_fill_res_cq_entry,
	.fill_res_mr_entry = xiw_fill_res_mr_entry,
	.fill_res_qp_entry = xiw_fill_res_qp_entry,
#if XIW_HAVE_RES_SRQ
	.fill_res_srq_entry = xiw_fill_res_srq_entry,
#endif
	.get_dev_fw_str = xiw_get_dev_fw_str,
	.get_dma_mr = xiw_get_dma_mr,
	.get_hw_stats = xiw_get_hw_stats,
	.get_port_immutable = xiw_get_port_immutable,
	.iw_accept = xiw_accept,
	.iw_add_ref = xiw_qp_iw_add_ref,
	.iw_connect = xiw_connect,
	.iw_create_listen = xiw_create_listen,
	.iw_destroy_listen = xiw_destroy_listen,
	.iw_get_qp = xiw_get_qp,
	.iw_reject = xiw_reject,
	.iw_rem_ref = xiw_qp_put,
	.map_mr_sg = xiw_map_mr_sg,
	.mmap = xiw_mmap,
	.mmap_free = xiw_mmap_free,
	.modify_qp = xiw_modify_qp,
	.modify_srq = xiw_modify_srq,
	.poll_cq = xiw_poll_cq,
	.post_recv = xiw_post_recv,
	.post_send = xiw_post_send,
	.post_srq_recv = xiw_post_srq_recv,
	.query_device = xiw_query_device,
	.query_gid = xiw_query_gid,
	.query_pkey = xiw_query_pkey,
	.query_port = xiw_query_port,
	.query_qp = xiw_query_qp,
	.query_srq = xiw_query_srq,
	.reg_user_mr = xiw_reg_user_mr,
	.req_notify_cq = xiw_req_notify_cq,

	INIT_RDMA_OBJ_SIZE(ib_cq, xiw_cq, base),
	INIT_RDMA_OBJ_SIZE(ib_mw, xiw_mw, base),
	INIT_RDMA_OBJ_SIZE(ib_pd, xiw_pd, base),
	INIT_RDMA_OBJ_SIZE(ib_qp, xiw_qp, base),
	INIT_RDMA_OBJ_SIZE(ib_srq, xiw_srq, base),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, xiw_ucontext, base),
};

static void xiw_dealloc_driver(struct ib_device *ibdev)
{
	struct xiw_device *xdev = to_xiw_dev(ibdev);

	mutex_lock(&xiw_dev_mutex);
	list_del(&xdev->list);
	mutex_unlock(&xiw_dev_mutex);

	WARN_ON(!xa_empty(&xdev->qp_xa));
	WARN_ON(!xa_empty(&xdev->mr_xa));
	xa_destroy(&xdev->qp_xa);
	xa_destroy(&xdev->mr_xa);
	xiw_stats_free(xdev);
	ida_free(&xiw_dev_ida, xdev->index);
}

static const struct ib_device_ops xiw_dealloc_ops = {
	.dealloc_driver = xiw_dealloc_driver,
};

/* Ethernet only: iWARP runs over TCP/IP and the GID is the MAC address. */
static int xiw_netdev_check(struct net_device *ndev)
{
	if (ndev->type != ARPHRD_ETHER || ndev->addr_len != ETH_ALEN) {
		netdev_dbg(ndev, "xiw: not an Ethernet device (type %u)\n",
			   ndev->type);
		return -EINVAL;
	}
	if (ndev->reg_state != NETREG_REGISTERED) {
		netdev_dbg(ndev, "xiw: device is not registered\n");
		return -ENODEV;
	}
	return 0;
}

static enum ib_event_type xiw_netdev_port_event(struct net_device *ndev)
{
	return netif_running(ndev) && netif_carrier_ok(ndev) ?
	       IB_EVENT_PORT_ACTIVE : IB_EVENT_PORT_ERR;
}

static struct xiw_device *xiw_find_locked(struct net_device *ndev)
{
	struct xiw_device *xdev;

	lockdep_assert_held(&xiw_dev_mutex);
	list_for_each_entry(xdev, &xiw_dev_list, list)
		if (xdev->netdev_key == ndev)
			return xdev;
	return NULL;
}

static struct xiw_device *xiw_device_alloc(struct net_device *ndev)
{
	struct xiw_device *xdev;
	struct ib_device *ibdev;
	int index, rv;

	index = ida_alloc(&xiw_dev_ida, GFP_KERNEL);
	if (index < 0)
		return ERR_PTR(index);

	xdev = ib_alloc_device(xiw_device, ibdev);
	if (!xdev) {
		ida_free(&xiw_dev_ida, index);
		return ERR_PTR(-ENOMEM);
	}
	ibdev = &xdev->ibdev;
	xdev->index = index;
	xdev->netdev_key = ndev;
	xdev->digests = xiw_commit_digests();
	INIT_LIST_HEAD(&xdev->list);
	ether_addr_copy(xdev->mac, ndev->dev_addr);
	xa_init_flags(&xdev->qp_xa, XA_FLAGS_ALLOC1);
	xa_init_flags(&xdev->mr_xa, XA_FLAGS_ALLOC1);

	/* EUI-64 from the MAC: unique and non-zero per netdev. */
	addrconf_addr_eui48((u8 *)&ibdev->node_guid, xdev->mac);
	ibdev->node_type = RDMA_NODE_RNIC;
	ibdev->phys_port_cnt = 1;
	ibdev->num_comp_vectors = num_possible_cpus();
	ibdev->iw_driver_flags = IW_F_NO_PORT_MAP;
	memcpy(ibdev->node_desc, "xiw software iWARP", 19);
	strscpy(ibdev->iw_ifname, ndev->name, sizeof(ibdev->iw_ifname));
	ibdev->uverbs_cmd_mask |= BIT_ULL(IB_USER_VERBS_CMD_POST_SEND) |
				  BIT_ULL(IB_USER_VERBS_CMD_POST_RECV);

	ib_set_device_ops(ibdev, &xiw_device_ops);
	ibdev->driver_def = xiw_uapi_defs;
	ib_set_device_ops(ibdev, &xiw_dealloc_ops);

	rv = xiw_stats_alloc(xdev);
	if (!rv)
		rv = ib_device_set_netdev(ibdev, ndev, XIW_PORT);
	if (rv) {
		ib_dealloc_device(ibdev);	/* calls xiw_dealloc_driver() */
		return ERR_PTR(rv);
	}
	return xdev;
}

static int xiw_newlink(const char *name, struct net_device *ndev)
{
	struct xiw_device *xdev;
	struct ib_device *other;
	bool gone;
	int rv;

	rv = xiw_netdev_check(ndev);
	if (rv)
		return rv;

	other = ib_device_get_by_name(name, RDMA_DRIVER_UNKNOWN);
	if (other) {
		ib_device_put(other);
		netdev_dbg(ndev, "xiw: RDMA device name %s is taken\n", name);
		return -EEXIST;
	}

	xdev = xiw_device_alloc(ndev);
	if (IS_ERR(xdev))
		return PTR_ERR(xdev);

	mutex_lock(&xiw_dev_mutex);
	if (xiw_find_locked(ndev)) {
		mutex_unlock(&xiw_dev_mutex);
		netdev_dbg(ndev, "xiw: netdev already has an xiw device\n");
		ib_dealloc_device(&xdev->ibdev);
		return -EEXIST;
	}
	/* Listed before registration so that no notifier event is missed. */
	list_add_tail(&xdev->list, &xiw_dev_list);
	mutex_unlock(&xiw_dev_mutex);

	ib_mark_name_assigned_by_user(&xdev->ibdev);
	rv = ib_register_device(&xdev->ibdev, name, NULL);
	if (rv) {
		netdev_dbg(ndev, "xiw: cannot register %s: %d\n", name, rv);
		ib_dealloc_device(&xdev->ibdev);
		return rv == -ENFILE ? -EEXIST : rv;
	}

	/*
	 * The netdev may have started to unregister while we registered;
	 * its UNREGISTER event found a device that could not be held yet.
	 */
	rtnl_lock();
	gone = ndev->reg_state != NETREG_REGISTERED;
	rtnl_unlock();
	if (gone) {
		ib_unregister_device(&xdev->ibdev);
		return -ENODEV;
	}
	xiw_port_event(xdev, xiw_netdev_port_event(ndev));
	return 0;
}

static struct rdma_link_ops xiw_link_ops = {
	.type = "xiw",
	.newlink = xiw_newlink,
};

static int xiw_netdev_event(struct notifier_block *nb, unsigned long event,
			    void *arg)
{
	struct net_device *ndev = netdev_notifier_info_to_dev(arg);
	struct xiw_device *xdev;

	mutex_lock(&xiw_dev_mutex);
	xdev = xiw_find_locked(ndev);
	if (xdev && !ib_device_try_get(&xdev->ibdev))
		xdev = NULL;
	mutex_unlock(&xiw_dev_mutex);
	if (!xdev)
		return NOTIFY_DONE;

	switch (event) {
	case NETDEV_UP:
	case NETDEV_CHANGE:
		xiw_port_event(xdev, xiw_netdev_port_event(ndev));
		break;
	case NETDEV_DOWN:
		xiw_port_event(xdev, IB_EVENT_PORT_ERR);
		break;
	case NETDEV_GOING_DOWN:
		xiw_qp_dev_to_error(xdev);
		break;
	case NETDEV_CHANGEADDR:
		xiw_port_event(xdev, IB_EVENT_GID_CHANGE);
		break;
	case NETDEV_UNREGISTER:
		ib_unregister_device_queued(&xdev->ibdev);
		break;
	default:
		break;
	}
	ib_device_put(&xdev->ibdev);
	return NOTIFY_OK;
}

static struct notifier_block xiw_netdev_nb = {
	.notifier_call = xiw_netdev_event,
};

/*
 * Unregister every xiw device. ib_unregister_device() also waits for an
 * unregistration queued by the netdev notifier, and xiw_dealloc_driver(),
 * the last driver op ib_core calls, has returned when it does.
 */
static void xiw_unregister_all(void)
{
	struct xiw_device *xdev;

	for (;;) {
		mutex_lock(&xiw_dev_mutex);
		xdev = list_first_entry_or_null(&xiw_dev_list,
						struct xiw_device, list);
		if (xdev)
			get_device(&xdev->ibdev.dev);
		mutex_unlock(&xiw_dev_mutex);
		if (!xdev)
			break;
		ib_unregister_device(&xdev->ibdev);
		put_device(&xdev->ibdev.dev);
	}
}

/* xiw_kapi.h: is @dev one of ours (its QPs and MRs are xiw objects)? */
bool xiw_is_xiw_device(struct ib_device *dev)
{
	return xiw_ibdev_is_xiw(dev);
}
EXPORT_SYMBOL_GPL(xiw_is_xiw_device);

static int __init xiw_init(void)
{
	int rv;

	rv = xiw_sched_init();
	if (rv)
		return rv;
	rv = xiw_dp_init();
	if (rv)
		goto out_sched;
	rv = xiw_commit_init();
	if (rv)
		goto out_dp;
	rv = xiw_cm_init();
	if (rv)
		goto out_commit;
	rv = register_netdevice_notifier(&xiw_netdev_nb);
	if (rv)
		goto out_cm;
	rdma_link_register(&xiw_link_ops);
	pr_info("xiw: software iWARP RNIC loaded\n");
	return 0;

out_cm:
	xiw_cm_exit();
out_commit:
	xiw_commit_exit();
out_dp:
	xiw_dp_exit();
out_sched:
	xiw_sched_exit();
	return rv;
}

static void __exit xiw_exit(void)
{
	rdma_link_unregister(&xiw_link_ops);
	unregister_netdevice_notifier(&xiw_netdev_nb);
	xiw_unregister_all();
	xiw_cm_exit();
	xiw_commit_exit();
	xiw_dp_exit();
	xiw_sched_exit();
	ida_destroy(&xiw_dev_ida);
}

module_init(xiw_init);
module_exit(xiw_exit);
