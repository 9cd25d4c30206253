/* SPDX-License-Identifier: GPL-2.0 */
/*
 * xiw - software iWARP RNIC: core objects and limits.
 *
 * One struct per verbs object, each embedding its ib_core base object.
 * Work queues and completion queues are rings in the format of the user
 * ABI (include/uapi/rdma/xiw-abi.h) for kernel and user consumers alike,
 * so posting, flushing and polling share one code path.
 */
#ifndef XIW_H
#define XIW_H

#include <linux/list.h>
#include <linux/memcontrol.h>
#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <linux/refcount.h>
#include <linux/sched/mm.h>
#include <linux/spinlock.h>
#include <linux/xarray.h>
#include <linux/etherdevice.h>
#include <rdma/iw_cm.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>
#include <rdma/xiw-abi.h>
#include <rdma/xiw-sqe.h>
#include <rdma/xiw_kapi.h>

#include "xiw_compat.h"
#include "xiw_wire.h"
#include "xiw_stats.h"

#define XIW_DRV_NAME		"xiw"
#define XIW_VENDOR_ID		0x786977	/* "xiw" */
#define XIW_FW_VER		((1ULL << 32) | (0 << 16) | 0)
#define XIW_PORT		1

#define XIW_MAX_QP		16384
/* QP numbers: cyclic in [1, XIW_QPN_MAX]; restrack takes 24 bits */
#define XIW_QPN_MAX		((1U << 24) - 1)
#define XIW_MAX_QP_WR		16384
#define XIW_MAX_CQ		16384
#define XIW_MAX_CQE		262144
#define XIW_MAX_PD		65536
#define XIW_MAX_MR		BIT(20)
#define XIW_MAX_MW		BIT(16)
#define XIW_MAX_MR_SIZE		BIT_ULL(40)
#define XIW_MAX_SRQ		4096
#define XIW_MAX_SRQ_WR		16384
#define XIW_MAX_ORD		128
#define XIW_MAX_IRD		128
#define XIW_MAX_FR_PAGES	512

/*
 * STag = 24-bit index | 8-bit key. Index 0 is never allocated, so STag 0
 * (and anything in 0x00..0xff) never names a memory region.
 */
#define XIW_STAG_KEY_BITS	8
#define XIW_STAG_INDEX_MAX	((1U << 24) - 1)

struct xiw_device {
	struct ib_device ibdev;
	struct list_head list;		/* xiw_dev_list, under xiw_dev_mutex */
	struct net_device *netdev_key;	/* identity only, never dereferenced */
	u8 mac[ETH_ALEN];
	u8 digests;		/* BIT(enum xiw_digest) Verify can compute */
	u32 index;

	struct xarray qp_xa;		/* qpn -> struct xiw_qp */
	u32 qp_next;			/* cyclic QP number allocation */
	struct xarray mr_xa;		/* STag index -> struct xiw_mr */
	u32 mr_next;			/* cyclic STag index allocation */

	atomic_t num_pd;
	atomic_t num_cq;
	atomic_t num_qp;
	atomic_t num_srq;
	atomic_t num_mr;
	atomic_t num_mw;
	atomic_t num_ctx;

	struct xiw_stats __percpu *stats;	/* xiw_stats.c */
	/* rdma counters of QPs (`rdma statistic qp`), xiw_stats.c */
	struct mutex counter_lock;
	struct xarray counters;		/* counter->id -> struct xiw_counter */
	u64 counters_released[XIW_STAT_NUM];	/* of counters deallocated */
};

struct xiw_ucontext {
	struct ib_ucontext base;
};

struct xiw_pd {
	struct ib_pd base;
};

/*
 * A ring in the ABI layout: struct xiw_queue_ctrl followed by the entries.
 * For user queues the memory comes from vmalloc_user() and is owned by the
 * mmap entry, so it stays valid until both the object is destroyed and the
 * last user mapping is gone.
 */
