"""The assignment ops: "set" (alias "last", the last entry in index order wins) and "first".

Against an explicit loop (tests/helpers/reference.py), NumPy's ``a[idx] = v``, JAX's ``.at[].set``, numpy_groupies'
``func="first"/"last"`` and torch's ``index_put_`` / ``scatter_``, on the CPU and the emulated CuPy backend;
their gradients with autograd's ``check_grads``; the Dask layer; and the functions that refuse them.
(tests/core/test_scatter.py runs set and first through its whole ops x dtypes x index x axis x layout x mode grid too:
the op list comes from the registry.)
"""
from __future__ import annotations

import numpy as np
import pytest

import cyscatter as cs
from reference import ref_scatter
from testing import INDEX_DTYPES, INDEX_KINDS, VALUE_DTYPES

ASSIGN_OPS = ("set", "last", "first")
MODES = ("raise", "drop", "wrap", "clip", "normalize_drop")


def _loop(src, index, size, first=False, init=None):
    """out[index[k]] = src[k] in index order (first: only a row's first entry), in plain Python."""
    out = np.zeros((size,) + src.shape[1:], src.dtype) if init is None else np.array(init)
    seen = set()
    for k, j in enumerate(index):
        if first and j in seen:
            continue
        seen.add(j)
        out[j] = src[k]
    return out


def _values(dtype, shape, rng):
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    if dtype.kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    return rng.integers(0, 100, shape).astype(dtype)


# ---- forward: explicit loop, every dtype (bool too), index dtype, int/tuple index, backend ------------------

