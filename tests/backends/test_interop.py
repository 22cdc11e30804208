"""Other libraries' arrays in every public function: PyTorch CPU tensors, JAX arrays, pandas Series, xarray
DataArrays and an object that speaks only DLPack give the results of the same NumPy arrays.

Each public call that works (`public_calls.BASELINES`) is made again with one array argument, and then with
every array argument, replaced by the same numbers in another library's type; the result must equal the NumPy
call's exactly. The in-place functions write into a torch tensor or a DLPack producer through its memory, and
refuse what they cannot write without a copy. A library that is not installed skips its cases.
"""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import cyscatter as cs
from public_calls import BASELINES, PUBLIC, call, resolve, signature

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::DeprecationWarning")


class DLPackOnly:
    """A producer NumPy knows only through DLPack (no ``__array__``, no array interface)."""

    def __init__(self, values):
        self.values = np.array(values)

    def __dlpack__(self, **kwargs):
        return self.values.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.values.__dlpack_device__()


def _torch(a):
    import torch
    return torch.from_numpy(np.array(a))


def _jax(a):
    import jax
    with jax.enable_x64(True):   # float64 and int64 kept (JAX's default would make float32 of them)
        return jax.numpy.asarray(np.array(a))


def _pandas(a):
    import pandas as pd
    if np.ndim(a) > 1:   # (scatter_multi's outputs and cotangents are 2-d: a DataFrame is not an array)
        pytest.skip("a pandas Series holds 1-d data only")
    return pd.Series(np.array(a))


def _xarray(a):
    import xarray as xr
    return xr.DataArray(np.array(a))


KINDS = {"torch": _torch, "jax": _jax, "pandas": _pandas, "xarray": _xarray, "dlpack": DLPackOnly}
NEEDS = {"torch": "torch", "jax": "jax", "pandas": "pandas", "xarray": "xarray", "dlpack": None}
IN_PLACE = {"cyscatter.scatter_into", "cyscatter.gather_into"}
# dst of an in-place call: written through DLPack (torch, a DLPack producer), refused otherwise
DST_RULE = {"torch": "write", "dlpack": "write", "jax": ValueError, "pandas": TypeError, "xarray": TypeError}


def _available(kind: str) -> bool:
    return NEEDS[kind] is None or importlib.util.find_spec(NEEDS[kind]) is not None


def _kind_param(kind: str):
    return pytest.param(kind, marks=pytest.mark.skipif(not _available(kind), reason=f"{NEEDS[kind]} not installed"))


def _host_arrays(kwargs: dict) -> list[str]:
    """The array arguments of a baseline call (a Dask array's numbers count: cyscatter.dask takes both)."""
    return [k for k, v in kwargs.items() if isinstance(v, np.ndarray) or hasattr(v, "dask")]


def _numbers(a):
    return np.asarray(a.compute() if hasattr(a, "dask") else a)


CASES = [(f, arg) for f in BASELINES for arg in _host_arrays(BASELINES[f]())]


def _as_numpy(value):
    """A result with Dask's laziness and the plan's fields taken out: what the NumPy call's result is compared
    with (arrays as they came back)."""
    if isinstance(value, tuple):
        return tuple(_as_numpy(v) for v in value)
    if isinstance(value, cs.GatherScatterPlan):
        return tuple(getattr(value, k) for k in ("gather", "scatter", "indptr", "edge_ids", "cols"))
    if type(value).__module__.startswith("cyscatter.dask"):   # a Dask plan: what it computes (its chunks may differ)
        import dask.array as da
        n = value.src_dims[0]
        return cs.dask.gather_scatter(da.from_array(np.arange(1.0, n + 1)), op="add", plan=value).compute()
    if hasattr(value, "dask"):
        return value.compute(scheduler="sync")
    return value


