// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libxiw data path: the mmap()ed SQ/RQ/SRQ/CQ rings of xiw-abi.h.
 *
 * Posting and polling never enter the kernel, except for the SQ doorbell
 * and the RQ kick of a QP in error (a write() on the QP's doorbell
 * object, see below).
 * Ownership of a ring slot is carried by the element's flags word only:
 * the producer fills the element and store-releases its flags with the
 * VALID bit; the consumer load-acquires the flags, copies the element and
 * store-releases 0. Our own indices are private and free-running, never
 * rewound (see xiw_modify_qp()).
 *
 * How the verbs map onto xiw-abi.h:
 * - IBV_WR_RDMA_WRITE/_WITH_IMM, SEND, SEND_WITH_INV, RDMA_READ,
 *   ATOMIC_CMP_AND_SWP and ATOMIC_FETCH_AND_ADD map to the XIW_OP_* of
 *   the same name; with the kernel's memory windows (XIW_FEATURE_MW),
 *   IBV_WR_BIND_MW (type 2 windows only) and IBV_WR_LOCAL_INV too;
 *   everything else, IBV_WR_SEND_WITH_IMM included (RFC 7306 has no Send
 *   with Immediate), fails with EINVAL.
 * - ibv_bind_mw() (type 1 windows) posts an XIW_OP_BIND_MW like
 *   IBV_WR_BIND_MW, with the window's next key (ibv_inc_rkey()).
 * - Immediate data: the 32-bit verbs imm_data (network order) is the low
 *   half of the 64-bit RFC 7306 immediate, in host order, high half 0:
 *   sqe.imm = be32toh(imm_data); on receive, imm_data = htobe32(low half).
 * - What an SQE may hold (SGE counts, inline, atomic result buffer) is
 *   the contract of <rdma/xiw-sqe.h>, checked before an SQE is published.
 *   Inline (where the contract allows it; IBV_SEND_INLINE is ignored for
 *   Reads and atomics) copies up to max_inline bytes into the SQE, num_sge
 *   holding the byte count. IBV_SEND_FENCE is XIW_WQE_READ_FENCE.
 * - A send WR may have 0..max_send_sge SGEs, a receive 0..max_recv_sge
 *   (the SRQ's max_sge), as the QP or SRQ was created; more fail the post
 *   with EINVAL.
 * - CQE opcode and status are the ib_uverbs values, equal to IBV_WC_*.
 */
#include <endian.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include "xiw.h"

_Static_assert(sizeof(struct xiw_sge) == sizeof(struct ibv_sge) &&
	       offsetof(struct xiw_sge, addr) ==
	       offsetof(struct ibv_sge, addr) &&
	       offsetof(struct xiw_sge, length) ==
	       offsetof(struct ibv_sge, length) &&
	       offsetof(struct xiw_sge, lkey) == offsetof(struct ibv_sge, lkey),
	       "struct xiw_sge must be layout-compatible with struct ibv_sge");
_Static_assert(sizeof(struct xiw_sqe) == 128, "SQE size");
_Static_assert(sizeof(struct xiw_rqe) == 128, "RQE size");
_Static_assert(sizeof(struct xiw_cqe) == 32, "CQE size");
_Static_assert(sizeof(struct xiw_queue_ctrl) == XIW_QUEUE_HDR_SIZE,
	       "queue header size");
_Static_assert(offsetof(struct xiw_sqe, atomic.sge) ==
	       offsetof(struct xiw_sqe, sge[0]),
	       "the atomic result SGE aliases sge[0]");
_Static_assert(XIW_MAX_INLINE <= UINT8_MAX, "inline length fits num_sge");
_Static_assert((int)XIW_SQE_LOC_LEN_ERR == (int)IBV_WC_LOC_LEN_ERR &&
	       (int)XIW_SQE_LOC_QP_OP_ERR == (int)IBV_WC_LOC_QP_OP_ERR,
	       "xiw_sqe_check() statuses are ibv_wc_status values");

/* IBV_WC_* and ib_uverbs_wc_opcode / ib_wc_status share their values. */
_Static_assert((int)IBV_WC_SEND == (int)IB_UVERBS_WC_SEND &&
	       (int)IBV_WC_RDMA_WRITE == (int)IB_UVERBS_WC_RDMA_WRITE &&
	       (int)IBV_WC_RDMA_READ == (int)IB_UVERBS_WC_RDMA_READ &&
	       (int)IBV_WC_COMP_SWAP == (int)IB_UVERBS_WC_COMP_SWAP &&
	       (int)IBV_WC_FETCH_ADD == (int)IB_UVERBS_WC_FETCH_ADD &&
	       IBV_WC_RECV == 128 && IBV_WC_RECV_RDMA_WITH_IMM == 129,
	       "ibv_wc_opcode values");
_Static_assert((int)IBV_WC_BIND_MW == (int)IB_UVERBS_WC_BIND_MW &&
	       (int)IBV_WC_LOCAL_INV == (int)IB_UVERBS_WC_LOCAL_INV,
	       "ibv_wc_opcode values of the memory window WRs");
_Static_assert(IBV_WC_SUCCESS == 0 && IBV_WC_WR_FLUSH_ERR == 5 &&
	       IBV_WC_MW_BIND_ERR == 6 && IBV_WC_REM_INV_REQ_ERR == 9 &&
	       IBV_WC_GENERAL_ERR == 21, "ibv_wc_status values");
/* A window's rights are ibv_access_flags, the uverbs values. */
_Static_assert((int)IBV_ACCESS_LOCAL_WRITE ==
	       (int)IB_UVERBS_ACCESS_LOCAL_WRITE &&
	       (int)IBV_ACCESS_REMOTE_WRITE ==
	       (int)IB_UVERBS_ACCESS_REMOTE_WRITE &&
	       (int)IBV_ACCESS_REMOTE_READ ==
	       (int)IB_UVERBS_ACCESS_REMOTE_READ &&
	       (int)IBV_ACCESS_REMOTE_ATOMIC ==
	       (int)IB_UVERBS_ACCESS_REMOTE_ATOMIC &&
	       (int)IBV_ACCESS_ZERO_BASED == (int)IB_UVERBS_ACCESS_ZERO_BASED,
	       "ibv_access_flags values");

/* ---- mapping ----------------------------------------------------------- */

int xiw_ring_map(struct xiw_ring *r, int cmd_fd, uint64_t key, uint32_t num,
		 uint32_t esize)
{
	long page = sysconf(_SC_PAGESIZE);
	struct xiw_queue_ctrl *ctrl;
	size_t len;
	void *p;

	memset(r, 0, sizeof(*r));
	if (key == XIW_INVAL_MMAP_KEY || !num || (num & (num - 1)) ||
	    num > (1U << 24) || page <= 0)
		return EINVAL;

	len = XIW_QUEUE_HDR_SIZE + (size_t)num * esize;
	len = (len + (size_t)page - 1) & ~((size_t)page - 1);

	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, cmd_fd,
		 (off_t)key);
	if (p == MAP_FAILED)
		return errno ? errno : ENOMEM;

	/* The kernel describes the ring in its header: it must agree. */
	ctrl = p;
	if (ctrl->num_entries != num || ctrl->entry_size != esize) {
		munmap(p, len);
		return EPROTO;
	}

	r->map = p;
	r->map_len = len;
	r->ctrl = ctrl;
	r->elems = (uint8_t *)p + XIW_QUEUE_HDR_SIZE;
	r->num = num;
	r->esize = esize;
	r->idx = 0;
	return 0;
}

