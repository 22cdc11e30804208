"""dtype= and out= of the allocating scatter and gather, NumPy's meaning: `dtype` casts src
first (np.add.reduce(dtype=), same_kind), `out` receives the result starting from the identity or fill (never
accumulating into its values: that is scatter_into) and is returned; on any error `out` is left as it was."""
import numpy as np
import pytest

import cyscatter as cs
from compare import assert_same, tolerance
from group_cases import index_for
from reference import ref_gather, ref_scatter
from testing import INDEX_KINDS, OPS, op_supports

CASTS = [("int8", "int64"), ("int32", "float64"), ("float32", "float64"), ("float64", "float32"),
         ("int64", "int16"), ("float64", "complex128"), ("uint8", "float16"), ("int32", "int32")]


def _case(kind, mode, src_dtype, seed=3, feat=(2,)):
    rng = np.random.default_rng(seed)
    index, dims = index_for(rng, kind, (9,), mode)
    src = rng.integers(-4, 5, (9,) + feat)
    if np.dtype(src_dtype).kind == "u":
        src = np.abs(src)
    return src.astype(src_dtype), index, dims if kind == "tuple" else dims[0]


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("src_dtype, dtype", CASTS)
@pytest.mark.parametrize("kind", INDEX_KINDS)
@pytest.mark.parametrize("mode", ("raise", "drop", "normalize_drop"))
@pytest.mark.valid(lambda op, dtype: op_supports(op, dtype))
def test_scatter_dtype_is_a_cast_of_src_first(backend, op, src_dtype, dtype, kind, mode):
    src, index, dim_size = _case(kind, mode, src_dtype)
    got = backend.call(cs.scatter, src, index, op, dim_size=dim_size, mode=mode, dtype=dtype)
    want = ref_scatter(src.astype(dtype), index, op, dim_size=dim_size, mode=mode)
    assert got.dtype == want.dtype   # dtype, or float64 for div/mean of an integer dtype (true division)
    assert_same(got, want, *tolerance("numpy", op, want.dtype, src.astype(dtype)))


def test_scatter_dtype_follows_np_add_reduce_and_ufunc_at():
    src = np.array([100, 100, 100, -7], np.int8)
    index = np.array([0, 0, 0, 1])
    np.testing.assert_array_equal(cs.scatter(src, index, dtype=np.int64), [300, -7])   # no int8 wrap-around
    want = np.zeros(2, np.int64)
    np.add.at(want, index, src.astype(np.int64))
    np.testing.assert_array_equal(cs.scatter(src, index, dtype=np.int64), want)
    assert np.add.reduce(src[:3], dtype=np.int64) == 300
    with pytest.raises(TypeError, match="dtype"):   # float -> int refused under same_kind (as scatter_into);
        cs.scatter(np.array([1.5]), np.array([0]), dtype=np.int64)
    assert np.add.reduce(np.array([1.5, 2.5]), dtype=np.int64) == 3   # NumPy's reductions truncate instead
    mean = cs.scatter(np.array([1, 2], np.int32), np.array([0, 0]), "mean", dtype=np.int64)
    assert mean.dtype == np.float64 and mean[0] == 1.5   # integer mean still divides truly


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("kind", INDEX_KINDS)
@pytest.mark.parametrize("mode", cs.MODES)
@pytest.mark.parametrize("layout", ("contiguous", "strided", "big-endian"))
@pytest.mark.parametrize("fill", (None, -2))
@pytest.mark.valid(lambda backend, layout: layout != "big-endian" or backend == "numpy")   # CuPy: native only
def test_scatter_out_starts_fresh_and_is_returned(backend, op, kind, mode, layout, fill):
    src, index, dim_size = _case(kind, mode, "float64")
    want = ref_scatter(src, index, op, dim_size=dim_size, mode=mode, fill_value=fill)
    xp = backend.xp
    if layout == "contiguous":
        out = xp.full(want.shape, 123.0)
    elif layout == "strided":
        out = xp.full(want.shape + (2,), 123.0)[..., 0]
    else:
        out = np.full(want.shape, 123.0, ">f8")
    index_b = backend.asarray(index)
    got = cs.scatter(backend.asarray(src), index_b, op, dim_size=dim_size, mode=mode, fill_value=fill, out=out)
    assert got is out
    assert_same(backend.to_numpy(out) if backend.name != "numpy" else np.asarray(out, "f8"), want,
                *tolerance("numpy", op, want.dtype, src))


