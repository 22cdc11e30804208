"""Regressions: one test per defect once found, named for the behaviour it pins down.

Each failed before its fix. A section comment names the ticket that reported the defects; the expected values come
from an independent reference (plain loops, NumPy, a peer op) or from the native-order / float64 / in-memory twin
of the same call, which the rest of the suite checks against the plain-loop reference.
"""
from __future__ import annotations

import re
import subprocess
import sys
import tracemalloc
import warnings

import numpy as np
import pytest

import cyscatter as cs
from compare import assert_same
from cyscatter import group_kernels, kernels
from testing import OPS, VALUE_DTYPES


# ==================================================================================================================
# Defects found by an outside hostile test of the public API (ticket: issue 17)
#
# Regression tests of the defects an independent hostile campaign found (issue 17), one section per defect.
#
# Each failed before its fix. The expected values come from the native-order / float64 / in-memory twin of the
# same call, which the rest of the suite checks against the plain-loop reference.
# ==================================================================================================================


SRC = np.array([1.0, 2.0, 3.0, 7.0])
IDX = np.array([0, 0, 1, 1])


# ---- 1. big-endian src in the softmax family, var, std and their grad versions ------------------------------

FORWARD = ["scatter_logsumexp", "scatter_softmax", "scatter_log_softmax", "scatter_var", "scatter_std"]


@pytest.mark.parametrize("name", FORWARD)
@pytest.mark.parametrize("dtype", [">f8", ">f4", ">i4"])
def test_big_endian_src_is_accepted(name, dtype):
    swapped = SRC.astype(dtype)
    native = swapped.astype(swapped.dtype.newbyteorder("="))
    got = getattr(cs, name)(swapped, IDX)
    expected = getattr(cs, name)(native, IDX)
    assert got.dtype == expected.dtype and got.dtype.isnative
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("name", FORWARD)
def test_big_endian_src_is_differentiable(name):
    autograd = pytest.importorskip("autograd")
    import autograd.numpy as anp
    import grad as csgrad
    loss = lambda s: anp.sum(getattr(csgrad, name)(s, IDX) ** 2)   # noqa: E731
    np.testing.assert_allclose(autograd.grad(loss)(SRC.astype(">f8")), autograd.grad(loss)(SRC), rtol=1e-15)


# ---- 2. a missing grad_out / src_dot is the documented TypeError, not KeyError -------------------------------

@pytest.mark.parametrize("name, call", [
    ("grad_out", lambda o: cs.scatter_logsumexp_vjp(None, SRC, IDX, o["lse"])),
    ("src_dot", lambda o: cs.scatter_logsumexp_jvp(SRC, IDX, o["lse"], None)),
    ("grad_out", lambda o: cs.scatter_var_vjp(None, SRC, IDX, o["var"])),
    ("src_dot", lambda o: cs.scatter_var_jvp(SRC, IDX, o["var"], None)),
    ("grad_out", lambda o: cs.scatter_std_vjp(None, SRC, IDX, o["std"])),
    ("src_dot", lambda o: cs.scatter_std_jvp(SRC, IDX, o["std"], None)),
    ("grad_out", lambda o: cs.scatter_softmax_vjp(None, o["sm"], IDX)),
    ("src_dot", lambda o: cs.scatter_log_softmax_jvp(o["sm"], IDX, None)),
    ("out", lambda o: cs.scatter_var_vjp(np.ones(2), SRC, IDX, None)),
    ("src", lambda o: cs.scatter_logsumexp_vjp(np.ones(2), None, IDX, o["lse"])),
])
def test_missing_array_is_a_type_error_naming_it(name, call):
    outs = dict(lse=cs.scatter_logsumexp(SRC, IDX), var=cs.scatter_var(SRC, IDX), std=cs.scatter_std(SRC, IDX),
                sm=cs.scatter_softmax(SRC, IDX))
    with pytest.raises(TypeError, match=rf"^{name} .*is required, got None"):
        call(outs)


# ---- 3. float32 gradients of grad.scatter_var / scatter_std stay float32 ----------------------------------------

@pytest.mark.parametrize("name", ["scatter_var", "scatter_std"])
def test_float32_moment_gradients_stay_float32(name):
    autograd = pytest.importorskip("autograd")
    import autograd.numpy as anp
    import grad as csgrad
    src32 = SRC.astype(np.float32)
    f = lambda s: getattr(csgrad, name)(s, IDX, ddof=1)   # noqa: E731
    reverse = autograd.grad(lambda s: anp.sum(f(s)))(src32)
    _, forward = autograd.make_jvp(f)(src32)(np.ones(4, np.float32))
    assert reverse.dtype == np.float32 and forward.dtype == np.float32
    np.testing.assert_allclose(reverse, autograd.grad(lambda s: anp.sum(f(s)))(SRC), rtol=1e-6)


# ---- 4. out, grad_out, src_dot, dst_dot must hold numbers --------------------------------------------------------

BAD_DTYPES = ["bool", "object", "U4", "S4", "M8[s]", "m8[s]"]


def _reverse_calls():
    out = cs.scatter(SRC, IDX, "div")
    lse, var, sm = cs.scatter_logsumexp(SRC, IDX), cs.scatter_var(SRC, IDX), cs.scatter_softmax(SRC, IDX)
    ptr = np.array([0, 2, 4])
    seg = cs.segment(SRC, ptr, "max")
    g2, t4 = np.ones(2), np.ones(4)
    return {
        "scatter_vjp_src": (lambda a: dict(op="div", grad_out=a["grad_out"], src=SRC, index=IDX, out=a["out"]),
                            dict(grad_out=g2, out=out)),
        "scatter_vjp_dst": (lambda a: dict(op="add", grad_out=a["grad_out"], dst=g2, src=SRC, index=IDX,
                                           out=a["out"]), dict(grad_out=g2, out=g2 + [3.0, 10.0])),
        "scatter_jvp": (lambda a: dict(op="div", src=SRC, index=IDX, out=a["out"], src_dot=a["src_dot"], dst=g2,
                                       dst_dot=a["dst_dot"]),
                        dict(out=out, src_dot=t4, dst_dot=g2)),
        "gather_vjp_src": (lambda a: dict(grad_out=a["grad_out"], index=IDX, src_shape=(2,)), dict(grad_out=t4)),
        "gather_jvp": (lambda a: dict(src_dot=a["src_dot"], index=IDX), dict(src_dot=g2)),
        "scatter_logsumexp_vjp": (lambda a: dict(grad_out=a["grad_out"], src=SRC, index=IDX, out=a["out"]),
                                  dict(grad_out=g2, out=lse)),
        "scatter_logsumexp_jvp": (lambda a: dict(src=SRC, index=IDX, out=a["out"], src_dot=a["src_dot"]),
                                  dict(out=lse, src_dot=t4)),
        "scatter_softmax_vjp": (lambda a: dict(grad_out=a["grad_out"], out=a["out"], index=IDX),
                                dict(grad_out=t4, out=sm)),
        "scatter_softmax_jvp": (lambda a: dict(out=a["out"], index=IDX, src_dot=a["src_dot"]),
                                dict(out=sm, src_dot=t4)),
        "scatter_log_softmax_vjp": (lambda a: dict(grad_out=a["grad_out"], out=a["out"], index=IDX),
                                    dict(grad_out=t4, out=np.log(sm))),
        "scatter_log_softmax_jvp": (lambda a: dict(out=a["out"], index=IDX, src_dot=a["src_dot"]),
                                    dict(out=np.log(sm), src_dot=t4)),
        "scatter_var_vjp": (lambda a: dict(grad_out=a["grad_out"], src=SRC, index=IDX, out=a["out"]),
                            dict(grad_out=g2, out=var)),
        "scatter_var_jvp": (lambda a: dict(src=SRC, index=IDX, out=a["out"], src_dot=a["src_dot"]),
                            dict(out=var, src_dot=t4)),
        "scatter_std_vjp": (lambda a: dict(grad_out=a["grad_out"], src=SRC, index=IDX, out=a["out"]),
                            dict(grad_out=g2, out=np.sqrt(var))),
        "scatter_std_jvp": (lambda a: dict(src=SRC, index=IDX, out=a["out"], src_dot=a["src_dot"]),
                            dict(out=np.sqrt(var), src_dot=t4)),
        "segment_vjp_src": (lambda a: dict(op="max", grad_out=a["grad_out"], src=SRC, indptr=ptr, out=a["out"]),
                            dict(grad_out=g2, out=seg)),
        "segment_jvp": (lambda a: dict(op="max", src=SRC, indptr=ptr, out=a["out"], src_dot=a["src_dot"]),
                        dict(out=seg, src_dot=t4)),
        "gather_segment_vjp_src": (lambda a: dict(grad_out=a["grad_out"], indptr=ptr), dict(grad_out=t4)),
    }