void xiw_ring_unmap(struct xiw_ring *r)
{
	if (r->map)
		munmap(r->map, r->map_len);
	memset(r, 0, sizeof(*r));
}

static inline uint32_t xiw_ctrl_flags(const struct xiw_ring *r)
{
	return __atomic_load_n(&r->ctrl->flags, __ATOMIC_RELAXED);
}

/* ---- doorbells --------------------------------------------------------- */

/*
 * Each QP rings its kernel through its doorbell object (kernel
 * xiw_doorbell.c), which the kernel advertises with XIW_FEATURE_DOORBELL
 * in the context response: a write() of 0 bytes rings the SQ, one of a
 * __u32 XIW_DOORBELL_RQ kicks the RQ. The RQ needs a kick only while the
 * QP is in ERROR (the kernel's RX takes receive WRs from the ring by
 * itself; in ERROR nothing would ever flush newly posted ones).
 *
 * Without the feature (an older xiw.ko, or XIW_LEGACY_DOORBELL=1) the
 * compatibility shim below is used instead.
 */

/*
 * Allocate the QP's doorbell object with the driver's uverbs ioctl
 * method; rdma-core's ioctl helpers are private to its tree, so the
 * request is built here from the kernel's uapi headers. Returns the fd, or
 * -1 with errno set.
 */
static int xiw_alloc_doorbell_fd(struct ibv_context *ibctx, uint32_t qp_handle)
{
	struct {
		struct ib_uverbs_ioctl_hdr hdr;
		struct ib_uverbs_attr attrs[2];
	} req;

	memset(&req, 0, sizeof(req));
	req.hdr.length = sizeof(req);
	req.hdr.object_id = XIW_OBJECT_DOORBELL;
	req.hdr.method_id = XIW_METHOD_DOORBELL_ALLOC;
	req.hdr.num_attrs = 2;
	req.attrs[0].attr_id = XIW_ATTR_DOORBELL_ALLOC_FD;
	req.attrs[0].flags = UVERBS_ATTR_F_MANDATORY;
	req.attrs[1].attr_id = XIW_ATTR_DOORBELL_ALLOC_QP;
	req.attrs[1].flags = UVERBS_ATTR_F_MANDATORY;
	req.attrs[1].data = qp_handle;
	if (ioctl(ibctx->cmd_fd, RDMA_VERBS_IOCTL, &req))
		return -1;
	return (int)req.attrs[0].data;
}