struct xiw_queue {
	struct xiw_queue_ctrl *ctrl;
	void *entries;
	u32 num;			/* power of two */
	u32 esize;
	u32 prod;			/* kernel-side producer index */
	u32 cons;			/* kernel-side consumer index */
	size_t size;			/* bytes, page aligned */
	struct rdma_user_mmap_entry *mmap_entry;	/* user queues only */
};

struct xiw_mmap_entry {
	struct rdma_user_mmap_entry rdma;
	void *addr;			/* vmalloc_user() memory */
	size_t size;
};

struct xiw_cq {
	struct ib_cq base;
	spinlock_t lock;		/* producers and kernel poll_cq */
	struct xiw_queue q;
	struct ib_qp **kqp;		/* kernel CQs: QP of each CQE slot */
	u32 kernel_arm;			/* kernel CQs: XIW_CQ_ARM_* */
	bool user;
};

/*
 * QP states are those of the iWARP verbs (RDMAC verbs, RFC 5040 section
 * 6): Idle, RTS, Closing, Terminate, Error. Idle has three flavours only
 * because IB verbs name three states that iWARP has one for; query_qp
 * reports each under its IB name (xiw_qp.c: xiw_to_ib_qps[]).
 */
enum xiw_qp_state {
	XIW_QPS_IDLE_RESET,		/* IB_QPS_RESET: Idle, queues emptied */
	XIW_QPS_IDLE,			/* IB_QPS_INIT: a new QP */
	XIW_QPS_IDLE_RTR,		/* IB_QPS_RTR: Idle, RQ open */
	XIW_QPS_RTS,			/* IB_QPS_RTS: has the LLP stream */
	XIW_QPS_CLOSING,		/* IB_QPS_SQD: graceful close */
	XIW_QPS_TERMINATE,		/* IB_QPS_SQE: Terminate sent/received */
	XIW_QPS_ERROR,			/* IB_QPS_ERR */
};

struct xiw_srq {
	struct ib_srq base;
	spinlock_t lock;		/* consumers, limit arming */
	struct xiw_queue rq;
	u32 max_sge;
	u32 limit;
	bool armed;
	bool user;
};

struct xiw_qp {
	struct ib_qp base;
	refcount_t ref;			/* iw_cm add_ref/rem_ref, data path */
	struct completion free;
	atomic_t iw_handoff;		/* get_qp references for add_ref */

	struct mutex state_lock;	/* serialises state changes */
	enum xiw_qp_state state;
	bool user;
	struct pid *owner;		/* user QP: the creating process */
	/*
	 * User QP: the memory cgroup of the creating process (a reference
	 * held until destroy_qp), which its connection's memory is charged
	 * to (xiw_qp_memcg_enter()); NULL for kernel QPs.
	 */
	struct mem_cgroup *memcg;

	struct xiw_pd *pd;
	struct xiw_cq *scq;
	struct xiw_cq *rcq;
	struct xiw_srq *srq;

	spinlock_t sq_lock;		/* SQ consumer side */
	struct xiw_queue sq;
	bool sq_flush_held;		/* under sq_lock: xiw_flush_sq_hold() */
	u32 max_send_sge;
	u32 max_inline;
	enum ib_sig_type sq_sig_type;

	spinlock_t rq_lock;		/* RQ consumer side */
	struct xiw_queue rq;
	u32 max_recv_sge;

	int access;			/* IB_ACCESS_REMOTE_* of the QP */
	u8 ord;				/* max_rd_atomic */
	u8 ird;				/* max_dest_rd_atomic */

	/* LLP: set by xiw_llp_start(), owned by the data path */
	struct xiw_cep *cep;		/* connection endpoint (xiw_cm.c) */
	struct xiw_qp_dp __rcu *dp;	/* the data path (xiw_dp.h) */

	/*
	 * User QPs: the link to the doorbell file, owned by xiw_doorbell.c
	 * (NULL, the doorbell, or "gone" after destroy_qp), which changes it
	 * only with atomic operations.
	 */
	struct xiw_doorbell *db;

