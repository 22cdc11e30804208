"""cyscatter.jax's forward results against JAX's own ``.at[]`` updates and ``jax.ops.segment_*`` on the same data
(duplicates and empty groups), eagerly, under jit and under vmap; and its derivatives (grad, jvp) against JAX's
own rules where JAX has them and the split reverse functions elsewhere."""
from __future__ import annotations

import contextlib
import subprocess
import sys

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp
from testing import OPS

import cyscatter as cs
import cyscatter.jax as cj

N_OUT = 6
# every value once, 0 three times, 2 twice, group 5 empty
INDEX = np.array([0, 2, 0, 1, 4, 2, 0, 3])
DTYPES = ("float32", "float64")


def x64(dtype):
    return jax.enable_x64(True) if np.dtype(dtype) == np.float64 else contextlib.nullcontext()


def values(dtype, shape=(8, 3), seed=0):
    """Distinct values away from 0 (no ties unless planted, no division by ~0)."""
    rng = np.random.default_rng(seed)
    return (0.5 + rng.permutation(int(np.prod(shape))).reshape(shape) / np.prod(shape)).astype(dtype)


def native(op, x, ids):
    """JAX's own result for the reductions JAX has: ``.at[]`` updates and segment sums (None otherwise)."""
    base = {"add": 0.0, "mul": 1.0, "max": -jnp.inf, "min": jnp.inf}
    shape = (N_OUT, *x.shape[1:])
    if op in base:
        at = jnp.full(shape, base[op], x.dtype).at[ids]
        return {"add": at.add, "mul": at.multiply, "max": at.max, "min": at.min}[op](x)
    count = jax.ops.segment_sum(jnp.ones_like(x), ids, N_OUT)
    total = jax.ops.segment_sum(x, ids, N_OUT)
    if op == "mean":
        return total / jnp.maximum(count, 1)
    if op == "sqrt_n":
        return total / jnp.sqrt(jnp.maximum(count, 1))
    if op == "sub":
        return -total
    if op == "div":
        return 1 / jax.ops.segment_prod(x, ids, N_OUT)
    return None


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", OPS)
def test_scatter_matches_jax_and_the_core(op, dtype):
    with x64(dtype):
        x, ids = jnp.asarray(values(dtype)), jnp.asarray(INDEX)
        ours = cj.scatter(x, ids, op, dim_size=N_OUT)
        assert ours.dtype == x.dtype
        jitted = jax.jit(lambda s, i: cj.scatter(s, i, op, dim_size=N_OUT))(x, ids)
        np.testing.assert_array_equal(jitted, ours)
        theirs = native(op, x, ids)
        if theirs is not None:
            np.testing.assert_allclose(ours, theirs, rtol=1e-6)
        # the ops JAX lacks (assignments, NaN-skipping twins): the core on the same data
        np.testing.assert_array_equal(ours, cs.scatter(np.asarray(x), INDEX, op, dim_size=N_OUT))


@pytest.mark.full   # JAX compiles each case: seconds a case
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["add", "max", "min", "mean", "mul"])
def test_scatter_vmap(op, dtype):
    with x64(dtype):
        xs = jnp.asarray(values(dtype, (4, 8, 3)))
        ids = jnp.asarray(np.stack([np.roll(INDEX, k) for k in range(4)]))
        expect = np.stack([cj.scatter(xs[k], ids[k], op, dim_size=N_OUT) for k in range(4)])
        # batched values, one index: the batch becomes a feature axis; batched indices: one call per element
        by_values = jax.jit(jax.vmap(lambda s: cj.scatter(s, ids[0], op, dim_size=N_OUT)))(xs)
        np.testing.assert_array_equal(by_values[0], expect[0])
        np.testing.assert_array_equal(by_values[1], cj.scatter(xs[1], ids[0], op, dim_size=N_OUT))
        both = jax.vmap(lambda s, i: cj.scatter(s, i, op, dim_size=N_OUT), in_axes=(1, 0), out_axes=2)(
            jnp.moveaxis(xs, 0, 1), ids)
        np.testing.assert_array_equal(jnp.moveaxis(both, 2, 0), expect)


