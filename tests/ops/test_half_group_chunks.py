"""The group reductions built from the core kernels (var/std and their NaN-skipping twins, logsumexp, softmax,
log_softmax) on a float16/bfloat16 src read in place, a chunk of converted rows at a time
(`Reverse.src_chunks`), against the same function on the src converted whole to float32 first (NumPy's astype,
then the result rounded back): bit for bit, since every group element sees its terms in index order either
way. NaN results compare as NaN: the float32 scatter of one-element rows gives some of them the other sign
than `np.add.at` does, which the staged kernel follows."""
import numpy as np
import pytest
from memory import traced_peak

import cyscatter as cs
from cyscatter import kernels
from cyscatter._backends import chunks, host

ml_dtypes = pytest.importorskip("ml_dtypes")

FUNCS = {"var": cs.scatter_var, "std": cs.scatter_std, "nanvar": cs.scatter_nanvar, "nanstd": cs.scatter_nanstd,
         "logsumexp": cs.scatter_logsumexp, "softmax": cs.scatter_softmax, "log_softmax": cs.scatter_log_softmax}
MOMENTS = ("var", "std", "nanvar", "nanstd")


def _call(name, src, idx, size, mode):
    kw = {"ddof": 1} if name in MOMENTS else {}
    with np.errstate(all="ignore"):
        return FUNCS[name](src, idx, dim_size=size, mode=mode, **kw)


def _same(got, want):
    """Equal bits, NaN at the same places (any NaN)."""
    assert got.dtype == want.dtype and got.shape == want.shape
    bits = np.uint16 if got.dtype.itemsize == 2 else np.uint32
    g, w = got.view(bits), want.view(bits)
    nan = np.isnan(got.astype(np.float32))
    np.testing.assert_array_equal(nan, np.isnan(want.astype(np.float32)))
    np.testing.assert_array_equal(g[~nan], w[~nan])


@pytest.fixture(params=[None, 4096, 1000], ids=["default-chunks", "4KiB-chunks", "1000B-chunks"])
def chunk_bytes(request, monkeypatch):
    """Small chunks: many chunk boundaries, some inside groups and across batch slices; every size staged."""
    monkeypatch.setattr(host, "STAGE_MIN_ELEMENTS", 0)
    if request.param:
        monkeypatch.setattr(chunks, "ROW_CHUNK_BYTES", request.param)
    return request.param


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", list(FUNCS))
@pytest.mark.parametrize("shape,size,axis,mode", [((3001, 17), 40, 0, "raise"), ((2000, 1), 7, 0, "drop"),
                                                  ((4, 700, 3), 900, 1, "drop"), ((5, 613), 9, 1, "raise"),
                                                  ((0, 4), 3, 0, "raise")],
                         ids=["rows", "one-element", "batched-empty-groups", "features-first", "empty"])
def test_chunked_group_reductions_match_the_whole_conversion(chunk_bytes, dtype, name, shape, size, axis, mode):
    rng = np.random.default_rng(len(shape) * 1000 + size)
    n = shape[axis]
    idx = rng.integers(0, size + (3 if mode == "drop" else 0), n)
    x = (3 * rng.standard_normal(shape)).astype(np.float32)
    flat = x.reshape(-1)
    flat[::97] = np.nan
    flat[5::101] = np.inf
    flat[7::103] = -np.inf
    src = x.astype(np.dtype(dtype))
    got = _call(name, src, idx, size, mode) if axis == 0 else \
        FUNCS[name](src, idx, dim_size=size, mode=mode, axis=axis, **({"ddof": 1} if name in MOMENTS else {}))
    with np.errstate(all="ignore"):
        want = FUNCS[name](src.astype(np.float32), idx, dim_size=size, mode=mode, axis=axis,
                           **({"ddof": 1} if name in MOMENTS else {})).astype(src.dtype)
    _same(got, want)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", list(FUNCS))
def test_chunked_group_reductions_against_numpy(dtype, name):
    """An independent reference: per group, NumPy on the float32 values, rounded back."""
    rng = np.random.default_rng(7)
    n, f, size = 5000, 3, 6
    idx = rng.integers(0, size, n)
    src = rng.standard_normal((n, f)).astype(np.dtype(dtype))
    x = src.astype(np.float32)
    got = _call(name, src, idx, size, "raise").astype(np.float32)
    for j in range(size):
        g = x[idx == j]
        if name in MOMENTS:
            want = getattr(np, name.removeprefix("nan"))(g, axis=0, ddof=1)
            np.testing.assert_allclose(got[j], want, rtol=2e-2)
        elif name == "logsumexp":
            m = g.max(0)
            np.testing.assert_allclose(got[j], np.log(np.exp(g - m).sum(0)) + m, rtol=1e-2)
        else:
            e = np.exp(g - g.max(0))
            want = e / e.sum(0) if name == "softmax" else np.log(e / e.sum(0))
            np.testing.assert_allclose(got[idx == j], want, rtol=2e-2, atol=1e-3)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", list(FUNCS))
