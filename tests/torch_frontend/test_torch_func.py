"""cyscatter.torch under torch.func (grad, vjp, jacrev, jacfwd, jvp, hessian) and forward-mode AD, float64.

References: torch's own scatter_reduce / index_add / index_select / softmax on the same data through the same
transforms, and finite differences (``gradcheck(check_forward_ad=True)``, which builds dual tensors). Forward
derivatives that differentiate again are checked against reverse-mode Hessians of torch's ops.
"""
import pytest

torch = pytest.importorskip("torch")
import torch.autograd.forward_ad as fwAD
from torch.autograd import gradcheck
from torch.func import grad, hessian, jacfwd, jacrev, jvp, vjp

import cyscatter.torch as ts
from cyscatter.torch import native as cst

# jacrev, jacfwd and hessian vmap the custom ops; segments and gather_scatter have no batching rule: torch loops
# and says so
pytestmark = pytest.mark.filterwarnings("ignore:There is a performance drop:UserWarning")

INDEX = torch.tensor([0, 3, 1, 0, 3, 3, 0])   # duplicates, and the empty groups 2 and 4
FULL = torch.tensor([0, 2, 1, 0, 2, 1, 0])    # every group holds two entries or more
ROWS = INDEX.view(-1, 1).expand(7, 3)


def values(*shape, seed=0, positive=False):
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    return x.abs() + 0.5 if positive else x


def torch_reduce(reduce, size=5, index=INDEX):
    rows = index.view(-1, 1).expand(-1, 3)
    return lambda s: torch.zeros(size, 3, dtype=s.dtype).scatter_reduce(0, rows, s, reduce, include_self=False)


def assert_transforms_agree(ours, reference, x):
    """grad, vjp, jvp, jacrev and jacfwd of `ours` equal those of `reference` at `x` (the reference's
    Jacobian from reverse mode, which torch's ops implement for every reduction)."""
    want_jac = jacrev(reference)(x)
    torch.testing.assert_close(jacrev(ours)(x), want_jac)
    torch.testing.assert_close(jacfwd(ours)(x), want_jac)
    t = values(*x.shape, seed=7)
    out, tangent = jvp(ours, (x,), (t,))
    torch.testing.assert_close(out, reference(x))
    flat = want_jac.reshape(out.numel(), x.numel())
    torch.testing.assert_close(tangent, (flat @ t.reshape(-1)).reshape(out.shape))
    w = values(*out.shape, seed=8)
    torch.testing.assert_close(vjp(ours, x)[1](w)[0], (w.reshape(-1) @ flat).reshape(x.shape))
    torch.testing.assert_close(grad(lambda s: ours(s).pow(2).sum())(x),
                               grad(lambda s: reference(s).pow(2).sum())(x))


def forward_check(fn, *inputs):
    """Finite differences against the forward (dual tensors) and reverse derivatives."""
    inputs = tuple(x.detach().requires_grad_() for x in inputs)
    assert gradcheck(fn, inputs, check_forward_ad=True)


# ---- scatter ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("op, reduce", [("add", "sum"), ("mean", "mean"), ("max", "amax"), ("min", "amin"),
                                        ("mul", "prod")])
def test_scatter_against_scatter_reduce(op, reduce):
    x = values(7, 3, positive=op == "mul")
    assert_transforms_agree(lambda s: cst.scatter(s, INDEX, op, dim_size=5, fill_value=0), torch_reduce(reduce), x)


@pytest.mark.parametrize("op", ["sub", "sqrt_n", "set", "first", "div", "nansum", "nanmean", "fmax", "nanprod"])
def test_scatter_other_ops_by_finite_differences(op):
    forward_check(lambda s: cst.scatter(s, INDEX, op, dim_size=5, fill_value=0), values(7, 3, positive=True))


@pytest.mark.parametrize("op", ["add", "max", "mul"])
def test_scatter_into_both_tangents(op):
    forward_check(lambda d, s: cst.scatter_into(d, s, INDEX, op), values(5, 3, seed=1, positive=True),
                  values(7, 3, positive=True))


def test_gather_against_index_select():
    assert_transforms_agree(lambda s: cst.gather(s, INDEX, axis=1), lambda s: s.index_select(1, INDEX),
                            values(2, 5, 3))


