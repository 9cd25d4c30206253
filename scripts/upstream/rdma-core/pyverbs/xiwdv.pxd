# SPDX-License-Identifier: (GPL-2.0 OR Linux-OpenIB)

#cython: language_level=3

from pyverbs.device cimport Context
from pyverbs.mr cimport MR


cdef class XiwContext(Context):
    pass


cdef class XiwMR(MR):
    cdef object _digest
