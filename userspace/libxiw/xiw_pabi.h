/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Self-declared libibverbs private provider ABI, IBVERBS_PRIVATE_34.
 *
 * Debian ships neither <infiniband/driver.h> nor kern-abi.h, so the provider
 * declares the few private structures and entry points it uses here. The
 * layouts are those of rdma-core v36 .. v56 (Debian 12: 44, Debian 13: 56);
 * they follow rdma-core's libibverbs/driver.h, libibverbs/kern-abi.h and
 * ccan/list.h of those releases (github.com/linux-rdma/rdma-core, tags
 * v44.0 and v56.0), and every structure is pinned by the _Static_asserts
 * at the end of this file (sizes measured on x86-64 against both releases).
 *
 * Only <infiniband/verbs.h> and the kernel uapi headers are used.
 */
#ifndef XIW_PABI_H
#define XIW_PABI_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <sys/types.h>

#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>

#define XIW_PABI_VERSION	34

/* ccan/list.h's struct list_node */
struct xiw_list_node {
	struct xiw_list_node *next, *prev;
};

/* ---- device matching --------------------------------------------------- */

enum {
	VERBS_MATCH_SENTINEL	= 0,
	VERBS_MATCH_PCI		= 1,
	VERBS_MATCH_MODALIAS	= 2,
	VERBS_MATCH_DRIVER_ID	= 3,
};

struct verbs_match_ent {
	void *driver_data;
	union {
		const char *modalias;
		uint64_t driver_id;
	} u;
	uint16_t vendor;
	uint16_t device;
	uint8_t kind;
};

/* Same pattern as driver.h's VERBS_NAME_MATCH(). */
#define XIW_NAME_MATCH(_prefix, _data)					\
	{								\
		.driver_data = (_data),					\
		.u.modalias = "rdma_device:*N" _prefix "*",		\
		.kind = VERBS_MATCH_MODALIAS,				\
	}

/* An RDMA device found by libibverbs (netlink or sysfs). */
struct verbs_sysfs_dev {
	struct xiw_list_node entry;
	void *provider_data;
	const struct verbs_match_ent *match;
	unsigned int flags;
	char sysfs_name[IBV_SYSFS_NAME_MAX];
	dev_t sysfs_cdev;
	char ibdev_name[IBV_SYSFS_NAME_MAX];
	char ibdev_path[IBV_SYSFS_PATH_MAX];
	char modalias[512];
	uint64_t node_guid;
	uint32_t driver_id;
	enum ibv_node_type node_type;
	int ibdev_idx;
	uint32_t num_ports;
	uint32_t abi_ver;
	struct timespec time_created;
};

struct verbs_device;

struct verbs_device_ops {
	const char *name;

	uint32_t match_min_abi_version;
	uint32_t match_max_abi_version;
	const struct verbs_match_ent *match_table;
	const struct verbs_device_ops **static_providers;

	bool (*match_device)(struct verbs_sysfs_dev *sysfs_dev);

	struct verbs_context *(*alloc_context)(struct ibv_device *device,
					       int cmd_fd, void *private_data);
	struct verbs_context *(*import_context)(struct ibv_device *device,
						int cmd_fd);

	struct verbs_device *(*alloc_device)(struct verbs_sysfs_dev *sysfs_dev);
	void (*uninit_device)(struct verbs_device *device);
};

struct verbs_device {
	struct ibv_device device;	/* must be first */
	const struct verbs_device_ops *ops;
	atomic_int refcount;
	struct xiw_list_node entry;
	struct verbs_sysfs_dev *sysfs;
	uint64_t core_support;
};

/* ---- objects that embed public verbs objects --------------------------- */

enum ibv_mr_type {
	IBV_MR_TYPE_MR,
	IBV_MR_TYPE_NULL_MR,
	IBV_MR_TYPE_IMPORTED_MR,
	IBV_MR_TYPE_DMABUF_MR,
};

struct verbs_mr {
	struct ibv_mr ibv_mr;
	enum ibv_mr_type mr_type;
	int access;
};

struct verbs_xrcd {
	struct ibv_xrcd xrcd;
	uint32_t comp_mask;
	uint32_t handle;
};