/*
 * ---- compatibility shim: kernels without XIW_FEATURE_DOORBELL ----------
 *
 * siw's doorbell: a write() on cmd_fd of a legacy IB_USER_VERBS_CMD_POST_SEND
 * (POST_RECV for the RQ) with wr_count = 0 for this QP, which the kernel
 * treats as "look at the SQ" ("flush the RQ in ERROR") after the uverbs
 * command dispatch. 2.5x the cost of the doorbell object in the VM
 * (Documentation/architecture.md). Nothing else uses these commands.
 */
static void xiw_init_db(struct xiw_db_cmd *db, uint32_t command,
			uint32_t qp_handle, void *resp, size_t resp_size,
			size_t wqe_size)
{
	memset(db, 0, sizeof(*db));
	db->hdr.command = command;
	db->hdr.in_words = sizeof(*db) / 4;
	db->hdr.out_words = resp_size / 4;
	db->response = (uintptr_t)resp;
	db->qp_handle = qp_handle;
	db->wr_count = 0;
	db->sge_count = 0;
	/* the kernel rejects a wqe_size below its struct even for 0 WRs */
	db->wqe_size = wqe_size;
}

static void xiw_db_compat_write(struct xiw_qp *qp, const struct xiw_db_cmd *db)
{
	struct ibv_context *ibctx = qp->vqp.qp.context;

	/* as with the doorbell object, a failure only means a later kick does it */
	if (write(ibctx->cmd_fd, db, sizeof(*db)) != (ssize_t)sizeof(*db))
		xiw_dbg(ibctx, "QP %u: doorbell %u failed: %d\n", qp->qp_id,
			db->hdr.command, errno);
}

/* ---- end of the compatibility shim ---- */

/*
 * Right after create_qp (the QP handle is known): the doorbell object if
 * the kernel offers it, else the prebuilt compatibility commands. Also
 * when the process has no file descriptor left for the object (each QP
 * needs one; EMFILE under a low RLIMIT_NOFILE): the QP then still works,
 * through the slower shim, instead of failing to be created.
 */
void xiw_qp_init_doorbells(struct xiw_qp *qp)
{
	struct ibv_context *ibctx = qp->vqp.qp.context;
	uint32_t handle = qp->vqp.qp.handle;

	qp->db_fd = -1;
	/* the first post is no burst */
	qp->sq_poll_seq = __atomic_load_n(&to_xctx(ibctx)->poll_seq,
					  __ATOMIC_RELAXED) - 1;
	if (to_xctx(ibctx)->features & XIW_FEATURE_DOORBELL) {
		qp->db_fd = xiw_alloc_doorbell_fd(ibctx, handle);
		if (qp->db_fd >= 0)
			return;
		xiw_err(ibctx, "QP %u: no doorbell object (%d), using the compatibility doorbell\n",
			qp->qp_id, errno);
	}
	xiw_init_db(&qp->sq_db, IB_USER_VERBS_CMD_POST_SEND, handle,
		    &qp->sq_db_resp, sizeof(qp->sq_db_resp),
		    sizeof(struct ib_uverbs_send_wr));
	xiw_init_db(&qp->rq_db, IB_USER_VERBS_CMD_POST_RECV, handle,
		    &qp->rq_db_resp, sizeof(qp->rq_db_resp),
		    sizeof(struct ib_uverbs_recv_wr));
}

void xiw_qp_close_doorbell(struct xiw_qp *qp)
{
	if (qp->db_fd >= 0)
		close(qp->db_fd);
	qp->db_fd = -1;
}

/*
 * The WQEs are already owned by the kernel (VALID published), so a failed
 * kick does not un-post them: they are processed or flushed on a later
 * kick or state change. Only log it.
 */
static void xiw_db_kick(struct xiw_qp *qp, uint32_t kick)
{
	ssize_t n = kick == XIW_DOORBELL_SQ ? 0 : sizeof(kick);

	if (write(qp->db_fd, &kick, n) != n)
		xiw_dbg(qp->vqp.qp.context, "QP %u: doorbell %#x failed: %d\n",
			qp->qp_id, kick, errno);
}

/*
 * SQ doorbell, called after at least one WQE was published, outside
 * sq_lock (the kick is idempotent, and other posters need not spin during
 * the syscall).
 *
 * It is skipped while the kernel says it is draining the SQ
 * (XIW_SQ_KERNEL_ACTIVE). The full barrier orders our VALID stores before
 * the flag load; the kernel clears the flag, issues a full barrier and then
 * re-checks the next SQE, so one of the two sides always sees the new WQE.
 *
 * A post with no poll_cq on the context since the QP's previous post is
 * part of a burst: the process does not wait for each completion. Its
 * doorbell says so (XIW_DOORBELL_SQ_BATCH), and the kernel may then send
 * from another CPU and return at once, leaving XIW_SQ_KERNEL_ACTIVE set,
 * so the next posts of the burst need no syscall and leave together. A
 * post after a poll rings plainly: the kernel sends in this syscall, the
 * shortest path for one WR. The sequence is a hint; racing posters at
 * worst pick the other, equally correct, doorbell.
 */
