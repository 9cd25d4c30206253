// SPDX-License-Identifier: GPL-2.0
/*
 * xiw - iWARP connection manager.
 *
 * One connection endpoint (struct xiw_cep) per listening socket and per
 * connection. CM work runs on an unbound, concurrent workqueue; a CEP's own
 * work item never runs twice at once (workqueue non-reentrancy) and holds
 * the CEP's mutex, so one CEP's events are handled in order while a CEP
 * that waits (a graceful close draining TX towards a peer that does not
 * read) holds up no other connection. Socket callbacks, timers and data
 * path upcalls only set an event bit and queue the CEP's work item, they
 * never sleep and never allocate. Lock order: a connection's mutex, then
 * its listener's (SINGLE_DEPTH_NESTING); a listener takes only the mutex
 * of a connection not yet published.
 *
 * Socket ownership: sk_user_data of every socket the CM creates or accepts
 * is its CEP's struct xiw_sk_ctx, for the whole life of the socket (the
 * data path publishes its connection there while it owns the socket). The CM installs
 * sk_state_change and, during negotiation, sk_data_ready; from
 * xiw_llp_start() to xiw_llp_stop() the data path owns sk_data_ready
 * and sk_write_space. The CM restores the original callbacks before it
 * releases the socket.
 *
 * References: a CEP holds one reference of its iw_cm_id (add_ref/rem_ref)
 * and one of its QP (xiw_qp_get/put) from connect/accept until it is
 * closed; iwcm's provider_data of a passive cm_id holds a CEP reference
 * from CONNECT_REQUEST until accept or reject; qp->cep holds one while set.
 *
 * iw_cm event rules (drivers/infiniband/core/iwcm.c):
 *  - after a successful iw_connect exactly one CONNECT_REPLY follows;
 *    with status 0 the connection later ends with CLOSE, with an error
 *    status nothing follows;
 *  - after a successful iw_accept exactly one ESTABLISHED follows (iwcm
 *    blocks disconnect/destroy until it comes), later CLOSE;
 *  - DISCONNECT (peer closed) only before CLOSE, never after.
 */
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/inet.h>
#include <linux/kallsyms.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/tcp.h>
#include <net/ipv6.h>
#include <net/sock.h>
#include <net/tcp.h>
#include <rdma/rdma_cm.h>

#include "xiw.h"
#include "xiw_cm.h"
#include "xiw_trace.h"

static unsigned int mpa_rev = XIW_MPA_REV2;
module_param(mpa_rev, uint, 0644);
MODULE_PARM_DESC(mpa_rev, "MPA revision to request: 1, or 2 (RFC 6581, default)");

static unsigned int mpa_crc;
module_param(mpa_crc, uint, 0644);
MODULE_PARM_DESC(mpa_crc,
		 "MPA CRC32c: 0 off unless the peer asks (default), 1 ask for it, 2 require it");

static bool mpa_p2p = true;
module_param(mpa_p2p, bool, 0644);
MODULE_PARM_DESC(mpa_p2p, "Initiator offers peer-to-peer RTR (Write|Read), RFC 6581");

static unsigned int mpa_timeout_init_ms = 10000;
module_param(mpa_timeout_init_ms, uint, 0644);
MODULE_PARM_DESC(mpa_timeout_init_ms,
		 "Initiator: ms to wait for TCP connect + MPA Reply (default 10000)");

static unsigned int mpa_timeout_resp_ms = 5000;
module_param(mpa_timeout_resp_ms, uint, 0644);
MODULE_PARM_DESC(mpa_timeout_resp_ms,
		 "Responder: ms to wait for the MPA Request, the RTR, or the peer's FIN (default 5000)");

static unsigned int mpa_timeout_accept_ms = 10000;
module_param(mpa_timeout_accept_ms, uint, 0644);
MODULE_PARM_DESC(mpa_timeout_accept_ms,
		 "Responder: ms the ULP has to accept or reject a connection request before it is rejected (default 10000)");

static unsigned int llp_timeout_ms = 30000;
module_param(llp_timeout_ms, uint, 0644);
MODULE_PARM_DESC(llp_timeout_ms,
		 "A peer silent this long is dead: TCP_USER_TIMEOUT and keepalive of new connections, ms, 0 = TCP's defaults (about 15 min with data outstanding, never when idle); default 30000");

static struct workqueue_struct *xiw_cm_wq;
static LIST_HEAD(xiw_cm_shared);
static DEFINE_MUTEX(xiw_cm_shared_mutex);
static LIST_HEAD(xiw_cep_all);
static DEFINE_SPINLOCK(xiw_cep_all_lock);

static const char * const xiw_cep_state_name[] = {
	[XIW_CEP_IDLE] = "IDLE",
	[XIW_CEP_LISTEN] = "LISTEN",
	[XIW_CEP_CONNECTING] = "CONNECTING",
	[XIW_CEP_AWAIT_MPAREP] = "AWAIT_MPAREP",
	[XIW_CEP_AWAIT_MPAREQ] = "AWAIT_MPAREQ",
	[XIW_CEP_RECVD_MPAREQ] = "RECVD_MPAREQ",
	[XIW_CEP_AWAIT_RTR] = "AWAIT_RTR",
	[XIW_CEP_RDMA_MODE] = "RDMA_MODE",
	[XIW_CEP_CLOSING] = "CLOSING",
	[XIW_CEP_CLOSED] = "CLOSED",
};

#define xiw_cep_dbg(cep, fmt, ...) do {					\
	struct xiw_cep *_c = (cep);					\
									\
	pr_debug("%s: cep %p %s %s: %s: " fmt, _c->dev_name, _c,	\
		 _c->active ? "act" : "pas",				\
		 xiw_cep_state_name[_c->state], __func__,		\
		 ##__VA_ARGS__);					\
} while (0)

static void xiw_cep_work(struct work_struct *w);
static void xiw_cep_timeout(struct work_struct *w);

/*
 * Options of every connection socket, set before the MPA exchange.
 * llp_timeout_ms bounds how long a peer that vanished without FIN or RST
 * (powered off, cable pulled) keeps a connection in RDMA mode: TCP gives
 * up after that long with data unacknowledged or a zero window
 * (TCP_USER_TIMEOUT), and keepalive probes an idle connection after half
 * of it, every quarter; TCP_USER_TIMEOUT also ends the probing. TCP then
 * closes the socket with ETIMEDOUT, sk_state_change runs and the CM tears
 * the connection down like any other LLP error (QP to ERROR, WRs
 * flushed, iw_cm told). Without it TCP retries for as long as
 * tcp_retries2 allows (many minutes) and an idle connection never learns
 * anything.
 */
static void xiw_cm_sock_opts(struct sock *sk)
{
	unsigned int ms = READ_ONCE(llp_timeout_ms);

	tcp_sock_set_nodelay(sk);
	if (!ms)
		return;
	ms = min_t(unsigned int, ms, INT_MAX);
	/* Cannot fail for values in range: ms <= INT_MAX, seconds >= 1. */
	tcp_sock_set_user_timeout(sk, ms);
	sock_set_keepalive(sk);
	tcp_sock_set_keepidle(sk, clamp(ms / 2000, 1U, (unsigned int)MAX_TCP_KEEPIDLE));
	tcp_sock_set_keepintvl(sk, clamp(ms / 4000, 1U, (unsigned int)MAX_TCP_KEEPINTVL));
	tcp_sock_set_keepcnt(sk, 4);
}

/* Every state change goes through here: tracepoint xiw_cm_state. */
static void xiw_cep_set_state(struct xiw_cep *cep, enum xiw_cep_state state)
{
	trace_xiw_cm_state(cep, state);
	cep->state = state;
}

/*
 * A new endpoint. @qp: the QP it connects, known only on the active side:
 * a user QP's endpoint is charged to the QP's creator (xiw_qp_gfp()). A
 * passive endpoint exists before any QP (the listener's work accepts the
 * TCP connection) and is charged to nobody; the MPA timeouts bound its
 * life.
 */
static struct xiw_cep *xiw_cep_alloc(struct xiw_device *xdev,
				     struct xiw_qp *qp)
{
	struct mem_cgroup *memcg;
	struct xiw_cep *cep;

	if (qp) {
		memcg = xiw_qp_memcg_enter(qp);
		cep = kzalloc(sizeof(*cep), xiw_qp_gfp(qp, GFP_KERNEL));
		xiw_qp_memcg_exit(memcg);
	} else {
		cep = kzalloc(sizeof(*cep), GFP_KERNEL);
	}
	if (!cep)
		return NULL;
	kref_init(&cep->ref);
	mutex_init(&cep->lock);
	cep->xdev = xdev;
	strscpy(cep->dev_name, dev_name(&xdev->ibdev.dev), sizeof(cep->dev_name));
	cep->state = XIW_CEP_IDLE;
	INIT_LIST_HEAD(&cep->children);
	INIT_LIST_HEAD(&cep->child);
	INIT_LIST_HEAD(&cep->subs);
	INIT_LIST_HEAD(&cep->sub);
	INIT_LIST_HEAD(&cep->shared_entry);
	INIT_WORK(&cep->work, xiw_cep_work);
	INIT_DELAYED_WORK(&cep->timer, xiw_cep_timeout);
	spin_lock_bh(&xiw_cep_all_lock);
	list_add_tail(&cep->all, &xiw_cep_all);
	spin_unlock_bh(&xiw_cep_all_lock);
	return cep;
}

