"""segment(..., initial=): the value each segment's reduction starts from (torch.segment_reduce's `initial`),
against the row-by-row loop reference started there, torch.segment_reduce, its reverse functions against finite
differences, and grad."""
import numpy as np
import pytest

import cyscatter as cs
from compare import assert_same, tolerance
from group_cases import random_indptr, values
from reference_extra import ref_segment
from testing import PLAIN_OPS, op_supports, twin

LAYOUTS = {"axis0": ((11, 3), 0), "batch": ((2, 11, 3), 1), "rows_only": ((11,), 0)}


@pytest.mark.parametrize("op", PLAIN_OPS)
@pytest.mark.parametrize("dtype", ("float32", "float64", "int32", "int64", "uint8", "float16", "complex128"))
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("fill", [None, 9])
@pytest.mark.valid(lambda dtype, op: op_supports(op, dtype))
def test_segment_initial_matches_reference(backend, op, dtype, layout, fill):
    rng = np.random.default_rng(3)
    shape, axis = LAYOUTS[layout]
    src = values(rng, shape, dtype)
    if op == "div":
        src = np.where(src == 0, 1, src).astype(dtype)
    indptr = random_indptr(rng, shape[axis], 6)
    indptr[2] = indptr[1]   # at least one empty segment
    got = backend.call(cs.segment, src, indptr, op, axis=axis, initial=3, fill_value=fill)
    want = ref_segment(src, indptr, op, axis=axis, initial=3, fill_value=fill)
    assert_same(got, want, *tolerance(backend.name, op, want.dtype, src))
    assert (np.moveaxis(got, axis, 0)[1] == (3 if fill is None else fill)).all()


@pytest.mark.parametrize("reduce, op", [("sum", "add"), ("prod", "mul"), ("max", "max"), ("min", "min"),
                                        ("mean", "mean")])
def test_segment_initial_equals_torch_segment_reduce(reduce, op):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    src = rng.standard_normal((12, 3))
    lengths = np.array([3, 0, 4, 1, 0, 4])
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    want = torch.segment_reduce(torch.from_numpy(src), reduce, lengths=torch.from_numpy(lengths), initial=0.25)
    np.testing.assert_allclose(cs.segment(src, indptr, op, initial=0.25), want.numpy(), rtol=1e-14)


@pytest.mark.parametrize("op, want", [("nansum", [2.0, 5.0, 2.0]), ("nanmean", [2.0, 5.0, 2.0]),
                                      ("fmax", [2.0, 3.0, 2.0]), ("fmin", [2.0, 2.0, 2.0]),
                                      ("nanprod", [2.0, 6.0, 2.0])])
def test_segment_initial_of_nan_skipping_ops(backend, op, want):
    """An all-NaN element is an empty one: it keeps `initial`; nanmean divides initial + sum by the non-NaN
    entries."""
    src = np.array([np.nan, 3.0, np.nan])
    got = backend.call(cs.segment, src, np.array([0, 1, 3, 3]), op, initial=2.0)
    np.testing.assert_array_equal(got, want)


def test_segment_initial_errors():
    with pytest.raises(TypeError, match="initial=2.5"):
        cs.segment(np.arange(3), np.array([0, 3]), "add", initial=2.5)
    with pytest.raises(ValueError, match="initial=-1"):
        cs.segment(np.arange(3, dtype=np.uint8), np.array([0, 3]), "add", initial=-1)


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "max", "min", "mean", "sqrt_n", "fmax", "nanmean"])
@pytest.mark.parametrize("batched", [False, True])
def test_segment_initial_reverse_functions(op, batched):
    """VJP against central finite differences of the forward; the JVP its transpose (<J v, w> = <v, J^T w>)."""
    rng = np.random.default_rng(5)
    src = rng.standard_normal((2, 7, 3)) if batched else rng.standard_normal((7, 3))
    indptr = np.array([[0, 2, 2, 5, 7], [0, 1, 4, 4, 7]]) if batched else np.array([0, 2, 2, 5, 7])
    out = cs.segment(src, indptr, op, initial=0.5)
    g = rng.standard_normal(out.shape)
    vjp = cs.segment_vjp_src(op, g, src, indptr, out, initial=0.5)
    numeric = np.zeros_like(src)
    for i in np.ndindex(src.shape):
        step = np.zeros_like(src)
        step[i] = 1e-6
        numeric[i] = ((cs.segment(src + step, indptr, op, initial=0.5)
                       - cs.segment(src - step, indptr, op, initial=0.5)) * g).sum() / 2e-6
    np.testing.assert_allclose(vjp, numeric, atol=1e-7)
    v = rng.standard_normal(src.shape)
    jvp = cs.segment_jvp(op, src, indptr, out, v, initial=0.5)
    np.testing.assert_allclose((jvp * g).sum(), (vjp * v).sum(), rtol=1e-12)


@pytest.mark.parametrize("op", ["add", "mul", "max", "mean", "sqrt_n", "fmin", "nanmean", "set"])
@pytest.mark.parametrize("fill", [None, -3.0])
def test_grad_segment_initial(op, fill):
    pytest.importorskip("autograd")
    from autograd.test_util import check_grads

    import grad
    rng = np.random.default_rng(6)
    src = rng.standard_normal((7, 3))
    indptr = np.array([0, 2, 2, 5, 7])
    # no NaN in src: a NaN-skipping op equals its twin's reference
    np.testing.assert_allclose(grad.segment(src, indptr, op, initial=0.5, fill_value=fill),
                               ref_segment(src, indptr, twin(op), initial=0.5, fill_value=fill), rtol=1e-14)
    check_grads(lambda s: grad.segment(s, indptr, op, initial=0.5, fill_value=fill), modes=["rev", "fwd"],
                order=2)(src)


def test_a_negative_zero_initial_keeps_its_sign():
    """initial=-0.0 starts each segment at -0.0 (not the +0.0 of zeroed pages): -0.0 + -0.0 is -0.0 as in NumPy."""
    np.testing.assert_array_equal(np.signbit(cs.segment(np.array([-0.0]), np.array([0, 1]), "add", initial=-0.0)),
                                  [True])
    got = cs.segment(np.array([-1.0]), np.array([0, 0, 1]), "mul", initial=-0.0)
    np.testing.assert_array_equal(np.signbit(got), [True, False])   # an empty segment: -0.0; -1 * -0.0 = 0.0
    got = cs.segment_ranges(np.ones((2, 3), np.float32), np.array([1]), np.array([1]), "add", initial=-0.0)
    assert got.dtype == np.float32 and np.signbit(got).all()
