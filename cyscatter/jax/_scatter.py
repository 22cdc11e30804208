"""scatter, gather, segment, gather_segment and the integer-valued reductions as JAX primitives.

Each section declares its primitives, their output shapes, JVPs and transposes (see `_primitives`). The public
functions validate their arguments at trace time and bind the primitive once.
"""
from __future__ import annotations

import functools

import numpy as np

import cyscatter as cs
from cyscatter._registry.ops import ORDER_STATS
from cyscatter.jax import _primitives as P
from cyscatter.jax._args import (
    as_index,
    as_indices,
    as_values,
    batch_axis,
    batch_first,
    batch_last,
    check_mode,
    is_traced,
    src_batch,
    static_scalar,
    static_size,
)

# ---- scatter --------------------------------------------------------------------------------------------------------

@functools.cache
def _scatter_dtype_raw(op, dtype, fill_value):
    return cs.scatter(np.zeros((1, 1), dtype), np.zeros(1, np.intp), op, dim_size=1,
                      fill_value=fill_value).dtype


def _scatter_dtype(*args):
    """The cached probe's dtype as JAX gives it now (x64 may be switched between calls)."""
    return P.canonical(_scatter_dtype_raw(*args))


def _scatter_result(src, index, *, op, dim_size, fill_value, mode, sorted_):
    return ((*P.sizes(dim_size), *src.shape[len(P.index_shape(index)):]),
            _scatter_dtype(op, np.dtype(src.dtype), fill_value))


scatter_p = P.host_primitive(
    "scatter",
    lambda src, index, *, op, dim_size, fill_value, mode, sorted_: cs.scatter(
        src, index, op, dim_size=dim_size, fill_value=fill_value, mode=mode, indices_are_sorted=sorted_),
    _scatter_result, index=1)

# vjp_src of a linear op (add, sub, mean, sqrt_n, the assignments) reads src and out for their shapes only
def _src_shape(ct, index):
    """The shape I + F of a scatter's src whose output (D + F) has the shape of `ct`."""
    return (*P.index_shape(index), *ct.shape[P.addressed(index):])


scatter_t_p = P.host_primitive(
    "scatter_transpose",
    lambda ct, index, *, op, dim_size, mode: cs.scatter_vjp_src(
        op, ct, P.zeros_like_shape(_src_shape(ct, index), ct.dtype), index, ct, mode=mode),
    lambda ct, index, *, op, dim_size, mode: (_src_shape(ct, index), np.dtype(ct.dtype)), index=1)

scatter_lin_p = P.host_primitive(
    "scatter_jvp",
    lambda t, src, index, out, *, op, mode: cs.scatter_jvp(op, src, index, out, t, mode=mode),
    lambda t, src, index, out, *, op, mode: (out.shape, np.dtype(out.dtype)), values=(0, 1, 3), index=2)

scatter_lin_t_p = P.host_primitive(
    "scatter_vjp",
    lambda ct, src, index, out, *, op, mode: cs.scatter_vjp_src(op, ct, src, index, out, mode=mode),
    lambda ct, src, index, out, *, op, mode: (src.shape, np.dtype(src.dtype)), values=(0, 1, 3), index=2)


def locally_constant(params, slots) -> bool:
    """An op whose partial derivatives are locally constant (`Op.partials` empty): its rules' residuals have
    derivative zero."""
    return cs.get_op(params["op"]).partials == ""


def no_fill(params):
    return {**params, "fill_value": None}


# median / nanmedian (`cs.ORDER_STATS`): a sort, not a registry op. Their tangent map is the quantile's selection
# weights at q=0.5 "linear", piecewise constant in src, so the residual's derivative is zero (second order exact).
def _is_order_stat(op: str) -> bool:
    return op in ORDER_STATS


def _op_name(op) -> str:
    return op if isinstance(op, str) and _is_order_stat(op) else cs.get_op(op).name