def _assert_same(got, expected) -> None:
    got, expected = _as_numpy(got), _as_numpy(expected)
    if isinstance(expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(expected)
        for g, e in zip(got, expected):
            _assert_same(g, e)
        return
    if isinstance(expected, np.ndarray):
        assert type(got) is np.ndarray, f"a {type(got).__module__}.{type(got).__name__} came back"
        assert got.dtype == expected.dtype and got.shape == expected.shape
        np.testing.assert_array_equal(got, expected)
    else:
        assert got == expected


def _check(function: str, kwargs: dict, converted: dict) -> None:
    """`function` with `converted` in place of some array arguments gives the NumPy call's result."""
    expected_kwargs = BASELINES[function]()   # fresh arrays: an in-place call writes into its dst
    expected = call(function, expected_kwargs)
    kwargs.update(converted)
    got = call(function, kwargs)
    if function in IN_PLACE:
        assert got is kwargs["dst"], "an in-place call returns the dst it was given"
        np.testing.assert_array_equal(np.from_dlpack(got) if "dst" in converted else got, expected_kwargs["dst"])
        return
    _assert_same(got, expected)


@pytest.mark.parametrize("kind", [_kind_param(k) for k in KINDS])
@pytest.mark.parametrize("function,arg", CASES, ids=[f"{f}-{a}" for f, a in CASES])
def test_one_argument(function, arg, kind):
    kwargs = BASELINES[function]()
    value = KINDS[kind](_numbers(kwargs[arg]))
    if function in IN_PLACE and arg == "dst" and DST_RULE[kind] != "write":
        with pytest.raises(DST_RULE[kind], match="dst"):
            call(function, {**kwargs, arg: value})
        return
    _check(function, kwargs, {arg: value})


@pytest.mark.parametrize("kind", [_kind_param(k) for k in KINDS])
@pytest.mark.parametrize("function", sorted({f for f, _ in CASES}))
def test_every_argument(function, kind):
    kwargs = BASELINES[function]()
    arrays = [a for a in _host_arrays(kwargs) if not (function in IN_PLACE and a == "dst"
                                                       and DST_RULE[kind] != "write")]
    _check(function, kwargs, {a: KINDS[kind](_numbers(kwargs[a])) for a in arrays})


def test_every_public_function_takes_a_foreign_array():
    """Every public function with an array parameter is in the cases above."""
    array_params = {"src", "index", "dst", "out", "grad_out", "src_dot", "dst_dot", "indptr", "gather_index",
                    "scatter_index", "weight", "weight_dot"}
    with_arrays = {f for f in PUBLIC if array_params & set(signature(resolve(f)).parameters)}
    assert with_arrays <= {f for f, _ in CASES}


# ---- what cannot be taken, and what is taken without a copy ---------------------------------------------------

class OnDevice(DLPackOnly):
    """A DLPack producer on a device neither NumPy nor CuPy reads (Metal)."""

    def __dlpack_device__(self):
        return (8, 0)


def test_a_tensor_that_requires_grad_is_refused_by_name():
    torch = pytest.importorskip("torch")
    src = torch.ones(4, dtype=torch.float64, requires_grad=True)
    with pytest.raises(TypeError, match=r"src is a torch.Tensor that requires grad.*src.detach\(\)"):
        cs.scatter(src, np.array([0, 1, 0, 1]))
    with pytest.raises(TypeError, match=r"index\[1\] is a torch.Tensor"):
        cs.gather(np.ones((2, 2)), (np.array([0, 1]), torch.tensor([0., 1.], requires_grad=True)))


@pytest.mark.parametrize("call, arg", [
    (lambda t: cs.scatter_scan_vjp("add", t, np.ones(3), np.array([0, 0, 1])), "grad_out"),
    (lambda t: cs.scatter_scan_jvp("mul", np.ones(3), np.array([0, 0, 1]), t), "src_dot"),
])
def test_scan_reverse_functions_refuse_tensors_by_name(call, arg):
    """The scan's cotangent and tangent are checked as every other argument: a tensor that requires grad or
    has its conj bit set gets the documented TypeError naming it (was torch's RuntimeError)."""
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError, match=rf"{arg} is a torch.Tensor that requires grad"):
        call(torch.ones(3, dtype=torch.float64, requires_grad=True))
    with pytest.raises(TypeError, match=rf"{arg} is a torch.Tensor with its conj bit set"):
        call(torch.ones(3, dtype=torch.complex128).conj())
    np.testing.assert_array_equal(call(torch.ones(3, dtype=torch.float64)), call(np.ones(3)))


def test_another_device_is_refused_by_name():
    with pytest.raises(TypeError, match=r"grad_out is .* on DLPack device type Metal.*move grad_out to the CPU"):
        cs.gather_vjp_src(OnDevice(np.ones(4)), np.array([0, 1, 0, 1]), (3,))


def test_cpu_tensors_are_not_taken_for_cuda_arrays():
    """torch.Tensor and JAX arrays define __cuda_array_interface__ on the class: a CPU one is a host array."""
    from cyscatter._arrays.protocols import where_is
    if _available("torch"):
        assert where_is(_torch([1.0])) == "host"
    if _available("jax"):
        assert where_is(_jax([1.0])) == "host"
    assert where_is(DLPackOnly([1.0])) == "host" and where_is(OnDevice([1.0])) == "other"


@pytest.mark.parametrize("kind", [_kind_param(k) for k in ("torch", "pandas", "xarray", "dlpack")])
def test_taken_without_a_copy(kind):
    """The array the kernels read is the caller's memory (NumPy-backed producers, torch, DLPack)."""
    from cyscatter._arrays.protocols import host_asarray
    values = np.arange(6.0)
    foreign = KINDS[kind](values)
    memory = {"torch": lambda: foreign.numpy(), "pandas": lambda: foreign.to_numpy(),
              "xarray": lambda: foreign.values, "dlpack": lambda: foreign.values}[kind]()
    assert np.shares_memory(host_asarray(foreign), memory)


