# SPDX-License-Identifier: (GPL-2.0 OR Linux-OpenIB)

#cython: language_level=3

from libc.stdint cimport uint8_t, uint32_t, uint64_t
from libcpp cimport bool
cimport pyverbs.libibverbs as v


cdef extern from 'infiniband/xiwdv.h':

    cpdef enum:
        XIWDV_ACCESS_FLUSH_GLOBAL
        XIWDV_ACCESS_FLUSH_PERSISTENT
        XIWDV_FLUSH_GLOBAL
        XIWDV_FLUSH_PERSISTENT
        XIWDV_FLUSH_RANGE
        XIWDV_FLUSH_MR
        XIWDV_WC_FLUSH
        XIWDV_WC_ATOMIC_WRITE
        XIWDV_WC_VERIFY
        XIWDV_VERIFY_MAX_HASH

    cpdef enum xiwdv_digest:
        XIWDV_DIGEST_DEFAULT
        XIWDV_DIGEST_CRC32C
        XIWDV_DIGEST_SHA256

    v.ibv_mr *xiwdv_reg_mr(v.ibv_pd *pd, void *addr, size_t length,
                           int access, xiwdv_digest digest)
    bool xiwdv_is_xiw_context(v.ibv_context *ctx)
    void xiwdv_wr_flush(v.ibv_qp_ex *qpx, uint32_t rkey, uint64_t remote_addr,
                        size_t len, uint8_t type, uint8_t level)
    void xiwdv_wr_verify(v.ibv_qp_ex *qpx, uint32_t rkey, uint64_t remote_addr,
                         uint32_t len, const void *hash, uint8_t hash_len)
    void xiwdv_wr_masked_atomic_fetch_add(v.ibv_qp_ex *qpx, uint32_t rkey,
                                          uint64_t remote_addr, uint64_t add,
                                          uint64_t field_msbs)
    void xiwdv_wr_masked_atomic_cmp_swp(v.ibv_qp_ex *qpx, uint32_t rkey,
                                        uint64_t remote_addr, uint64_t compare,
                                        uint64_t compare_mask, uint64_t swap,
                                        uint64_t swap_mask)
    void xiwdv_wr_rdma_write_imm64(v.ibv_qp_ex *qpx, uint32_t rkey,
                                   uint64_t remote_addr, uint64_t imm)
    void xiwdv_wr_imm64(v.ibv_qp_ex *qpx, uint64_t imm)
