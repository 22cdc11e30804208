"""Zero copies between tensors and cyscatter, torch.compile(fullgraph=True), the custom-op checks, CUDA."""
import pytest

torch = pytest.importorskip("torch")
import cyscatter as cs
from cyscatter.torch import native as cst

INDEX = torch.tensor([0, 3, 1, 0, 3, 3, 0])


def test_in_place_forms_write_the_given_memory():
    src = torch.randn(7, 3, dtype=torch.float64)
    out = torch.empty(5, 3, dtype=torch.float64)
    pointer = out.data_ptr()
    assert cst.scatter(src, INDEX, "add", out=out) is out and out.data_ptr() == pointer
    torch.testing.assert_close(out, torch.zeros(5, 3, dtype=torch.float64).index_add_(0, INDEX, src))
    dst = torch.zeros(5, 3, dtype=torch.float64)
    pointer = dst.data_ptr()
    assert cst.scatter_into_(dst, src, INDEX) is dst and dst.data_ptr() == pointer
    torch.testing.assert_close(dst, out)
    rows = torch.empty(7, 3, dtype=torch.float64)
    pointer = rows.data_ptr()
    assert cst.gather_into_(rows, out, INDEX) is rows and rows.data_ptr() == pointer
    torch.testing.assert_close(rows, out[INDEX])


def test_inputs_are_read_in_place_and_results_own_cyscatters_arrays(monkeypatch):
    seen = {}
    real = cs.scatter

    def spy(src, index, *args, **kwargs):
        seen["src"], seen["index"] = src.ctypes.data, index.ctypes.data
        result = real(src, index, *args, **kwargs)
        seen["out"] = result.ctypes.data
        return result

    monkeypatch.setattr(cs, "scatter", spy)
    src = torch.randn(7, 3)
    out = cst.scatter(src, INDEX, "max", dim_size=5)
    assert seen["src"] == src.data_ptr() and seen["index"] == INDEX.data_ptr()
    assert out.untyped_storage().data_ptr() == seen["out"]


def test_a_strided_input_is_not_copied(monkeypatch):
    seen = {}
    real = cs.gather

    def spy(src, index, **kwargs):
        seen["src"] = src.__array_interface__["data"][0]
        return real(src, index, **kwargs)

    monkeypatch.setattr(cs, "gather", spy)
    base = torch.randn(3, 8)
    view = base.T                                   # (8, 3), not contiguous
    torch.testing.assert_close(cst.gather(view, INDEX), view[INDEX])
    assert seen["src"] == view.data_ptr()


def test_torch_compile_fullgraph_traces_forward_and_backward():
    def layer(x, w, gi, si):
        h = cst.gather_scatter(x @ w, gi, si, "mean", dim_size=6)
        return cst.scatter(torch.relu(h), si[:6] % 3, "max", dim_size=3, fill_value=0).sum()

    g = torch.Generator().manual_seed(0)
    x, w = torch.randn(6, 4, generator=g), torch.randn(4, 2, generator=g, requires_grad=True)
    gi, si = torch.randint(0, 6, (20,), generator=g), torch.randint(0, 6, (20,), generator=g)
    compiled = torch.compile(layer, fullgraph=True, backend="aot_eager")
    eager_value = layer(x, w, gi, si)
    eager_grad = torch.autograd.grad(eager_value, w)[0]
    value = compiled(x, w, gi, si)
    torch.testing.assert_close(value, eager_value)
    torch.testing.assert_close(torch.autograd.grad(value, w)[0], eager_grad)


@pytest.mark.full
def test_torch_compile_inductor():
    compiled = torch.compile(lambda s: cst.scatter_softmax(s * 2, INDEX, dim_size=4).sum(0), fullgraph=True)
    src = torch.randn(7, 3)
    torch.testing.assert_close(compiled(src), cst.scatter_softmax(src * 2, INDEX, dim_size=4).sum(0))


@pytest.mark.parametrize("name", ["scatter", "gather", "gather_scatter", "segment", "softmax", "moment"])
def test_custom_op_registration_is_consistent(name):
    """torch.library.opcheck: schema, fake kernel, autograd registration and aliasing of each op."""
    x = torch.randn(7, 3, dtype=torch.float64, requires_grad=True)
    args = {
        "scatter": (x, INDEX, "max", 5, 0, "raise", None),
        "gather": (x, INDEX, 0, "raise", None),
        "gather_scatter": (x, INDEX, INDEX, None, "add", 4, 0, None, 0),
        "segment": (x, torch.tensor([0, 2, 7]), "add", 0, None),
        "softmax": (x, INDEX, "softmax", 4, 0, "raise"),
        "moment": (x, INDEX, "var", 0.0, 4, 0, "raise"),
    }[name]
    torch.library.opcheck(getattr(torch.ops.cyscatter, name).default, args,
                          test_utils=("test_schema", "test_faketensor", "test_autograd_registration"))