/*
 * Last reference: may be dropped in any context (socket callbacks), so it
 * only frees memory. Socket, cm_id and QP were let go when the CEP closed.
 */
static void xiw_cep_release(struct kref *ref)
{
	struct xiw_cep *cep = container_of(ref, struct xiw_cep, ref);
	unsigned long flags;

	WARN_ON(cep->sock || cep->cm_id || cep->qp || cep->listener ||
		cep->shared);
	spin_lock_irqsave(&xiw_cep_all_lock, flags);
	list_del(&cep->all);
	spin_unlock_irqrestore(&xiw_cep_all_lock, flags);
	kfree(cep);
}

static void xiw_cep_get(struct xiw_cep *cep)
{
	kref_get(&cep->ref);
}

static void xiw_cep_put(struct xiw_cep *cep)
{
	kref_put(&cep->ref, xiw_cep_release);
}

/* Post @ev to @cep's work item. Any context. */
static void xiw_cep_post(struct xiw_cep *cep, int ev)
{
	set_bit(ev, &cep->events);
	xiw_cep_get(cep);
	if (!queue_work(xiw_cm_wq, &cep->work))
		xiw_cep_put(cep);
}

static void xiw_cep_arm_timer(struct xiw_cep *cep, unsigned int ms)
{
	xiw_cep_get(cep);
	if (!mod_delayed_work(xiw_cm_wq, &cep->timer, msecs_to_jiffies(ms)))
		return;
	/* was pending: it already held a reference */
	xiw_cep_put(cep);
}

static void xiw_cep_cancel_timer(struct xiw_cep *cep)
{
	if (cancel_delayed_work(&cep->timer))
		xiw_cep_put(cep);
}

/* ------------------------------------------------------------------------
 * Socket callbacks: they only queue work.
 */
static struct xiw_cep *xiw_sk_cep(struct sock *sk)
{
	struct xiw_sk_ctx *ctx = sk->sk_user_data;

	return ctx ? container_of(ctx, struct xiw_cep, sk_ctx) : NULL;
}

static void xiw_cm_sk_state_change(struct sock *sk)
{
	struct xiw_cep *cep;

	read_lock_bh(&sk->sk_callback_lock);
	cep = xiw_sk_cep(sk);
	/* An accepted child inherits the listener's data until reassigned. */
	if (cep && cep->sock && cep->sock->sk == sk)
		xiw_cep_post(cep, XIW_CEP_EV_STATE);
	read_unlock_bh(&sk->sk_callback_lock);
}

static void xiw_cm_sk_data_ready(struct sock *sk)
{
	struct xiw_cep *cep;

	read_lock_bh(&sk->sk_callback_lock);
	cep = xiw_sk_cep(sk);
	if (cep && cep->sock && cep->sock->sk == sk)
		xiw_cep_post(cep, cep->state == XIW_CEP_LISTEN ?
			     XIW_CEP_EV_ACCEPT : XIW_CEP_EV_DATA);
	read_unlock_bh(&sk->sk_callback_lock);
}

/*
 * Make @sock the endpoint's: save the callbacks to restore at release and
 * install the CM's. An accepted socket starts with a copy of the listener's
 * callbacks and sk_user_data, so for it the originals are the listener's
 * saved ones (@from); otherwise they are the socket's own.
 */
static void xiw_cep_sock_attach(struct xiw_cep *cep, struct socket *sock,
				const struct xiw_cep *from)
{
	struct sock *sk = sock->sk;

	write_lock_bh(&sk->sk_callback_lock);
	cep->sock = sock;
	cep->sk_state_change = from ? from->sk_state_change :
				      sk->sk_state_change;
	cep->sk_data_ready = from ? from->sk_data_ready : sk->sk_data_ready;
	cep->sk_write_space = from ? from->sk_write_space :
				     sk->sk_write_space;
	sk->sk_user_data = &cep->sk_ctx;
	sk->sk_state_change = xiw_cm_sk_state_change;
	sk->sk_data_ready = xiw_cm_sk_data_ready;
	write_unlock_bh(&sk->sk_callback_lock);
}

/* Restore the callbacks and release the socket. abortive: send RST. */
static void xiw_cep_sock_release(struct xiw_cep *cep, bool abortive)
{
	struct socket *sock = cep->sock;
	struct sock *sk;

	if (!sock)
		return;
	sk = sock->sk;
	write_lock_bh(&sk->sk_callback_lock);
	sk->sk_user_data = NULL;
	sk->sk_state_change = cep->sk_state_change;
	sk->sk_data_ready = cep->sk_data_ready;
	sk->sk_write_space = cep->sk_write_space;
	cep->sock = NULL;
	write_unlock_bh(&sk->sk_callback_lock);
	if (abortive)
		sock_no_linger(sk);
	sock_release(sock);
}

/* ------------------------------------------------------------------------
 * iw_cm upcalls
 */
static void xiw_cep_addrs(struct xiw_cep *cep, struct iw_cm_event *ev)
{
	if (!cep->sock)
		return;
	kernel_getsockname(cep->sock, (struct sockaddr *)&ev->local_addr);
	kernel_getpeername(cep->sock, (struct sockaddr *)&ev->remote_addr);
}

static int xiw_cep_upcall(struct xiw_cep *cep, struct iw_cm_id *id,
			  enum iw_cm_event_type type, int status,
			  const void *pdata, u16 pd_len)
{
	struct iw_cm_event ev = {
		.event = type,
		.status = status,
	};
	int rv;

	if (!id)
		return -ENOTCONN;
	if (type == IW_CM_EVENT_CONNECT_REQUEST)
		ev.provider_data = cep;
	if (type == IW_CM_EVENT_CONNECT_REQUEST) {
		/*
		 * The peer's offer, as siw reports it (rdma_cm turns ird into
		 * initiator_depth): its IRD bounds our ORD, its ORD is the
		 * IRD it needs from us.
		 */
		ev.ird = min_t(u16, cep->ord, U8_MAX);
		ev.ord = min_t(u16, cep->ird, U8_MAX);
		xiw_cep_addrs(cep, &ev);
	} else if (type == IW_CM_EVENT_CONNECT_REPLY ||
		   type == IW_CM_EVENT_ESTABLISHED) {
		/* negotiated values in use */
		ev.ird = min_t(u16, cep->ird, U8_MAX);
		ev.ord = min_t(u16, cep->ord, U8_MAX);
		xiw_cep_addrs(cep, &ev);
	}
	if (pd_len) {
		/* iw_cm_event carries at most 255 bytes (u8 length) */
		ev.private_data = (void *)pdata;
		ev.private_data_len = min_t(u16, pd_len, U8_MAX);
	}
	rv = id->event_handler(id, &ev);
	xiw_cep_dbg(cep, "event %d status %d pd %u ird %u ord %u: %d\n", type,
		    status, ev.private_data_len, ev.ird, ev.ord, rv);
	return rv;
}

/* ------------------------------------------------------------------------
 * MPA frames
 */
static int xiw_cep_send_rr(struct xiw_cep *cep, bool request, u8 flags,
			   const struct xiw_mpa_v2 *v2, const void *pdata,
			   u16 pd_len)
{
	struct xiw_mpa_rr rr = { .flags = flags, .rev = cep->rev };
	struct msghdr msg = { .msg_flags = MSG_DONTWAIT | MSG_NOSIGNAL };
	struct kvec iov[3];
	int n = 0, len, rv;

	memcpy(rr.key, request ? XIW_MPA_KEY_REQ : XIW_MPA_KEY_REP,
	       XIW_MPA_KEY_LEN);
	rr.pd_len = cpu_to_be16((v2 ? sizeof(*v2) : 0) + pd_len);
	iov[n].iov_base = &rr;
	iov[n++].iov_len = sizeof(rr);
	len = sizeof(rr);
	if (v2) {
		iov[n].iov_base = (void *)v2;
		iov[n++].iov_len = sizeof(*v2);
		len += sizeof(*v2);
	}
	if (pd_len) {
		iov[n].iov_base = (void *)pdata;
		iov[n++].iov_len = pd_len;
		len += pd_len;
	}
	rv = kernel_sendmsg(cep->sock, &msg, iov, n, len);
	xiw_cep_dbg(cep, "%s flags %#x rev %u pd %u: %d\n",
		    request ? "request" : "reply", flags, cep->rev,
		    be16_to_cpu(rr.pd_len), rv);
	if (rv == len)
		return 0;
	/* At most 532 bytes into an empty send buffer: never partial. */
	return rv < 0 ? rv : -EIO;
}

/* A reply with R and the ULP's (or no) private data. */
static int xiw_cep_send_reject(struct xiw_cep *cep, const void *pdata,
			       u16 pd_len)
{
	struct xiw_mpa_v2 v2 = {};

	if (cep->enhanced)
		return xiw_cep_send_rr(cep, false,
				       XIW_MPA_FLAG_R | XIW_MPA_FLAG_ENHANCED,
				       &v2, pdata, pd_len);
	return xiw_cep_send_rr(cep, false, XIW_MPA_FLAG_R, NULL, pdata,
			       pd_len);
}