struct verbs_srq {
	struct ibv_srq srq;
	enum ibv_srq_type srq_type;
	struct verbs_xrcd *xrcd;
	struct ibv_cq *cq;
	uint32_t srq_num;
};

enum verbs_qp_mask {
	VERBS_QP_XRCD	= 1 << 0,
	VERBS_QP_EX	= 1 << 1,
};

struct verbs_qp {
	union {
		struct ibv_qp qp;
		struct ibv_qp_ex qp_ex;
	};
	uint32_t comp_mask;
	struct verbs_xrcd *xrcd;
};

struct verbs_cq {
	union {
		struct ibv_cq cq;
		struct ibv_cq_ex cq_ex;
	};
};

/* ---- the op table: 76 members, sorted, as in rdma-core v36 .. v58 ------ */

struct verbs_context_ops {
	int (*advise_mr)(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
			 uint32_t flags, struct ibv_sge *sg_list,
			 uint32_t num_sges);
	struct ibv_dm *(*alloc_dm)(struct ibv_context *context,
				   struct ibv_alloc_dm_attr *attr);
	struct ibv_mw *(*alloc_mw)(struct ibv_pd *pd, enum ibv_mw_type type);
	struct ibv_mr *(*alloc_null_mr)(struct ibv_pd *pd);
	struct ibv_pd *(*alloc_parent_domain)(
		struct ibv_context *context,
		struct ibv_parent_domain_init_attr *attr);
	struct ibv_pd *(*alloc_pd)(struct ibv_context *context);
	struct ibv_td *(*alloc_td)(struct ibv_context *context,
				   struct ibv_td_init_attr *init_attr);
	void (*async_event)(struct ibv_context *context,
			    struct ibv_async_event *event);
	int (*attach_counters_point_flow)(struct ibv_counters *counters,
					  struct ibv_counter_attach_attr *attr,
					  struct ibv_flow *flow);
	int (*attach_mcast)(struct ibv_qp *qp, const union ibv_gid *gid,
			    uint16_t lid);
	int (*bind_mw)(struct ibv_qp *qp, struct ibv_mw *mw,
		       struct ibv_mw_bind *mw_bind);
	int (*close_xrcd)(struct ibv_xrcd *xrcd);
	void (*cq_event)(struct ibv_cq *cq);
	struct ibv_ah *(*create_ah)(struct ibv_pd *pd,
				    struct ibv_ah_attr *attr);
	struct ibv_counters *(*create_counters)(
		struct ibv_context *context,
		struct ibv_counters_init_attr *init_attr);
	struct ibv_cq *(*create_cq)(struct ibv_context *context, int cqe,
				    struct ibv_comp_channel *channel,
				    int comp_vector);
	struct ibv_cq_ex *(*create_cq_ex)(
		struct ibv_context *context,
		struct ibv_cq_init_attr_ex *init_attr);
	struct ibv_flow *(*create_flow)(struct ibv_qp *qp,
					struct ibv_flow_attr *flow_attr);
	struct ibv_flow_action *(*create_flow_action_esp)(
		struct ibv_context *context,
		struct ibv_flow_action_esp_attr *attr);
	struct ibv_qp *(*create_qp)(struct ibv_pd *pd,
				    struct ibv_qp_init_attr *attr);
	struct ibv_qp *(*create_qp_ex)(struct ibv_context *context,
				       struct ibv_qp_init_attr_ex *attr);
	struct ibv_rwq_ind_table *(*create_rwq_ind_table)(
		struct ibv_context *context,
		struct ibv_rwq_ind_table_init_attr *init_attr);
	struct ibv_srq *(*create_srq)(struct ibv_pd *pd,
				      struct ibv_srq_init_attr *attr);
	struct ibv_srq *(*create_srq_ex)(struct ibv_context *context,
					 struct ibv_srq_init_attr_ex *attr);
	struct ibv_wq *(*create_wq)(struct ibv_context *context,
				    struct ibv_wq_init_attr *wq_init_attr);
	int (*dealloc_mw)(struct ibv_mw *mw);
	int (*dealloc_pd)(struct ibv_pd *pd);
	int (*dealloc_td)(struct ibv_td *td);
	int (*dereg_mr)(struct verbs_mr *vmr);
	int (*destroy_ah)(struct ibv_ah *ah);
	int (*destroy_counters)(struct ibv_counters *counters);
	int (*destroy_cq)(struct ibv_cq *cq);
	int (*destroy_flow)(struct ibv_flow *flow);
	int (*destroy_flow_action)(struct ibv_flow_action *action);
	int (*destroy_qp)(struct ibv_qp *qp);
	int (*destroy_rwq_ind_table)(struct ibv_rwq_ind_table *rwq_ind_table);
	int (*destroy_srq)(struct ibv_srq *srq);
	int (*destroy_wq)(struct ibv_wq *wq);
	int (*detach_mcast)(struct ibv_qp *qp, const union ibv_gid *gid,
			    uint16_t lid);
	void (*free_context)(struct ibv_context *context);
	int (*free_dm)(struct ibv_dm *dm);
	int (*get_srq_num)(struct ibv_srq *srq, uint32_t *srq_num);
	struct ibv_dm *(*import_dm)(struct ibv_context *context,
				    uint32_t dm_handle);
	struct ibv_mr *(*import_mr)(struct ibv_pd *pd, uint32_t mr_handle);
	struct ibv_pd *(*import_pd)(struct ibv_context *context,
				    uint32_t pd_handle);
	int (*modify_cq)(struct ibv_cq *cq, struct ibv_modify_cq_attr *attr);
	int (*modify_flow_action_esp)(struct ibv_flow_action *action,
				      struct ibv_flow_action_esp_attr *attr);
	int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			 int attr_mask);
	int (*modify_qp_rate_limit)(struct ibv_qp *qp,
				    struct ibv_qp_rate_limit_attr *attr);
	int (*modify_srq)(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
			  int srq_attr_mask);
	int (*modify_wq)(struct ibv_wq *wq, struct ibv_wq_attr *wq_attr);
	struct ibv_qp *(*open_qp)(struct ibv_context *context,
				  struct ibv_qp_open_attr *attr);
	struct ibv_xrcd *(*open_xrcd)(struct ibv_context *context,
				      struct ibv_xrcd_init_attr *attr);
	int (*poll_cq)(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
	int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad_wr);
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr,
			 struct ibv_send_wr **bad_wr);
	int (*post_srq_ops)(struct ibv_srq *srq, struct ibv_ops_wr *op,
			    struct ibv_ops_wr **bad_op);
	int (*post_srq_recv)(struct ibv_srq *srq, struct ibv_recv_wr *recv_wr,
			     struct ibv_recv_wr **bad_recv_wr);
	int (*query_device_ex)(struct ibv_context *context,
			       const struct ibv_query_device_ex_input *input,
			       struct ibv_device_attr_ex *attr,
			       size_t attr_size);
	int (*query_ece)(struct ibv_qp *qp, struct ibv_ece *ece);
	int (*query_port)(struct ibv_context *context, uint8_t port_num,
			  struct ibv_port_attr *port_attr);
	int (*query_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			int attr_mask, struct ibv_qp_init_attr *init_attr);
	int (*query_qp_data_in_order)(struct ibv_qp *qp, enum ibv_wr_opcode op,
				      uint32_t flags);
	int (*query_rt_values)(struct ibv_context *context,
			       struct ibv_values_ex *values);
	int (*query_srq)(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr);
	int (*read_counters)(struct ibv_counters *counters,
			     uint64_t *counters_value, uint32_t ncounters,
			     uint32_t flags);
	struct ibv_mr *(*reg_dm_mr)(struct ibv_pd *pd, struct ibv_dm *dm,
				    uint64_t dm_offset, size_t length,
				    unsigned int access);
	struct ibv_mr *(*reg_dmabuf_mr)(struct ibv_pd *pd, uint64_t offset,
					size_t length, uint64_t iova, int fd,
					int access);
	struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t length,
				 uint64_t hca_va, int access);
	int (*req_notify_cq)(struct ibv_cq *cq, int solicited_only);
	int (*rereg_mr)(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
			void *addr, size_t length, int access);
	int (*resize_cq)(struct ibv_cq *cq, int cqe);
	int (*set_ece)(struct ibv_qp *qp, struct ibv_ece *ece);
	void (*unimport_dm)(struct ibv_dm *dm);
	void (*unimport_mr)(struct ibv_mr *mr);
	void (*unimport_pd)(struct ibv_pd *pd);
};