def test_cuda_tensors_run_on_cupy():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    pytest.importorskip("cupy")
    src = torch.randn(7, 3, device="cuda", dtype=torch.float64, requires_grad=True)
    index = INDEX.cuda()
    out = cst.scatter(src, index, "add", dim_size=5)
    assert out.device == src.device
    torch.testing.assert_close(out, torch.zeros(5, 3, device="cuda", dtype=torch.float64).index_add_(0, index, src))
    (grad,) = torch.autograd.grad(out.square().sum(), src)
    torch.testing.assert_close(grad, 2 * out[index])
    # torch.func on CUDA: the core's JVP of max (CuPy) against the Jacobian of torch's scatter_reduce
    x, t = src.detach(), torch.randn_like(src)
    _, tangent = torch.func.jvp(lambda s: cst.scatter(s, index, "max", dim_size=5, fill_value=0), (x,), (t,))
    rows = index.view(-1, 1).expand(7, 3)
    jac = torch.func.jacrev(lambda s: torch.zeros(5, 3, device="cuda", dtype=s.dtype).scatter_reduce(
        0, rows, s, "amax", include_self=False))(x)
    torch.testing.assert_close(tangent, (jac.reshape(15, 21) @ t.reshape(-1)).reshape(5, 3))


class _CudaTensor:
    """What the bridge reads of a CUDA tensor (its device, detach, DLPack), with host memory behind it."""

    def __init__(self, host):
        self.host, self.device = host, torch.device("cuda", 0)

    def detach(self):
        return self


def test_cuda_tensor_without_cupy_is_a_clear_error(monkeypatch):
    from cyscatter.torch import _bridge
    monkeypatch.setitem(__import__("sys").modules, "cupy", None)   # import cupy raises ImportError
    with pytest.raises(TypeError, match=r"CuPy backend: pip install 'cyscatter\[gpu\]'"):
        _bridge.array(_CudaTensor(torch.zeros(3)))
    with pytest.raises(TypeError, match="CPU or CUDA tensors, got a tensor on meta"):
        _bridge.array(torch.empty(3, device="meta"))


def test_cuda_tensors_cross_to_the_gpu_backend_through_dlpack(monkeypatch):
    """On the host emulation of CuPy: the CUDA branch hands each tensor to ``cupy.from_dlpack`` (no copy), the
    GPU backend computes, and the result goes back through ``torch.from_dlpack``."""
    import numpy as np
    from emulated_cupy import installed

    from cyscatter.torch import _bridge
    src, index = torch.randn(7, 3, dtype=torch.float64), INDEX
    with installed() as cp:
        monkeypatch.setattr(cp, "from_dlpack", lambda t: np.from_dlpack(t.host).view(cp.ndarray), raising=False)
        a, i = _bridge.array(_CudaTensor(src)), _bridge.array(_CudaTensor(index))
        assert type(a).__module__ == "cupy" and np.shares_memory(a, src.numpy())
        out = cs.scatter(a, i, "add", dim_size=5)
        assert type(out).__module__ == "cupy"
        # a real CuPy array is no NumPy array (the emulation's is): the bridge gives it to torch.from_dlpack
        device_result = _CudaTensor(out)
        handed = []
        monkeypatch.setattr(torch, "from_dlpack", lambda x: handed.append(x) or torch.from_numpy(x.host.get()))
        result = _bridge.tensor(device_result)
    assert handed == [device_result]
    torch.testing.assert_close(result, torch.zeros(5, 3, dtype=torch.float64).index_add_(0, index, src))


def test_import_cyscatter_does_not_import_torch():
    import subprocess
    import sys
    code = "import sys, cyscatter; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_torch_compile_softmax_without_dim_size():
    src = torch.randn(6, 3, dtype=torch.float64, requires_grad=True)
    index = torch.tensor([0, 2, 2, 1, 0, 2])

    def f(s):
        return (cst.scatter_softmax(s, index) * cst.scatter_log_softmax(s, index)).sum()
    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    value = compiled(src)
    (grad,) = torch.autograd.grad(value, src)
    # reference: torch's softmax over each group's rows
    want = torch.zeros_like(src)
    for j in range(3):
        rows = index == j
        want[rows] = torch.softmax(src.detach()[rows], 0)
    torch.testing.assert_close(cst.scatter_softmax(src.detach(), index), want)
    with torch.enable_grad():
        s2 = src.detach().clone().requires_grad_()
        ref = sum((torch.softmax(s2[index == j], 0) * torch.log_softmax(s2[index == j], 0)).sum() for j in range(3))
        (ref_grad,) = torch.autograd.grad(ref, s2)
    torch.testing.assert_close(value, ref.detach())
    torch.testing.assert_close(grad, ref_grad)
