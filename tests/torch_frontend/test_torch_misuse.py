"""Misuse of the torch frontends: forward-mode AD through in-place calls, ``out=`` of the wrong dtype or shape or with gradients, in-place
calls on tensors autograd follows, loose sizes, peers' keywords. Expected behaviour: torch's and torch_scatter's
(an error naming the argument, ``out`` untouched), never a silently wrong value."""
import pytest

torch = pytest.importorskip("torch")
import torch.autograd.forward_ad as fwAD

import cyscatter.torch as ts
from cyscatter.torch import native

IDX = torch.tensor([0, 1, 1])


def _x():
    return torch.tensor([1.0, 2.0, 3.0])


# ---- forward-mode AD through an in-place call: refused, never a zero tangent ----------------------------------------

IN_PLACE_CALLS = {
    "scatter_into_": lambda s: native.scatter_into_(torch.zeros(2), s, IDX),
    "scatter_out": lambda s: native.scatter(s, IDX, out=torch.zeros(2)),
    "gather_into_": lambda s: native.gather_into_(torch.zeros(3), s, IDX),
}


@pytest.mark.parametrize("name", sorted(IN_PLACE_CALLS))
def test_in_place_calls_refuse_a_tangent(name):
    with pytest.raises(RuntimeError, match="forward-mode AD"):
        torch.func.jvp(IN_PLACE_CALLS[name], (_x(),), (torch.ones(3),))
    with fwAD.dual_level(), pytest.raises(RuntimeError, match="forward-mode AD"):
        IN_PLACE_CALLS[name](fwAD.make_dual(_x(), torch.ones(3)))


def test_reverse_mode_still_works_inside_dual_level():
    x = _x().requires_grad_()
    with fwAD.dual_level():
        native.scatter(x, IDX, dim_size=2).sum().backward()
    torch.testing.assert_close(x.grad, torch.ones(3))


# ---- torch_scatter's out=: dtype and shape checked before anything is written ---------------------------------------

@pytest.mark.parametrize("reduce", ["sum", "mul", "mean", "max", "min"])
def test_integer_out_with_float_src_refused_untouched(reduce):
    out = torch.tensor([1, 1])
    with pytest.raises(RuntimeError, match="out.*dtype"):
        ts.scatter(torch.tensor([1.5, 2.5, 3.5]), IDX, 0, out=out, reduce=reduce)
    assert torch.equal(out, torch.tensor([1, 1]))
    # torch's own scatter_reduce_ refuses the same call
    with pytest.raises(RuntimeError):
        torch.tensor([1, 1]).scatter_reduce_(0, IDX, torch.tensor([1.5, 2.5, 3.5]), "sum")


@pytest.mark.parametrize("reduce", ["sum", "mean", "max"])
def test_scatter_out_of_wrong_shape_names_out(reduce):
    out = torch.zeros(2, 4)
    with pytest.raises(ValueError, match=r"out has shape \(2, 4\)"):
        ts.scatter(torch.ones(3, 3), IDX, 0, out=out, reduce=reduce)
    assert torch.equal(out, torch.zeros(2, 4))


def test_segment_and_gather_csr_out_of_wrong_shape_name_out():
    indptr = torch.tensor([0, 1, 3])
    out = torch.zeros(3)
    with pytest.raises(ValueError, match=r"out has shape \(3,\).*\(2\)"):
        ts.segment_csr(_x(), indptr, out=out)
    with pytest.raises(ValueError, match=r"out has shape \(3,\).*\(2\)"):
        ts.segment_csr(_x(), indptr, out=out, reduce="max")
    with pytest.raises(ValueError, match=r"out has shape \(3,\).*\(4\)"):
        ts.gather_csr(torch.ones(2), torch.tensor([0, 1, 4]), out=out)
    assert torch.equal(out, torch.zeros(3))


def test_scatter_mul_out_backward_matches_scatter_reduce():
    x = torch.tensor([2.0, 3.0, 5.0], requires_grad=True)
    o = torch.tensor([7.0, 11.0], requires_grad=True)
    got = ts.scatter_mul(x, IDX, 0, out=o.clone())
    got.backward(torch.tensor([1.0, 2.0]))
    x2 = x.detach().clone().requires_grad_()
    o2 = o.detach().clone().requires_grad_()
    want = o2.scatter_reduce(0, IDX, x2, "prod", include_self=True)
    want.backward(torch.tensor([1.0, 2.0]))
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(x.grad, x2.grad)
    torch.testing.assert_close(o.grad, o2.grad)


# ---- in-place calls that autograd cannot follow ---------------------------------------------------------------------

