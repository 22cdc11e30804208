"""Medians and quantiles of cyscatter.torch.native against np.median / np.nanmedian per group and the NumPy core."""
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import cyscatter as cs
from cyscatter.torch import native as cst

INF, NAN = float("inf"), float("nan")
# groups where a linear quantile at 0.5 and np.median part ways: infinities, signed zeros, NaN
GROUPS = [[1.0, INF], [INF, INF], [INF, 0.0, 0.0], [INF, 0.0, 0.0, NAN], [-0.0, -0.0], [-0.0],
          [-INF, INF, 3.0], [-INF, -INF], [0.0, -0.0], [2.0, -0.0, -0.0, 5.0], [NAN, 1.0], []]
DTYPES = [torch.float64, torch.float32, torch.float16]
REFERENCE = {"median": np.median, "nanmedian": np.nanmedian}


def grouped(dtype):
    """(src, index, the groups' values as NumPy arrays of `dtype`), entries interleaved across groups."""
    values = [v for group in GROUPS for v in group]
    labels = [j for j, group in enumerate(GROUPS) for _ in group]
    order = np.random.default_rng(0).permutation(len(values))
    src = torch.tensor(np.array(values)[order], dtype=dtype)
    index = torch.tensor(np.array(labels)[order])
    np_dtype = np.dtype(str(dtype).removeprefix("torch."))
    return src, index, [np.array(group, np_dtype) for group in GROUPS]


def numpy_per_group(op, groups, dtype):
    with warnings.catch_warnings():   # np.nanmedian of an all-NaN group warns
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.array([REFERENCE[op](g) if g.size else np.nan for g in groups], dtype)


def same_bits(got: torch.Tensor, want: np.ndarray):
    got = got.detach().numpy()
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.view(f"u{got.itemsize}"), want.view(f"u{want.itemsize}"))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["median", "nanmedian"])
def test_median_is_numpys_bit_for_bit(op, dtype):
    src, index, groups = grouped(dtype)
    want = numpy_per_group(op, groups, groups[0].dtype)
    same_bits(cst.scatter(src, index, op, dim_size=len(GROUPS)), want)
    same_bits(cst.scatter(src, index, op, dim_size=len(GROUPS)),
              cs.scatter(src.numpy(), index.numpy(), op, dim_size=len(GROUPS)))
    # segment: the groups laid out contiguously
    order = torch.argsort(index, stable=True)
    indptr = torch.tensor(np.concatenate([[0], np.cumsum([len(g) for g in GROUPS])]))
    same_bits(cst.segment(src[order], indptr, op), want)
    # gather_scatter: row k of the node table passes along edge k
    nodes = torch.cat([src, src.new_zeros(2)])
    edges = torch.arange(len(src))
    same_bits(cst.gather_scatter(nodes, edges, index, op, dim_size=len(GROUPS)), want)


def test_median_repros():
    assert cst.scatter(torch.tensor([1.0, INF]), torch.tensor([0, 0]), "median").item() == INF
    got = cst.scatter(torch.tensor([-0.0, 1.0, -0.0]), torch.tensor([0, 1, 0]), "median")
    assert got.tolist() == [0.0, 1.0] and not torch.signbit(got[0])


@pytest.mark.parametrize("op", ["median", "nanmedian"])
def test_median_gradient_is_the_cores_vjp(op):
    src, index, _ = grouped(torch.float64)
    src = src.where(src.isfinite() | src.isnan(), 7.0).requires_grad_()
    out = cst.scatter(src, index, op, dim_size=len(GROUPS))
    g = torch.linspace(1, 2, len(GROUPS), dtype=torch.float64)
    (grad,) = torch.autograd.grad(out, src, g)
    vjp = cs.scatter_nanquantile_vjp if op == "nanmedian" else cs.scatter_quantile_vjp
    want = vjp(g.numpy(), src.detach().numpy(), index.numpy(), 0.5, method="linear")
    np.testing.assert_array_equal(grad.numpy(), want)


@pytest.mark.parametrize("mode", ["drop", "normalize_drop"])
@pytest.mark.parametrize("op", ["median", "nanmedian"])
def test_gather_scatter_median_drops_whole_edges(op, mode):
    h = torch.tensor([[5.0], [6.0], [7.0], [8.0]], dtype=torch.float64, requires_grad=True)
    gi, si = torch.tensor([0, 5, 1, -9, -1, 2]), torch.tensor([0, 0, 0, 0, 1, 7])
    out = cst.gather_scatter(h, gi, si, op, dim_size=2, mode=mode)
    want = cs.gather_scatter(h.detach().numpy(), gi.numpy(), si.numpy(), op, dim_size=2, mode=mode)
    np.testing.assert_array_equal(out.detach().numpy(), want)
    assert out[0, 0].item() == 5.5
    (grad,) = torch.autograd.grad(out.sum(), h)
    # only the kept edges pass a gradient: 0 -> 0 and 1 -> 0 (half each); -1 -> 1 only under normalize_drop
    expect = [0.5, 0.5, 0.0, 1.0 if mode == "normalize_drop" else 0.0]
    assert grad.ravel().tolist() == expect


@pytest.mark.parametrize("q", [torch.tensor([0.3, 0.6]), [0.3, 0.6], np.array([0.1, 0.9, 0.5])])
def test_quantile_of_a_vector_q_matches_the_core(q):
    src = torch.randn(9, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    index = torch.tensor([0, 1, 0, 2, 1, 0, 0, 2, 2])
    got = cst.scatter_quantile(src, index, q)
    want = cs.scatter_quantile(src.numpy(), index.numpy(), q.numpy() if isinstance(q, torch.Tensor) else q)
    np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("q, error, match", [
    (torch.full((2, 2), 0.5), ValueError, "q must be a scalar or 1-d"),
    (torch.tensor([True]), TypeError, "q must be a real number"),
    ([1.5], ValueError, r"q must lie in \[0, 1\]"),
])
def test_quantile_refuses_a_bad_q_naming_it(q, error, match):
    with pytest.raises(error, match=match):
        cst.scatter_quantile(torch.ones(3), torch.tensor([0, 1, 0]), q)


def test_quantile_refuses_the_internal_median_method():
    with pytest.raises(ValueError, match="method must be one of"):
        cst.scatter_quantile(torch.ones(3), torch.tensor([0, 1, 0]), 0.5, method="median")


@pytest.mark.parametrize("given", ["weight", "plan"])
def test_gather_scatter_median_names_weight_and_plan(given):
    src, gi, si = torch.ones(3, 2), torch.tensor([0, 1, 2]), torch.tensor([0, 0, 1])
    kw = {"weight": torch.ones(3)} if given == "weight" else {"plan": cst.gather_scatter_plan(gi, si)}
    args = (src, gi, si) if given == "weight" else (src, None, None)
    with pytest.raises(ValueError, match=f"takes op 'median' only without weight and plan, got {given}"):
        cst.gather_scatter(*args, "median", **kw)


def test_segment_median_names_a_batched_indptr():
    with pytest.raises(ValueError, match=r"only with a 1-d indptr, got indptr of shape \(2, 3\)"):
        cst.segment(torch.ones(2, 4), torch.tensor([[0, 1, 4], [0, 2, 4]]), "median")
