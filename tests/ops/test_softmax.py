"""scatter_logsumexp, scatter_softmax and scatter_log_softmax against the per-group `math` reference, with the
documented rules for huge, infinite and NaN inputs, empty groups and dropped entries."""
import numpy as np
import pytest

import cyscatter as cs
from group_cases import LAYOUTS, make_case
from reference_extra import ref_logsumexp, ref_softmax
from testing import INDEX_KINDS

FLOAT_DTYPES = ("float64", "float32", "float16", "int32", "int64", "uint8")
RTOL = {"float64": 1e-13, "float32": 2e-6, "float16": 1e-3}


def _rtol(dtype):
    return RTOL.get(dtype, RTOL["float64"])


def _result_dtype(dtype):
    return np.dtype(dtype) if np.dtype(dtype).kind == "f" else np.dtype(np.float64)


def _run(backend, func, src, index, **kw):
    return backend.to_numpy(func(backend.asarray(src), backend.asarray(index), **kw))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("index_kind", INDEX_KINDS)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("mode", cs.MODES)
def test_logsumexp_matches_reference(backend, dtype, index_kind, layout, mode):
    src, index, dim_size, axis = make_case(11, index_kind, layout, mode, dtype)
    got = _run(backend, cs.scatter_logsumexp, src, index, dim_size=dim_size, axis=axis, mode=mode)
    want = ref_logsumexp(src, index, dim_size=dim_size, axis=axis, mode=mode)
    assert got.dtype == _result_dtype(dtype)
    np.testing.assert_allclose(got, want, rtol=_rtol(dtype), atol=_rtol(dtype))


@pytest.mark.parametrize("log", (False, True), ids=("softmax", "log_softmax"))
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("index_kind", INDEX_KINDS)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("mode", cs.MODES)
def test_softmax_matches_reference(backend, log, dtype, index_kind, layout, mode):
    src, index, dim_size, axis = make_case(12, index_kind, layout, mode, dtype)
    func = cs.scatter_log_softmax if log else cs.scatter_softmax
    got = _run(backend, func, src, index, dim_size=dim_size, axis=axis, mode=mode)
    want = ref_softmax(src, index, log=log, dim_size=dim_size, axis=axis, mode=mode)
    assert got.dtype == _result_dtype(dtype) and got.shape == src.shape
    np.testing.assert_allclose(got, want, rtol=_rtol(dtype), atol=_rtol(dtype))


@pytest.mark.parametrize("dtype", ("float32", "float64"))
def test_huge_inputs_do_not_overflow(backend, dtype):
    src = np.array([1e4, 1e4 - 1, -1e4, -1e4 + 2, 1e4, -1e4], dtype)
    index = np.array([0, 0, 1, 1, 2, 2])
    with np.errstate(over="raise", invalid="raise", divide="raise"):   # underflow to 0 is expected and exact
        probs = _run(backend, cs.scatter_softmax, src, index)
        logp = _run(backend, cs.scatter_log_softmax, src, index)
        lse = _run(backend, cs.scatter_logsumexp, src, index)
    tol = _rtol(dtype)
    np.testing.assert_allclose(probs, ref_softmax(src, index), rtol=tol, atol=tol)
    np.testing.assert_allclose(logp, ref_softmax(src, index, log=True), rtol=tol)
    np.testing.assert_allclose(lse, ref_logsumexp(src, index), rtol=tol)
    np.testing.assert_allclose(np.bincount(index, probs), 1, rtol=tol)
    assert np.isfinite(probs).all() and np.isfinite(lse).all()


def test_nonfinite_rules(backend):
    # group 0: a -inf member beside finite ones; 1: all -inf; 2: +inf; 3: NaN; 4: empty; 5: plain
    src = np.array([0.0, -np.inf, 0.0, -np.inf, -np.inf, np.inf, 1.0, np.nan, 2.0, 3.0])
    index = np.array([0, 0, 0, 1, 1, 2, 2, 3, 3, 5])
    probs = _run(backend, cs.scatter_softmax, src, index)
    np.testing.assert_array_equal(probs, [0.5, 0.0, 0.5, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan, 1.0])
    logp = _run(backend, cs.scatter_log_softmax, src, index)
    np.testing.assert_array_equal(logp[[1, 9]], [-np.inf, 0.0])
    assert np.isnan(logp[3:9]).all()
    lse = _run(backend, cs.scatter_logsumexp, src, index)
    np.testing.assert_allclose(lse, [np.log(2), -np.inf, np.inf, np.nan, -np.inf, 3.0])
    for got, want in ((probs, ref_softmax(src, index)), (logp, ref_softmax(src, index, log=True)),
                      (lse, ref_logsumexp(src, index))):
        np.testing.assert_allclose(got, want, rtol=1e-15)


