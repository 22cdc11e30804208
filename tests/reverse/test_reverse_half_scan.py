"""The reverse functions of the mul, max and min grouped scans and of their NaN-skipping twins (nanprod, fmax, fmin,
and nansum's, which reads no src) (`scatter_scan_vjp`/`_jvp`) on a float16/bfloat16 src read by blocks of exactly widened rows, the running tables carried from block to block: against the same
function on the src converted to float64 first (the values the whole conversion makes), bit for bit (NaN at the
same places), against the path that converts whole, against plain loops, and without the n x F copies."""
import zlib

import numpy as np
import pytest
from compare import assert_same
from memory import traced_peak

import cyscatter as cs
from cyscatter import scan_kernels
from cyscatter._backends import chunks, host

ml_dtypes = pytest.importorskip("ml_dtypes")
DTYPES = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16}


@pytest.fixture(autouse=True)
def read_in_place(monkeypatch):
    """Small srcs are converted whole by default; small blocks put many block boundaries inside every group."""
    monkeypatch.setattr(host, "STAGE_MIN_ELEMENTS", 0)
    monkeypatch.setattr(chunks, "ROW_CHUNK_BYTES", 512)



def _values(shape, dtype, rng):
    """Small whole numbers and halves (ties in every group, zeros in products), NaN, -0.0 beside 0.0, inf."""
    x = (rng.integers(-4, 5, shape) / 2).astype(np.float32)
    flat = x.reshape(-1)
    flat[::31] = np.nan
    flat[3::17] = -0.0
    flat[5::41] = np.inf
    flat[7::43] = -np.inf
    return x.astype(DTYPES[dtype])


# shape, axis, how src is laid out
LAYOUTS = {"rows": ((1200, 5), 0, "C"), "batched": ((2, 700, 3), 1, "C"), "features-first": ((3, 900), 1, "C"),
           "fortran": ((900, 4), 0, "F"), "reversed": ((900, 4), 0, "reversed")}


def _laid_out(x, how):
    if how == "F":
        return np.asfortranarray(x)
    if how == "reversed":
        return np.ascontiguousarray(x[::-1])[::-1]
    return x


def _call(fun, op, src, idx, d, **kw):
    if fun == "vjp":
        return cs.scatter_scan_vjp(op, d, src, idx, **kw)
    return cs.scatter_scan_jvp(op, src, idx, d, **kw)


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("op", ["mul", "max", "min", "nansum", "nanprod", "fmax", "fmin"])
@pytest.mark.parametrize("fun", ["vjp", "jvp"])
@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("mode", ["raise", "drop", "wrap", "clip"])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("threads", [1, 2])
def test_half_scan_derivatives_match_the_whole_conversion(dtype, op, fun, layout, mode, reverse, exclusive, threads,
                                                          monkeypatch):
    rng = np.random.default_rng(zlib.crc32(repr((dtype, op, fun, layout, mode, reverse, exclusive)).encode()))
    shape, axis, how = LAYOUTS[layout]
    src = _laid_out(_values(shape, dtype, rng), how)
    d = rng.standard_normal(shape)
    # group 7 stays empty; out of range entries for the modes that take them
    low, high = (0, 40) if mode == "raise" else (-5, 45)
    idx = rng.choice([k for k in range(low, high) if k != 7], shape[axis])
    kw = {"dim_size": 40, "axis": axis, "mode": mode, "reverse": reverse, "exclusive": exclusive}
    saved = cs.get_num_threads()
    cs.set_num_threads(threads)
    try:
        with np.errstate(all="ignore"):
            got = _call(fun, op, src, idx, d, **kw)
            assert_same(got, _call(fun, op, src.astype(np.float64), idx, d, **kw))
            monkeypatch.setattr(chunks, "chunked_source", lambda *args: None)   # the path that converts whole
            assert_same(got, _call(fun, op, src, idx, d, **kw))
    finally:
        cs.set_num_threads(saved)