@pytest.mark.parametrize("op", ASSIGN_OPS)
@pytest.mark.parametrize("dtype", VALUE_DTYPES + ("bool",))
@pytest.mark.parametrize("kind", INDEX_KINDS)
def test_matches_the_loop(backend, op, dtype, kind):
    rng = np.random.default_rng(abs(hash((op, dtype, kind))) % 2 ** 32)
    src = _values(dtype, (40, 3), rng)
    flat = rng.integers(0, 12, 40)   # duplicates; rows 12..13 of the output are never reached
    expected = _loop(src, flat, 14, first=op == "first")
    if kind == "int":
        index, dim_size = flat, 14
    else:
        index, dim_size = (flat // 7, flat % 7), (2, 7)
        expected = expected.reshape(2, 7, 3)
    actual = backend.call(cs.scatter, src, index, op, dim_size=dim_size)
    assert actual.dtype == src.dtype
    np.testing.assert_array_equal(actual, expected)
    dst = _values(dtype, expected.shape, rng)
    want = _loop(src, flat, 14, first=op == "first", init=dst.reshape(14, 3)).reshape(expected.shape)
    moved = backend.asarray(dst.copy())
    assert cs.scatter_into(moved, backend.asarray(src), backend.asarray(index), op) is moved
    np.testing.assert_array_equal(backend.to_numpy(moved), want)


@pytest.mark.parametrize("op", ASSIGN_OPS)
@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
@pytest.mark.parametrize("mode", MODES)
def test_modes_axis_and_index_dtypes(backend, op, index_dtype, mode):
    rng = np.random.default_rng(7)
    src = rng.standard_normal((2, 30, 2))
    raw = rng.integers(-4 if mode != "raise" and np.dtype(index_dtype).kind == "i" else 0,
                       9 if mode != "raise" else 6, 30)
    index = raw.astype(index_dtype)
    if mode != "raise" and np.dtype(index_dtype).kind == "u":
        index = rng.integers(0, 9, 30).astype(index_dtype)
    expected = ref_scatter(src, index, op, dim_size=6, axis=1, mode=mode)
    actual = backend.call(cs.scatter, src, index, op, dim_size=6, axis=1, mode=mode)
    np.testing.assert_array_equal(actual, expected)
    dst = rng.standard_normal((2, 6, 2))
    got = backend.asarray(dst.copy())
    cs.scatter_into(got, backend.asarray(src), backend.asarray(index), op, axis=1, mode=mode)
    np.testing.assert_array_equal(backend.to_numpy(got), ref_scatter(src, index, op, axis=1, mode=mode, dst=dst))


def test_last_is_an_alias_of_set():
    assert cs.get_op("last") is cs.get_op("set")
    assert cs.get_op("first").name == "first"


@pytest.mark.parametrize("op", ASSIGN_OPS)
def test_fill_value_dtype_and_out(backend, op):
    src, index = np.array([1., 2., 3., 4.]), np.array([0, 3, 0, 3])
    want = {"set": [3., 0., 0., 4.], "last": [3., 0., 0., 4.], "first": [1., 0., 0., 2.]}[op]
    np.testing.assert_array_equal(backend.call(cs.scatter, src, index, op), want)
    filled = backend.call(cs.scatter, src, index, op, fill_value=np.nan)
    np.testing.assert_array_equal(filled, np.where(np.isin(np.arange(4), index), want, np.nan))
    as_f32 = backend.call(cs.scatter, src, index, op, dtype=np.float32)
    assert as_f32.dtype == np.float32
    np.testing.assert_array_equal(as_f32, np.float32(want))
    out = backend.xp.full(4, 99.)
    assert cs.scatter(backend.asarray(src), backend.asarray(index), op, out=out) is out
    np.testing.assert_array_equal(backend.to_numpy(out), want)   # out's values are not read


def test_bool_and_float16_are_moved_exactly():
    src = np.array([True, False, True])
    np.testing.assert_array_equal(cs.scatter(src, np.array([1, 1, 0]), "set"), [True, False])
    half = np.array([65504., 1e-7, 3.], np.float16)
    got = cs.scatter(half, np.array([2, 0, 0]), "first")
    assert got.dtype == np.float16 and got.tobytes() == np.array([1e-7, 0, 65504.], np.float16).tobytes()


_NON_NUMBER_SRC = {
    "timedelta64[s]": np.array([5, -3, 7, 1, 2], "m8[s]"),
    "datetime64[D]": np.array(["2020-01-01", "NaT", "1999-12-31", "2000-02-29", "2024-07-04"], "M8[D]"),
    "<U3": np.array(["a", "bcd", "", "ef", "g"]),
    "S2": np.array([b"a", b"bc", b"", b"d", b"ef"]),
    "record": np.array([(1, 2.0), (3, 4.0), (5, 6.0), (7, 8.0), (9, 10.0)], "i4,f8"),
}


def _empty_row(dtype):
    """The documented fresh row of an assignment: NaT for datetime64, else np.zeros' value of the dtype."""
    return np.array("NaT", dtype)[()] if dtype.kind == "M" else np.zeros((), dtype)[()]


@pytest.mark.parametrize("op", ASSIGN_OPS + ("nanfirst", "nanlast"))
@pytest.mark.parametrize("name", sorted(_NON_NUMBER_SRC))
def test_any_dtype_gather_moves_matches_the_loop(op, name):
    src = _NON_NUMBER_SRC[name]
    index = np.array([3, 0, 3, 1, 0])   # row 2 is never reached
    first = op in ("first", "nanfirst")
    init = np.full(4, _empty_row(src.dtype), src.dtype)
    got = cs.scatter(src, index, op)
    assert got.dtype == src.dtype
    np.testing.assert_array_equal(got, _loop(src, index, 4, first=first, init=init))
    filled = cs.scatter(src, index, op, fill_value=src[2])
    np.testing.assert_array_equal(filled, _loop(src, index, 4, first=first, init=np.full(4, src[2], src.dtype)))
    dst = np.array(src[[4, 4, 4, 4]])
    assert cs.scatter_into(dst, src, index, op) is dst
    np.testing.assert_array_equal(dst, _loop(src, index, 4, first=first, init=src[[4, 4, 4, 4]]))
    np.testing.assert_array_equal(cs.gather(got, index), got[index])   # gather takes these dtypes as well


def test_object_dtype_is_refused_naming_the_op():
    with pytest.raises(TypeError, match=r"op 'set' does not support src dtype object .*any dtype but object"):
        cs.scatter(np.array([1, None], object), np.array([0, 0]), "set")


def test_reduction_error_lists_the_supported_dtypes():
    with pytest.raises(TypeError, match=r"op 'add' does not support src dtype <U1 \(supported: integers"):
        cs.scatter(np.array(["a", "b"]), np.array([0, 0]), "add")


def test_sorted_hint_gives_the_same_result():
    rng = np.random.default_rng(3)
    index = np.sort(rng.integers(0, 20, 200))
    src = rng.standard_normal(200)
    for op in ASSIGN_OPS:
        np.testing.assert_array_equal(cs.scatter(src, index, op, indices_are_sorted=True), cs.scatter(src, index, op))


def test_raise_leaves_dst_untouched(backend):
    dst = backend.asarray(np.arange(4.))
    with pytest.raises(IndexError, match="index"):
        cs.scatter_into(dst, backend.asarray(np.ones(3)), backend.asarray(np.array([0, 7, 1])), "set")
    np.testing.assert_array_equal(backend.to_numpy(dst), np.arange(4.))


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_deterministic_whatever_the_thread_count(threads):
    rng = np.random.default_rng(11)
    index = rng.integers(0, 1000, 200_000)
    src = rng.standard_normal((200_000, 8))
    for op, first in (("set", False), ("first", True)):
        winner = np.full(1000, -1)
        if first:
            rows, at = np.unique(index, return_index=True)   # the first occurrence of each row
            winner[rows] = at
        else:
            winner[index] = np.arange(index.size)   # NumPy's 1-d assignment: the last wins
        got = cs.scatter(src, index, op, dim_size=1000, num_threads=threads)
        np.testing.assert_array_equal(got, src[winner])


# ---- peers ----------------------------------------------------------------------------------------------------

def test_numpy_fancy_assignment():
    rng = np.random.default_rng(5)
    src = rng.standard_normal((50, 4))
    unique = rng.permutation(80)[:50]   # no duplicates: NumPy's a[idx] = v is then defined in any dims
    a = np.zeros((80, 4))
    a[unique] = src
    np.testing.assert_array_equal(cs.scatter(src, unique, "set", dim_size=80), a)
    np.testing.assert_array_equal(cs.scatter(src, unique, "first", dim_size=80), a)
    rows, cols = unique // 10, unique % 10   # a tuple index: a[rows, cols] = v
    b = np.zeros((8, 10, 4))
    b[rows, cols] = src
    np.testing.assert_array_equal(cs.scatter(src, (rows, cols), "set", dim_size=(8, 10)), b)
    dup = rng.integers(0, 10, 500)   # 1-d with duplicates: NumPy assigns in order, the last wins
    c = np.zeros(10)
    c[dup] = src[:, 0].repeat(10)[:500]
    np.testing.assert_array_equal(cs.scatter(src[:, 0].repeat(10)[:500], dup, "set", dim_size=10), c)


def test_jax_at_set():
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    rng = np.random.default_rng(6)
    index = rng.integers(-12, 12, 300)   # duplicates and negatives: JAX's normalize-then-drop rule
    src = rng.standard_normal((300, 3)).astype(np.float32)
    with jax.default_device(jax.devices("cpu")[0]):
        want = np.asarray(jnp.zeros((10, 3), jnp.float32).at[index].set(src))   # XLA CPU: last wins (checked)
        dst = rng.standard_normal((10, 3)).astype(np.float32)
        want_into = np.asarray(jnp.asarray(dst).at[index].set(src))
    np.testing.assert_array_equal(cs.scatter(src, index, "set", dim_size=10, mode="normalize_drop"), want)
    got = dst.copy()
    cs.scatter_into(got, src, index, "set", mode="normalize_drop")
    np.testing.assert_array_equal(got, want_into)


@pytest.mark.parametrize("func", ["first", "last"])
@pytest.mark.parametrize("dtype", ["float64", "int64", "float32"])
def test_numpy_groupies(func, dtype):
    npg = pytest.importorskip("numpy_groupies")
    rng = np.random.default_rng(8)
    group = rng.integers(0, 30, 400)   # groups 30..34 stay empty
    values = _values(dtype, 400, rng)
    for fill in (0, -1):
        want = npg.aggregate(group, values, func=func, size=35, fill_value=fill)
        np.testing.assert_array_equal(cs.scatter(values, group, func, dim_size=35, fill_value=fill), want)
    if dtype.startswith("float"):   # numpy_groupies' own default for float first/last is NaN (not its 0)
        want = npg.aggregate(group, values, func=func, size=35)
        np.testing.assert_array_equal(cs.scatter(values, group, func, dim_size=35, fill_value=np.nan), want)


def test_torch_index_put_and_scatter():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(9)
    index = rng.integers(0, 16, 300)
    src = rng.standard_normal((300, 2))
    t_index = torch.from_numpy(index)
    put = torch.zeros(16, 2, dtype=torch.float64).index_put_((t_index,), torch.from_numpy(src))
    # index_put_ with duplicates is documented as undefined; torch's CPU kernel assigns in order (checked here)
    np.testing.assert_array_equal(cs.scatter(src, index, "set", dim_size=16), put.numpy())
    flat = torch.zeros(16, dtype=torch.float64).scatter_(0, t_index, torch.from_numpy(src[:, 0]))
    np.testing.assert_array_equal(cs.scatter(src[:, 0], index, "set", dim_size=16), flat.numpy())


# ---- segment and Dask -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("op", ASSIGN_OPS)
def test_segment(op):
    src = np.arange(12.).reshape(6, 2)
    indptr = np.array([0, 2, 2, 5, 6])
    want = {"first": [[0, 1], [0, 0], [4, 5], [10, 11]]}.get(op, [[2, 3], [0, 0], [8, 9], [10, 11]])
    np.testing.assert_array_equal(cs.segment(src, indptr, op), want)
    np.testing.assert_array_equal(cs.segment(src, indptr, op, fill_value=-1)[1], [-1, -1])


@pytest.mark.parametrize("op", ASSIGN_OPS)
@pytest.mark.parametrize("dim_chunks", [None, 3])
def test_dask(op, dim_chunks):
    da = pytest.importorskip("dask.array")
    import cyscatter.dask as csd
    rng = np.random.default_rng(12)
    index = rng.integers(0, 9, 60)
    src = rng.standard_normal((60, 2))
    kw = {} if dim_chunks is None else {"dim_chunks": dim_chunks}
    got = csd.scatter(da.from_array(src, chunks=7), da.from_array(index, chunks=7), op, dim_size=11,
                      split_every=3, **kw).compute()
    np.testing.assert_array_equal(got, cs.scatter(src, index, op, dim_size=11))
    filled = csd.scatter(da.from_array(src, chunks=13), da.from_array(index, chunks=13), op, dim_size=11,
                         fill_value=-5.).compute()
    np.testing.assert_array_equal(filled, cs.scatter(src, index, op, dim_size=11, fill_value=-5.))


# ---- functions that refuse assignments ------------------------------------------------------------------------

REFUSING = {
    "gather_scatter": lambda op: cs.gather_scatter(np.ones((3, 2)), np.array([0, 1]), np.array([1, 1]), op),
    "gather_scatter_vjp_src": lambda op: cs.gather_scatter_vjp_src(
        op, np.ones((2, 2)), np.ones((3, 2)), np.array([0, 1]), np.array([1, 1]), dim_size=2),
    "gather_scatter_vjp_weight": lambda op: cs.gather_scatter_vjp_weight(
        op, np.ones((2, 2)), np.ones((3, 2)), np.array([0, 1]), np.array([1, 1]), weight=np.ones(2), dim_size=2),
    "gather_scatter_jvp": lambda op: cs.gather_scatter_jvp(
        op, np.ones((3, 2)), np.array([0, 1]), np.array([1, 1]), src_dot=np.ones((3, 2)), dim_size=2),
}


@pytest.mark.parametrize("fun", list(REFUSING))
@pytest.mark.parametrize("op", ASSIGN_OPS)
def test_refused_with_a_value_error_naming_the_op(fun, op):
    name = cs.get_op(op).name
    with pytest.raises(ValueError, match=rf"op '{name}' is an assignment .*{fun.split('_vjp')[0].split('_jvp')[0]}"):
        REFUSING[fun](op)


def test_grad_gather_scatter_refuses():
    pytest.importorskip("autograd")
    import grad as csgrad
    with pytest.raises(ValueError, match="op 'first' is an assignment"):
        csgrad.gather_scatter(np.ones((3, 2)), np.array([0, 1]), np.array([1, 1]), "first")


# ---- reverse functions and autograd ---------------------------------------------------------------------------

@pytest.mark.parametrize("op", ASSIGN_OPS)
def test_reverse_functions(backend, op):
    rng = np.random.default_rng(13)
    index = np.array([0, 2, 0, 2, 2, 9, -1])
    src = rng.standard_normal((7, 2))
    dst = rng.standard_normal((5, 2))
    g = rng.standard_normal((5, 2))
    winners = {2, 4} if op != "first" else {0, 1}   # row 0: entries 0, 2; row 2: entries 1, 3, 4; 9 and -1 dropped
    want_src = np.array([g[index[k]] if k in winners else [0., 0.] for k in range(7)])
    out = cs.scatter_into(dst.copy(), src, index, op, mode="drop")
    b = backend
    got = b.call(cs.scatter_vjp_src, op, g, src, index, out, dst=dst, mode="drop")
    np.testing.assert_array_equal(got, want_src)
    want_dst = np.where(np.isin(np.arange(5), [0, 2])[:, None], 0., g)
    np.testing.assert_array_equal(b.call(cs.scatter_vjp_dst, op, g, dst, src, index, out, mode="drop"), want_dst)
    src_dot, dst_dot = rng.standard_normal((7, 2)), rng.standard_normal((5, 2))
    jvp = b.call(cs.scatter_jvp, op, src, index, out, src_dot, dst=dst, dst_dot=dst_dot, mode="drop")
    np.testing.assert_array_equal(jvp, cs.scatter_into(dst_dot.copy(), src_dot, index, op, mode="drop"))
    fresh = cs.scatter(src, index, op, dim_size=5, mode="drop")
    np.testing.assert_array_equal(b.call(cs.scatter_jvp, op, src, index, fresh, src_dot, mode="drop"),
                                  cs.scatter(src_dot, index, op, dim_size=5, mode="drop"))


@pytest.mark.parametrize("op", ASSIGN_OPS)
@pytest.mark.parametrize("kind", INDEX_KINDS)
def test_check_grads(op, kind):
    pytest.importorskip("autograd")
    import autograd.numpy as anp
    from autograd.test_util import check_grads
    import grad as csgrad
    rng = np.random.default_rng(14)
    flat = np.array([0, 3, 0, 5, 3, 3, 1])
    index, dims = (flat, 6) if kind == "int" else ((flat // 3, flat % 3), (2, 3))
    src = rng.standard_normal((2, 7, 3))
    dst = rng.standard_normal((2,) + ((6,) if kind == "int" else (2, 3)) + (3,))
    check_grads(lambda s: anp.sin(csgrad.scatter(s, index, op, dim_size=dims, axis=1)), modes=["fwd", "rev"],
                order=2)(src)
    check_grads(lambda d, s: anp.sin(csgrad.scatter_into(d, s, index, op, axis=1)) * d, modes=["fwd", "rev"],
                order=2)(dst, src)


@pytest.mark.parametrize("op", ASSIGN_OPS)
def test_segment_reverse_functions(op):
    src = np.arange(12.).reshape(6, 2) + 1
    indptr = np.array([0, 2, 2, 5, 6])
    out = cs.segment(src, indptr, op)
    g = np.arange(8.).reshape(4, 2) + 1
    winners = [0, 2, 5] if op == "first" else [1, 4, 5]
    want = np.zeros_like(src)
    want[winners] = g[[0, 2, 3]]
    np.testing.assert_array_equal(cs.segment_vjp_src(op, g, src, indptr, out), want)
    dot = np.ones_like(src) * 3
    np.testing.assert_array_equal(cs.segment_jvp(op, src, indptr, out, dot), cs.segment(dot, indptr, op))


@pytest.mark.parametrize("op", ASSIGN_OPS)
def test_grad_segment(op):
    pytest.importorskip("autograd")
    import autograd.numpy as anp
    from autograd.test_util import check_grads
    import grad as csgrad
    indptr = np.array([0, 2, 2, 5, 6])
    src = np.random.default_rng(15).standard_normal((6, 2))
    check_grads(lambda s: anp.cos(csgrad.segment(s, indptr, op)), modes=["fwd", "rev"], order=2)(src)


@pytest.mark.parametrize("dtype, fill", [
    ("M8[ns]", np.timedelta64(3, "D")), ("M8[ns]", 1.5), ("m8[s]", np.datetime64("2020-01-01", "s")),
    ("m8[s]", 2.5)])
def test_fill_value_of_another_kind_is_refused_for_datetimes(dtype, fill):
    """A timedelta is no date (NumPy's same_kind rule refuses the pair), and a number is a whole count of ticks:
    neither is reinterpreted or truncated."""
    src = np.array([1], dtype) if dtype.startswith("m") else np.array(["2020-01-01"], dtype)
    with pytest.raises(TypeError, match="fill_value"):
        cs.scatter(src, np.array([0]), "set", dim_size=2, fill_value=fill)
    with pytest.raises(TypeError, match="fill_value"):
        cs.gather(src, np.array([5]), mode="drop", fill_value=fill)


def test_fill_value_of_a_datetime_converts_its_unit():
    src = np.array(["2020-01-01"], "M8[ns]")
    got = cs.scatter(src, np.array([0]), "set", dim_size=2, fill_value=np.datetime64("2021-01-01", "D"))
    np.testing.assert_array_equal(got, np.array(["2020-01-01", "2021-01-01"], "M8[ns]"))
    got = cs.scatter(np.array([1], "m8[ns]"), np.array([0]), "set", dim_size=2, fill_value=np.timedelta64(1, "s"))
    np.testing.assert_array_equal(got, np.array([1, 10**9], "m8[ns]"))
    got = cs.scatter(np.array([1], "m8[s]"), np.array([0]), "set", dim_size=2, fill_value=-1.0)   # whole ticks
    np.testing.assert_array_equal(got, np.array([1, -1], "m8[s]"))


def test_fill_value_of_a_record_dtype_as_a_tuple():
    rec = np.dtype([("a", "i4"), ("b", "f8")])
    got = cs.scatter(np.array([(1, 2.0)], rec), np.array([1]), "set", dim_size=3, fill_value=(7, 8.0))
    np.testing.assert_array_equal(got, np.array([(7, 8.0), (1, 2.0), (7, 8.0)], rec))
    np.testing.assert_array_equal(cs.gather(np.zeros(1, rec), np.array([5]), mode="drop", fill_value=(7, 8.0)),
                                  np.array([(7, 8.0)], rec))
    with pytest.raises(TypeError, match="fill_value=\\(7,\\) is not a record"):
        cs.scatter(np.array([(1, 2.0)], rec), np.array([1]), "set", dim_size=3, fill_value=(7,))
