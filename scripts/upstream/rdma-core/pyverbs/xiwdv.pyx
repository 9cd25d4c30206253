# SPDX-License-Identifier: (GPL-2.0 OR Linux-OpenIB)

#cython: language_level=3

"""
The xiw direct verbs (infiniband/xiwdv.h): an xiw context, memory regions
registered with the digest Verify computes over them, and the work
requests of ibv_qp_ex that only xiw has (masked atomics, 64-bit immediate
data, Flush and Verify).
"""

from libc.stdint cimport uintptr_t
from libc.stdlib cimport free
from libc.string cimport memset
from posix.stdlib cimport posix_memalign
import resource

from pyverbs.pyverbs_error import PyverbsError, PyverbsUserError
from pyverbs.base import PyverbsRDMAErrno
cimport pyverbs.providers.xiw.libxiw as dv
from pyverbs.pd cimport PD
from pyverbs.qp cimport QPEx


cdef class XiwContext(Context):
    """
    A Context of an xiw device; opening any other device fails.
    """
    def __init__(self, name=''):
        super().__init__(name=name)
        if not dv.xiwdv_is_xiw_context(self.context):
            name = self.name
            self.close()
            raise PyverbsUserError(f'{name} is not an xiw device')


cdef class XiwMR(MR):
    """
    A memory region over a buffer allocated here, registered with
    xiwdv_reg_mr(): Verify requests that name it compute the digest given
    (dv.XIWDV_DIGEST_CRC32C or dv.XIWDV_DIGEST_SHA256).
    """
    def __init__(self, PD pd not None, length, access,
                 digest=dv.XIWDV_DIGEST_DEFAULT):
        cdef void *buf = NULL
        if length <= 0:
            raise PyverbsUserError(f'XiwMR: length {length}')
        if posix_memalign(&buf, resource.getpagesize(), length):
            raise PyverbsError(f'Failed to allocate {length} bytes')
        memset(buf, 0, length)
        self.mr = dv.xiwdv_reg_mr(pd.pd, buf, length, access, digest)
        if self.mr == NULL:
            free(buf)
            raise PyverbsRDMAErrno(f'xiwdv_reg_mr of {length} bytes, '
                                   f'access {access:#x}, digest {digest}')
        self.buf = buf
        # MR.__init__ sees the region registered and only sets itself up
        super().__init__(pd, length, access)
        self.pd = pd
        self._digest = digest
        pd.add_ref(self)

    @property
    def digest(self):
        return self._digest


def wr_masked_atomic_fetch_add(QPEx qp not None, rkey, remote_addr, add,
                               field_msbs):
    dv.xiwdv_wr_masked_atomic_fetch_add(qp.qp_ex, rkey, remote_addr, add,
                                        field_msbs)


def wr_masked_atomic_cmp_swp(QPEx qp not None, rkey, remote_addr, compare,
                             compare_mask, swap, swap_mask):
    dv.xiwdv_wr_masked_atomic_cmp_swp(qp.qp_ex, rkey, remote_addr, compare,
                                      compare_mask, swap, swap_mask)


def wr_rdma_write_imm64(QPEx qp not None, rkey, remote_addr, imm):
    dv.xiwdv_wr_rdma_write_imm64(qp.qp_ex, rkey, remote_addr, imm)


def wr_imm64(QPEx qp not None, imm):
    dv.xiwdv_wr_imm64(qp.qp_ex, imm)


def wr_flush(QPEx qp not None, rkey, remote_addr, length, flush_type, level):
    dv.xiwdv_wr_flush(qp.qp_ex, rkey, remote_addr, length, flush_type, level)


def wr_verify(QPEx qp not None, rkey, remote_addr, length, bytes digest):
    if len(digest) > dv.XIWDV_VERIFY_MAX_HASH:
        raise PyverbsUserError(f'a digest of {len(digest)} bytes')
    dv.xiwdv_wr_verify(qp.qp_ex, rkey, remote_addr, length, <char *>digest,
                       len(digest))