REVERSE = _reverse_calls()
REVERSE_CASES = [(f, arg, dtype) for f, (_, given) in REVERSE.items() for arg in given for dtype in BAD_DTYPES]


def _positional_call(name, kwargs):
    import inspect
    params = inspect.signature(getattr(cs, name)).parameters
    args = [kwargs.pop(p) for p, v in params.items() if v.kind == v.POSITIONAL_OR_KEYWORD and p in kwargs]
    return getattr(cs, name)(*args, **kwargs)


@pytest.mark.parametrize("name, arg, dtype", REVERSE_CASES)
def test_reverse_arrays_of_no_number_dtype_are_refused(name, arg, dtype):
    make, given = REVERSE[name]
    bad = dict(given, **{arg: given[arg].astype(dtype) if dtype != "M8[s]" and dtype != "m8[s]"
                         else given[arg].astype(np.int64).astype(dtype)})
    with pytest.raises(TypeError, match=rf"^{arg} must hold numbers.*{re.escape(str(np.dtype(dtype)))}"):
        _positional_call(name, make(bad))


@pytest.mark.parametrize("name, arg", [(f, arg) for f, (_, given) in REVERSE.items() for arg in given
                                       if f != "gather_jvp"])   # a gather: the tangent keeps its dtype
def test_reverse_arrays_of_integers_are_cast_to_float64(name, arg):
    make, given = REVERSE[name]
    as_int = dict(given, **{arg: np.round(given[arg]).astype(np.int64)})
    as_float = dict(given, **{arg: np.round(given[arg])})
    got = _positional_call(name, make(as_int))
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, _positional_call(name, make(as_float)))


def test_a_string_out_is_refused():
    out = cs.scatter(SRC, IDX, "div")
    with pytest.raises(TypeError, match="out must hold numbers"):
        cs.scatter_jvp("div", SRC, IDX, out.astype("U4"), np.ones(4))


# ---- 5. cyscatter.dask validates as the in-memory functions do -----------------------------------------------

@pytest.mark.parametrize("fill_value", [2.5, np.nan, 1e30, -1, 300, 2.0, "a", [1, 2], np.float32(2.0)])
@pytest.mark.parametrize("dtype", [np.int64, np.uint8, np.float32])
def test_dask_gather_fill_value_as_in_memory(fill_value, dtype):
    da = pytest.importorskip("dask.array")
    import cyscatter.dask as csd
    src, index = np.arange(3, dtype=dtype), np.array([0, 5, 2, -1])
    try:
        expected = cs.gather(src, index, mode="drop", fill_value=fill_value)
    except (TypeError, ValueError) as err:
        with pytest.raises(type(err), match="fill_value"):
            csd.gather(da.from_array(src, chunks=2), da.from_array(index, chunks=2), mode="drop",
                       fill_value=fill_value)
        return
    got = csd.gather(da.from_array(src, chunks=2), da.from_array(index, chunks=2), mode="drop",
                     fill_value=fill_value).compute(scheduler="sync")
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


def test_dask_gather_default_fill_is_zero_bytes_as_in_memory():
    da = pytest.importorskip("dask.array")
    import cyscatter.dask as csd
    src, index = np.array(["ab", "cd"]), np.array([1, 7])
    got = csd.gather(da.from_array(src, chunks=1), da.from_array(index, chunks=1), mode="drop")
    np.testing.assert_array_equal(got.compute(scheduler="sync"), cs.gather(src, index, mode="drop"))


@pytest.mark.parametrize("dim_chunks, error", [(0, ValueError), (-2, ValueError), (2.5, TypeError),
                                               ((4, -1), ValueError), ((1, 1), ValueError), ("2", TypeError)])
def test_dask_dim_chunks_refused_naming_it(dim_chunks, error):
    da = pytest.importorskip("dask.array")
    import cyscatter.dask as csd
    with pytest.raises(error, match="dim_chunks"):
        csd.scatter(da.from_array(SRC, chunks=2), da.from_array(IDX, chunks=2), dim_size=3, dim_chunks=dim_chunks)


@pytest.mark.parametrize("kwargs", [dict(split_every=np.int64(3)), dict(dim_chunks=np.int64(2)),
                                    dict(dim_size=np.int64(3)), dict(axis=np.int64(0)),
                                    dict(dim_chunks=(np.int64(1), np.uint8(2)))])
def test_dask_takes_numpy_integers(kwargs):
    da = pytest.importorskip("dask.array")
    import cyscatter.dask as csd
    call = dict(dim_size=3, **kwargs) if "dim_size" not in kwargs else kwargs
    got = csd.scatter(da.from_array(SRC, chunks=2), da.from_array(IDX, chunks=2), "max", **call)
    np.testing.assert_array_equal(got.compute(scheduler="sync"), cs.scatter(SRC, IDX, "max", dim_size=3))


def test_dask_argmax_of_a_0d_index():
    da = pytest.importorskip("dask.array")
    import cyscatter.dask as csd
    src, index = np.array([3.0, 9.0, 1.0]), np.array(1)
    got = csd.scatter_argmax(da.from_array(src, chunks=2), index, dim_size=2).compute(scheduler="sync")
    np.testing.assert_array_equal(got, cs.scatter_argmax(src, index, dim_size=2))


# ---- 6. the allocating scatter's byte count cannot wrap --------------------------------------------------------

@pytest.mark.parametrize("shape, dim_size", [((1, 10), 1676240524292489356), ((1, 3), 2**62 - 1), ((2,), 2**62),
                                             ((1, 2), 2**61 + 1)])
def test_byte_count_overflow_is_the_documented_value_error(shape, dim_size):
    with pytest.raises(ValueError, match=rf"dim_size={dim_size} .*too big"):
        cs.scatter(np.ones(shape), np.array([0] * shape[0]), dim_size=dim_size)


def test_fresh_table_refuses_a_wrapping_byte_count():
    with pytest.raises(ValueError, match="too big"):
        kernels.fresh_table((1676240524292489356, 10), np.float64, 1.0)
    assert kernels.fresh_table((2**40, 0, 8), np.float64, 1.0).shape == (2**40, 0, 8)   # no bytes at all


# ---- 7. errors name the argument at fault -----------------------------------------------------------------------

@pytest.mark.parametrize("call, error, arg", [
    (lambda: cs.scatter(SRC, IDX, dim_size=2**40), MemoryError, "dim_size"),
    (lambda: cs.scatter(SRC, IDX, "max", dim_size=2**40), MemoryError, "dim_size"),
    (lambda: cs.scatter_softmax(SRC, IDX, dim_size=2**40), MemoryError, "dim_size"),
    (lambda: cs.scatter_var(SRC, IDX, dim_size=2**40), MemoryError, "dim_size"),
    (lambda: cs.scatter_argmax(SRC, IDX, dim_size=2**40), MemoryError, "dim_size"),
    (lambda: cs.gather_vjp_src(SRC, IDX, (2**40,)), MemoryError, "src_shape"),
    (lambda: cs.scatter(SRC, IDX * 2**39), MemoryError, "dim_size"),    # inferred from the index
    (lambda: cs.gather(None, IDX), TypeError, "src"),
    (lambda: cs.gather(SRC.astype(object), IDX), TypeError, "src"),
    (lambda: cs.gather_into(np.zeros(4, object), SRC, IDX), TypeError, "dst"),
    (lambda: cs.segment(None, np.array([0, 4])), TypeError, "src"),
    (lambda: cs.segment_vjp_src("add", np.ones(1), None, np.array([0, 4]), np.ones(1)), TypeError, "src"),
    (lambda: cs.scatter_softmax_vjp(np.ones(4), np.ones(3), IDX), ValueError, "out"),
    (lambda: cs.scatter_softmax_vjp(np.ones(4), np.ones(4, bool), IDX), TypeError, "out"),
    (lambda: cs.scatter_logsumexp_jvp(SRC, IDX, np.float64(1.0), SRC), ValueError, "out"),
    (lambda: cs.gather_segment_vjp_src(np.ones(3), np.array([0, 2, 4])), ValueError, "grad_out"),
    (lambda: cs.gather_jvp(np.float64(1.0), IDX), ValueError, "src_dot"),
    (lambda: cs.segment_ids(np.array([0, 10**12])), MemoryError, "indptr"),
])
def test_error_names_the_argument(call, error, arg):
    with pytest.raises(error) as info:
        call()
    assert re.search(rf"(?<![\w.]){arg}(?!\w)", str(info.value)), str(info.value)


