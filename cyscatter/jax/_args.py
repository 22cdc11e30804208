"""The arguments of cyscatter.jax's functions, checked when they are traced: values and indices (a tuple index
stacked into one operand), static sizes, modes, ``axis`` and the batch dims it leaves before the index dims."""
from __future__ import annotations

import functools
import operator

import numpy as np

import cyscatter as cs
from cyscatter.jax import _primitives as P


def as_values(x, arg: str = "src"):
    import jax.numpy as jnp
    try:
        return jnp.asarray(x)
    except TypeError as err:
        raise TypeError(f"{arg} must be an array, got {type(x).__name__}") from err


def as_index(index, arg: str = "index", *, takes_tuple: bool = False):
    """`index` as a jax.Array of integers; a tuple or list refused (the functions whose index is one array)."""
    import jax.numpy as jnp
    if isinstance(index, (tuple, list)):
        # cyscatter reads a tuple as one index per addressed axis, jnp.asarray as one stacked array: refuse it
        # rather than answer with the other meaning (lists too, as jax.numpy refuses them)
        also = ("or a tuple of them (one per addressed axis)" if takes_tuple
                else "(a tuple of per-axis indices is not supported by this function)")
        raise TypeError(f"{arg} must be a jax.Array of integers {also}, got {type(index).__name__}")
    index = as_values(index, arg)
    if not jnp.issubdtype(index.dtype, jnp.integer):
        raise TypeError(f"{arg} must hold integers, got dtype {index.dtype}")
    return index


def as_indices(index, arg: str = "index"):
    """(operand, coords, I): an integer index as it is (coords None), or a tuple of m integer arrays of one shape I
    (NumPy advanced indexing's, NNlib's CartesianIndex, `cyscatter.scatter`'s) stacked into one operand of shape
    (m, *I) with coords = m; the host functions unstack it (`_primitives.host_primitive`)."""
    import jax.numpy as jnp
    if not isinstance(index, tuple):
        index = as_index(index, arg, takes_tuple=True)
        return index, None, tuple(index.shape)
    parts = [as_index(part, f"{arg}[{k}]") for k, part in enumerate(index)]
    shape = tuple(parts[0].shape) if parts else ()
    for k, part in enumerate(parts):
        if tuple(part.shape) != shape:   # the core's rule: no broadcasting between the coordinates
            raise ValueError(f"{arg}[{k}] has shape {tuple(part.shape)} but {arg}[0] has shape {shape}: the arrays "
                             "of a tuple index must all have one shape")
    dtypes = {np.dtype(part.dtype) for part in parts}
    dtype = functools.reduce(np.promote_types, dtypes) if dtypes else P.canonical(np.intp)
    if dtype.kind not in "iu" or P.canonical(dtype) != dtype:
        # stacking needs one dtype: one that holds every coordinate exactly, or the caller chooses
        raise TypeError(f"{arg}: the arrays of a tuple index have dtypes {sorted(map(str, dtypes))} with no common "
                        "integer dtype in JAX's current precision; cast them to one integer dtype")
    stacked = jnp.stack([part.astype(dtype) for part in parts]) if parts else jnp.zeros((0,), dtype)
    return stacked, len(parts), shape


def is_traced(x) -> bool:
    import jax
    return isinstance(x, jax.core.Tracer)


def static_size(size, index, arg: str, mode: str, fun: str, coords=None):
    """The output's leading size: `size` as an int (a tuple of m ints for a tuple index of `coords` = m), or read
    from a concrete `index` as cyscatter reads it; a traced index (under jax.jit or jax.vmap) needs it given,
    since JAX's shapes are static."""
    if size is not None:
        if coords is not None:
            return _static_sizes(size, arg, coords)
        # operator.index, as the core: a float or a bool size is an error (jax.ops.segment_sum's too), not truncated
        if isinstance(size, (bool, np.bool_)) or is_traced(size):
            raise TypeError(f"{arg} must be an int, got {size!r}")
        try:
            size = operator.index(size)
        except TypeError as err:
            raise TypeError(f"{arg} must be an int, got {size!r}") from err
        if size < 0:
            raise ValueError(f"{arg} must be >= 0, got {size}")
        return size
    if is_traced(index):
        what = "an int" if coords is None else f"a tuple of {coords} ints, one per addressed axis"
        raise ValueError(f"cyscatter.jax.{fun}: pass {arg}= ({what}) when the index is traced (under jax.jit, "
                         f"jax.vmap or a traced loop): JAX needs the output's shape before the index's values")
    if coords is None:
        return int(cs.scatter_count(np.asarray(index), mode=mode).shape[0])
    return tuple(int(n) for n in cs.scatter_count(tuple(np.asarray(index)), mode=mode).shape)


def _static_sizes(size, arg: str, coords: int) -> tuple:
    from cyscatter._plan.index import check_sizes
    if is_traced(size) or (isinstance(size, (tuple, list)) and any(is_traced(n) for n in size)):
        raise TypeError(f"{arg} must be concrete ints, got {size!r}")
    sizes = check_sizes(size, arg)   # the core's checks and messages (bool, float, negative, too large)
    if len(sizes) != coords:
        raise ValueError(f"{arg}={size!r} gives {len(sizes)} sizes but the index addresses {coords} axes")
    return sizes


def check_mode(mode: str) -> str:
    if mode not in cs.MODES:
        raise ValueError(f"mode must be one of {cs.MODES}, got {mode!r}")
    return mode


def batch_axis(axis, ndim: int, span: int, array: str = "src") -> int:
    """`axis` (where the index dims start; the dims before it are batch dims B) checked as the core checks it."""
    from cyscatter._plan.layout import normalize_axis
    if is_traced(axis):
        raise TypeError(f"axis must be an integer, got a traced value {axis!r}")
    return normalize_axis(axis, ndim, span, array=array)


def src_batch(src, ishape: tuple, axis, arg: str = "src") -> int:
    """The number of batch dims of `src` (B + I + F) for an index of shape `ishape` starting at `axis`."""
    batch = batch_axis(axis, src.ndim, len(ishape), arg)
    if tuple(src.shape[batch:batch + len(ishape)]) != ishape:
        where = "start with" if batch == 0 else f"hold at axis {batch}"
        raise ValueError(f"{arg} shape {tuple(src.shape)} does not {where} the index shape {ishape}")
    return batch


def batch_last(x, batch: int):
    """`x` (B + rest, ``batch`` = len(B)) as rest + B: the batch dims become feature dims, which the kernels treat
    independently, so the primitives know only axis 0 (``jnp.moveaxis`` is linear: every transformation passes)."""
    if not batch:
        return x
    import jax.numpy as jnp
    return jnp.moveaxis(x, tuple(range(batch)), tuple(range(x.ndim - batch, x.ndim)))


def batch_first(x, batch: int):
    """The inverse of `batch_last`: the last ``batch`` dims of `x` moved to the front."""
    if not batch:
        return x
    import jax.numpy as jnp
    return jnp.moveaxis(x, tuple(range(x.ndim - batch, x.ndim)), tuple(range(batch)))


def static_scalar(value, arg: str = "fill_value"):
    """`value` as a Python scalar (a primitive's parameter: it must be known when tracing), None kept."""
    if value is None:
        return None
    if is_traced(value):
        raise TypeError(f"{arg} must be a concrete scalar, not a traced value (it is part of the traced function)")
    if np.ndim(value) != 0:
        raise ValueError(f"{arg} must be a scalar, got shape {np.shape(value)}")
    return np.asarray(value).item()