#define XIW_NUM_CONTEXT_OPS	76

/* ---- command buffers --------------------------------------------------- */

/*
 * kern-abi.h is not installed, so the command structures the ibv_cmd_*()
 * helpers take are declared here with the layout those helpers assume:
 * [struct ib_uverbs_cmd_hdr][core request] for the write ABI and
 * [ib_uverbs_cmd_hdr][ib_uverbs_ex_cmd_hdr][core request] for the extended
 * ABI. libibverbs fills the core part itself; anything the driver appends
 * starts at sizeof() of these structures. The core is kept opaque because
 * the uapi structs end in flexible arrays and cannot be embedded. Every core
 * request is a multiple of 8 bytes, so the 8-byte alignment adds no padding
 * (checked below).
 */
#define XIW_DECLARE_CMD(_name, _kabi)					\
	struct _name {							\
		_Alignas(8) struct ib_uverbs_cmd_hdr hdr;		\
		unsigned char core[sizeof(struct _kabi)];		\
	}

#define XIW_DECLARE_CMD_EX(_name, _kabi)				\
	struct _name {							\
		struct ib_uverbs_cmd_hdr hdr;				\
		struct ib_uverbs_ex_cmd_hdr ex_hdr;			\
		unsigned char core[sizeof(struct _kabi)];		\
	}