	/*
	 * While base.counter is set (`rdma statistic qp bind`, or auto
	 * mode), events are counted here too; qbase is qstats at bind time.
	 */
	atomic64_t qstats[XIW_STAT_NUM];
	u64 qbase[XIW_STAT_NUM];
};

/*
 * Memory a user QP's connection needs (the data path, its TX pages, the
 * active CM endpoint) is charged to the memory cgroup of the process that
 * created the QP, whatever context allocates it: the CM's and TX's work
 * items, RX in softirq, the process itself. Such an allocation runs
 * between xiw_qp_memcg_enter() and xiw_qp_memcg_exit() (which make
 * qp->memcg the charged memcg of this task or, in interrupt context, of
 * this CPU) with xiw_qp_gfp() flags: __GFP_ACCOUNT for user QPs, and
 * __GFP_RETRY_MAYFAIL when it may sleep, so that a cgroup at its limit
 * fails the connection with -ENOMEM instead of invoking its OOM killer;
 * __GFP_NOWARN, as such a failure is the cgroup's limit at work, not a
 * kernel problem. Kernel QPs charge nobody (memcg NULL, no __GFP_ACCOUNT).
 */
static inline struct mem_cgroup *xiw_qp_memcg_enter(struct xiw_qp *qp)
{
	return set_active_memcg(qp->memcg);
}

static inline void xiw_qp_memcg_exit(struct mem_cgroup *old)
{
	set_active_memcg(old);
}

static inline gfp_t xiw_qp_gfp(const struct xiw_qp *qp, gfp_t gfp)
{
	if (!qp->memcg)
		return gfp;
	gfp |= __GFP_ACCOUNT | __GFP_NOWARN;
	if (gfpflags_allow_blocking(gfp))
		gfp |= __GFP_RETRY_MAYFAIL;
	return gfp;
}

/*
 * Connection manager -> data path interface.
 *
 * When MPA negotiation is complete, xiw_cm.c hands the TCP socket to the
 * QP with xiw_llp_start(): the QP goes to RTS, the data path installs
 * its socket callbacks (sk_data_ready, sk_write_space) and, if
 * rtr_send_first, sends the RTR frame. The CM keeps sk_state_change.
 */
enum xiw_rtr {
	XIW_RTR_NONE,
	XIW_RTR_SEND,		/* zero-length Send */
	XIW_RTR_WRITE,		/* zero-length RDMA Write */
	XIW_RTR_READ,		/* zero-length RDMA Read (STag 1) */
};

struct xiw_llp_params {
	struct socket *sock;
	bool crc;		/* MPA CRC negotiated */
	u8 mpa_rev;
	u8 ord;			/* negotiated outbound RDMA Read/atomic depth */
	u8 ird;			/* negotiated inbound depth */
	enum xiw_rtr rtr;	/* RTR type negotiated (RFC 6581), or NONE */
	bool rtr_send_first;	/* active side: send the RTR frame */
	bool rtr_wait;		/* passive side: first frame must be the RTR */
};

/* xiw_dp.c: the data-path core, as the QP sees it */
extern struct workqueue_struct *xiw_exec_wq;
int xiw_dp_init(void);
void xiw_dp_exit(void);
void xiw_dp_sq_kick(struct xiw_qp *qp, bool burst);
/* xiw_llp.c: the data path on its connection, for the QP and the CM */
int xiw_llp_start(struct xiw_qp *qp, struct xiw_cep *cep,
		  const struct xiw_llp_params *p);
void xiw_llp_stop(struct xiw_qp *qp, struct xiw_cep *cep);
void xiw_llp_ord_ird_locked(struct xiw_qp *qp, u8 *ord, u8 *ird);
bool xiw_llp_failed_locked(struct xiw_qp *qp);
/* flush the WRs the data path holds; caller holds the QP's state_lock */
void xiw_llp_flush(struct xiw_qp *qp, bool discard);

/* xiw_doorbell.c: the SQ doorbell file of user QPs */
extern const struct uapi_definition xiw_uapi_defs[];
void xiw_doorbell_detach(struct xiw_qp *qp);