def test_empty_groups_and_index_are_nan_free(backend):
    lse = _run(backend, cs.scatter_logsumexp, np.zeros((0, 2)), np.zeros(0, int), dim_size=3)
    np.testing.assert_array_equal(lse, np.full((3, 2), -np.inf))
    probs = _run(backend, cs.scatter_softmax, np.zeros((0, 2)), np.zeros(0, int), dim_size=3)
    assert probs.shape == (0, 2)


def test_dropped_entries(backend):
    src, index = np.array([1.0, 5.0, 2.0]), np.array([0, 9, 0])
    probs = _run(backend, cs.scatter_softmax, src, index, dim_size=1, mode="drop")
    logp = _run(backend, cs.scatter_log_softmax, src, index, dim_size=1, mode="drop")
    assert probs[1] == 0 and logp[1] == -np.inf
    np.testing.assert_allclose(probs[[0, 2]].sum(), 1)


@pytest.mark.parametrize("func", (cs.scatter_logsumexp, cs.scatter_softmax, cs.scatter_log_softmax))
def test_errors(func):
    with pytest.raises(TypeError, match="complex"):
        func(np.ones(2, complex), np.array([0, 1]))
    with pytest.raises(TypeError, match="bool"):
        func(np.ones(2, bool), np.array([0, 1]))
    with pytest.raises(IndexError, match="out of bounds"):
        func(np.ones(2), np.array([0, 3]), dim_size=2)
    with pytest.raises(ValueError, match="does not hold the index shape"):
        func(np.ones(3), np.array([0, 1]))


# ---- out= (NumPy's: receives the result, its values unread) ------------------------------------------------------

@pytest.mark.parametrize("func", ["logsumexp", "softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", ("float64", "float32", "int32"))
@pytest.mark.parametrize("index_kind", INDEX_KINDS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_out_receives_the_result(backend, func, dtype, index_kind, layout):
    src, index, dim_size, axis = make_case(13, index_kind, layout, "raise", dtype)
    if func == "logsumexp":
        want = ref_logsumexp(src, index, dim_size=dim_size, axis=axis)
    else:
        want = ref_softmax(src, index, log=func == "log_softmax", dim_size=dim_size, axis=axis)
    xp = backend.xp
    out = xp.full(want.shape, 7, _result_dtype(dtype))
    got = getattr(cs, "scatter_" + func)(backend.asarray(src), backend.asarray(index), dim_size=dim_size,
                                         axis=axis, out=out)
    assert got is out
    np.testing.assert_allclose(backend.to_numpy(out), want, rtol=_rtol(dtype), atol=_rtol(dtype))
    if func == "logsumexp" and axis >= 0:   # D read off out's shape
        out2 = xp.zeros(want.shape, _result_dtype(dtype))
        getattr(cs, "scatter_" + func)(backend.asarray(src), backend.asarray(index), axis=axis, out=out2)
        np.testing.assert_allclose(backend.to_numpy(out2), want, rtol=_rtol(dtype), atol=_rtol(dtype))


@pytest.mark.parametrize("log", (False, True), ids=("softmax", "log_softmax"))
def test_softmax_in_place(backend, log):
    """out=src: the whole result is made before `out` is written."""
    src = np.array([[1.0, -2.0], [3.0, 0.5], [0.0, 4.0], [2.0, 2.0]])
    index = np.array([0, 1, 0, 1])
    want = ref_softmax(src, index, log=log)
    x = backend.asarray(src.copy())
    func = cs.scatter_log_softmax if log else cs.scatter_softmax
    assert func(x, backend.asarray(index), out=x) is x
    np.testing.assert_allclose(backend.to_numpy(x), want, rtol=1e-13)


@pytest.mark.parametrize("func", [cs.scatter_logsumexp, cs.scatter_softmax, cs.scatter_log_softmax])
def test_out_errors_leave_out_untouched(func):
    src, index = np.array([1.0, 2.0, 3.0]), np.array([0, 2, 0])
    shape = (3,)
    for bad, error, match in [(np.full(shape, 5.0, np.float32), TypeError, "out has dtype float32 but the result "
                                                                           "dtype is float64$"),
                              (np.full((3, 1), 5.0), ValueError, "out has shape"),
                              (np.full(4, 5.0) if func is cs.scatter_softmax else np.full((3, 2), 5.0), ValueError,
                               "out has shape")]:
        before = bad.copy()
        with pytest.raises(error, match=match):
            func(src, index, out=bad)
        np.testing.assert_array_equal(bad, before)
    readonly = np.full(shape, 5.0)
    readonly.flags.writeable = False
    with pytest.raises(ValueError, match="out"):
        func(src, index, out=readonly)
    with pytest.raises(TypeError, match="out must be an ndarray"):
        func(src, index, out=[0.0, 0.0, 0.0])
    with pytest.raises(IndexError):   # an index error leaves out as it was too
        keep = np.full(shape, 5.0)
        func(src, np.array([0, 9, 0]), dim_size=3, out=keep)
    np.testing.assert_array_equal(keep, 5.0)