XIW_DECLARE_CMD(ibv_get_context, ib_uverbs_get_context);
XIW_DECLARE_CMD(ibv_query_port, ib_uverbs_query_port);
XIW_DECLARE_CMD(ibv_alloc_pd, ib_uverbs_alloc_pd);
XIW_DECLARE_CMD(ibv_reg_mr, ib_uverbs_reg_mr);
XIW_DECLARE_CMD(ibv_alloc_mw, ib_uverbs_alloc_mw);
XIW_DECLARE_CMD(ibv_create_cq, ib_uverbs_create_cq);
XIW_DECLARE_CMD(ibv_create_srq, ib_uverbs_create_srq);
XIW_DECLARE_CMD(ibv_modify_srq, ib_uverbs_modify_srq);
XIW_DECLARE_CMD(ibv_query_srq, ib_uverbs_query_srq);
XIW_DECLARE_CMD(ibv_create_qp, ib_uverbs_create_qp);
XIW_DECLARE_CMD(ibv_query_qp, ib_uverbs_query_qp);
XIW_DECLARE_CMD(ibv_modify_qp, ib_uverbs_modify_qp);
XIW_DECLARE_CMD_EX(ibv_create_qp_ex, ib_uverbs_ex_create_qp);

/*
 * Public libibverbs symbols (IBVERBS_1.1) that only driver.h declares:
 * ibv_reg_mr()'s fork protection, which xiwdv_reg_mr() must apply too.
 */
int ibv_dontfork_range(void *base, size_t size);
int ibv_dofork_range(void *base, size_t size);

/* ---- PRIVATE_34 entry points ------------------------------------------- */

void verbs_register_driver_34(const struct verbs_device_ops *ops);

void *_verbs_init_and_alloc_context(struct ibv_device *device, int cmd_fd,
				    size_t alloc_size,
				    struct verbs_context *context_offset,
				    uint32_t driver_id);
void verbs_uninit_context(struct verbs_context *context);
void verbs_set_ops(struct verbs_context *vctx,
		   const struct verbs_context_ops *ops);
void verbs_init_cq(struct ibv_cq *cq, struct ibv_context *context,
		   struct ibv_comp_channel *channel, void *cq_context);