/* xiw_cm.c: upcalls from the data path (any context, must not sleep) */
void xiw_cm_rtr_received(struct xiw_cep *cep);
void xiw_cm_llp_error(struct xiw_cep *cep, int reason);
/* xiw_cm.c: the QP consumer asked for a graceful or abortive close */
void xiw_cm_qp_disconnect(struct xiw_cep *cep, bool abortive);
/*
 * What sk->sk_user_data of an xiw socket points to, for the socket's
 * whole life: the CM's endpoint embeds it (xiw_cm.c). The data path
 * publishes its connection there from xiw_llp_start() to
 * xiw_llp_stop(), so the socket callbacks it installs find it in one
 * step. Written and read under sk->sk_callback_lock.
 */
struct xiw_sk_ctx {
	struct xiw_qp_dp *dp;
};

/*
 * An affiliated asynchronous event for the QP's consumer, reported through
 * the handler ib_core installed (any context): the data path raises QP
 * events here without a call into the QP's verbs (xiw_qp.c).
 */
static inline void xiw_qp_event(struct xiw_qp *qp, enum ib_event_type type)
{
	struct ib_event ev = {
		.device = qp->base.device,
		.event = type,
		.element.qp = &qp->base,
	};

	if (qp->base.event_handler)
		qp->base.event_handler(&ev, qp->base.qp_context);
}

/* xiw_qp.c: data path -> QP state (process context, takes state_lock) */
void xiw_qp_llp_error_state(struct xiw_qp *qp);
void xiw_qp_llp_error_state_locked(struct xiw_qp *qp);
/* xiw_qp.c: the data path's start and stop (caller holds state_lock) */
bool xiw_qp_llp_may_start_locked(struct xiw_qp *qp);
void xiw_qp_llp_enter_rts_locked(struct xiw_qp *qp);
bool xiw_qp_llp_closing_locked(struct xiw_qp *qp);
void xiw_qp_llp_down_locked(struct xiw_qp *qp);
/* xiw_qp.c: for the CM and the data path */
bool xiw_qp_caller_owns(struct xiw_qp *qp);
/* xiw_qp.c: a user SQ's doorbell rang (xiw_doorbell.c) */
void xiw_qp_sq_doorbell(struct xiw_qp *qp, bool burst);

/* xiw_stats.c */
struct rdma_hw_stats *xiw_alloc_hw_port_stats(struct ib_device *ibdev,
					      u32 port_num);
int xiw_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
		     u32 port_num, int index);
struct rdma_hw_stats *xiw_counter_alloc_stats(struct rdma_counter *counter);
int xiw_counter_dealloc(struct rdma_counter *counter);
int xiw_counter_bind_qp(struct rdma_counter *counter, struct ib_qp *ibqp);
int xiw_counter_unbind_qp(struct ib_qp *ibqp);
int xiw_counter_update_stats(struct rdma_counter *counter);

enum xiw_mr_type {
	XIW_MR_DMA,
	XIW_MR_USER,
	XIW_MR_FRMR,
	XIW_MR_MW,	/* the STag of a memory window (xiw_mw.c) */
};

struct xiw_mr {
	struct ib_mr base;
	enum xiw_mr_type type;
	struct xiw_pd *pd;
	refcount_t ref;			/* xarray + in-flight data path users */
	struct completion free;
	int access;
	/*
	 * The STag the device knows the region by: set at registration,
	 * changed only by the QP's TX engine executing IB_WR_REG_MR.
	 * base.lkey/rkey belong to the ULP, which moves the key with
	 * ib_update_fast_reg_key() before it posts the REG_MR (iSER chains
	 * a LOCAL_INV of the old key in front of it), so lookups must not
	 * use them.
	 */
	u32 stag;
	bool valid;			/* STag state for invalidate/fast-reg */
	u8 digest;			/* enum xiw_digest of RDMA Verify */
	struct ib_umem *umem;		/* XIW_MR_USER */
	struct page **upages;		/* XIW_MR_USER: pinned pages */
	unsigned long nupages;
	u64 *pages;			/* XIW_MR_FRMR: page addresses */
	u32 npages;
	u32 max_pages;
	/*
	 * XIW_MR_USER: memory windows bound to the region; INT_MIN once
	 * dereg has begun, so no bind can start (xiw_stag_mw_bind()).
	 */
	atomic_t mw_bound;
	/*
	 * Data path accesses to the region's memory under way: each is one
	 * non-preemptible section (xiw_stag_access_begin()) that an
	 * invalidation waits out (xiw_stag_fence()).
	 */
	atomic_t accessing;
	struct xiw_mw *mw;		/* XIW_MR_MW: the window */
	struct rcu_head rcu;		/* lookups are RCU-protected */
};