def test_transformations_in_the_default_tier():
    """One case of every transformation (the full tier runs the grids below): max with a tie, against JAX's."""
    raw = values("float32")
    raw[6] = raw[0]
    x, ids = jnp.asarray(raw), jnp.asarray(INDEX)
    ours = lambda s: cj.scatter(s, ids, "max", dim_size=5)
    theirs = lambda s: jax.ops.segment_max(s, ids, 5)
    np.testing.assert_allclose(jax.jit(jax.grad(lambda s: jnp.sum(jnp.sin(ours(s)))))(x),
                               jax.grad(lambda s: jnp.sum(jnp.sin(theirs(s))))(x), rtol=1e-6)
    np.testing.assert_allclose(jax.jvp(ours, (x,), (x,))[1], jax.jvp(theirs, (x,), (x,))[1], rtol=1e-6)
    np.testing.assert_allclose(jax.vmap(ours)(jnp.stack([x, -x])), jax.vmap(theirs)(jnp.stack([x, -x])), rtol=1e-6)


def loss(f):
    return lambda s: jnp.sum(jnp.sin(f(s)) * jnp.arange(1.0, 1.0 + f(s).size).reshape(f(s).shape))


@pytest.mark.full   # JAX compiles each case: seconds a case
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["add", "max", "min", "mean", "sub", "mul"])
def test_scatter_grad_and_jvp_match_jax(op, dtype):
    """Ties planted (two equal maxima in group 0, a zero in a product): JAX's own rules split max ties and take
    exact products the same way."""
    with x64(dtype):
        raw = values(dtype)
        raw[6] = raw[0]          # group 0: a tie in every column
        raw[3, 0] = 0            # group 1: a zero in a product
        x, ids = jnp.asarray(raw), jnp.asarray(INDEX)
        ours = lambda s: cj.scatter(s, ids, op, dim_size=N_OUT)
        theirs = lambda s: native(op, s, ids)
        finite = lambda f: lambda s: jnp.where(jnp.isfinite(f(s)), f(s), 0)
        tol = {"rtol": 1e-5, "atol": 1e-5} if dtype == "float32" else {"rtol": 1e-12, "atol": 1e-12}
        g = jax.grad(loss(finite(ours)))(x)
        if op != "mul":   # JAX has no gradient for products over repeated indices
            np.testing.assert_allclose(g, jax.grad(loss(finite(theirs)))(x), **tol)
        np.testing.assert_allclose(jax.jit(jax.grad(loss(finite(ours))))(x), g, **tol)
        out = np.asarray(ours(x))
        cot = np.asarray(jax.grad(lambda o: loss(lambda q: q)(jnp.where(jnp.isfinite(o), o, 0)))(ours(x)))
        np.testing.assert_allclose(g, cs.scatter_vjp_src(op, cot, raw, INDEX, out), **tol)
        t = jnp.asarray(values(dtype, seed=1))
        _, tan = jax.jvp(ours, (x,), (t,))
        np.testing.assert_allclose(tan, cs.scatter_jvp(op, raw, INDEX, out, np.asarray(t)), **tol)
        if op != "mul":
            np.testing.assert_allclose(tan, jax.jvp(theirs, (x,), (t,))[1], **tol)


def test_gather_against_take():
    x, ids = jnp.asarray(values("float32", (5, 3))), jnp.asarray([4, 0, 0, 2, 4, 4])
    np.testing.assert_array_equal(cj.gather(x, ids), jnp.take(x, ids, axis=0))
    np.testing.assert_array_equal(jax.jit(cj.gather)(x, ids), jnp.take(x, ids, axis=0))
    f = lambda s: jnp.sum(jnp.cos(cj.gather(s, ids)) * 3)
    g = lambda s: jnp.sum(jnp.cos(jnp.take(s, ids, axis=0)) * 3)
    np.testing.assert_allclose(jax.grad(f)(x), jax.grad(g)(x), rtol=1e-6)
    np.testing.assert_allclose(jax.jvp(f, (x,), (x,))[1], jax.jvp(g, (x,), (x,))[1], rtol=1e-6)
    xs = jnp.stack([x, 2 * x])
    np.testing.assert_array_equal(jax.vmap(lambda s: cj.gather(s, ids))(xs), jnp.take(xs, ids, axis=1))


