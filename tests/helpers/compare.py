"""How results are compared with the reference: same dtype, same shape, same bits.

cyscatter applies updates in index order, as tests/helpers/reference.py does, so float results are compared bitwise
(-0.0 differs from +0.0); only NaNs compare equal whatever their payload.
"""
from __future__ import annotations

import numpy as np


def _bits(a: np.ndarray) -> np.ndarray:
    """Float (or complex, as float pairs) values as unsigned integers, NaNs mapped to one pattern."""
    if a.dtype.kind == "c":
        a = np.ascontiguousarray(a).view(a.real.dtype)
    if a.dtype.name == "bfloat16":   # (ml_dtypes: kind "V")
        bits = np.ascontiguousarray(a).view(np.uint16)
        return np.where(np.isnan(a.astype(np.float32)), np.iinfo(np.uint16).max, bits)
    if a.dtype.kind != "f":
        return a
    bits = np.ascontiguousarray(a).view(f"u{a.itemsize}")
    return np.where(np.isnan(a), np.iinfo(bits.dtype).max, bits)


def converted_whole(call):
    """`call()` with every float16/bfloat16 operand that the fused kernels read in place converted whole first
    (`host.HALF_IN_PLACE` emptied): the path the in-place reads must match bit for bit."""
    from cyscatter._backends import host
    saved, host.HALF_IN_PLACE = host.HALF_IN_PLACE, {}
    try:
        return call()
    finally:
        host.HALF_IN_PLACE = saved


def tolerance(backend_name: str, op: str, dtype, src, dst=None) -> tuple[int, object]:
    """(ulps, scale) by which a scatter result may differ from the reference; (0, None) means bit for bit.

    Two cases are not fixed to the bit by our semantics:
    - complex products: NumPy's complex multiply uses fused multiply-adds where the CPU has them (AVX2/FMA3
      dispatch), the kernels, built for the baseline instruction set, round each product;
    - GPU float add/sub/mul/div/mean: float atomics apply the updates in a run-dependent order. Reordering n
      terms moves a sum by at most n ulp of the sum of their magnitudes, a product by n ulp of itself.
    """
    dtype = np.dtype(dtype)
    n = max(np.size(src), 1)
    op = {"nansum": "add", "nanprod": "mul", "nanmean": "mean", "fmax": "max", "fmin": "min"}.get(op, op)   # twins
    if backend_name.startswith("cupy") and dtype.kind in "fc" and op not in ("max", "min"):
        if op in ("mul", "div"):
            return 2 * n, None
        return 2 * n, np.nansum(np.abs(np.asarray(src, np.complex128))) + (
            0 if dst is None or np.size(dst) == 0 else np.nanmax(np.abs(dst), initial=0))
    if op == "mul" and dtype.kind == "c":
        return 8, None
    return 0, None


def assert_same(actual, expected, ulps: int = 0, scale=None) -> None:
    """`actual` equals `expected` in dtype, shape and every bit (NaN payloads aside).

    With `ulps` > 0 (see `tolerance`), values may differ by ``ulps * eps * scale``, where `scale` defaults to
    each expected value's magnitude (complex: its modulus).
    """
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, f"dtype {actual.dtype} != expected {expected.dtype}"
    assert actual.shape == expected.shape, f"shape {actual.shape} != expected {expected.shape}"
    if ulps:
        eps = np.finfo(expected.dtype).eps
        bound = ulps * eps * (np.abs(expected) if scale is None else scale)
        with np.errstate(invalid="ignore"):   # inf - inf: equal infinities are close, not NaN apart
            close = (actual == expected) | (np.abs(actual - expected) <= bound)
        assert np.all(close | (np.isnan(actual) & np.isnan(expected))), \
            f"more than {ulps} ulp apart:\n{actual[~close]!r}\n!=\n{expected[~close]!r}"
        return
    if not np.array_equal(_bits(actual), _bits(expected)):
        np.testing.assert_array_equal(actual, expected, strict=True)   # shows the differing values
        raise AssertionError(f"values equal but bits differ (signed zeros?):\n{actual!r}\n!=\n{expected!r}")