/*
 * Read the MPA Request/Reply into cep->mpa and cep->pdata without reading
 * past its end (FPDUs may follow). 0: complete; -EAGAIN: more to come;
 * other: the frame is bad or the stream ended.
 */
static int xiw_cep_recv_rr(struct xiw_cep *cep, bool request)
{
	const u16 hlen = sizeof(struct xiw_mpa_rr);
	int rv;

	for (;;) {
		struct msghdr msg = { .msg_flags = MSG_DONTWAIT };
		struct kvec iov;
		u16 want;

		if (cep->rcvd < hlen) {
			iov.iov_base = (u8 *)&cep->mpa + cep->rcvd;
			want = hlen - cep->rcvd;
		} else {
			want = hlen + cep->pd_len - cep->rcvd;
			if (!want)
				return 0;
			iov.iov_base = cep->pdata + cep->rcvd - hlen;
		}
		iov.iov_len = want;
		rv = kernel_recvmsg(cep->sock, &msg, &iov, 1, want,
				    MSG_DONTWAIT);
		if (rv == -EAGAIN)
			return rv;
		if (rv < 0) {
			xiw_cep_dbg(cep, "recv error %d\n", rv);
			return rv;
		}
		if (rv == 0) {
			xiw_cep_dbg(cep, "stream ended in MPA frame (%u bytes)\n",
				    cep->rcvd);
			return -ECONNRESET;
		}
		cep->rcvd += rv;
		if (cep->rcvd != hlen || rv != want)
			continue;

		/* Header complete: check it before the private data. */
		rv = xiw_mpa_rr_check(&cep->mpa, request, &cep->pd_len);
		if (rv == -EPROTO)
			xiw_cep_dbg(cep, "bad MPA key (%*ph)\n",
				    XIW_MPA_KEY_LEN, cep->mpa.key);
		else if (rv)
			xiw_cep_dbg(cep, "PD_Length %u > %u\n", cep->pd_len,
				    XIW_MPA_PD_MAX);
		if (rv)
			return rv;
	}
}

/* ------------------------------------------------------------------------
 * Teardown
 */
static void xiw_cep_drop_listener(struct xiw_cep *cep)
{
	struct xiw_cep *l = cep->listener;

	if (!l)
		return;
	mutex_lock_nested(&l->lock, SINGLE_DEPTH_NESTING);
	list_del_init(&cep->child);
	mutex_unlock(&l->lock);
	cep->listener = NULL;
	xiw_cep_put(l);
}

/*
 * Stop the data path this CEP started and unlink the QP. The QP goes to
 * ERROR in xiw_llp_stop() if it was still connected, under its state
 * mutex and only for this CEP's connection. Nothing else here changes the
 * QP's state: a QP the consumer moved to RESET (and maybe reconnected
 * with another CEP meanwhile), or one whose connect lost to another, is
 * not this CEP's to move to ERROR.
 */
static void xiw_cep_qp_down(struct xiw_cep *cep)
{
	struct xiw_qp *qp = cep->qp;

	if (!qp || !cep->qp_linked)
		return;
	/* clears qp->cep; the QP goes to ERROR if it was connected */
	if (cep->llp_started) {
		xiw_llp_stop(qp, cep);
		cep->llp_started = false;
	}
	mutex_lock(&qp->state_lock);
	if (qp->cep == cep)
		qp->cep = NULL;
	mutex_unlock(&qp->state_lock);
	cep->qp_linked = false;
	xiw_cep_put(cep);
}

/*
 * Link the QP to the CEP and start it with what the CEP negotiated. The
 * active side sends the RTR message first in peer-to-peer mode, the
 * passive side waits for it. While qp->cep may point to the CEP
 * (xiw_cm_qp_disconnect() may be called), the CEP holds a reference for it.
 */
static int xiw_cep_qp_up(struct xiw_cep *cep, bool active)
{
	struct xiw_llp_params llp = {
		.sock = cep->sock,
		.crc = cep->crc,
		.mpa_rev = cep->rev,
		.ord = cep->ord,
		.ird = cep->ird,
		.rtr = cep->rtr,
		.rtr_send_first = active && cep->p2p,
		.rtr_wait = !active && cep->p2p,
	};
	const struct xiw_llp_params *p = &llp;
	struct xiw_qp *qp = cep->qp;
	int rv;

	mutex_lock(&qp->state_lock);
	if (qp->cep) {
		mutex_unlock(&qp->state_lock);
		xiw_cep_dbg(cep, "QP %u is connected already\n",
			    qp->base.qp_num);
		return -EBUSY;
	}
	/* not linked: a refused QP is left as it is, not moved to ERROR */
	if (qp->state != XIW_QPS_IDLE && qp->state != XIW_QPS_IDLE_RTR) {
		mutex_unlock(&qp->state_lock);
		xiw_cep_dbg(cep, "QP %u is not in INIT or RTR\n",
			    qp->base.qp_num);
		return -EINVAL;
	}
	mutex_unlock(&qp->state_lock);
	xiw_cep_get(cep);
	cep->qp_linked = true;
	rv = xiw_llp_start(qp, cep, p);
	if (rv)
		xiw_cep_dbg(cep, "xiw_llp_start: %d\n", rv);
	else
		cep->llp_started = true;
	return rv;
}

/* Let go of socket, cm_id and QP; CLOSED. Caller holds cep->lock. */
static void xiw_cep_finish(struct xiw_cep *cep, bool abortive)
{
	xiw_cep_cancel_timer(cep);
	xiw_cep_qp_down(cep);
	xiw_cep_sock_release(cep, abortive);
	xiw_cep_drop_listener(cep);
	xiw_cep_set_state(cep, XIW_CEP_CLOSED);
	if (cep->cm_id) {
		struct iw_cm_id *id = cep->cm_id;

		cep->cm_id = NULL;
		if (id->provider_data == cep)
			id->provider_data = NULL;
		id->rem_ref(id);
	}
	if (cep->qp) {
		xiw_qp_put(&cep->qp->base);
		cep->qp = NULL;
	}
	/* the caller holds a reference of its own */
	if (cep->open) {
		cep->open = false;
		xiw_cep_put(cep);
	}
}

/*
 * Close a connection endpoint and report what iwcm expects for its state.
 * @status: CONNECT_REPLY status (active, negotiating) or CLOSE status.
 * @peer: the peer closed or reset (report DISCONNECT before CLOSE).
 */
static void xiw_cep_close(struct xiw_cep *cep, int status, bool peer,
			  bool abortive)
{
	struct iw_cm_id *id = cep->cm_id;

	trace_xiw_cm_close(cep, status, peer, abortive);
	xiw_cep_dbg(cep, "status %d peer %d abortive %d\n", status, peer,
		    abortive);
	switch (cep->state) {
	case XIW_CEP_CONNECTING:
	case XIW_CEP_AWAIT_MPAREP:
		/* the QP stays as it is; the cm_id lives until the upcall */
		if (id)
			id->add_ref(id);
		xiw_cep_finish(cep, abortive);
		xiw_cep_upcall(cep, id, IW_CM_EVENT_CONNECT_REPLY, status,
			       NULL, 0);
		if (id)
			id->rem_ref(id);
		return;
	case XIW_CEP_AWAIT_RTR:
		/* iwcm blocks until ESTABLISHED follows an accept */
		xiw_cep_upcall(cep, id, IW_CM_EVENT_ESTABLISHED, 0, NULL, 0);
		fallthrough;
	case XIW_CEP_RDMA_MODE:
	case XIW_CEP_CLOSING:
		xiw_cep_qp_down(cep);
		if (peer)
			xiw_cep_upcall(cep, id, IW_CM_EVENT_DISCONNECT, status,
				       NULL, 0);
		xiw_cep_upcall(cep, id, IW_CM_EVENT_CLOSE, status, NULL, 0);
		break;
	default:
		break;
	}
	xiw_cep_finish(cep, abortive);
}

/* Negotiation failed on the active side: CONNECT_REPLY with @status. */
static void xiw_cep_fail_connect(struct xiw_cep *cep, int status,
				 bool abortive)
{
	xiw_cep_close(cep, status, false, abortive);
}

/* ------------------------------------------------------------------------
 * Active side
 */
static int xiw_cep_send_request(struct xiw_cep *cep, const void *pdata,
				u16 pd_len)
{
	struct xiw_mpa_v2 v2;
	u8 flags = 0;

	if (mpa_crc)
		flags |= XIW_MPA_FLAG_C;
	cep->sent_crc = flags & XIW_MPA_FLAG_C;
	if (cep->rev == XIW_MPA_REV1)
		return xiw_cep_send_rr(cep, true, flags, NULL, pdata, pd_len);

	flags |= XIW_MPA_FLAG_ENHANCED;
	cep->enhanced = true;
	cep->rtr_offer = 0;
	if (mpa_p2p)
		cep->rtr_offer = XIW_MPA_V2_RTR_WRITE | XIW_MPA_V2_RTR_READ;
	v2.ird = cpu_to_be16(cep->ird | (mpa_p2p ? XIW_MPA_V2_P2P : 0));
	v2.ord = cpu_to_be16(cep->ord | cep->rtr_offer);
	return xiw_cep_send_rr(cep, true, flags, &v2, pdata, pd_len);
}