/*
 * A memory window. Its STag is a struct xiw_mr of type XIW_MR_MW in the
 * device's mr_xa (@stag), so lookups, keys, validity and the rights and
 * range checks are those of every STag: base.iova and base.length of
 * @stag are the window's own range, @stag->access its own rights. What
 * only a window has is here, under @lock (xiw_stag.c).
 */
struct xiw_mw {
	struct ib_mw base;
	struct xiw_mr *stag;		/* the window's STag object */
	spinlock_t lock;		/* binding state below, stag's fields */
	struct xiw_mr *mr;		/* bound to this region, or NULL */
	u32 qpn;			/* type 2: bound through this QP */
};

static inline struct xiw_device *to_xiw_dev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct xiw_device, ibdev);
}

/* Count @n of @s on the device (xiw_stats.h); any context. */
static inline void xiw_stat_add(struct xiw_device *xdev, enum xiw_stat s,
				u64 n)
{
	this_cpu_add(xdev->stats->v[s], n);
}

/*
 * Count @n of @s on @qp's device and, while the QP is bound to an rdma
 * counter, on the QP. Any context. The device always counts first, so a
 * reader that sums the QPs before the device never sees more on the QPs
 * (xiw_get_hw_stats()). An event racing with unbind may miss the QP's
 * counter; the device has it.
 */
static inline void xiw_qp_stat_add(struct xiw_qp *qp, enum xiw_stat s, u64 n)
{
	xiw_stat_add(to_xiw_dev(qp->base.device), s, n);
	if (unlikely(READ_ONCE(qp->base.counter)))
		atomic64_add(n, &qp->qstats[s]);
}

static inline struct xiw_pd *to_xiw_pd(struct ib_pd *pd)
{
	return container_of(pd, struct xiw_pd, base);
}

static inline struct xiw_cq *to_xiw_cq(struct ib_cq *cq)
{
	return container_of(cq, struct xiw_cq, base);
}

static inline struct xiw_qp *to_xiw_qp(struct ib_qp *qp)
{
	return container_of(qp, struct xiw_qp, base);
}

static inline struct xiw_srq *to_xiw_srq(struct ib_srq *srq)
{
	return container_of(srq, struct xiw_srq, base);
}

static inline struct xiw_mw *to_xiw_mw(struct ib_mw *mw)
{
	return container_of(mw, struct xiw_mw, base);
}

static inline struct xiw_mr *to_xiw_mr(struct ib_mr *mr)
{
	return container_of(mr, struct xiw_mr, base);
}

static inline struct xiw_ucontext *to_xiw_ctx(struct ib_ucontext *ctx)
{
	return container_of(ctx, struct xiw_ucontext, base);
}

static inline void *xiw_queue_entry(struct xiw_queue *q, u32 idx)
{
	return q->entries + (size_t)(idx & (q->num - 1)) * q->esize;
}

/*
 * Slot ownership in every ring (see xiw-abi.h): the producer fills a slot
 * and publishes it with a release store of its flags word; the consumer
 * reads the flags with acquire semantics before it reads the slot, and
 * returns the slot with a release store of 0 after it has copied it.
 */
static inline u16 xiw_wqe_flags_acquire(u16 *flags)
{
	/* pairs with the producer's release in xiw_wqe_flags_release() */
	return smp_load_acquire(flags);
}