def test_scatter_out_gives_the_destination_shape_and_may_alias_src():
    out = np.full((4, 2), 9.0)
    cs.scatter(np.ones((3, 2)), np.array([0, 2, 2]), out=out)   # D = (4,) read off out
    np.testing.assert_array_equal(out, [[1, 1], [0, 0], [2, 2], [0, 0]])
    buf = np.array([1.0, 2.0, 3.0, 4.0])
    cs.scatter(buf, np.array([1, 1, 0, 3]), out=buf)   # out is src: as if src had been copied first
    np.testing.assert_array_equal(buf, [3.0, 3.0, 0.0, 4.0])


def test_scatter_out_differs_from_pytorch_scatter_out_which_is_scatter_into():
    torch = pytest.importorskip("torch")
    src, index = np.array([1.0, 2.0, 3.0]), np.array([0, 1, 0])
    start = np.array([10.0, 20.0])
    accumulated = torch.from_numpy(start.copy()).scatter_add_(0, torch.from_numpy(index), torch.from_numpy(src))
    np.testing.assert_array_equal(cs.scatter_into(start.copy(), src, index), accumulated.numpy())
    np.testing.assert_array_equal(cs.scatter(src, index, out=start.copy()), [4.0, 2.0])   # fresh, not accumulated


@pytest.mark.parametrize("bad, error, text", [
    (lambda: np.zeros(4), ValueError, "out has shape"),
    (lambda: np.zeros(3, np.float32), TypeError, "out has dtype"),
    (lambda: np.zeros(3, np.int64), TypeError, "out has dtype"),
    (lambda: [0.0, 0.0, 0.0], TypeError, "out must be"),
    (lambda: np.zeros((3, 1)), ValueError, "out has shape"),
])
def test_scatter_out_refused_untouched(bad, error, text):
    out = bad()
    before = np.array(out, copy=True)
    with pytest.raises(error, match=text):
        cs.scatter(np.arange(4.0), np.array([0, 1, 2, 1]), dim_size=3, out=out)
    np.testing.assert_array_equal(np.asarray(out), before)


@pytest.mark.parametrize("layout", ("contiguous", "strided"))
def test_scatter_out_untouched_on_an_index_error(layout):
    out = np.full(6, 5.0)[::2] if layout == "strided" else np.full(3, 5.0)
    with pytest.raises(IndexError, match="index"):
        cs.scatter(np.arange(4.0), np.array([0, 1, 7, 1]), dim_size=3, out=out)
    np.testing.assert_array_equal(out, 5.0)
    ro = np.zeros(3)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="out is read-only"):
        cs.scatter(np.arange(4.0), np.array([0, 1, 2, 1]), out=ro)


# ---- gather ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", INDEX_KINDS)
@pytest.mark.parametrize("mode", cs.MODES)
@pytest.mark.parametrize("src_dtype, dtype", [("int32", "float64"), ("float64", "float32"), ("uint8", "int16"),
                                              ("float32", "complex64"), ("int64", None)])
def test_gather_dtype_and_out(backend, kind, mode, src_dtype, dtype):
    rng = np.random.default_rng(6)
    index, dims = index_for(rng, kind, (7,), mode)
    src = rng.integers(0, 9, dims + (2,)).astype(src_dtype)
    rdtype = np.dtype(dtype or src_dtype)
    fill = 3 if mode in ("drop", "normalize_drop") else None
    want = ref_gather(src.astype(rdtype), index, mode=mode, fill_value=fill or 0)
    got = backend.call(cs.gather, src, index, mode=mode, dtype=dtype, fill_value=fill)
    assert got.dtype == rdtype
    np.testing.assert_array_equal(got, want)
    out = backend.xp.full(want.shape, 77, rdtype)
    assert cs.gather(backend.asarray(src), backend.asarray(index), mode=mode, dtype=dtype, fill_value=fill,
                     out=out) is out
    np.testing.assert_array_equal(backend.to_numpy(out) if backend.name != "numpy" else out, want)