/* The MPA Reply is in: check it, start the QP, report CONNECT_REPLY. */
static void xiw_cep_proc_reply(struct xiw_cep *cep)
{
	struct xiw_mpa_rr *rep = &cep->mpa;
	struct iw_cm_id *id = cep->cm_id;
	const u8 *pd = cep->pdata;
	u16 pd_len = cep->pd_len;
	bool enh;
	int rv;

	xiw_cep_cancel_timer(cep);
	if (rep->rev < XIW_MPA_REV1 || rep->rev > cep->rev) {
		xiw_cep_dbg(cep, "reply revision %u, requested %u\n", rep->rev,
			    cep->rev);
		goto refused;
	}
	enh = cep->enhanced && rep->rev == XIW_MPA_REV2 &&
	      (rep->flags & XIW_MPA_FLAG_ENHANCED);
	if (enh && pd_len < sizeof(struct xiw_mpa_v2)) {
		xiw_cep_dbg(cep, "enhanced reply with PD_Length %u\n", pd_len);
		goto refused;
	}
	if (rep->flags & XIW_MPA_FLAG_R) {
		if (enh) {
			pd += sizeof(struct xiw_mpa_v2);
			pd_len -= sizeof(struct xiw_mpa_v2);
		}
		xiw_cep_dbg(cep, "rejected by the peer, pd %u\n", pd_len);
		if (id)
			id->add_ref(id);
		xiw_cep_finish(cep, false);
		xiw_cep_upcall(cep, id, IW_CM_EVENT_CONNECT_REPLY, -ECONNRESET,
			       pd, pd_len);
		if (id)
			id->rem_ref(id);
		return;
	}
	if (rep->flags & XIW_MPA_FLAG_M) {
		xiw_cep_dbg(cep, "reply asks for markers\n");
		goto refused;
	}
	if (cep->sent_crc && !(rep->flags & XIW_MPA_FLAG_C) && mpa_crc >= 2) {
		xiw_cep_dbg(cep, "reply without CRC, mpa_crc=2 requires it\n");
		goto refused;
	}
	cep->crc = cep->sent_crc || (rep->flags & XIW_MPA_FLAG_C);
	cep->rev = rep->rev;
	cep->rtr = XIW_RTR_NONE;
	if (enh) {
		const struct xiw_mpa_v2 *v2 = (const void *)pd;
		u16 rird = be16_to_cpu(v2->ird), rord = be16_to_cpu(v2->ord);
		u16 ird = rird & XIW_MPA_V2_IRD_ORD_MASK;
		u16 ord = rord & XIW_MPA_V2_IRD_ORD_MASK;

		/* responder's ORD must fit our IRD: grow IRD up to the max */
		if (ord > cep->ird) {
			if (ord > XIW_MAX_IRD) {
				xiw_cep_dbg(cep, "peer ORD %u > max IRD\n", ord);
				goto refused;
			}
			cep->ird = ord;
		}
		cep->ord = min(cep->ord, ird);
		if (cep->rtr_offer && (rird & XIW_MPA_V2_P2P)) {
			if (rord & cep->rtr_offer & XIW_MPA_V2_RTR_WRITE) {
				cep->rtr = XIW_RTR_WRITE;
			} else if (rord & cep->rtr_offer & XIW_MPA_V2_RTR_READ) {
				cep->rtr = XIW_RTR_READ;
			} else {
				xiw_cep_dbg(cep, "no matching RTR (%#x)\n",
					    rord);
				goto refused;
			}
		}
		pd += sizeof(*v2);
		pd_len -= sizeof(*v2);
	}
	cep->enhanced = enh;
	cep->p2p = cep->rtr != XIW_RTR_NONE;

	rv = xiw_cep_qp_up(cep, true);
	if (rv) {
		xiw_cep_fail_connect(cep, rv, true);
		return;
	}
	xiw_cep_set_state(cep, XIW_CEP_RDMA_MODE);
	trace_xiw_cm_mpa_done(cep);
	xiw_cep_dbg(cep, "connected: rev %u crc %d ird %u ord %u rtr %d\n",
		    cep->rev, cep->crc, cep->ird, cep->ord, cep->rtr);
	xiw_cep_upcall(cep, id, IW_CM_EVENT_CONNECT_REPLY, 0, pd, pd_len);
	return;

refused:
	xiw_cep_fail_connect(cep, -ECONNREFUSED, true);
}

/* ------------------------------------------------------------------------
 * Passive side
 */
static void xiw_cep_refuse_request(struct xiw_cep *cep)
{
	/* a reply the peer can parse: its revision if valid, else 1 */
	if (cep->rev < XIW_MPA_REV1 || cep->rev > XIW_MPA_REV2)
		cep->rev = XIW_MPA_REV1;
	xiw_cep_send_reject(cep, NULL, 0);
	xiw_cep_close(cep, -ECONNREFUSED, false, false);
}

/* The MPA Request is in: check it and report CONNECT_REQUEST. */
static void xiw_cep_proc_request(struct xiw_cep *cep)
{
	struct xiw_mpa_rr *req = &cep->mpa;
	struct xiw_cep *l = cep->listener;
	const u8 *pd = cep->pdata;
	u16 pd_len = cep->pd_len;
	int rv;

	xiw_cep_cancel_timer(cep);
	cep->rev = req->rev;
	if (req->rev < XIW_MPA_REV1 || req->rev > XIW_MPA_REV2) {
		xiw_cep_dbg(cep, "request revision %u unsupported\n",
			    req->rev);
		goto refuse;
	}
	if (req->rev == XIW_MPA_REV2 && (req->flags & XIW_MPA_FLAG_ENHANCED)) {
		const struct xiw_mpa_v2 *v2 = (const void *)pd;
		u16 rird, rord;

		if (pd_len < sizeof(*v2)) {
			xiw_cep_dbg(cep, "enhanced request, PD_Length %u\n",
				    pd_len);
			goto refuse;
		}
		cep->enhanced = true;
		rird = be16_to_cpu(v2->ird);
		rord = be16_to_cpu(v2->ord);
		/* peer's ORD is our IRD to give, its IRD bounds our ORD */
		cep->ird = min_t(u16, rord & XIW_MPA_V2_IRD_ORD_MASK,
				 XIW_MAX_IRD);
		cep->ord = min_t(u16, rird & XIW_MPA_V2_IRD_ORD_MASK,
				 XIW_MAX_ORD);
		cep->rtr = XIW_RTR_NONE;
		if (rird & XIW_MPA_V2_P2P) {
			cep->p2p = true;
			if (rord & XIW_MPA_V2_RTR_WRITE)
				cep->rtr = XIW_RTR_WRITE;
			else if (rord & XIW_MPA_V2_RTR_READ)
				cep->rtr = XIW_RTR_READ;
			else if (rird & XIW_MPA_V2_RTR_SEND)
				cep->rtr = XIW_RTR_SEND;
			else
				cep->rtr = XIW_RTR_WRITE;	/* as siw */
		}
		pd += sizeof(*v2);
		pd_len -= sizeof(*v2);
	} else {
		/* no negotiation: the ULP's values go on the wire as is */
		cep->ird = XIW_MAX_IRD;
		cep->ord = XIW_MAX_ORD;
	}
	/* after the block: a reject carries one if the request did */
	if (req->flags & XIW_MPA_FLAG_M) {
		xiw_cep_dbg(cep, "request asks for markers\n");
		goto refuse;
	}
	/* RFC 5044: CRC is used if either side asks for it */
	cep->crc = (req->flags & XIW_MPA_FLAG_C) || mpa_crc;

	xiw_cep_set_state(cep, XIW_CEP_RECVD_MPAREQ);
	/* iwcm's provider_data of the new cm_id */
	xiw_cep_get(cep);
	cep->pd_ref = true;
	rv = -ENOTCONN;
	if (l) {
		mutex_lock_nested(&l->lock, SINGLE_DEPTH_NESTING);
		if (l->state == XIW_CEP_LISTEN && l->cm_id)
			rv = xiw_cep_upcall(cep, l->cm_id,
					    IW_CM_EVENT_CONNECT_REQUEST, 0, pd,
					    pd_len);
		mutex_unlock(&l->lock);
	}
	/* reported (or not): the listener is no longer needed */
	xiw_cep_drop_listener(cep);
	if (!rv) {
		/* iwcm drops the event if the listener goes meanwhile */
		xiw_cep_arm_timer(cep, mpa_timeout_accept_ms);
		return;
	}
	xiw_cep_dbg(cep, "CONNECT_REQUEST not delivered: %d\n", rv);
	cep->pd_ref = false;
	xiw_cep_put(cep);
	xiw_cep_send_reject(cep, NULL, 0);
	xiw_cep_close(cep, rv, false, false);
	return;

refuse:
	xiw_cep_refuse_request(cep);
}

/* ------------------------------------------------------------------------
 * Work
 */
static bool xiw_sk_peer_gone(struct sock *sk, int *status)
{
	int st = READ_ONCE(sk->sk_state);

	if (READ_ONCE(sk->sk_err)) {
		*status = -READ_ONCE(sk->sk_err);
		return true;
	}
	*status = 0;
	if (st == TCP_CLOSE)
		*status = -ECONNRESET;
	return st == TCP_CLOSE || st == TCP_CLOSE_WAIT ||
	       st == TCP_LAST_ACK || st == TCP_TIME_WAIT ||
	       st == TCP_CLOSING ||
	       (READ_ONCE(sk->sk_shutdown) & RCV_SHUTDOWN);
}

