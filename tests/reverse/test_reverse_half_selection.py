"""The reverse functions of the selecting ops (max/min and fmax/fmin's VJPs and JVPs, nansum/nanmean's JVPs) and of
the products (mul, nanprod) on a float16/bfloat16 src: the kernels read its rows themselves (each widened to
float64 in a stack buffer),
against the same function on the src converted whole to float64 first, bit for bit, over ties, NaNs, signed
zeros, empty groups, the modes and the layouts; against plain NumPy loops; and without the n x F float64 copy."""
import numpy as np
import pytest
from compare import assert_same
from memory import traced_peak

import cyscatter as cs
from cyscatter import fused_kernels
from cyscatter._backends import host

ml_dtypes = pytest.importorskip("ml_dtypes")
DTYPES = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
SELECTING = ["max", "min", "fmax", "fmin"]


@pytest.fixture(autouse=True)
def read_in_place(monkeypatch):
    """Small srcs are converted whole by default: read every src here in place."""
    monkeypatch.setattr(host, "STAGE_MIN_ELEMENTS", 0)



def _values(n, f, rng):
    """Small whole numbers (ties in every group, zeros in products), NaNs, -0.0 beside 0.0, infinities."""
    x = rng.integers(-2, 3, (n, f)).astype(np.float32)
    flat = x.reshape(-1)
    flat[::13] = np.nan
    flat[3::17] = -0.0
    flat[5::29] = np.inf
    flat[7::31] = -np.inf
    return x


