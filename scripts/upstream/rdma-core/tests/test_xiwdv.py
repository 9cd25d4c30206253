# SPDX-License-Identifier: (GPL-2.0 OR Linux-OpenIB)
"""
Test module for the xiw direct verbs (infiniband/xiwdv.h).
"""

import errno
import unittest

from pyverbs.pyverbs_error import PyverbsRDMAError, PyverbsUserError
import pyverbs.providers.xiw.libxiw as xiw_e
import pyverbs.providers.xiw.xiwdv as xiw
import pyverbs.device as d
import pyverbs.enums as e
from pyverbs.pd import PD

from tests.base import PyverbsAPITestCase


class XiwAPITestCase(PyverbsAPITestCase):
    def setUp(self):
        super().setUp()
        try:
            self.xctx = xiw.XiwContext(name=self.ctx.name)
        except PyverbsUserError:
            raise unittest.SkipTest('Not an xiw device')
        self.pd = PD(self.xctx)

    def tearDown(self):
        if getattr(self, 'xctx', None):
            self.xctx.close()
        super().tearDown()


class XiwDVTest(XiwAPITestCase):
    def test_xiwdv_reg_mr_digests(self):
        """
        Regions for Verify with each digest, remote and global Flush
        rights: the keys are those of a usable region and it reads back
        what it holds. (Persistent Flush rights need persistent memory.)
        """
        access = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_READ | \
            e.IBV_ACCESS_REMOTE_WRITE | xiw_e.XIWDV_ACCESS_FLUSH_GLOBAL
        for digest in (xiw_e.XIWDV_DIGEST_DEFAULT, xiw_e.XIWDV_DIGEST_CRC32C,
                       xiw_e.XIWDV_DIGEST_SHA256):
            with xiw.XiwMR(self.pd, 65536, access, digest) as mr:
                self.assertEqual(mr.digest, digest)
                self.assertEqual(mr.length, 65536)
                self.assertNotEqual(mr.rkey, 0)
                mr.write(b'xiw' * 100, 300)
                self.assertEqual(mr.read(300, 0), b'xiw' * 100)

    def test_xiwdv_reg_mr_bad_digest(self):
        """
        A digest xiw does not compute, and persistent Flush rights on
        memory that is not persistent, are refused with EINVAL.
        """
        with self.assertRaises(PyverbsRDMAError) as ex:
            xiw.XiwMR(self.pd, 4096, e.IBV_ACCESS_LOCAL_WRITE, 7)
        self.assertEqual(ex.exception.error_code, errno.EINVAL)
        with self.assertRaises(PyverbsRDMAError) as ex:
            xiw.XiwMR(self.pd, 4096, e.IBV_ACCESS_LOCAL_WRITE |
                      e.IBV_ACCESS_REMOTE_WRITE |
                      xiw_e.XIWDV_ACCESS_FLUSH_PERSISTENT)
        self.assertEqual(ex.exception.error_code, errno.EINVAL)

    def test_xiw_context_checks(self):
        """
        XiwContext opens xiw devices and nothing else.
        """
        for dev in d.get_device_list():
            name = dev.name.decode()
            try:
                with xiw.XiwContext(name=name):
                    opened = True
            except PyverbsUserError:
                opened = False
            self.assertEqual(opened, name.startswith('xiw') or
                             name == self.ctx.name, name)
