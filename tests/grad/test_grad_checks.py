"""grad: first and second derivatives, forward and reverse, of every op against finite differences
(autograd's check_grads) on random data with duplicate indices."""
import numpy as np
import pytest

pytest.importorskip("autograd")
from autograd.test_util import check_grads  # noqa: E402

import grad as csgrad  # noqa: E402
from inputs import DIMS, index as make_index, values  # noqa: E402
from testing import INDEX_KINDS, OPS, twin  # noqa: E402

MODES = ["fwd", "rev"]


def _problem(kind, axis, features, seed=0):
    """(index, src, dst, D): more entries than destination rows, so rows repeat; continuous values, so max/min
    have no ties; magnitudes near 1 (the mul/div draw of `inputs.values`) keep div and mul well conditioned."""
    rng = np.random.default_rng(seed)
    dims = DIMS[kind]
    n = int(np.prod(dims)) + 2
    batch, feat = ((2,) if axis else ()), ((3,) if features else ())
    return (make_index(kind, np.int64, (n,), dims, rng), values(np.float64, batch + (n,) + feat, rng, "mul"),
            values(np.float64, batch + dims + feat, rng, "mul"), dims)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("kind", INDEX_KINDS)
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("features", [False, True])
@pytest.mark.parametrize("inplace", [False, True])
def test_scatter(op, kind, axis, features, inplace):
    index, src, dst, dims = _problem(kind, axis, features)
    if inplace:
        f = lambda d, s: csgrad.scatter_into(d, s, index, op, axis=axis)
        check_grads(f, (0, 1), modes=MODES, order=2)(dst, src)
    else:   # fill_value keeps rows without entries finite (max/min would give -inf/+inf there)
        f = lambda s: csgrad.scatter(s, index, op, dim_size=dims, axis=axis, fill_value=0.25)
        check_grads(f, modes=MODES, order=2)(src)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("argnum", [0, 1])
def test_scatter_into_one_argument(op, argnum):
    index, src, dst, _ = _problem("int", 1, True, seed=1)
    check_grads(lambda d, s: csgrad.scatter_into(d, s, index, op, axis=1), argnum, modes=MODES, order=2)(dst, src)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("mode", ["drop", "wrap", "clip"])
def test_scatter_modes(op, mode):
    rng = np.random.default_rng(2)
    entries = np.array([0, 5, 2, -1, 1, 0, 2, 3])
    src, dst = values(np.float64, (8, 2), rng, "mul"), values(np.float64, (3, 2), rng, "mul")
    check_grads(lambda s: csgrad.scatter(s, entries, op, dim_size=3, mode=mode, fill_value=0.0),
                modes=MODES, order=2)(src)
    check_grads(lambda d, s: csgrad.scatter_into(d, s, entries, op, mode=mode), (0, 1), modes=MODES,
                order=2)(dst, src)


@pytest.mark.parametrize("op", [op for op in OPS if twin(op) != "mul"])   # mul, nanprod: second order only
def test_third_order(op):
    index, src, dst, _ = _problem("int", 0, False, seed=5)
    check_grads(lambda d, s: csgrad.scatter_into(d, s, index, op), (0, 1), modes=MODES, order=3)(dst, src)


@pytest.mark.parametrize("kind", INDEX_KINDS)
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("features", [False, True])
def test_gather(kind, axis, features):
    index, entries, table, _ = _problem(kind, axis, features)
    check_grads(lambda t: csgrad.gather(t, index, axis=axis), modes=MODES, order=3)(table)
    check_grads(lambda e, t: csgrad.gather_into(e, t, index, axis=axis), (0, 1), modes=MODES, order=2)(entries, table)


@pytest.mark.parametrize("mode", ["drop", "wrap", "clip"])
def test_gather_modes(mode):
    rng = np.random.default_rng(3)
    rows = np.array([0, 5, 2, -1, 1, 0])
    table, entries = values(np.float64, (3, 2), rng), values(np.float64, (6, 2), rng)
    check_grads(lambda t: csgrad.gather(t, rows, mode=mode, fill_value=7.0), modes=MODES, order=2)(table)
    check_grads(lambda e, t: csgrad.gather_into(e, t, rows, mode=mode), (0, 1), modes=MODES, order=2)(entries, table)


@pytest.mark.parametrize("op", ["add", "sub", "mean", "mul", "div"])
def test_complex(op):
    rng = np.random.default_rng(4)
    rows = np.array([0, 2, 0, 1, 2, 2])
    src, dst = values(np.complex128, (6, 2), rng, "mul"), values(np.complex128, (3, 2), rng, "mul")
    check_grads(lambda d, s: csgrad.scatter_into(d, s, rows, op), (0, 1), modes=MODES, order=2)(dst, src)
