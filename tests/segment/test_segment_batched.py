"""Batched CSR pointers (pytorch_scatter's ``indptr`` of shape B + (S + 1,)): segment, gather_segment, their
reverse functions and grad primitives against an explicit loop over the batch rows of the 1-D reference, torch's
own batched ``segment_reduce``, and their validation."""
import numpy as np
import pytest

import cyscatter as cs
from compare import assert_same, tolerance
from group_cases import random_indptr, values
from reference_extra import ref_gather_segment, ref_segment
from testing import PLAIN_OPS, VALUE_DTYPES, op_supports

# (src shape, indptr batch shape): rows along len(batch), the features after
LAYOUTS = {"one_batch": ((3, 9, 2), (3,)), "two_batch": ((2, 3, 7), (2, 3)), "broadcast": ((2, 3, 8, 2), (1, 3)),
           "broadcast_all": ((4, 6), (1,)), "empty_batch": ((0, 5, 2), (0,))}


def _batched_case(seed, layout, dtype, nseg=4):
    rng = np.random.default_rng(seed)
    shape, pbatch = LAYOUTS[layout]
    k = len(pbatch)
    src = values(rng, shape, dtype)
    ptr = np.array([random_indptr(rng, shape[k], nseg) for _ in range(int(np.prod(pbatch)))],
                   np.int64).reshape(pbatch + (nseg + 1,))
    return src, ptr, k


def _loop_reference(src, ptr, k, fn):
    """The 1-D reference applied to each batch row in turn (the batched pointer broadcast against src)."""
    batch = src.shape[:k]
    ptr = np.broadcast_to(ptr, batch + ptr.shape[-1:])
    rows = [fn(src[b], ptr[b]) for b in np.ndindex(*batch)]
    return rows


