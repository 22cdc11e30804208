"""Regressions from the independent hostile test of issue 18's second round (NaN-skipping ops):

- a NaN entry of nansum/nanprod is absent: the value held stays as it is bit for bit (a -0.0 dst stays -0.0; a
  complex dst with a NaN part is not multiplied by 1+0j), as ``np.add.at``/``np.multiply.at`` over the non-NaN
  entries; compared with those on every backend and kernel family (scatter, segment, gather_scatter, scans);
- the forward derivatives (scatter_jvp, segment_jvp, grad's forward mode) drop the tangent of an entry that
  takes no part, a NaN entry of a NaN-skipping op or an entry that lost a max/min, even an inf or NaN tangent,
  as JAX does (compared with jax.jvp where JAX has the op).
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import cyscatter as cs
from compare import assert_same

NAN = np.nan


def ufunc_at_without_nan(ufunc, dst, src, index):
    """`ufunc.at` over the entries whose src is not NaN (complex: neither part), one feature column at a time."""
    out = dst.copy()
    for f in range(src.shape[1]):
        keep = ~np.isnan(src[:, f])
        column = out[:, f].copy()
        ufunc.at(column, index[keep], src[keep, f])
        out[:, f] = column
    return out


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("op,ufunc", [("nansum", np.add), ("nanprod", np.multiply)])
def test_nan_entries_leave_dst_as_it_is(backend, op, ufunc, dtype):
    rng = np.random.default_rng([len(op), len(dtype)])
    n, rows, width = 300, 7, 19
    src = rng.choice(np.array([-0.0, 0.0, 1.5, -2.0, NAN]), (n, width)).astype(dtype)
    dst = rng.choice(np.array([-0.0, 0.0, 3.0, NAN]), (rows, width)).astype(dtype)
    if np.dtype(dtype).kind == "c":
        src = src + 1j * rng.choice(np.array([-0.0, 0.0, 0.5, NAN]), (n, width))
        dst = dst + 1j * rng.choice(np.array([-0.0, 0.0, -1.0, NAN]), (rows, width))
    index = rng.integers(0, rows, n)
    expected = ufunc_at_without_nan(ufunc, dst, src, index)
    work = backend.asarray(dst.copy())
    cs.scatter_into(work, backend.asarray(src), backend.asarray(index), op)
    assert_same(backend.to_numpy(work), expected)


@pytest.mark.parametrize("op,ufunc", [("nansum", np.add), ("nanprod", np.multiply)])
@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_segment_gather_scatter_and_scan_skip_nan_exactly(op, ufunc, dtype):
    rng = np.random.default_rng([len(op), len(dtype), 2])
    src = rng.choice(np.array([-0.0, 2.0, NAN]), (40, 5)).astype(dtype)
    if np.dtype(dtype).kind == "c":
        src = src + 1j * rng.choice(np.array([-0.0, 0.25, NAN]), (40, 5))
    index = np.sort(rng.integers(0, 6, 40))
    start = np.full((6, 5), 1 if op == "nanprod" else 0, dtype)
    expected = ufunc_at_without_nan(ufunc, start, src, index)
    indptr = np.searchsorted(index, np.arange(7))
    assert_same(cs.segment(src, indptr, op), expected)
    assert_same(cs.gather_scatter(src, np.arange(40), index, op, dim_size=6), expected)
    scan_op = "add" if op == "nansum" else "mul"
    clean = np.where(np.isnan(src), 0 if op == "nansum" else 1, src)
    total = cs.scatter_scan(clean, index, scan_op)   # the scans have no NaN-skipping op: the twin on clean data
    assert_same(total[np.searchsorted(index, np.arange(6), side="right")[np.bincount(index, minlength=6) > 0] - 1],
                cs.scatter(clean, index, scan_op)[np.bincount(index, minlength=6) > 0])


OPS_JAX = {"nansum": "add", "fmax": "max", "fmin": "min"}


@pytest.mark.parametrize("op", ["nansum", "nanmean", "nanprod", "fmax", "fmin"])
@pytest.mark.parametrize("bad", [NAN, np.inf])
def test_jvp_drops_the_tangent_of_a_nan_entry(op, bad):
    x = np.array([1.0, NAN, 3.0, 2.0])
    index = np.array([0, 0, 0, 1])
    tangent = np.array([1.0, bad, 0.5, 2.0])
    out = cs.scatter(x, index, op)
    clean_x, clean_t, clean_i = x[[0, 2, 3]], tangent[[0, 2, 3]], index[[0, 2, 3]]   # the entry left out
    twin = {"nansum": "add", "nanmean": "mean", "nanprod": "mul", "fmax": "max", "fmin": "min"}[op]
    expected = cs.scatter_jvp(twin, clean_x, clean_i, cs.scatter(clean_x, clean_i, twin), clean_t)
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # no RuntimeWarning either
        assert_same(cs.scatter_jvp(op, x, index, out, tangent), expected)
        indptr = np.array([0, 3, 4])
        assert_same(cs.segment_jvp(op, x, indptr, cs.segment(x, indptr, op), tangent), expected)
    assert np.isfinite(expected).all()


@pytest.mark.parametrize("op", ["max", "min", "fmax", "fmin"])
def test_jvp_of_a_losing_entry_with_an_inf_tangent(op):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    x = np.array([1.0, 2.0, -1.0])
    index = np.zeros(3, int)
    tangent = np.array([np.inf, 1.0, NAN])
    out = cs.scatter(x, index, op)
    reduce = jnp.max if op.endswith("max") else jnp.min
    _, expected = jax.jvp(lambda v: reduce(v)[None], (jnp.asarray(x),), (jnp.asarray(tangent),))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert_same(cs.scatter_jvp(op, x, index, out, tangent), np.asarray(expected))


@pytest.mark.parametrize("op", ["nansum", "nanmean", "nanprod", "fmax", "fmin", "max"])
@pytest.mark.parametrize("form", ["scatter", "segment", "gather_scatter"])
def test_grad_forward_mode_drops_what_takes_no_part(op, form):
    autograd = pytest.importorskip("autograd")
    import autograd.numpy as anp
    import grad as csgrad
    y = np.array([1.0, -1.0, 4.0, 9.0])   # sqrt(-1) is NaN, its tangent NaN too
    index = np.array([0, 0, 0, 1])
    if form == "scatter":
        f = lambda z: csgrad.scatter(anp.sqrt(z), index, op)                                      # noqa: E731
    elif form == "segment":
        f = lambda z: csgrad.segment(anp.sqrt(z), np.array([0, 3, 4]), op)                        # noqa: E731
    else:
        f = lambda z: csgrad.gather_scatter(anp.sqrt(z)[:, None], np.arange(4), index, op)[:, 0]  # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # sqrt(-1)
        _, actual = autograd.make_jvp(f)(y)(np.ones(4))
    keep = [0, 2, 3]
    twin = {"nansum": "add", "nanmean": "mean", "nanprod": "mul", "fmax": "max", "fmin": "min", "max": "max"}[op]
    clean = np.sqrt(y[keep])
    expected = cs.scatter_jvp(twin, clean, index[keep], cs.scatter(clean, index[keep], twin), 0.5 / clean)
    if op == "max":   # max does not skip the NaN entry: it wins, and its NaN tangent with it
        expected = np.array([NAN, expected[1]])
    assert_same(np.asarray(actual, dtype=float), expected)