static inline void xiw_wqe_flags_release(u16 *flags, u16 val)
{
	/* slot contents are visible before the new owner sees @val */
	smp_store_release(flags, val);
}

static inline u32 xiw_cqe_flags_acquire(u32 *flags)
{
	/* pairs with xiw_cqe_flags_release() of the other side */
	return smp_load_acquire(flags);
}

static inline void xiw_cqe_flags_release(u32 *flags, u32 val)
{
	/* CQE contents are visible before the new owner sees @val */
	smp_store_release(flags, val);
}

/*
 * Change bits of a queue's control word (struct xiw_queue_ctrl.flags).
 * Kernel writers run under different locks (QP state, TX ownership), so
 * this is an atomic read-modify-write. The word lives in memory the
 * process can write; a process that keeps changing it only confuses its
 * own QP, so after a few lost races the update is forced with a plain
 * store instead of looping.
 */
static inline void xiw_ctrl_update(u32 *word, u32 set, u32 clear)
{
	int tries = 8;
	u32 old;

	do {
		old = READ_ONCE(*word);
		if (cmpxchg(word, old, (old & ~clear) | set) == old)
			return;
	} while (--tries);
	WRITE_ONCE(*word, (old & ~clear) | set);
}

#define xiw_dbg(ibdev, fmt, ...) \
	ibdev_dbg(ibdev, "%s: " fmt, __func__, ##__VA_ARGS__)

#define xiw_qp_dbg(qp, fmt, ...) do {					\
	struct xiw_qp *_qp = (qp);					\
									\
	ibdev_dbg(_qp->base.device, "QP%u: %s: " fmt, _qp->base.qp_num,	\
		  __func__, ##__VA_ARGS__);				\
} while (0)

/* xiw_verbs.c: device, port, context, PD */
int xiw_query_device(struct ib_device *ibdev, struct ib_device_attr *attr,
		     struct ib_udata *udata);
int xiw_query_port(struct ib_device *ibdev, u32 port,
		   struct ib_port_attr *attr);
int xiw_get_port_immutable(struct ib_device *ibdev, u32 port,
			   struct ib_port_immutable *imm);
int xiw_query_gid(struct ib_device *ibdev, u32 port, int idx,
		  union ib_gid *gid);
int xiw_query_pkey(struct ib_device *ibdev, u32 port, u16 idx, u16 *pkey);
void xiw_get_dev_fw_str(struct ib_device *ibdev, char *str);
int xiw_alloc_ucontext(struct ib_ucontext *ctx, struct ib_udata *udata);
void xiw_dealloc_ucontext(struct ib_ucontext *ctx);
void xiw_disassociate_ucontext(struct ib_ucontext *ctx);
int xiw_mmap(struct ib_ucontext *ctx, struct vm_area_struct *vma);
void xiw_mmap_free(struct rdma_user_mmap_entry *entry);
int xiw_verbs_obj_count_get(struct ib_device *ibdev, atomic_t *count, u32 max,
			    const char *what);
int xiw_verbs_udata_resp_fits(struct ib_device *ibdev, struct ib_udata *udata,
			      size_t len);
int xiw_alloc_pd(struct ib_pd *pd, struct ib_udata *udata);
int xiw_dealloc_pd(struct ib_pd *pd, struct ib_udata *udata);
void xiw_port_event(struct xiw_device *xdev, enum ib_event_type type);

/* xiw_queue.c: rings shared with user space */
int xiw_queue_init(struct xiw_queue *q, struct ib_udata *udata, u32 min_num,
		   u32 esize, u64 *mmap_key);
void xiw_queue_destroy(struct xiw_queue *q);
/* xiw_queue.c: slots of SQ, RQ and SRQ rings under the flag protocol */
bool xiw_wq_full(struct xiw_queue *q);
void xiw_wq_post(struct xiw_queue *q, const void *wqe);
bool xiw_wq_take(struct xiw_queue *q, void *wqe);
bool xiw_wq_published(struct xiw_queue *q, u32 cons, u32 ahead);
u32 xiw_wq_count_published(struct xiw_queue *q);
u8 xiw_wq_wc_opcode(bool user, u8 op);
int xiw_wq_post_recv(struct xiw_queue *q, const struct ib_recv_wr *wr,
		     u32 max_sge, const struct ib_recv_wr **bad_wr);

/* xiw_cq.c */
int xiw_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		  struct uverbs_attr_bundle *attrs);
int xiw_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
int xiw_poll_cq(struct ib_cq *ibcq, int num, struct ib_wc *wc);
int xiw_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);
int xiw_cq_add(struct xiw_cq *cq, struct xiw_qp *qp,
	       const struct xiw_cqe *cqe, bool solicited);
