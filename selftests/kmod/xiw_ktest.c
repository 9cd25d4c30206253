// SPDX-License-Identifier: GPL-2.0
/*
 * xiw_ktest - a kernel ULP that exercises the xiw kernel API of the
 * draft-talpey-rdma-commit operations (<rdma/xiw_kapi.h>).
 *
 * Connections are set up with rdma_cm. A server end registers three
 * regions of kernel memory with fast registration (IB_WR_REG_MR):
 * crc32c digest with the flush right, sha256 digest with the flush
 * right, and one without the flush right. A client end works on them:
 *
 *	listen, connect, register	the setup
 *	write_flush	RDMA Write (unsignaled), then Flush of its range:
 *			at the Flush completion the bytes are in place
 *	atomic_write	Atomic Write of 8 bytes, in place (and only they)
 *			at its completion
 *	flush_mr	RDMA Write, then Flush of the whole MR: the bytes
 *			are in place at its completion
 *	verify_*	Verify returning the peer's crc32c / sha256 digest
 *			(compared with the digest computed here), Verify
 *			with the matching hash
 *	bad_operands	the API refuses an oversized hash without posting
 *	verify_mismatch	a wrong hash: IB_WC_REM_OP_ERR with the Terminate's
 *			layer/type/code 0x02ff, the QPs in ERROR
 *	flushed_after_terminate	then an Atomic Write completes with
 *			IB_WC_WR_FLUSH_ERR (its target untouched)
 *	commit_chain	on a second connection, a commit log: Write, Flush
 *			(unsignaled) and Atomic Write of the tail per record;
 *			record in place when the tail completes
 *	disconnect	its graceful close reaches both ends
 *	flush_no_right	on a third connection, Flush of an MR without the
 *			flush right: IB_WC_REM_ACCESS_ERR, vendor_err 0x01xx
 *	zc_reuse	(@zc_rounds > 0) on a fourth connection, per round a
 *			signaled RDMA Write of three pages of the buffer,
 *			the buffer overwritten with 0xee the moment it
 *			completes, a Flush: the target holds the bytes of
 *			the Write, none of the overwrite (with xiw's
 *			tx_zcopy=1 the pages went to TCP by reference)
 *	atomic_post	Writes, an Atomic Write and Flushes posted with
 *			bottom halves off (xiw sends short WRs from such a
 *			post, longer ones from its TX work): each completes
 *			in order with success, the target holds the bytes
 *	tx_noio		every pass of xiw's TX over the SQ of these kernel
 *			QPs, seen by a kprobe on xiw_tx_sq_next() while the
 *			checks above ran, had NOIO semantics
 *
 * @role "loopback" (default) runs both ends in module init (two xiw
 * devices, or one) and looks at the server's memory directly. Across two
 * machines, "server" listens from init until rmmod (a kernel thread serves
 * one connection after the other and sends the client its regions' STags
 * and addresses in a Send), and "client" runs the checks in init, reading
 * the target back with RDMA Read.
 *
 * Each check logs "PASS name" or "FAIL name: why". In loopback and client
 * roles everything is torn down before init returns, and init fails with
 * -EIO when any check failed: a passing insmod is a passing run (rmmod it
 * afterwards). The server logs its failures and a summary at rmmod.
 *
 * @role "idle" is the victim of kapi_qpsteal: init binds an rdma_cm id
 * to @client_addr, creates its QP with rdma_create_qp() (INIT, never
 * connected) and publishes the QP number in the read-only parameter
 * idle_qpn; rmmod checks that nobody moved that QP out of INIT
 * ("PASS idle_untouched") before destroying it.
 *
 * @role "fence" is the kernel consumer of kapi_invfence, which talks to
 * it with a raw peer (xiw_badpeer): a thread accepts up to two
 * connections on @server_addr, all in one PD, posts receives on each,
 * and through the first fast-registers 1 MiB of 0xa5 with remote read
 * and write ("fence: registered stag=... addr=...", and "STAG:ADDR" in
 * the read-only parameter fence_key). A receive that reports the
 * peer invalidated that STag hands the memory back: it is overwritten
 * with 0xee at once ("fence: MARKED conn=N after=INVALIDATED"); so is
 * the completion of an IB_WR_LOCAL_INV the thread posts on connection N
 * when N is written to fence_local_inv ("after=LOCAL_INV"). Every
 * receive is logged ("fence: RECV conn=N status=S len=L inv=STAG"). The
 * region's bytes are counted by value just before the overwrite and at
 * rmmod, once the QPs are gone ("fence: region at rmmod a5=N ee=N
 * other=N").
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/crc32c.h>
#include <linux/delay.h>
#include <linux/inet.h>
#include <linux/jiffies.h>
#include <linux/kprobes.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/scatterlist.h>
#include <linux/sched/task.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <crypto/sha2.h>
#include <net/net_namespace.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>
#include <rdma/xiw_kapi.h>

#include "xiw_compat.h"

static char *role = "loopback";
module_param(role, charp, 0444);
MODULE_PARM_DESC(role, "loopback (both ends, default), server, client, idle or fence");

static char *server_addr = "192.0.2.1";
module_param(server_addr, charp, 0444);
MODULE_PARM_DESC(server_addr, "address the server listens on (IPv4 or IPv6)");

static char *client_addr = "192.0.2.2";
module_param(client_addr, charp, 0444);
MODULE_PARM_DESC(client_addr, "source address of the client's connections");

static ushort port = 7490;
module_param(port, ushort, 0444);
MODULE_PARM_DESC(port, "TCP port of the listener");

static uint idle_qpn;
module_param(idle_qpn, uint, 0444);
MODULE_PARM_DESC(idle_qpn, "role idle: the number of the idle kernel QP (output)");

static uint zc_rounds;
module_param(zc_rounds, uint, 0444);
MODULE_PARM_DESC(zc_rounds, "loopback and client: rounds of zc_reuse (0: not run)");

static char kt_fence_key[32];
module_param_string(fence_key, kt_fence_key, sizeof(kt_fence_key), 0444);
MODULE_PARM_DESC(fence_key, "role fence: STAG:ADDR of its region, once registered (output)");

/* role fence: the connection to invalidate the region on, once */
static int kt_fence_linv;

static int kt_fence_linv_set(const char *val, const struct kernel_param *kp)
{
	int n, rv;

	rv = kstrtoint(val, 0, &n);
	if (rv)
		return rv;
	if (n < 1 || n > 2)
		return -EINVAL;
	WRITE_ONCE(kt_fence_linv, n);
	return 0;
}

static const struct kernel_param_ops kt_fence_linv_ops = {
	.set = kt_fence_linv_set,
};
module_param_cb(fence_local_inv, &kt_fence_linv_ops, NULL, 0200);
MODULE_PARM_DESC(fence_local_inv, "role fence: write N to invalidate the region with IB_WR_LOCAL_INV on connection N");

static uint timeout_ms = 10000;
module_param(timeout_ms, uint, 0444);
MODULE_PARM_DESC(timeout_ms, "limit of each wait for an event or completion");

#define KT_DEPTH	16		/* SQ and CQ entries */
#define KT_RD_DEPTH	4		/* ORD and IRD */
#define KT_TBUF_SIZE	(4 * PAGE_SIZE)	/* each target region */
#define KT_AW_OFF	(PAGE_SIZE + 8)	/* Atomic Write target offset */
#define KT_PAGE2	(2 * PAGE_SIZE)	/* flush_mr's Write, commit records */
#define KT_VERIFY_LEN	(3 * PAGE_SIZE)	/* bytes each Verify covers */
#define KT_REC_LEN	512		/* commit_chain record */
#define KT_REC_NUM	8

/*
 * The local buffer of an end: Write sources at the offset they go to in
 * the target (KT_TBUF_SIZE bytes), then the digest of a Verify (or the
 * server's info message), then where RDMA Reads land.
 */
#define KT_MSG_OFF	KT_TBUF_SIZE
#define KT_READ_OFF	(KT_TBUF_SIZE + PAGE_SIZE)
#define KT_READ_MAX	(3 * PAGE_SIZE)
#define KT_LBUF_SIZE	(2 * KT_TBUF_SIZE)

/* Terminate Control of a Verify mismatch: RDMAP, remote op, vendor */
#define KT_VENDOR_ERR_VERIFY	0x02ff

enum kt_role {
	KT_LOOPBACK,
	KT_SERVER,
	KT_CLIENT,
	KT_IDLE,
	KT_FENCE,
};

enum kt_wr_id {
	KT_WRID_REG = 1,
	KT_WRID_WRITE,
	KT_WRID_FLUSH,
	KT_WRID_ATOMIC_WRITE,
	KT_WRID_FLUSH_MR,
	KT_WRID_VERIFY,
	KT_WRID_TAIL,
	KT_WRID_READ,
	KT_WRID_INFO,
	KT_WRID_FENCE_RECV,
	KT_WRID_FENCE_LINV,
};

/* The server end's regions. */
enum kt_target_idx {
	KT_T_CRC,		/* crc32c, flush right */
	KT_T_SHA,		/* sha256, flush right */
	KT_T_NOFLUSH,		/* crc32c, no flush right */
	KT_NTARGET,
};

/* The server's Send to the client: where its regions are. */
#define KT_INFO_MAGIC	0x6b747831	/* "ktx1" */
struct kt_info {
	__le32 magic;
	__le32 rkey[KT_NTARGET];
	__le64 addr[KT_NTARGET];
};

/* One end of a connection (or the listener) and its verbs resources. */
struct kt_ep {
	const char *name;
	struct rdma_cm_id *id;
	struct ib_pd *pd;
	struct ib_cq *cq;
	bool has_qp;
	bool connected;
	spinlock_t lock;		/* events, next, id of a request */
	wait_queue_head_t wq;
	unsigned long events;		/* BIT(enum rdma_cm_event_type) */
	struct kt_ep *next;		/* listener: the end a request gets */
};

/* Memory the server end exposes: a kernel buffer, fast-registered. */
struct kt_region {
	void *buf;
	struct scatterlist sg;
	bool mapped;
	struct ib_mr *mr;
};

/* A region as the client addresses it. */
struct kt_target {
	u32 rkey;
	u64 addr;
	struct kt_region *r;		/* loopback: its memory, else NULL */
	u8 *shadow;			/* what it must hold, or NULL */
};

struct kt_conn {
	struct kt_ep cli;
	struct kt_ep srv;
	struct kt_region reg[KT_NTARGET];	/* server end */
	struct kt_target t[KT_NTARGET];		/* client end */
	struct ib_device *ldev;		/* lbuf is mapped for it */
	void *lbuf;
	u64 ldma;
	bool lmapped;
	u8 *shadow;			/* of KT_T_CRC and KT_T_SHA */
	bool terminated;		/* expected to end in a Terminate */
};

struct kt_ctx {
	enum kt_role role;
	struct kt_ep listen;
	struct sockaddr_storage srv_sa;
	struct sockaddr_storage cli_sa;
	int passed;
	int failed;
	int served;			/* server: connections */
};

static struct kt_ctx *kt_server;
static struct task_struct *kt_server_task;
static struct kt_ctx *kt_idle;		/* role idle: ctx->listen is the QP's end */

static void kt_pass(struct kt_ctx *ctx, const char *name)
{
	ctx->passed++;
	pr_info("PASS %s\n", name);
}

