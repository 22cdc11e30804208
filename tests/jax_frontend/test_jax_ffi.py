"""The XLA FFI bridge of cyscatter.jax (`cyscatter.jax._ffi`: jitted primitives get XLA's buffers as NumPy views):
its results and derivatives against JAX's own ``jnp.take``/``jax.ops.segment_*``/``.at[]`` and against the
``jax.pure_callback`` fallback, its errors, and the fallback where the extension is absent or switched off."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp

import cyscatter as cs
import cyscatter.jax as cj
from cyscatter.jax import _primitives as P

N, E, F = 40, 230, 5
RNG = np.random.default_rng(7)
SRC = RNG.integers(0, N, E)
DST = np.sort(RNG.integers(0, N - 3, E))   # the last rows get no edge
X = RNG.standard_normal((N, F)).astype(np.float32)
W = (0.5 + RNG.random((E, 1))).astype(np.float32)


@pytest.fixture
def mode():
    """Sets the host-call mode for the functions a test traces, and restores the one in force."""
    before = P.host_call()
    yield P.set_host_call
    P.set_host_call(before)


@pytest.fixture
def ffi(mode):
    if mode("ffi") != "ffi":
        pytest.skip("the XLA FFI extension cyscatter.jax._ffi is not built")
    return mode


def native_propagate(h, w, op):
    m = jnp.take(h, jnp.asarray(SRC), axis=0)
    if w is not None:
        m = m * w
    if op == "max":
        return jax.ops.segment_max(m, jnp.asarray(DST), num_segments=N, indices_are_sorted=True)
    total = jax.ops.segment_sum(m, jnp.asarray(DST), num_segments=N, indices_are_sorted=True)
    if op == "mean":
        count = jax.ops.segment_sum(jnp.ones(E), jnp.asarray(DST), num_segments=N)
        return total / jnp.maximum(count, 1)[:, None]
    return total


def loss_and_grads(propagate):
    """jit(value_and_grad) of a loss through `propagate(h, w)`, in h and w, compiled now (in the mode in force)."""
    def loss(h, w):
        out = propagate(h, w)
        return jnp.sum(jnp.where(jnp.isfinite(out), out, 0.0) ** 2)
    f = jax.jit(jax.value_and_grad(loss, argnums=(0, 1)))
    value, (gh, gw) = f(jnp.asarray(X), jnp.asarray(W))
    return float(value), np.asarray(gh), np.asarray(gw), f


@pytest.mark.parametrize("op", ["add", "mean", "max"])
@pytest.mark.parametrize("how", ["plan", "indices"])
@pytest.mark.parametrize("weighted", [False, True])
def test_gather_scatter_against_segment_ops_and_the_callback(ffi, op, how, weighted):
    plan = cs.gather_scatter_plan(SRC, DST, src_size=N, dim_size=N)
    fill = None if op != "max" else 0.0   # JAX's segment_max leaves -inf in an empty row: compared where finite

    def ours(h, w):
        w = w if weighted else None
        if how == "plan":
            return cj.gather_scatter(h, op=op, weight=w, plan=plan, fill_value=fill)
        return cj.gather_scatter(h, jnp.asarray(SRC), jnp.asarray(DST), op, weight=w, dim_size=N, fill_value=fill)

    got = loss_and_grads(ours)
    assert "cyscatter_host_call" in got[3].lower(jnp.asarray(X), jnp.asarray(W)).as_text()
    want = loss_and_grads(lambda h, w: native_propagate(h, w if weighted else None, op))
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-5)
    if weighted:
        np.testing.assert_allclose(got[2], want[2], rtol=1e-5, atol=1e-5)
    ffi("callback")
    slow = loss_and_grads(ours)
    assert "cyscatter_host_call" not in slow[3].lower(jnp.asarray(X), jnp.asarray(W)).as_text()
    assert got[0] == slow[0]
    np.testing.assert_array_equal(got[1], slow[1])
    np.testing.assert_array_equal(got[2], slow[2])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", ["add", "mean", "max"])
def test_scatter_and_gather_against_jax(ffi, op, dtype):
    with jax.enable_x64(dtype == "float64"):
        x = jnp.asarray(X[:, :3].astype(dtype))
        ids = jnp.asarray(RNG.integers(0, 12, N))

        @jax.jit
        def ours(x):
            s = cj.scatter(x, ids, op, dim_size=12)
            return cj.gather(s, ids), jax.grad(lambda x: jnp.sum(cj.scatter(x, ids, op, dim_size=12) ** 2))(x)

        @jax.jit
        def native(x):
            def fwd(x):
                if op == "max":
                    return jnp.full((12, 3), -jnp.inf, x.dtype).at[ids].max(x)
                total = jax.ops.segment_sum(x, ids, 12)
                if op == "mean":
                    return total / jnp.maximum(jax.ops.segment_sum(jnp.ones(N, x.dtype), ids, 12), 1)[:, None]
                return total
            s = fwd(x)
            return jnp.take(s, ids, axis=0), jax.grad(lambda x: jnp.sum(jnp.where(jnp.isfinite(f := fwd(x)), f,
                                                                                   0) ** 2))(x)

        (g, d), (gn, dn) = ours(x), native(x)
        assert g.dtype == x.dtype and d.dtype == x.dtype
        tol = 1e-5 if dtype == "float32" else 1e-12
        np.testing.assert_allclose(np.asarray(g), np.asarray(gn), rtol=tol)
        np.testing.assert_allclose(np.asarray(d), np.asarray(dn), rtol=tol, atol=tol)


def test_vmap_and_jvp_under_jit(ffi):
    plan = cs.gather_scatter_plan(SRC, DST, src_size=N, dim_size=N)
    xs = jnp.asarray(RNG.standard_normal((3, N, F)).astype(np.float32))
    got = jax.jit(jax.vmap(lambda h: cj.gather_scatter(h, op="add", plan=plan)))(xs)
    want = jax.vmap(lambda h: native_propagate(h, None, "add"))(xs)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5)
    t = jnp.ones_like(xs[0])
    _, tan = jax.jit(lambda h, t: jax.jvp(lambda h: cj.gather_scatter(h, op="mean", plan=plan), (h,), (t,)))(xs[0], t)
    _, tan_native = jax.jvp(lambda h: native_propagate(h, None, "mean"), (xs[0],), (t,))
    np.testing.assert_allclose(np.asarray(tan), np.asarray(tan_native), rtol=1e-5, atol=1e-6)


def test_operands_are_read_not_written(ffi):
    x = jnp.asarray(X)
    before = np.array(x)
    f = jax.jit(lambda x: cj.scatter(x, jnp.asarray(DST[:N]), "add", dim_size=N) + cj.gather(x, jnp.asarray(SRC)).sum())
    first = np.asarray(f(x))
    np.testing.assert_array_equal(np.asarray(x), before)
    np.testing.assert_array_equal(np.asarray(f(x)), first)


def test_empty_operands(ffi):
    out = jax.jit(lambda x, i: cj.scatter(x, i, "add", dim_size=3))(jnp.zeros((0, 2)), jnp.zeros(0, jnp.int32))
    np.testing.assert_array_equal(np.asarray(out), np.zeros((3, 2)))


def test_errors_carry_the_message(ffi):
    f = jax.jit(lambda x, i: cj.scatter(x, i, dim_size=3))
    with pytest.raises(Exception, match=r"IndexError: .*out of bounds"):
        f(jnp.ones(4), jnp.array([0, 1, 5, 2])).block_until_ready()
    # the bridge still works after an error
    np.testing.assert_array_equal(np.asarray(f(jnp.ones(4), jnp.array([0, 1, 1, 2]))), [1.0, 2.0, 1.0])


def test_mode_argument_is_checked(mode):
    with pytest.raises(ValueError, match="mode must be 'ffi' or 'callback'"):
        mode("fast")


FALLBACK = """
import sys
{block}
import jax, jax.numpy as jnp, numpy as np
import cyscatter.jax as cj
from cyscatter.jax import _primitives as P
out = jax.jit(lambda x, i: cj.scatter(x, i, "add", dim_size=3))(jnp.arange(4.0), jnp.array([0, 2, 0, 1]))
assert P.host_call() == "callback", P.host_call()
assert np.asarray(out).tolist() == [2.0, 3.0, 1.0], out
"""

BLOCK = """
class _NoBridge:
    def find_spec(self, name, path=None, target=None):
        if name == "cyscatter.jax._ffi":
            raise ImportError("no bridge in this test")