int __xiw_cq_add(struct xiw_cq *cq, struct xiw_qp *qp,
		 const struct xiw_cqe *cqe, bool solicited, bool *notify);
void xiw_cq_notify(struct xiw_cq *cq);

/* xiw_qp.c */
int xiw_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *attr,
		  struct ib_udata *udata);
int xiw_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);
int xiw_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		  struct ib_udata *udata);
int xiw_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		 struct ib_qp_init_attr *init);
int xiw_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		  const struct ib_send_wr **bad_wr);
int xiw_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		  const struct ib_recv_wr **bad_wr);
void xiw_qp_get(struct ib_qp *ibqp);
void xiw_qp_put(struct ib_qp *ibqp);
struct ib_qp *xiw_get_qp(struct ib_device *ibdev, int qpn);
void xiw_qp_iw_add_ref(struct ib_qp *ibqp);
struct xiw_qp *xiw_qp_lookup(struct xiw_device *xdev, u32 qpn);
void xiw_qp_dev_to_error(struct xiw_device *xdev);

/* xiw_flush.c: a QP's rings flushed into its CQs */
void xiw_flush_sq(struct xiw_qp *qp, bool discard);
void xiw_flush_rq(struct xiw_qp *qp, bool discard);
void xiw_flush_sq_hold(struct xiw_qp *qp);
void xiw_flush_sq_release(struct xiw_qp *qp);

/* xiw_srq.c */
int xiw_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *attr,
		   struct ib_udata *udata);
int xiw_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata);
int xiw_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		   enum ib_srq_attr_mask mask, struct ib_udata *udata);
int xiw_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr);
int xiw_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
		      const struct ib_recv_wr **bad_wr);

/* xiw_mem.c */
#define XIW_MR_DRAIN_MS	500	/* dereg: grace before revoking */

/* The access rights of a region (registration, fast registration). */
#define XIW_MR_ACCESS_SUPPORTED (IB_ACCESS_LOCAL_WRITE | \
	IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ | \
	IB_ACCESS_REMOTE_ATOMIC | IB_ACCESS_MW_BIND | \
	IB_ACCESS_FLUSH_GLOBAL | IB_ACCESS_FLUSH_PERSISTENT | \
	IB_ACCESS_OPTIONAL)

struct ib_mr *xiw_get_dma_mr(struct ib_pd *ibpd, int access);
struct ib_mr *xiw_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 len,
			      u64 va, int access, struct ib_udata *udata);
struct ib_mr *xiw_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			   u32 max_sg);

/*
 * Is @dev one of xiw's (its QPs and MRs are xiw objects)? For the kernel
 * API (xiw_kapi.h), whose callers pass any device's objects: only xiw
 * registers xiw_alloc_mr.
 */
static inline bool xiw_ibdev_is_xiw(const struct ib_device *dev)
{
	return dev && dev->ops.alloc_mr == xiw_alloc_mr;
}

int xiw_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int nents,
		  unsigned int *sg_off);
int xiw_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);
int xiw_mem_stag_add(struct xiw_device *xdev, struct xiw_mr *mr, u8 key);
void xiw_mem_stag_remove(struct xiw_device *xdev, struct xiw_mr *mr);
void xiw_llp_release_mr(struct xiw_device *xdev, struct xiw_mr *mr);
void xiw_llp_revoke_mr(struct xiw_device *xdev, struct xiw_mr *mr);

