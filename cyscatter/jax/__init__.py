"""cyscatter from JAX: the operations as JAX functions under jit, grad, jvp and vmap."""
try:
    import jax as _jax  # noqa: F401
except ImportError as err:   # pragma: no cover - depends on the environment
    raise ImportError('cyscatter.jax needs JAX: pip install "cyscatter[jax]"') from err

from cyscatter.jax._scatter import scatter

__all__ = ["scatter"]