/*
 * The listener a new connection on @l's socket belongs to, with a
 * reference: @l itself for a specific address, else the first listener of
 * the shared socket (all of them are the same device's, bound to its
 * netdev). A listener of an rdma_cm namespace that does not have the
 * local address refuses the request (iwcm rejects it).
 */
static struct xiw_cep *xiw_cep_route(struct xiw_cep *l)
{
	struct xiw_cep *sub;

	if (l->cm_id) {
		xiw_cep_get(l);
		return l;
	}
	sub = list_first_entry_or_null(&l->subs, struct xiw_cep, sub);
	if (sub)
		xiw_cep_get(sub);
	return sub;
}

static void xiw_cep_accept_conns(struct xiw_cep *l)
{
	struct xiw_cep *cep, *target;
	struct socket *ns;

	while (l->state == XIW_CEP_LISTEN && l->sock) {
		if (kernel_accept(l->sock, &ns, O_NONBLOCK))
			return;
		target = xiw_cep_route(l);
		cep = target ? xiw_cep_alloc(target->xdev, NULL) : NULL;
		if (!cep) {
			if (target) {
				xiw_cep_dbg(l, "no memory for a new connection\n");
				xiw_cep_put(target);
			} else {
				xiw_cep_dbg(l, "no listener left\n");
			}
			sock_no_linger(ns->sk);
			sock_release(ns);
			continue;
		}
		xiw_cm_sock_opts(ns->sk);
		if (target != l)
			mutex_lock_nested(&target->lock, SINGLE_DEPTH_NESTING);
		mutex_lock_nested(&cep->lock, SINGLE_DEPTH_NESTING + 1);
		cep->listener = target;	/* the reference from routing */
		list_add_tail(&cep->child, &target->children);
		xiw_cep_set_state(cep, XIW_CEP_AWAIT_MPAREQ);
		xiw_cep_sock_attach(cep, ns, l);
		cep->open = true;	/* the allocation's reference */
		xiw_cep_arm_timer(cep, mpa_timeout_resp_ms);
		xiw_cep_dbg(cep, "accepted\n");
		mutex_unlock(&cep->lock);
		if (target != l)
			mutex_unlock(&target->lock);
		/* anything that arrived before adoption */
		xiw_cep_post(cep, XIW_CEP_EV_DATA);
	}
}

static void xiw_cep_timed_out(struct xiw_cep *cep)
{
	xiw_cep_dbg(cep, "timeout\n");
	switch (cep->state) {
	case XIW_CEP_CONNECTING:
	case XIW_CEP_AWAIT_MPAREP:
		xiw_cep_fail_connect(cep, -ETIMEDOUT, true);
		break;
	case XIW_CEP_AWAIT_MPAREQ:
	case XIW_CEP_AWAIT_RTR:
		xiw_cep_close(cep, -ETIMEDOUT, false, true);
		break;
	case XIW_CEP_RECVD_MPAREQ:
		/*
		 * Neither accepted nor rejected (or iwcm dropped the
		 * request): reject it. A late accept or reject finds the
		 * endpoint closed; the provider_data reference stays until
		 * then (or until module unload if it never comes).
		 */
		xiw_cep_dbg(cep, "not accepted within %u ms: rejected\n",
			    mpa_timeout_accept_ms);
		xiw_cep_send_reject(cep, NULL, 0);
		xiw_cep_set_state(cep, XIW_CEP_CLOSED);
		xiw_cep_finish(cep, false);
		break;
	case XIW_CEP_CLOSING:
		/* the peer never sent its FIN */
		xiw_cep_close(cep, 0, false, true);
		break;
	default:
		break;
	}
}

static void xiw_cep_process(struct xiw_cep *cep, unsigned long ev)
{
	struct sock *sk;
	int status, rv;

	if (cep->state == XIW_CEP_LISTEN) {
		if (ev & BIT(XIW_CEP_EV_ACCEPT))
			xiw_cep_accept_conns(cep);
		return;
	}
	if (cep->state == XIW_CEP_CLOSED || cep->state == XIW_CEP_IDLE)
		return;

	if (ev & BIT(XIW_CEP_EV_ABORT)) {
		xiw_cep_close(cep, cep->state == XIW_CEP_AWAIT_MPAREQ ?
			      -ECONNABORTED : 0, false, true);
		return;
	}
	if (ev & BIT(XIW_CEP_EV_LLP_ERR)) {
		xiw_cep_dbg(cep, "data path error %d\n",
			    READ_ONCE(cep->llp_reason));
		/*
		 * Graceful (FIN after what TCP holds, the Terminate
		 * included) unless the data path gave up on a peer that
		 * does not read (-ETIMEDOUT): then RST, as a FIN would wait
		 * behind data that never leaves.
		 */
		xiw_cep_close(cep, READ_ONCE(cep->llp_reason), true,
			      READ_ONCE(cep->llp_reason) == -ETIMEDOUT);
		return;
	}
	sk = cep->sock ? cep->sock->sk : NULL;

	if ((ev & BIT(XIW_CEP_EV_STATE)) && cep->state == XIW_CEP_CONNECTING &&
	    sk && READ_ONCE(sk->sk_state) == TCP_ESTABLISHED) {
		xiw_cep_set_state(cep, XIW_CEP_AWAIT_MPAREP);
		rv = xiw_cep_send_request(cep, cep->pdata, cep->pd_len);
		cep->pd_len = 0;
		if (rv) {
			xiw_cep_fail_connect(cep, -ECONNRESET, true);
			return;
		}
		ev |= BIT(XIW_CEP_EV_DATA);
	}

	if ((ev & (BIT(XIW_CEP_EV_DATA) | BIT(XIW_CEP_EV_STATE))) &&
	    (cep->state == XIW_CEP_AWAIT_MPAREQ ||
	     cep->state == XIW_CEP_AWAIT_MPAREP)) {
		bool request = cep->state == XIW_CEP_AWAIT_MPAREQ;

		rv = xiw_cep_recv_rr(cep, request);
		if (!rv) {
			if (request)
				xiw_cep_proc_request(cep);
			else
				xiw_cep_proc_reply(cep);
		} else if (rv != -EAGAIN) {
			xiw_cep_dbg(cep, "bad or truncated MPA %s: %d\n",
				    request ? "request" : "reply", rv);
			if (request)
				xiw_cep_close(cep, rv, false, true);
			else
				xiw_cep_fail_connect(cep, rv == -ECONNRESET ?
						     -ECONNRESET :
						     -ECONNREFUSED, true);
			return;
		}
	}

	if ((ev & BIT(XIW_CEP_EV_RTR)) && cep->state == XIW_CEP_AWAIT_RTR) {
		xiw_cep_cancel_timer(cep);
		xiw_cep_set_state(cep, XIW_CEP_RDMA_MODE);
		xiw_cep_upcall(cep, cep->cm_id, IW_CM_EVENT_ESTABLISHED, 0,
			       NULL, 0);
	}

	if ((ev & BIT(XIW_CEP_EV_DISC)) &&
	    (cep->state == XIW_CEP_RDMA_MODE ||
	     cep->state == XIW_CEP_AWAIT_RTR)) {
		if (cep->state == XIW_CEP_AWAIT_RTR)
			xiw_cep_upcall(cep, cep->cm_id,
				       IW_CM_EVENT_ESTABLISHED, 0, NULL, 0);
		xiw_cep_dbg(cep, "graceful close: FIN\n");
		/* the data path is quiet before the FIN goes out */
		xiw_cep_qp_down(cep);
		xiw_cep_set_state(cep, XIW_CEP_CLOSING);
		kernel_sock_shutdown(cep->sock, SHUT_WR);
		xiw_cep_arm_timer(cep, mpa_timeout_resp_ms);
		ev |= BIT(XIW_CEP_EV_STATE);
	}

	if ((ev & BIT(XIW_CEP_EV_TIMEOUT)) && cep->state != XIW_CEP_CLOSED) {
		xiw_cep_timed_out(cep);
		return;
	}

	/* Peer FIN/RST (or socket error) in any state still open. */
	sk = cep->sock ? cep->sock->sk : NULL;
	if (!sk || cep->state == XIW_CEP_CLOSED || !xiw_sk_peer_gone(sk, &status))
		return;
	switch (cep->state) {
	case XIW_CEP_CONNECTING:
		xiw_cep_dbg(cep, "connect failed: %d\n", status);
		xiw_cep_fail_connect(cep, -ECONNREFUSED, false);
		break;
	case XIW_CEP_AWAIT_MPAREP:
		xiw_cep_fail_connect(cep, -ECONNRESET, false);
		break;
	case XIW_CEP_RECVD_MPAREQ:
		/* accept/reject will find it closed */
		xiw_cep_finish(cep, false);
		break;
	case XIW_CEP_CLOSING:
		xiw_cep_close(cep, 0, false, false);
		break;
	default:
		xiw_cep_close(cep, status, true, status != 0);
		break;
	}
}

static void xiw_cep_work(struct work_struct *w)
{
	struct xiw_cep *cep = container_of(w, struct xiw_cep, work);
	unsigned long ev;

	mutex_lock(&cep->lock);
	ev = xchg(&cep->events, 0);
	xiw_cep_process(cep, ev);
	mutex_unlock(&cep->lock);
	xiw_cep_put(cep);
}