static __printf(3, 4) void kt_fail(struct kt_ctx *ctx, const char *name,
				   const char *fmt, ...)
{
	struct va_format vaf;
	va_list args;

	ctx->failed++;
	va_start(args, fmt);
	vaf.fmt = fmt;
	vaf.va = &args;
	pr_err("FAIL %s: %pV\n", name, &vaf);
	va_end(args);
}

/*
 * tx_noio. A kernel QP's TX is part of its consumer's I/O path: writeback
 * or reclaim may wait for the very WRs a TX pass sends, so reclaim
 * entered from that pass's allocations (TX pages, TCP's skbs) must not
 * start I/O, and xiw runs the pass with NOIO semantics. The SQ side of
 * xiw's TX (xiw_tx_sq_next()) is reached only from such a pass, or from
 * a post that may not sleep (atomic_post: bottom halves off, where every
 * allocation is GFP_ATOMIC and none can start I/O), never from RX, which
 * sends responses only: a kprobe on it counts the calls whose task lacks
 * PF_MEMALLOC_NOIO and does not run with bottom halves off while this
 * module's checks run. All of this module's QPs are kernel QPs; the test
 * runs no user QP beside.
 */
static atomic_t kt_noio_calls = ATOMIC_INIT(0);
static atomic_t kt_noio_missing = ATOMIC_INIT(0);
static atomic_t kt_noio_atomic = ATOMIC_INIT(0);

static int kt_noio_pre(struct kprobe *p, struct pt_regs *regs)
{
	atomic_inc(&kt_noio_calls);
	if (in_task() && softirq_count())
		atomic_inc(&kt_noio_atomic);
	else if (!in_task() || !(current->flags & PF_MEMALLOC_NOIO))
		atomic_inc(&kt_noio_missing);
	return 0;
}

static struct kprobe kt_noio_probe = {
	.symbol_name = "xiw_tx_sq_next",
	.pre_handler = kt_noio_pre,
};

static void kt_noio_check(struct kt_ctx *ctx, int armed)
{
	int calls, missing;

	if (armed) {
		kt_fail(ctx, "tx_noio", "register_kprobe(%s): %d",
			kt_noio_probe.symbol_name, armed);
		return;
	}
	unregister_kprobe(&kt_noio_probe);
	calls = atomic_read(&kt_noio_calls);
	missing = atomic_read(&kt_noio_missing);
	pr_info("tx_noio: %d SQ steps of TX, %d without NOIO, %d in posts that may not sleep\n",
		calls, missing, atomic_read(&kt_noio_atomic));
	if (!calls)
		kt_fail(ctx, "tx_noio", "the kprobe saw no TX pass");
	else if (missing)
		kt_fail(ctx, "tx_noio",
			"%d of %d SQ steps of a kernel QP's TX ran without NOIO",
			missing, calls);
	else
		kt_pass(ctx, "tx_noio");
}

static void kt_ep_init(struct kt_ep *ep, const char *name)
{
	memset(ep, 0, sizeof(*ep));
	ep->name = name;
	spin_lock_init(&ep->lock);
	init_waitqueue_head(&ep->wq);
}

static int kt_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct kt_ep *ep = id->context;
	unsigned long flags;
	int rv = 0;

	spin_lock_irqsave(&ep->lock, flags);
	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
		/* @id is new: hand it to the server end waiting for it */
		if (ep->next && !ep->next->id) {
			ep->next->id = id;
			id->context = ep->next;
		} else {
			rv = -ECONNREFUSED;	/* the CM destroys @id */
		}
	}
	if (ev->event < BITS_PER_LONG)
		ep->events |= BIT(ev->event);
	spin_unlock_irqrestore(&ep->lock, flags);
	if (ev->status)
		pr_debug("%s: event %s status %d\n", ep->name,
			 rdma_event_msg(ev->event), ev->status);
	wake_up(&ep->wq);
	return rv;
}

#define KT_CM_ERRORS (BIT(RDMA_CM_EVENT_ADDR_ERROR) | \
	BIT(RDMA_CM_EVENT_ROUTE_ERROR) | BIT(RDMA_CM_EVENT_CONNECT_ERROR) | \
	BIT(RDMA_CM_EVENT_UNREACHABLE) | BIT(RDMA_CM_EVENT_REJECTED) | \
	BIT(RDMA_CM_EVENT_DEVICE_REMOVAL))

static unsigned long kt_events(struct kt_ep *ep)
{
	unsigned long flags, ev;

	spin_lock_irqsave(&ep->lock, flags);
	ev = ep->events;
	spin_unlock_irqrestore(&ep->lock, flags);
	return ev;
}

/* Wait for CM event @event on @ep: 0, -ECONNABORTED or -ETIMEDOUT. */
static int kt_wait_event(struct kt_ep *ep, enum rdma_cm_event_type event,
			 unsigned long errors)
{
	unsigned long want = BIT(event) | errors;

	if (!wait_event_timeout(ep->wq, kt_events(ep) & want,
				msecs_to_jiffies(timeout_ms)))
		return -ETIMEDOUT;
	return kt_events(ep) & BIT(event) ? 0 : -ECONNABORTED;
}

/*
 * The server thread's wait: no time limit, but kthread_stop() ends it
 * (-EINTR). Interruptible, so an idle server is not a hung task.
 */
static int kt_wait_event_stoppable(struct kt_ep *ep,
				   enum rdma_cm_event_type event,
				   unsigned long errors)
{
	unsigned long want = BIT(event) | errors;

	wait_event_interruptible(ep->wq, (kt_events(ep) & want) ||
				 kthread_should_stop());
	if (kt_events(ep) & BIT(event))
		return 0;
	return kt_events(ep) & errors ? -ECONNABORTED : -EINTR;
}

/* The next completion of @ep's CQ (the only way it is polled). */
static int kt_poll(struct kt_ep *ep, struct ib_wc *wc)
{
	unsigned long end = jiffies + msecs_to_jiffies(timeout_ms);
	int n;

	for (;;) {
		n = ib_poll_cq(ep->cq, 1, wc);
		if (n < 0)
			return n;
		if (n)
			return 0;
		if (time_after(jiffies, end))
			return -ETIMEDOUT;
		usleep_range(50, 200);
	}
}

/*
 * Poll one completion of @ep and check it: 0 if it is @wr_id with
 * @status (and @opcode when that is a success). Logs the failure of
 * check @name otherwise.
 */
static int kt_expect_wc(struct kt_ctx *ctx, struct kt_ep *ep,
			const char *name, u64 wr_id, enum ib_wc_opcode opcode,
			enum ib_wc_status status, struct ib_wc *wc)
{
	int rv = kt_poll(ep, wc);

	if (rv) {
		kt_fail(ctx, name, "no completion on the %s CQ (%d)",
			ep->name, rv);
		return rv;
	}
	if (wc->wr_id != wr_id || wc->status != status ||
	    (status == IB_WC_SUCCESS && wc->opcode != opcode)) {
		kt_fail(ctx, name,
			"completion wr_id %llu status %s (%d) opcode %d vendor_err %#x, expected wr_id %llu status %s opcode %d",
			wc->wr_id, ib_wc_status_msg(wc->status), wc->status,
			wc->opcode, wc->vendor_err, wr_id,
			ib_wc_status_msg(status), opcode);
		return -EIO;
	}
	return 0;
}

/*
 * PD, CQ and QP (@nrecv receive WRs) of a connection end, on the device
 * its cm_id is bound to. With @pd the QP is in that PD, which the caller
 * owns (ep->pd stays NULL); without, in a PD of its own.
 */
static int kt_ep_res(struct kt_ep *ep, struct ib_pd *pd, u32 nrecv)
{
	struct ib_qp_init_attr qa = {
		.cap = {
			.max_send_wr = KT_DEPTH,
			.max_recv_wr = nrecv,
			.max_send_sge = 1,
			.max_recv_sge = 1,
		},
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.qp_type = IB_QPT_RC,
	};
	struct ib_device *dev = ep->id->device;
	int rv;

	if (!pd) {
		ep->pd = ib_alloc_pd(dev, 0);
		if (IS_ERR(ep->pd)) {
			rv = PTR_ERR(ep->pd);
			ep->pd = NULL;
			return rv;
		}
		pd = ep->pd;
	}
	ep->cq = ib_alloc_cq(dev, NULL, 2 * KT_DEPTH, 0, IB_POLL_DIRECT);
	if (IS_ERR(ep->cq)) {
		rv = PTR_ERR(ep->cq);
		ep->cq = NULL;
		return rv;
	}
	qa.send_cq = ep->cq;
	qa.recv_cq = ep->cq;
	rv = rdma_create_qp(ep->id, pd, &qa);
	if (rv)
		return rv;
	ep->has_qp = true;
	return 0;
}

static void kt_ep_destroy_qp(struct kt_ep *ep)
{
	if (ep->has_qp)
		rdma_destroy_qp(ep->id);
	ep->has_qp = false;
}

/* CQ, PD and cm_id of @ep, once its QP and MRs are gone. */
static void kt_ep_free(struct kt_ep *ep)
{
	if (ep->cq)
		ib_free_cq(ep->cq);
	ep->cq = NULL;
	if (ep->pd)
		ib_dealloc_pd(ep->pd);
	ep->pd = NULL;
	if (ep->id)
		rdma_destroy_id(ep->id);
	ep->id = NULL;
}

static void kt_region_free(struct kt_ep *ep, struct kt_region *r)
{
	if (r->mr)
		ib_dereg_mr(r->mr);
	if (r->mapped)
		ib_dma_unmap_sg(ep->id->device, &r->sg, 1, DMA_BIDIRECTIONAL);
	kfree(r->buf);
	memset(r, 0, sizeof(*r));
}

/*
 * @len bytes (a power of two, whole pages) on @ep's side, each @fill,
 * registered for @access in the PD of @ep's QP with a REG_MR work request
 * on that QP (it must be connected). A failure is logged as one of check
 * @name.
 */
static int kt_region_reg(struct kt_ctx *ctx, struct kt_ep *ep,
			 struct kt_region *r, u32 len, u8 fill, int access,
			 const char *name)
{
	struct ib_device *dev = ep->id->device;
	const struct ib_send_wr *bad;
	struct ib_reg_wr wr = {};
	const char *step;
	struct ib_wc wc;
	int rv;

	/* kmalloc of a power of two is aligned to it: whole pages */
	step = "kmalloc";
	rv = -ENOMEM;
	r->buf = kmalloc(len, GFP_KERNEL);
	if (!r->buf)
		goto err;
	memset(r->buf, fill, len);
	sg_init_one(&r->sg, r->buf, len);
	step = "ib_dma_map_sg";
	if (ib_dma_map_sg(dev, &r->sg, 1, DMA_BIDIRECTIONAL) != 1)
		goto err;
	r->mapped = true;
	step = "ib_alloc_mr";
	r->mr = ib_alloc_mr(ep->id->qp->pd, IB_MR_TYPE_MEM_REG,
			    len >> PAGE_SHIFT);
	if (IS_ERR(r->mr)) {
		rv = PTR_ERR(r->mr);
		r->mr = NULL;
		goto err;
	}
	step = "ib_map_mr_sg";
	rv = ib_map_mr_sg(r->mr, &r->sg, 1, NULL, PAGE_SIZE);
	if (rv != 1) {
		rv = rv < 0 ? rv : -EINVAL;
		goto err;
	}

	wr.wr.opcode = IB_WR_REG_MR;
	wr.wr.wr_id = KT_WRID_REG;
	wr.wr.send_flags = IB_SEND_SIGNALED;
	wr.mr = r->mr;
	wr.key = r->mr->rkey;
	wr.access = access;
	step = "ib_post_send(IB_WR_REG_MR)";
	rv = ib_post_send(ep->id->qp, &wr.wr, &bad);
	if (rv)
		goto err;
	return kt_expect_wc(ctx, ep, name, KT_WRID_REG, IB_WC_REG_MR,
			    IB_WC_SUCCESS, &wc);

err:
	kt_fail(ctx, name, "%s: %d", step, rv);
	return rv;
}

