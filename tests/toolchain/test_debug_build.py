"""The debug build (CYSCATTER_DEBUG=1) really checks bounds: a kernel handed inconsistent arrays reports an
IndexError instead of reading or writing past a buffer. Skipped in a release build, where the same call would
corrupt memory. The kernels are noexcept, so such an error is "unraisable"; pyproject.toml turns pytest's warning
about it into an error, so a bounds error anywhere in the suite fails the test that caused it.

Every `def` entry point now validates its operands before a kernel runs (so nothing reachable from Python can
go out of bounds), so the bad call is made from C: a scratch extension cimports the unvalidated `cdef` kernel
from the installed `kernels.pxd`."""
from __future__ import annotations

import sys

import numpy as np
import pytest

from cyscatter import kernels
from testing import build_scratch_extension

pytestmark = pytest.mark.skipif(not kernels.BOUNDS_CHECKED,
                                reason="release build (CYSCATTER_DEBUG=1 builds a checked one)")

SCRATCH = """
from libc.stdint cimport int64_t
from cyscatter.kernels cimport group_exclusive_products

def unchecked_products(double[:, :, ::1] src, int64_t[::1] order, int64_t[::1] indptr, double[:, :, ::1] out):
    group_exclusive_products[double](src, order, indptr, out)
"""



def test_entry_points_refuse_what_would_go_out_of_bounds():
    src = np.ones((1, 2, 1))
    with pytest.raises(ValueError, match="order"):
        kernels.exclusive_products(src, np.array([0, 5], np.int64), np.array([0, 2], np.int64), np.zeros_like(src))


def test_out_of_bounds_access_in_a_kernel_is_reported(monkeypatch, tmp_path):
    pytest.importorskip("Cython")
    scratch_debug = build_scratch_extension(tmp_path, "scratch_debug", SCRATCH)
    reported = []
    monkeypatch.setattr(sys, "unraisablehook", reported.append)
    src = np.ones((1, 2, 1))
    order = np.array([0, 5], np.int64)          # position 5 is past the 2 entries of src
    scratch_debug.unchecked_products(src, order, np.array([0, 2], np.int64), np.zeros_like(src))
    assert reported and issubclass(reported[0].exc_type, IndexError)