/* xiw_stag.c */
struct xiw_mr *xiw_stag_get(struct xiw_device *xdev, u32 stag);
void xiw_stag_put(struct xiw_mr *mr);

/* Why an STag did not resolve; the caller maps it to a Terminate code. */
enum xiw_mem_err {
	XIW_MEM_OK,
	XIW_MEM_INV_STAG,	/* unknown, wrong key, or invalid state */
	XIW_MEM_PD,		/* MR not in the QP's PD */
	XIW_MEM_ACCESS,		/* access right missing */
	XIW_MEM_BOUNDS,		/* outside [iova, iova + length) */
	XIW_MEM_WRAP,		/* va + len wraps */
};

/*
 * Who accesses memory through an STag: the PD the access is checked
 * against and, for a peer's access, the QP it came through (qpn 0: a
 * local access, which a memory window never grants).
 */
struct xiw_mem_user {
	struct xiw_pd *pd;
	u32 qpn;
};

/*
 * An access by @who through @stag with @access rights, as each of its
 * sections checks it again (xiw_stag_access_begin()).
 */
struct xiw_mem_grant {
	struct xiw_device *xdev;
	struct xiw_mem_user who;
	u32 stag;
	int access;
};

/* A peer's access through @qp. */
static inline struct xiw_mem_user xiw_mem_peer(struct xiw_qp *qp)
{
	return (struct xiw_mem_user){ .pd = qp->pd, .qpn = qp->base.qp_num };
}

/* A local access (an SGE's lkey) checked against @pd. */
static inline struct xiw_mem_user xiw_mem_local(struct xiw_pd *pd)
{
	return (struct xiw_mem_user){ .pd = pd };
}

struct xiw_mr *xiw_stag_resolve(struct xiw_device *xdev,
				const struct xiw_mem_user *who, u32 stag,
				int access, u64 va, u64 len,
				enum xiw_mem_err *err);
struct xiw_mr *xiw_stag_cached(struct xiw_device *xdev,
			       const struct xiw_mem_user *who,
			       struct xiw_mr **cache, u32 stag, int access,
			       u64 va, u64 len, enum xiw_mem_err *err);
struct xiw_mr *xiw_stag_reuse(struct xiw_device *xdev,
			      const struct xiw_mem_user *who,
			      struct xiw_mr *kept, u32 stag, int access,
			      u64 va, u64 len, enum xiw_mem_err *err);
enum xiw_mem_err xiw_stag_check(struct xiw_mr *mr, struct xiw_pd *pd,
				int access, u64 va, u64 len);
struct page *xiw_stag_page(struct xiw_mr *mr, u64 va, u32 *off, u32 *avail);
bool xiw_stag_page_is_pmem(struct page *page);
int xiw_stag_fast_reg(struct xiw_mr *mr, struct xiw_pd *pd, u32 key,
		      int access);
int xiw_stag_may_invalidate(struct xiw_device *xdev,
			    const struct xiw_mem_user *who, u32 stag);
int xiw_stag_invalidate(struct xiw_device *xdev, const struct xiw_mem_user *who,
			u32 stag, bool remote);
enum xiw_mem_err xiw_stag_access_begin(struct xiw_device *xdev,
				       const struct xiw_mem_user *who,
				       struct xiw_mr *mr, u32 stag, int access,
				       u64 va, u64 len);
void xiw_stag_access_end(struct xiw_mr *mr);
void xiw_stag_fence(struct xiw_mr *mr);
int xiw_stag_mw_bind(struct xiw_device *xdev, struct xiw_qp *qp, u32 stag,
		     u32 mr_lkey, u64 addr, u64 len, int access);
void xiw_stag_mw_unbind(struct xiw_mw *mw);

/* xiw_mw.c */
int xiw_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata);
int xiw_dealloc_mw(struct ib_mw *ibmw);

#endif /* XIW_H */