def _quantile_fun(op: str, kind: str):
    return getattr(cs, f"scatter_{'nan' if ORDER_STATS[op] else ''}quantile_{kind}")


median_lin_p = P.host_primitive(
    "median_jvp",
    lambda t, src, index, *, op, dim_size, mode: _quantile_fun(op, "jvp")(
        src, index, t, 0.5, dim_size=dim_size, mode=mode),
    lambda t, src, index, *, op, dim_size, mode: ((*P.sizes(dim_size), *src.shape[len(P.index_shape(index)):]),
                                                  np.dtype(t.dtype)),
    values=(0, 1), index=2)

median_lin_t_p = P.host_primitive(
    "median_vjp",
    lambda ct, src, index, *, op, mode: _quantile_fun(op, "vjp")(ct, src, index, 0.5, mode=mode),
    lambda ct, src, index, *, op, mode: (src.shape, np.dtype(ct.dtype)), values=(0, 1), index=2)

P.def_linear(median_lin_p, lambda ct, src, index, *, aval0, op, dim_size, mode, coords: median_lin_t_p.bind(
    ct, src, index, op=op, mode=mode, coords=coords))
P.def_linear(median_lin_t_p, lambda ct, src, index, *, aval0, op, mode, coords: median_lin_p.bind(
    ct, src, index, op=op, dim_size=P.leading(aval0.shape, coords), mode=mode, coords=coords))


def _scatter_tangent(tangents, primals, out, **params):
    src, index = primals
    t = P.instantiate(tangents[0], src)
    op, mode, coords = params["op"], params["mode"], params["coords"]
    if _is_order_stat(op):
        return median_lin_p.bind(t, src, index, op=op, dim_size=params["dim_size"], mode=mode, coords=coords)
    if cs.get_op(op).linear:   # the forward is its own tangent map, transposed by scatter_t_p
        return scatter_p.bind(t, index, **no_fill(params))
    return scatter_lin_p.bind(t, src, index, out, op=op, mode=mode, coords=coords)


P.def_nonlinear(scatter_p, _scatter_tangent)
P.def_transpose(scatter_p, lambda ct, index, *, aval0, op, dim_size, fill_value, mode, sorted_, coords:
                 scatter_t_p.bind(ct, index, op=op, dim_size=dim_size, mode=mode, coords=coords))
P.def_linear(scatter_t_p, lambda ct, index, *, aval0, op, dim_size, mode, coords: scatter_p.bind(
    ct, index, op=op, dim_size=dim_size, fill_value=None, mode=mode, sorted_=False, coords=coords))
P.def_linear(scatter_lin_p, lambda ct, src, index, out, *, aval0, **params: scatter_lin_t_p.bind(
    ct, src, index, out, **params), residuals_frozen=locally_constant, what="scatter")
P.def_linear(scatter_lin_t_p, lambda ct, src, index, out, *, aval0, **params: scatter_lin_p.bind(
    ct, src, index, out, **params), residuals_frozen=locally_constant, what="scatter")


