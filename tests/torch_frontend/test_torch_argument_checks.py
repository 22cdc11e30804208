"""Arguments of both torch layers: devices of one call, unsigned index dtypes, ``out=`` layouts, tensor types."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
import cyscatter as cs
import cyscatter.torch as torch_scatter
from cyscatter.torch import composite
from cyscatter.torch import native as cst

SRC = torch.arange(12, dtype=torch.float64).reshape(4, 3)
INDEX = [0, 2, 0, 3]


# ---- a meta tensor beside real ones ------------------------------------------------------------------------------

META_MIXES = {
    "native.scatter": lambda s, i: cst.scatter(s, i, "add", dim_size=4),
    "native.scatter median": lambda s, i: cst.scatter(s, i, "median", dim_size=4),
    "native.scatter out": lambda s, i: cst.scatter(s.detach(), i, "add", out=torch.zeros(4, 3, dtype=s.dtype)),
    "native.gather": lambda s, i: cst.gather(s, i),
    "native.scatter_argmax": lambda s, i: cst.scatter_argmax(s, i, dim_size=4),
    "native.gather_scatter": lambda s, i: cst.gather_scatter(s, i, torch.tensor([0, 1, 0, 1]), dim_size=2),
    "torch_scatter.scatter": lambda s, i: torch_scatter.scatter(s, i, 0, dim_size=4),
    "torch_scatter.scatter_max": lambda s, i: torch_scatter.scatter_max(s, i, 0, dim_size=4),
}


@pytest.mark.parametrize("call", META_MIXES.values(), ids=META_MIXES.keys())
def test_a_meta_index_beside_a_cpu_src_is_refused(call):
    src = SRC.clone().requires_grad_()
    with pytest.raises(ValueError, match=r"src on cpu.*index on meta|index on meta.*src on cpu"):
        call(src, torch.tensor(INDEX, device="meta"))


def test_a_meta_src_beside_a_cpu_index_is_refused():
    with pytest.raises(ValueError, match="src on meta, index on cpu"):
        cst.gather(SRC.to("meta"), torch.tensor(INDEX))


def test_all_meta_calls_still_give_shapes():
    src, index = SRC.to("meta"), torch.tensor(INDEX, device="meta")
    assert cst.scatter(src, index, "add", dim_size=4).shape == (4, 3)
    assert cst.gather(src, index).device.type == "meta"


# ---- unsigned index dtypes: dim_size inferred -------------------------------------------------------------------

UNSIGNED = [torch.uint16, torch.uint32, torch.uint64]


@pytest.mark.parametrize("dtype", UNSIGNED)
def test_unsigned_indices_infer_dim_size(dtype):
    index = torch.tensor(INDEX, dtype=dtype)
    want = cs.scatter(SRC.numpy(), np.array(INDEX), "add")
    np.testing.assert_array_equal(cst.scatter(SRC, index).numpy(), want)
    np.testing.assert_array_equal(torch_scatter.scatter(SRC, index, dim=0).numpy(), want)
    np.testing.assert_array_equal(torch_scatter.segment_coo(SRC, index.sort().values).numpy(),
                                  cs.scatter(SRC.numpy(), np.sort(INDEX), "add"))
    values, arg = torch_scatter.scatter_max(SRC, index, dim=0)
    np.testing.assert_array_equal(values.numpy(), cs.scatter(SRC.numpy(), np.array(INDEX), "max", fill_value=0))
    np.testing.assert_array_equal(arg.numpy(), cs.scatter_argmax(SRC.numpy(), np.array(INDEX), fill_value=4))
    np.testing.assert_array_equal(
        composite.scatter_softmax(SRC, index, dim=0).numpy(),
        cs.scatter_softmax(SRC.numpy(), np.array(INDEX)))
    np.testing.assert_array_equal(
        cst.gather_scatter(SRC, index, index).numpy(),
        cs.gather_scatter(SRC.numpy(), np.array(INDEX), np.array(INDEX)))
    indptr = torch.tensor([0, 1, 1, 4], dtype=dtype)
    out = torch.empty(4, 3, dtype=SRC.dtype)
    torch_scatter.gather_csr(SRC[:3], indptr, out=out)
    np.testing.assert_array_equal(out.numpy(), SRC[[0, 2, 2, 2]].numpy())


def test_a_uint64_index_past_int64_gives_the_cores_error():
    index = torch.tensor([2**63], dtype=torch.uint64)
    with pytest.raises(ValueError, match="is larger than"):
        cst.scatter(torch.ones(1), index)
    with pytest.raises(ValueError, match="is larger than"):
        cs.scatter(np.ones(1), np.array([2**63], np.uint64))


# ---- torch.compile of the torch_scatter layer's softmax ------------------------------------------------------------

@pytest.mark.parametrize("fn", [torch_scatter.scatter_softmax, torch_scatter.scatter_log_softmax,
                                composite.scatter_softmax, composite.scatter_log_softmax])
def test_compat_softmax_traces_without_dim_size(fn):
    index = torch.tensor(INDEX)
    compiled = torch.compile(lambda x, i: fn(x, i, dim=0), fullgraph=True, backend="aot_eager")
    torch.testing.assert_close(compiled(SRC, index), fn(SRC, index, dim=0), rtol=0, atol=0)


# ---- out= with overlapping elements -------------------------------------------------------------------------------

def _overlapping():
    return torch.zeros(6, dtype=torch.float64).as_strided((4, 3), (1, 1))


OUT_CALLS = {
    "scatter": lambda o: torch_scatter.scatter(SRC, torch.tensor([0, 1, 2, 3]), 0, out=o),
    "scatter_mul": lambda o: torch_scatter.scatter_mul(SRC, torch.tensor([0, 1, 2, 3]), 0, out=o),
    "scatter_mean": lambda o: torch_scatter.scatter_mean(SRC, torch.tensor([0, 1, 2, 3]), 0, out=o),
    "scatter_max": lambda o: torch_scatter.scatter_max(SRC, torch.tensor([0, 1, 2, 3]), 0, out=o),
    "scatter_logsumexp": lambda o: torch_scatter.scatter_logsumexp(SRC, torch.tensor([0, 1, 2, 3]), 0, out=o),
    "scatter_std": lambda o: torch_scatter.scatter_std(SRC, torch.tensor([0, 1, 2, 3]), 0, out=o),
    "segment_csr": lambda o: torch_scatter.segment_csr(SRC, torch.tensor([0, 1, 2, 3, 4]), out=o),
    "segment_coo": lambda o: torch_scatter.segment_coo(SRC, torch.tensor([0, 1, 2, 3]), out=o),
    "gather_csr": lambda o: torch_scatter.gather_csr(SRC, torch.tensor([0, 1, 2, 3, 4]), out=o),
    "gather_coo": lambda o: torch_scatter.gather_coo(SRC, torch.tensor([0, 1, 2, 3]), out=o),
}


@pytest.mark.parametrize("call", OUT_CALLS.values(), ids=OUT_CALLS.keys())
def test_compat_refuses_an_out_with_overlapping_elements(call):
    out = _overlapping()
    with pytest.raises(ValueError, match="out has overlapping elements"):
        call(out)
    assert not out.as_strided((6,), (1,)).any()
    with pytest.raises(ValueError, match="out has overlapping elements"):   # native's rule, the same
        cst.scatter(SRC, torch.tensor([0, 1, 2, 3]), out=_overlapping())


def test_compat_still_takes_a_strided_out():
    out = torch.zeros(4, 6, dtype=torch.float64)[:, ::2]
    torch_scatter.scatter(SRC, torch.tensor([0, 1, 2, 3]), 0, out=out)
    torch.testing.assert_close(out, SRC)


# ---- tensor types cyscatter has no dtype or layout for -----------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.complex32, torch.float8_e4m3fn, torch.float8_e5m2])
def test_unsupported_src_dtype_is_named(dtype):
    src = torch.ones(3).to(dtype)
    with pytest.raises(TypeError, match=f"src has dtype {dtype}"):
        cst.scatter(src, torch.tensor([0, 1, 0]))
    with pytest.raises(TypeError, match=f"src has dtype {dtype}"):
        torch_scatter.scatter(src, torch.tensor([0, 1, 0]), 0)


@pytest.mark.parametrize("which", ["src", "index"])
def test_sparse_tensors_are_named(which):
    src, index = torch.ones(3), torch.tensor([0, 1, 0])
    args = {"src": src.to_sparse(), "index": index} if which == "src" else {"src": src, "index": index.to_sparse()}
    with pytest.raises(TypeError, match=f"{which} must be a dense .*sparse_coo"):
        cst.scatter(args["src"], args["index"], dim_size=2)
