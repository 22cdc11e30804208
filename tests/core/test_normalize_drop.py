"""mode="normalize_drop": JAX's default scatter index rule, compared with JAX itself.

Negative entries count from the end once (i + size); what is still out of range is dropped. The rest of the
suite runs every function over `cyscatter.MODES` against the loop reference (`tests/helpers/reference.py`), so this mode
is covered there on the CPU, the emulated GPU, Dask and the reverse functions; here the peer decides."""
import numpy as np
import pytest

import cyscatter as cs

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")


@pytest.fixture(autouse=True)
def x64():
    with jax.enable_x64(True):   # float64 and int64 kept, for this module's tests only
        yield

INDEX = np.array([-1, 5, 1, -4, -3, 2, 2, -2, 0, 3])
JAX_OPS = {"add": "add", "mul": "multiply", "max": "max", "min": "min"}


@pytest.mark.parametrize("op", JAX_OPS)
@pytest.mark.parametrize("dtype", ("float64", "float32", "int32", "int64"))
@pytest.mark.parametrize("index_dtype", ("int8", "int32", "int64"))
def test_scatter_matches_jax_default(backend, op, dtype, index_dtype):
    rng = np.random.default_rng(2)
    src = rng.integers(-5, 6, (INDEX.size, 2)).astype(dtype)
    index = INDEX.astype(index_dtype)
    start = cs.scatter(src[:0], index[:0], op, dim_size=3)   # the op's identity (JAX starts from it too here)
    want = getattr(jnp.asarray(start).at[jnp.asarray(index)], JAX_OPS[op])(jnp.asarray(src))
    got = backend.call(cs.scatter, src, index, op, dim_size=3, mode="normalize_drop")
    np.testing.assert_array_equal(got, np.asarray(want))


@pytest.mark.parametrize("kind", ("int", "tuple"))
def test_tuple_index_matches_jax_default(backend, kind):
    rows = np.array([-1, 2, 0, -3, 1, -2])
    cols = np.array([-1, 0, 3, 1, -5, 2])
    index = (rows, cols) if kind == "tuple" else rows
    dims = (2, 3) if kind == "tuple" else 2
    src = np.arange(1.0, 7.0)
    want = jnp.zeros(dims).at[tuple(map(jnp.asarray, index)) if kind == "tuple" else jnp.asarray(rows)].add(
        jnp.asarray(src))
    got = backend.call(cs.scatter, src, index, "add", dim_size=dims, mode="normalize_drop")
    np.testing.assert_array_equal(got, np.asarray(want))


def test_gather_with_nan_fill_matches_jnp_take_default(backend):
    src = np.arange(12.0).reshape(3, 4)
    want = jnp.take(jnp.asarray(src), jnp.asarray(INDEX), axis=0)   # mode=None: "fill" with NaN
    got = backend.call(cs.gather, src, INDEX, mode="normalize_drop", fill_value=np.nan)
    np.testing.assert_array_equal(got, np.asarray(want))


def test_gather_clip_after_normalising_matches_jax_indexing():
    # JAX's x[i] clips; for entries >= -size that is normalize + clip, i.e. "clip" of (i + size if i < 0)
    src = np.arange(3.0)
    index = np.array([-1, 5, 1, -3, 2])
    normalised = np.where(index < 0, index + 3, index)
    np.testing.assert_array_equal(cs.gather(src, normalised, mode="clip"), np.asarray(jnp.asarray(src)[index]))


def test_reverse_matches_jax_grad():
    src = np.linspace(-1.0, 1.0, INDEX.size)
    w = np.array([1.0, 2.0, 3.0])

    def f(s):
        return (jnp.zeros(3).at[jnp.asarray(INDEX)].add(s) ** 2 * w).sum()

    want = np.asarray(jax.grad(f)(jnp.asarray(src)))
    out = cs.scatter(src, INDEX, dim_size=3, mode="normalize_drop")
    got = cs.scatter_vjp_src("add", 2 * out * w, src, INDEX, out, mode="normalize_drop")
    np.testing.assert_allclose(got, want)
    dropped = ~((INDEX >= -3) & (INDEX < 3))
    assert (got[dropped] == 0).all()


def test_scatter_into_and_uint64_beyond_int64():
    dst = np.zeros(3)
    cs.scatter_into(dst, np.ones(4), np.array([-1, -3, -4, 2]), mode="normalize_drop")
    np.testing.assert_array_equal(dst, [1.0, 0.0, 2.0])
    big = np.array([0, 2 ** 63 + 1, 2], np.uint64)
    np.testing.assert_array_equal(cs.scatter(np.ones(3), big, dim_size=3, mode="normalize_drop"), [1.0, 0.0, 1.0])


def test_grad_scatter_under_normalize_drop():
    csgrad = pytest.importorskip("grad")
    from autograd import grad as agrad
    src = np.linspace(-1.0, 1.0, INDEX.size)
    g = agrad(lambda s: (csgrad.scatter(s, INDEX, "add", dim_size=3, mode="normalize_drop") ** 3).sum())(src)
    want = np.asarray(jax.grad(lambda s: (jnp.zeros(3).at[jnp.asarray(INDEX)].add(s) ** 3).sum())(
        jnp.asarray(src)))
    np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-15)


def test_empty_index_tuple_matches_jax():
    # JAX's x.at[()] addresses the whole array (NumPy's a[()]); every function's empty tuple is tested in
    # tests/core/test_empty_index_tuple.py
    for shape in ((), (2, 3)):
        x = np.arange(1.0, 1.0 + np.prod(shape)).reshape(shape)
        v = np.full(shape, 0.5)
        for op in ("add", "mul", "max", "min"):
            want = getattr(jnp.asarray(x).at[()], JAX_OPS[op])(jnp.asarray(v))
            got = cs.scatter_into(x.copy(), v, (), op, mode="normalize_drop")
            np.testing.assert_array_equal(got, np.asarray(want))
        np.testing.assert_array_equal(cs.gather(x, (), mode="normalize_drop"), np.asarray(jnp.asarray(x)[()]))