def scatter(src, index, op="add", *, dim_size=None, axis=0, fill_value=None, mode="raise",
            indices_are_sorted=False):
    """`cyscatter.scatter` as a JAX function: ``out[index[i]] op= src[i]``, the index dims starting at `axis`.

    Works under ``jax.jit``, ``jax.grad``/``jax.vjp``, ``jax.jvp`` and ``jax.vmap``; the kernels run on the host
    (CPU) through XLA's FFI under jit (``jax.pure_callback`` where the extension ``cyscatter.jax._ffi`` is absent).

    Parameters
    ----------
    src : jax.Array, shape B + I + F
        The values; any dtype the op takes (`cyscatter.scatter`); B = ``src.shape[:axis]``, batch dims.
    index : jax.Array of int, shape I, or a tuple of m of them
        The destination row of each entry, or its m coordinates (NumPy advanced indexing, NNlib's
        ``CartesianIndex``; one shape, no broadcasting, as `cyscatter.scatter`; `mode` applies per coordinate).
    op : str
        Any name of `cyscatter.OPS` (add, sub, mul, div, max, min, mean, sqrt_n, set, first, nansum, nanprod,
        fmax, fmin, nanmean and their aliases), or the order statistics "median" / "nanmedian" (NumPy's median
        per group; their derivatives are `cyscatter.scatter_quantile_vjp` / ``_jvp`` at q=0.5, "linear").
    dim_size : int or tuple of m ints, optional
        The destination shape D: rows of the output (one size per coordinate for a tuple index); required when
        `index` is traced (under ``jax.jit`` or ``jax.vmap``); otherwise ``max(index) + 1`` per coordinate as
        `cyscatter.scatter` reads it.
    axis : int
        Where the index dims start in `src` (negative counts from the end); the dims before are batch dims.
    fill_value : scalar, optional
        The value of an empty group (default: the op's, `cyscatter.scatter`'s: -inf for max, 0 for mean).
    mode : {"raise", "drop", "wrap", "clip", "normalize_drop"}
        Out-of-range indices, as `cyscatter.scatter`; under jit "raise" reports an error at run time, as a
        ``jax.errors.JaxRuntimeError`` whose message holds the IndexError's (docs/jax.rst; "drop" avoids it).
    indices_are_sorted : bool
        A promise that `index` is sorted (the kernels then skip a pass).

    Returns
    -------
    jax.Array, shape B + D + F
        `cyscatter.scatter`'s dtype (canonicalised by JAX: float32 without x64).

    Raises
    ------
    ValueError
        `dim_size` missing for a traced index, or not m sizes for a tuple index; an unknown `mode`; `src` not
        holding the index's shape at `axis`; `axis` out of range; the arrays of a tuple index of different shapes.
    TypeError
        A non-integer `index` (or coordinate), a list index, a non-integer `dim_size` or `axis`.
    NotImplementedError
        A second derivative of an op whose partial derivatives are not locally constant (mul, div, nanprod).

    Notes
    -----
    Gradients are the split reverse functions' (`cyscatter.scatter_vjp_src`): ties in max/min split evenly, mul
    exact with zeros; JAX's own ``.at[].max`` / ``segment_max`` split ties the same way (tested).
    """
    src, (index, coords, ishape) = as_values(src), as_indices(index)
    batch = src_batch(src, ishape, axis)
    op = _op_name(op)
    mode = check_mode(mode)
    dim_size = static_size(dim_size, index, "dim_size", mode, "scatter", coords)
    return batch_first(scatter_p.bind(batch_last(src, batch), index, op=op, dim_size=dim_size,
                                      fill_value=static_scalar(fill_value), mode=mode,
                                      sorted_=bool(indices_are_sorted), coords=coords), batch)


# ---- gather ---------------------------------------------------------------------------------------------------------

def _gathered_from(ct, index, rows):
    """The shape D + F of a gather's src (D = `rows`) whose output (I + F) has the shape of `ct`."""
    return (*P.sizes(rows), *ct.shape[len(P.index_shape(index)):])


gather_p = P.host_primitive(
    "gather",
    lambda src, index, *, mode, fill_value: cs.gather(src, index, mode=mode, fill_value=fill_value),
    lambda src, index, *, mode, fill_value: ((*P.index_shape(index), *src.shape[P.addressed(index):]),
                                             np.dtype(src.dtype)), index=1)

gather_t_p = P.host_primitive(
    "gather_transpose",
    lambda ct, index, *, rows, mode: cs.gather_vjp_src(ct, index, _gathered_from(ct, index, rows), mode=mode),
    lambda ct, index, *, rows, mode: (_gathered_from(ct, index, rows), np.dtype(ct.dtype)), index=1)

P.def_linear(gather_p, lambda ct, index, *, aval0, mode, fill_value, coords: gather_t_p.bind(
    ct, index, rows=P.leading(aval0.shape, coords), mode=mode, coords=coords), tangent_params=no_fill)