@pytest.mark.full   # JAX compiles each case: seconds a case
@pytest.mark.parametrize("op", ["add", "mean", "max", "min", "mul"])
@pytest.mark.parametrize("how", ["plan", "indices", "weighted plan"])
def test_gather_scatter_against_take_and_segment_sum(op, how):
    rng = np.random.default_rng(3)
    gi, si = rng.integers(0, 5, 20), np.r_[0, 1, 2, 3, rng.integers(0, 4, 16)]   # row 4 receives nothing
    x, w = jnp.asarray(values("float32", (5, 4))), jnp.asarray(rng.uniform(0.5, 2, 20).astype(np.float32))
    plan = cs.gather_scatter_plan(gi, si, src_size=5, dim_size=5)
    kw = {"plan": {"plan": plan}, "indices": {"gather_index": jnp.asarray(gi), "scatter_index": jnp.asarray(si),
                                               "dim_size": 5},
          "weighted plan": {"plan": plan, "weight": w}}[how]
    weight = kw.get("weight")

    def theirs(s):
        msgs = jnp.take(s, jnp.asarray(gi), axis=0) * (1 if weight is None else weight[:, None])
        ids = jnp.asarray(si)
        nat = {"add": jax.ops.segment_sum, "max": jax.ops.segment_max, "min": jax.ops.segment_min,
               "mul": jax.ops.segment_prod}.get(op)
        if op == "mean":
            return jax.ops.segment_sum(msgs, ids, 5) / jnp.maximum(
                jax.ops.segment_sum(jnp.ones_like(msgs), ids, 5), 1)
        return nat(msgs, ids, 5)

    ours = lambda s: cj.gather_scatter(s, op=op, **kw)
    np.testing.assert_allclose(ours(x), theirs(x), rtol=1e-6)
    np.testing.assert_allclose(jax.jit(ours)(x), theirs(x), rtol=1e-6)
    finite = lambda f: lambda s: jnp.where(jnp.isfinite(f(s)), f(s), 0)
    if op != "mul":
        np.testing.assert_allclose(jax.jit(jax.grad(loss(finite(ours))))(x), jax.grad(loss(finite(theirs)))(x),
                                   rtol=2e-5, atol=2e-5)
        np.testing.assert_allclose(jax.jvp(finite(ours), (x,), (x,))[1], jax.jvp(finite(theirs), (x,), (x,))[1],
                                   rtol=2e-5, atol=2e-5)
    xs = jnp.stack([x, x * 2])
    np.testing.assert_allclose(jax.vmap(ours)(xs)[1], ours(xs[1]), rtol=1e-6)


@pytest.mark.full   # JAX compiles each case: seconds a case
def test_gather_scatter_weight_gradient_against_jax():
    rng = np.random.default_rng(4)
    gi, si = rng.integers(0, 5, 20), rng.integers(0, 5, 20)
    x, w = jnp.asarray(values("float32", (5, 4))), jnp.asarray(rng.uniform(0.5, 2, 20).astype(np.float32))
    plan = cs.gather_scatter_plan(gi, si, src_size=5, dim_size=5)
    ours = lambda v: cj.gather_scatter(x, op="add", weight=v, plan=plan)
    theirs = lambda v: jax.ops.segment_sum(jnp.take(x, jnp.asarray(gi), axis=0) * v[:, None], jnp.asarray(si), 5)
    np.testing.assert_allclose(jax.grad(loss(ours))(w), jax.grad(loss(theirs))(w), rtol=1e-5)
    np.testing.assert_allclose(jax.jvp(ours, (w,), (w,))[1], jax.jvp(theirs, (w,), (w,))[1], rtol=1e-5)


@pytest.mark.parametrize("op", ["add", "max", "mean"])
def test_segment_and_gather_segment(op):
    indptr = np.array([0, 3, 3, 7, 8])   # an empty segment
    x = jnp.asarray(values("float32"))
    ids = np.repeat(np.arange(4), np.diff(indptr))
    np.testing.assert_array_equal(cj.segment(x, jnp.asarray(indptr), op), cj.scatter(x, ids, op, dim_size=4))
    f = lambda s: cj.segment(s, jnp.asarray(indptr), op)
    finite = lambda s: jnp.where(jnp.isfinite(f(s)), f(s), 0)
    np.testing.assert_allclose(jax.grad(loss(finite))(x),
                               jax.grad(loss(lambda s: jnp.where(jnp.isfinite(q := native(op, s, jnp.asarray(ids))),
                                                                 q, 0)[:4]))(x), rtol=1e-5)
    y = jnp.asarray(values("float32", (4, 3)))
    np.testing.assert_array_equal(cj.gather_segment(y, jnp.asarray(indptr)), jnp.take(y, ids, axis=0))
    np.testing.assert_array_equal(
        jax.jit(lambda s: cj.gather_segment(s, jnp.asarray(indptr), total_size=8))(y), jnp.take(y, ids, axis=0))