def _laid_out(x, layout):
    """(src of x's values in `layout`, axis, the entry count): x is (n, f)."""
    n, f = x.shape
    if layout == "C":
        return x, 0, n
    if layout == "rows-apart":   # every other row of a bigger array
        big = np.zeros((2 * n, f), x.dtype)
        big[::2] = x
        return big[::2], 0, n
    if layout == "reversed":
        return np.ascontiguousarray(x[::-1])[::-1], 0, n
    if layout == "fortran":
        return np.asfortranarray(x), 0, n
    if layout == "batch-axis1":   # (2, n // 2, f) along axis 1
        return x[: 2 * (n // 2)].reshape(2, n // 2, f), 1, n // 2
    assert layout == "features-first"   # (f, n) along axis 1: one-element rows under f batch slices
    return np.ascontiguousarray(x.T), 1, n


def _index(count, size, mode, rng):
    if mode == "raise":
        return rng.integers(0, size, count)
    return rng.integers(-3, size + 3, count)   # out of range both ways


def _run(kind, op, src, idx, size, axis, mode, rng, given=None):
    """The reverse call `kind` of `op` on the forward result of `src`; `given`: the src it is told of."""
    given = src if given is None else given
    kw = {"axis": axis, "mode": mode}
    out = cs.scatter(src, idx, op, dim_size=size, **kw)
    g = np.random.default_rng(5).standard_normal(out.shape)
    dot = np.random.default_rng(6).standard_normal(src.shape)
    dst = np.full(out.shape, 0.0, out.dtype)
    dst.reshape(-1)[::3] = -0.0
    dst.reshape(-1)[1::5] = np.nan
    dst.reshape(-1)[2::7] = 1.0
    into = cs.scatter_into(dst.copy(), src, idx, op, **kw)
    if kind == "vjp_src":
        return cs.scatter_vjp_src(op, g, given, idx, out, **kw)
    if kind == "vjp_src_dst":
        return cs.scatter_vjp_src(op, g, given, idx, into, dst=dst, **kw)
    if kind == "vjp_dst":
        return cs.scatter_vjp_dst(op, g, dst, given, idx, into, **kw)
    if kind == "jvp":
        return cs.scatter_jvp(op, given, idx, out, dot, **kw)
    assert kind == "jvp_dst"
    dst_dot = np.random.default_rng(7).standard_normal(out.shape)
    return cs.scatter_jvp(op, given, idx, into, dot, dst=dst, dst_dot=dst_dot, **kw)


@pytest.mark.valid(lambda op, kind: op not in ("nansum", "nanmean") or kind.startswith("jvp"))
@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("op", SELECTING + ["nansum", "nanmean", "mul", "nanprod"])
@pytest.mark.parametrize("kind", ["vjp_src", "vjp_src_dst", "vjp_dst", "jvp", "jvp_dst"])
@pytest.mark.parametrize("layout", ["C", "rows-apart", "reversed", "fortran", "batch-axis1", "features-first"])
@pytest.mark.parametrize("mode", ["raise", "drop", "clip", "wrap"])
@pytest.mark.parametrize("n,f,size", [(600, 5, 40), (300, 3, 700), (0, 3, 4)],
                         ids=["groups", "empty-groups", "no-entries"])
def test_selection_reverse_matches_the_whole_conversion(dtype, op, kind, layout, mode, n, f, size):
    rng = np.random.default_rng(n + f + len(layout))
    src, axis, count = _laid_out(_values(n, f, rng).astype(DTYPES[dtype]), layout)
    idx = _index(count, size, mode, rng)
    with np.errstate(all="ignore"):
        got = _run(kind, op, src, idx, size, axis, mode, rng)
        want = _run(kind, op, src, idx, size, axis, mode, rng, given=src.astype(np.float64))
    assert_same(got, want)


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_selection_kernels_read_half_rows_of_any_width(dtype, monkeypatch):
    """Rows wider than the kernels' stack buffer (256 features), on two threads: each chunk of a row widened in
    turn, the same bits as the whole conversion."""
    rng = np.random.default_rng(9)
    src = _values(400, 300, rng).astype(DTYPES[dtype])
    idx = rng.integers(0, 30, 400)
    calls = []
    real = fused_kernels.extreme_back_half
    monkeypatch.setattr(fused_kernels, "extreme_back_half", lambda *a, **k: calls.append(1) or real(*a, **k))
    threads = cs.get_num_threads()
    cs.set_num_threads(2)
    try:
        for kind in ("vjp_src", "jvp"):
            got = _run(kind, "max", src, idx, 30, 0, "raise", rng)
            want = _run(kind, "max", src, idx, 30, 0, "raise", rng, given=src.astype(np.float64))
            assert_same(got, want)
    finally:
        cs.set_num_threads(threads)
    assert calls   # the half-precision kernel ran


def _loop_reference(kind, op, x, idx, size, g, dot):
    """The plain loop: per group and feature, the winners are the entries whose value is the output's (the same
    sign of zero; max/min: NaN wins a NaN output, fmax/fmin: a NaN never wins); vjp_src gives each the cotangent
    divided by their number, the JVP is the mean of their tangents."""
    out = np.full((size, x.shape[1]), np.nan)
    result = np.zeros(x.shape if kind == "vjp_src" else out.shape)
    for j in range(size):
        members = np.flatnonzero(idx == j)
        for c in range(x.shape[1]):
            v = x[members, c]
            present = v[~np.isnan(v)]
            if op in ("max", "min") and len(present) < len(v):
                kept = np.nan
            elif len(present) == 0:
                continue
            else:
                pick = present.max() if op in ("max", "fmax") else present.min()
                # of equal values -0.0 and 0.0, max keeps 0.0 and min -0.0
                same = present[present == pick]
                kept = same[~np.signbit(same)][0] if op in ("max", "fmax") and (~np.signbit(same)).any() else \
                    same[np.signbit(same)][0] if op in ("min", "fmin") and np.signbit(same).any() else same[0]
            if np.isnan(kept):
                won = np.isnan(v)
            else:
                won = (v == kept) & (np.signbit(v) == np.signbit(kept))
            if kind == "vjp_src":
                result[members[won], c] = g[j, c] / won.sum()
            else:
                total = 0.0
                for k in members[won]:
                    total += dot[k, c]
                result[j, c] = total / won.sum()
    return result


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("op", SELECTING)
@pytest.mark.parametrize("kind", ["vjp_src", "jvp"])
def test_selection_reverse_against_plain_loops(dtype, op, kind):
    rng = np.random.default_rng(12)
    n, f, size = 500, 4, 60   # some groups empty
    src = _values(n, f, rng).astype(DTYPES[dtype])
    idx = rng.integers(0, size - 10, n)
    out = cs.scatter(src, idx, op, dim_size=size)
    g = rng.standard_normal((size, f))
    dot = rng.standard_normal((n, f))
    got = cs.scatter_vjp_src(op, g, src, idx, out) if kind == "vjp_src" else cs.scatter_jvp(op, src, idx, out, dot)
    want = _loop_reference(kind, op, src.astype(np.float64), idx, size, g, dot)
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=0)


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("kind", ["vjp_src", "vjp_dst", "jvp"])
@pytest.mark.parametrize("op", ["max", "fmin"])
def test_selection_reverse_makes_no_converted_copy(dtype, kind, op, monkeypatch):
    monkeypatch.setattr(host, "STAGE_MIN_ELEMENTS", 1 << 14)   # the default: this src is read in place
    rng = np.random.default_rng(4)
    n, f, size = 100_000, 16, 500
    src = (rng.standard_normal((n, f)) * 2).astype(DTYPES[dtype])
    idx = rng.integers(0, size, n)
    out = cs.scatter(src, idx, op, dim_size=size)
    dst = np.zeros(out.shape, out.dtype)
    into = cs.scatter_into(dst.copy(), src, idx, op)
    g = rng.standard_normal(out.shape)
    dot = rng.standard_normal((n, f))
    call = {"vjp_src": lambda: cs.scatter_vjp_src(op, g, src, idx, out),
            "vjp_dst": lambda: cs.scatter_vjp_dst(op, g, dst, src, idx, into),
            "jvp": lambda: cs.scatter_jvp(op, src, idx, out, dot)}[kind]
    call()   # warm the Python layer's caches
    _, peak = traced_peak(call)
    # the float64 n x F result of vjp_src (none for the others: dst-sized tables) and n-sized index arrays; the
    # whole conversion adds a float64 copy of src, n * f * 8 bytes (12.8 MB); the bound is half a float32 copy
    result = n * f * 8 if kind == "vjp_src" else 0
    assert peak < result + n * f * 4 / 2, peak


def test_half_kernel_entry_points_validate_their_arguments():
    bits, out = np.ones((1, 4, 2), np.float16).view(np.uint16), np.zeros((1, 3, 2))
    ptr, cols = np.array([0, 1, 2, 4]), np.array([0, 1, 2, 3])   # by destination: 3 rows, 4 source rows
    by_src, dest = np.array([0, 1, 2, 3, 4]), np.array([0, 1, 2, 2])
    res_src = np.zeros((1, 4, 2))

    def ties(**kw):
        args = {"code": 1, "src": bits, "indptr": ptr, "cols": cols, "out": out, "grad_out": out,
                "tangent_src": out, "use_tangent_src": False, "result": out.copy(), "num_threads": 1}
        args.update(kw)
        select, dst_init = args.pop("select", 0), args.pop("dst_init", None)
        fused_kernels.extreme_ties_half(*args.values(), dst_init=dst_init, select=select)

    def back(**kw):
        args = {"code": 1, "src": bits, "indptr": by_src, "cols": dest, "out": out, "share": out.copy(),
                "result": res_src.copy(), "num_threads": 1}
        args.update(kw)
        select = args.pop("select", 0)
        fused_kernels.extreme_back_half(*args.values(), select=select)

    ties()
    back()   # the well-formed calls run
    for bad, match in [({"code": 0}, "code must be 1"), ({"code": 3}, "code must be 1"),
                       ({"select": 3}, "select must be 0"), ({"result": np.zeros((1, 3, 3))}, "share shape"),
                       ({"src": np.ones((1, 4, 3), np.uint16)}, "share shape"),
                       ({"tangent_src": np.zeros((1, 3, 2)), "use_tangent_src": True}, "tangent_src fit"),
                       ({"dst_init": np.zeros((1, 3, 2))[:, ::-1]}, "dst_init must share"),
                       ({"cols": np.array([0, 1, 2, 9])}, "CSR does not fit")]:
        with pytest.raises(ValueError, match=match):
            ties(**bad)
    buf = np.zeros((1, 4, 2))
    overlapping = {"share": buf[:, 1:], "result": buf, "out": np.zeros((1, 4, 2))[:, 1:]}
    for bad, match in [({"code": -1}, "code must be 1"), ({"select": -1}, "select must be 0"),
                       ({"result": np.zeros((1, 4, 3))}, "must share shape"),
                       ({"share": np.zeros((1, 3, 2))[:, ::-1]}, "must share shape"),
                       (overlapping, "must not overlap"),
                       ({"cols": np.array([0, 1, 2, 7])}, "CSR does not fit")]:
        with pytest.raises(ValueError, match=match):
            back(**bad)


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("op", ["mul", "nanprod"])
def test_product_vjp_src_against_plain_loops(dtype, op):
    """Each entry gets its group's cotangent times the product of the other members (nanprod: of the other
    non-NaN members; a NaN entry gets 0), multiplied out in index order."""
    rng = np.random.default_rng(13)
    n, f, size = 400, 3, 50   # some groups empty
    x = (rng.standard_normal((n, f)) * 1.5).astype(np.float32)
    x.reshape(-1)[::11] = 0.0
    if op == "nanprod":
        x.reshape(-1)[::7] = np.nan
    src = x.astype(DTYPES[dtype])
    idx = rng.integers(0, size - 10, n)
    g = rng.standard_normal((size, f))
    got = cs.scatter_vjp_src(op, g, src, idx, cs.scatter(src, idx, op, dim_size=size))
    v = src.astype(np.float64)
    want = np.zeros((n, f))
    for k in range(n):
        for c in range(f):
            if np.isnan(v[k, c]):
                continue
            others = [v[m, c] for m in np.flatnonzero(idx == idx[k]) if m != k and not np.isnan(v[m, c])]
            want[k, c] = g[idx[k], c] * np.prod(others)
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=0)


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("call", ["mul-vjp_src", "nanprod-vjp_src", "nanprod-vjp_dst", "mul-jvp"])
def test_product_reverse_makes_no_converted_copy(dtype, call, monkeypatch):
    monkeypatch.setattr(host, "STAGE_MIN_ELEMENTS", 1 << 14)
    rng = np.random.default_rng(8)
    n, f, size = 100_000, 16, 500
    src = (rng.standard_normal((n, f)) * 0.01 + 1).astype(DTYPES[dtype])   # group products stay finite
    idx = rng.integers(0, size, n)
    op, kind = call.split("-")
    out = cs.scatter(src, idx, op, dim_size=size)
    g = rng.standard_normal(out.shape)
    dot = rng.standard_normal((n, f))
    ones = np.ones(out.shape, out.dtype)
    into = cs.scatter_into(ones.copy(), src, idx, op)
    run = {"vjp_src": lambda: cs.scatter_vjp_src(op, g, src, idx, out),
           "vjp_dst": lambda: cs.scatter_vjp_dst(op, g, ones, src, idx, into),
           "jvp": lambda: cs.scatter_jvp(op, src, idx, out, dot)}[kind]
    with np.errstate(all="ignore"):
        run()
        _, peak = traced_peak(run)
    # vjp_src: the products of the others and the gathered cotangent (two n x F float64 arrays; the JVP's
    # coefficients and their product with the tangent likewise), no float64 copy of src (n * f * 8 bytes more)
    held = 0 if kind == "vjp_dst" else 2 * n * f * 8
    assert peak < held + n * f * 4 / 2, peak


def test_half_products_entry_point_validates_its_arguments():
    bits, partials = np.ones((1, 4, 2), np.float16).view(np.uint16), np.zeros((1, 4, 2))
    order, indptr = np.array([0, 2, 1, 3]), np.array([0, 2, 4])
    fused_kernels.exclusive_products_half(1, bits, order, indptr, partials)
    np.testing.assert_array_equal(partials, 1)   # the product of one other member, 1.0
    for args, match in [((3, bits, order, indptr, partials), "code must be 1"),
                        ((1, bits, order, indptr, np.zeros((1, 3, 2))), "partials shape"),
                        ((1, bits, np.array([0, 2, 1, 9]), indptr, partials), "outside"),
                        ((1, bits, order, np.array([0, 3, 2]), partials), "not a group"),
                        ((2, bits, order, np.array([0, 2, 5]), partials), "not a group")]:
        with pytest.raises(ValueError, match=match):
            fused_kernels.exclusive_products_half(*args)