sys.meta_path.insert(0, _NoBridge())
"""


@pytest.mark.parametrize("how", ["switched off", "not built"])
def test_fallback_to_pure_callback(how):
    env = None
    if how == "switched off":
        import os
        env = dict(os.environ, CYSCATTER_JAX_FFI="0")
    code = FALLBACK.format(block=BLOCK if how == "not built" else "")
    run = subprocess.run([sys.executable, "-c", code], check=False, env=env, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("host", ["ffi", "callback"])
def test_half_precision_keeps_its_dtype_under_jit(mode, host, dtype):
    """bfloat16 has no NumPy type number, so the bridge hands such calls to the callback; both keep the
    half-precision dtype of the core (and of jax.nn.softmax), for the values and for the gradient."""
    if mode(host) != host:
        pytest.skip("the XLA FFI extension cyscatter.jax._ffi is not built")
    x = jnp.asarray(RNG.standard_normal(12), dtype)
    index = jnp.asarray(RNG.integers(0, 3, 12))
    src64 = np.asarray(x, np.float64)
    want = np.exp(src64 - np.log(np.bincount(np.asarray(index), np.exp(src64), 3))[np.asarray(index)])
    for fun in (cj.scatter_softmax, cj.scatter_log_softmax):
        got = jax.jit(lambda s, fun=fun: fun(s, index, dim_size=3))(x)
        grad = jax.jit(jax.grad(lambda s, fun=fun: fun(s, index, dim_size=3).astype(jnp.float32).sum()))(x)
        assert got.dtype == jnp.dtype(dtype) and grad.dtype == jnp.dtype(dtype)
        expected = want if fun is cj.scatter_softmax else np.log(want)
        np.testing.assert_allclose(np.asarray(got, np.float64), expected, rtol=1e-2, atol=1e-2)
    total = jax.jit(lambda s: cj.scatter(s, index, "add", dim_size=3))(x)
    assert total.dtype == jnp.dtype(dtype)
    np.testing.assert_allclose(np.asarray(total, np.float64), np.bincount(np.asarray(index), src64, 3),
                               rtol=1e-2, atol=1e-2)
