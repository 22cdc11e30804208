"""var/std (and their NaN-skipping twins), logsumexp and log_softmax on a Fortran-ordered, reversed or
features-first src of their own dtype (var/std, logsumexp and log_softmax on a C-ordered one too) read it a chunk
of rows at a time (`Reverse.src_chunks`) instead of copying it to C order: bit for bit the results of the
whole-array path on a C-ordered copy (every group element sees its terms
in index order either way), close to the plain-loop references (math.fsum / NumPy per group), with many chunk
boundaries, drop mode, empty groups; and no src-sized array."""
from __future__ import annotations

import numpy as np
import pytest
from compare import assert_same
from memory import traced_peak
from reference_extra import ref_logsumexp, ref_softmax, ref_var

import cyscatter as cs
from cyscatter._backends import chunks, host

FUNCS = {"var": cs.scatter_var, "std": cs.scatter_std, "nanvar": cs.scatter_nanvar, "nanstd": cs.scatter_nanstd,
         "logsumexp": cs.scatter_logsumexp, "log_softmax": cs.scatter_log_softmax}
LAYOUTS = ["fortran", "reversed", "features-first", "batched-fortran"]


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(host, "STAGE_MIN_ELEMENTS", 0)
    monkeypatch.setattr(chunks, "ROW_CHUNK_BYTES", 200)


def _src(layout, dtype, rng):
    x = (3 * rng.standard_normal((61, 4))).astype(dtype)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal((61, 4)).astype(x.real.dtype)
    x.reshape(-1)[::23] = np.nan
    if layout == "fortran":
        return np.asfortranarray(x), 0
    if layout == "reversed":
        return x[::-1, ::-1], 0
    if layout == "features-first":
        return np.ascontiguousarray(x.T), 1
    return np.asfortranarray(np.stack([x, 2 * x])), 1   # batch dim first, the index along axis 1


def _kwargs(name):
    return {"ddof": 1} if name in ("var", "std", "nanvar", "nanstd") else {}


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex128"])
@pytest.mark.parametrize("name", list(FUNCS))
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.valid(lambda dtype, name: dtype != "complex128" or name in ("var", "std", "nanvar", "nanstd"))
def test_chunked_layouts_give_the_bits_of_a_c_ordered_copy(small_chunks, dtype, name, layout):
    rng = np.random.default_rng([len(layout), len(name), len(dtype)])
    src, axis = _src(layout, dtype, rng)
    n = src.shape[axis]
    index = rng.integers(0, 9, n)
    index[index == 7] = -1   # dropped entries (mode="drop"); group 7 and 8 are empty
    for mode, idx in (("drop", index), ("raise", np.abs(index))):
        with np.errstate(all="ignore"):
            got = FUNCS[name](src, idx, dim_size=9, axis=axis, mode=mode, **_kwargs(name))
            with pytest.MonkeyPatch.context() as patch:   # the whole-array path, not the chunks
                patch.setattr(host, "STAGE_MIN_ELEMENTS", 1 << 40)
                want = FUNCS[name](np.ascontiguousarray(src), idx, dim_size=9, axis=axis, mode=mode,
                                   **_kwargs(name))
        assert_same(got, want)


@pytest.mark.parametrize("name", ["var", "std", "logsumexp", "log_softmax"])
def test_chunked_layouts_against_the_loops(small_chunks, name):
    rng = np.random.default_rng(len(name))
    x = rng.standard_normal((300, 3))
    src = np.asfortranarray(x)
    index = rng.integers(0, 11, 300)
    with np.errstate(all="ignore"):
        got = FUNCS[name](src, index, dim_size=12, **_kwargs(name))
    if name in ("var", "std"):
        want = ref_var(x, index, ddof=1, std=name == "std", dim_size=12)
    elif name == "logsumexp":
        want = ref_logsumexp(x, index, dim_size=12)
    else:
        want = ref_softmax(x, index, log=True, dim_size=12)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("order", ["F", "C"])
def test_no_src_sized_copy(order):
    """Fortran-ordered, and for var/std and logsumexp C-ordered too (their whole path held src-sized
    temporaries)."""
    rng = np.random.default_rng(3)
    x = np.asarray(rng.standard_normal((200_000, 16)).astype(np.float32), order=order)
    index = rng.integers(0, 500, 200_000)
    for name in ("var", "std", "logsumexp"):
        FUNCS[name](x, index, dim_size=500)
        _, peak = traced_peak(lambda f=FUNCS[name]: f(x, index, dim_size=500))
        assert peak < x.nbytes / 2, (name, peak)