def _loops(fun, op, x, idx, d, size, reverse, exclusive):
    """Plain loops over the members of each group in scan order: the derivative of each output (the running
    product, or the running extremum's first holder) with respect to each member."""
    n = x.shape[0]
    order = range(n - 1, -1, -1) if reverse else range(n)
    out = np.zeros(x.shape)
    for f in range(x.shape[1]):
        for j in range(size):
            members = [k for k in order if idx[k] == j]
            for t, k in enumerate(members):
                before = members[:t] if exclusive else members[:t + 1]
                if op == "mul":   # d out[k] / d x[p] = prod of the others
                    partial = {p: np.prod([x[q, f] for q in before if q != p]) for p in before}
                elif op == "nanprod":   # the NaN members take no part (as 1)
                    kept = [p for p in before if not np.isnan(x[p, f])]
                    partial = {p: np.prod([x[q, f] for q in kept if q != p]) for p in kept}
                else:   # the first member to reach the running extremum (fmax/fmin: of the non-NaN ones)
                    best = None
                    for p in before:
                        if op in ("fmax", "fmin") and np.isnan(x[p, f]):
                            continue
                        if best is None or (x[p, f] > x[best, f] if op in ("max", "fmax") else x[p, f] < x[best, f]):
                            best = p
                    partial = {} if best is None else {best: 1.0}
                for p, v in partial.items():
                    if fun == "vjp":
                        out[p, f] += v * d[k, f]
                    else:
                        out[k, f] += v * d[p, f]
    return out


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("op", ["mul", "max", "min", "nanprod", "fmax", "fmin"])
@pytest.mark.parametrize("fun", ["vjp", "jvp"])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("exclusive", [False, True])
def test_half_scan_derivatives_against_plain_loops(dtype, op, fun, reverse, exclusive):
    rng = np.random.default_rng(zlib.crc32(repr((dtype, op, fun, reverse, exclusive)).encode()))
    n, f, size = 300, 2, 6
    x = (rng.integers(-4, 5, (n, f)) / 2).astype(DTYPES[dtype])   # exact products (a few factors of each group)
    x[rng.random((n, f)) < 0.7] = 1
    if op in ("nanprod", "fmax", "fmin"):
        x[rng.random((n, f)) < 0.1] = np.nan
    idx = rng.integers(-1, size, n)
    d = rng.integers(-3, 4, (n, f)).astype(np.float64)
    got = _call(fun, op, x, idx, d, dim_size=size, mode="drop", reverse=reverse, exclusive=exclusive)
    want = _loops(fun, op, x.astype(np.float64), idx, d, size, reverse, exclusive)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("op", ["mul", "max", "nanprod", "fmax"])
@pytest.mark.parametrize("fun", ["vjp", "jvp"])
def test_half_scan_derivatives_make_no_converted_copy(dtype, op, fun, monkeypatch):
    monkeypatch.setattr(host, "STAGE_MIN_ELEMENTS", 1 << 14)
    monkeypatch.setattr(chunks, "ROW_CHUNK_BYTES", 1 << 18)
    rng = np.random.default_rng(8)
    n, f, size = 100_000, 16, 500
    src = _values((n, f), dtype, rng)
    if op in ("mul", "max"):
        src[np.isnan(src.astype(np.float32))] = 1
    idx = rng.integers(0, size, n)
    d = rng.standard_normal((n, f))

    def call(src=src, idx=idx, d=d):
        return _call(fun, op, src, idx, d, dim_size=size)

    src[np.isinf(src.astype(np.float32))] = 2   # (no inf * 0 in the products)
    call(src[:100], idx[:100], d[:100])   # warm the Python layer's caches
    _, peak = traced_peak(call)
    # the float64 result (n * f * 8 bytes) and, for max/min, the int64 positions each output comes from (and for
    # the NaN-skipping ops a bool per entry, the NaN marks); the whole conversion adds a float32 and a float64
    # copy of src and the scan's float64 values
    # (fmax's JVP: and the tangent with its NaN entries' zeroed, a float64 copy)
    wide = n * f * 8
    bound = 1.5 if op == "mul" else 3.4 if (op, fun) == ("fmax", "jvp") else 2.5
    assert peak < bound * wide, peak
    monkeypatch.setattr(chunks, "chunked_source", lambda *args: None)
    _, whole = traced_peak(call)
    assert whole > bound * wide, whole   # the bound tells the two paths apart