void __verbs_log(struct verbs_context *ctx, uint32_t level,
		 const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int ibv_read_ibdev_sysfs_file(char *buf, size_t size,
			      struct verbs_sysfs_dev *sysfs_dev,
			      const char *fnfmt, ...)
	__attribute__((format(printf, 4, 5)));

enum {
	VERBS_LOG_LEVEL_NONE,
	VERBS_LOG_ERR,
	VERBS_LOG_WARN,
	VERBS_LOG_INFO,
	VERBS_LOG_DEBUG,
};

int ibv_cmd_get_context(struct verbs_context *context,
			struct ibv_get_context *cmd, size_t cmd_size,
			struct ib_uverbs_get_context_resp *resp,
			size_t resp_size);
int ibv_cmd_query_device_any(struct ibv_context *context,
			     const struct ibv_query_device_ex_input *input,
			     struct ibv_device_attr_ex *attr, size_t attr_size,
			     struct ib_uverbs_ex_query_device_resp *resp,
			     size_t *resp_size);
int ibv_cmd_query_port(struct ibv_context *context, uint8_t port_num,
		       struct ibv_port_attr *port_attr,
		       struct ibv_query_port *cmd, size_t cmd_size);
int ibv_cmd_alloc_pd(struct ibv_context *context, struct ibv_pd *pd,
		     struct ibv_alloc_pd *cmd, size_t cmd_size,
		     struct ib_uverbs_alloc_pd_resp *resp, size_t resp_size);
int ibv_cmd_dealloc_pd(struct ibv_pd *pd);
int ibv_cmd_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
		   uint64_t hca_va, int access, struct verbs_mr *vmr,
		   struct ibv_reg_mr *cmd, size_t cmd_size,
		   struct ib_uverbs_reg_mr_resp *resp, size_t resp_size);
int ibv_cmd_dereg_mr(struct verbs_mr *vmr);
int ibv_cmd_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type,
		     struct ibv_mw *mw, struct ibv_alloc_mw *cmd,
		     size_t cmd_size,
		     struct ib_uverbs_alloc_mw_resp *resp, size_t resp_size);
int ibv_cmd_dealloc_mw(struct ibv_mw *mw);
int ibv_cmd_create_cq(struct ibv_context *context, int cqe,
		      struct ibv_comp_channel *channel, int comp_vector,
		      struct ibv_cq *cq, struct ibv_create_cq *cmd,
		      size_t cmd_size, struct ib_uverbs_create_cq_resp *resp,
		      size_t resp_size);
int ibv_cmd_destroy_cq(struct ibv_cq *cq);
int ibv_cmd_create_srq(struct ibv_pd *pd, struct ibv_srq *srq,
		       struct ibv_srq_init_attr *attr,
		       struct ibv_create_srq *cmd, size_t cmd_size,
		       struct ib_uverbs_create_srq_resp *resp,
		       size_t resp_size);
int ibv_cmd_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
		       int srq_attr_mask, struct ibv_modify_srq *cmd,
		       size_t cmd_size);
int ibv_cmd_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
		      struct ibv_query_srq *cmd, size_t cmd_size);
int ibv_cmd_destroy_srq(struct ibv_srq *srq);
int ibv_cmd_create_qp(struct ibv_pd *pd, struct ibv_qp *qp,
		      struct ibv_qp_init_attr *attr,
		      struct ibv_create_qp *cmd, size_t cmd_size,
		      struct ib_uverbs_create_qp_resp *resp, size_t resp_size);
int ibv_cmd_create_qp_ex2(struct ibv_context *context, struct verbs_qp *qp,
			  struct ibv_qp_init_attr_ex *qp_attr,
			  struct ibv_create_qp_ex *cmd, size_t cmd_size,
			  struct ib_uverbs_ex_create_qp_resp *resp,
			  size_t resp_size);
int ibv_cmd_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *qp_attr,
		     int attr_mask, struct ibv_qp_init_attr *qp_init_attr,
		     struct ibv_query_qp *cmd, size_t cmd_size);
int ibv_cmd_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
		      int attr_mask, struct ibv_modify_qp *cmd,
		      size_t cmd_size);
int ibv_cmd_destroy_qp(struct ibv_qp *qp);

/* ---- layout checks ----------------------------------------------------- */

_Static_assert(sizeof(struct verbs_context_ops) ==
	       XIW_NUM_CONTEXT_OPS * sizeof(void *),
	       "verbs_context_ops must hold exactly 76 function pointers");
_Static_assert(offsetof(struct verbs_context_ops, advise_mr) == 0,
	       "verbs_context_ops starts with advise_mr");
_Static_assert(offsetof(struct verbs_context_ops, poll_cq) ==
	       53 * sizeof(void *), "verbs_context_ops: poll_cq is #54");