P.def_linear(gather_t_p, lambda ct, index, *, aval0, rows, mode, coords: gather_p.bind(
    ct, index, mode=mode, fill_value=None, coords=coords))


def gather(src, index, *, axis=0, mode="raise", fill_value=None):
    """`cyscatter.gather` as a JAX function: ``out[i] = src[index[i]]`` at `axis` (``jnp.take(src, index,
    axis=axis)``; a tuple index: ``src[(*batch, *index)]``, NumPy advanced indexing).

    Parameters
    ----------
    src : jax.Array, shape B + D + F
        The rows to read; D = (n,) for an integer index, m dims for a tuple of m coordinates; B =
        ``src.shape[:axis]``, batch dims.
    index : jax.Array of int, shape I, or a tuple of m of them
        The row of `src` each output row reads, or its m coordinates (one shape, as `cyscatter.gather`).
    axis : int
        Where D starts in `src` (negative counts from the end).
    mode : {"raise", "drop", "wrap", "clip", "normalize_drop"}
        Out-of-range indices, as `cyscatter.gather` ("drop": the row is `fill_value`, 0 by default).
    fill_value : scalar, optional
        The value of a dropped row.

    Returns
    -------
    jax.Array, shape B + I + F
        The gathered rows, in src's dtype.

    Raises
    ------
    ValueError
        An unknown `mode`; `axis` out of range (src without the m dims at `axis`); the arrays of a tuple index
        of different shapes.
    TypeError
        A non-integer `index` (or coordinate), a list index, a non-integer `axis`.

    Notes
    -----
    Linear in `src`: its transpose is `cyscatter.gather_vjp_src` (a scatter-add), whose own transpose is this
    gather, so derivatives of every order exist in both modes.
    """
    src, (index, coords, _) = as_values(src), as_indices(index)
    if src.ndim < (1 if coords is None else coords):
        raise ValueError(f"src must have at least {1 if coords is None else coords} dimension(s) (one per "
                         f"addressed axis), got shape {tuple(src.shape)}")
    batch = batch_axis(axis, src.ndim, 1 if coords is None else coords)
    return batch_first(gather_p.bind(batch_last(src, batch), index, mode=check_mode(mode),
                                     fill_value=static_scalar(fill_value), coords=coords), batch)


# ---- segment (CSR offsets) ------------------------------------------------------------------------------------------

@functools.cache
def _segment_dtype_raw(op, dtype, fill_value):
    return cs.segment(np.zeros((1, 1), dtype), np.array([0, 1]), op, fill_value=fill_value).dtype


def _segment_dtype(*args):
    """The cached probe's dtype as JAX gives it now (x64 may be switched between calls)."""
    return P.canonical(_segment_dtype_raw(*args))


segment_p = P.host_primitive(
    "segment",
    lambda src, indptr, *, op, fill_value: cs.segment(src, indptr, op, fill_value=fill_value),
    lambda src, indptr, *, op, fill_value: ((indptr.shape[0] - 1, *src.shape[1:]),
                                            _segment_dtype(op, np.dtype(src.dtype), fill_value)))

segment_t_p = P.host_primitive(
    "segment_transpose",
    lambda ct, indptr, *, op, rows: cs.segment_vjp_src(
        op, ct, P.zeros_like_shape((rows, *ct.shape[1:]), ct.dtype), indptr, ct),
    lambda ct, indptr, *, op, rows: ((rows, *ct.shape[1:]), np.dtype(ct.dtype)))

segment_lin_p = P.host_primitive(
    "segment_jvp",
    lambda t, src, indptr, out, *, op: cs.segment_jvp(op, src, indptr, out, t),
    lambda t, src, indptr, out, *, op: (out.shape, np.dtype(out.dtype)), values=(0, 1, 3))

segment_lin_t_p = P.host_primitive(
    "segment_vjp",
    lambda ct, src, indptr, out, *, op: cs.segment_vjp_src(op, ct, src, indptr, out),
    lambda ct, src, indptr, out, *, op: (src.shape, np.dtype(src.dtype)), values=(0, 1, 3))