def test_chunked_group_reductions_make_no_converted_copy(dtype, name, monkeypatch):
    monkeypatch.setattr(chunks, "ROW_CHUNK_BYTES", 1 << 18)
    rng = np.random.default_rng(3)
    n, f, size = 100000, 16, 1000
    idx = rng.integers(0, size, n)
    src = rng.standard_normal((n, f)).astype(np.dtype(dtype))
    _call(name, src[:100], idx[:100], size, "raise")   # warm the Python layer's caches
    _, peak = traced_peak(lambda: _call(name, src, idx, size, "raise"))
    # chunks and their temporaries, the group tables and (softmax) the float16 result: not the n x F float32
    # conversion (6.4 MB), which came beside an n x F float32 of deviations or exponentials
    result = n * f * 2 if "softmax" in name else 0
    assert peak < result + n * f * 4 / 2, peak


def test_staged_mul_sub_div_convert_each_row_with_the_same_bits():
    """sub/mul/div of float16/bfloat16 rows take the row-converting loops (as add/max/min) with the bits of the
    block loop and of np.multiply.at on the float32 values."""
    rng = np.random.default_rng(5)
    idx = rng.integers(0, 300, 40000)
    x = rng.standard_normal((40000, 19)).astype(np.float32)
    x[::89, 3] = np.nan
    x[::91, 18] = np.inf
    for dtype in (np.float16, ml_dtypes.bfloat16):
        src = x.astype(dtype)
        for op, ufunc in (("mul", np.multiply), ("sub", np.subtract), ("div", np.divide)):
            with np.errstate(all="ignore"):
                rows = cs.scatter(src, idx, op, dim_size=300, dtype=np.float32)
                old = kernels._tune_convert_rows()   # (it returns the setting after the call)
                kernels._tune_convert_rows(False)
                try:
                    blocks = cs.scatter(src, idx, op, dim_size=300, dtype=np.float32)
                finally:
                    kernels._tune_convert_rows(old)
                want = np.full((300, 19), 1 if op in ("mul", "div") else 0, np.float32)
                ufunc.at(want, idx, src.astype(np.float32))
            np.testing.assert_array_equal(rows.view(np.uint32), blocks.view(np.uint32))
            _same(rows, want)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", ["argmax", "argmin", "nanargmax", "nanargmin"])
@pytest.mark.parametrize("shape,size,axis,mode", [((3001, 5), 40, 0, "drop"), ((2000, 1), 1200, 0, "raise"),
                                                  ((3, 900, 2), 7, 1, "drop"), ((0, 2), 3, 0, "raise")],
                         ids=["rows", "empty-groups", "batched", "empty"])
def test_chunked_arg_extremes_match_the_whole_conversion(chunk_bytes, dtype, name, shape, size, axis, mode):
    """Ties (whole numbers), NaN, +-inf, signed zeros and an all-NaN group: the same positions as the arg kernel
    on the src converted whole."""
    rng = np.random.default_rng(size)
    n = shape[axis]
    idx = rng.integers(0, size + (3 if mode == "drop" else 0), n)
    x = np.round(rng.standard_normal(shape) * 2).astype(np.float32)
    flat = x.reshape(-1)
    flat[::97] = np.nan
    flat[5::101] = np.inf
    flat[7::103] = -0.0
    flat[9::89] = -np.inf
    np.moveaxis(x, axis, 0)[idx == 2] = np.nan
    src = x.astype(np.dtype(dtype))
    f = getattr(cs, f"scatter_{name}")
    got = f(src, idx, dim_size=size, mode=mode, axis=axis)
    want = f(src.astype(np.float32), idx, dim_size=size, mode=mode, axis=axis)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", ["argmax", "nanargmin"])
def test_chunked_arg_extremes_against_plain_loops(name):
    rng = np.random.default_rng(9)
    idx = rng.integers(0, 6, 3000)
    src = np.round(rng.standard_normal((3000, 2)) * 2).astype(np.float16)
    src[::50, 0] = np.nan
    got = getattr(cs, f"scatter_{name}")(src, idx, dim_size=6)
    x = src.astype(np.float32)
    for j in range(6):
        members = np.flatnonzero(idx == j)
        for c in range(2):
            vals = x[members, c]
            if name == "argmax":   # NaN wins max; ties: the first
                k = np.flatnonzero(np.isnan(vals))[0] if np.isnan(vals).any() else np.flatnonzero(vals == vals.max())[0]
            else:
                k = np.flatnonzero(vals == np.nanmin(vals))[0]
            assert got[j, c] == members[k]


@pytest.mark.parametrize("name", ["argmax", "nanargmin"])
def test_chunked_arg_extremes_make_no_converted_copy(name, monkeypatch):
    monkeypatch.setattr(chunks, "ROW_CHUNK_BYTES", 1 << 18)
    rng = np.random.default_rng(8)
    n, f, size = 100000, 16, 1000
    idx = rng.integers(0, size, n)
    src = rng.standard_normal((n, f)).astype(np.float16)
    call = getattr(cs, f"scatter_{name}")
    call(src[:100], idx[:100], dim_size=size)
    _, peak = traced_peak(lambda: call(src, idx, dim_size=size))
    assert peak < n * f * 4 / 2, peak   # tables and chunks, not the n x F float32 conversion (6.4 MB)