def test_gather_scatter_against_index_add():
    g = torch.Generator().manual_seed(3)
    gi, si = torch.randint(0, 6, (15,), generator=g), torch.randint(0, 5, (15,), generator=g)
    w = values(15, 1, seed=4)
    assert_transforms_agree(lambda s: cst.gather_scatter(s, gi, si, "add", weight=w, dim_size=5),
                            lambda s: torch.zeros(5, 2, dtype=s.dtype).index_add(0, si, s[gi] * w), values(6, 2))
    # the weight's tangent, with a plan
    plan = cst.gather_scatter_plan(gi, si, src_size=6, dim_size=5)
    x = values(6, 2)
    assert_transforms_agree(lambda e: cst.gather_scatter(x, op="mean", weight=e, plan=plan),
                            lambda e: torch.zeros(5, 2, dtype=e.dtype).index_reduce(
                                0, si, x[gi] * e, "mean", include_self=False), w)


@pytest.mark.parametrize("op", ["add", "max"])
def test_gather_scatter_both_tangents_by_finite_differences(op):
    g = torch.Generator().manual_seed(5)
    gi, si = torch.randint(0, 6, (15,), generator=g), torch.randint(0, 5, (15,), generator=g)
    forward_check(lambda s, e: cst.gather_scatter(s, gi, si, op, weight=e, dim_size=5), values(6, 2),
                  values(15, 1, seed=6, positive=True))


# ---- segments, group statistics, scans, quantiles -----------------------------------------------------------------

@pytest.mark.parametrize("op, reduce", [("add", "sum"), ("max", "amax")])
def test_segment_and_gather_segment(op, reduce):
    indptr, ids = torch.tensor([0, 2, 2, 7]), torch.tensor([0, 0, 2, 2, 2, 2, 2])
    assert_transforms_agree(lambda s: cst.segment(s, indptr, op, fill_value=0),
                            torch_reduce(reduce, 3, ids), values(7, 3))
    assert_transforms_agree(lambda s: cst.gather_segment(s, indptr), lambda s: s.index_select(0, ids),
                            values(3, 3))


def test_softmax_family_against_torch():
    x = values(7, 3)
    onehot = torch.nn.functional.one_hot(FULL, 3).T.unsqueeze(-1).bool()   # groups x entries x 1

    def grouped(fn):
        return lambda s: fn(s.unsqueeze(0).masked_fill(~onehot, -torch.inf)).nan_to_num(0.0, neginf=0.0)
    assert_transforms_agree(lambda s: cst.scatter_softmax(s, FULL),
                            lambda s: grouped(lambda v: v.softmax(1))(s).sum(0), x)
    assert_transforms_agree(lambda s: cst.scatter_logsumexp(s, FULL),
                            lambda s: s.unsqueeze(0).masked_fill(~onehot, -torch.inf).logsumexp(1), x)
    forward_check(lambda s: cst.scatter_log_softmax(s, FULL), x)


@pytest.mark.parametrize("name", ["scatter_var", "scatter_std", "scatter_nanvar"])
def test_moments_by_finite_differences(name):
    forward_check(lambda s: getattr(cst, name)(s, FULL, ddof=1), values(7, 3))


@pytest.mark.parametrize("op", ["add", "mul", "max"])
def test_scan_by_finite_differences(op):
    forward_check(lambda s: cst.scatter_scan(s, INDEX, op, reverse=op == "add"), values(7, 3, positive=True))


def test_median_by_finite_differences():
    forward_check(lambda s: cst.scatter(s, FULL, "median"), values(7, 3))


# ---- the torch_scatter layer ---------------------------------------------------------------------------------------

def test_compat_layer():
    x = values(7, 3)
    assert_transforms_agree(lambda s: ts.scatter(s, INDEX, 0, dim_size=5, reduce="mean"), torch_reduce("mean"), x)
    assert_transforms_agree(lambda s: ts.scatter_max(s, INDEX, 0, dim_size=5)[0], torch_reduce("amax"), x)
    indptr = torch.tensor([0, 2, 2, 7])
    forward_check(lambda s: ts.segment_csr(s, indptr, reduce="mean"), x)
    forward_check(lambda s: ts.gather_csr(s, indptr), values(3, 3))
    forward_check(lambda s: ts.composite.scatter_softmax(s, FULL, dim=0), x)
    forward_check(lambda s: ts.composite.scatter_std(s, FULL, dim=0), x)


