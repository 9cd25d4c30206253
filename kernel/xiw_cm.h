/* SPDX-License-Identifier: GPL-2.0 */
/*
 * xiw - iWARP connection manager: connection endpoints (CEPs), MPA
 * request/reply negotiation (RFC 5044, RFC 6581) and the iw_cm device ops.
 */
#ifndef XIW_CM_H
#define XIW_CM_H

#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/net.h>
#include <linux/workqueue.h>
#include <rdma/iw_cm.h>

#include "xiw.h"

/*
 * Endpoint states. A listener stays in LISTEN; a connection endpoint walks
 *
 *	active:  CONNECTING -> AWAIT_MPAREP -> RDMA_MODE
 *	passive: AWAIT_MPAREQ -> RECVD_MPAREQ -> [AWAIT_RTR] -> RDMA_MODE
 *
 * then RDMA_MODE -> [CLOSING] -> CLOSED. Every failure ends in CLOSED.
 */
enum xiw_cep_state {
	XIW_CEP_IDLE,
	XIW_CEP_LISTEN,
	XIW_CEP_CONNECTING,	/* active: TCP connect in progress */
	XIW_CEP_AWAIT_MPAREP,	/* active: MPA Request sent */
	XIW_CEP_AWAIT_MPAREQ,	/* passive: TCP accepted, no MPA Request yet */
	XIW_CEP_RECVD_MPAREQ,	/* passive: CONNECT_REQUEST reported */
	XIW_CEP_AWAIT_RTR,	/* passive: accepted, waiting for the RTR */
	XIW_CEP_RDMA_MODE,	/* QP owns the stream */
	XIW_CEP_CLOSING,	/* graceful close: FIN sent, waiting for FIN */
	XIW_CEP_CLOSED,
};

/* Events the socket callbacks, the data path and the ops post. */
enum {
	XIW_CEP_EV_ACCEPT,	/* listener: connections to accept */
	XIW_CEP_EV_DATA,	/* bytes to read (MPA Request/Reply) */
	XIW_CEP_EV_STATE,	/* TCP state changed */
	XIW_CEP_EV_RTR,		/* data path: RTR frame received */
	XIW_CEP_EV_LLP_ERR,	/* data path: fatal error, Terminate */
	XIW_CEP_EV_DISC,	/* consumer: graceful close (SQD) */
	XIW_CEP_EV_ABORT,	/* consumer: abortive close (ERR), or listener gone */
	XIW_CEP_EV_TIMEOUT,	/* negotiation or close timer */
};

struct xiw_cep {
	struct kref ref;
	struct mutex lock;		/* everything below */
	enum xiw_cep_state state;
	struct list_head all;		/* xiw_cep_all, for module exit */

	struct xiw_device *xdev;	/* valid while a cm_id is held */
	char dev_name[IB_DEVICE_NAME_MAX];	/* for messages */
	struct iw_cm_id *cm_id;		/* holds cm_id->add_ref() */
	struct xiw_sk_ctx sk_ctx;	/* sk_user_data of its socket */
	struct xiw_qp *qp;		/* holds xiw_qp_get() */
	struct socket *sock;
	bool active;
	bool open;			/* initial reference: until closed */
	bool qp_linked;			/* ref held while qp->cep may be us */
	bool llp_started;		/* xiw_llp_start() succeeded */
	bool pd_ref;			/* ref held for iwcm's provider_data */

	/* listener: children not yet reported; child: its listener */
	struct list_head children;
	struct list_head child;
	struct xiw_cep *listener;	/* holds a ref */

	/*
	 * A wildcard listen uses a socket bound to the wildcard address and
	 * to its device's netdev (SO_BINDTODEVICE), shared by the listens
	 * of that netdev on one (family, port): they come from rdma_cm ids
	 * of different network namespaces. The socket owner ("shared") has
	 * no cm_id and hands each connection to its first listener.
	 */
	struct list_head subs;		/* shared: listeners using it */
	struct list_head sub;		/* listener: entry in shared->subs */
	struct list_head shared_entry;	/* shared: in xiw_cm_shared */
	struct xiw_cep *shared;		/* listener: its shared socket (ref) */
	int ifindex;			/* shared: the netdev it is bound to */
	struct net *net;		/* shared: the netdev's netns */
	bool afonly;			/* shared: IPv6 only */
	struct sockaddr_storage laddr;	/* shared: wildcard address + port */

	struct work_struct work;
	unsigned long events;		/* XIW_CEP_EV_* bits */
	struct delayed_work timer;	/* holds a ref while pending */
	int llp_reason;

	/* socket callbacks before the CM installed its own */
	void (*sk_state_change)(struct sock *sk);
	void (*sk_data_ready)(struct sock *sk);
	void (*sk_write_space)(struct sock *sk);

	/* MPA negotiation */
	struct xiw_mpa_rr mpa;		/* received Request/Reply header */
	u16 rcvd;			/* bytes of header + private data */
	u16 pd_len;			/* received PD_Length */
	u8 pdata[XIW_MPA_PD_MAX];	/* received private data */
	u8 rev;				/* revision in use */
	bool enhanced;			/* RFC 6581 block exchanged */
	bool crc;			/* CRC in use */
	bool sent_crc;			/* active: C flag of our Request */
	bool p2p;			/* peer-to-peer RTR in use */
	u16 rtr_offer;			/* active: RTR ord bits we offered */
	enum xiw_rtr rtr;
	u16 ird;
	u16 ord;
};

int xiw_cm_init(void);
void xiw_cm_exit(void);

int xiw_connect(struct iw_cm_id *id, struct iw_cm_conn_param *param);
int xiw_accept(struct iw_cm_id *id, struct iw_cm_conn_param *param);
int xiw_reject(struct iw_cm_id *id, const void *pdata, u8 pd_len);
int xiw_create_listen(struct iw_cm_id *id, int backlog);
int xiw_destroy_listen(struct iw_cm_id *id);

#endif /* XIW_CM_H */