def _group_reference(name, x, ids, n):
    """The statistic written with JAX's segment ops."""
    if name in ("scatter_softmax", "scatter_log_softmax"):
        shifted = x - jax.ops.segment_max(x, ids, n)[ids]
        total = jax.ops.segment_sum(jnp.exp(shifted), ids, n)[ids]
        return jnp.exp(shifted) / total if name == "scatter_softmax" else shifted - jnp.log(total)
    if name == "scatter_logsumexp":
        top = jax.ops.segment_max(x, ids, n)
        return top + jnp.log(jax.ops.segment_sum(jnp.exp(x - top[ids]), ids, n))
    count = jax.ops.segment_sum(jnp.ones_like(x), ids, n)
    mean = jax.ops.segment_sum(x, ids, n) / count
    var = jax.ops.segment_sum((x - mean[ids]) ** 2, ids, n) / count
    return var if name == "scatter_var" else jnp.sqrt(var)


@pytest.mark.full   # JAX compiles each case: seconds a case
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["scatter_softmax", "scatter_log_softmax", "scatter_logsumexp", "scatter_var",
                                  "scatter_std"])
def test_group_statistics_against_segment_ops(name, dtype):
    with x64(dtype):
        ids = np.array([0, 2, 0, 1, 3, 2, 1, 3])   # two entries a group at least: std stays differentiable
        x, jids = jnp.asarray(values(dtype)), jnp.asarray(ids)
        ours = lambda s: getattr(cj, name)(s, jids, dim_size=4)
        theirs = lambda s: _group_reference(name, s, jids, 4)
        tol = {"rtol": 2e-5, "atol": 2e-6} if dtype == "float32" else {"rtol": 1e-10, "atol": 1e-12}
        np.testing.assert_allclose(jax.jit(ours)(x), theirs(x), **tol)
        np.testing.assert_allclose(jax.jit(jax.grad(loss(ours)))(x), jax.grad(loss(theirs))(x), **tol)
        np.testing.assert_allclose(jax.jvp(ours, (x,), (x,))[1], jax.jvp(theirs, (x,), (x,))[1], **tol)
        xs = jnp.stack([x, x * 2])
        np.testing.assert_allclose(jax.vmap(ours)(xs)[1], ours(xs[1]), **tol)


def test_integer_reductions():
    x = jnp.asarray(values("float32"))
    ids = jnp.asarray(INDEX)
    raw = np.asarray(x)
    for fun, arg in (("scatter_argmax", x), ("scatter_argmin", x), ("scatter_any", x > 1), ("scatter_all", x > 1)):
        expect = getattr(cs, fun)(np.asarray(arg), INDEX, dim_size=N_OUT)
        got = jax.jit(lambda s, f=fun: getattr(cj, f)(s, ids, dim_size=N_OUT))(arg)
        np.testing.assert_array_equal(got, expect)
    np.testing.assert_array_equal(jax.jit(lambda i: cj.scatter_count(i, N_OUT))(ids), np.bincount(INDEX, None, 6))
    # argmax against a loop: the position of each group's largest entry, index.size for an empty group
    winners = np.asarray(cj.scatter_argmax(x, ids, dim_size=N_OUT))
    for g in range(N_OUT):
        rows = np.flatnonzero(INDEX == g)
        expect = rows[np.argmax(raw[rows], axis=0)] if rows.size else np.full(3, INDEX.size)
        np.testing.assert_array_equal(winners[g], expect)
    # no derivative, but they sit inside differentiated code
    g = jax.grad(lambda s: jnp.sum(s[:N_OUT] * cj.scatter_argmax(s, ids, dim_size=N_OUT)))(x)
    np.testing.assert_array_equal(g[:N_OUT], winners)