# ---- second order, nesting, refusals ------------------------------------------------------------------------------

@pytest.mark.parametrize("op, reduce", [("add", "sum"), ("max", "amax"), ("mean", "mean")])
def test_hessians_forward_over_reverse_and_reverse_over_reverse(op, reduce):
    x = values(7, 3)

    def ours(s):
        return cst.scatter(s, INDEX, op, dim_size=5, fill_value=0).pow(3).sum()

    def reference(s):
        return torch_reduce(reduce)(s).pow(3).sum()
    want = hessian(reference)(x)
    torch.testing.assert_close(hessian(ours)(x), want)                  # jacfwd(jacrev)
    torch.testing.assert_close(jacrev(jacrev(ours))(x), want)


def test_gather_scatter_hessian_through_its_unfused_form():
    g = torch.Generator().manual_seed(3)
    gi, si = torch.randint(0, 6, (15,), generator=g), torch.randint(0, 5, (15,), generator=g)
    w = values(15, 1, seed=4)

    def ours(s):
        return cst.gather_scatter(s, gi, si, "mean", weight=w, dim_size=5).pow(3).sum()

    def reference(s):   # index_reduce has no forward-mode formula in torch: its Hessian reverse over reverse
        return torch.zeros(5, 2, dtype=s.dtype).index_reduce(0, si, s[gi] * w, "mean", include_self=False).pow(3).sum()
    x = values(6, 2)
    want = jacrev(jacrev(reference))(x)
    torch.testing.assert_close(hessian(ours)(x), want)
    torch.testing.assert_close(jacrev(jacrev(ours))(x), want)


def test_softmax_hessian_and_gather_forward_over_forward():
    x = values(7, 3)

    def ours(s):
        return cst.scatter_softmax(s, FULL).pow(2).sum()

    def reference(s):
        onehot = torch.nn.functional.one_hot(FULL, 3).T.unsqueeze(-1).bool()
        return s.unsqueeze(0).masked_fill(~onehot, -torch.inf).softmax(1).nan_to_num(0.0).pow(2).sum()
    torch.testing.assert_close(hessian(ours)(x), hessian(reference)(x))
    # linear ops differentiate forward over forward
    cube = jacfwd(jacfwd(lambda s: cst.gather(s, INDEX).pow(3)))(values(5))
    torch.testing.assert_close(cube, jacfwd(jacfwd(lambda s: s.index_select(0, INDEX).pow(3)))(values(5)))


def test_forward_ad_dual_tensors():
    x, t = values(7, 3), values(7, 3, seed=1)
    with fwAD.dual_level():
        out = cst.scatter(fwAD.make_dual(x, t), INDEX, "max", dim_size=5, fill_value=0)
        got = fwAD.unpack_dual(out).tangent
    torch.testing.assert_close(got, jvp(torch_reduce("amax"), (x,), (t,))[1])


def test_vmap_of_grad_per_sample():
    xs = values(4, 7, 3)
    got = torch.vmap(grad(lambda s: cst.scatter(s, INDEX, "mean", dim_size=5).pow(2).sum()))(xs)
    want = torch.vmap(grad(lambda s: torch_reduce("mean")(s).pow(2).sum()))(xs)
    torch.testing.assert_close(got, want)


def test_differentiating_a_core_jvp_again_is_refused_by_name():
    x = values(7, 3, positive=True)
    with pytest.raises(NotImplementedError, match="scatter_jvp"):
        jacfwd(jacfwd(lambda s: cst.scatter(s, INDEX, "mul", dim_size=5)))(x)


def test_non_differentiable_results_under_transforms():
    x = values(7, 3)

    def f(s):
        arg = cst.scatter_argmax(s, INDEX, dim_size=5)
        return cst.scatter(s, INDEX, "add", dim_size=5).sum() + 0 * arg.sum()
    torch.testing.assert_close(grad(f)(x), torch.ones(7, 3, dtype=torch.float64))
    assert jvp(lambda s: cst.scatter_count(INDEX, 5) + 0 * s.sum(), (x,), (x,))[1].eq(0).all()


