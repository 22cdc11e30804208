"""How results are compared with the reference: same dtype, same shape, same bits.

cyscatter applies updates in index order, as tests/reference.py does, so float results are compared bitwise
(-0.0 differs from +0.0); only NaNs compare equal whatever their payload.
"""
from __future__ import annotations

import numpy as np


def _bits(a: np.ndarray) -> np.ndarray:
    """Float (or complex, as float pairs) values as unsigned integers, NaNs mapped to one pattern."""
    if a.dtype.kind == "c":
        a = np.ascontiguousarray(a).view(a.real.dtype)
    if a.dtype.kind != "f":
        return a
    bits = np.ascontiguousarray(a).view(f"u{a.itemsize}")
    return np.where(np.isnan(a), np.iinfo(bits.dtype).max, bits)


def assert_same(actual, expected, ulps: int = 0) -> None:
    """`actual` equals `expected` in dtype, shape and every bit (NaN payloads aside).

    With `ulps` > 0, values may differ by that many units in the last place of their magnitude (complex:
    ``|actual - expected| <= ulps * eps * |expected|``), for results whose rounding is not fixed by our
    semantics: NumPy's complex multiply uses fused multiply-adds where the CPU has them (AVX2/FMA3 dispatch),
    the kernels, built for the baseline instruction set, round each product.
    """
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, f"dtype {actual.dtype} != expected {expected.dtype}"
    assert actual.shape == expected.shape, f"shape {actual.shape} != expected {expected.shape}"
    if ulps:
        eps = np.finfo(expected.dtype).eps
        close = np.abs(actual - expected) <= ulps * eps * np.abs(expected)
        assert np.all(close | (np.isnan(actual) & np.isnan(expected))), \
            f"more than {ulps} ulp apart:\n{actual[~close]!r}\n!=\n{expected[~close]!r}"
        return
    if not np.array_equal(_bits(actual), _bits(expected)):
        np.testing.assert_array_equal(actual, expected, strict=True)   # shows the differing values
        raise AssertionError(f"values equal but bits differ (signed zeros?):\n{actual!r}\n!=\n{expected!r}")