def test_errors_name_the_argument():
    x, ids = jnp.ones((3, 2)), jnp.asarray([0, 1, 1])
    with pytest.raises(ValueError, match="dim_size"):
        jax.jit(lambda s, i: cj.scatter(s, i, "add"))(x, ids)
    with pytest.raises(ValueError, match="num_segments"):
        jax.jit(lambda s, i: cj.segment_sum(s, i))(x, ids)
    with pytest.raises(ValueError, match="dim_size"):
        jax.jit(lambda s, i: cj.gather_scatter(s, i, i, "add"))(x, ids)
    with pytest.raises(TypeError, match="index"):
        cj.scatter(x, jnp.asarray([0.0, 1.0, 1.0]), "add")
    with pytest.raises(ValueError, match="mode"):
        cj.scatter(x, ids, "add", mode="nope")
    with pytest.raises(ValueError, match="op"):
        cj.scatter(x, ids, "nope")
    with pytest.raises(ValueError, match="shape"):
        cj.scatter(x, jnp.asarray([0, 1]), "add")
    with pytest.raises(ValueError, match="fill_value"):
        cj.scatter(x, ids, "max", fill_value=jnp.ones(2))
    with pytest.raises(TypeError, match="fill_value"):
        jax.jit(lambda s, f: cj.scatter(s, ids, "max", dim_size=2, fill_value=f))(x, 1.0)
    assert cj.scatter(x, ids, "max", dim_size=3, fill_value=-5.0)[2, 0] == -5.0
    with jax.enable_x64(True):
        f = lambda s: jnp.sum(cj.scatter(s, ids, "mul", dim_size=2) ** 2)
        with pytest.raises(NotImplementedError, match="second derivatives"):
            jax.hessian(f)(jnp.ones((3, 2), jnp.float64))


def test_import_cyscatter_does_not_import_jax():
    code = "import sys, cyscatter; assert 'jax' not in sys.modules, 'jax imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def _scan_reference(op, x, ids, n):
    """The grouped running reduction from ``jax.lax.cum*`` over each group's entries (others masked out)."""
    fun, base = {"add": (jax.lax.cumsum, 0.0), "mul": (jax.lax.cumprod, 1.0), "max": (jax.lax.cummax, -jnp.inf),
                 "min": (jax.lax.cummin, jnp.inf)}[op]
    out = jnp.zeros_like(x)
    for g in range(n):
        mask = (ids == g)[:, None]
        out = jnp.where(mask, fun(jnp.where(mask, x, base), axis=0), out)
    return out


@pytest.mark.parametrize("op", ["add", "mul", "max", "min"])
def test_scan_against_jax_cumulative_ops(op):
    x, ids = jnp.asarray(values("float32")), jnp.asarray(INDEX)
    ours = lambda s: cj.scatter_scan(s, ids, op)
    theirs = lambda s: _scan_reference(op, s, ids, N_OUT)
    np.testing.assert_allclose(jax.jit(ours)(x), theirs(x), rtol=1e-6)
    np.testing.assert_allclose(jax.grad(loss(ours))(x), jax.grad(loss(theirs))(x), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(jax.jvp(ours, (x,), (x,))[1], jax.jvp(theirs, (x,), (x,))[1], rtol=1e-5)


@pytest.mark.parametrize("op", ["add", "max", "min", "mul"])
def test_scatter_into_against_at(op):
    """``dst.at[index].op(src)``: the same values and, in both arguments, the same gradients (a tie with the
    initial value in group 0: JAX and cyscatter both count it as a candidate)."""
    raw = values("float32")
    dst = jnp.asarray(values("float32", (N_OUT, 3), seed=2)).at[0].set(float(raw[:, 0].max()))
    x, ids = jnp.asarray(raw), jnp.asarray(INDEX)
    at = {"add": lambda a, b: a.at[ids].add(b), "max": lambda a, b: a.at[ids].max(b),
          "min": lambda a, b: a.at[ids].min(b), "mul": lambda a, b: a.at[ids].multiply(b)}[op]
    ours = lambda a, b: cj.scatter_into(a, b, ids, op)
    np.testing.assert_allclose(jax.jit(ours)(dst, x), at(dst, x), rtol=1e-6)
    if op != "mul":   # JAX has no gradient for products over repeated indices
        g = jax.grad(lambda a, b: jnp.sum(jnp.sin(ours(a, b))), argnums=(0, 1))(dst, x)
        h = jax.grad(lambda a, b: jnp.sum(jnp.sin(at(a, b))), argnums=(0, 1))(dst, x)
        for a, b in zip(g, h):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(jax.vmap(ours, in_axes=(None, 0))(dst, jnp.stack([x, 2 * x]))[1], ours(dst, 2 * x),
                               rtol=1e-6)
