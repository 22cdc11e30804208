"""Regression tests of the defects an independent hostile campaign found (issue 17), one section per defect.

Each failed before its fix. The expected values come from the native-order / float64 / in-memory twin of the
same call, which the rest of the suite checks against the plain-loop reference.
"""
from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest

import cyscatter as cs
from cyscatter import group_kernels, kernels

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


def test_issue_example_string_out_is_refused():
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