def test_scatter_into__on_leaf_requiring_grad_refused():
    dst = torch.zeros(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        native.scatter_into_(dst, _x(), IDX)
    with torch.no_grad():                      # as torch: allowed without grad mode
        native.scatter_into_(dst, _x(), IDX)
    torch.testing.assert_close(dst.detach(), torch.tensor([1.0, 5.0]))


def test_out_with_src_requiring_grad_refused():
    x = _x().requires_grad_()
    out = torch.zeros(2)
    with pytest.raises(RuntimeError, match="out=.*automatic differentiation"):
        native.scatter(x, IDX, out=out)
    with pytest.raises(RuntimeError, match="automatic differentiation"):
        native.gather(x, IDX, out=torch.zeros(3))
    assert torch.equal(out, torch.zeros(2))
    with pytest.raises(RuntimeError):          # torch's own out= refuses the same
        torch.add(x, x, out=torch.zeros(3))


# ---- sizes: int only, huge indices need dim_size --------------------------------------------------------------------

def test_compat_sizes_must_be_ints():
    with pytest.raises(TypeError, match="dim_size must be an int, got float"):
        ts.scatter(_x(), IDX, 0, dim_size=2.0)
    with pytest.raises(TypeError, match="dim must be an int, got float"):
        ts.scatter(_x(), IDX, 0.0)
    with pytest.raises(TypeError, match="dim_size must be an int"):
        native.scatter(_x(), IDX, dim_size=2.0)


def test_index_near_int64_max_asks_for_dim_size():
    index = torch.tensor([0, 2**63 - 1, 1])
    with pytest.raises(ValueError, match="pass dim_size"):
        native.scatter(_x(), index)
    with pytest.raises(ValueError, match="pass dim_size"):
        ts.scatter(_x(), index, 0)
    got = native.scatter(_x(), index, dim_size=2, mode="drop")
    torch.testing.assert_close(got, torch.tensor([1.0, 3.0]))


# ---- porting hints --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("keyword, says", [("reduce", "op"), ("dim", "axis"), ("num_segments", "dim_size"),
                                           ("device", "CuPy")])
def test_native_names_the_cyscatter_spelling(keyword, says):
    with pytest.raises(TypeError, match=f"unexpected keyword argument '{keyword}'.*{says}"):
        native.scatter(_x(), IDX, **{keyword: 0})
    with pytest.raises(TypeError, match=f"'{keyword}'"):
        native.segment(_x(), torch.tensor([0, 3]), **{keyword: 0})


def test_gather_scatter_with_op_in_place_of_an_index():
    edge_index = torch.tensor([[0, 1, 2], [1, 1, 0]])
    with pytest.raises(TypeError, match="scatter_index must be a torch.Tensor.*'add'.*gather_index=edge_index"):
        native.gather_scatter(_x(), edge_index, "add")


# ---- dim_size read from an index whose values cannot be read -------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda i: native.scatter(torch.ones(3), i),
    lambda i: ts.scatter(torch.ones(3), i, 0),
], ids=["native", "compat"])
def test_meta_index_without_dim_size_names_index_and_device(call):
    with pytest.raises(ValueError, match=r"index is on device 'meta'.*pass dim_size="):
        call(torch.tensor([0, 0, 1], device="meta"))


def test_meta_tensors_with_dim_size_give_the_shape():
    out = native.scatter(torch.ones(3, device="meta"), torch.tensor([0, 0, 1], device="meta"), dim_size=2)
    assert out.device.type == "meta" and out.shape == (2,)


@pytest.mark.full
def test_fullgraph_compile_without_dim_size_says_pass_dim_size():
    src, index = torch.ones(3), torch.tensor([0, 0, 1])
    torch._dynamo.reset()
    with pytest.raises(Exception, match=r"pass dim_size= \(an int\) under torch\.compile"):
        torch.compile(lambda a, b: native.scatter(a, b, "add"), fullgraph=True)(src, index)
    torch._dynamo.reset()   # with a graph break allowed, the size is read eagerly, as before
    expected = torch.zeros(2).index_add_(0, index, src)
    torch.testing.assert_close(torch.compile(lambda a, b: native.scatter(a, b, "add"))(src, index), expected)
    torch._dynamo.reset()
    torch.testing.assert_close(
        torch.compile(lambda a, b: native.scatter(a, b, "add", dim_size=2), fullgraph=True)(src, index), expected)


# ---- sizes and axes are ints: a bool is refused, as the core and torch refuse it ------------------------------------

BOOL_SIZES = {
    "native dim_size": lambda b: native.scatter(_x(), IDX, "add", dim_size=b),
    "native axis": lambda b: native.scatter(_x(), IDX, "add", axis=b),
    "native scatter_count dim_size": lambda b: native.scatter_count(IDX, dim_size=b),
    "native gather_scatter dim_size": lambda b: native.gather_scatter(_x(), IDX, IDX, "add", dim_size=b),
    "native gather_segment total": lambda b: native.gather_segment(_x(), torch.tensor([0, 1, 3]), total=b),
    "torch_scatter dim_size": lambda b: ts.scatter(_x(), IDX, 0, dim_size=b),
    "torch_scatter dim": lambda b: ts.scatter(_x(), IDX, b, dim_size=2),
}


@pytest.mark.parametrize("value", [True, False, torch.tensor(True)], ids=["True", "False", "tensor(True)"])
@pytest.mark.parametrize("call", sorted(BOOL_SIZES))
def test_bool_sizes_and_axes_are_refused(call, value):
    with pytest.raises(TypeError, match=r"(dim_size|axis|total|dim) must be an int, got (bool|Tensor)"):
        BOOL_SIZES[call](value)