def test_gather_out_matches_np_take_out():
    src = np.arange(12.0).reshape(4, 3)
    index = np.array([3, 0, 3])
    want = np.empty((3, 3))
    np.take(src, index, axis=0, out=want)
    out = np.empty((3, 3))
    assert cs.gather(src, index, out=out) is out
    np.testing.assert_array_equal(out, want)
    strided = np.zeros((3, 6))[:, ::2]
    cs.gather(src, index, out=strided)
    np.testing.assert_array_equal(strided, want)


def test_gather_out_refused_untouched():
    src, index = np.arange(4.0), np.array([0, 5])
    out = np.full(2, 8.0)
    with pytest.raises(IndexError):
        cs.gather(src, index, out=out)
    np.testing.assert_array_equal(out, 8.0)
    with pytest.raises(TypeError, match="out has dtype"):
        cs.gather(src, index[:1], out=np.zeros(1, np.float32))
    with pytest.raises(ValueError, match="out has shape"):
        cs.gather(src, index[:1], out=np.zeros(2))
    with pytest.raises(TypeError, match="dtype"):
        cs.gather(src, index[:1], dtype=np.int64)


# ---- grad --------------------------------------------------------------------------------------------------------

def test_grad_dtype_is_differentiable_and_out_is_not_a_parameter():
    csgrad = pytest.importorskip("grad")
    import inspect

    from autograd import grad as agrad
    from autograd.test_util import check_grads
    assert "out" not in inspect.signature(csgrad.scatter).parameters
    assert "out" not in inspect.signature(csgrad.gather).parameters
    with pytest.raises(TypeError):
        csgrad.scatter(np.ones(2), np.array([0, 1]), out=np.zeros(2))
    index = np.array([0, 0, 2, 1, 2])
    x = np.array([0.5, -1.5, 2.0, 3.0, -0.25])
    for op in ("add", "mul", "div", "max", "mean"):
        for dtype in (np.float64, np.complex128):
            if op == "max" and dtype is np.complex128:
                continue
            check_grads(lambda s: csgrad.scatter(s, index, op, dtype=dtype), modes=["rev", "fwd"], order=2)(x)
    check_grads(lambda s: csgrad.gather(s, index[:3], dtype=np.complex128), modes=["rev", "fwd"], order=2)(x)
    g = agrad(lambda s: (csgrad.scatter(s, index, "add", dtype=np.float64) ** 2).sum())(x.astype(np.float32))
    assert g.dtype == np.float32   # the cast's gradient: back to the dtype of src
    np.testing.assert_allclose(g, 2 * cs.gather(cs.scatter(x, index), index), rtol=1e-6)


# ---- Python scalars take out's dtype (NumPy 2's weak scalars, NEP 50) ---------------------------------------------

@pytest.mark.parametrize("value", [2, -1, 300, 2.5, 1 + 1j, 10 ** 30])
@pytest.mark.parametrize("dt", [np.float32, np.float64, np.int32, np.uint8, np.int64, np.complex64])
@pytest.mark.parametrize("op, ufunc", [("add", np.add), ("mul", np.multiply), ("max", np.maximum)])
@pytest.mark.valid(lambda dt, op: not (dt == np.complex64 and op == "max"))
def test_python_scalar_src_takes_outs_dtype(op, ufunc, dt, value):
    """NumPy 2's rules decide: the scalar's result type with out's dtype (`np.result_type`, NEP 50) must be
    out's dtype, else TypeError; an int out of range (NumPy's OverflowError) is cyscatter's ValueError; the
    values are `ufunc.at` on out's dtype."""
    index = np.array([0, 1, 1, 2, 0, 2, 2])   # every row reached: no identity left in the reference
    expected = None
    if np.result_type(value, dt) != dt:
        expected = TypeError
    else:
        try:
            np.array(value, dtype=dt)
        except OverflowError:
            expected = ValueError
    if expected is None:
        with np.errstate(over="ignore"):
            ref = np.zeros(3, dt)
            ref[:] = 1 if op == "mul" else (np.iinfo(dt).min if op == "max" and np.dtype(dt).kind in "iu"
                                           else (-np.inf if op == "max" else 0))
            ufunc.at(ref, index, np.array(value, dtype=dt))   # NEP 50: the weak scalar in out's dtype
    out = np.full(3, 7, dt)
    if expected is not None:
        with pytest.raises(expected, match="src|out|dtype"):
            cs.scatter(value, index, op, out=out)
        np.testing.assert_array_equal(out, np.full(3, 7, dt))   # left as it was
        return
    got = cs.scatter(value, index, op, out=out)
    assert got is out and got.dtype == dt
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("value, dt", [(2.5, np.float32), (3, np.uint8), (3, np.float32), (1 + 2j, np.complex64)])
def test_python_scalar_src_of_gather_takes_outs_dtype(value, dt):
    """gather's Python scalar src (with the empty index tuple) takes out's dtype, as scatter's does."""
    out = np.zeros((), dt)
    got = cs.gather(value, (), out=out)
    assert got is out and got.dtype == dt and got == np.array(value, dt)
    with pytest.raises(ValueError, match="src=300 is out of range for the out dtype uint8"):
        cs.gather(300, (), out=np.zeros((), np.uint8))
    with pytest.raises(TypeError, match="out has dtype"):
        cs.gather(2.5, (), out=np.zeros((), np.int32))