def _segment_tangent(tangents, primals, out, *, op, fill_value):
    src, indptr = primals
    t = P.instantiate(tangents[0], src)
    if _is_order_stat(op):   # the scatter's rule, on the segment ids of the (validated) offsets
        import jax.numpy as jnp
        ids = jnp.searchsorted(indptr, jnp.arange(src.shape[0], dtype=indptr.dtype), side="right") - 1
        return median_lin_p.bind(t, src, ids, op=op, dim_size=indptr.shape[0] - 1, mode="raise", coords=None)
    if cs.get_op(op).linear:
        return segment_p.bind(t, indptr, op=op, fill_value=None)
    return segment_lin_p.bind(t, src, indptr, out, op=op)


P.def_nonlinear(segment_p, _segment_tangent)
P.def_transpose(segment_p, lambda ct, indptr, *, aval0, op, fill_value: segment_t_p.bind(
    ct, indptr, op=op, rows=aval0.shape[0]))
P.def_linear(segment_t_p, lambda ct, indptr, *, aval0, op, rows: segment_p.bind(ct, indptr, op=op, fill_value=None))
P.def_linear(segment_lin_p, lambda ct, src, indptr, out, *, aval0, op: segment_lin_t_p.bind(
    ct, src, indptr, out, op=op), residuals_frozen=locally_constant, what="segment")
P.def_linear(segment_lin_t_p, lambda ct, src, indptr, out, *, aval0, op: segment_lin_p.bind(
    ct, src, indptr, out, op=op), residuals_frozen=locally_constant, what="segment")


def segment(src, indptr, op="add", *, fill_value=None):
    """`cyscatter.segment` as a JAX function: reduce the rows ``src[indptr[k]:indptr[k + 1]]`` of each segment.

    Parameters
    ----------
    src : jax.Array, shape (n,) + F
        The values, segment after segment.
    indptr : jax.Array of int, shape (k + 1,)
        Non-decreasing offsets (CSR), ``indptr[-1] <= n``.
    op : str
        Any name of `cyscatter.OPS` but the assignments, or "median" / "nanmedian" (as `scatter`).
    fill_value : scalar, optional
        The value of an empty segment (default: the op's).

    Returns
    -------
    jax.Array, shape (k,) + F
        One row per segment.

    Raises
    ------
    TypeError
        A non-integer `indptr`.
    ValueError
        `indptr` not one-dimensional (bad offsets raise from `cyscatter.segment`, at run time under jit).
    """
    src, indptr = as_values(src), as_index(indptr, "indptr")
    if indptr.ndim != 1 or indptr.shape[0] < 1:
        raise ValueError(f"indptr must be one-dimensional and non-empty, got shape {tuple(indptr.shape)}")
    return segment_p.bind(src, indptr, op=_op_name(op), fill_value=static_scalar(fill_value))


def _total_matches(indptr, total_size):
    """ValueError unless the concrete `indptr` ends at `total_size` (the output's rows, fixed before the run)."""
    if indptr.size and int(indptr[-1]) != total_size:
        raise ValueError(f"cyscatter.jax.gather_segment: total_size={total_size} was given but indptr[-1] = "
                         f"{int(indptr[-1])}: the output has indptr[-1] rows")


def _gather_segment_host(src, indptr, *, total):
    out = cs.gather_segment(src, indptr)   # the core's checks of indptr first (start, steps, length)
    _total_matches(indptr, total)
    return out


gather_segment_p = P.host_primitive(
    "gather_segment",
    _gather_segment_host,
    lambda src, indptr, *, total: ((total, *src.shape[1:]), np.dtype(src.dtype)))

gather_segment_t_p = P.host_primitive(
    "gather_segment_transpose",
    lambda ct, indptr: cs.gather_segment_vjp_src(ct, indptr),
    lambda ct, indptr: ((indptr.shape[0] - 1, *ct.shape[1:]), np.dtype(ct.dtype)))

