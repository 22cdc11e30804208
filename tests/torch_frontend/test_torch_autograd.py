"""gradcheck and gradgradcheck (float64) of cyscatter.torch's custom ops, and their gradients against torch's."""
import pytest

torch = pytest.importorskip("torch")
from torch.autograd import gradcheck, gradgradcheck

from cyscatter.torch import native as cst

INDEX = torch.tensor([0, 3, 1, 0, 3, 3, 0])   # duplicates, and the empty groups 2 and 4
DIM_SIZE = 5
FULL = torch.tensor([0, 2, 1, 0, 2, 1, 0])    # groups of 2 or more: var with ddof=1, std differentiable


def leaf(*shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=torch.float64).requires_grad_()


def both(fn, *inputs, second=True):
    assert gradcheck(fn, inputs)
    if second:
        assert gradgradcheck(fn, inputs)


@pytest.mark.parametrize("op", ["add", "sub", "mean", "sqrt_n", "max", "min", "set", "first", "nansum", "fmax"])
def test_scatter_to_second_order(op):
    both(lambda s: cst.scatter(s, INDEX, op, dim_size=DIM_SIZE, fill_value=0), leaf(7, 3))


@pytest.mark.parametrize("op", ["mul", "div"])
def test_scatter_value_dependent_partials_first_order(op):
    x = (leaf(7, 3).detach().abs() + 0.5).requires_grad_()
    both(lambda s: cst.scatter(s, INDEX, op, dim_size=DIM_SIZE), x, second=False)
    out = cst.scatter(x, INDEX, op, dim_size=DIM_SIZE)
    (g,) = torch.autograd.grad(out.sum(), x, create_graph=True)
    with pytest.raises(NotImplementedError, match="once only"):
        torch.autograd.grad(g.sum(), x)


def test_max_ties_split_the_gradient():
    x = torch.tensor([1.0, 5.0, 5.0, 2.0], dtype=torch.float64, requires_grad=True)
    cst.scatter(x, torch.tensor([0, 0, 0, 1]), "max").sum().backward()
    torch.testing.assert_close(x.grad, torch.tensor([0.0, 0.5, 0.5, 1.0], dtype=torch.float64))


@pytest.mark.parametrize("op", ["add", "max", "mean"])
def test_scatter_into_both_inputs(op):
    both(lambda d, s: cst.scatter_into(d, s, INDEX, op), leaf(DIM_SIZE, 3, seed=1), leaf(7, 3))


def test_gather_and_axis():
    both(lambda s: cst.gather(s, INDEX, axis=1), leaf(2, DIM_SIZE, 3))


@pytest.mark.parametrize("op", ["add", "mean", "max", "min"])
def test_gather_scatter_with_weight_and_plan(op):
    g = torch.Generator().manual_seed(3)
    gi, si = torch.randint(0, 6, (15,), generator=g), torch.randint(0, 5, (15,), generator=g)
    plan = cst.gather_scatter_plan(gi, si, src_size=6, dim_size=5)
    x, w = leaf(6, 2), (torch.rand(15, 1, generator=g, dtype=torch.float64) + 0.5).requires_grad_()
    both(lambda s, e: cst.gather_scatter(s, gi, si, op, weight=e, dim_size=5), x, w)
    both(lambda s, e: cst.gather_scatter(s, op=op, weight=e, plan=plan), x, w)


@pytest.mark.parametrize("op", ["add", "mean", "max"])
def test_segment_and_gather_segment(op):
    indptr = torch.tensor([0, 2, 2, 7])
    both(lambda s: cst.segment(s, indptr, op, fill_value=0), leaf(7, 3))
    both(lambda s: cst.gather_segment(s, indptr), leaf(3, 2))


@pytest.mark.parametrize("fn", [cst.scatter_softmax, cst.scatter_log_softmax, cst.scatter_logsumexp])
def test_softmax_family(fn):
    both(lambda s: fn(s, INDEX, dim_size=4), leaf(7, 3)) if fn is not cst.scatter_logsumexp else None
    both(lambda s: fn(s, FULL), leaf(7, 3))


@pytest.mark.parametrize("fn", [cst.scatter_var, cst.scatter_std])
@pytest.mark.parametrize("ddof", [0, 1])
def test_moments(fn, ddof):
    both(lambda s: fn(s, FULL, ddof=ddof), leaf(7, 3))


def test_nan_moments_first_order():
    both(lambda s: cst.scatter_nanstd(s, FULL), leaf(7, 3), second=False)


@pytest.mark.parametrize("op, second", [("add", True), ("max", False), ("mul", False)])
def test_scan(op, second):
    both(lambda s: cst.scatter_scan(s, INDEX, op), leaf(7, 3), second=second)
    if op != "max":   # an exclusive max starts from -inf
        both(lambda s: cst.scatter_scan(s, INDEX, op, exclusive=True, reverse=True), leaf(7, 3), second=second)


def test_gradients_match_torch_scatter_reduce():
    x = leaf(7, 3)
    expanded = INDEX.view(-1, 1).expand_as(x)
    for op, reduce in (("add", "sum"), ("mean", "mean"), ("mul", "prod")):
        want = torch.autograd.grad(torch.zeros(DIM_SIZE, 3, dtype=torch.float64).scatter_reduce(
            0, expanded, x, reduce, include_self=False).pow(2).sum(), x)[0]
        got = torch.autograd.grad(cst.scatter(x, INDEX, op, dim_size=DIM_SIZE).pow(2).sum(), x)[0]
        torch.testing.assert_close(got, want)