def test_half_scan_derivatives_name_the_first_bad_entry():
    src = np.ones((3000, 2), np.float16)
    idx = np.zeros(3000, np.int64)
    idx[[100, 2900]] = 9
    for op in ("mul", "max"):
        with pytest.raises(IndexError, match="100"):
            cs.scatter_scan_vjp(op, np.ones((3000, 2)), src, idx, dim_size=5, reverse=True)


def test_linear_scan_keep_table_takes_one_batch_slice():
    b = np.ones((2, 3, 1))
    with pytest.raises(ValueError, match="keep_table"):
        scan_kernels.linear_scan(b, b, np.zeros(3, np.int64), np.empty_like(b), np.zeros((1, 1)), keep_table=True)


def test_scan_arg_offset_continues_the_holders():
    """Two blocks scanned with the running tables kept and the second block's positions offset: the positions
    of the one scan over both."""
    src = np.array([[[3.0], [1.0], [3.0], [5.0], [2.0], [5.0]]])
    idx = np.array([0, 1, 0, 1, 0, 0])
    whole = np.empty((1, 6, 1), np.int64)
    scan_kernels.scan(_opcode("max"), src, idx, np.empty_like(src), np.empty((2, 1)),
                      np.array([-np.inf]), arg=whole, targ=np.empty((2, 1), np.int64))
    table, targ = np.full((2, 1), -np.inf), np.full((2, 1), -1, np.int64)
    blocks = np.empty((1, 6, 1), np.int64)
    for r0, r1 in ((0, 3), (3, 6)):
        scan_kernels.scan(_opcode("max"), src[:, r0:r1], idx[r0:r1], np.empty((1, r1 - r0, 1)), table,
                          np.array([-np.inf]), arg=blocks[:, r0:r1], targ=targ, keep_table=True, arg_offset=r0)
    np.testing.assert_array_equal(blocks, whole)
    np.testing.assert_array_equal(whole.ravel(), [0, 1, 0, 3, 0, 5])


def _opcode(name):
    from cyscatter._registry.ops import get_op
    return get_op(name).opcode


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("op", ["mul", "max"])
@pytest.mark.parametrize("other", ["float16", "float32", "bfloat16", "fortran", "reversed"])
def test_half_scan_derivatives_take_any_cotangent(dtype, op, other, monkeypatch):
    """A cotangent or tangent of another dtype (a float32 derivative dtype: the products then run in float32, as
    on the whole conversion) or layout, and empty arrays."""
    rng = np.random.default_rng(zlib.crc32(repr((dtype, op, other)).encode()))
    for shape, axis in (((700, 3), 0), ((3, 500), 1), ((0, 3), 0), ((2, 0, 3), 1)):
        src = _values(shape, dtype, rng)
        idx = rng.integers(0, 9, shape[axis])
        d = rng.standard_normal(shape)
        d = {"fortran": np.asfortranarray(d), "reversed": d[..., ::-1]}.get(other, None)
        if d is None:
            d = rng.standard_normal(shape).astype(DTYPES.get(other, other))
        for fun in ("vjp", "jvp"):
            kw = {"dim_size": 9, "axis": axis, "reverse": fun == "jvp"}
            with np.errstate(all="ignore"):
                got = _call(fun, op, src, idx, d, **kw)
                with monkeypatch.context() as m:
                    m.setattr(chunks, "chunked_source", lambda *args: None)
                    want = _call(fun, op, src, idx, d, **kw)
            assert got.dtype == want.dtype
            nan = np.isnan(got)
            np.testing.assert_array_equal(nan, np.isnan(want))
            bits = np.dtype(f"u{got.dtype.itemsize}")
            np.testing.assert_array_equal(got.view(bits)[~nan], want.view(bits)[~nan])