static void xiw_cep_timeout(struct work_struct *w)
{
	struct xiw_cep *cep = container_of(to_delayed_work(w), struct xiw_cep,
					   timer);

	mutex_lock(&cep->lock);
	xiw_cep_process(cep, BIT(XIW_CEP_EV_TIMEOUT));
	mutex_unlock(&cep->lock);
	xiw_cep_put(cep);
}

/* ------------------------------------------------------------------------
 * Data path upcalls (any context)
 */
void xiw_cm_rtr_received(struct xiw_cep *cep)
{
	xiw_cep_post(cep, XIW_CEP_EV_RTR);
}

void xiw_cm_llp_error(struct xiw_cep *cep, int reason)
{
	WRITE_ONCE(cep->llp_reason, reason);
	xiw_cep_post(cep, XIW_CEP_EV_LLP_ERR);
}

/* Called with qp->state_lock held and qp->cep == @cep. */
void xiw_cm_qp_disconnect(struct xiw_cep *cep, bool abortive)
{
	xiw_cep_post(cep, abortive ? XIW_CEP_EV_ABORT : XIW_CEP_EV_DISC);
}

/* ------------------------------------------------------------------------
 * iw_cm device ops
 */
/*
 * A TCP socket in the network namespace of the device's netdev (where its
 * addresses and routes are), not the caller's. Like a user socket it holds
 * a reference of the namespace: a kernel socket does not, and a namespace
 * deleted under an xiw listener or connection would be dismantled with the
 * socket still in its tables. The namespace lives until xiw's last socket
 * in it is released (connections close within the MPA timeouts once their
 * QPs and cm_ids are gone). Accepted sockets inherit the reference.
 */
static int xiw_sock_create(struct xiw_device *xdev, int family,
			   struct socket **sock)
{
	struct net_device *ndev = ib_device_get_netdev(&xdev->ibdev, XIW_PORT);
	int rv;

	if (!ndev)
		return -ENODEV;
	rv = sock_create_kern(dev_net(ndev), family, SOCK_STREAM, IPPROTO_TCP,
			      sock);
	dev_put(ndev);
	if (!rv)
		sk_net_refcnt_upgrade((*sock)->sk);
	return rv;
}

static u16 xiw_addr_port(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)ss)->sin_port);
	return ntohs(((struct sockaddr_in6 *)ss)->sin6_port);
}

static int xiw_addr_len(const struct sockaddr_storage *ss)
{
	switch (ss->ss_family) {
	case AF_INET:
		return sizeof(struct sockaddr_in);
	case AF_INET6:
		return sizeof(struct sockaddr_in6);
	default:
		return -EAFNOSUPPORT;
	}
}

/*
 * The rdma_cm id behind @id, or NULL if @id is not rdma_cm's. rdma_cm
 * creates the iw_cm_id of every connection with its cma_iw_handler
 * (cma_connect_iw(); for a request iw_conn_req_handler() sets it before
 * the ULP sees the request), and its context is rdma_cm's private id
 * struct, whose first member is the rdma_cm_id (cma_priv.h, unchanged
 * since 2.6.20). ib_core gives a driver no other way to reach it; the
 * handler is recognised by its symbol name. Any other handler belongs to
 * a kernel module using iw_cm directly: user space reaches iw_cm only
 * through rdma_cm (ucma). Without kallsyms every id is taken for
 * rdma_cm's (the only in-tree user of iw_cm).
 */
static struct rdma_cm_id *xiw_cm_rdma_id(struct iw_cm_id *id)
{
	static const char name[] = "cma_iw_handler";
	char sym[KSYM_SYMBOL_LEN];
	size_t n = sizeof(name) - 1;

	if (!IS_ENABLED(CONFIG_KALLSYMS))
		return id->context;
	sprint_symbol_no_offset(sym, (unsigned long)id->cm_handler);
	/* "cma_iw_handler [rdma_cm]", built in, or an LTO ".suffix" */
	if (strncmp(sym, name, n) ||
	    (sym[n] && sym[n] != ' ' && sym[n] != '.'))
		return NULL;
	return id->context;
}

/*
 * May the connect or accept of @id use @qp (found by the QP number it was
 * given)? rdma_cm passes a user process's number unchecked (ucma, no QP
 * bound to its id) and a ULP's own (rdma_create_qp()). So:
 *  - a user QP only for the process that created it
 *    (xiw_qp_caller_owns());
 *  - a kernel QP only for the rdma_cm id it is bound to (id->qp), or for
 *    a kernel iw_cm consumer that does not use rdma_cm. A ucma id never
 *    has a QP bound, so no user process can name a kernel QP.
 * 0 or -EINVAL; the reason is a debug message. See
 * Documentation/security.md, section 3.10.
 */
static int xiw_cm_check_qp(struct iw_cm_id *id, struct xiw_qp *qp,
			   const char *op)
{
	struct rdma_cm_id *rid;
	struct ib_qp *bound;

	if (qp->user) {
		if (xiw_qp_caller_owns(qp))
			return 0;
		xiw_dbg(id->device, "%s: QP %u belongs to another process\n",
			op, qp->base.qp_num);
		return -EINVAL;
	}
	rid = xiw_cm_rdma_id(id);
	if (!rid)
		return 0;
	/* set by the ULP's rdma_create_qp() before its connect/accept */
	bound = READ_ONCE(rid->qp);
	if (bound == &qp->base)
		return 0;
	xiw_dbg(id->device,
		"%s: QP %u is a kernel QP not bound to this rdma_cm id (%s)\n",
		op, qp->base.qp_num,
		bound ? "it has another QP" : "it has none: user space?");
	return -EINVAL;
}

/*
 * The active side's socket, bound to the address rdma_cm chose for the
 * connection (m_local_addr) or, with @any_port, to its IP address and a
 * port TCP picks.
 *
 * rdma_cm picks a source port in its own port space without asking TCP.
 * The port may be a TCP socket's (a listener, a user-space connection:
 * bind fails with -EADDRINUSE), or the 4-tuple may still be in TIME_WAIT
 * from an earlier connection between the same ends (connect fails with
 * -EADDRNOTAVAIL). xiw_connect() then takes a port TCP grants, as an
 * iwpmd port mapping would: the connect reply reports the address on the
 * wire (xiw_cep_addrs()), which iw_cm records as the mapped m_local_addr
 * while rdma_cm keeps the port it chose.
 */
static int xiw_cm_active_sock(struct iw_cm_id *id, bool any_port,
			      struct socket **sockp)
{
	struct sockaddr_storage addr = id->m_local_addr;
	int alen = xiw_addr_len(&addr), rv;
	struct socket *sock;

	if (any_port) {
		if (addr.ss_family == AF_INET)
			((struct sockaddr_in *)&addr)->sin_port = 0;
		else
			((struct sockaddr_in6 *)&addr)->sin6_port = 0;
	}
	rv = xiw_sock_create(to_xiw_dev(id->device), addr.ss_family, &sock);
	if (rv)
		return rv;
	sock_set_reuseaddr(sock->sk);
	if (addr.ss_family == AF_INET6 && id->afonly) {
		rv = ip6_sock_set_v6only(sock->sk);
		if (rv)
			goto err;
	}
	rv = kernel_bind(sock, (struct sockaddr *)&addr, alen);
	if (rv) {
		xiw_dbg(id->device, "bind %pISpc: %d\n", &addr, rv);
		goto err;
	}
	xiw_cm_sock_opts(sock->sk);
	*sockp = sock;
	return 0;
err:
	sock_release(sock);
	return rv;
}

