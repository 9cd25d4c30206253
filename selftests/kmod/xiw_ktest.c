// SPDX-License-Identifier: GPL-2.0
/*
 * xiw_ktest - a kernel ULP that exercises the xiw kernel API of the
 * draft-talpey-rdma-commit operations (<rdma/xiw_kapi.h>).
 *
 * Everything runs in module init: a listener on @server_addr, a client
 * connecting from @client_addr (two xiw devices, or one), both with
 * rdma_cm, then work requests from the client's QP against memory the
 * server side registered with fast registration:
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
 *			layer/type/code 0x02ff, both QPs in ERROR
 *	flushed_after_terminate	then an Atomic Write completes with
 *			IB_WC_WR_FLUSH_ERR, its target untouched
 *	commit_chain	on a second connection, a commit log: Write, Flush
 *			(unsignaled) and Atomic Write of the tail per record;
 *			record in place when the tail completes
 *	disconnect	its graceful close reaches both ends
 *	flush_no_right	on a third connection, Flush of an MR without the
 *			flush right: IB_WC_REM_ACCESS_ERR, vendor_err 0x01xx
 *
 * Each check logs "PASS name" or "FAIL name: why". Everything is torn
 * down before init returns; init fails with -EIO when any check failed,
 * so a passing insmod is a passing run (rmmod it afterwards).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/crc32c.h>
#include <linux/delay.h>
#include <linux/inet.h>
#include <linux/jiffies.h>
#include <linux/module.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <crypto/sha2.h>
#include <net/net_namespace.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>
#include <rdma/xiw_kapi.h>

static char *server_addr = "192.0.2.1";
module_param(server_addr, charp, 0444);
MODULE_PARM_DESC(server_addr, "address the test listens on (IPv4 or IPv6)");

static char *client_addr = "192.0.2.2";
module_param(client_addr, charp, 0444);
MODULE_PARM_DESC(client_addr, "source address of the test's connections");

static ushort port = 7490;
module_param(port, ushort, 0444);
MODULE_PARM_DESC(port, "TCP port of the listener");

static uint timeout_ms = 10000;
module_param(timeout_ms, uint, 0444);
MODULE_PARM_DESC(timeout_ms, "limit of each wait for an event or completion");

#define KT_DEPTH	16		/* SQ and CQ entries */
#define KT_RD_DEPTH	4		/* ORD and IRD */
#define KT_TBUF_SIZE	(4 * PAGE_SIZE)	/* each target region */
#define KT_LBUF_SIZE	(4 * PAGE_SIZE)	/* requester buffer */
#define KT_DIGEST_OFF	PAGE_SIZE	/* digests land here in lbuf */
#define KT_AW_OFF	(PAGE_SIZE + 8)	/* Atomic Write target offset */
#define KT_PAGE2	(2 * PAGE_SIZE)	/* flush_mr's Write, commit records */
#define KT_VERIFY_LEN	(3 * PAGE_SIZE)	/* bytes each Verify covers */
#define KT_REC_LEN	512		/* commit_chain record */
#define KT_REC_NUM	8

/* Terminate Control of a Verify mismatch: RDMAP, remote op, vendor */
#define KT_VENDOR_ERR_VERIFY	0x02ff