# ---- 8. kernels reachable by import validate what their loops rely on --------------------------------------

KERNEL_CALLS = {
    "exclusive_products: indptr past order": lambda: kernels.exclusive_products(
        np.ones((1, 3, 1)), np.arange(3), np.array([0, 10**9]), np.zeros((1, 3, 1))),
    "exclusive_products: order past src": lambda: kernels.exclusive_products(
        np.ones((1, 3, 1)), np.array([0, 1, 10**9]), np.array([0, 3]), np.zeros((1, 3, 1))),
    "exclusive_products: negative order": lambda: kernels.exclusive_products(
        np.ones((1, 3, 1)), np.array([0, 1, -1]), np.array([0, 3]), np.zeros((1, 3, 1))),
    "exclusive_products: decreasing indptr": lambda: kernels.exclusive_products(
        np.ones((1, 3, 1)), np.arange(3), np.array([0, 3, 1]), np.zeros((1, 3, 1))),
    "exclusive_products: small partials": lambda: kernels.exclusive_products(
        np.ones((4, 3, 1)), np.arange(3), np.array([0, 3]), np.zeros((1, 1, 1))),
    "exclusive_products_jvp: small tangent": lambda: kernels.exclusive_products_jvp(
        np.ones((1, 3, 1)), np.ones((1, 1, 1)), np.arange(3), np.array([0, 3]), np.zeros((1, 3, 1)),
        np.zeros((1, 3, 1))),
    "segment_reduce: small out": lambda: group_kernels.segment_reduce(
        0, np.ones((3, 5, 2)), np.array([0, 2, 5]), np.zeros((1, 1, 1))),
    "segment_reduce: unknown op": lambda: group_kernels.segment_reduce(
        99, np.ones((1, 5, 1)), np.array([0, 5]), np.zeros((1, 1, 1))),
    "scatter_runs: small out": lambda: group_kernels.scatter_runs(
        0, np.ones((3, 5, 2)), np.zeros(5, np.int64), np.zeros((1, 1, 1))),
    "scatter_runs: short index": lambda: group_kernels.scatter_runs(
        0, np.ones((1, 5, 1)), np.zeros(1, np.int64), np.zeros((1, 1, 1))),
    "scatter_runs: short counts": lambda: group_kernels.scatter_runs(
        0, np.ones((1, 5, 1)), np.arange(5), np.zeros((1, 5, 1)), np.zeros(1, np.int64)),
    "scatter_arg: small best": lambda: group_kernels.scatter_arg(
        4, np.ones((3, 5, 2)), np.zeros(5, np.int64), np.zeros((1, 1, 1)), np.zeros((1, 1, 1), np.int64)),
    "scatter_arg: arg unlike best": lambda: group_kernels.scatter_arg(
        4, np.ones((1, 5, 1)), np.zeros(5, np.int64), np.zeros((1, 2, 1)), np.zeros((1, 1, 1), np.int64)),
    "scatter_arg: short index": lambda: group_kernels.scatter_arg(
        4, np.ones((1, 5, 1)), np.zeros(1, np.int64), np.zeros((1, 1, 1)), np.zeros((1, 1, 1), np.int64)),
    "fresh_table: negative dim": lambda: kernels.fresh_table((-5, 10), np.float64, 1.0),
}


@pytest.mark.parametrize("name", KERNEL_CALLS)
def test_kernel_entry_points_refuse_arguments_that_leave_their_arrays(name):
    with pytest.raises(ValueError):
        KERNEL_CALLS[name]()


def test_exclusive_products_still_computes():
    partials = np.zeros((1, 3, 1))
    kernels.exclusive_products(np.array([2.0, 3.0, 5.0]).reshape(1, 3, 1), np.array([2, 0, 1]),
                               np.array([0, 1, 3]), partials)
    np.testing.assert_array_equal(partials.ravel(), [3.0, 2.0, 1.0])   # groups {2}, {0, 1}


