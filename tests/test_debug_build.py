"""The debug build (CYSCATTER_DEBUG=1) really checks bounds: a kernel handed inconsistent arrays reports an
IndexError instead of reading or writing past a buffer. Skipped in a release build, where the same call would
corrupt memory. The kernels are noexcept, so such an error is "unraisable"; pyproject.toml turns pytest's warning
about it into an error, so a bounds error anywhere in the suite fails the test that caused it."""
from __future__ import annotations

import sys

import numpy as np
import pytest

from cyscatter import kernels

pytestmark = pytest.mark.skipif(not kernels.BOUNDS_CHECKED,
                                reason="release build (CYSCATTER_DEBUG=1 builds a checked one)")


def test_out_of_bounds_access_in_a_kernel_is_reported(monkeypatch):
    reported = []
    monkeypatch.setattr(sys, "unraisablehook", reported.append)
    src = np.ones((1, 2, 1))
    partials = np.zeros_like(src)
    order = np.array([0, 5], np.int64)          # position 5 is past the 2 entries of src
    indptr = np.array([0, 2], np.int64)
    kernels.exclusive_products(src, order, indptr, partials)
    assert reported and issubclass(reported[0].exc_type, IndexError)