enum kt_wr_id {
	KT_WRID_REG = 1,
	KT_WRID_WRITE,
	KT_WRID_FLUSH,
	KT_WRID_ATOMIC_WRITE,
	KT_WRID_FLUSH_MR,
	KT_WRID_VERIFY,
	KT_WRID_TAIL,
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

struct kt_conn {
	struct kt_ep cli;
	struct kt_ep srv;
	struct kt_region tr;		/* crc32c, flush right */
	struct kt_region sr;		/* sha256, flush right */
	void *lbuf;			/* client: Write source, digests */
	u64 ldma;
	bool lmapped;
	bool terminated;		/* expected to end in a Terminate */
};

struct kt_ctx {
	struct kt_ep listen;
	struct sockaddr_storage srv_sa;
	struct sockaddr_storage cli_sa;
	int passed;
	int failed;
};

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

/* PD, CQ and QP of a connection end, on the device its cm_id is bound to. */
static int kt_ep_res(struct kt_ep *ep)
{
	struct ib_qp_init_attr qa = {
		.cap = {
			.max_send_wr = KT_DEPTH,
			.max_recv_wr = 1,
			.max_send_sge = 1,
			.max_recv_sge = 1,
		},
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.qp_type = IB_QPT_RC,
	};
	struct ib_device *dev = ep->id->device;
	int rv;

	ep->pd = ib_alloc_pd(dev, 0);
	if (IS_ERR(ep->pd)) {
		rv = PTR_ERR(ep->pd);
		ep->pd = NULL;
		return rv;
	}
	ep->cq = ib_alloc_cq(dev, NULL, 2 * KT_DEPTH, 0, IB_POLL_DIRECT);
	if (IS_ERR(ep->cq)) {
		rv = PTR_ERR(ep->cq);
		ep->cq = NULL;
		return rv;
	}
	qa.send_cq = ep->cq;
	qa.recv_cq = ep->cq;
	rv = rdma_create_qp(ep->id, ep->pd, &qa);
	if (rv)
		return rv;
	ep->has_qp = true;
	return 0;
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
 * KT_TBUF_SIZE zeroed bytes on @ep's side, registered for @access with a
 * REG_MR work request on @ep's QP (the QP must be connected). A failure
 * is logged as one of check @name.
 */
static int kt_region_reg(struct kt_ctx *ctx, struct kt_ep *ep,
			 struct kt_region *r, int access, const char *name)
{
	struct ib_device *dev = ep->id->device;
	const struct ib_send_wr *bad;
	struct ib_reg_wr wr = {};
	const char *step;
	struct ib_wc wc;
	int rv;

	/* kmalloc of a power of two is aligned to it: whole pages */
	step = "kzalloc";
	rv = -ENOMEM;
	r->buf = kzalloc(KT_TBUF_SIZE, GFP_KERNEL);
	if (!r->buf)
		goto err;
	sg_init_one(&r->sg, r->buf, KT_TBUF_SIZE);
	step = "ib_dma_map_sg";
	if (ib_dma_map_sg(dev, &r->sg, 1, DMA_BIDIRECTIONAL) != 1)
		goto err;
	r->mapped = true;
	step = "ib_alloc_mr";
	r->mr = ib_alloc_mr(ep->pd, IB_MR_TYPE_MEM_REG,
			    KT_TBUF_SIZE >> PAGE_SHIFT);
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

/*
 * Connect a client end from ctx->cli_sa to the listener. Each failure is
 * logged as the failure of check "connect"; kt_conn_down() frees what
 * was set up, whatever the outcome.
 */
static int kt_conn_up(struct kt_ctx *ctx, struct kt_conn *c)
{
	struct rdma_conn_param param = {
		.initiator_depth = KT_RD_DEPTH,
		.responder_resources = KT_RD_DEPTH,
	};
	struct rdma_cm_id *id;
	const char *step;
	int rv;

	kt_ep_init(&c->cli, "client");
	kt_ep_init(&c->srv, "server");
	spin_lock_irq(&ctx->listen.lock);
	ctx->listen.next = &c->srv;
	ctx->listen.events = 0;
	spin_unlock_irq(&ctx->listen.lock);

	step = "rdma_create_id";
	id = rdma_create_id(&init_net, kt_cm_handler, &c->cli, RDMA_PS_TCP,
			    IB_QPT_RC);
	if (IS_ERR(id)) {
		rv = PTR_ERR(id);
		goto err;
	}
	c->cli.id = id;
	step = "rdma_resolve_addr";
	rv = rdma_resolve_addr(id, (struct sockaddr *)&ctx->cli_sa,
			       (struct sockaddr *)&ctx->srv_sa, timeout_ms);
	if (!rv)
		rv = kt_wait_event(&c->cli, RDMA_CM_EVENT_ADDR_RESOLVED,
				   KT_CM_ERRORS);
	if (rv)
		goto err;
	step = "rdma_resolve_route";
	rv = rdma_resolve_route(id, timeout_ms);
	if (!rv)
		rv = kt_wait_event(&c->cli, RDMA_CM_EVENT_ROUTE_RESOLVED,
				   KT_CM_ERRORS);
	if (rv)
		goto err;
	step = "client device";
	rv = -ENODEV;
	if (!xiw_is_xiw_device(id->device))
		goto err;
	step = "client QP";
	rv = kt_ep_res(&c->cli);
	if (rv)
		goto err;
	step = "client buffer";
	rv = -ENOMEM;
	c->lbuf = kzalloc(KT_LBUF_SIZE, GFP_KERNEL);
	if (!c->lbuf)
		goto err;
	c->ldma = ib_dma_map_single(id->device, c->lbuf, KT_LBUF_SIZE,
				    DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(id->device, c->ldma))
		goto err;
	c->lmapped = true;

	step = "rdma_connect";
	rv = rdma_connect(id, &param);
	if (!rv)
		rv = kt_wait_event(&ctx->listen, RDMA_CM_EVENT_CONNECT_REQUEST,
				   KT_CM_ERRORS);
	if (!rv)	/* did the client give up before the request came? */
		rv = kt_events(&c->cli) & KT_CM_ERRORS ? -ECONNABORTED : 0;
	if (rv)
		goto err;
	step = "server device";
	rv = -ENODEV;
	if (!xiw_is_xiw_device(c->srv.id->device))
		goto err;
	step = "server QP";
	rv = kt_ep_res(&c->srv);
	if (rv)
		goto err;
	step = "rdma_accept";
	rdma_lock_handler(c->srv.id);
	rv = rdma_accept(c->srv.id, &param);
	rdma_unlock_handler(c->srv.id);
	if (!rv)
		rv = kt_wait_event(&c->srv, RDMA_CM_EVENT_ESTABLISHED,
				   KT_CM_ERRORS);
	if (rv)
		goto err;
	step = "client established";
	rv = kt_wait_event(&c->cli, RDMA_CM_EVENT_ESTABLISHED, KT_CM_ERRORS);
	if (rv)
		goto err;
	c->cli.connected = true;
	c->srv.connected = true;
	pr_info("connected %s %pISpc -> %s %pISpc\n",
		dev_name(&c->cli.id->device->dev),
		&c->cli.id->route.addr.src_addr,
		dev_name(&c->srv.id->device->dev),
		&c->srv.id->route.addr.src_addr);
	return 0;

err:
	kt_fail(ctx, "connect", "%s: %d", step, rv);
	return rv ? rv : -EIO;
}

/* Disconnect (if connected) and free everything of @c. */
static void kt_conn_down(struct kt_ctx *ctx, struct kt_conn *c)
{
	int rv;

	/* no request reaches @c from now on: c->srv.id is stable */
	spin_lock_irq(&ctx->listen.lock);
	ctx->listen.next = NULL;
	spin_unlock_irq(&ctx->listen.lock);

	if (c->cli.connected) {
		rdma_disconnect(c->cli.id);
		rv = kt_wait_event(&c->cli, RDMA_CM_EVENT_DISCONNECTED, 0);
		if (!rv)
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
		ib_dma_unmap_single(c->cli.id->device, c->ldma, KT_LBUF_SIZE,
				    DMA_BIDIRECTIONAL);
	kfree(c->lbuf);
	if (c->srv.id) {
		kt_region_free(&c->srv, &c->tr);
		kt_region_free(&c->srv, &c->sr);
	}
	kt_ep_free(&c->cli);
	kt_ep_free(&c->srv);
}

static void kt_fill(void *buf, size_t len, u32 seed)
{
	u32 *p = buf;
	size_t i;

	for (i = 0; i < len / sizeof(*p); i++)
		p[i] = seed + i * 2654435761U;
}

static void kt_sync_cpu(struct kt_conn *c, struct kt_region *r)
{
	ib_dma_sync_single_for_cpu(c->srv.id->device, sg_dma_address(&r->sg),
				   KT_TBUF_SIZE, DMA_BIDIRECTIONAL);
	ib_dma_sync_single_for_cpu(c->cli.id->device, c->ldma, KT_LBUF_SIZE,
				   DMA_BIDIRECTIONAL);
}

static void kt_sync_dev(struct kt_conn *c, struct kt_region *r)
{
	ib_dma_sync_single_for_device(c->srv.id->device,
				      sg_dma_address(&r->sg), KT_TBUF_SIZE,
				      DMA_BIDIRECTIONAL);
	ib_dma_sync_single_for_device(c->cli.id->device, c->ldma,
				      KT_LBUF_SIZE, DMA_BIDIRECTIONAL);
}

/* RDMA Write of @len bytes at lbuf + @off to the same offset of @r. */
static int kt_post_write(struct kt_conn *c, struct kt_region *r, u32 off,
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
		.remote_addr = r->mr->iova + off,
		.rkey = r->mr->rkey,
	};
	const struct ib_send_wr *bad;

	return ib_post_send(c->cli.id->qp, &wr.wr, &bad);
}

/* RDMA Write of one page (unsignaled), then a Flush of that range. */
static int kt_write_flush(struct kt_ctx *ctx, struct kt_conn *c)
{
	const char *name = "write_flush";
	struct ib_qp *qp = c->cli.id->qp;
	struct ib_wc wc;
	int rv;

	kt_fill(c->lbuf, PAGE_SIZE, 0x5eed0001);
	kt_sync_dev(c, &c->tr);
	rv = kt_post_write(c, &c->tr, 0, PAGE_SIZE, 0);
	if (rv) {
		kt_fail(ctx, name, "ib_post_send(RDMA Write) %d", rv);
		return rv;
	}
	rv = xiw_post_flush(qp, KT_WRID_FLUSH, c->tr.mr->rkey, c->tr.mr->iova,
			    PAGE_SIZE, IB_FLUSH_GLOBAL, IB_FLUSH_RANGE,
			    IB_SEND_SIGNALED);
	if (rv) {
		kt_fail(ctx, name, "xiw_post_flush %d", rv);
		return rv;
	}
	rv = kt_expect_wc(ctx, &c->cli, name, KT_WRID_FLUSH, IB_WC_FLUSH,
			  IB_WC_SUCCESS, &wc);
	if (rv)
		return rv;
	kt_sync_cpu(c, &c->tr);
	if (memcmp(c->tr.buf, c->lbuf, PAGE_SIZE)) {
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
	struct ib_qp *qp = c->cli.id->qp;
	u64 value = 0x0123456789abcdefULL;
	u8 *t = c->tr.buf;
	struct ib_wc wc;
	int rv;

	rv = xiw_post_atomic_write(qp, KT_WRID_ATOMIC_WRITE, c->tr.mr->rkey,
				   c->tr.mr->iova + KT_AW_OFF, value,
				   IB_SEND_SIGNALED);
	if (rv) {
		kt_fail(ctx, "atomic_write", "xiw_post_atomic_write %d", rv);
		return rv;
	}
	rv = kt_expect_wc(ctx, &c->cli, "atomic_write", KT_WRID_ATOMIC_WRITE,
			  IB_WC_ATOMIC_WRITE, IB_WC_SUCCESS, &wc);
	if (rv)
		return rv;
	kt_sync_cpu(c, &c->tr);
	if (memcmp(t + KT_AW_OFF, &value, sizeof(value))) {
		kt_fail(ctx, "atomic_write", "target bytes %8ph, expected %8ph",
			t + KT_AW_OFF, &value);
		return -EIO;
	}
	if (memcmp(t + KT_AW_OFF - 8, zero, 8) ||
	    memcmp(t + KT_AW_OFF + 8, zero, 8)) {
		kt_fail(ctx, "atomic_write", "bytes around the target changed: %24ph",
			t + KT_AW_OFF - 8);
		return -EIO;
	}
	kt_pass(ctx, "atomic_write");

	kt_fill(c->lbuf + KT_PAGE2, PAGE_SIZE, 0x5eed0003);
	kt_sync_dev(c, &c->tr);
	rv = kt_post_write(c, &c->tr, KT_PAGE2, PAGE_SIZE, 0);
	if (rv) {
		kt_fail(ctx, "flush_mr", "ib_post_send(RDMA Write) %d", rv);
		return rv;
	}
	rv = xiw_post_flush(qp, KT_WRID_FLUSH_MR, c->tr.mr->rkey, 0, 0,
			    IB_FLUSH_GLOBAL, IB_FLUSH_MR, IB_SEND_SIGNALED);
	if (rv) {
		kt_fail(ctx, "flush_mr", "xiw_post_flush(IB_FLUSH_MR) %d", rv);
		return rv;
	}
	rv = kt_expect_wc(ctx, &c->cli, "flush_mr", KT_WRID_FLUSH_MR,
			  IB_WC_FLUSH, IB_WC_SUCCESS, &wc);
	if (rv)
		return rv;
	kt_sync_cpu(c, &c->tr);
	if (memcmp(t + KT_PAGE2, c->lbuf + KT_PAGE2, PAGE_SIZE)) {
		kt_fail(ctx, "flush_mr",
			"the Write's bytes are not in place at the Flush completion");
		return -EIO;
	}
	if (memcmp(t + KT_AW_OFF, &value, sizeof(value))) {
		kt_fail(ctx, "flush_mr", "Atomic Write bytes now %8ph",
			t + KT_AW_OFF);
		return -EIO;
	}
	kt_pass(ctx, "flush_mr");
	return 0;
}

/*
 * Verify of KT_VERIFY_LEN bytes of @r, whose digest is @expect (@len
 * bytes): once returning the peer's digest, once with the hash to match.
 */
static int kt_verify(struct kt_ctx *ctx, struct kt_conn *c,
		     struct kt_region *r, const u8 *expect, u8 len,
		     const char *name_digest, const char *name_match)
{
	u8 *got = c->lbuf + KT_DIGEST_OFF;
	struct ib_sge sge = {
		.addr = c->ldma + KT_DIGEST_OFF,
		.length = SHA256_DIGEST_SIZE,
		.lkey = c->cli.pd->local_dma_lkey,
	};
	struct ib_qp *qp = c->cli.id->qp;
	struct ib_wc wc;
	int rv;

	memset(got, 0xa5, SHA256_DIGEST_SIZE);
	kt_sync_dev(c, r);
	rv = xiw_post_verify(qp, KT_WRID_VERIFY, r->mr->rkey, r->mr->iova,
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
	kt_sync_cpu(c, r);
	if (memcmp(got, expect, len)) {
		kt_fail(ctx, name_digest, "digest %*phN, computed here %*phN",
			len, got, len, expect);
		return -EIO;
	}
	kt_pass(ctx, name_digest);

	rv = xiw_post_verify(qp, KT_WRID_VERIFY, r->mr->rkey, r->mr->iova,
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
	struct ib_wc wc;
	int rv;

	rv = xiw_post_verify(c->cli.id->qp, KT_WRID_VERIFY, c->tr.mr->rkey,
			     c->tr.mr->iova, KT_VERIFY_LEN, hash,
			     sizeof(hash), NULL, IB_SEND_SIGNALED);
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

/* Verify with a wrong hash: a Terminate, the QP to ERROR. */
static int kt_verify_mismatch(struct kt_ctx *ctx, struct kt_conn *c,
			      const u8 *crc)
{
	const char *name = "verify_mismatch";
	enum ib_qp_state state;
	u8 bad[4];
	struct ib_wc wc;
	int rv;

	memcpy(bad, crc, sizeof(bad));
	bad[0] ^= 1;
	c->terminated = true;
	rv = xiw_post_verify(c->cli.id->qp, KT_WRID_VERIFY, c->tr.mr->rkey,
			     c->tr.mr->iova, KT_VERIFY_LEN, bad, sizeof(bad),
			     NULL, IB_SEND_SIGNALED);
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
	rv = kt_wait_qp_err(c->srv.id->qp, &state);
	if (rv) {
		kt_fail(ctx, name, "responder QP in state %d, not ERROR (%d)",
			state, rv);
		return rv;
	}
	kt_pass(ctx, name);
	return 0;
}

/* After the Terminate: a new WR completes flushed, its target untouched. */
static int kt_after_terminate(struct kt_ctx *ctx, struct kt_conn *c)
{
	const char *name = "flushed_after_terminate";
	u8 before[8];
	struct ib_wc wc;
	int rv;

	kt_sync_cpu(c, &c->tr);
	memcpy(before, c->tr.buf + KT_AW_OFF, sizeof(before));
	rv = xiw_post_atomic_write(c->cli.id->qp, KT_WRID_ATOMIC_WRITE,
				   c->tr.mr->rkey, c->tr.mr->iova + KT_AW_OFF,
				   ~0ULL, IB_SEND_SIGNALED);
	if (rv) {
		kt_fail(ctx, name, "xiw_post_atomic_write %d", rv);
		return rv;
	}
	rv = kt_expect_wc(ctx, &c->cli, name, KT_WRID_ATOMIC_WRITE,
			  IB_WC_ATOMIC_WRITE, IB_WC_WR_FLUSH_ERR, &wc);
	if (rv)
		return rv;
	kt_sync_cpu(c, &c->tr);
	if (memcmp(c->tr.buf + KT_AW_OFF, before, sizeof(before))) {
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
	const int rights = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE |
			   IB_ACCESS_REMOTE_READ | IB_ACCESS_FLUSH_GLOBAL;
	u8 crc[4], sha[SHA256_DIGEST_SIZE];
	struct kt_conn *c;
	int rv;

	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c) {
		kt_fail(ctx, "connect", "no memory");
		return;
	}
	if (kt_conn_up(ctx, c))
		goto out;
	kt_pass(ctx, "connect");

	if (kt_region_reg(ctx, &c->srv, &c->tr, rights, "register") ||
	    kt_region_reg(ctx, &c->srv, &c->sr, rights, "register"))
		goto out;
	rv = xiw_mr_set_digest(c->sr.mr, XIW_DIGEST_SHA256);
	if (rv) {
		kt_fail(ctx, "register", "xiw_mr_set_digest(SHA256) %d", rv);
		goto out;
	}
	kt_pass(ctx, "register");

	if (kt_write_flush(ctx, c) || kt_atomic_write_flush_mr(ctx, c))
		goto out;

	/* Verify: over the Writes' and the Atomic Write's bytes */
	kt_sync_cpu(c, &c->tr);
	kt_crc32c(c->tr.buf, KT_VERIFY_LEN, crc);
	if (kt_verify(ctx, c, &c->tr, crc, sizeof(crc), "verify_crc32c_digest",
		      "verify_crc32c_match"))
		goto out;
	kt_fill(c->sr.buf, KT_TBUF_SIZE, 0x5eed0002);
	sha256(c->sr.buf, KT_VERIFY_LEN, sha);
	if (kt_verify(ctx, c, &c->sr, sha, sizeof(sha), "verify_sha256_digest",
		      "verify_sha256_match"))
		goto out;
	if (kt_bad_operands(ctx, c))
		goto out;
	if (!kt_verify_mismatch(ctx, c, crc))
		kt_after_terminate(ctx, c);
out:
	kt_conn_down(ctx, c);
	kfree(c);
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
	const int rights = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE |
			   IB_ACCESS_FLUSH_GLOBAL;
	const char *name = "commit_chain";
	struct kt_conn *c;
	struct ib_wc wc;
	u64 tail;
	u32 off;
	int i, rv;

	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c) {
		kt_fail(ctx, name, "no memory");
		return;
	}
	if (kt_conn_up(ctx, c) ||
	    kt_region_reg(ctx, &c->srv, &c->tr, rights, name))
		goto out;
	for (i = 0; i < KT_REC_NUM; i++) {
		off = KT_PAGE2 + i * KT_REC_LEN;
		tail = off + KT_REC_LEN;
		kt_fill(c->lbuf + off, KT_REC_LEN, 0xc0de0000 + i);
		kt_sync_dev(c, &c->tr);
		rv = kt_post_write(c, &c->tr, off, KT_REC_LEN, 0);
		if (!rv)
			rv = xiw_post_flush(c->cli.id->qp, KT_WRID_FLUSH,
					    c->tr.mr->rkey,
					    c->tr.mr->iova + off, KT_REC_LEN,
					    IB_FLUSH_GLOBAL, IB_FLUSH_RANGE, 0);
		if (!rv)
			rv = xiw_post_atomic_write(c->cli.id->qp, KT_WRID_TAIL,
						   c->tr.mr->rkey,
						   c->tr.mr->iova, tail,
						   IB_SEND_SIGNALED);
		if (rv) {
			kt_fail(ctx, name, "record %d: post %d", i, rv);
			goto out;
		}
		if (kt_expect_wc(ctx, &c->cli, name, KT_WRID_TAIL,
				 IB_WC_ATOMIC_WRITE, IB_WC_SUCCESS, &wc))
			goto out;
		kt_sync_cpu(c, &c->tr);
		if (memcmp(c->tr.buf, &tail, sizeof(tail)) ||
		    memcmp(c->tr.buf + off, c->lbuf + off, KT_REC_LEN)) {
			kt_fail(ctx, name,
				"record %d: tail %8ph (expected %llu) or record not in place",
				i, c->tr.buf, tail);
			goto out;
		}
	}
	kt_pass(ctx, name);
out:
	kt_conn_down(ctx, c);
	kfree(c);
}

/* A second connection: Flush of an MR without the flush right. */
static void kt_run_access(struct kt_ctx *ctx)
{
	const char *name = "flush_no_right";
	enum ib_qp_state state;
	struct kt_conn *c;
	struct ib_wc wc;
	int rv;

	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c) {
		kt_fail(ctx, name, "no memory");
		return;
	}
	if (kt_conn_up(ctx, c))
		goto out;
	if (kt_region_reg(ctx, &c->srv, &c->tr,
			  IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE, name))
		goto out;
	c->terminated = true;
	rv = xiw_post_flush(c->cli.id->qp, KT_WRID_FLUSH, c->tr.mr->rkey,
			    c->tr.mr->iova, PAGE_SIZE, IB_FLUSH_GLOBAL,
			    IB_FLUSH_RANGE, IB_SEND_SIGNALED);
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
	kfree(c);
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

	kt_ep_init(&ctx->listen, "listener");
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
	return rdma_listen(id, 1);
}

static int __init xiw_ktest_init(void)
{
	struct kt_ctx *ctx;
	int rv;

	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL);
	if (!ctx)
		return -ENOMEM;
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

	rv = kt_listen(ctx);
	if (rv) {
		kt_fail(ctx, "listen", "%pISpc: %d", &ctx->srv_sa, rv);
	} else {
		kt_pass(ctx, "listen");
		kt_run_ops(ctx);
		kt_run_commit(ctx);
		kt_run_access(ctx);
	}
	if (ctx->listen.id)
		rdma_destroy_id(ctx->listen.id);

	pr_info("%d passed, %d failed\n", ctx->passed, ctx->failed);
	rv = ctx->failed ? -EIO : 0;
	kfree(ctx);
	return rv;
}

static void __exit xiw_ktest_exit(void)
{
}

module_init(xiw_ktest_init);
module_exit(xiw_ktest_exit);

MODULE_DESCRIPTION("xiw kernel API test: Flush, Atomic Write, Verify");
MODULE_LICENSE("GPL");