def test_python_scalar_mean_into_float_out():
    index = np.array([0, 1, 1, 3])
    got = cs.scatter(2.5, index, "mean", out=np.zeros(4, np.float32))
    np.testing.assert_array_equal(got, np.array([2.5, 2.5, 0, 2.5], np.float32))
    with pytest.raises(TypeError, match="out has dtype int32"):   # mean of integers is float64, as before
        cs.scatter(2, index, "mean", out=np.zeros(4, np.int32))


def test_numpy_scalars_and_dtype_keep_their_own_dtype():
    index = np.array([0, 1])
    with pytest.raises(TypeError, match="out has dtype float64"):
        cs.scatter(np.int64(2), index, out=np.zeros(2))
    with pytest.raises(TypeError, match="out has dtype float64"):
        cs.scatter(2, index, dtype=np.int64, out=np.zeros(2))
    np.testing.assert_array_equal(cs.scatter(2, index, out=np.zeros(2, ">f8")), [2.0, 2.0])   # byte order aside


@pytest.mark.parametrize("value", [2, -1, 300, 2.5, 1 + 1j, 10 ** 30])
@pytest.mark.parametrize("dt", [np.float32, np.float64, np.int8, np.uint8, np.int64, np.complex64])
def test_python_scalar_src_with_dtype_is_taken_as_with_out(value, dt):
    """dtype= takes a Python scalar as out= does (NumPy 2's weak scalars): same result, same error class; an int
    that does not fit (NumPy's OverflowError for ``np.array(value, dtype)``) is refused, never wrapped."""
    index = np.array([0, 1, 1])
    outcomes = []
    for kwargs in ({"out": np.zeros(2, dt)}, {"dtype": dt}):
        try:
            outcomes.append(cs.scatter(value, index, **kwargs))
        except (TypeError, ValueError) as err:
            outcomes.append(type(err))
    assert type(outcomes[0]) is type(outcomes[1]), outcomes
    if isinstance(outcomes[0], np.ndarray):
        np.testing.assert_array_equal(outcomes[1], outcomes[0])
        assert outcomes[1].dtype == dt
    try:
        np.array(value, dtype=dt)
    except OverflowError:
        assert outcomes[1] is ValueError
    except TypeError:   # complex into a real dtype: refused by the same_kind rule
        assert outcomes[1] is TypeError


def test_python_int_out_of_range_of_dtype_names_the_value():
    with pytest.raises(ValueError, match="src=300 is out of range for the result dtype int8"):
        cs.scatter(300, np.array([0, 1]), dtype=np.int8)
    with pytest.raises(ValueError, match="src=300 is out of range for the result dtype int8"):
        cs.gather(300, (), dtype=np.int8)


@pytest.mark.parametrize("fun", ["scatter", "scatter_into"])
@pytest.mark.parametrize("value", ["yes", 2, 0.0])
def test_indices_are_sorted_must_be_a_bool(fun, value):
    args = (np.zeros(2), np.ones(3), np.array([0, 1, 1])) if fun == "scatter_into" else (np.ones(3),
                                                                                         np.array([0, 1, 1]))
    with pytest.raises(TypeError, match=rf"indices_are_sorted must be a bool \(or None: no hint\), got "
                                         rf"{type(value).__name__}"):
        getattr(cs, fun)(*args, indices_are_sorted=value)