void xiw_sq_doorbell(struct xiw_qp *qp)
{
	struct xiw_context *ctx = to_xctx(qp->vqp.qp.context);
	uint32_t seq = __atomic_load_n(&ctx->poll_seq, __ATOMIC_RELAXED);
	bool burst = __atomic_exchange_n(&qp->sq_poll_seq, seq,
					 __ATOMIC_RELAXED) == seq;

	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (xiw_ctrl_flags(&qp->sq) & XIW_SQ_KERNEL_ACTIVE)
		return;
	if (qp->db_fd >= 0)
		xiw_db_kick(qp, burst && (ctx->features &
					  XIW_FEATURE_DOORBELL_BATCH) ?
				XIW_DOORBELL_SQ | XIW_DOORBELL_SQ_BATCH :
				XIW_DOORBELL_SQ);
	else
		xiw_db_compat_write(qp, &qp->sq_db);
}

/*
 * RQ kick: only for RQEs posted while the QP is in error, which the
 * kernel must flush into the CQ. Same barrier pairing as above with the
 * kernel's "set XIW_QUEUE_ERROR, full barrier, flush".
 */
static void xiw_rq_kick_if_error(struct xiw_qp *qp)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!(xiw_ctrl_flags(&qp->rq) & XIW_QUEUE_ERROR))
		return;
	if (qp->db_fd >= 0)
		xiw_db_kick(qp, XIW_DOORBELL_RQ);
	else
		xiw_db_compat_write(qp, &qp->rq_db);
}

/* ---- send -------------------------------------------------------------- */

/* Indexed by enum ibv_wr_opcode; bounds-checked by every user. */
static const struct {
	bool ok;
	uint8_t op;
} xiw_wr_map[] = {
	[IBV_WR_RDMA_WRITE] = { true, XIW_OP_WRITE },
	[IBV_WR_RDMA_WRITE_WITH_IMM] = { true, XIW_OP_WRITE_IMM },
	[IBV_WR_SEND] = { true, XIW_OP_SEND },
	/* IBV_WR_SEND_WITH_IMM: iWARP (RFC 7306) has no Send with Immediate */
	[IBV_WR_RDMA_READ] = { true, XIW_OP_READ },
	[IBV_WR_ATOMIC_CMP_AND_SWP] = { true, XIW_OP_ATOMIC_CSWAP },
	[IBV_WR_ATOMIC_FETCH_AND_ADD] = { true, XIW_OP_ATOMIC_FADD },
	[IBV_WR_SEND_WITH_INV] = { true, XIW_OP_SEND_INV },
	/* these two only with XIW_FEATURE_MW (xiw_build_sqe()) */
	[IBV_WR_LOCAL_INV] = { true, XIW_OP_LOCAL_INV },
	[IBV_WR_BIND_MW] = { true, XIW_OP_BIND_MW },
	[IBV_WR_ATOMIC_WRITE] = { true, XIW_OP_ATOMIC_WRITE },
};

/*
 * Final check of a filled SQE before it is published: the contract of
 * <rdma/xiw-sqe.h>, which the kernel applies again when it takes the SQE.
 * @flags are the flags to publish (without VALID). Shared by post_send
 * and wr_complete.
 */
int xiw_sqe_post_check(const struct xiw_qp *qp, const struct xiw_sqe *sqe,
		       uint16_t flags)
{
	const struct xiw_sqe_limits lim = {
		.max_sge = qp->max_send_sge,
		.max_inline = qp->max_inline,
	};

	return xiw_sqe_check(sqe, flags, &lim, true) ? EINVAL : 0;
}

static uint16_t xiw_send_flags(const struct xiw_qp *qp, unsigned int flags)
{
	uint16_t f = 0;

	if ((flags & IBV_SEND_SIGNALED) || qp->sq_sig_all)
		f |= XIW_WQE_SIGNALED;
	if (flags & IBV_SEND_SOLICITED)
		f |= XIW_WQE_SOLICITED;
	if (flags & IBV_SEND_FENCE)
		f |= XIW_WQE_READ_FENCE;
	return f;
}

static int xiw_copy_inline(const struct xiw_qp *qp, struct xiw_sqe *sqe,
			   const struct ibv_sge *sgl, int num_sge)
{
	size_t total = 0;
	int i;

	for (i = 0; i < num_sge; i++) {
		size_t len = sgl[i].length;

		if (len > qp->max_inline - total)
			return EINVAL;
		if (len)
			memcpy(sqe->inline_data + total,
			       (const void *)(uintptr_t)sgl[i].addr, len);
		total += len;
	}
	sqe->num_sge = total;
	return 0;
}