_Static_assert(offsetof(struct verbs_context_ops, query_device_ex) ==
	       58 * sizeof(void *),
	       "verbs_context_ops: query_device_ex is #59");
_Static_assert(offsetof(struct verbs_context_ops, unimport_pd) ==
	       75 * sizeof(void *), "verbs_context_ops ends with unimport_pd");
_Static_assert(offsetof(struct verbs_device, device) == 0,
	       "ibv_device must be first in verbs_device");
_Static_assert(offsetof(struct ibv_qp_ex, qp_base) == 0,
	       "ibv_qp_ex must start with ibv_qp");
_Static_assert(offsetof(struct verbs_qp, comp_mask) ==
	       sizeof(struct ibv_qp_ex),
	       "verbs_qp.comp_mask follows ibv_qp_ex");

/* The command buffers must have exactly the kern-abi.h sizes. */
_Static_assert(sizeof(struct ibv_get_context) == 8 + 8, "get_context");
_Static_assert(sizeof(struct ibv_query_port) == 8 + 16, "query_port");
_Static_assert(sizeof(struct ibv_alloc_pd) == 8 + 8, "alloc_pd");
_Static_assert(sizeof(struct ibv_reg_mr) == 8 + 40, "reg_mr");
_Static_assert(sizeof(struct ibv_alloc_mw) == 8 + 16, "alloc_mw");
_Static_assert(sizeof(struct ibv_create_cq) == 8 + 32, "create_cq");
_Static_assert(sizeof(struct ibv_create_srq) == 8 + 32, "create_srq");
_Static_assert(sizeof(struct ibv_create_qp) == 8 + 56, "create_qp");
_Static_assert(sizeof(struct ibv_query_qp) == 8 + 16, "query_qp");
_Static_assert(sizeof(struct ibv_modify_qp) == 8 + 112, "modify_qp");
_Static_assert(sizeof(struct ibv_create_qp_ex) == 8 + 16 + 64,
	       "create_qp_ex");
_Static_assert(sizeof(struct ib_uverbs_alloc_pd_resp) == 4, "alloc_pd resp");
_Static_assert(sizeof(struct ib_uverbs_reg_mr_resp) == 12, "reg_mr resp");
_Static_assert(sizeof(struct ib_uverbs_alloc_mw_resp) == 8, "alloc_mw resp");
_Static_assert(sizeof(struct ib_uverbs_create_cq_resp) == 8, "create_cq resp");
_Static_assert(sizeof(struct ib_uverbs_create_qp_resp) == 32,
	       "create_qp resp");
_Static_assert(sizeof(struct ib_uverbs_ex_create_qp_resp) == 40,
	       "ex_create_qp resp");
_Static_assert(sizeof(struct ib_uverbs_ex_query_device_resp) == 304,
	       "ex_query_device resp");

#if defined(__x86_64__)
/*
 * Sizes measured on x86-64 for rdma-core 44 and 56 (sizeof in a program
 * built against each release's libibverbs/driver.h).
 */
_Static_assert(sizeof(struct verbs_context_ops) == 608, "verbs_context_ops");
_Static_assert(sizeof(struct verbs_device_ops) == 72, "verbs_device_ops");
_Static_assert(sizeof(struct verbs_sysfs_dev) == 992, "verbs_sysfs_dev");
_Static_assert(sizeof(struct verbs_device) == 712, "verbs_device");
_Static_assert(sizeof(struct verbs_context) == 648, "verbs_context");
_Static_assert(offsetof(struct verbs_context, context) == 320,
	       "ibv_context is the last member of verbs_context");
#if defined(XIW_HAVE_WR_FLUSH) && XIW_HAVE_WR_FLUSH
_Static_assert(sizeof(struct ibv_qp_ex) == 360, "ibv_qp_ex (rdma-core >= 45)");
_Static_assert(sizeof(struct verbs_qp) == 376, "verbs_qp (rdma-core >= 45)");
#else
_Static_assert(sizeof(struct ibv_qp_ex) == 352, "ibv_qp_ex (rdma-core < 45)");
_Static_assert(sizeof(struct verbs_qp) == 368, "verbs_qp (rdma-core < 45)");
#endif
#endif

#endif /* XIW_PABI_H */
