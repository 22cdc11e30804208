"""The torch_scatter-compatible layer: pytorch_scatter's README and docs examples, its conventions, PyG."""
import pytest

torch = pytest.importorskip("torch")
import cyscatter.torch as torch_scatter

DTYPES = [torch.float32, torch.float64]


def test_readme_broadcasting_example():
    src = torch.randn(10, 6, 64)
    index = torch.tensor([0, 1, 0, 1, 2, 1])
    out, argmax = torch_scatter.scatter_max(src, index, dim=1)   # broadcasting in the first and last dim
    assert out.size() == torch.Size([10, 3, 64])
    torch.testing.assert_close(out[:, 0], torch.maximum(src[:, 0], src[:, 2]))
    assert torch.equal(torch.gather(src, 1, argmax), out)
    out = torch_scatter.scatter(src, index, dim=1, reduce="sum")
    torch.testing.assert_close(out, torch.zeros(10, 3, 64).index_add_(1, index, src))


def test_docs_example_with_a_full_index():
    src = torch.tensor([[2, 0, 1, 4, 3], [0, 2, 1, 3, 4]])
    index = torch.tensor([[4, 5, 4, 2, 3], [0, 0, 2, 2, 1]])
    out, argmax = torch_scatter.scatter_max(src, index, dim=-1)
    assert torch.equal(out, torch.tensor([[0, 0, 4, 3, 2, 0], [2, 4, 3, 0, 0, 0]]))
    assert torch.equal(argmax, torch.tensor([[5, 5, 3, 4, 0, 1], [1, 4, 3, 5, 5, 5]]))   # empty: src.size(dim)
    out = torch_scatter.scatter_add(src, index, dim=-1)
    assert torch.equal(out, torch.zeros(2, 6, dtype=src.dtype).scatter_add_(-1, index, src))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduce, torch_reduce", [("sum", "sum"), ("mul", "prod"), ("mean", "mean"),
                                                  ("max", "amax"), ("min", "amin")])
@pytest.mark.parametrize("full_index", [False, True])
def test_scatter_matches_scatter_reduce(dtype, reduce, torch_reduce, full_index):
    g = torch.Generator().manual_seed(0)
    src = torch.randn(4, 9, 3, generator=g, dtype=dtype)
    index = torch.randint(0, 6, (9,), generator=g)
    index[index == 4] = 5                           # group 4 is empty
    full = index.view(1, -1, 1).expand_as(src)
    if full_index:   # each row of dim 0 scatters with its own index
        full = torch.randint(0, 6, src.shape, generator=g)
        index = full
    if reduce == "mul":   # torch_scatter's empty products are 1
        want = torch.ones(4, 7, 3, dtype=dtype).scatter_reduce(1, full, src, "prod")
    else:                 # scatter_reduce leaves empty groups 0, as torch_scatter
        want = torch.zeros(4, 7, 3, dtype=dtype).scatter_reduce(1, full, src, torch_reduce, include_self=False)
    got = torch_scatter.scatter(src, index, dim=1, dim_size=7, reduce=reduce)
    torch.testing.assert_close(got, want)


def test_integer_mean_rounds_down_and_segment_csr_toward_zero():
    src, index = torch.tensor([-3, -4, 5, 2]), torch.tensor([0, 0, 1, 1])
    assert torch.equal(torch_scatter.scatter_mean(src, index), torch.tensor([-4, 3]))      # floor(-3.5) = -4
    assert torch.equal(torch_scatter.segment_csr(src, torch.tensor([0, 2, 4]), reduce="mean"),
                       torch.tensor([-3, 3]))                                               # trunc(-3.5) = -3


def test_out_accumulates():
    src, index = torch.ones(4, 2), torch.tensor([0, 0, 1, 1])
    out = torch.full((3, 2), 10.0)
    result = torch_scatter.scatter_add(src, index, 0, out=out)
    assert result is out and torch.equal(out[:, 0], torch.tensor([12.0, 12.0, 10.0]))
    out = torch.tensor([[5.0], [0.0], [-1.0]])
    values, arg = torch_scatter.scatter_max(torch.tensor([[1.0], [2.0], [3.0]]), torch.tensor([0, 1, 1]), 0, out=out)
    assert torch.equal(values.flatten(), torch.tensor([5.0, 3.0, -1.0])) and torch.equal(arg.flatten(),
                                                                                          torch.tensor([3, 2, 3]))


