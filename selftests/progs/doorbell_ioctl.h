// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// doorbell_ioctl.h: the driver's doorbell allocation (XIW_METHOD_DOORBELL_
// ALLOC on the uverbs ioctl path), made by hand the way libxiw makes it, for
// the programs that test the doorbell object itself (xiw_dbbench,
// xiw_dbrace).
#pragma once

#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_ioctl_cmds.h>
#include <rdma/xiw-abi.h>

#include <sys/ioctl.h>

#include <cerrno>
#include <cstdint>

// The doorbell fd of the QP with uverbs handle @qp_handle; -errno on error.
inline int alloc_doorbell(ibv_context *ctx, uint32_t qp_handle)
{
	// header and attributes back to back (the header ends in a
	// flexible array, which C++ does not allow inside a struct)
	alignas(8) unsigned char buf[sizeof(ib_uverbs_ioctl_hdr) +
				     2 * sizeof(ib_uverbs_attr)] = {};
	auto *hdr = reinterpret_cast<ib_uverbs_ioctl_hdr *>(buf);
	auto *attrs = reinterpret_cast<ib_uverbs_attr *>(hdr + 1);

	hdr->length = sizeof(buf);
	hdr->object_id = XIW_OBJECT_DOORBELL;
	hdr->method_id = XIW_METHOD_DOORBELL_ALLOC;
	hdr->num_attrs = 2;
	attrs[0].attr_id = XIW_ATTR_DOORBELL_ALLOC_FD;
	attrs[0].flags = UVERBS_ATTR_F_MANDATORY;
	attrs[1].attr_id = XIW_ATTR_DOORBELL_ALLOC_QP;
	attrs[1].flags = UVERBS_ATTR_F_MANDATORY;
	attrs[1].data = qp_handle;
	if (ioctl(ctx->cmd_fd, RDMA_VERBS_IOCTL, buf))
		return -errno;
	return (int)attrs[0].data;
}