P.def_linear(gather_segment_p, lambda ct, indptr, *, aval0, total: gather_segment_t_p.bind(ct, indptr))
P.def_linear(gather_segment_t_p, lambda ct, indptr, *, aval0: gather_segment_p.bind(
    ct, indptr, total=aval0.shape[0]))


def gather_segment(src, indptr, *, total_size=None):
    """`cyscatter.gather_segment` as a JAX function: row k of `src` repeated over its segment (the adjoint of
    ``segment(..., "add")``).

    Parameters
    ----------
    src : jax.Array, shape (k,) + F
        One row per segment.
    indptr : jax.Array of int, shape (k + 1,)
        Non-decreasing offsets (CSR).
    total_size : int, optional
        ``indptr[-1]``, the output's rows (``indptr[0]`` is 0, as `cyscatter.gather_segment` requires); required
        when `indptr` is traced.

    Returns
    -------
    jax.Array, shape (total_size,) + F
        Row k of `src` once for each member of segment k.

    Raises
    ------
    ValueError
        `total_size` missing for a traced `indptr`, negative, or not ``indptr[-1]`` (eagerly; under jit at run
        time, see docs/jax.rst); `indptr` not 1-D or not one entry longer than `src`'s rows; bad offsets (as
        `cyscatter.gather_segment`).
    TypeError
        A non-integer `indptr` or `total_size`.
    """
    src, indptr = as_values(src), as_index(indptr, "indptr")
    if indptr.ndim != 1 or indptr.shape[0] < 1:
        raise ValueError(f"indptr must be one-dimensional and non-empty, got shape {tuple(indptr.shape)}")
    if src.ndim < 1 or src.shape[0] != indptr.shape[0] - 1:
        raise ValueError(f"src must have one row per segment, len(indptr) - 1 = {indptr.shape[0] - 1}, got shape "
                         f"{tuple(src.shape)}")
    if total_size is None:
        if is_traced(indptr):
            raise ValueError("cyscatter.jax.gather_segment: pass total_size= (an int) when indptr is traced")
        total_size = int(np.asarray(indptr)[-1])
    else:
        total_size = static_size(total_size, indptr, "total_size", "raise", "gather_segment")
    if not is_traced(indptr):
        ip = np.asarray(indptr)
        cs.gather_segment(np.zeros((ip.shape[0] - 1, 0)), ip)   # the core's offset checks, on no features
        _total_matches(ip, total_size)
    return gather_segment_p.bind(src, indptr, total=total_size)


# ---- integer and boolean reductions (no derivative) -----------------------------------------------------------------

@functools.cache
def _reduce_dtype_raw(fun, dtype):
    return getattr(cs, fun)(np.zeros((1, 1), dtype), np.zeros(1, np.intp), dim_size=1).dtype


def _reduce_dtype(*args):
    """The cached probe's dtype as JAX gives it now (x64 may be switched between calls)."""
    return P.canonical(_reduce_dtype_raw(*args))


reduce_p = P.host_primitive(
    "reduce",
    lambda src, index, *, fun, dim_size, fill_value, mode: getattr(cs, fun)(
        src, index, dim_size=dim_size, mode=mode, **({} if fill_value is None else {"fill_value": fill_value})),
    lambda src, index, *, fun, dim_size, fill_value, mode: (
        (*P.sizes(dim_size), *src.shape[len(P.index_shape(index)):]), _reduce_dtype(fun, np.dtype(src.dtype))),
    index=1)
P.def_constant(reduce_p)

count_p = P.host_primitive(
    "count",
    lambda index, *, dim_size, mode: cs.scatter_count(index, dim_size, mode=mode),
    lambda index, *, dim_size, mode: (P.sizes(dim_size), P.canonical(np.int64)), values=(), index=0)
P.def_constant(count_p)