/*
 * A window bind (XIW_OP_BIND_MW) into @sqe, but for wr_id and flags: the
 * window's STag becomes @rkey, bound to @bind_info's range of its MR
 * (none for length 0: a type 1 window's unbind). The rights are
 * mw_access_flags without IBV_ACCESS_LOCAL_WRITE, which means nothing
 * for a window (no local access goes through one) and which rdma-core's
 * own tests pass; any other bit that is not a remote right
 * (IBV_ACCESS_ZERO_BASED: xiw offers no zero-based windows) fails the
 * contract check, EINVAL at post. Returns 0, or EINVAL if the kernel has
 * no memory windows.
 */
int xiw_sqe_bind(const struct xiw_qp *qp, struct xiw_sqe *sqe, uint32_t rkey,
		 const struct ibv_mw_bind_info *bind_info)
{
	if (!xiw_ctx_has(qp->vqp.qp.context, XIW_FEATURE_MW))
		return EINVAL;
	sqe->opcode = XIW_OP_BIND_MW;
	sqe->num_sge = 0;
	sqe->rkey = rkey;
	sqe->raddr = bind_info->addr;
	sqe->imm = 0;
	sqe->bind.length = bind_info->length;
	sqe->bind.mr_lkey = bind_info->mr ? bind_info->mr->lkey : 0;
	sqe->bind.access = (uint32_t)bind_info->mw_access_flags &
			   ~(uint32_t)IBV_ACCESS_LOCAL_WRITE;
	return 0;
}

/* Fill the SQE for one ibv_send_wr; *flags gets the flags to publish. */
static int xiw_build_sqe(struct xiw_qp *qp, const struct ibv_send_wr *wr,
			 struct xiw_sqe *sqe, uint16_t *flags)
{
	uint16_t f;
	int rv;

	if ((unsigned int)wr->opcode >= ARRAY_SIZE(xiw_wr_map) ||
	    !xiw_wr_map[wr->opcode].ok) {
		xiw_dbg(qp->vqp.qp.context, "QP %u: opcode %d unsupported\n",
			qp->qp_id, wr->opcode);
		return EINVAL;
	}
	/* local WRs: no SGE list (whatever num_sge says), no inline data */
	switch (wr->opcode) {
	case IBV_WR_BIND_MW:
		f = xiw_send_flags(qp, wr->send_flags);
		sqe->wr_id = wr->wr_id;
		/* a type 1 window is bound with ibv_bind_mw() only */
		if (!wr->bind_mw.mw || wr->bind_mw.mw->type != IBV_MW_TYPE_2)
			return EINVAL;
		rv = xiw_sqe_bind(qp, sqe, wr->bind_mw.rkey,
				  &wr->bind_mw.bind_info);
		if (!rv)
			rv = xiw_sqe_post_check(qp, sqe, f);
		*flags = f;
		return rv;
	case IBV_WR_LOCAL_INV:
		if (!xiw_ctx_has(qp->vqp.qp.context, XIW_FEATURE_MW))
			return EINVAL;
		f = xiw_send_flags(qp, wr->send_flags);
		sqe->wr_id = wr->wr_id;
		sqe->opcode = XIW_OP_LOCAL_INV;
		sqe->num_sge = 0;
		sqe->rkey = wr->invalidate_rkey;
		sqe->raddr = 0;
		sqe->imm = 0;
		*flags = f;
		return xiw_sqe_post_check(qp, sqe, f);
	default:
		break;
	}
	/* the QP's limit, inline or not (as rdma-core's providers do) */
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->max_send_sge)
		return EINVAL;

	f = xiw_send_flags(qp, wr->send_flags);
	sqe->wr_id = wr->wr_id;
	sqe->opcode = xiw_wr_map[wr->opcode].op;
	sqe->num_sge = 0;
	sqe->rkey = 0;
	sqe->raddr = 0;
	sqe->imm = 0;

	switch (wr->opcode) {
	case IBV_WR_SEND_WITH_INV:
		sqe->rkey = wr->invalidate_rkey;
		break;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		/* 32-bit verbs immediate -> low half of the RFC 7306 one */
		sqe->imm = be32toh(wr->imm_data);
		/* fall through */
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_READ:
		sqe->rkey = wr->wr.rdma.rkey;
		sqe->raddr = wr->wr.rdma.remote_addr;
		break;
	case IBV_WR_ATOMIC_WRITE:
		/*
		 * ibv_post_send's form (as rxe reads it): the target in
		 * wr.rdma, the 8 bytes in the buffer of the one SGE.
		 */
		if (wr->num_sge != 1 || wr->sg_list[0].length != 8)
			return EINVAL;
		sqe->rkey = wr->wr.rdma.rkey;
		sqe->raddr = wr->wr.rdma.remote_addr;
		memcpy(&sqe->atomic_write,
		       (const void *)(uintptr_t)wr->sg_list[0].addr, 8);
		rv = xiw_sqe_post_check(qp, sqe, f);
		if (rv)
			return rv;
		*flags = f;
		return 0;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		sqe->rkey = wr->wr.atomic.rkey;
		sqe->raddr = wr->wr.atomic.remote_addr;
		sqe->atomic.compare_add = wr->wr.atomic.compare_add;
		sqe->atomic.swap = wr->wr.atomic.swap;
		sqe->atomic.compare_add_mask = 0;
		sqe->atomic.swap_mask = 0;
		break;
	default:
		break;
	}

	if ((xiw_sqe_op_rule(sqe->opcode)->flags & XIW_SQE_INLINE) &&
	    (wr->send_flags & IBV_SEND_INLINE)) {
		rv = xiw_copy_inline(qp, sqe, wr->sg_list, wr->num_sge);
		if (rv)
			return rv;
		f |= XIW_WQE_INLINE;
	} else {
		/*
		 * IBV_SEND_INLINE means nothing for Read and atomics;
		 * num_sge <= max_send_sge <= XIW_MAX_SGE (checked above).
		 */
		if (wr->num_sge)
			memcpy(sqe->sge, wr->sg_list,
			       wr->num_sge * sizeof(struct ibv_sge));
		sqe->num_sge = wr->num_sge;
	}

	rv = xiw_sqe_post_check(qp, sqe, f);
	if (rv)
		return rv;
	*flags = f;
	return 0;
}

