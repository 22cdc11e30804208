"""cyscatter.torch.native against torch's own scatter_reduce / index_add_ / index_select and plain loops."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
import cyscatter as cs
from cyscatter.torch import native as cst

DTYPES = [torch.float32, torch.float64]
# 7 entries into 5 groups: duplicates (0, 3) and empty groups (2, 4)
INDEX = torch.tensor([0, 3, 1, 0, 3, 3, 0])
DIM_SIZE = 5


def data(dtype, feature=(3,), seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn((len(INDEX), *feature), generator=g, dtype=dtype)


def reference_reduce(src, index, reduce, dim_size, fill):
    """torch.scatter_reduce (include_self=False) with empty groups set to `fill`."""
    expanded = index.view(-1, *([1] * (src.dim() - 1))).expand_as(src)
    out = torch.zeros((dim_size, *src.shape[1:]), dtype=src.dtype)
    out = out.scatter_reduce(0, expanded, src, reduce, include_self=False)
    empty = torch.bincount(index, minlength=dim_size) == 0
    out[empty] = fill
    return out


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op, reduce, fill", [("add", "sum", 0.0), ("mul", "prod", 1.0), ("mean", "mean", 0.0),
                                              ("max", "amax", -np.inf), ("min", "amin", np.inf)])
def test_scatter_matches_scatter_reduce(dtype, op, reduce, fill):
    src = data(dtype)
    got = cst.scatter(src, INDEX, op, dim_size=DIM_SIZE)
    assert got.dtype == dtype and got.shape == (DIM_SIZE, 3)
    torch.testing.assert_close(got, reference_reduce(src, INDEX, reduce, DIM_SIZE, fill))


@pytest.mark.parametrize("dtype", DTYPES)
def test_scatter_add_matches_index_add_along_an_axis(dtype):
    src = data(dtype, (2,)).T.contiguous()          # (2, 7): scatter along axis 1
    want = torch.zeros(2, DIM_SIZE, dtype=dtype).index_add_(1, INDEX, src)
    torch.testing.assert_close(cst.scatter(src, INDEX, "add", dim_size=DIM_SIZE, axis=1), want)
    torch.testing.assert_close(cst.scatter(src, INDEX, "sum", dim_size=DIM_SIZE, axis=-1), want)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", [o.name for o in cs.OPS])
def test_every_op_passes_through_to_the_core(dtype, op):
    """The frontend gives the NumPy core's result for every op of the registry, in the core's dtype."""
    src = data(dtype).abs() + 0.5
    src[1, 1] = np.nan
    want = cs.scatter(src.numpy().copy(), INDEX.numpy(), op, dim_size=DIM_SIZE)
    got = cst.scatter(src, INDEX, op, dim_size=DIM_SIZE)
    assert got.dtype == torch.from_numpy(want).dtype
    np.testing.assert_array_equal(got.numpy(), want)


def test_scatter_default_dim_size_and_fill_value():
    src = data(torch.float64)
    got = cst.scatter(src, INDEX, "max", fill_value=0)
    assert got.shape == (4, 3)
    torch.testing.assert_close(got[2], torch.zeros(3, dtype=torch.float64))


@pytest.mark.parametrize("dtype", DTYPES)
def test_gather_matches_index_select(dtype):
    src = data(dtype)[:DIM_SIZE]
    torch.testing.assert_close(cst.gather(src, INDEX), src.index_select(0, INDEX))
    torch.testing.assert_close(cst.gather(src.T, INDEX, axis=1), src.T.index_select(1, INDEX))


@pytest.mark.parametrize("op", ["add", "max", "mean"])
def test_scatter_into_updates_a_copy_and_in_place(op):
    src, dst = data(torch.float64), torch.randn(DIM_SIZE, 3, dtype=torch.float64)
    reduce = {"add": "sum", "max": "amax", "mean": "mean"}[op]
    expanded = INDEX.view(-1, 1).expand_as(src)
    if op == "mean":   # cyscatter's in-place mean adds the group mean to dst
        want = dst + reference_reduce(src, INDEX, "mean", DIM_SIZE, 0.0)
    else:
        want = dst.scatter_reduce(0, expanded, src, reduce, include_self=True)
    before = dst.clone()
    torch.testing.assert_close(cst.scatter_into(dst, src, INDEX, op), want)
    torch.testing.assert_close(dst, before)                       # functional form: dst unchanged
    assert cst.scatter_into_(dst, src, INDEX, op) is dst
    torch.testing.assert_close(dst, want)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["add", "mean", "max", "min", "mul"])
def test_gather_scatter_matches_gather_then_scatter(dtype, op):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(6, 4, generator=g, dtype=dtype)
    gi, si = torch.randint(0, 6, (20,), generator=g), torch.randint(0, 8, (20,), generator=g)
    w = torch.rand(20, 1, generator=g, dtype=dtype)
    fill = {"add": 0.0, "mean": 0.0, "mul": 1.0, "max": -np.inf, "min": np.inf}[op]
    reduce = {"add": "sum", "mean": "mean", "mul": "prod", "max": "amax", "min": "amin"}[op]
    want = reference_reduce(x[gi] * w, si, reduce, 8, fill)
    torch.testing.assert_close(cst.gather_scatter(x, gi, si, op, weight=w, dim_size=8), want)
    plan = cst.gather_scatter_plan(gi, si, src_size=6, dim_size=8)
    torch.testing.assert_close(cst.gather_scatter(x, op=op, weight=w, plan=plan), want)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op, fn", [("add", torch.sum), ("max", torch.amax), ("mean", torch.mean)])
def test_segment_and_gather_segment(dtype, op, fn):
    src = data(dtype)
    indptr = torch.tensor([0, 2, 2, 7])
    got = cst.segment(src, indptr, op, fill_value=0)
    want = torch.stack([fn(src[a:b], 0) if b > a else torch.zeros(3, dtype=dtype)
                        for a, b in zip(indptr[:-1].tolist(), indptr[1:].tolist())])
    torch.testing.assert_close(got, want)
    rows = torch.arange(3.0, dtype=dtype)[:, None].expand(3, 2)
    torch.testing.assert_close(cst.gather_segment(rows, indptr), rows.repeat_interleave(torch.diff(indptr), 0))
    torch.testing.assert_close(cst.segment_ids(indptr), torch.tensor([0, 0, 2, 2, 2, 2, 2]))


def loop_groups(src, index, dim_size):
    return [src[index == j] for j in range(dim_size)]


@pytest.mark.parametrize("dtype", DTYPES)
def test_softmax_family_and_moments_match_loops(dtype):
    src = data(dtype)
    groups = loop_groups(src, INDEX, DIM_SIZE)
    softmax = torch.empty_like(src)
    for j in range(DIM_SIZE):
        if len(groups[j]):
            softmax[INDEX == j] = torch.softmax(groups[j], 0)
    torch.testing.assert_close(cst.scatter_softmax(src, INDEX, dim_size=DIM_SIZE), softmax)
    torch.testing.assert_close(cst.scatter_log_softmax(src, INDEX, dim_size=DIM_SIZE), softmax.log())
    lse = torch.stack([torch.logsumexp(g, 0) if len(g) else torch.full((3,), -np.inf, dtype=dtype) for g in groups])
    torch.testing.assert_close(cst.scatter_logsumexp(src, INDEX, dim_size=DIM_SIZE), lse)
    for ddof in (0, 1):
        var = torch.stack([g.var(0, correction=ddof) if len(g) > ddof else torch.full((3,), np.nan, dtype=dtype)
                           for g in groups])
        got = cst.scatter_var(src, INDEX, ddof=ddof, dim_size=DIM_SIZE)
        nonempty = torch.bincount(INDEX, minlength=DIM_SIZE) > ddof
        torch.testing.assert_close(got[nonempty], var[nonempty])
        torch.testing.assert_close(cst.scatter_std(src, INDEX, ddof=ddof, dim_size=DIM_SIZE)[nonempty],
                                   var[nonempty].sqrt())


def test_nan_skipping_moments():
    src = data(torch.float64)
    src[0, 0] = np.nan
    got = cst.scatter_nanvar(src, INDEX, dim_size=DIM_SIZE)
    members = src[INDEX == 0][:, 0]
    torch.testing.assert_close(got[0, 0], members[~members.isnan()].var(correction=0))
    torch.testing.assert_close(cst.scatter_nanstd(src, INDEX, dim_size=DIM_SIZE), got.sqrt(), equal_nan=True)


@pytest.mark.parametrize("dtype", DTYPES)
def test_argmax_argmin_count_any_all(dtype):
    src = data(dtype)
    for fn, arg in ((cst.scatter_argmax, torch.argmax), (cst.scatter_argmin, torch.argmin)):
        got = fn(src, INDEX, dim_size=DIM_SIZE, fill_value=-1)
        assert got.dtype == torch.int64
        for j in range(DIM_SIZE):
            members = torch.nonzero(INDEX == j).flatten()
            want = members[arg(src[members], 0)] if len(members) else torch.full((3,), -1)
            assert torch.equal(got[j], want)
    assert torch.equal(cst.scatter_count(INDEX, DIM_SIZE), torch.bincount(INDEX, minlength=DIM_SIZE))
    flags = src > 0
    any_, all_ = cst.scatter_any(flags, INDEX, dim_size=DIM_SIZE), cst.scatter_all(flags, INDEX, dim_size=DIM_SIZE)
    for j, g in enumerate(loop_groups(flags, INDEX, DIM_SIZE)):
        assert torch.equal(any_[j], g.any(0)) and torch.equal(all_[j], g.all(0))
    assert torch.equal(cst.scatter_nanargmax(src, INDEX, dim_size=DIM_SIZE, fill_value=-1),
                       cst.scatter_argmax(src, INDEX, dim_size=DIM_SIZE, fill_value=-1))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op, running", [("add", torch.cumsum), ("max", lambda x, d: torch.cummax(x, d).values)])
def test_scan_matches_per_group_running_ops(dtype, op, running):
    src = data(dtype)
    got = cst.scatter_scan(src, INDEX, op)
    want = torch.empty_like(src)
    for j in range(DIM_SIZE):
        mask = INDEX == j
        if mask.any():
            want[mask] = running(src[mask], 0)
    torch.testing.assert_close(got, want)


def test_bad_arguments_raise_clear_errors():
    src = data(torch.float64)
    with pytest.raises(TypeError, match="index must be an integer tensor"):
        cst.scatter(src, INDEX.double())
    with pytest.raises(TypeError, match="src must be a torch.Tensor"):
        cst.scatter(src.numpy(), INDEX)
    with pytest.raises(ValueError, match="axis 5"):
        cst.scatter(src, INDEX, axis=5)
    with pytest.raises(IndexError):
        cst.scatter(src, INDEX, dim_size=2)
    with pytest.raises((ValueError, KeyError), match="nope"):
        cst.scatter(src, INDEX, "nope")


@pytest.mark.parametrize("op, torch_reduce", [("add", "sum"), ("max", "amax"), ("min", "amin"), ("mul", "prod")])
def test_bfloat16_matches_scatter_reduce(op, torch_reduce):
    pytest.importorskip("ml_dtypes")
    g = torch.Generator().manual_seed(5)
    src = torch.randn(7, 3, generator=g).to(torch.bfloat16).requires_grad_()
    index = torch.tensor([0, 2, 2, 1, 0, 2, 1])
    got = cst.scatter(src, index, op, dim_size=3)
    want = torch.zeros(3, 3, dtype=torch.bfloat16).scatter_reduce(0, index.view(-1, 1).expand(7, 3), src.detach(),
                                                                   torch_reduce, include_self=False)
    assert got.dtype == torch.bfloat16
    torch.testing.assert_close(got.detach(), want)
    if op == "add":
        got.backward(torch.ones(3, 3, dtype=torch.bfloat16))
        assert src.grad.dtype == torch.bfloat16 and torch.equal(src.grad, torch.ones(7, 3, dtype=torch.bfloat16))
    torch.testing.assert_close(cst.gather(src.detach(), index), src.detach()[index])


@pytest.mark.parametrize("op, reference", [("median", np.median), ("nanmedian", np.nanmedian)])
def test_median_routes_and_differentiates(op, reference):
    g = torch.Generator().manual_seed(2)
    values = torch.randn(9, generator=g, dtype=torch.float64)
    values[4] = float("nan")
    index = torch.tensor([0, 1, 1, 2, 2, 2, 1, 0, 2])
    src = values.clone().requires_grad_()
    got = cst.scatter(src, index, op)
    want = [reference(values[index == j].numpy()) for j in range(3)]
    np.testing.assert_allclose(got.detach().numpy(), want)
    # segment and gather_scatter take the same op
    order = torch.argsort(index, stable=True)
    indptr = torch.tensor([0, *torch.bincount(index).cumsum(0).tolist()])
    np.testing.assert_allclose(cst.segment(values[order], indptr, op).numpy(), want)
    np.testing.assert_allclose(cst.gather_scatter(values, torch.arange(9), index, op).numpy(), want)
    # the gradient of an odd group's median picks its middle entry (torch.median's rule)
    got[0:1].sum().backward() if op == "median" else got[1:2].sum().backward()
    j = 0 if op == "median" else 1
    members = torch.nonzero(index == j).flatten()
    if op == "median":   # group 0 has two entries: linear interpolation gives each half
        expected = torch.zeros(9, dtype=torch.float64)
        expected[members] = 0.5
    else:
        expected = torch.zeros(9, dtype=torch.float64)
        expected[members[torch.argsort(values[members])[1]]] = 1.0
    torch.testing.assert_close(src.grad, expected)


def test_scatter_quantile_matches_numpy():
    g = torch.Generator().manual_seed(4)
    src = torch.randn(10, 2, generator=g, dtype=torch.float64)
    index = torch.tensor([0, 1, 1, 0, 2, 2, 2, 1, 0, 0])
    for fn, ref in ((cst.scatter_quantile, np.quantile), (cst.scatter_nanquantile, np.nanquantile)):
        got = fn(src, index, 0.3)
        want = np.stack([ref(src[index == j].numpy(), 0.3, axis=0) for j in range(3)])
        np.testing.assert_allclose(got.numpy(), want)