def test_a_torch_dst_is_written_in_place():
    torch = pytest.importorskip("torch")
    dst = torch.zeros(3, dtype=torch.float64)
    got = cs.scatter_into(dst, torch.tensor([1.0, 2.0, 4.0], dtype=torch.float64), torch.tensor([2, 0, 2]))
    assert got is dst
    np.testing.assert_array_equal(dst.numpy(), [2.0, 0.0, 5.0])
    gathered = torch.zeros(2, dtype=torch.int64)
    assert cs.gather_into(gathered, np.array([5, 6, 7]), np.array([2, 0])) is gathered
    np.testing.assert_array_equal(gathered.numpy(), [7, 5])


# ---- torch tensors NumPy cannot read, or reads wrong: refused by name, nothing written -------------------------

def _unreadable_tensors():
    torch = pytest.importorskip("torch")
    return {
        "bfloat16": torch.ones(4, dtype=torch.bfloat16),
        "meta": torch.zeros(4, device="meta"),
        "sparse": torch.ones(4).to_sparse(),
        "neg bit": torch.zeros(4, dtype=torch.complex128).conj().imag,   # memory holds -x of what it shows
        "conj bit": torch.ones(4, dtype=torch.complex128).conj(),
        "requires grad": torch.ones(4, requires_grad=True),
    }


CALLS_WITH = {   # the call, and the argument its message must name
    "src": (lambda t: cs.scatter(t, np.array([0, 1, 0, 1])), "src"),
    "gather src": (lambda t: cs.gather(t, np.array([0, 3])), "src"),
    "fill_value": (lambda t: cs.scatter(np.ones(4), np.array([0, 1, 0, 1]), dim_size=3, fill_value=t), "fill_value"),
    "grad": (lambda t: pytest.importorskip("grad").scatter(t, np.array([0, 1, 0, 1])), "src"),
    "dask": (lambda t: pytest.importorskip("cyscatter.dask").scatter(t, np.array([0, 1, 0, 1]), dim_size=2), "src"),
}


@pytest.mark.parametrize("kind", ["bfloat16", "meta", "sparse", "neg bit", "conj bit", "requires grad"])
@pytest.mark.parametrize("where", CALLS_WITH)
def test_tensors_numpy_cannot_read_are_refused_by_name(kind, where):
    call, name = CALLS_WITH[where]
    with pytest.raises(TypeError, match=rf"\b{name}\b"):
        call(_unreadable_tensors()[kind])


@pytest.mark.parametrize("kind", ["bfloat16", "neg bit", "conj bit"])
@pytest.mark.parametrize("function", ["scatter_into", "gather_into"])
def test_a_dst_numpy_cannot_write_right_is_refused_untouched(kind, function):
    dst = _unreadable_tensors()[kind]
    before = dst.clone()
    call = getattr(cs, function)
    with pytest.raises(TypeError, match=r"\bdst\b"):
        call(dst, np.ones(4), np.array([0, 1, 2, 3]))
    assert bool((dst == before).all())


MASKED_CALLS = {
    "scatter src": lambda m: cs.scatter(m, np.array([0, 1, 0]), dim_size=2),
    "scatter index": lambda m: cs.scatter(np.ones(3), m.astype(np.int64), dim_size=2),
    "gather src": lambda m: cs.gather(m, np.array([2, 0])),
    "scatter_into dst": lambda m: cs.scatter_into(m, np.ones(3), np.array([0, 1, 0])),
    "gather_scatter src": lambda m: cs.gather_scatter(m, np.array([0, 1]), np.array([0, 0])),
    "segment src": lambda m: cs.segment(m, np.array([0, 1, 3])),
    "scatter_softmax src": lambda m: cs.scatter_softmax(m, np.array([0, 1, 0])),
    "gather_scatter_plan gather_index": lambda m: cs.gather_scatter(
        np.ones((3, 2)), op="add", plan=cs.gather_scatter_plan(m.astype(np.int64), np.array([0, 0, 1]), src_size=3)),
    "gather_scatter_plan scatter_index": lambda m: cs.gather_scatter(
        np.ones((3, 2)), op="add", plan=cs.gather_scatter_plan(np.array([0, 1, 2]), (m.astype(np.int64),))),
}


@pytest.mark.parametrize("call", sorted(MASKED_CALLS))
def test_masked_array_with_masked_entries_is_refused_naming_it(call):
    """NumPy would hand over the data and drop the mask: a silent wrong answer, so it is a TypeError."""
    masked = np.ma.array([1.0, 0.0, 1.0], mask=[False, True, False])
    name = call.split()[1]
    with pytest.raises(TypeError, match=f"{name} is a numpy.ma.MaskedArray with masked entries"):
        MASKED_CALLS[call](masked)
    got = MASKED_CALLS[call](np.ma.array([1.0, 0.0, 1.0]))   # no masked entry: read as its data
    np.testing.assert_array_equal(np.asarray(got), MASKED_CALLS[call](np.array([1.0, 0.0, 1.0])))