int xiw_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		  struct ibv_send_wr **bad_wr)
{
	struct xiw_qp *qp = to_xqp(ibqp);
	unsigned int posted = 0;
	int rv = 0;

	pthread_spin_lock(&qp->sq_lock);
	for (; wr; wr = wr->next) {
		struct xiw_sqe *sqe = xiw_ring_elem(&qp->sq, qp->sq.idx);
		uint16_t flags;

		/* acquire: the kernel is done reading the old contents */
		if (__atomic_load_n(&sqe->flags, __ATOMIC_ACQUIRE)) {
			rv = ENOMEM;
			break;
		}
		rv = xiw_build_sqe(qp, wr, sqe, &flags);
		if (rv)
			break;
		__atomic_store_n(&sqe->flags, flags | XIW_WQE_VALID,
				 __ATOMIC_RELEASE);
		qp->sq.idx++;
		posted++;
	}
	pthread_spin_unlock(&qp->sq_lock);

	if (posted)
		xiw_sq_doorbell(qp);
	if (rv)
		*bad_wr = wr;
	return rv;
}

/*
 * ibv_bind_mw(): bind a type 1 window through @ibqp's send queue (libibverbs
 * checked the type, the MR and the PDs), or unbind it (length 0). The
 * window's next STag is its current one with the key incremented, and
 * mw->rkey holds it once the bind is posted, as rdma-core's providers do:
 * the bind completes IBV_WC_BIND_MW (signaled per mw_bind->send_flags),
 * or IBV_WC_MW_BIND_ERR with the window unchanged and the QP in error;
 * then mw->rkey is not the window's STag, and the application, which
 * knows the old one, restores it if it needs it. Returns 0 or an errno
 * (also in errno): EINVAL for a WR the SQE contract refuses, ENOMEM if
 * the send queue is full.
 */
int xiw_bind_mw(struct ibv_qp *ibqp, struct ibv_mw *mw,
		struct ibv_mw_bind *mw_bind)
{
	struct xiw_qp *qp = to_xqp(ibqp);
	uint32_t rkey = ibv_inc_rkey(mw->rkey);
	struct xiw_sqe *sqe;
	uint16_t flags;
	int rv;

	if (mw->type != IBV_MW_TYPE_1) {
		errno = EINVAL;
		return EINVAL;
	}
	pthread_spin_lock(&qp->sq_lock);
	sqe = xiw_ring_elem(&qp->sq, qp->sq.idx);
	if (__atomic_load_n(&sqe->flags, __ATOMIC_ACQUIRE)) {
		rv = ENOMEM;
	} else {
		flags = xiw_send_flags(qp, mw_bind->send_flags);
		sqe->wr_id = mw_bind->wr_id;
		rv = xiw_sqe_bind(qp, sqe, rkey, &mw_bind->bind_info);
		if (!rv)
			rv = xiw_sqe_post_check(qp, sqe, flags);
		if (!rv) {
			__atomic_store_n(&sqe->flags, flags | XIW_WQE_VALID,
					 __ATOMIC_RELEASE);
			qp->sq.idx++;
		}
	}
	pthread_spin_unlock(&qp->sq_lock);
	if (rv) {
		errno = rv;
		return rv;
	}
	mw->rkey = rkey;
	xiw_sq_doorbell(qp);
	return 0;
}