@pytest.mark.parametrize("dtype", DTYPES)
def test_segments_and_gathers(dtype):
    src = torch.randn(10, 6, dtype=dtype)
    indptr = torch.tensor([0, 2, 5, 5, 10])
    index = torch.repeat_interleave(torch.arange(4), torch.diff(indptr))
    for reduce, torch_reduce in (("sum", "sum"), ("mean", "mean"), ("max", "amax"), ("min", "amin")):
        want = torch.zeros(4, 6, dtype=dtype).scatter_reduce(0, index.view(-1, 1).expand_as(src), src,
                                                             torch_reduce, include_self=False)
        csr, coo = torch_scatter.segment_csr(src, indptr, reduce=reduce), torch_scatter.segment_coo(
            src, index, reduce=reduce, dim_size=4)
        assert isinstance(csr, torch.Tensor) and isinstance(coo, torch.Tensor)   # torch_scatter 2.x: values only
        if reduce in ("max", "min"):
            pair_csr = getattr(torch_scatter, f"segment_{reduce}_csr")(src, indptr)
            pair_coo = getattr(torch_scatter, f"segment_{reduce}_coo")(src, index, dim_size=4)
            (csr_values, csr_arg), (coo_values, coo_arg) = pair_csr, pair_coo
            assert torch.equal(csr_values, csr) and torch.equal(coo_values, coo)
            assert torch.equal(csr_arg, coo_arg) and torch.equal(csr_arg[2], torch.full((6,), 10))
        torch.testing.assert_close(csr, want)
        torch.testing.assert_close(coo, want)
    rows = torch.randn(4, 6, dtype=dtype)
    torch.testing.assert_close(torch_scatter.gather_csr(rows, indptr), rows[index])
    torch.testing.assert_close(torch_scatter.gather_coo(rows, index), rows[index])


@pytest.mark.parametrize("dtype", DTYPES)
def test_composite_against_plain_torch(dtype):
    src = torch.randn(7, 3, dtype=dtype)
    index = torch.tensor([0, 2, 0, 2, 2, 0, 0])
    softmax = torch.empty_like(src)
    for j in (0, 2):
        softmax[index == j] = torch.softmax(src[index == j], 0)
    torch.testing.assert_close(torch_scatter.composite.scatter_softmax(src, index, dim=0), softmax)
    torch.testing.assert_close(torch_scatter.scatter_log_softmax(src, index, dim=0), softmax.log())
    lse = torch_scatter.scatter_logsumexp(src, index, dim=0)
    torch.testing.assert_close(lse[0], torch.logsumexp(src[index == 0], 0))
    assert torch.equal(lse[1], torch.zeros(3, dtype=dtype))                     # empty group: 0
    std = torch_scatter.scatter_std(src, index, dim=0)
    torch.testing.assert_close(std[2], src[index == 2].std(0))
    assert torch.equal(std[1], torch.zeros(3, dtype=dtype))
    torch.testing.assert_close(torch_scatter.scatter_std(src, index, dim=0, unbiased=False)[0],
                               src[index == 0].std(0, correction=0))


@pytest.mark.parametrize("dtype", DTYPES)
def test_torch_geometric_scatter_agrees(dtype):
    pyg_utils = pytest.importorskip("torch_geometric.utils")
    g = torch.Generator().manual_seed(2)
    src, index = torch.randn(50, 8, generator=g, dtype=dtype), torch.randint(0, 12, (50,), generator=g)
    index[index == 7] = 3                         # duplicates everywhere, group 7 empty
    for reduce in ("sum", "mean", "max", "min", "mul"):
        torch.testing.assert_close(torch_scatter.scatter(src, index, 0, dim_size=12, reduce=reduce),
                                   pyg_utils.scatter(src, index, 0, dim_size=12, reduce=reduce))


def test_pyg_message_passing_step():
    """A PyG layer whose aggregation is torch_scatter's ``scatter`` (as PyG 1.x wrote it) against PyG's own."""
    pyg_nn = pytest.importorskip("torch_geometric.nn")

    class Conv(pyg_nn.MessagePassing):
        def __init__(self, aggr, ours):
            super().__init__(aggr=aggr)
            self.lin, self.ours = torch.nn.Linear(8, 4), ours

        def forward(self, x, edge_index):
            return self.propagate(edge_index, x=self.lin(x))

        def aggregate(self, inputs, index, ptr=None, dim_size=None):
            if not self.ours:
                return super().aggregate(inputs, index, ptr, dim_size)
            return torch_scatter.scatter(inputs, index, dim=self.node_dim, dim_size=dim_size, reduce=self.aggr)

    x, edge_index = torch.randn(20, 8), torch.randint(0, 20, (2, 60))
    for aggr in ("add", "mean", "max"):
        ours, theirs = Conv(aggr, True), Conv(aggr, False)
        theirs.load_state_dict(ours.state_dict())
        a, b = ours(x, edge_index), theirs(x, edge_index)
        torch.testing.assert_close(a, b)
        ga = torch.autograd.grad(a.square().sum(), ours.lin.weight)[0]
        gb = torch.autograd.grad(b.square().sum(), theirs.lin.weight)[0]
        torch.testing.assert_close(ga, gb)