@pytest.mark.parametrize("op", PLAIN_OPS)
@pytest.mark.parametrize("dtype", VALUE_DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.valid(lambda dtype, op: op_supports(op, dtype))
def test_batched_segment_matches_loop_reference(backend, op, dtype, layout):
    src, ptr, k = _batched_case(3, layout, dtype)
    if op == "div":
        src = np.where(src == 0, 1, src).astype(dtype)
    got = backend.call(cs.segment, src, ptr, op)
    rows = _loop_reference(src, ptr, k, lambda s, p: ref_segment(s, p, op))
    nseg = ptr.shape[-1] - 1
    want = (np.stack(rows) if rows else np.empty((0, nseg) + src.shape[k + 1:], got.dtype)).reshape(
        src.shape[:k] + (nseg,) + src.shape[k + 1:])
    assert got.shape == want.shape
    assert_same(got, want.astype(got.dtype), *tolerance(backend.name, op, want.dtype, src))
    # the explicit axis (indptr.ndim - 1, negative too) gives the same
    assert_same(backend.call(cs.segment, src, ptr, op, axis=k - src.ndim), want.astype(got.dtype),
                *tolerance(backend.name, op, want.dtype, src))


@pytest.mark.parametrize("dtype", ("float64", "int32", "uint8", "complex64"))
@pytest.mark.parametrize("layout", LAYOUTS)
def test_batched_gather_segment_matches_loop_reference(backend, dtype, layout):
    src, ptr, k = _batched_case(4, layout, "float64")
    seg = values(np.random.default_rng(5), src.shape[:k] + (ptr.shape[-1] - 1,) + src.shape[k + 1:], dtype)
    got = backend.call(cs.gather_segment, seg, ptr)
    rows = _loop_reference(seg, ptr, k, lambda s, p: ref_gather_segment(s, p))
    n = src.shape[k] if rows else 0   # no batch row: no pointer says how many rows; none
    want = (np.stack(rows) if rows else np.empty((0, 0) + src.shape[k + 1:], seg.dtype)).reshape(
        src.shape[:k] + (n,) + src.shape[k + 1:])
    assert_same(got, want)


@pytest.mark.parametrize("reduce,op", [("sum", "add"), ("mean", "mean"), ("amax", "max"), ("amin", "min"),
                                       ("prod", "mul")])
def test_batched_segment_matches_torch(reduce, op):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    src = rng.normal(size=(3, 2, 10, 4))
    ptr = np.stack([random_indptr(rng, 10, 5) for _ in range(6)]).reshape(3, 2, 6)
    ptr[0, 0] = [0, 10, 10, 10, 10, 10]   # empty segments in a row
    want = torch._segment_reduce(torch.from_numpy(src), reduce, offsets=torch.from_numpy(ptr), axis=2,
                                 initial=0.0 if op in ("add", "mean") else None).numpy()
    got = cs.segment(src, ptr, op)
    empty = np.broadcast_to((np.diff(ptr) == 0)[..., None], got.shape)
    np.testing.assert_allclose(got[~empty], want[~empty], rtol=1e-12)


@pytest.mark.parametrize("op", ("add", "mul", "max", "min", "mean"))
def test_batched_segment_reverse_functions(op):
    rng = np.random.default_rng(8)
    src = rng.normal(size=(2, 3, 7, 2))
    src[0, 0, 1] = src[0, 0, 0]   # a tie
    ptr = np.stack([random_indptr(rng, 7, 3) for _ in range(6)]).reshape(2, 3, 4)
    out = cs.segment(src, ptr, op)
    g = rng.normal(size=out.shape)
    got = cs.segment_vjp_src(op, g, src, ptr, out)
    tangent = cs.segment_jvp(op, src, ptr, out, rng.normal(size=src.shape))
    for b in np.ndindex(2, 3):
        np.testing.assert_allclose(got[b], cs.segment_vjp_src(op, g[b], src[b], ptr[b], out[b]), rtol=1e-13)
    src_dot = rng.normal(size=src.shape)
    tangent = cs.segment_jvp(op, src, ptr, out, src_dot)
    for b in np.ndindex(2, 3):
        np.testing.assert_allclose(tangent[b], cs.segment_jvp(op, src[b], ptr[b], out[b], src_dot[b]), rtol=1e-13)
    gs = cs.gather_segment_vjp_src(rng.normal(size=src.shape), ptr)
    assert gs.shape == out.shape
    with pytest.raises(ValueError, match="grad_out"):
        cs.segment_vjp_src(op, g.reshape(6, 3, 2), src, ptr, out)


@pytest.mark.parametrize("op", ("add", "mul", "max", "mean"))
def test_batched_grad_primitives(op):
    pytest.importorskip("autograd")
    from autograd.test_util import check_grads

    import grad as csgrad
    rng = np.random.default_rng(9)
    src = rng.normal(size=(2, 6, 2))
    ptr = np.array([[0, 2, 2, 6], [0, 1, 5, 6]])
    if op == "max":
        ptr = np.array([[0, 2, 3, 6], [0, 1, 5, 6]])   # no empty segment: its -inf has no finite differences
    assert_same(csgrad.segment(src, ptr, op), cs.segment(src, ptr, op))
    check_grads(lambda s: csgrad.segment(s, ptr, op), modes=["fwd", "rev"], order=2)(src)
    seg = rng.normal(size=(2, 3, 2))
    assert_same(csgrad.gather_segment(seg, ptr), cs.gather_segment(seg, ptr))
    check_grads(lambda s: csgrad.gather_segment(s, ptr), modes=["fwd", "rev"], order=2)(seg)


def test_batched_indptr_validation_names_the_batch_position():
    src = np.zeros((2, 3, 5))
    good = np.tile([0, 2, 5], (2, 3, 1))
    bad = good.copy()
    bad[1, 2] = [0, 6, 5]
    with pytest.raises(ValueError, match=r"indptr\[1, 2, 1\] = 6 > indptr\[1, 2, 2\] = 5"):
        cs.segment(src, bad)
    bad = good.copy()
    bad[0, 1, 0] = 1
    with pytest.raises(ValueError, match=r"indptr\[0, 1, 0\] = 1 must be 0"):
        cs.segment(src, bad)
    bad = good.copy()
    bad[1, 0, -1] = 4
    with pytest.raises(ValueError, match=r"indptr\[1, 0, -1\] = 4 must equal the number of rows"):
        cs.segment(src, bad)
    with pytest.raises(ValueError, match="batch dims"):
        cs.segment(src, np.tile([0, 2, 5], (3, 3, 1)))
    with pytest.raises(ValueError, match="axis 2"):
        cs.segment(src, good, axis=0)
    with pytest.raises(ValueError, match="2 batch dims"):
        cs.segment(np.zeros(5), np.tile([0, 2, 5], (1, 1, 1)))
    with pytest.raises(TypeError, match="integers"):
        cs.segment(src, good.astype(float))
    with pytest.raises(ValueError, match="same number of rows"):
        cs.gather_segment(np.zeros((2, 2)), np.array([[0, 1, 3], [0, 1, 4]]))
    with pytest.raises(ValueError, match="segments"):
        cs.gather_segment(np.zeros((2, 3)), np.array([[0, 1, 3], [0, 1, 3]]))
    before = src.copy()
    cs.segment(src, good)
    assert_same(src, before)