/* ---- receive ----------------------------------------------------------- */

/*
 * Post a chain of receive WRs into an RQ or SRQ ring of @max_sge SGEs per
 * WR (the QP's max_recv_sge or the SRQ's max_sge, at most XIW_MAX_SGE;
 * the kernel's RX refuses an RQE beyond it). A zero-SGE receive is legal
 * (it takes a zero-length message or an Immediate Data message).
 */
static int xiw_post_rqes(struct xiw_ring *rq, uint32_t max_sge,
			 struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr,
			 unsigned int *posted)
{
	for (; wr; wr = wr->next) {
		struct xiw_rqe *rqe = xiw_ring_elem(rq, rq->idx);

		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > max_sge) {
			*bad_wr = wr;
			return EINVAL;
		}
		if (__atomic_load_n(&rqe->flags, __ATOMIC_ACQUIRE)) {
			*bad_wr = wr;
			return ENOMEM;
		}
		rqe->wr_id = wr->wr_id;
		rqe->num_sge = wr->num_sge;
		if (wr->num_sge)
			memcpy(rqe->sge, wr->sg_list,
			       wr->num_sge * sizeof(struct ibv_sge));
		__atomic_store_n(&rqe->flags, XIW_WQE_VALID, __ATOMIC_RELEASE);
		rq->idx++;
		(*posted)++;
	}
	return 0;
}

int xiw_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		  struct ibv_recv_wr **bad_wr)
{
	struct xiw_qp *qp = to_xqp(ibqp);
	unsigned int posted = 0;
	int rv;

	if (!qp->rq.map) {	/* the QP receives through an SRQ */
		*bad_wr = wr;
		return EINVAL;
	}
	pthread_spin_lock(&qp->rq_lock);
	rv = xiw_post_rqes(&qp->rq, qp->max_recv_sge, wr, bad_wr, &posted);
	pthread_spin_unlock(&qp->rq_lock);

	if (posted)
		xiw_rq_kick_if_error(qp);
	return rv;
}

int xiw_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad_wr)
{
	struct xiw_srq *srq = to_xsrq(ibsrq);
	unsigned int posted = 0;
	int rv;

	pthread_spin_lock(&srq->lock);
	rv = xiw_post_rqes(&srq->ring, srq->max_sge, wr, bad_wr, &posted);
	pthread_spin_unlock(&srq->lock);
	return rv;
}

/* ---- completion -------------------------------------------------------- */

static void xiw_copy_cqe(const struct xiw_cqe *cqe, uint32_t flags,
			 struct ibv_wc *wc)
{
	wc->wr_id = cqe->wr_id;
	wc->status = (enum ibv_wc_status)cqe->status;
	wc->opcode = (enum ibv_wc_opcode)cqe->opcode;
	/* the peer's Terminate: layer << 12 | type << 8 | code */
	wc->vendor_err = (uint32_t)cqe->vendor_err << 8 | cqe->vendor_code;
	wc->byte_len = cqe->byte_len;
	wc->qp_num = cqe->qp_num;
	wc->src_qp = 0;
	wc->wc_flags = 0;
	wc->imm_data = 0;
	if (flags & XIW_CQE_WITH_IMM) {
		/* low 32 bits of the RFC 7306 immediate, see post_send */
		wc->imm_data = htobe32((uint32_t)cqe->imm);
		wc->wc_flags |= IBV_WC_WITH_IMM;
	} else if (flags & XIW_CQE_WITH_INV) {
		wc->invalidated_rkey = cqe->inv_stag;
		wc->wc_flags |= IBV_WC_WITH_INV;
	}
	wc->pkey_index = 0;
	wc->slid = 0;
	wc->sl = 0;
	wc->dlid_path_bits = 0;
}

/*
 * The send CQ of a new QP learns of it (once its create can no longer
 * fail), and forgets it before its rings are unmapped: xiw_poll() reads
 * the SQ flags of the QPs on the list. A CQ outlives its QPs (the kernel
 * refuses to destroy a CQ that a QP uses).
 */
void xiw_cq_link_qp(struct xiw_qp *qp, struct ibv_cq *send_cq)
{
	struct xiw_cq *cq = to_xcq(send_cq);

	pthread_spin_lock(&cq->lock);
	qp->send_cq = cq;
	qp->send_cq_next = cq->send_qps;
	cq->send_qps = qp;
	pthread_spin_unlock(&cq->lock);
}

void xiw_cq_unlink_qp(struct xiw_qp *qp)
{
	struct xiw_cq *cq = qp->send_cq;
	struct xiw_qp **pp;

	if (!cq)
		return;
	pthread_spin_lock(&cq->lock);
	for (pp = &cq->send_qps; *pp; pp = &(*pp)->send_cq_next) {
		if (*pp == qp) {
			*pp = qp->send_cq_next;
			break;
		}
	}
	pthread_spin_unlock(&cq->lock);
	qp->send_cq = NULL;
}