def test_gradient_through_the_compat_layer():
    src = torch.randn(6, 2, dtype=torch.float64, requires_grad=True)
    index = torch.tensor([0, 1, 0, 1, 2, 2])   # groups of two: std is differentiable
    assert torch.autograd.gradcheck(lambda s: torch_scatter.scatter_mean(s, index, 0), (src,))
    assert torch.autograd.gradcheck(lambda s: torch_scatter.scatter_max(s, index, 0)[0], (src,))
    assert torch.autograd.gradgradcheck(lambda s: torch_scatter.scatter_softmax(s, index, 0), (src,))
    assert torch.autograd.gradcheck(lambda s: torch_scatter.scatter_std(s, index, 0), (src,))


def test_bad_reduce():
    with pytest.raises(ValueError, match="reduce must be one of"):
        torch_scatter.scatter(torch.ones(3), torch.tensor([0, 1, 0]), reduce="median")
    with pytest.raises(ValueError, match="floating point"):
        torch_scatter.scatter_softmax(torch.ones(3, dtype=torch.int64), torch.tensor([0, 1, 0]))


@pytest.mark.parametrize("reduce", ["min", "max"])
def test_segment_csr_min_max_with_batched_indptr(reduce):
    g = torch.Generator().manual_seed(3)
    src = torch.randn(2, 6, 3, generator=g)
    indptr = torch.tensor([[0, 2, 2, 6], [0, 1, 4, 6]])
    values, arg = getattr(torch_scatter, f"segment_{reduce}_csr")(src, indptr)
    assert torch.equal(torch_scatter.segment_csr(src, indptr, reduce=reduce), values)
    for b in range(2):
        for i in range(3):
            lo, hi = int(indptr[b, i]), int(indptr[b, i + 1])
            if hi == lo:                       # torch_scatter: empty segments give 0 and src.size(dim)
                assert torch.equal(values[b, i], torch.zeros(3)) and torch.equal(arg[b, i], torch.full((3,), 6))
                continue
            want = src[b, lo:hi].max(0) if reduce == "max" else src[b, lo:hi].min(0)
            assert torch.equal(values[b, i], want.values)
            assert torch.equal(arg[b, i], want.indices + lo)


def _loop_std_grad(values, groups, unbiased):
    """d sum(std per group) / d values by a loop over groups with torch.std; a group whose std is 0 (one member,
    or equal members) gets 0, the documented rule."""
    grad = torch.zeros_like(values)
    for g in groups.unique():
        mask = groups == g
        part = values[mask].detach().clone().requires_grad_(True)
        if part.numel() > 1 and bool((part != part[0]).any()):
            std = part.std(unbiased=unbiased) if unbiased else part.std(unbiased=False)
            (g_part,) = torch.autograd.grad(std, part)
            grad[mask] = g_part
    return grad


@pytest.mark.parametrize("unbiased", [True, False])
@pytest.mark.parametrize("with_out", [False, True])
def test_composite_std_of_zero_has_gradient_zero(unbiased, with_out):
    import warnings
    # groups: two different members, one member, three equal members, empty
    values = torch.tensor([1.0, 2.0, 5.0, 3.0, 3.0, 3.0], dtype=torch.float64, requires_grad=True)
    groups = torch.tensor([0, 0, 1, 2, 2, 2])
    kwargs = {"out": torch.zeros(4, dtype=torch.float64)} if with_out else {"dim_size": 4}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = torch_scatter.composite.scatter_std(values, groups, dim=0, unbiased=unbiased, **kwargs)
        result.sum().backward()
    expected_std = [values[:2].detach().std(unbiased=unbiased).item(), 0.0, 0.0, 0.0]
    torch.testing.assert_close(result.detach(), torch.tensor(expected_std, dtype=torch.float64))
    assert torch.isfinite(values.grad).all(), values.grad
    torch.testing.assert_close(values.grad, _loop_std_grad(values.detach(), groups, unbiased))