def test_bad_kernel_arguments_do_not_crash_the_interpreter():
    """The same calls in a child process: a crash there (not an exception) fails this test."""
    code = ("import numpy as np\nfrom cyscatter import kernels, group_kernels\n"
            "for call in [lambda: kernels.exclusive_products(np.ones((1, 3, 1)), np.arange(3), "
            "np.array([0, 10**9]), np.zeros((1, 3, 1))), lambda: group_kernels.scatter_runs(0, np.ones((3, 5, 2)), "
            "np.zeros(5, np.int64), np.zeros((1, 1, 1)))]:\n"
            "    try:\n        call()\n    except ValueError:\n        pass\nprint('alive')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=str(__import__("pathlib").Path(cs.__file__).parents[1]))
    assert done.returncode == 0 and "alive" in done.stdout, done.stderr[-2000:]


# ==================================================================================================================
# NaN-skipping ops: a NaN entry is absent, its tangent dropped (ticket: issue 18, second outside test)
#
# Regressions from the independent hostile test of issue 18's second round (NaN-skipping ops):
#
# - a NaN entry of nansum/nanprod is absent: the value held stays as it is bit for bit (a -0.0 dst stays -0.0; a
#   complex dst with a NaN part is not multiplied by 1+0j), as ``np.add.at``/``np.multiply.at`` over the non-NaN
#   entries; compared with those on every backend and kernel family (scatter, segment, gather_scatter, scans);
# - the forward derivatives (scatter_jvp, segment_jvp, grad's forward mode) drop the tangent of an entry that
#   takes no part, a NaN entry of a NaN-skipping op or an entry that lost a max/min, even an inf or NaN tangent,
#   as JAX does (compared with jax.jvp where JAX has the op).
# ==================================================================================================================


NAN = np.nan


def ufunc_at_without_nan(ufunc, dst, src, index):
    """`ufunc.at` over the entries whose src is not NaN (complex: neither part), one feature column at a time."""
    out = dst.copy()
    for f in range(src.shape[1]):
        keep = ~np.isnan(src[:, f])
        column = out[:, f].copy()
        ufunc.at(column, index[keep], src[keep, f])
        out[:, f] = column
    return out


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("op,ufunc", [("nansum", np.add), ("nanprod", np.multiply)])
def test_nan_entries_leave_dst_as_it_is(backend, op, ufunc, dtype):
    rng = np.random.default_rng([len(op), len(dtype)])
    n, rows, width = 300, 7, 19
    src = rng.choice(np.array([-0.0, 0.0, 1.5, -2.0, NAN]), (n, width)).astype(dtype)
    dst = rng.choice(np.array([-0.0, 0.0, 3.0, NAN]), (rows, width)).astype(dtype)
    if np.dtype(dtype).kind == "c":
        src = src + 1j * rng.choice(np.array([-0.0, 0.0, 0.5, NAN]), (n, width))
        dst = dst + 1j * rng.choice(np.array([-0.0, 0.0, -1.0, NAN]), (rows, width))
    index = rng.integers(0, rows, n)
    expected = ufunc_at_without_nan(ufunc, dst, src, index)
    work = backend.asarray(dst.copy())
    cs.scatter_into(work, backend.asarray(src), backend.asarray(index), op)
    assert_same(backend.to_numpy(work), expected)


@pytest.mark.parametrize("op,ufunc", [("nansum", np.add), ("nanprod", np.multiply)])
@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_segment_gather_scatter_and_scan_skip_nan_exactly(op, ufunc, dtype):
    rng = np.random.default_rng([len(op), len(dtype), 2])
    src = rng.choice(np.array([-0.0, 2.0, NAN]), (40, 5)).astype(dtype)
    if np.dtype(dtype).kind == "c":
        src = src + 1j * rng.choice(np.array([-0.0, 0.25, NAN]), (40, 5))
    index = np.sort(rng.integers(0, 6, 40))
    start = np.full((6, 5), 1 if op == "nanprod" else 0, dtype)
    expected = ufunc_at_without_nan(ufunc, start, src, index)
    indptr = np.searchsorted(index, np.arange(7))
    assert_same(cs.segment(src, indptr, op), expected)
    assert_same(cs.gather_scatter(src, np.arange(40), index, op, dim_size=6), expected)
    scan_op = "add" if op == "nansum" else "mul"
    clean = np.where(np.isnan(src), 0 if op == "nansum" else 1, src)
    total = cs.scatter_scan(clean, index, scan_op)   # the scans have no NaN-skipping op: the twin on clean data
    assert_same(total[np.searchsorted(index, np.arange(6), side="right")[np.bincount(index, minlength=6) > 0] - 1],
                cs.scatter(clean, index, scan_op)[np.bincount(index, minlength=6) > 0])


OPS_JAX = {"nansum": "add", "fmax": "max", "fmin": "min"}


@pytest.mark.parametrize("op", ["nansum", "nanmean", "nanprod", "fmax", "fmin"])
@pytest.mark.parametrize("bad", [NAN, np.inf])
def test_jvp_drops_the_tangent_of_a_nan_entry(op, bad):
    x = np.array([1.0, NAN, 3.0, 2.0])
    index = np.array([0, 0, 0, 1])
    tangent = np.array([1.0, bad, 0.5, 2.0])
    out = cs.scatter(x, index, op)
    clean_x, clean_t, clean_i = x[[0, 2, 3]], tangent[[0, 2, 3]], index[[0, 2, 3]]   # the entry left out
    twin = {"nansum": "add", "nanmean": "mean", "nanprod": "mul", "fmax": "max", "fmin": "min"}[op]
    expected = cs.scatter_jvp(twin, clean_x, clean_i, cs.scatter(clean_x, clean_i, twin), clean_t)
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # no RuntimeWarning either
        assert_same(cs.scatter_jvp(op, x, index, out, tangent), expected)
        indptr = np.array([0, 3, 4])
        assert_same(cs.segment_jvp(op, x, indptr, cs.segment(x, indptr, op), tangent), expected)
    assert np.isfinite(expected).all()


@pytest.mark.parametrize("op", ["max", "min", "fmax", "fmin"])
def test_jvp_of_a_losing_entry_with_an_inf_tangent(op):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    x = np.array([1.0, 2.0, -1.0])
    index = np.zeros(3, int)
    tangent = np.array([np.inf, 1.0, NAN])
    out = cs.scatter(x, index, op)
    reduce = jnp.max if op.endswith("max") else jnp.min
    _, expected = jax.jvp(lambda v: reduce(v)[None], (jnp.asarray(x),), (jnp.asarray(tangent),))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert_same(cs.scatter_jvp(op, x, index, out, tangent), np.asarray(expected))


@pytest.mark.parametrize("op", ["nansum", "nanmean", "nanprod", "fmax", "fmin", "max"])
@pytest.mark.parametrize("form", ["scatter", "segment", "gather_scatter"])
def test_grad_forward_mode_drops_what_takes_no_part(op, form):
    autograd = pytest.importorskip("autograd")
    import autograd.numpy as anp
    import grad as csgrad
    y = np.array([1.0, -1.0, 4.0, 9.0])   # sqrt(-1) is NaN, its tangent NaN too
    index = np.array([0, 0, 0, 1])
    if form == "scatter":
        f = lambda z: csgrad.scatter(anp.sqrt(z), index, op)                                      # noqa: E731
    elif form == "segment":
        f = lambda z: csgrad.segment(anp.sqrt(z), np.array([0, 3, 4]), op)                        # noqa: E731
    else:
        f = lambda z: csgrad.gather_scatter(anp.sqrt(z)[:, None], np.arange(4), index, op)[:, 0]  # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # sqrt(-1)
        _, actual = autograd.make_jvp(f)(y)(np.ones(4))
    keep = [0, 2, 3]
    twin = {"nansum": "add", "nanmean": "mean", "nanprod": "mul", "fmax": "max", "fmin": "min", "max": "max"}[op]
    clean = np.sqrt(y[keep])
    expected = cs.scatter_jvp(twin, clean, index[keep], cs.scatter(clean, index[keep], twin), 0.5 / clean)
    if op == "max":   # max does not skip the NaN entry: it wins, and its NaN tangent with it
        expected = np.array([NAN, expected[1]])
    assert_same(np.asarray(actual, dtype=float), expected)


# ==================================================================================================================
# Dask scans of small integers, reverse functions with no surviving edge, fmax/fmin derivatives, error messages
# (ticket: issue 18, outside test "hostile2")
#
# Regressions from the second outside test of issue 18 (hostile2): the Dask scan's dropped entries in small integer
# dtypes (B1), the gather_scatter weight gradient with no surviving edge (B2), fmax/fmin derivatives through a
# losing message of +-inf (B3), and error messages that name the function called (L1, L2) and blame `grad_out`
# (L3). Each test failed before its fix; each compares with an independent reference (plain loops) or a peer op
# (max for fmax, min for fmin).
# ==================================================================================================================


# ---- B1: cyscatter.dask.scatter_scan, dropped entries after the first chunk --------------------------------------

SCAN_OPS = ("add", "mul", "max", "min")
SCAN_MODES = ("drop", "normalize_drop", "clip", "wrap")
# 9 entries over 2 groups: 5, -1 and 9 are out of range (drop: all three; normalize_drop: 5 and 9)
SCAN_INDEX = np.array([0, 5, 1, -1, 0, 9, 1, 5, 0])
DIM = 2


def _scan_dtypes():
    out = [np.dtype(t) for t in VALUE_DTYPES] + [np.dtype(bool)]
    try:
        import ml_dtypes
        out.append(np.dtype(ml_dtypes.bfloat16))
    except ImportError:
        pass
    return out


def _resolve(i: int, mode: str):
    """The group of entry `i` under `mode` (None: dropped): an independent reading of the modes' rules."""
    if mode == "clip":
        return min(max(i, 0), DIM - 1)
    if mode == "wrap":
        return i % DIM
    if mode == "normalize_drop" and -DIM <= i < 0:
        return i + DIM
    return i if 0 <= i < DIM else None


def _identity(op: str, dtype: np.dtype):
    if op in ("add", "mul"):
        return 0 if op == "add" else 1
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return int(info.min if op == "max" else info.max)
    return -np.inf if op == "max" else np.inf


def _scan_reference(x, op: str, mode: str, reverse: bool):
    """Plain loop over the entries in scan order; integers in Python ints, wrapped to the dtype at the end
    (NumPy's modular add/mul; max/min exact), floats in float64. Dropped entries hold the dtype's identity."""
    dtype = x.dtype
    integer = dtype.kind in "iu"
    values = [int(v) if integer else float(v) for v in x]
    run: dict = {}
    out = [None] * len(values)
    order = range(len(values))[::-1] if reverse else range(len(values))
    combine = {"add": lambda a, b: a + b, "mul": lambda a, b: a * b, "max": max, "min": min}[op]
    for k in order:
        g = _resolve(int(SCAN_INDEX[k]), mode)
        if g is None:
            out[k] = _identity(op, dtype)
            continue
        run[g] = values[k] if g not in run else combine(run[g], values[k])
        out[k] = run[g]
    if integer:
        bits = dtype.itemsize * 8
        wrapped = [v % (1 << bits) for v in out]
        return np.array(wrapped, np.uint64).astype(f"u{dtype.itemsize}").view(dtype)
    return np.array(out, np.float64)


def _scan_values(dtype: np.dtype, op: str):
    rng = np.random.default_rng(7)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        if op == "mul":   # small factors: products that wrap a few times, not only to 0
            return rng.integers(max(info.min, -3), 4, SCAN_INDEX.size).astype(dtype)
        return rng.integers(info.min, info.max, SCAN_INDEX.size, dtype=dtype, endpoint=True)
    values = rng.uniform(-2, 2, SCAN_INDEX.size)
    if dtype.kind == "c":
        values = values + 1j * rng.uniform(-2, 2, SCAN_INDEX.size)
    return values.astype(dtype)


@pytest.mark.parametrize("mode", SCAN_MODES)
@pytest.mark.parametrize("op", SCAN_OPS)
@pytest.mark.parametrize("dtype", _scan_dtypes(), ids=str)
def test_dask_scan_equals_core_and_reference(dtype, op, mode):
    da = pytest.importorskip("dask.array")
    import cyscatter.dask as csd
    x = _scan_values(dtype, op)
    try:
        cs.scatter_scan(x, SCAN_INDEX, op, dim_size=DIM, mode=mode)
    except TypeError:   # a dtype the core refuses (bool; complex for max/min): the Dask layer refuses it too
        with pytest.raises(TypeError):
            csd.scatter_scan(da.from_array(x, chunks=2), SCAN_INDEX, op, dim_size=DIM, mode=mode)
        return
    exact = dtype.kind in "iub" or op in ("max", "min")
    for reverse in (False, True):
        core = cs.scatter_scan(x, SCAN_INDEX, op, dim_size=DIM, mode=mode, reverse=reverse)
        assert core.dtype == dtype
        if dtype.kind != "c":
            want = _scan_reference(x, op, mode, reverse)
            if exact:
                np.testing.assert_array_equal(core, want.astype(dtype))
            else:
                np.testing.assert_allclose(core.astype(np.float64), want, rtol=2e-2 if dtype.itemsize == 2 else 1e-6)
        for chunks in (1, 2, 4):
            got = csd.scatter_scan(da.from_array(x, chunks=chunks), SCAN_INDEX, op, dim_size=DIM, mode=mode,
                                   reverse=reverse).compute(scheduler="sync")
            assert got.dtype == dtype
            if exact:
                np.testing.assert_array_equal(got, core, err_msg=f"chunks={chunks} reverse={reverse}")
            else:   # the carry adds up whole chunks' totals: equal to rounding
                np.testing.assert_allclose(got.astype(np.complex128), core.astype(np.complex128),
                                           rtol=2e-2 if dtype.itemsize <= 2 else 1e-5)


def test_dask_scan_small_int_dropped_entries_hold_the_dtype_identity():
    """The tester's reproducer: int64's identity cast down gave 0 (max) and -1 (min) after the first chunk."""
    da = pytest.importorskip("dask.array")
    import cyscatter.dask as csd
    x, idx = np.array([1, 2, 3, 4], np.int8), np.array([0, 5, 0, 5])
    got = csd.scatter_scan(da.from_array(x, chunks=1), idx, "max", dim_size=2, mode="drop").compute()
    np.testing.assert_array_equal(got, np.array([1, -128, 3, -128], np.int8))
    x16 = x.astype(np.int16)
    got = csd.scatter_scan(da.from_array(x16, chunks=2), idx, "min", dim_size=2, mode="normalize_drop").compute()
    np.testing.assert_array_equal(got, np.array([1, 32767, 1, 32767], np.int16))


# ---- B2: no surviving edge (E = 0, or every edge dropped) --------------------------------------------------------

def _gs_ops():
    return [op for op in OPS if not cs.get_op(op).winner]


NO_EDGES = {"E0": (np.zeros(0, np.int64), np.zeros(0, np.int64), np.ones(0), "raise"),
            "all_dropped": (np.array([9, 0]), np.array([0, 7]), np.ones(2), "drop")}


@pytest.mark.parametrize("case", list(NO_EDGES))
@pytest.mark.parametrize("op", _gs_ops())
def test_gather_scatter_reverse_with_no_surviving_edge(backend, op, case):
    """With no edge the output does not depend on src or weight: every derivative is 0 (shape and dtype kept)."""
    gi, si, w, mode = NO_EDGES[case]
    x = np.arange(6.0).reshape(2, 3) + 1
    out = backend.call(cs.gather_scatter, x, gi, si, op, weight=w, dim_size=2, mode=mode)
    g = np.ones_like(out)
    kw = dict(weight=w, dim_size=2, mode=mode)
    d_src = backend.call(cs.gather_scatter_vjp_src, op, g, x, gi, si, out, **kw)
    d_w = backend.call(cs.gather_scatter_vjp_weight, op, g, x, gi, si, out, **kw)
    t = backend.call(cs.gather_scatter_jvp, op, x, gi, si, out, np.ones_like(x), weight=w, weight_dot=np.ones_like(w),
                     dim_size=2, mode=mode)
    np.testing.assert_array_equal(d_src, np.zeros_like(x))
    np.testing.assert_array_equal(d_w, np.zeros_like(w))
    np.testing.assert_array_equal(t, np.zeros_like(out))
    d_src = backend.call(cs.gather_scatter_vjp_src, op, g, x, gi, si, out, dim_size=2, mode=mode)   # unweighted
    np.testing.assert_array_equal(d_src, np.zeros_like(x))


@pytest.mark.parametrize("op", ["nansum", "nanmean", "nanprod", "fmax", "fmin", "mul", "div", "add", "max"])
def test_gather_scatter_weight_gradient_with_no_surviving_edge_per_head(op):
    """A per-head weight (E, heads) with every edge dropped: zeros of the weight's shape."""
    x = np.ones((2, 2, 3))
    gi, si, w = np.array([9, 8]), np.array([0, 1]), np.ones((2, 2))
    out = cs.gather_scatter(x, gi, si, op, weight=w, dim_size=2, mode="drop")
    got = cs.gather_scatter_vjp_weight(op, np.ones_like(out), x, gi, si, out, weight=w, dim_size=2, mode="drop")
    np.testing.assert_array_equal(got, np.zeros_like(w))


def test_gather_scatter_weight_gradient_autograd_with_no_surviving_edge():
    pytest.importorskip("autograd")
    from autograd import grad

    import grad as csgrad
    x, gi, si = np.ones((2, 3)), np.array([9]), np.array([0])
    for op in ("nansum", "nanmean", "nanprod", "fmax", "fmin", "mul", "div"):
        got = grad(lambda w: csgrad.gather_scatter(x, gi, si, op, weight=w, dim_size=2, mode="drop").sum())(np.ones(1))
        np.testing.assert_array_equal(got, [0.0])


@pytest.mark.parametrize("op", [op for op in OPS if not cs.get_op(op).winner])
def test_scatter_and_segment_reverse_with_no_entry(backend, op):
    """The core reverse functions with no entry (E = 0) or every entry dropped: zero derivatives, no error."""
    cases = ((np.ones((0, 3)), np.zeros(0, np.int64), "raise"), (np.ones((2, 3)), np.array([5, 7]), "drop"))
    for xs, idx, mode in cases:
        out = backend.call(cs.scatter, xs, idx, op, dim_size=2, mode=mode)
        g = np.ones(out.shape)
        np.testing.assert_array_equal(backend.call(cs.scatter_vjp_src, op, g, xs, idx, out, mode=mode),
                                      np.zeros(xs.shape))
        np.testing.assert_array_equal(backend.call(cs.scatter_jvp, op, xs, idx, out, np.ones_like(xs), mode=mode),
                                      np.zeros(out.shape))
    xs, ptr = np.ones((0, 3)), np.array([0, 0, 0])
    out = backend.call(cs.segment, xs, ptr, op)
    np.testing.assert_array_equal(backend.call(cs.segment_vjp_src, op, np.ones(out.shape), xs, ptr, out),
                                  np.zeros((0, 3)))
    np.testing.assert_array_equal(backend.call(cs.segment_jvp, op, xs, ptr, out, xs), np.zeros(out.shape))


# ---- B3: fmax/fmin equal max/min when no message is NaN (a losing message of +-inf) ------------------------------

def _extreme_reference(op, x, gi, si, w, g, x_dot, w_dot, size):
    """Plain loops over the edges: each output element's cotangent split evenly among the edges whose message
    equals it; the JVP the mean of those edges' tangent messages (as autograd's max)."""
    better = (lambda a, b: a > b) if op in ("max", "fmax") else (lambda a, b: a < b)
    n, f = len(gi), x.shape[1]
    wt = np.ones(n) if w is None else w
    msgs = np.array([[wt[e] * x[gi[e], k] for k in range(f)] for e in range(n)])
    out = np.full((size, f), -np.inf if op in ("max", "fmax") else np.inf)
    for e in range(n):
        for k in range(f):
            if better(msgs[e, k], out[si[e], k]):
                out[si[e], k] = msgs[e, k]
    count = np.zeros((size, f))
    for e in range(n):
        count[si[e]] += msgs[e] == out[si[e]]
    d_src, d_w, t = np.zeros_like(x), np.zeros(n), np.zeros((size, f))
    for e in range(n):
        for k in range(f):
            if msgs[e, k] == out[si[e], k]:
                share = g[si[e], k] / count[si[e], k]
                d_src[gi[e], k] += wt[e] * share
                d_w[e] += share * x[gi[e], k]
                t[si[e], k] += wt[e] * x_dot[gi[e], k] + (0.0 if w_dot is None else w_dot[e] * x[gi[e], k])
    t = np.where(count > 0, t / np.maximum(count, 1), 0.0)
    return out, d_src, d_w, t


def _inf_case(seed: int):
    """src with +-inf and finite nonzero values, weights with +-inf and finite nonzero ones: no message is NaN
    (no inf * 0), and some losing messages are -inf (max) or +inf (min)."""
    rng = np.random.default_rng(seed)
    x = rng.choice([-3.0, -1.0, 1.0, 2.0, 2.0, np.inf, -np.inf], size=(4, 3))
    n = 10
    gi, si = rng.integers(0, 4, n), rng.integers(0, 3, n)
    w = rng.choice([np.inf, -np.inf, 0.5, 1.0, 2.0, -1.0], size=n)
    return x, gi, si, w, rng.uniform(0.5, 2.0, (3, 3)), rng.uniform(-1, 1, (4, 3)), rng.uniform(-1, 1, n)


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")   # inf - inf where +-inf products tie
@pytest.mark.parametrize("weighted", [True, False])
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("pair", [("fmax", "max"), ("fmin", "min")])
def test_fmax_fmin_derivatives_equal_max_min_without_nan(backend, pair, seed, weighted):
    op, twin = pair
    x, gi, si, w, g, x_dot, w_dot = _inf_case(seed)
    if not weighted:
        w = w_dot = None
    kw = dict(weight=w, dim_size=3)
    results = {}
    for name in (op, twin):
        out = backend.call(cs.gather_scatter, x, gi, si, name, **kw)
        results[name] = (out, backend.call(cs.gather_scatter_vjp_src, name, g, x, gi, si, out, **kw),
                         None if w is None else backend.call(cs.gather_scatter_vjp_weight, name, g, x, gi, si, out,
                                                             **kw),
                         backend.call(cs.gather_scatter_jvp, name, x, gi, si, out, x_dot, weight=w, weight_dot=w_dot,
                                      dim_size=3))
    for k, (a, b) in enumerate(zip(results[op], results[twin])):
        if a is None:
            continue
        if k == 0 or (k < 3 and backend.name == "numpy"):   # the result; the CPU VJPs add in the same order
            np.testing.assert_array_equal(a, b)
        else:   # the JVP's tied mean (max divides a sum, fmax averages); the GPU's atomic adds in any order
            np.testing.assert_allclose(a, b, rtol=1e-14, atol=0)
    want = _extreme_reference(op, x, gi, si, w, g, x_dot, w_dot, 3)
    for k, (got, ref) in enumerate(zip(results[op], want)):
        if got is not None and not (k == 2 and w is None):
            np.testing.assert_allclose(got, ref, rtol=1e-12, err_msg=f"result {k}")


def test_fmax_reproducer_vjp_src_weight_jvp():
    """The tester's reproducer: an inf weight on the losing edge gave NaN (fmax) where max gives 0."""
    x, gi, si, w = np.array([[-1.0], [2.0]]), np.array([0, 1]), np.array([0, 0]), np.array([np.inf, 1.0])
    for op in ("fmax", "max"):
        out = cs.gather_scatter(x, gi, si, op, weight=w)
        np.testing.assert_array_equal(cs.gather_scatter_vjp_src(op, np.ones_like(out), x, gi, si, out, weight=w),
                                      [[0.0], [1.0]])
        np.testing.assert_array_equal(cs.gather_scatter_jvp(op, x, gi, si, out, np.ones_like(x), weight=w,
                                                            weight_dot=np.zeros(2)), [[1.0]])
    x, w = np.array([[-np.inf], [2.0]]), np.ones(2)   # a -inf src row on the losing edge: weight gradient 0
    for op in ("fmax", "max"):
        out = cs.gather_scatter(x, gi, si, op, weight=w)
        np.testing.assert_array_equal(cs.gather_scatter_vjp_weight(op, np.ones_like(out), x, gi, si, out, weight=w),
                                      [0.0, 2.0])


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("pair", [("fmax", "max"), ("fmin", "min")])
def test_fmax_fmin_autograd_equals_max_min_without_nan(pair, seed):
    pytest.importorskip("autograd")
    from autograd import grad, make_jvp

    import grad as csgrad
    x, gi, si, w, g, x_dot, w_dot = _inf_case(seed)

    def loss(name, wrt):
        def f(a):
            src, weight = (a, w) if wrt == "src" else (x, a)
            return (csgrad.gather_scatter(src, gi, si, name, weight=weight, dim_size=3) * g).sum()
        return f
    for wrt, at, tangent in (("src", x, x_dot), ("weight", w, w_dot)):
        got, want = grad(loss(pair[0], wrt))(at), grad(loss(pair[1], wrt))(at)
        np.testing.assert_array_equal(got, want)   # (NaN only where +inf and -inf weights of one row both win)
        got = make_jvp(loss(pair[0], wrt))(at)(tangent)[1]
        np.testing.assert_allclose(got, make_jvp(loss(pair[1], wrt))(at)(tangent)[1], rtol=1e-14)
    ref = _extreme_reference(pair[0], x, gi, si, w, g, x_dot, w_dot, 3)
    np.testing.assert_allclose(grad(loss(pair[0], "src"))(x), ref[1], rtol=1e-12)
    np.testing.assert_allclose(grad(loss(pair[0], "weight"))(w), ref[2], rtol=1e-12)


def test_fmax_still_skips_nan_messages():
    """The loser mask must not change what a NaN message gets (nothing) nor the winners' shares."""
    x, gi, si = np.array([[np.nan], [2.0], [2.0]]), np.array([0, 1, 2]), np.array([0, 0, 0])
    w = np.array([1.0, 1.0, 1.0])
    out = cs.gather_scatter(x, gi, si, "fmax", weight=w)
    np.testing.assert_array_equal(out, [[2.0]])
    g = np.ones_like(out)
    np.testing.assert_array_equal(cs.gather_scatter_vjp_src("fmax", g, x, gi, si, out, weight=w), [[0.0], [0.5], [0.5]])
    np.testing.assert_array_equal(cs.gather_scatter_vjp_weight("fmax", g, x, gi, si, out, weight=w), [0.0, 1.0, 1.0])


# ---- L1, L2: the bfloat16 refusal names the function called --------------------------------------------------------

def _bf16():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    return np.dtype(ml_dtypes.bfloat16)


@pytest.mark.parametrize("op", ["add", "nansum", "max"])
def test_grad_bfloat16_error_names_the_function_called(op):
    pytest.importorskip("autograd")
    import autograd.numpy as anp
    from autograd import grad, make_jvp

    import grad as csgrad
    bf16 = _bf16()
    x = np.ones(3, bf16)
    calls = {
        "segment": lambda z: csgrad.segment(z, np.array([0, 3]), op),
        "gather_segment": lambda z: csgrad.gather_segment(z, np.array([0, 1, 2, 4])),
        "gather_scatter": lambda z: csgrad.gather_scatter(z[:, None], np.zeros(3, int), np.zeros(3, int), op),
    }
    for fun, f in calls.items():
        with pytest.raises(TypeError, match=rf"^grad\.{fun} cannot differentiate with respect to src of dtype "
                                            "bfloat16"):
            grad(lambda z: anp.sum(f(z).astype(np.float64)))(x)
        with pytest.raises(TypeError, match=rf"^grad\.{fun} cannot differentiate"):
            make_jvp(f)(x)(x)
    w = np.ones(3, bf16)
    with pytest.raises(TypeError, match=r"^grad\.gather_scatter cannot differentiate with respect to weight"):
        grad(lambda v: anp.sum(csgrad.gather_scatter(np.ones((3, 1)), np.arange(3), np.zeros(3, int), op,
                                                     weight=v).astype(np.float64)))(w)


def test_grad_bfloat16_forward_still_works():
    pytest.importorskip("autograd")
    import grad as csgrad
    x = np.arange(4).astype(_bf16())
    np.testing.assert_array_equal(csgrad.segment(x, np.array([0, 1, 4])), cs.segment(x, np.array([0, 1, 4])))
    gi, si = np.arange(4), np.array([0, 0, 1, 1])
    np.testing.assert_array_equal(csgrad.gather_scatter(x, gi, si, "nansum"), cs.gather_scatter(x, gi, si, "nansum"))


# ---- L3: a wrong-shaped grad_out is blamed, not the right-shaped out -------------------------------------------------

@pytest.mark.parametrize("op", ["add", "mean", "max", "mul", "nansum", "fmax"])
def test_reverse_functions_blame_grad_out(op):
    x, gi, si, idx, ptr = np.ones((3, 2)), np.array([0, 1, 2]), np.array([1, 0, 1]), np.array([1, 0, 1]), \
        np.array([0, 2, 3])
    bad = np.ones((3, 2))
    out = cs.gather_scatter(x, gi, si, op)
    pattern = r"grad_out shape \(3, 2\)"
    with pytest.raises(ValueError, match=pattern):
        cs.gather_scatter_vjp_src(op, bad, x, gi, si, out)
    with pytest.raises(ValueError, match=pattern):
        cs.gather_scatter_vjp_weight(op, bad, x, gi, si, out, weight=np.ones(3))
    with pytest.raises(ValueError, match=pattern):
        cs.scatter_vjp_src(op, bad, x, idx, cs.scatter(x, idx, op))
    with pytest.raises(ValueError, match=pattern):
        cs.scatter_vjp_dst(op, bad, np.ones((2, 2)), x, idx, cs.scatter_into(np.ones((2, 2)), x, idx, op))
    with pytest.raises(ValueError, match=pattern):
        cs.segment_vjp_src(op, bad, x, ptr, cs.segment(x, ptr, op))
    # a wrong out with the right grad_out: both shapes named, grad_out not taken for the wrong one
    with pytest.raises(ValueError, match=r"grad_out shape \(2, 2\) != out shape \(3, 2\)"):
        cs.gather_scatter_vjp_src(op, np.ones((2, 2)), x, gi, si, np.ones((3, 2)))


@pytest.mark.parametrize("name", ["scatter_logsumexp", "scatter_var", "scatter_std", "scatter_nanvar",
                                  "scatter_nanstd"])
def test_group_reverse_functions_blame_grad_out(name):
    x, idx = np.ones((3, 2)), np.array([1, 0, 1])
    out = getattr(cs, name)(x, idx)
    with pytest.raises(ValueError, match=r"grad_out shape \(3, 2\)"):
        getattr(cs, name + "_vjp")(np.ones((3, 2)), x, idx, out)


# ==================================================================================================================
# fmax/fmin gradients through a NaN dst, scan reverse dtypes, scan flags, allocation sizes
# (ticket: issue 18, merged features)
#
# Regressions from the independent hostile test of issue 18's merged features (fmax/fmin gradients through a
# NaN dst, the scan reverse functions' dtype for float16/bfloat16, scatter_scan's bool flags, sqrt_n's memory).
# ==================================================================================================================


# dst[1] NaN and reached by no entry; dst[2] NaN and reached only by a NaN; dst[3] loses to / beats 5.
DST = np.array([1.0, np.nan, np.nan, 3.0])
NAN_SRC = np.array([2.0, np.nan, 5.0])
INDEX = np.array([0, 2, 3])
# d out / d dst per row: a row whose result is dst's own value (untouched, or every entry NaN) passes the
# cotangent to dst, as for max; fmax's row 0 and 3 are the src's, fmin's rows 0 and 3 dst's (1 < 2, 3 < 5)
EXPECTED_DST = {"fmax": [0.0, 1.0, 1.0, 0.0], "fmin": [1.0, 1.0, 1.0, 1.0]}
EXPECTED_SRC = {"fmax": [1.0, 0.0, 1.0], "fmin": [0.0, 0.0, 0.0]}


@pytest.mark.parametrize("op", ["fmax", "fmin"])
def test_fmax_fmin_gradient_reaches_a_nan_dst_that_holds_the_result(op):
    out = cs.scatter_into(DST.copy(), NAN_SRC, INDEX, op)
    assert np.array_equal(np.isnan(out), [False, True, True, False])
    g = np.ones(4)
    np.testing.assert_array_equal(cs.scatter_vjp_dst(op, g, DST, NAN_SRC, INDEX, out), EXPECTED_DST[op])
    np.testing.assert_array_equal(cs.scatter_vjp_src(op, g, NAN_SRC, INDEX, out, dst=DST), EXPECTED_SRC[op])
    jvp = cs.scatter_jvp(op, NAN_SRC, INDEX, out, np.zeros(3), dst=DST, dst_dot=np.ones(4))
    np.testing.assert_array_equal(jvp, EXPECTED_DST[op])


@pytest.mark.parametrize("op", ["fmax", "fmin"])
def test_fmax_fmin_autograd_through_a_nan_dst(op):
    autograd = pytest.importorskip("autograd")
    import grad as csgrad
    got = autograd.grad(lambda d: autograd.numpy.sum(csgrad.scatter_into(d, NAN_SRC, INDEX, op)))(DST.copy())
    np.testing.assert_array_equal(got, EXPECTED_DST[op])


def _half_dtypes():
    out = [np.dtype(np.float16)]
    try:
        import ml_dtypes
        out.append(np.dtype(ml_dtypes.bfloat16))
    except ImportError:
        pass
    return out


@pytest.mark.parametrize("dtype", _half_dtypes(), ids=str)
@pytest.mark.parametrize("op", ["add", "mul", "max", "min"])
def test_scan_reverse_functions_return_float64_for_half_floats(op, dtype):
    src = np.array([1.0, 2.0, 3.0, 4.0]).astype(dtype)
    index = np.array([0, 1, 0, 1])
    g = np.ones(4, dtype)
    vjp = cs.scatter_scan_vjp(op, g, src, index)
    jvp = cs.scatter_scan_jvp(op, src, index, g)
    # the rule of the other reverse functions (scatter_vjp_src, segment_vjp_src): float16/bfloat16 give float64
    assert cs.scatter_vjp_src("add", np.ones(2, dtype), src, index, cs.scatter(src, index)).dtype == np.float64
    assert vjp.dtype == np.float64 and jvp.dtype == np.float64
    # and the values are those of the same call in float64
    src64, g64 = src.astype(np.float64), g.astype(np.float64)
    np.testing.assert_array_equal(vjp, cs.scatter_scan_vjp(op, g64, src64, index))
    np.testing.assert_array_equal(jvp, cs.scatter_scan_jvp(op, src64, index, g64))


@pytest.mark.parametrize("flag", ["exclusive", "reverse"])
@pytest.mark.parametrize("value", ["yes", None, 2, -1, 0.5])
def test_scan_flags_must_be_bools(flag, value):
    with pytest.raises(TypeError, match=flag):
        cs.scatter_scan(np.ones(4), np.array([0, 1, 0, 1]), **{flag: value})


@pytest.mark.parametrize("value", [True, np.True_, 1, False, np.False_, 0])
def test_scan_flags_take_bools_and_0_1(value):
    got = cs.scatter_scan(np.ones(4), np.array([0, 1, 0, 1]), exclusive=value)
    want = np.array([0.0, 0.0, 1.0, 1.0]) if value else np.array([1.0, 1.0, 2.0, 2.0])
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("op, per_row", [("mean", 8), ("sqrt_n", 16), ("set", 8), ("first", 8)])
def test_allocating_scatter_memory_as_documented(op, per_row):
    """docs/performance.rst: besides its output, an allocating scatter holds 8 bytes a destination row for mean and
    the assignments, 16 for sqrt_n (float64 results)."""
    rows = 400_000
    src, index = np.ones(10), np.arange(10) % 7
    tracemalloc.start()
    try:
        out = cs.scatter(src, index, op, dim_size=rows)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak - out.nbytes <= per_row * rows + 64 * 1024, f"{(peak - out.nbytes) / rows:.1f} B a row"


# ---- an outside tester's finds after the layers and the planner -----------------------------------------------------

def test_a_size_no_array_can_hold_names_the_inferred_size():
    """Zero-width rows take no memory, but NumPy still refuses 2**62 of them: the error names what sized them."""
    with pytest.raises(ValueError, match=r"^the dim_size inferred from index=\(4611686018427387905,\) asks for an "
                                         r"output of shape \(4611686018427387905, 0\) and dtype float64: .* too big "
                                         r"for any array"):
        cs.scatter(np.ones((2, 0)), np.array([0, 2**62]))
    with pytest.raises(ValueError, match=r"^dim_size=4611686018427387905 asks for an output"):
        cs.scatter(np.ones((2, 0)), np.array([0, 1]), dim_size=2**62 + 1)


@pytest.mark.parametrize("fun", ["scatter", "scatter_into"])
@pytest.mark.parametrize("value", ["no", "", 2, 0.0, [1]])
def test_indices_are_sorted_takes_only_bools(fun, value):
    """A truthy string was taken for True: indices_are_sorted follows the rule of scatter_scan's flags (None, no
    hint, reads as False)."""
    src, index = np.ones(3), np.array([2, 0, 1])
    args = (src, index) if fun == "scatter" else (np.zeros(3), src, index)
    with pytest.raises(TypeError, match=f"^indices_are_sorted must be a bool \\(or None: no hint\\), got "
                                        f"{type(value).__name__} "):
        getattr(cs, fun)(*args, indices_are_sorted=value)


@pytest.mark.parametrize("value", [True, np.True_, 1, False, np.False_, 0, None])
def test_indices_are_sorted_accepts_bools_and_0_1(value):
    index = np.array([0, 0, 1, 2])
    np.testing.assert_array_equal(cs.scatter(np.arange(4.0), index, indices_are_sorted=value), [1.0, 2.0, 3.0])


def test_public_namespaces_hold_only_their_api():
    """No module, `from __future__` feature or internal helper leaks into the public namespaces (tab completion,
    ``from cyscatter import *``); the compiled kernel modules and the public submodules are there by design."""
    import cyscatter.dask
    import grad
    submodules = {"typing", "calibrate", "dask", "examples", "kernels", "nan_kernels", "group_kernels",
                  "fused_kernels", "scan_kernels", "assign_kernels", "torch", "jax"}
    for module in (cs, cyscatter.dask, grad):
        extra = {name for name in dir(module) if not name.startswith("_")} - set(module.__all__) - submodules
        assert not extra, f"{module.__name__}: {sorted(extra)}"


@pytest.mark.parametrize("fun", ["segment_jvp", "segment_vjp_src"])
@pytest.mark.parametrize("rows", [1, 3])
def test_segment_reverse_functions_check_out_against_indptr(fun, rows):
    """An `out` (or `grad_out`) with another number of segments than `indptr` gave a wrong-shaped result or an
    IndexError about an index the caller never passed: it is now a ValueError naming the array."""
    src, ptr = np.array([1.0, 5.0, 3.0]), np.array([0, 1, 3])
    wrong, right = np.zeros(rows), cs.segment(src, ptr, "add")
    if fun == "segment_jvp":
        call, name = lambda: cs.segment_jvp("add", src, ptr, wrong, np.ones(3)), "out"
    else:
        call, name = lambda: cs.segment_vjp_src("add", np.ones(2), src, ptr, wrong), "out"
    with pytest.raises(ValueError, match=rf"^{fun}: {name} shape \({rows},\) != segment's output shape \(2,\)$"):
        call()
    if fun == "segment_vjp_src":
        with pytest.raises(ValueError, match=r"grad_out shape \(3,\) != segment's output shape \(2,\)"):
            cs.segment_vjp_src("add", np.ones(3), src, ptr, right)


@pytest.mark.parametrize("fun, op", [("scatter_argmax", "max"), ("scatter_nanargmin", "fmin")])
def test_argext_dtype_errors_name_the_function(fun, op):
    """scatter_argmax of a bool src said "op 'max' does not support ... complex64/128": the caller passed no op,
    and complex is refused too (the ordered ops list only what they take)."""
    with pytest.raises(TypeError, match=rf"^{fun} does not support src dtype bool \(supported: integers, "
                                        r"float16/32/64, bfloat16\)$"):
        getattr(cs, fun)(np.array([True, False]), np.array([0, 0]))
    with pytest.raises(TypeError, match=rf"^{fun} needs ordered values; src dtype complex128 is complex$"):
        getattr(cs, fun)(np.array([1j, 2j]), np.array([0, 0]))
    with pytest.raises(TypeError, match=rf"^op '{op}' does not support src dtype bool \(supported: integers, "
                                        r"float16/32/64, bfloat16\)$"):
        cs.scatter(np.array([True, False]), np.array([0, 0]), op)


def test_batched_gather_segment_vjp_names_grad_out():
    with pytest.raises(ValueError, match=r"rows of grad_out along axis 1, 3$"):
        cs.gather_segment_vjp_src(np.ones((2, 3)), np.array([[0, 1, 3], [0, 2, 2]]))


@pytest.mark.parametrize("op", ["nanlast", "nanfirst", "fmax", "fmin", "nanmean", "nanprod"])
@pytest.mark.parametrize("fill", [np.nan, 0.0])
def test_nan_ops_take_a_scalar_index_on_rows_apart(op, fill):
    """A 0-d index on a 1-d src whose elements are apart (x[::2]) reached the NaN check with a strided row, which
    the check refused ("any_nan: src rows must be unit-strided") where the kernels read it in place."""
    x = np.array([np.nan, 1.0, 2.0, 3.0, np.nan, 5.0], np.float32)[::2]
    got = cs.scatter(x, np.array(0, np.int8), op, fill_value=fill)
    assert_same(got, cs.scatter(np.ascontiguousarray(x), np.array(0, np.int8), op, fill_value=fill))
    want = {"nanlast": [np.nan, 2.0, np.nan], "nanfirst": [np.nan, 2.0, np.nan]}.get(op)
    if want is not None:   # one entry per output element: the element itself, or the fill where it is NaN
        np.testing.assert_array_equal(got, np.where(np.isnan(want), fill, want).reshape(1, 3).astype(np.float32))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("op", ["nanlast", "nanfirst"])
@pytest.mark.parametrize("layout", ["fortran", "transposed"])
def test_nanlast_fill_value_on_a_fortran_half_src(dtype, op, layout):
    """nanlast/nanfirst with a fill_value counted the non-NaN entries of a Fortran-ordered (or transposed)
    float16/bfloat16 src through a mask of that layout, which the scatter kernel refused ("kernel entry operand
    must have aligned strides and a unit inner stride")."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    half = np.float16 if dtype == "float16" else ml_dtypes.bfloat16
    x = np.arange(40, dtype=np.float32).reshape(4, 10)
    x[1, [0, 3]] = np.nan
    x[:, 5] = np.nan   # a column whose every entry is NaN: the fill
    src = np.asfortranarray(x.astype(half)) if layout == "fortran" else np.ascontiguousarray(x.T.astype(half)).T
    idx = np.array([0, 1, 1, 2])
    for call in (lambda s: cs.scatter(s, idx, op, fill_value=-1.0),
                 lambda s: cs.segment(s, np.array([0, 1, 3, 4]), op, fill_value=-1.0)):
        assert_same(call(src), call(np.ascontiguousarray(src)))


def test_gather_scatter_names_a_weight_of_an_unsupported_dtype():
    """A longdouble weight was refused as the messages' dtype: "op 'add' does not support src dtype float128"."""
    src, gi, si = np.ones((3, 2)), np.array([0, 1]), np.array([0, 0])
    with pytest.raises(TypeError, match=r"^op 'add' does not support weight dtype float128"):
        cs.gather_scatter(src, gi, si, "add", weight=np.ones(2, np.longdouble))
    with pytest.raises(TypeError, match=r"^op 'max' needs ordered values; weight dtype complex128 is complex$"):
        cs.gather_scatter(src, gi, si, "max", weight=np.ones(2, complex))
    np.testing.assert_array_equal(cs.gather_scatter(src, gi, si, "add", weight=np.array([2, 3], np.int8)),
                                  [[5.0, 5.0]])