/*
 * QPs of a CQ whose SQ flags an empty poll reads, the newest first: the
 * look stays a few loads however many QPs share the CQ.
 */
#define XIW_POLL_YIELD_QPS	8

/*
 * Is the kernel draining the SQ of one of @cq's QPs (XIW_SQ_KERNEL_ACTIVE:
 * its TX work is queued or running, or waits for socket space)? Caller
 * holds cq->lock.
 */
static bool xiw_cq_kernel_sending(const struct xiw_cq *cq)
{
	const struct xiw_qp *qp = cq->send_qps;
	int i;

	for (i = 0; qp && i < XIW_POLL_YIELD_QPS; qp = qp->send_cq_next, i++)
		if (xiw_ctrl_flags(&qp->sq) & XIW_SQ_KERNEL_ACTIVE)
			return true;
	return false;
}

/*
 * Poll; with @imm64, also hand out each CQE's 64-bit immediate.
 *
 * A poll that finds the CQ empty while the kernel is sending for one of
 * its QPs yields the CPU (sched_yield()) before it returns 0. A process
 * that busy-polls for the completions of a stream would otherwise take
 * turns, on the same CPU, with the TX work that produces them - on a
 * host of one CPU, half of it - and poll nothing in its turns. With
 * nothing else runnable on the CPU the yield returns at once. A poller
 * whose post ran TX in its own doorbell (a latency test: XIW_SQ_KERNEL_ACTIVE
 * is clear when that syscall returns) spins as before. XIW_POLL_YIELD=0
 * in the environment turns it off (comparisons).
 */
static int xiw_poll(struct ibv_cq *ibcq, int num_entries, struct ibv_wc *wc,
		    uint64_t *imm64)
{
	struct xiw_cq *cq = to_xcq(ibcq);
	bool yield = false;
	int n;

	pthread_spin_lock(&cq->lock);
	for (n = 0; n < num_entries; n++) {
		struct xiw_cqe *cqe = xiw_ring_elem(&cq->ring, cq->ring.idx);
		uint32_t flags = __atomic_load_n(&cqe->flags, __ATOMIC_ACQUIRE);

		if (!(flags & XIW_CQE_VALID))
			break;
		xiw_copy_cqe(cqe, flags, &wc[n]);
		if (imm64)
			imm64[n] = flags & XIW_CQE_WITH_IMM ? cqe->imm : 0;
		/* release: our CQE reads happen before the slot is free */
		__atomic_store_n(&cqe->flags, 0, __ATOMIC_RELEASE);
		cq->ring.idx++;
	}
	if (!n && num_entries > 0 && to_xctx(ibcq->context)->poll_yield)
		yield = xiw_cq_kernel_sending(cq);
	pthread_spin_unlock(&cq->lock);
	if (yield)
		sched_yield();
	return n;
}

/* A poll: the next post of every QP of the context is no burst. */
static void xiw_poll_seen(struct ibv_cq *ibcq)
{
	struct xiw_context *ctx = to_xctx(ibcq->context);

	__atomic_store_n(&ctx->poll_seq,
			 __atomic_load_n(&ctx->poll_seq, __ATOMIC_RELAXED) + 1,
			 __ATOMIC_RELAXED);
}

int xiw_poll_cq(struct ibv_cq *ibcq, int num_entries, struct ibv_wc *wc)
{
	xiw_poll_seen(ibcq);
	return xiw_poll(ibcq, num_entries, wc, NULL);
}

XIW_EXPORT int xiwdv_poll_cq(struct ibv_cq *ibcq, int num_entries,
			     struct ibv_wc *wc, uint64_t *imm64)
{
	if (!xiwdv_is_xiw_context(ibcq->context)) {
		errno = EOPNOTSUPP;
		return -1;
	}
	xiw_poll_seen(ibcq);
	return xiw_poll(ibcq, num_entries, wc, imm64);
}

XIW_EXPORT bool xiwdv_is_xiw_context(struct ibv_context *ctx)
{
	return ctx && ctx->ops.poll_cq == xiw_poll_cq;
}

/*
 * Arm the CQ through its shared header, no syscall: the kernel raises the
 * completion event for the next (solicited) CQE and clears the arm bits.
 * A fetch-or keeps the kernel-owned bits (XIW_QUEUE_ERROR) intact and is a
 * full barrier against our earlier CQE reads.
 */
int xiw_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct xiw_cq *cq = to_xcq(ibcq);
	uint32_t arm = solicited_only ? XIW_CQ_ARM_SOLICITED : XIW_CQ_ARM_NEXT;

	__atomic_fetch_or(&cq->ring.ctrl->flags, arm, __ATOMIC_SEQ_CST);
	return 0;
}