/* The three regions of the server end of @c. */
static int kt_regions_reg(struct kt_ctx *ctx, struct kt_conn *c,
			  const char *name)
{
	const int rights = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE |
			   IB_ACCESS_REMOTE_READ;
	static const int flush[KT_NTARGET] = {
		[KT_T_CRC] = IB_ACCESS_FLUSH_GLOBAL,
		[KT_T_SHA] = IB_ACCESS_FLUSH_GLOBAL,
	};
	int i, rv;

	for (i = 0; i < KT_NTARGET; i++) {
		rv = kt_region_reg(ctx, &c->srv, &c->reg[i], KT_TBUF_SIZE, 0,
				   rights | flush[i], name);
		if (rv)
			return rv;
	}
	rv = xiw_mr_set_digest(c->reg[KT_T_SHA].mr, XIW_DIGEST_SHA256);
	if (rv)
		kt_fail(ctx, name, "xiw_mr_set_digest(SHA256) %d", rv);
	return rv;
}

/* The buffer of an end, for @dev. */
static int kt_lbuf_map(struct kt_conn *c, struct ib_device *dev)
{
	c->lbuf = kzalloc(KT_LBUF_SIZE, GFP_KERNEL);
	if (!c->lbuf)
		return -ENOMEM;
	c->ldma = ib_dma_map_single(dev, c->lbuf, KT_LBUF_SIZE,
				    DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(dev, c->ldma))
		return -ENOMEM;
	c->ldev = dev;
	c->lmapped = true;
	return 0;
}

static void kt_lbuf_cpu(struct kt_conn *c)
{
	ib_dma_sync_single_for_cpu(c->ldev, c->ldma, KT_LBUF_SIZE,
				   DMA_BIDIRECTIONAL);
}

static void kt_lbuf_dev(struct kt_conn *c)
{
	ib_dma_sync_single_for_device(c->ldev, c->ldma, KT_LBUF_SIZE,
				      DMA_BIDIRECTIONAL);
}

static struct kt_conn *kt_conn_alloc(void)
{
	struct kt_conn *c = kzalloc(sizeof(*c), GFP_KERNEL);

	if (!c)
		return NULL;
	c->shadow = kzalloc(2 * KT_TBUF_SIZE, GFP_KERNEL);
	if (!c->shadow) {
		kfree(c);
		return NULL;
	}
	c->t[KT_T_CRC].shadow = c->shadow;
	c->t[KT_T_SHA].shadow = c->shadow + KT_TBUF_SIZE;
	kt_ep_init(&c->cli, "client");
	kt_ep_init(&c->srv, "server");
	return c;
}

/* The next connection request goes to @c's server end. */
static void kt_listen_for(struct kt_ctx *ctx, struct kt_conn *c)
{
	spin_lock_irq(&ctx->listen.lock);
	ctx->listen.next = &c->srv;
	ctx->listen.events &= ~BIT(RDMA_CM_EVENT_CONNECT_REQUEST);
	spin_unlock_irq(&ctx->listen.lock);
}

/*
 * Client end, up to rdma_connect(): cm_id, address and route, PD, CQ,
 * QP, its buffer (and in the client role a receive for the server's
 * info). Returns the failed step in *@step.
 */
static int kt_cli_connect(struct kt_ctx *ctx, struct kt_conn *c,
			  const char **step)
{
	struct rdma_conn_param param = {
		.initiator_depth = KT_RD_DEPTH,
		.responder_resources = KT_RD_DEPTH,
	};
	struct rdma_cm_id *id;
	int rv;

	*step = "rdma_create_id";
	id = rdma_create_id(&init_net, kt_cm_handler, &c->cli, RDMA_PS_TCP,
			    IB_QPT_RC);
	if (IS_ERR(id))
		return PTR_ERR(id);
	c->cli.id = id;
	*step = "rdma_resolve_addr";
	rv = rdma_resolve_addr(id, (struct sockaddr *)&ctx->cli_sa,
			       (struct sockaddr *)&ctx->srv_sa, timeout_ms);
	if (!rv)
		rv = kt_wait_event(&c->cli, RDMA_CM_EVENT_ADDR_RESOLVED,
				   KT_CM_ERRORS);
	if (rv)
		return rv;
	*step = "rdma_resolve_route";
	rv = rdma_resolve_route(id, timeout_ms);
	if (!rv)
		rv = kt_wait_event(&c->cli, RDMA_CM_EVENT_ROUTE_RESOLVED,
				   KT_CM_ERRORS);
	if (rv)
		return rv;
	*step = "client device";
	if (!xiw_is_xiw_device(id->device))
		return -ENODEV;
	*step = "client QP";
	rv = kt_ep_res(&c->cli, NULL, 1);
	if (rv)
		return rv;
	*step = "client buffer";
	rv = kt_lbuf_map(c, id->device);
	if (rv)
		return rv;
	if (ctx->role == KT_CLIENT) {
		struct ib_sge sge = {
			.addr = c->ldma + KT_MSG_OFF,
			.length = sizeof(struct kt_info),
			.lkey = c->cli.pd->local_dma_lkey,
		};
		struct ib_recv_wr wr = {
			.wr_id = KT_WRID_INFO,
			.sg_list = &sge,
			.num_sge = 1,
		};
		const struct ib_recv_wr *bad;

		*step = "ib_post_recv";
		rv = ib_post_recv(id->qp, &wr, &bad);
		if (rv)
			return rv;
	}
	*step = "rdma_connect";
	return rdma_connect(id, &param);
}

/*
 * Server end: wait for the request kt_listen_for() routed to @c (without
 * a time limit in the server thread), then PD, CQ, QP, accept, and wait
 * until the connection is established.
 */