int xiw_connect(struct iw_cm_id *id, struct iw_cm_conn_param *param)
{
	struct xiw_device *xdev = to_xiw_dev(id->device);
	struct sockaddr_storage *laddr = &id->m_local_addr;
	struct sockaddr_storage *raddr = &id->m_remote_addr;
	struct xiw_qp *qp;
	struct ib_qp *ibqp;
	struct xiw_cep *cep;
	struct socket *sock;
	int alen = xiw_addr_len(raddr), rv;

	if (alen < 0 || laddr->ss_family != raddr->ss_family) {
		xiw_dbg(id->device, "address family %u/%u unsupported\n",
			laddr->ss_family, raddr->ss_family);
		return -EAFNOSUPPORT;
	}
	if (param->private_data_len > XIW_IWCM_PD_MAX ||
	    param->ird > XIW_MAX_IRD || param->ord > XIW_MAX_ORD) {
		xiw_dbg(id->device, "pd %u ird %u ord %u out of range\n",
			param->private_data_len, param->ird, param->ord);
		return -EINVAL;
	}
	/* the lookup's reference becomes the CEP's (cep->qp) */
	qp = xiw_qp_lookup(xdev, param->qpn);
	if (!qp)
		return -EINVAL;
	ibqp = &qp->base;
	rv = xiw_cm_check_qp(id, qp, "connect");
	if (rv)
		goto err_qp;

	cep = xiw_cep_alloc(xdev, qp);
	if (!cep) {
		rv = -ENOMEM;
		goto err_qp;
	}
	rv = xiw_cm_active_sock(id, false, &sock);
	if (rv == -EADDRINUSE) {
		xiw_dbg(id->device, "port of %pISpc taken in TCP: TCP picks one\n",
			laddr);
		rv = xiw_cm_active_sock(id, true, &sock);
	}
	if (rv)
		goto err_cep;

	mutex_lock(&cep->lock);
	cep->active = true;
	cep->rev = mpa_rev == XIW_MPA_REV1 ? XIW_MPA_REV1 : XIW_MPA_REV2;
	cep->ird = param->ird;
	cep->ord = param->ord;
	cep->pd_len = param->private_data_len;
	if (cep->pd_len)
		memcpy(cep->pdata, param->private_data, cep->pd_len);
	cep->qp = qp;
	id->add_ref(id);
	cep->cm_id = id;
	id->provider_data = cep;
	xiw_cep_set_state(cep, XIW_CEP_CONNECTING);
	cep->open = true;	/* the allocation's reference */
	xiw_cep_get(cep);	/* ours, until we return */
	xiw_cep_sock_attach(cep, sock, NULL);
	xiw_cep_arm_timer(cep, mpa_timeout_init_ms);

	rv = kernel_connect(sock, (struct sockaddr *)raddr, alen, O_NONBLOCK);
	if (rv == -EADDRNOTAVAIL && xiw_addr_port(laddr)) {
		/* the 4-tuple is in TIME_WAIT: the same with a port TCP picks */
		xiw_cep_dbg(cep, "%pISpc -> %pISpc in use: TCP picks a port\n",
			    laddr, raddr);
		xiw_cep_sock_release(cep, false);
		rv = xiw_cm_active_sock(id, true, &sock);
		if (!rv) {
			xiw_cep_sock_attach(cep, sock, NULL);
			rv = kernel_connect(sock, (struct sockaddr *)raddr,
					    alen, O_NONBLOCK);
		}
	}
	if (rv && rv != -EINPROGRESS) {
		xiw_cep_dbg(cep, "connect %pISpc -> %pISpc: %d\n", laddr, raddr,
			    rv);
		/* no event may follow a failed iw_connect */
		xiw_cep_finish(cep, true);
		mutex_unlock(&cep->lock);
		xiw_cep_put(cep);
		return rv;
	}
	xiw_cep_dbg(cep, "%pISpc -> %pISpc, qp %u, ird %u ord %u pd %u\n",
		    laddr, raddr, ibqp->qp_num, cep->ird, cep->ord,
		    cep->pd_len);
	mutex_unlock(&cep->lock);
	/* connected already (loopback) or not: look at the state once */
	xiw_cep_post(cep, XIW_CEP_EV_STATE);
	xiw_cep_put(cep);
	return 0;

err_cep:
	xiw_cep_put(cep);
err_qp:
	xiw_qp_put(ibqp);
	return rv;
}

/* iwcm's provider_data of a passive cm_id: reference ends here. */
static void xiw_cep_drop_pd_ref(struct xiw_cep *cep, struct iw_cm_id *id)
{
	if (id->provider_data == cep)
		id->provider_data = NULL;
	if (cep->pd_ref) {
		cep->pd_ref = false;
		xiw_cep_put(cep);
	}
}

int xiw_accept(struct iw_cm_id *id, struct iw_cm_conn_param *param)
{
	struct xiw_cep *cep = id->provider_data;
	struct xiw_mpa_v2 v2;
	struct xiw_qp *qp;
	u8 flags = 0;
	int rv;

	if (!cep)
		return -EINVAL;
	xiw_cep_get(cep);
	mutex_lock(&cep->lock);
	if (cep->state != XIW_CEP_RECVD_MPAREQ) {
		xiw_cep_dbg(cep, "connection gone\n");
		rv = -ECONNRESET;
		goto out;
	}
	if (param->private_data_len > XIW_IWCM_PD_MAX ||
	    param->ird > XIW_MAX_IRD || param->ord > XIW_MAX_ORD) {
		xiw_cep_dbg(cep, "pd %u ird %u ord %u out of range\n",
			    param->private_data_len, param->ird, param->ord);
		rv = -EINVAL;
		goto abort;
	}
	/* the lookup's reference becomes the CEP's (cep->qp) */
	qp = xiw_qp_lookup(to_xiw_dev(id->device), param->qpn);
	if (!qp) {
		rv = -EINVAL;
		goto abort;
	}
	rv = xiw_cm_check_qp(id, qp, "accept");
	if (rv) {
		xiw_qp_put(&qp->base);
		goto abort;
	}
	if (cep->enhanced) {
		/* our ORD may not exceed the initiator's IRD */
		cep->ord = min_t(u16, param->ord, cep->ord);
		cep->ird = param->ird;
	} else {
		cep->ord = param->ord;
		cep->ird = param->ird;
	}
	cep->qp = qp;
	id->add_ref(id);
	cep->cm_id = id;

	/* RTS before the reply: the initiator's first FPDU may follow it */
	rv = xiw_cep_qp_up(cep, false);
	if (rv)
		goto abort;
	if (cep->crc)
		flags |= XIW_MPA_FLAG_C;
	if (cep->enhanced) {
		flags |= XIW_MPA_FLAG_ENHANCED;
		v2.ird = cpu_to_be16(cep->ird | (cep->p2p ? XIW_MPA_V2_P2P : 0) |
				     (cep->rtr == XIW_RTR_SEND ?
				      XIW_MPA_V2_RTR_SEND : 0));
		v2.ord = cpu_to_be16(cep->ord |
				     (cep->rtr == XIW_RTR_WRITE ?
				      XIW_MPA_V2_RTR_WRITE : 0) |
				     (cep->rtr == XIW_RTR_READ ?
				      XIW_MPA_V2_RTR_READ : 0));
	}
	rv = xiw_cep_send_rr(cep, false, flags, cep->enhanced ? &v2 : NULL,
			     param->private_data, param->private_data_len);
	if (rv)
		goto abort;
	trace_xiw_cm_mpa_done(cep);
	xiw_cep_dbg(cep, "accepted: rev %u crc %d ird %u ord %u rtr %d\n",
		    cep->rev, cep->crc, cep->ird, cep->ord, cep->rtr);
	if (cep->p2p) {
		xiw_cep_set_state(cep, XIW_CEP_AWAIT_RTR);
		xiw_cep_arm_timer(cep, mpa_timeout_resp_ms);
	} else {
		xiw_cep_cancel_timer(cep);
		xiw_cep_set_state(cep, XIW_CEP_RDMA_MODE);
		xiw_cep_upcall(cep, id, IW_CM_EVENT_ESTABLISHED, 0, NULL, 0);
	}
	rv = 0;
	goto out;

abort:
	/* no event may follow a failed iw_accept */
	xiw_cep_set_state(cep, XIW_CEP_CLOSED);
	xiw_cep_finish(cep, true);
out:
	xiw_cep_drop_pd_ref(cep, id);
	mutex_unlock(&cep->lock);
	xiw_cep_put(cep);
	return rv;
}

int xiw_reject(struct iw_cm_id *id, const void *pdata, u8 pd_len)
{
	struct xiw_cep *cep = id->provider_data;
	int rv = 0;

	if (!cep)
		return -EINVAL;
	xiw_cep_get(cep);
	mutex_lock(&cep->lock);
	if (cep->state == XIW_CEP_RECVD_MPAREQ) {
		xiw_cep_dbg(cep, "reject, pd %u\n", pd_len);
		xiw_stat_add(to_xiw_dev(id->device), XIW_STAT_MPA_REJECTS, 1);
		rv = xiw_cep_send_reject(cep, pdata, pd_len);
		xiw_cep_set_state(cep, XIW_CEP_CLOSED);
		/* FIN after the reply */
		xiw_cep_finish(cep, false);
	} else {
		xiw_cep_dbg(cep, "connection gone\n");
	}
	xiw_cep_drop_pd_ref(cep, id);
	mutex_unlock(&cep->lock);
	xiw_cep_put(cep);
	return rv;
}

static bool xiw_addr_any(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ipv4_is_zeronet(((struct sockaddr_in *)ss)->sin_addr.s_addr);
	return ipv6_addr_any(&((struct sockaddr_in6 *)ss)->sin6_addr);
}

/*
 * A listening socket for @laddr in a new CEP (state LISTEN); @ifindex:
 * bound to that netdev (0: not bound).
 */
static struct xiw_cep *xiw_cep_listen_sock(struct xiw_device *xdev,
					   struct sockaddr_storage *laddr,
					   int ifindex, bool afonly,
					   int backlog)
{
	int alen = xiw_addr_len(laddr), rv;
	struct xiw_cep *cep;
	struct socket *sock;

	if (alen < 0)
		return ERR_PTR(alen);
	cep = xiw_cep_alloc(xdev, NULL);
	if (!cep)
		return ERR_PTR(-ENOMEM);
	rv = xiw_sock_create(xdev, laddr->ss_family, &sock);
	if (rv)
		goto err_cep;
	sock_set_reuseaddr(sock->sk);
	if (laddr->ss_family == AF_INET6 && afonly) {
		rv = ip6_sock_set_v6only(sock->sk);
		if (rv)
			goto err_sock;
	}
	if (ifindex) {
		rv = sock_bindtoindex(sock->sk, ifindex, true);
		if (rv)
			goto err_sock;
	}
	rv = kernel_bind(sock, (struct sockaddr *)laddr, alen);
	if (rv) {
		xiw_dbg(&xdev->ibdev, "bind %pISpc dev %d: %d\n", laddr, ifindex,
			rv);
		goto err_sock;
	}
	mutex_lock(&cep->lock);
	xiw_cep_set_state(cep, XIW_CEP_LISTEN);
	xiw_cep_sock_attach(cep, sock, NULL);
	rv = kernel_listen(sock, backlog);
	if (rv) {
		xiw_cep_dbg(cep, "listen %pISpc: %d\n", laddr, rv);
		xiw_cep_finish(cep, false);
		mutex_unlock(&cep->lock);
		xiw_cep_put(cep);
		return ERR_PTR(rv);
	}
	mutex_unlock(&cep->lock);
	return cep;

err_sock:
	sock_release(sock);
err_cep:
	xiw_cep_put(cep);
	return ERR_PTR(rv);
}