def test_indices_and_plans_built_inside_the_transform():
    """A PyG-style step builds its index inside the differentiated function (torch.func wraps it): the data is
    read through the wrapper, and a plan made there lives as long as the graph that needs it."""
    edge_index = torch.tensor([[0, 1, 2, 2, 0], [1, 1, 0, 2, 2]])
    x = values(3, 2)

    def ours(s):
        senders, receivers = edge_index[0], edge_index[1]
        plan = cst.gather_scatter_plan(senders, receivers, src_size=3, dim_size=3)
        via_plan = cst.gather_scatter(s, op="mean", plan=plan)
        return via_plan + ts.segment_csr(s, torch.tensor([0, 1, 3, 3]), reduce="max").sum(0)

    def reference(s):
        means = torch.zeros(3, 2, dtype=s.dtype).index_reduce(0, edge_index[1], s[edge_index[0]], "mean",
                                                               include_self=False)
        return means + torch.stack([s[0], s[1:3].amax(0), torch.zeros_like(s[0])]).sum(0)
    assert_transforms_agree(ours, reference, x)


def test_vmap_over_data_read_outside_a_custom_op_is_refused():
    indptrs = torch.tensor([[0, 1, 3], [0, 2, 3]])
    with pytest.raises(TypeError, match="torch.vmap cannot batch"):
        torch.vmap(cst.segment_ids)(indptrs)


@pytest.mark.parametrize("name", ["scatter_jvp", "softmax_jvp", "quantile_jvp"])
def test_jvp_ops_fake_kernels_agree_with_the_real_ones(name):
    """torch.library.opcheck: the core's JVPs as custom ops have a consistent schema and fake kernel."""
    x, t = values(7, 3), values(7, 3, seed=1)
    ops = torch.ops.cyscatter
    args = {
        "scatter_jvp": lambda: ("max", x, INDEX, ops.scatter(x, INDEX, "max", 5, 0, "raise", None), t, None, None,
                                0, "raise"),
        "softmax_jvp": lambda: ("softmax", x, INDEX, ops.softmax(x, INDEX, "softmax", 4, 0, "raise"), t, 4, 0,
                                "raise"),
        "quantile_jvp": lambda: (x, INDEX, ops.quantile(x, INDEX, 0.5, False, "linear", 5, 0, "raise", None), t,
                                 0.5, False, "linear", 5, 0, "raise"),
    }[name]()
    torch.library.opcheck(getattr(ops, name).default, args, test_utils=("test_schema", "test_faketensor"))


# ---- torch.vmap: one call with the batch as a leading dimension, or one call per entry -----------------------------

@pytest.mark.parametrize("in_dims", [0, 2])
def test_vmap_shared_index_is_one_call_along_a_shifted_axis(in_dims):
    xs = values(4, 2, 7, 3)
    batched = xs.movedim(0, in_dims)
    for fn in (lambda s: cst.scatter(s, INDEX, "max", axis=1, dim_size=5),
               lambda s: cst.gather(s, INDEX, axis=1),
               lambda s: cst.scatter_softmax(s, INDEX, axis=1),
               lambda s: cst.scatter_argmax(s, INDEX, axis=1, dim_size=5)):
        torch.testing.assert_close(torch.vmap(fn, in_dims=in_dims)(batched), torch.stack([fn(x) for x in xs]))


def test_vmap_batched_index_and_unbatched_data():
    indices = torch.stack([INDEX, FULL, INDEX.flip(0)])
    x = values(7, 3)
    got = torch.vmap(lambda i: cst.scatter(x, i, "mean", dim_size=5))(indices)
    torch.testing.assert_close(got, torch.stack([torch_reduce("mean", 5, i)(x) for i in indices]))
    dsts = values(3, 5, 3, seed=2)   # dst batched, src shared: src expanded along the batch
    got = torch.vmap(lambda d: cst.scatter_into(d, x, INDEX, "add"))(dsts)
    torch.testing.assert_close(got, torch.stack([d.index_add(0, INDEX, x) for d in dsts]))