def _reduction(fun: str, doc: str):
    def reduce(src, index, *, dim_size=None, axis=0, fill_value=None, mode="raise"):
        import jax
        src, (index, coords, ishape) = jax.lax.stop_gradient(as_values(src)), as_indices(index)
        batch = src_batch(src, ishape, axis)
        mode = check_mode(mode)
        size = static_size(dim_size, index, "dim_size", mode, fun, coords)
        fill = static_scalar(fill_value)
        return batch_first(reduce_p.bind(batch_last(src, batch), index, fun=fun, dim_size=size, fill_value=fill,
                                         mode=mode, coords=coords), batch)
    reduce.__name__ = reduce.__qualname__ = fun
    reduce.__doc__ = doc
    return reduce


_REDUCTION_DOC = """`cyscatter.{fun}` as a JAX function (no derivative: its result is {what}).

    Parameters
    ----------
    src : jax.Array, shape B + I + F
        The values (not differentiated); B = ``src.shape[:axis]``, batch dims.
    index : jax.Array of int, shape I, or a tuple of m of them
        The group of each entry, or its m coordinates (one shape, as `cyscatter.{fun}`).
    dim_size : int or tuple of m ints, optional
        The destination shape D; required when `index` is traced.
    axis : int
        Where the index dims start in `src`.
    fill_value : scalar, optional
        The value of an empty group (default: `cyscatter.{fun}`'s{empty}).
    mode : {{"raise", "drop", "wrap", "clip", "normalize_drop"}}
        Out-of-range indices, as `cyscatter.{fun}`.

    Returns
    -------
    jax.Array, shape B + D + F
        One row per group: {what}.

    Raises
    ------
    ValueError
        `dim_size` missing for a traced index (or not m sizes), an unknown `mode`, `src` without the index
        shape at `axis`.
    TypeError
        A non-integer or list `index`, a non-integer `dim_size` or `axis`.
    """
scatter_argmax = _reduction("scatter_argmax", _REDUCTION_DOC.format(
    fun="scatter_argmax", what="a position in the flattened index", empty=": index.size"))
scatter_argmin = _reduction("scatter_argmin", _REDUCTION_DOC.format(
    fun="scatter_argmin", what="a position in the flattened index", empty=": index.size"))
scatter_nanargmax = _reduction("scatter_nanargmax", _REDUCTION_DOC.format(
    fun="scatter_nanargmax", what="a position in the flattened index", empty=": index.size"))
scatter_nanargmin = _reduction("scatter_nanargmin", _REDUCTION_DOC.format(
    fun="scatter_nanargmin", what="a position in the flattened index", empty=": index.size"))
scatter_any = _reduction("scatter_any", _REDUCTION_DOC.format(fun="scatter_any", what="boolean", empty=""))
scatter_all = _reduction("scatter_all", _REDUCTION_DOC.format(fun="scatter_all", what="boolean", empty=""))


def scatter_count(index, dim_size=None, *, mode="raise"):
    """`cyscatter.scatter_count` as a JAX function: the number of entries of each group.

    Parameters
    ----------
    index : jax.Array of int, shape I, or a tuple of m of them
        The group of each entry, or its m coordinates (one shape, as `cyscatter.scatter_count`).
    dim_size : int or tuple of m ints, optional
        The destination shape D; required when `index` is traced.
    mode : {"raise", "drop", "wrap", "clip", "normalize_drop"}
        Out-of-range indices, as `cyscatter.scatter_count`.

    Returns
    -------
    jax.Array of int, shape D
        The counts: int64 with x64, int32 without (JAX's canonical integer).

    Raises
    ------
    ValueError
        `dim_size` missing for a traced index (or not m sizes), an unknown `mode`.
    TypeError
        A non-integer or list `index`, a non-integer `dim_size`.
    """
    index, coords, _ = as_indices(index)
    mode = check_mode(mode)
    size = static_size(dim_size, index, "dim_size", mode, "scatter_count", coords)
    return count_p.bind(index, dim_size=size, mode=mode, coords=coords)
