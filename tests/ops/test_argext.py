"""scatter_argmax / scatter_argmin against the loop reference and the documented tie, NaN and zero rules."""
import numpy as np
import pytest

import cyscatter as cs
from group_cases import LAYOUTS, make_case
from reference_extra import ref_scatter_arg
from testing import INDEX_KINDS

ARG_DTYPES = ("float64", "float32", "float16", "int32", "int64", "int8", "uint8", "uint64")
FUNCS = {"max": cs.scatter_argmax, "min": cs.scatter_argmin}


@pytest.mark.parametrize("kind", ("max", "min"))
@pytest.mark.parametrize("dtype", ARG_DTYPES)
@pytest.mark.parametrize("index_kind", INDEX_KINDS)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("mode", cs.MODES)
def test_matches_reference(backend, kind, dtype, index_kind, layout, mode):
    src, index, dim_size, axis = make_case(3, index_kind, layout, mode, dtype)
    got = backend.call(FUNCS[kind], src, index, dim_size=dim_size, axis=axis, mode=mode)
    want = ref_scatter_arg(src, index, kind, dim_size=dim_size, axis=axis, mode=mode)
    np.testing.assert_array_equal(got, want)
    assert got.dtype == np.int64


@pytest.mark.parametrize("kind", ("max", "min"))
def test_special_values(backend, kind):
    # group 0: NaNs tie (first NaN wins); 1: signed zeros; 2: only -inf / +inf (the identity still has a winner);
    # 3: empty; 4: an ordinary tie
    src = np.array([1.0, np.nan, 2.0, np.nan, -0.0, 0.0, -0.0, -np.inf, -np.inf, np.inf, np.inf, 7.0, 7.0])
    index = np.array([0, 0, 0, 0, 1, 1, 1, 2, 2, 2, 2, 4, 4])
    got = backend.call(FUNCS[kind], src, index)
    zero = 5 if kind == "max" else 4
    extreme = 9 if kind == "max" else 7
    np.testing.assert_array_equal(got, [1, zero, extreme, 13, 11])
    np.testing.assert_array_equal(got, ref_scatter_arg(src, index, kind))


@pytest.mark.parametrize("kind", ("max", "min"))
def test_integer_extremes_are_found(backend, kind):
    info = np.iinfo(np.int64)
    src = np.array([info.min, info.min, info.max, info.max])
    got = backend.call(FUNCS[kind], src, np.array([0, 0, 1, 1]))
    np.testing.assert_array_equal(got, [0, 2])


def test_sentinel_is_index_size_and_winner_values_match_scatter(backend):
    src = np.arange(24.0).reshape(2, 3, 4) % 5
    index = np.array([[0, 3, 0], [3, 3, 0]])   # 2-D index along axes 0..1: n = 6
    got = backend.call(cs.scatter_argmax, src, index, dim_size=5)
    assert got.shape == (5, 4)
    assert (got[[1, 2, 4]] == 6).all()
    flat = src.reshape(6, 4)
    np.testing.assert_array_equal(np.take_along_axis(flat, got[[0, 3]], 0), cs.scatter(src, index, "max")[[0, 3]])


def test_all_dropped_group_gets_sentinel(backend):
    got = backend.call(cs.scatter_argmin, np.array([5.0, 1.0]), np.array([-1, 9]), dim_size=2, mode="drop")
    np.testing.assert_array_equal(got, [2, 2])


@pytest.mark.parametrize("bad, error", [
    (dict(src=np.array([1j, 2j])), TypeError),
    (dict(index=np.array([0.0, 1.0])), TypeError),
    (dict(index=np.array([0, 5]), dim_size=3), IndexError),
    (dict(axis=2), ValueError),
])
def test_errors(backend, bad, error):
    args = dict(src=np.array([1.0, 2.0]), index=np.array([0, 1]), dim_size=None, axis=0)
    args.update(bad)
    with pytest.raises(error):
        backend.call(cs.scatter_argmax, args["src"], args["index"], dim_size=args["dim_size"], axis=args["axis"])


# ---- fill_value: the position of empty groups -------------------------------------------------

@pytest.mark.parametrize("kind", ("max", "min"))
@pytest.mark.parametrize("dtype", ("float64", "int32", "uint8"))
@pytest.mark.parametrize("index_kind", INDEX_KINDS)
@pytest.mark.parametrize("mode", cs.MODES)
@pytest.mark.parametrize("fill", (-1, 0, np.int64(7), 2.0))
def test_fill_value_replaces_only_the_sentinel(backend, kind, dtype, index_kind, mode, fill):
    src, index, dim_size, axis = make_case(3, index_kind, "batch", mode, dtype)
    want = ref_scatter_arg(src, index, kind, dim_size=dim_size, axis=axis, mode=mode)
    n = int(np.prod((index[0] if isinstance(index, tuple) else index).shape))
    want = np.where(want == n, int(fill), want)
    got = backend.call(FUNCS[kind], src, index, dim_size=dim_size, axis=axis, mode=mode, fill_value=fill)
    np.testing.assert_array_equal(got, want)
    assert got.dtype == np.int64


def test_fill_value_matches_numpy_groupies():
    npg = pytest.importorskip("numpy_groupies")
    rng = np.random.default_rng(5)
    src, index = rng.normal(size=50), rng.integers(0, 12, 50)
    for kind in ("max", "min"):
        want = npg.aggregate(index, src, func=f"arg{kind}", size=15, fill_value=-1)
        got = FUNCS[kind](src, index, dim_size=15, fill_value=-1)
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("fill, error", [(2.5, TypeError), ("a", TypeError), (np.float32(1), TypeError),
                                         ([1], TypeError), (1j, TypeError), (2 ** 63, ValueError)])
def test_fill_value_is_checked_as_for_an_int64_output(fill, error):
    with pytest.raises(error, match="fill_value"):
        cs.scatter_argmax(np.array([1.0, 2.0]), np.array([0, 2]), fill_value=fill)