static int kt_srv_accept(struct kt_ctx *ctx, struct kt_conn *c,
			 const char **step)
{
	struct rdma_conn_param param = {
		.initiator_depth = KT_RD_DEPTH,
		.responder_resources = KT_RD_DEPTH,
	};
	int rv;

	*step = "connection request";
	if (ctx->role == KT_SERVER)
		rv = kt_wait_event_stoppable(&ctx->listen,
					     RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	else
		rv = kt_wait_event(&ctx->listen, RDMA_CM_EVENT_CONNECT_REQUEST,
				   0);
	if (rv)
		return rv;
	*step = "server device";
	if (!xiw_is_xiw_device(c->srv.id->device))
		return -ENODEV;
	*step = "server QP";
	rv = kt_ep_res(&c->srv, NULL, 1);
	if (rv)
		return rv;
	*step = "rdma_accept";
	rdma_lock_handler(c->srv.id);
	rv = rdma_accept(c->srv.id, &param);
	rdma_unlock_handler(c->srv.id);
	if (!rv)
		rv = kt_wait_event(&c->srv, RDMA_CM_EVENT_ESTABLISHED,
				   KT_CM_ERRORS);
	if (rv)
		return rv;
	c->srv.connected = true;
	return 0;
}

static int kt_cli_established(struct kt_conn *c, const char **step)
{
	int rv;

	*step = "client established";
	rv = kt_wait_event(&c->cli, RDMA_CM_EVENT_ESTABLISHED, KT_CM_ERRORS);
	if (rv)
		return rv;
	c->cli.connected = true;
	return 0;
}

/* Server role: the regions, then a Send telling the client where. */
static int kt_srv_send_info(struct kt_ctx *ctx, struct kt_conn *c)
{
	struct ib_send_wr wr = {
		.wr_id = KT_WRID_INFO,
		.opcode = IB_WR_SEND,
		.send_flags = IB_SEND_SIGNALED,
		.num_sge = 1,
	};
	const struct ib_send_wr *bad;
	struct kt_info *info;
	struct ib_sge sge;
	struct ib_wc wc;
	int i, rv;

	rv = kt_lbuf_map(c, c->srv.id->device);
	if (rv) {
		kt_fail(ctx, "server", "buffer: %d", rv);
		return rv;
	}
	rv = kt_regions_reg(ctx, c, "server");
	if (rv)
		return rv;
	info = c->lbuf + KT_MSG_OFF;
	sge.addr = c->ldma + KT_MSG_OFF;
	sge.length = sizeof(*info);
	sge.lkey = c->srv.pd->local_dma_lkey;
	wr.sg_list = &sge;
	info->magic = cpu_to_le32(KT_INFO_MAGIC);
	for (i = 0; i < KT_NTARGET; i++) {
		info->rkey[i] = cpu_to_le32(c->reg[i].mr->rkey);
		info->addr[i] = cpu_to_le64(c->reg[i].mr->iova);
	}
	kt_lbuf_dev(c);
	rv = ib_post_send(c->srv.id->qp, &wr, &bad);
	if (rv) {
		kt_fail(ctx, "server", "ib_post_send(info) %d", rv);
		return rv;
	}
	return kt_expect_wc(ctx, &c->srv, "server", KT_WRID_INFO, IB_WC_SEND,
			    IB_WC_SUCCESS, &wc);
}

/* Client role: where the server's regions are. */
static int kt_cli_recv_info(struct kt_ctx *ctx, struct kt_conn *c)
{
	struct kt_info *info = c->lbuf + KT_MSG_OFF;
	struct ib_wc wc;
	int i, rv;

	rv = kt_expect_wc(ctx, &c->cli, "register", KT_WRID_INFO, IB_WC_RECV,
			  IB_WC_SUCCESS, &wc);
	if (rv)
		return rv;
	kt_lbuf_cpu(c);
	if (wc.byte_len != sizeof(*info) ||
	    le32_to_cpu(info->magic) != KT_INFO_MAGIC) {
		kt_fail(ctx, "register", "the server's info: %u bytes %*ph",
			wc.byte_len, (int)min_t(u32, wc.byte_len, 16), info);
		return -EPROTO;
	}
	for (i = 0; i < KT_NTARGET; i++) {
		c->t[i].rkey = le32_to_cpu(info->rkey[i]);
		c->t[i].addr = le64_to_cpu(info->addr[i]);
	}
	return 0;
}

/*
 * A connection ready for the checks: connected, the server's regions
 * registered, @c->t[] addressing them. Failures are logged as those of
 * check "connect" or "register".
 */
static int kt_conn_up(struct kt_ctx *ctx, struct kt_conn *c)
{
	const char *step;
	int i, rv;

	if (ctx->role == KT_LOOPBACK)
		kt_listen_for(ctx, c);
	rv = kt_cli_connect(ctx, c, &step);
	if (!rv && ctx->role == KT_LOOPBACK)
		rv = kt_srv_accept(ctx, c, &step);
	if (!rv)
		rv = kt_cli_established(c, &step);
	if (rv) {
		kt_fail(ctx, "connect", "%s: %d", step, rv);
		return rv;
	}
	pr_info("connected %s %pISpc -> %s %pISpc\n",
		dev_name(&c->cli.id->device->dev),
		&c->cli.id->route.addr.src_addr,
		c->srv.id ? dev_name(&c->srv.id->device->dev) : "peer",
		&c->cli.id->route.addr.dst_addr);
	if (ctx->role == KT_CLIENT)
		return kt_cli_recv_info(ctx, c);

	rv = kt_regions_reg(ctx, c, "register");
	if (rv)
		return rv;
	for (i = 0; i < KT_NTARGET; i++) {
		c->t[i].rkey = c->reg[i].mr->rkey;
		c->t[i].addr = c->reg[i].mr->iova;
		c->t[i].r = &c->reg[i];
	}
	return 0;
}

/* Disconnect (if connected) and free everything of @c. */
static void kt_conn_down(struct kt_ctx *ctx, struct kt_conn *c)
{
	int i, rv;

	/* no request reaches @c from now on: c->srv.id is stable */
	spin_lock_irq(&ctx->listen.lock);
	if (ctx->listen.next == &c->srv)
		ctx->listen.next = NULL;
	spin_unlock_irq(&ctx->listen.lock);

	if (c->cli.connected) {
		rdma_disconnect(c->cli.id);
		rv = kt_wait_event(&c->cli, RDMA_CM_EVENT_DISCONNECTED, 0);
		if (!rv && c->srv.connected)
			rv = kt_wait_event(&c->srv, RDMA_CM_EVENT_DISCONNECTED,
					   0);
		if (!c->terminated) {
			if (rv)
				kt_fail(ctx, "disconnect",
					"no DISCONNECTED event on both ends (%d)",
					rv);
			else
				kt_pass(ctx, "disconnect");
		}
	}
	/* QPs first: nothing reaches the buffers once they are gone */
	kt_ep_destroy_qp(&c->cli);
	kt_ep_destroy_qp(&c->srv);
	if (c->lmapped)
		ib_dma_unmap_single(c->ldev, c->ldma, KT_LBUF_SIZE,
				    DMA_BIDIRECTIONAL);
	kfree(c->lbuf);
	if (c->srv.id)
		for (i = 0; i < KT_NTARGET; i++)
			kt_region_free(&c->srv, &c->reg[i]);
	kt_ep_free(&c->cli);
	kt_ep_free(&c->srv);
	kfree(c->shadow);
	kfree(c);
}

/* A connection for check @name, up; NULL (its failure logged) if not. */
static struct kt_conn *kt_conn_open(struct kt_ctx *ctx, const char *name)
{
	struct kt_conn *c = kt_conn_alloc();

	if (!c) {
		kt_fail(ctx, name, "no memory");
		return NULL;
	}
	if (kt_conn_up(ctx, c)) {
		kt_conn_down(ctx, c);
		return NULL;
	}
	return c;
}

static void kt_fill(void *buf, size_t len, u32 seed)
{
	u32 *p = buf;
	size_t i;

	for (i = 0; i < len / sizeof(*p); i++)
		p[i] = seed + i * 2654435761U;
}

/*
 * RDMA Write of @len bytes at lbuf + @off to the same offset of @t,
 * which then must hold them.
 */
static int kt_post_write(struct kt_conn *c, struct kt_target *t, u32 off,
			 u32 len, unsigned int send_flags)
{
	struct ib_sge sge = {
		.addr = c->ldma + off,
		.length = len,
		.lkey = c->cli.pd->local_dma_lkey,
	};
	struct ib_rdma_wr wr = {
		.wr = {
			.wr_id = KT_WRID_WRITE,
			.opcode = IB_WR_RDMA_WRITE,
			.sg_list = &sge,
			.num_sge = 1,
			.send_flags = send_flags,
		},
		.remote_addr = t->addr + off,
		.rkey = t->rkey,
	};
	const struct ib_send_wr *bad;
	int rv;

	kt_lbuf_dev(c);
	rv = ib_post_send(c->cli.id->qp, &wr.wr, &bad);
	if (!rv && t->shadow)
		memcpy(t->shadow + off, c->lbuf + off, len);
	return rv;
}

/*
 * What @t holds at @off (@len bytes): its memory in loopback, else an
 * RDMA Read of it (into lbuf). Failures are logged as check @name's.
 */
static int kt_read(struct kt_ctx *ctx, struct kt_conn *c, struct kt_target *t,
		   u32 off, u32 len, const char *name, const u8 **p)
{
	struct ib_sge sge = {
		.addr = c->ldma + KT_READ_OFF,
		.length = len,
		.lkey = c->cli.pd->local_dma_lkey,
	};
	struct ib_rdma_wr wr = {
		.wr = {
			.wr_id = KT_WRID_READ,
			.opcode = IB_WR_RDMA_READ,
			.sg_list = &sge,
			.num_sge = 1,
			.send_flags = IB_SEND_SIGNALED,
		},
		.remote_addr = t->addr + off,
		.rkey = t->rkey,
	};
	const struct ib_send_wr *bad;
	struct ib_wc wc;
	int rv;

	if (t->r) {
		ib_dma_sync_single_for_cpu(c->srv.id->device,
					   sg_dma_address(&t->r->sg),
					   KT_TBUF_SIZE, DMA_BIDIRECTIONAL);
		*p = t->r->buf + off;
		return 0;
	}
	if (len > KT_READ_MAX) {
		kt_fail(ctx, name, "RDMA Read of %u bytes: too long", len);
		return -EINVAL;
	}
	rv = ib_post_send(c->cli.id->qp, &wr.wr, &bad);
	if (rv) {
		kt_fail(ctx, name, "ib_post_send(RDMA Read) %d", rv);
		return rv;
	}
	rv = kt_expect_wc(ctx, &c->cli, name, KT_WRID_READ, IB_WC_RDMA_READ,
			  IB_WC_SUCCESS, &wc);
	if (rv)
		return rv;
	kt_lbuf_cpu(c);
	*p = c->lbuf + KT_READ_OFF;
	return 0;
}

/* RDMA Write of one page (unsignaled), then a Flush of that range. */
static int kt_write_flush(struct kt_ctx *ctx, struct kt_conn *c)
{
	struct kt_target *t = &c->t[KT_T_CRC];
	const char *name = "write_flush";
	struct ib_qp *qp = c->cli.id->qp;
	const u8 *got;
	struct ib_wc wc;
	int rv;

	kt_fill(c->lbuf, PAGE_SIZE, 0x5eed0001);
	rv = kt_post_write(c, t, 0, PAGE_SIZE, 0);
	if (rv) {
		kt_fail(ctx, name, "ib_post_send(RDMA Write) %d", rv);
		return rv;
	}
	rv = xiw_post_flush(qp, KT_WRID_FLUSH, t->rkey, t->addr, PAGE_SIZE,
			    IB_FLUSH_GLOBAL, IB_FLUSH_RANGE, IB_SEND_SIGNALED);
	if (rv) {
		kt_fail(ctx, name, "xiw_post_flush %d", rv);
		return rv;
	}
	rv = kt_expect_wc(ctx, &c->cli, name, KT_WRID_FLUSH, IB_WC_FLUSH,
			  IB_WC_SUCCESS, &wc);
	if (!rv)
		rv = kt_read(ctx, c, t, 0, PAGE_SIZE, name, &got);
	if (rv)
		return rv;
	if (memcmp(got, t->shadow, PAGE_SIZE)) {
		kt_fail(ctx, name,
			"the Write's bytes are not in place at the Flush completion");
		return -EIO;
	}
	kt_pass(ctx, name);
	return 0;
}

/*
 * Atomic Write of 8 bytes (in place at its completion: it has a
 * response), then a Write of another page and a Flush of the whole MR.
 */
static int kt_atomic_write_flush_mr(struct kt_ctx *ctx, struct kt_conn *c)
{
	static const u8 zero[8];
	struct kt_target *t = &c->t[KT_T_CRC];
	struct ib_qp *qp = c->cli.id->qp;
	u64 value = 0x0123456789abcdefULL;
	const u8 *got;
	struct ib_wc wc;
	int rv;

	rv = xiw_post_atomic_write(qp, KT_WRID_ATOMIC_WRITE, t->rkey,
				   t->addr + KT_AW_OFF, value,
				   IB_SEND_SIGNALED);
	if (rv) {
		kt_fail(ctx, "atomic_write", "xiw_post_atomic_write %d", rv);
		return rv;
	}
	memcpy(t->shadow + KT_AW_OFF, &value, sizeof(value));
	rv = kt_expect_wc(ctx, &c->cli, "atomic_write", KT_WRID_ATOMIC_WRITE,
			  IB_WC_ATOMIC_WRITE, IB_WC_SUCCESS, &wc);
	if (!rv)
		rv = kt_read(ctx, c, t, KT_AW_OFF - 8, 24, "atomic_write",
			     &got);
	if (rv)
		return rv;
	if (memcmp(got + 8, &value, sizeof(value))) {
		kt_fail(ctx, "atomic_write", "target bytes %8ph, expected %8ph",
			got + 8, &value);
		return -EIO;
	}
	if (memcmp(got, zero, 8) || memcmp(got + 16, zero, 8)) {
		kt_fail(ctx, "atomic_write",
			"bytes around the target changed: %24ph", got);
		return -EIO;
	}
	kt_pass(ctx, "atomic_write");

	kt_fill(c->lbuf + KT_PAGE2, PAGE_SIZE, 0x5eed0003);
	rv = kt_post_write(c, t, KT_PAGE2, PAGE_SIZE, 0);
	if (rv) {
		kt_fail(ctx, "flush_mr", "ib_post_send(RDMA Write) %d", rv);
		return rv;
	}
	rv = xiw_post_flush(qp, KT_WRID_FLUSH_MR, t->rkey, 0, 0,
			    IB_FLUSH_GLOBAL, IB_FLUSH_MR, IB_SEND_SIGNALED);
	if (rv) {
		kt_fail(ctx, "flush_mr", "xiw_post_flush(IB_FLUSH_MR) %d", rv);
		return rv;
	}
	rv = kt_expect_wc(ctx, &c->cli, "flush_mr", KT_WRID_FLUSH_MR,
			  IB_WC_FLUSH, IB_WC_SUCCESS, &wc);
	if (!rv)
		rv = kt_read(ctx, c, t, KT_AW_OFF, KT_VERIFY_LEN - KT_AW_OFF,
			     "flush_mr", &got);
	if (rv)
		return rv;
	if (memcmp(got, t->shadow + KT_AW_OFF, KT_VERIFY_LEN - KT_AW_OFF)) {
		kt_fail(ctx, "flush_mr",
			"the Write's (or Atomic Write's) bytes are not in place at the Flush completion");
		return -EIO;
	}
	kt_pass(ctx, "flush_mr");
	return 0;
}

/*
 * Verify of KT_VERIFY_LEN bytes of @t, whose digest is @expect (@len
 * bytes): once returning the peer's digest, once with the hash to match.
 */
static int kt_verify(struct kt_ctx *ctx, struct kt_conn *c,
		     struct kt_target *t, const u8 *expect, u8 len,
		     const char *name_digest, const char *name_match)
{
	u8 *got = c->lbuf + KT_MSG_OFF;
	struct ib_sge sge = {
		.addr = c->ldma + KT_MSG_OFF,
		.length = SHA256_DIGEST_SIZE,
		.lkey = c->cli.pd->local_dma_lkey,
	};
	struct ib_qp *qp = c->cli.id->qp;
	struct ib_wc wc;
	int rv;

	memset(got, 0xa5, SHA256_DIGEST_SIZE);
	kt_lbuf_dev(c);
	rv = xiw_post_verify(qp, KT_WRID_VERIFY, t->rkey, t->addr,
			     KT_VERIFY_LEN, NULL, 0, &sge, IB_SEND_SIGNALED);
	if (rv) {
		kt_fail(ctx, name_digest, "xiw_post_verify %d", rv);
		return rv;
	}
	rv = kt_expect_wc(ctx, &c->cli, name_digest, KT_WRID_VERIFY,
			  XIW_WC_VERIFY, IB_WC_SUCCESS, &wc);
	if (rv)
		return rv;
	if (wc.byte_len != len) {
		kt_fail(ctx, name_digest, "byte_len %u, expected %u",
			wc.byte_len, len);
		return -EIO;
	}
	kt_lbuf_cpu(c);
	if (memcmp(got, expect, len)) {
		kt_fail(ctx, name_digest, "digest %*phN, computed here %*phN",
			len, got, len, expect);
		return -EIO;
	}
	kt_pass(ctx, name_digest);

	rv = xiw_post_verify(qp, KT_WRID_VERIFY, t->rkey, t->addr,
			     KT_VERIFY_LEN, expect, len, NULL,
			     IB_SEND_SIGNALED);
	if (rv) {
		kt_fail(ctx, name_match, "xiw_post_verify %d", rv);
		return rv;
	}
	rv = kt_expect_wc(ctx, &c->cli, name_match, KT_WRID_VERIFY,
			  XIW_WC_VERIFY, IB_WC_SUCCESS, &wc);
	if (rv)
		return rv;
	kt_pass(ctx, name_match);
	return 0;
}

/* crc32c as xiw's Verify returns it: MPA's CRC, little endian */
static void kt_crc32c(const void *buf, size_t len, u8 *out)
{
	__le32 crc = cpu_to_le32(~crc32c(~0U, buf, len));

	memcpy(out, &crc, sizeof(crc));
}

/* API argument checks: nothing is posted, nothing completes. */
static int kt_bad_operands(struct kt_ctx *ctx, struct kt_conn *c)
{
	u8 hash[XIW_VERIFY_MAX_HASH + 1] = {};
	struct kt_target *t = &c->t[KT_T_CRC];
	struct ib_wc wc;
	int rv;

	rv = xiw_post_verify(c->cli.id->qp, KT_WRID_VERIFY, t->rkey, t->addr,
			     KT_VERIFY_LEN, hash, sizeof(hash), NULL,
			     IB_SEND_SIGNALED);
	if (rv != -EINVAL) {
		kt_fail(ctx, "bad_operands",
			"xiw_post_verify with a %zu-byte hash returned %d, expected %d",
			sizeof(hash), rv, -EINVAL);
		return -EIO;
	}
	rv = ib_poll_cq(c->cli.cq, 1, &wc);
	if (rv) {
		kt_fail(ctx, "bad_operands", "a refused WR completed (%d)", rv);
		return -EIO;
	}
	kt_pass(ctx, "bad_operands");
	return 0;
}

/* Wait until @qp is in the ERROR state. */
static int kt_wait_qp_err(struct ib_qp *qp, enum ib_qp_state *state)
{
	unsigned long end = jiffies + msecs_to_jiffies(timeout_ms);
	struct ib_qp_init_attr init;
	struct ib_qp_attr attr;
	int rv;

	for (;;) {
		rv = ib_query_qp(qp, &attr, IB_QP_STATE, &init);
		if (rv)
			return rv;
		*state = attr.qp_state;
		if (attr.qp_state == IB_QPS_ERR)
			return 0;
		if (time_after(jiffies, end))
			return -ETIMEDOUT;
		usleep_range(100, 500);
	}
}

/* Verify with a wrong hash: a Terminate, the QPs to ERROR. */
static int kt_verify_mismatch(struct kt_ctx *ctx, struct kt_conn *c,
			      const u8 *crc)
{
	struct kt_target *t = &c->t[KT_T_CRC];
	const char *name = "verify_mismatch";
	enum ib_qp_state state;
	u8 bad[4];
	struct ib_wc wc;
	int rv;

	memcpy(bad, crc, sizeof(bad));
	bad[0] ^= 1;
	c->terminated = true;
	rv = xiw_post_verify(c->cli.id->qp, KT_WRID_VERIFY, t->rkey, t->addr,
			     KT_VERIFY_LEN, bad, sizeof(bad), NULL,
			     IB_SEND_SIGNALED);
	if (rv) {
		kt_fail(ctx, name, "xiw_post_verify %d", rv);
		return rv;
	}
	rv = kt_expect_wc(ctx, &c->cli, name, KT_WRID_VERIFY, XIW_WC_VERIFY,
			  IB_WC_REM_OP_ERR, &wc);
	if (rv)
		return rv;
	if (wc.vendor_err != KT_VENDOR_ERR_VERIFY) {
		kt_fail(ctx, name, "vendor_err %#x, expected %#x",
			wc.vendor_err, KT_VENDOR_ERR_VERIFY);
		return -EIO;
	}
	rv = kt_wait_qp_err(c->cli.id->qp, &state);
	if (rv) {
		kt_fail(ctx, name, "requester QP in state %d, not ERROR (%d)",
			state, rv);
		return rv;
	}
	rv = c->srv.id ? kt_wait_qp_err(c->srv.id->qp, &state) : 0;
	if (rv) {
		kt_fail(ctx, name, "responder QP in state %d, not ERROR (%d)",
			state, rv);
		return rv;
	}
	kt_pass(ctx, name);
	return 0;
}

/* After the Terminate: a new WR completes flushed (its target untouched). */
static int kt_after_terminate(struct kt_ctx *ctx, struct kt_conn *c)
{
	struct kt_target *t = &c->t[KT_T_CRC];
	const char *name = "flushed_after_terminate";
	const u8 *got;
	struct ib_wc wc;
	int rv;

	rv = xiw_post_atomic_write(c->cli.id->qp, KT_WRID_ATOMIC_WRITE,
				   t->rkey, t->addr + KT_AW_OFF, ~0ULL,
				   IB_SEND_SIGNALED);
	if (rv) {
		kt_fail(ctx, name, "xiw_post_atomic_write %d", rv);
		return rv;
	}
	rv = kt_expect_wc(ctx, &c->cli, name, KT_WRID_ATOMIC_WRITE,
			  IB_WC_ATOMIC_WRITE, IB_WC_WR_FLUSH_ERR, &wc);
	if (rv)
		return rv;
	/* only loopback can look: the QP cannot read any more */
	if (t->r && !kt_read(ctx, c, t, KT_AW_OFF, 8, name, &got) &&
	    memcmp(got, t->shadow + KT_AW_OFF, 8)) {
		kt_fail(ctx, name, "a flushed Atomic Write changed the target");
		return -EIO;
	}
	kt_pass(ctx, name);
	return 0;
}

/*
 * The first connection: every operation that succeeds, then a Verify
 * mismatch, which ends it.
 */
static void kt_run_ops(struct kt_ctx *ctx)
{
	u8 crc[4], sha[SHA256_DIGEST_SIZE];
	struct kt_target *t;
	struct kt_conn *c;
	const u8 *got;

	c = kt_conn_open(ctx, "connect");
	if (!c)
		return;
	kt_pass(ctx, "connect");
	kt_pass(ctx, "register");

	if (kt_write_flush(ctx, c) || kt_atomic_write_flush_mr(ctx, c))
		goto out;

	/* Verify: over the Writes' and the Atomic Write's bytes */
	t = &c->t[KT_T_CRC];
	kt_crc32c(t->shadow, KT_VERIFY_LEN, crc);
	/* loopback: the target's memory is what the shadow says */
	if (t->r && !kt_read(ctx, c, t, 0, KT_VERIFY_LEN, "verify_crc32c_digest",
			     &got) && memcmp(got, t->shadow, KT_VERIFY_LEN)) {
		kt_fail(ctx, "verify_crc32c_digest",
			"target memory differs from what was written");
		goto out;
	}
	if (kt_verify(ctx, c, t, crc, sizeof(crc), "verify_crc32c_digest",
		      "verify_crc32c_match"))
		goto out;
	/* sha256: the region written (unsignaled) just before */
	t = &c->t[KT_T_SHA];
	kt_fill(c->lbuf, KT_VERIFY_LEN, 0x5eed0002);
	if (kt_post_write(c, t, 0, KT_VERIFY_LEN, 0)) {
		kt_fail(ctx, "verify_sha256_digest", "ib_post_send(RDMA Write)");
		goto out;
	}
	sha256(t->shadow, KT_VERIFY_LEN, sha);
	if (kt_verify(ctx, c, t, sha, sizeof(sha), "verify_sha256_digest",
		      "verify_sha256_match"))
		goto out;
	if (kt_bad_operands(ctx, c))
		goto out;
	if (!kt_verify_mismatch(ctx, c, crc))
		kt_after_terminate(ctx, c);
out:
	kt_conn_down(ctx, c);
}

/*
 * A commit log in push mode: per record an RDMA Write and a Flush of its
 * range, both unsignaled, then the Atomic Write of the tail pointer,
 * signaled. At the tail's completion the record must be in place (the
 * responder runs the Flush before the Atomic Write). The connection then
 * closes gracefully.
 */
static void kt_run_commit(struct kt_ctx *ctx)
{
	const char *name = "commit_chain";
	struct kt_target *t;
	struct kt_conn *c;
	const u8 *got;
	struct ib_wc wc;
	u64 tail;
	u32 off;
	int i, rv;

	c = kt_conn_open(ctx, name);
	if (!c)
		return;
	t = &c->t[KT_T_CRC];
	for (i = 0; i < KT_REC_NUM; i++) {
		off = KT_PAGE2 + i * KT_REC_LEN;
		tail = off + KT_REC_LEN;
		kt_fill(c->lbuf + off, KT_REC_LEN, 0xc0de0000 + i);
		rv = kt_post_write(c, t, off, KT_REC_LEN, 0);
		if (!rv)
			rv = xiw_post_flush(c->cli.id->qp, KT_WRID_FLUSH,
					    t->rkey, t->addr + off, KT_REC_LEN,
					    IB_FLUSH_GLOBAL, IB_FLUSH_RANGE, 0);
		if (!rv)
			rv = xiw_post_atomic_write(c->cli.id->qp, KT_WRID_TAIL,
						   t->rkey, t->addr, tail,
						   IB_SEND_SIGNALED);
		if (rv) {
			kt_fail(ctx, name, "record %d: post %d", i, rv);
			goto out;
		}
		memcpy(t->shadow, &tail, sizeof(tail));
		if (kt_expect_wc(ctx, &c->cli, name, KT_WRID_TAIL,
				 IB_WC_ATOMIC_WRITE, IB_WC_SUCCESS, &wc))
			goto out;
		if (kt_read(ctx, c, t, 0, sizeof(tail), name, &got))
			goto out;
		if (memcmp(got, &tail, sizeof(tail))) {
			kt_fail(ctx, name, "record %d: tail %8ph, expected %llu",
				i, got, tail);
			goto out;
		}
		if (kt_read(ctx, c, t, off, KT_REC_LEN, name, &got))
			goto out;
		if (memcmp(got, t->shadow + off, KT_REC_LEN)) {
			kt_fail(ctx, name, "record %d not in place", i);
			goto out;
		}
	}
	kt_pass(ctx, name);
out:
	kt_conn_down(ctx, c);
}

/* A third connection: Flush of an MR without the flush right. */
static void kt_run_access(struct kt_ctx *ctx)
{
	const char *name = "flush_no_right";
	enum ib_qp_state state;
	struct kt_target *t;
	struct kt_conn *c;
	struct ib_wc wc;
	int rv;

	c = kt_conn_open(ctx, name);
	if (!c)
		return;
	t = &c->t[KT_T_NOFLUSH];
	c->terminated = true;
	rv = xiw_post_flush(c->cli.id->qp, KT_WRID_FLUSH, t->rkey, t->addr,
			    PAGE_SIZE, IB_FLUSH_GLOBAL, IB_FLUSH_RANGE,
			    IB_SEND_SIGNALED);
	if (rv) {
		kt_fail(ctx, name, "xiw_post_flush %d", rv);
		goto out;
	}
	if (kt_expect_wc(ctx, &c->cli, name, KT_WRID_FLUSH, IB_WC_FLUSH,
			 IB_WC_REM_ACCESS_ERR, &wc))
		goto out;
	/* RDMAP (layer 0), remote protection error (type 1) */
	if ((wc.vendor_err & 0xff00) != 0x0100) {
		kt_fail(ctx, name, "vendor_err %#x, expected 0x01xx",
			wc.vendor_err);
		goto out;
	}
	rv = kt_wait_qp_err(c->cli.id->qp, &state);
	if (rv) {
		kt_fail(ctx, name, "requester QP in state %d, not ERROR (%d)",
			state, rv);
		goto out;
	}
	pr_info("%s: vendor_err %#x\n", name, wc.vendor_err);
	kt_pass(ctx, name);
out:
	kt_conn_down(ctx, c);
}

/*
 * A completion means the buffer is free: once a Write completed, writing
 * over its source changes nothing the peer receives, even when TCP still
 * had to send or resend those bytes (zero-copy TX, a delaying or lossy
 * path set up by the test).
 */
static void kt_run_zc(struct kt_ctx *ctx)
{
	const char *name = "zc_reuse";
	const u32 len = KT_READ_MAX;
	struct kt_target *t;
	struct kt_conn *c;
	struct ib_wc wc;
	const u8 *got;
	u32 i, j, ee;

	c = kt_conn_open(ctx, name);
	if (!c)
		return;
	t = &c->t[KT_T_CRC];
	for (i = 0; i < zc_rounds; i++) {
		kt_fill(c->lbuf, len, 0x2c000000 + i);
		if (kt_post_write(c, t, 0, len, IB_SEND_SIGNALED)) {
			kt_fail(ctx, name, "round %u: ib_post_send(RDMA Write)", i);
			goto out;
		}
		if (kt_expect_wc(ctx, &c->cli, name, KT_WRID_WRITE,
				 IB_WC_RDMA_WRITE, IB_WC_SUCCESS, &wc))
			goto out;
		/* the buffer is ours again: its old bytes are gone */
		memset(c->lbuf, 0xee, len);
		kt_lbuf_dev(c);
		if (xiw_post_flush(c->cli.id->qp, KT_WRID_FLUSH, t->rkey,
				   t->addr, len, IB_FLUSH_GLOBAL, IB_FLUSH_RANGE,
				   IB_SEND_SIGNALED)) {
			kt_fail(ctx, name, "round %u: xiw_post_flush", i);
			goto out;
		}
		if (kt_expect_wc(ctx, &c->cli, name, KT_WRID_FLUSH, IB_WC_FLUSH,
				 IB_WC_SUCCESS, &wc) ||
		    kt_read(ctx, c, t, 0, len, name, &got))
			goto out;
		if (!memcmp(got, t->shadow, len))
			continue;
		for (j = 0, ee = 0; j < len; j++)
			ee += got[j] != t->shadow[j] && got[j] == 0xee;
		kt_fail(ctx, name,
			"round %u: the target differs from the Write's bytes, %u bytes of them the overwrite after its completion",
			i, ee);
		goto out;
	}
	pr_info("%s: %u rounds of %u bytes\n", name, zc_rounds, len);
	kt_pass(ctx, name);
out:
	kt_conn_down(ctx, c);
}

/*
 * atomic_post: WRs posted where the poster may not sleep (blk-mq's
 * queue_rq in its RCU section, a bio's completion in softirq). xiw sends
 * the short ones from the post itself and leaves a longer one, and what
 * is behind it, to its TX work. Round 1, in one section with bottom
 * halves off: a Write of KT_POST_SHORT bytes, one of KT_READ_MAX (three
 * pages, longer than xiw sends from a post), another short one behind it
 * and a Flush of the range. Round 2, another section: a short Write, an
 * Atomic Write and a Flush, all short. Round 3: two Writes of a page
 * (a kernel consumer's one-page messages, which xiw copies into its
 * batch rather than lend) and a Flush. At each Flush's completion every
 * WR before it completed, in order, with success, and the target holds
 * every byte. The test script counts the FPDUs sent from posts
 * (tx_fpdus_from_post).
 */
#define KT_POST_SHORT	512

static int kt_post_round(struct kt_ctx *ctx, struct kt_conn *c,
			 struct kt_target *t, const u32 *off, const u32 *len,
			 int n, u64 aw, const char *name)
{
	struct ib_wc wc;
	int i, rv = 0;
	u32 end = 0;

	for (i = 0; i < n; i++) {
		kt_fill(c->lbuf + off[i], len[i], 0x70570000 + off[i] + len[i]);
		end = max(end, off[i] + len[i]);
	}
	local_bh_disable();
	for (i = 0; i < n && !rv; i++)
		rv = kt_post_write(c, t, off[i], len[i], IB_SEND_SIGNALED);
	if (!rv && aw)
		rv = xiw_post_atomic_write(c->cli.id->qp, KT_WRID_ATOMIC_WRITE,
					   t->rkey, t->addr + KT_AW_OFF, aw,
					   IB_SEND_SIGNALED);
	if (!rv)
		rv = xiw_post_flush(c->cli.id->qp, KT_WRID_FLUSH, t->rkey,
				    t->addr, end, IB_FLUSH_GLOBAL,
				    IB_FLUSH_RANGE, IB_SEND_SIGNALED);
	local_bh_enable();
	if (rv) {
		kt_fail(ctx, name, "post with bottom halves off: %d", rv);
		return rv;
	}
	if (aw)
		memcpy(t->shadow + KT_AW_OFF, &aw, sizeof(aw));
	for (i = 0; i < n; i++)
		if (kt_expect_wc(ctx, &c->cli, name, KT_WRID_WRITE,
				 IB_WC_RDMA_WRITE, IB_WC_SUCCESS, &wc))
			return -EIO;
	if (aw && kt_expect_wc(ctx, &c->cli, name, KT_WRID_ATOMIC_WRITE,
			       IB_WC_ATOMIC_WRITE, IB_WC_SUCCESS, &wc))
		return -EIO;
	return kt_expect_wc(ctx, &c->cli, name, KT_WRID_FLUSH, IB_WC_FLUSH,
			    IB_WC_SUCCESS, &wc);
}

static void kt_run_post(struct kt_ctx *ctx)
{
	const char *name = "atomic_post";
	const u32 off1[] = { 0, 1024, 1024 + KT_READ_MAX };
	const u32 len1[] = { KT_POST_SHORT, KT_READ_MAX, 2 * KT_POST_SHORT };
	const u32 off2[] = { 1024 + KT_READ_MAX + 3 * KT_POST_SHORT };
	const u32 len2[] = { KT_POST_SHORT };
	const u32 off3[] = { 0, PAGE_SIZE };
	const u32 len3[] = { PAGE_SIZE, PAGE_SIZE };
	const u32 end = KT_TBUF_SIZE;
	struct kt_target *t;
	struct kt_conn *c;
	const u8 *got;
	u32 at, n;

	BUILD_BUG_ON(1024 + KT_READ_MAX + 4 * KT_POST_SHORT > KT_TBUF_SIZE);
	c = kt_conn_open(ctx, name);
	if (!c)
		return;
	t = &c->t[KT_T_CRC];
	if (kt_post_round(ctx, c, t, off1, len1, ARRAY_SIZE(off1), 0, name) ||
	    kt_post_round(ctx, c, t, off2, len2, ARRAY_SIZE(off2),
			  0x706f737400000001ULL, name) ||
	    kt_post_round(ctx, c, t, off3, len3, ARRAY_SIZE(off3), 0, name))
		goto out;
	for (at = 0; at < end; at += n) {
		n = min_t(u32, end - at, KT_READ_MAX);
		if (kt_read(ctx, c, t, at, n, name, &got))
			goto out;
		if (memcmp(got, t->shadow + at, n)) {
			kt_fail(ctx, name, "target bytes %u..%u differ", at,
				at + n);
			goto out;
		}
	}
	kt_pass(ctx, name);
out:
	kt_conn_down(ctx, c);
}

/*
 * The server role's thread: one connection after the other until
 * kthread_stop(). The next connection's end is ready (kt_listen_for())
 * as soon as the current one is established, so a client that
 * reconnects at once is not refused.
 */
static int kt_server_thread(void *arg)
{
	struct kt_ctx *ctx = arg;
	struct kt_conn *c, *next;
	const char *step;
	int rv;

	next = kt_conn_alloc();
	if (next)
		kt_listen_for(ctx, next);
	while (next && !kthread_should_stop()) {
		c = next;
		next = NULL;
		rv = kt_srv_accept(ctx, c, &step);
		if (rv == -EINTR) {
			kt_conn_down(ctx, c);
			break;
		}
		if (!rv) {
			next = kt_conn_alloc();
			if (next)
				kt_listen_for(ctx, next);
			else
				kt_fail(ctx, "server", "no memory");
		} else {
			kt_fail(ctx, "server", "%s: %d", step, rv);
			/* the same end for the next request */
			kt_conn_down(ctx, c);
			next = kt_conn_alloc();
			if (next)
				kt_listen_for(ctx, next);
			continue;
		}
		ctx->served++;
		pr_info("server: connection %d from %pISpc\n", ctx->served,
			&c->srv.id->route.addr.dst_addr);
		if (!kt_srv_send_info(ctx, c))
			kt_wait_event_stoppable(&c->srv,
						RDMA_CM_EVENT_DISCONNECTED,
						KT_CM_ERRORS);
		kt_conn_down(ctx, c);
	}
	if (next)
		kt_conn_down(ctx, next);
	/* kthread_stop() collects the exit code: wait for it */
	while (!kthread_should_stop()) {
		set_current_state(TASK_INTERRUPTIBLE);
		if (!kthread_should_stop())
			schedule();
		__set_current_state(TASK_RUNNING);
	}
	return 0;
}

static int kt_parse(const char *addr, struct sockaddr_storage *ss)
{
	char p[8];

	snprintf(p, sizeof(p), "%u", port);
	return inet_pton_with_scope(&init_net, AF_UNSPEC, addr, p, ss);
}

static int kt_listen(struct kt_ctx *ctx)
{
	struct rdma_cm_id *id;
	int rv;

	id = rdma_create_id(&init_net, kt_cm_handler, &ctx->listen,
			    RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(id))
		return PTR_ERR(id);
	ctx->listen.id = id;
	rv = rdma_bind_addr(id, (struct sockaddr *)&ctx->srv_sa);
	if (rv)
		return rv;
	if (!id->device || !xiw_is_xiw_device(id->device)) {
		pr_err("%pISc is not the address of an xiw device\n",
		       &ctx->srv_sa);
		return -ENODEV;
	}
	return rdma_listen(id, 4);
}

static void kt_ctx_free(struct kt_ctx *ctx)
{
	if (ctx->listen.id)
		rdma_destroy_id(ctx->listen.id);
	kfree(ctx);
}

/*
 * Role idle: an rdma_cm id bound to the client address, its PD, CQ and QP
 * (rdma_create_qp() leaves it in INIT), nothing else.
 */
static int kt_idle_setup(struct kt_ctx *ctx)
{
	struct kt_ep *ep = &ctx->listen;
	struct rdma_cm_id *id;
	int rv;

	ep->name = "idle";
	id = rdma_create_id(&init_net, kt_cm_handler, ep, RDMA_PS_TCP,
			    IB_QPT_RC);
	if (IS_ERR(id))
		return PTR_ERR(id);
	ep->id = id;
	rv = rdma_bind_addr(id, (struct sockaddr *)&ctx->cli_sa);
	if (rv)
		return rv;
	if (!id->device || !xiw_is_xiw_device(id->device)) {
		pr_err("%pISc is not the address of an xiw device\n",
		       &ctx->cli_sa);
		return -ENODEV;
	}
	rv = kt_ep_res(ep, NULL, 1);
	if (rv)
		return rv;
	idle_qpn = id->qp->qp_num;
	pr_info("idle: QP %u on %s\n", idle_qpn, dev_name(&id->device->dev));
	return 0;
}

/* Role idle at rmmod: the QP is still in INIT, as init left it. */
static void kt_idle_check(struct kt_ctx *ctx)
{
	struct ib_qp_init_attr init = {};
	struct ib_qp_attr attr = {};
	int rv;

	rv = ib_query_qp(ctx->listen.id->qp, &attr, IB_QP_STATE, &init);
	if (rv)
		kt_fail(ctx, "idle_untouched", "query_qp: %d", rv);
	else if (attr.qp_state != IB_QPS_INIT)
		kt_fail(ctx, "idle_untouched", "QP %u state %d, not INIT",
			idle_qpn, attr.qp_state);
	else
		kt_pass(ctx, "idle_untouched");
}

static void kt_idle_free(struct kt_ctx *ctx)
{
	kt_ep_destroy_qp(&ctx->listen);
	kt_ep_free(&ctx->listen);
	kfree(ctx);
}

/*
 * Role fence: the kernel side of kapi_invfence. One PD for every
 * connection (as nvme-rdma shares one across its queues), a region of
 * KT_FENCE_LEN bytes of KT_FENCE_FILL fast-registered through the first
 * connection's QP, receives posted on each connection. A raw peer reads
 * or writes the region; a receive that reports the peer invalidated its
 * STag makes the region the consumer's again, which reuses it at once
 * (KT_FENCE_MARK over all of it). Whatever the peer gets or places after
 * that is what the invalidation failed to fence.
 */
#define KT_FENCE_LEN	SZ_1M
#define KT_FENCE_FILL	0xa5
#define KT_FENCE_MARK	0xee
#define KT_FENCE_CONNS	2
#define KT_FENCE_RECVS	4		/* receives posted on a connection */
#define KT_FENCE_RLEN	64		/* bytes of each */

/*
 * What xiw_target tells a peer in its accept private data (big endian,
 * selftests/progs/target_info.h), so that xiw_badpeer can connect. The
 * two 4 KiB regions it names are not offered here (STag 0 is never
 * valid): the peer addresses the fence region, fence_key.
 */
#define KT_PEER_MAGIC	0x58495754	/* "XIWT" */
#define KT_PEER_REGION	4096
struct kt_peer_info {
	__be32 magic;
	__be32 conn_id;
	__be64 rw_addr;
	__be32 rw_stag;
	__be32 rw_len;
	__be64 ro_addr;
	__be32 ro_stag;
	__be32 ro_len;
} __packed;

struct kt_fence_conn {
	struct kt_ep ep;		/* ep.pd is NULL: kt_fence.pd */
	int num;			/* 1, 2, ... in accept order */
	void *rbuf;			/* KT_FENCE_RECVS receive buffers */
	u64 rdma;
	bool rmapped;
	bool closed;			/* its end was logged */
};

struct kt_fence {
	struct kt_ctx *ctx;
	struct ib_pd *pd;		/* of every connection */
	struct kt_fence_conn conn[KT_FENCE_CONNS];
	int nconn;			/* accepted */
	bool refuse;			/* after a failed accept */
	struct kt_region reg;		/* registered through conn[0] */
};

static struct kt_fence *kt_fence;
static struct task_struct *kt_fence_task;

/* The next connection request goes to the next free connection end. */
static void kt_fence_listen_for(struct kt_fence *f)
{
	struct kt_ep *l = &f->ctx->listen;

	spin_lock_irq(&l->lock);
	l->next = f->nconn < KT_FENCE_CONNS && !f->refuse ?
		  &f->conn[f->nconn].ep : NULL;
	l->events &= ~BIT(RDMA_CM_EVENT_CONNECT_REQUEST);
	spin_unlock_irq(&l->lock);
}

/*
 * The connection end a request was routed to, not accepted yet, or NULL
 * (a request refused for want of one woke the thread for nothing).
 */
static struct kt_fence_conn *kt_fence_request(struct kt_fence *f)
{
	struct kt_ep *l = &f->ctx->listen;
	struct kt_fence_conn *c = NULL;

	spin_lock_irq(&l->lock);
	l->events &= ~BIT(RDMA_CM_EVENT_CONNECT_REQUEST);
	if (l->next && l->next->id)
		c = container_of(l->next, struct kt_fence_conn, ep);
	spin_unlock_irq(&l->lock);
	return c;
}

/* Receive buffers of @c, all posted. */
static int kt_fence_recvs(struct kt_fence *f, struct kt_fence_conn *c)
{
	struct ib_device *dev = c->ep.id->device;
	const struct ib_recv_wr *bad;
	int i, rv;

	c->rbuf = kzalloc(KT_FENCE_RECVS * KT_FENCE_RLEN, GFP_KERNEL);
	if (!c->rbuf)
		return -ENOMEM;
	c->rdma = ib_dma_map_single(dev, c->rbuf,
				    KT_FENCE_RECVS * KT_FENCE_RLEN,
				    DMA_FROM_DEVICE);
	if (ib_dma_mapping_error(dev, c->rdma))
		return -ENOMEM;
	c->rmapped = true;
	for (i = 0; i < KT_FENCE_RECVS; i++) {
		struct ib_sge sge = {
			.addr = c->rdma + i * KT_FENCE_RLEN,
			.length = KT_FENCE_RLEN,
			.lkey = f->pd->local_dma_lkey,
		};
		struct ib_recv_wr wr = {
			.wr_id = KT_WRID_FENCE_RECV,
			.sg_list = &sge,
			.num_sge = 1,
		};

		rv = ib_post_recv(c->ep.id->qp, &wr, &bad);
		if (rv)
			return rv;
	}
	return 0;
}

/*
 * Accept the request routed to the next connection end: QP in the shared
 * PD (allocated with the first), receives, accept, established; the
 * first connection also registers the region and publishes it. Returns
 * the failed step in *@step.
 */
static int kt_fence_accept(struct kt_fence *f, struct kt_fence_conn *c,
			   const char **step)
{
	struct kt_peer_info info = {
		.magic = cpu_to_be32(KT_PEER_MAGIC),
		.conn_id = cpu_to_be32(c->num),
		.rw_len = cpu_to_be32(KT_PEER_REGION),
		.ro_len = cpu_to_be32(KT_PEER_REGION),
	};
	struct rdma_conn_param param = {
		.initiator_depth = KT_RD_DEPTH,
		.responder_resources = KT_RD_DEPTH,
		.private_data = &info,
		.private_data_len = sizeof(info),
	};
	struct ib_device *dev = c->ep.id->device;
	int rv;

	*step = "device";
	if (!xiw_is_xiw_device(dev) || (f->pd && f->pd->device != dev))
		return -ENODEV;
	if (!f->pd) {
		*step = "ib_alloc_pd";
		f->pd = ib_alloc_pd(dev, 0);
		if (IS_ERR(f->pd)) {
			rv = PTR_ERR(f->pd);
			f->pd = NULL;
			return rv;
		}
	}
	*step = "QP";
	rv = kt_ep_res(&c->ep, f->pd, KT_FENCE_RECVS);
	if (rv)
		return rv;
	*step = "receives";
	rv = kt_fence_recvs(f, c);
	if (rv)
		return rv;
	*step = "rdma_accept";
	rdma_lock_handler(c->ep.id);
	rv = rdma_accept(c->ep.id, &param);
	rdma_unlock_handler(c->ep.id);
	if (!rv)
		rv = kt_wait_event(&c->ep, RDMA_CM_EVENT_ESTABLISHED,
				   KT_CM_ERRORS);
	if (rv)
		return rv;
	c->ep.connected = true;
	pr_info("fence: connection %d from %pISpc\n", c->num,
		&c->ep.id->route.addr.dst_addr);
	if (f->reg.mr)
		return 0;
	*step = "region";
	rv = kt_region_reg(f->ctx, &c->ep, &f->reg, KT_FENCE_LEN,
			   KT_FENCE_FILL, IB_ACCESS_LOCAL_WRITE |
			   IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ,
			   "fence");
	if (rv)
		return rv;
	snprintf(kt_fence_key, sizeof(kt_fence_key), "%#x:%#llx",
		 f->reg.mr->rkey, f->reg.mr->iova);
	pr_info("fence: registered stag=%#x addr=%#llx len=%u\n",
		f->reg.mr->rkey, f->reg.mr->iova, KT_FENCE_LEN);
	return 0;
}

/* The region's bytes as the consumer sees them (the device's writes too). */
static void kt_fence_cpu(struct kt_fence *f)
{
	ib_dma_sync_single_for_cpu(f->pd->device, sg_dma_address(&f->reg.sg),
				   KT_FENCE_LEN, DMA_BIDIRECTIONAL);
}

/* Log the region's bytes by value, @when. */
static void kt_fence_count(struct kt_fence *f, const char *when)
{
	size_t a5 = 0, ee = 0, other = 0;
	const u8 *p = f->reg.buf;
	u32 i;

	kt_fence_cpu(f);
	for (i = 0; i < KT_FENCE_LEN; i++) {
		if (p[i] == KT_FENCE_FILL)
			a5++;
		else if (p[i] == KT_FENCE_MARK)
			ee++;
		else
			other++;
	}
	pr_info("fence: region %s a5=%zu ee=%zu other=%zu\n", when, a5, ee,
		other);
}

/* The region is the consumer's again (@why): reuse it at once. */
static void kt_fence_mark(struct kt_fence *f, struct kt_fence_conn *c,
			  const char *why)
{
	kt_fence_count(f, "invalidated");
	memset(f->reg.buf, KT_FENCE_MARK, KT_FENCE_LEN);
	ib_dma_sync_single_for_device(f->pd->device, sg_dma_address(&f->reg.sg),
				      KT_FENCE_LEN, DMA_BIDIRECTIONAL);
	pr_info("fence: MARKED conn=%d after=%s\n", c->num, why);
}

/*
 * A completion of @c: a receive that says the peer invalidated the
 * region's STag, or the completion of the local invalidation, gives the
 * region back.
 */
static void kt_fence_wc(struct kt_fence *f, struct kt_fence_conn *c,
			const struct ib_wc *wc)
{
	bool inv = wc->wc_flags & IB_WC_WITH_INVALIDATE;

	if (wc->wr_id == KT_WRID_FENCE_LINV) {
		pr_info("fence: LOCAL_INV conn=%d status=%d\n", c->num,
			wc->status);
		if (wc->status == IB_WC_SUCCESS)
			kt_fence_mark(f, c, "LOCAL_INV");
		else
			kt_fail(f->ctx, "fence", "IB_WR_LOCAL_INV: %s",
				ib_wc_status_msg(wc->status));
		return;
	}
	if (wc->wr_id != KT_WRID_FENCE_RECV) {
		pr_info("fence: conn=%d wr_id %llu status %d\n", c->num,
			wc->wr_id, wc->status);
		return;
	}
	pr_info("fence: RECV conn=%d status=%d len=%u inv=%#x\n", c->num,
		wc->status, wc->byte_len, inv ? wc->ex.invalidate_rkey : 0);
	if (wc->status == IB_WC_SUCCESS && inv && f->reg.mr &&
	    wc->ex.invalidate_rkey == f->reg.mr->rkey)
		kt_fence_mark(f, c, "INVALIDATED");
}

/* fence_local_inv was written: IB_WR_LOCAL_INV of the region on @c. */
static void kt_fence_local_inv(struct kt_fence *f, struct kt_fence_conn *c)
{
	struct ib_send_wr wr = {
		.wr_id = KT_WRID_FENCE_LINV,
		.opcode = IB_WR_LOCAL_INV,
		.send_flags = IB_SEND_SIGNALED,
	};
	const struct ib_send_wr *bad;
	int rv;

	if (!f->reg.mr || !c->ep.has_qp) {
		kt_fail(f->ctx, "fence", "local invalidation: no region or QP");
		return;
	}
	wr.ex.invalidate_rkey = f->reg.mr->rkey;
	rv = ib_post_send(c->ep.id->qp, &wr, &bad);
	if (rv)
		kt_fail(f->ctx, "fence", "ib_post_send(IB_WR_LOCAL_INV) %d", rv);
	else
		pr_info("fence: LOCAL_INV posted conn=%d\n", c->num);
}

static bool kt_fence_woken(struct kt_fence *f)
{
	return (kt_events(&f->ctx->listen) &
		BIT(RDMA_CM_EVENT_CONNECT_REQUEST)) || kthread_should_stop();
}

/*
 * The role's thread until kthread_stop(): accepts connections, polls
 * their CQs, logs their end. A CM event wakes it; completions are polled
 * every few milliseconds.
 */
static int kt_fence_thread(void *arg)
{
	struct kt_fence *f = arg;
	struct kt_ep *l = &f->ctx->listen;
	struct kt_fence_conn *c;
	const char *step;
	struct ib_wc wc;
	int i, rv;

	kt_fence_listen_for(f);
	while (!kthread_should_stop()) {
		wait_event_interruptible_timeout(l->wq, kt_fence_woken(f),
						 msecs_to_jiffies(2));
		c = kt_fence_request(f);
		if (c) {
			rv = kt_fence_accept(f, c, &step);
			if (rv) {
				kt_fail(f->ctx, "fence", "connection %d: %s: %d",
					c->num, step, rv);
				/* freed at the end: accept no more */
				f->refuse = true;
			} else {
				f->nconn++;
			}
			kt_fence_listen_for(f);
		}
		i = READ_ONCE(kt_fence_linv);
		if (i) {
			WRITE_ONCE(kt_fence_linv, 0);
			kt_fence_local_inv(f, &f->conn[i - 1]);
		}
		for (i = 0; i < f->nconn; i++) {
			c = &f->conn[i];
			if (!c->ep.has_qp)
				continue;
			while (ib_poll_cq(c->ep.cq, 1, &wc) > 0)
				kt_fence_wc(f, c, &wc);
			if (!c->closed && (kt_events(&c->ep) &
					   BIT(RDMA_CM_EVENT_DISCONNECTED))) {
				c->closed = true;
				pr_info("fence: connection %d closed\n", c->num);
			}
		}
	}
	return 0;
}

/*
 * After the thread: the connections' QPs first (nothing reaches the
 * region once they are gone), then what the region holds, then the rest.
 */
static void kt_fence_free(struct kt_fence *f)
{
	struct kt_fence_conn *c;
	int i;

	if (f->ctx->listen.id)
		rdma_destroy_id(f->ctx->listen.id);
	f->ctx->listen.id = NULL;
	for (i = 0; i < KT_FENCE_CONNS; i++) {
		c = &f->conn[i];
		if (c->ep.connected)
			rdma_disconnect(c->ep.id);
		kt_ep_destroy_qp(&c->ep);
	}
	if (f->reg.mr)
		kt_fence_count(f, "at rmmod");
	/* registered through conn[0]: its cm_id still names the device */
	if (f->conn[0].ep.id)
		kt_region_free(&f->conn[0].ep, &f->reg);
	for (i = 0; i < KT_FENCE_CONNS; i++) {
		c = &f->conn[i];
		if (c->rmapped)
			ib_dma_unmap_single(c->ep.id->device, c->rdma,
					    KT_FENCE_RECVS * KT_FENCE_RLEN,
					    DMA_FROM_DEVICE);
		kfree(c->rbuf);
		kt_ep_free(&c->ep);
	}
	if (f->pd)
		ib_dealloc_pd(f->pd);
	pr_info("fence: %d connections, %d failed\n", f->nconn,
		f->ctx->failed);
	kt_ctx_free(f->ctx);
	kfree(f);
}

static int kt_fence_start(struct kt_ctx *ctx)
{
	struct task_struct *task;
	struct kt_fence *f;
	int i, rv;

	f = kzalloc(sizeof(*f), GFP_KERNEL);
	if (!f) {
		kt_ctx_free(ctx);
		return -ENOMEM;
	}
	f->ctx = ctx;
	for (i = 0; i < KT_FENCE_CONNS; i++) {
		kt_ep_init(&f->conn[i].ep, "fence");
		f->conn[i].num = i + 1;
	}
	rv = kt_listen(ctx);
	if (rv) {
		kt_fail(ctx, "listen", "%pISpc: %d", &ctx->srv_sa, rv);
		kt_fence_free(f);
		return -EIO;
	}
	task = kthread_run(kt_fence_thread, f, "xiw_ktest_fence");
	if (IS_ERR(task)) {
		kt_fence_free(f);
		return PTR_ERR(task);
	}
	/* kthread_stop() must find it even if it died */
	get_task_struct(task);
	kt_fence = f;
	kt_fence_task = task;
	pr_info("fence: listening on %pISpc\n", &ctx->srv_sa);
	return 0;
}

static int __init xiw_ktest_init(void)
{
	struct task_struct *task;
	struct kt_ctx *ctx;
	int noio_armed;
	int rv;

	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL);
	if (!ctx)
		return -ENOMEM;
	kt_ep_init(&ctx->listen, "listener");
	if (!strcmp(role, "loopback")) {
		ctx->role = KT_LOOPBACK;
	} else if (!strcmp(role, "server")) {
		ctx->role = KT_SERVER;
	} else if (!strcmp(role, "client")) {
		ctx->role = KT_CLIENT;
	} else if (!strcmp(role, "idle")) {
		ctx->role = KT_IDLE;
	} else if (!strcmp(role, "fence")) {
		ctx->role = KT_FENCE;
	} else {
		pr_err("role %s: not loopback, server, client, idle or fence\n",
		       role);
		kfree(ctx);
		return -EINVAL;
	}
	rv = kt_parse(server_addr, &ctx->srv_sa);
	if (!rv)
		rv = kt_parse(client_addr, &ctx->cli_sa);
	if (rv) {
		pr_err("bad address %s or %s: %d\n", server_addr, client_addr,
		       rv);
		kfree(ctx);
		return rv;
	}
	/* the client end takes any free port */
	if (ctx->cli_sa.ss_family == AF_INET)
		((struct sockaddr_in *)&ctx->cli_sa)->sin_port = 0;
	else
		((struct sockaddr_in6 *)&ctx->cli_sa)->sin6_port = 0;

	if (ctx->role == KT_IDLE) {
		rv = kt_idle_setup(ctx);
		if (rv) {
			kt_fail(ctx, "idle", "%pISc: %d", &ctx->cli_sa, rv);
			kt_idle_free(ctx);
			return -EIO;
		}
		kt_idle = ctx;
		return 0;
	}
	if (ctx->role == KT_FENCE)
		return kt_fence_start(ctx);
	if (ctx->role != KT_CLIENT) {
		rv = kt_listen(ctx);
		if (rv) {
			kt_fail(ctx, "listen", "%pISpc: %d", &ctx->srv_sa, rv);
			kt_ctx_free(ctx);
			return -EIO;
		}
		kt_pass(ctx, "listen");
	}
	if (ctx->role == KT_SERVER) {
		task = kthread_run(kt_server_thread, ctx, "xiw_ktest_srv");
		if (IS_ERR(task)) {
			kt_ctx_free(ctx);
			return PTR_ERR(task);
		}
		/* kthread_stop() must find it even if it died */
		get_task_struct(task);
		kt_server = ctx;
		kt_server_task = task;
		return 0;
	}

	noio_armed = register_kprobe(&kt_noio_probe);
	kt_run_ops(ctx);
	kt_run_commit(ctx);
	kt_run_access(ctx);
	kt_run_post(ctx);
	if (zc_rounds)
		kt_run_zc(ctx);
	kt_noio_check(ctx, noio_armed);
	pr_info("%d passed, %d failed\n", ctx->passed, ctx->failed);
	rv = ctx->failed ? -EIO : 0;
	kt_ctx_free(ctx);
	return rv;
}

static void __exit xiw_ktest_exit(void)
{
	if (kt_fence) {
		kthread_stop(kt_fence_task);
		put_task_struct(kt_fence_task);
		kt_fence_free(kt_fence);
		return;
	}
	if (kt_idle) {
		kt_idle_check(kt_idle);
		kt_idle_free(kt_idle);
		return;
	}
	if (!kt_server)
		return;
	kthread_stop(kt_server_task);
	put_task_struct(kt_server_task);
	pr_info("server: %d connections, %d failed\n", kt_server->served,
		kt_server->failed);
	kt_ctx_free(kt_server);
}

module_init(xiw_ktest_init);
module_exit(xiw_ktest_exit);

MODULE_DESCRIPTION("xiw kernel API test: Flush, Atomic Write, Verify");
MODULE_LICENSE("GPL");