/* Close a listening CEP's socket and the connections not yet reported. */
static void xiw_cep_unlisten(struct xiw_cep *cep)
{
	struct xiw_cep *c;

	mutex_lock(&cep->lock);
	xiw_cep_sock_release(cep, false);
	xiw_cep_set_state(cep, XIW_CEP_CLOSED);
	list_for_each_entry(c, &cep->children, child)
		xiw_cep_post(c, XIW_CEP_EV_ABORT);
	mutex_unlock(&cep->lock);
}

/*
 * A wildcard listen of @id joins the socket of its device's netdev for its
 * (family, IPv6-only, port), created by the first such listen: bound to
 * the wildcard address and to the netdev (SO_BINDTODEVICE, as siw does).
 *
 * Why bound to the netdev: rdma_cm turns a wildcard listen into one
 * listen per RDMA device, and fails the whole listen when one device
 * fails. A socket on the wildcard address of no device collides with any
 * other stack's socket on that port that is bound to a netdev (siw binds
 * its wildcard listeners so), whichever comes second gets EADDRINUSE, and
 * every wildcard server of the host (rping -s, nvmet on 0.0.0.0, perftest)
 * fails on every RDMA device. Sockets bound to different netdevs never
 * collide. Bound to the wildcard address (not to each address of the
 * netdev): addresses added later are served with no notifier, IPv4 and
 * IPv6 alike. SO_REUSEADDR only lets a listener come back
 * over TIME_WAIT connections of its port; two listeners on one netdev and
 * port still collide (two iWARP stacks on one netdev cannot both take the
 * connections of a port), and SO_REUSEPORT is not used: it would hash
 * connections between such stacks at random.
 *
 * The price: the kernel answers a SYN on a bound listener through its
 * netdev, so a client on another local netdev (its packets through lo)
 * gets no answer from a wildcard listener. A listen on a specific address
 * uses a socket bound to no netdev and serves such clients.
 */
static int xiw_listen_shared(struct iw_cm_id *id, struct xiw_cep *cep,
			     int backlog)
{
	struct xiw_device *xdev = to_xiw_dev(id->device);
	struct sockaddr_storage *laddr = &id->m_local_addr;
	struct net_device *ndev;
	struct xiw_cep *sh;
	struct net *net;
	int ifindex;

	ndev = ib_device_get_netdev(&xdev->ibdev, XIW_PORT);
	if (!ndev)
		return -ENODEV;
	net = dev_net(ndev);
	ifindex = ndev->ifindex;
	dev_put(ndev);

	mutex_lock(&xiw_cm_shared_mutex);
	list_for_each_entry(sh, &xiw_cm_shared, shared_entry) {
		if (net_eq(sh->net, net) && sh->ifindex == ifindex &&
		    sh->laddr.ss_family == laddr->ss_family &&
		    sh->afonly == !!id->afonly &&
		    xiw_addr_port(&sh->laddr) == xiw_addr_port(laddr))
			goto found;
	}
	sh = xiw_cep_listen_sock(xdev, laddr, ifindex, id->afonly, backlog);
	if (IS_ERR(sh)) {
		mutex_unlock(&xiw_cm_shared_mutex);
		return PTR_ERR(sh);
	}
	sh->net = net;
	sh->ifindex = ifindex;
	sh->afonly = id->afonly;
	sh->laddr = *laddr;
	list_add_tail(&sh->shared_entry, &xiw_cm_shared);
	xiw_cep_dbg(sh, "shared socket for %pISpc dev %d\n", laddr, ifindex);
found:
	mutex_lock(&sh->lock);
	list_add_tail(&cep->sub, &sh->subs);
	xiw_cep_get(sh);
	cep->shared = sh;
	mutex_unlock(&sh->lock);
	mutex_unlock(&xiw_cm_shared_mutex);
	return 0;
}

static void xiw_unlisten_shared(struct xiw_cep *cep)
{
	struct xiw_cep *sh = cep->shared;
	bool last;

	mutex_lock(&xiw_cm_shared_mutex);
	mutex_lock(&sh->lock);
	list_del_init(&cep->sub);
	last = list_empty(&sh->subs);
	if (last)
		list_del_init(&sh->shared_entry);
	mutex_unlock(&sh->lock);
	mutex_unlock(&xiw_cm_shared_mutex);
	cep->shared = NULL;
	if (last) {
		xiw_cep_unlisten(sh);
		xiw_cep_put(sh);	/* the list's (creation) reference */
	}
	xiw_cep_put(sh);
}

int xiw_create_listen(struct iw_cm_id *id, int backlog)
{
	struct xiw_device *xdev = to_xiw_dev(id->device);
	struct sockaddr_storage *laddr = &id->m_local_addr;
	struct xiw_cep *cep;
	int rv;

	if (xiw_addr_len(laddr) < 0)
		return -EAFNOSUPPORT;
	if (!xiw_addr_any(laddr)) {
		cep = xiw_cep_listen_sock(xdev, laddr, 0, id->afonly, backlog);
		if (IS_ERR(cep))
			return PTR_ERR(cep);
	} else {
		cep = xiw_cep_alloc(xdev, NULL);
		if (!cep)
			return -ENOMEM;
		rv = xiw_listen_shared(id, cep, backlog);
		if (rv) {
			xiw_cep_put(cep);
			return rv;
		}
	}
	mutex_lock(&cep->lock);
	xiw_cep_set_state(cep, XIW_CEP_LISTEN);
	id->add_ref(id);
	cep->cm_id = id;
	id->provider_data = cep;
	xiw_cep_dbg(cep, "listening on %pISpc%s\n", laddr,
		    cep->shared ? " (shared)" : "");
	mutex_unlock(&cep->lock);
	return 0;	/* the reference is provider_data's */
}

int xiw_destroy_listen(struct iw_cm_id *id)
{
	struct xiw_cep *cep = id->provider_data;

	if (!cep)
		return 0;
	xiw_cep_dbg(cep, "\n");
	/* no new connections are routed to it from here on */
	if (cep->shared)
		xiw_unlisten_shared(cep);
	xiw_cep_unlisten(cep);
	mutex_lock(&cep->lock);
	if (cep->cm_id) {
		cep->cm_id = NULL;
		id->rem_ref(id);
	}
	id->provider_data = NULL;
	mutex_unlock(&cep->lock);
	xiw_cep_put(cep);
	return 0;
}

/* ------------------------------------------------------------------------
 * Module
 */
int xiw_cm_init(void)
{
	xiw_cm_wq = alloc_workqueue("xiw_cm", WQ_UNBOUND | WQ_MEM_RECLAIM, 0);
	return xiw_cm_wq ? 0 : -ENOMEM;
}

/* Module exit: let go of an endpoint nobody will accept or reject. */
static void xiw_cep_reap(struct xiw_cep *cep)
{
	mutex_lock(&cep->lock);
	if (cep->state != XIW_CEP_CLOSED) {
		pr_warn("xiw: closing a leftover connection endpoint\n");
		xiw_cep_sock_release(cep, true);
		xiw_cep_set_state(cep, XIW_CEP_CLOSED);
	}
	if (cep->pd_ref) {
		cep->pd_ref = false;
		xiw_cep_put(cep);
	}
	mutex_unlock(&cep->lock);
	/* no socket any more: nothing can arm it again */
	if (cancel_delayed_work_sync(&cep->timer))
		xiw_cep_put(cep);
}

/*
 * After every device is unregistered, iwcm has destroyed every cm_id and
 * so every CEP that held one has closed. What may remain are connections
 * whose CONNECT_REQUEST iwcm dropped (listener destroyed while the event
 * was queued): open if their accept timer has not fired yet, closed but
 * still referenced for the cm_id that never came otherwise.
 */
void xiw_cm_exit(void)
{
	struct xiw_cep *cep;
	LIST_HEAD(seen);

	flush_workqueue(xiw_cm_wq);
	spin_lock_bh(&xiw_cep_all_lock);
	while ((cep = list_first_entry_or_null(&xiw_cep_all, struct xiw_cep,
					       all))) {
		/* xiw_cep_release() unlinks it from either list */
		list_move_tail(&cep->all, &seen);
		if (!kref_get_unless_zero(&cep->ref))
			continue;
		spin_unlock_bh(&xiw_cep_all_lock);
		xiw_cep_reap(cep);
		xiw_cep_put(cep);
		spin_lock_bh(&xiw_cep_all_lock);
	}
	spin_unlock_bh(&xiw_cep_all_lock);
	flush_workqueue(xiw_cm_wq);
	destroy_workqueue(xiw_cm_wq);
}
