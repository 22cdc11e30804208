"""gather_scatter's edges: the plan that groups the (gather, scatter) index pairs once per graph, and the
validation of a call's plan, weights and dtypes that the forward and reverse functions share (host and GPU)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from cyscatter import fused_kernels
from cyscatter._arrays.dtypes import float_kind, holds_numbers, is_bfloat16, native
from cyscatter._arrays.integers import prod
from cyscatter._arrays.keywords import unexpected_keywords
from cyscatter._arrays.protocols import check_foreign, shape_of
from cyscatter._backends import host
from cyscatter._plan.index import (
    DROPPING,
    check_mode,
    check_sizes,
    check_table_bytes,
    index_shape,
    parse_coords,
    plan_index,
)
from cyscatter._plan.layout import normalize_axis

if TYPE_CHECKING:
    from cyscatter._typing import DimSize, IndexLike, Mode


def _frozen(*arrays) -> tuple:
    """Read-only int64 copies of `arrays` over immutable buffers: their writeable flags cannot be set back."""
    frozen = []
    for a in arrays:
        a = np.ascontiguousarray(a, dtype=np.int64)
        frozen.append(np.frombuffer(a.tobytes(), dtype=np.int64).reshape(a.shape))
    return tuple(frozen)


_NO_IDS, = _frozen(np.zeros(0, np.int64))


class GatherScatterPlan:
    """The edges of a graph, validated and grouped by destination row (and, on first need, by source row).

    Made by `gather_scatter_plan`; pass it as ``plan=`` to `gather_scatter` and its reverse functions, with no
    `gather_index`/`scatter_index`. Immutable; safe to share between threads and calls.

    Parameters
    ----------
    gather_plan, scatter_plan : internal index plans
        The validated gather and scatter indices; made by `gather_scatter_plan`, which is the way to build a
        plan (the constructor is not public API).
    mode : {"raise", "drop", "wrap", "clip"}
        The out-of-range mode the indices were validated with.

    Attributes
    ----------
    index_shape : tuple of int
        Shape I of the edge index (the shape of each index array).
    src_dims : tuple of int
        Shape S of the source rows addressed by the gather index.
    dims : tuple of int
        Shape D of the destination rows addressed by the scatter index.
    size, src_size : int
        Destination rows ``prod(dims)`` and source rows ``prod(src_dims)``.
    mode : str
        The out-of-range mode the plan was validated with.
    n_edges : int
        Number of edges (``prod(index_shape)``), dropped ones included.
    counts : ndarray of int64, shape (prod(D),)
        Edges per destination row (mean's divisor), dropped edges not counted.
    """

    def __init__(self, gather_plan, scatter_plan, mode: str):
        # the kernels trust what a plan holds (they check bounds, not meaning): its arrays live in immutable
        # buffers and its attributes cannot be rebound, so a plan stays the graph it was made from
        set_ = super().__setattr__
        set_("_gather_plan", gather_plan)
        set_("_scatter_plan", scatter_plan)
        set_("_cache", {})   # the grouping by source row, made at the first reverse pass; device copies (GPU)
        set_("index_shape", scatter_plan.shape)
        set_("src_dims", gather_plan.dims)
        set_("dims", scatter_plan.dims)
        set_("mode", mode)
        set_("size", scatter_plan.size)   # destination rows, prod(dims)
        set_("src_size", gather_plan.size)   # source rows, prod(src_dims)
        gather, scatter = _frozen(gather_plan.flat, scatter_plan.flat)
        set_("gather", gather)
        set_("scatter", scatter)
        set_("n_edges", self.gather.shape[0])
        indptr, edge_ids, cols = self._group(self.scatter, self.size, self.gather, self.src_size, "dim_size",
                                             scatter_plan, gather_plan)
        set_("indptr", indptr)
        set_("edge_ids", edge_ids)
        set_("cols", cols)
        set_("counts", _frozen(np.diff(indptr))[0])

    def __setattr__(self, name, value):
        raise AttributeError(f"a GatherScatterPlan is immutable: make a new one with gather_scatter_plan "
                             f"(cannot set {name!r})")

    def __delattr__(self, name):
        raise AttributeError(f"a GatherScatterPlan is immutable (cannot delete {name!r})")

    def __reduce__(self):
        # rebuilt through the constructor, so that a copy's arrays are frozen again (pickle would thaw them);
        # the cache (reverse grouping, device copies) is remade on first need
        return type(self), (self._gather_plan, self._scatter_plan, self.mode)

    def _group(self, key, size, other, other_size, size_arg, key_plan, other_plan):
        check_table_bytes((size + 1,), np.int64, size_arg, size)
        try:
            status, indptr, edge_ids, cols = fused_kernels.csr(key, size, other, other_size, self.mode in DROPPING)
        except MemoryError as err:   # NumPy's own message names only a shape
            raise MemoryError(f"{size_arg}={size!r} asks for more memory than can be allocated: {err}") from None
        if status >= 0:
            raise (key_plan if not 0 <= key[status] < size else other_plan).error(status)
        if edge_ids.shape[0] == self.n_edges and np.array_equal(edge_ids, np.arange(self.n_edges)):
            edge_ids = _NO_IDS   # already in destination order: the kernels read the weights in sequence
        return _frozen(indptr, edge_ids, cols)

    @property
    def transpose(self) -> tuple:
        """(indptr, edge_ids, cols) of the edges grouped by source row: the reverse pass's CSR (made once)."""
        if "transpose" not in self._cache:
            self._cache["transpose"] = self._group(self.gather, self.src_size, self.scatter, self.size, "src_size",
                                                   self._gather_plan, self._scatter_plan)
        return self._cache["transpose"]

    def valid_edges(self) -> np.ndarray:
        """The edges that take part: all unless ``mode="drop"`` dropped some.

        Returns
        -------
        ndarray of bool, shape (n_edges,)
            True for each edge whose two ends are in range.
        """
        return self._gather_plan.valid() & self._scatter_plan.valid()

    def __repr__(self) -> str:
        return (f"GatherScatterPlan(index_shape={self.index_shape}, src_dims={self.src_dims}, dims={self.dims}, "
                f"mode={self.mode!r}, edges={int(self.indptr[-1])} of {self.n_edges})")


def missing_index(gather_index, scatter_index) -> str:
    """Why gather_scatter has no usable pair of indices, with the cyscatter spelling of the usual port: PyG's
    ``edge_index`` of shape (2, E) passed whole, an op name in the scatter_index position."""
    if isinstance(scatter_index, str):
        said = (f"scatter_index={scatter_index!r} is a string: the op goes in the op position, after both index "
                "arrays: gather_scatter(src, gather_index, scatter_index, op) or op=...")
    else:
        said = "gather_scatter needs gather_index and scatter_index, or a plan"
    return said + edge_index_hint(gather_index)


def edge_index_hint(gather_index, arg: str = "gather_index") -> str:
    """"; <arg> has shape ...: split it ..." when `gather_index` looks like PyG's edge_index, (2, E), or its
    transpose (E, 2), given as an array or a nested list; "" otherwise."""
    if isinstance(gather_index, tuple) or gather_index is None or isinstance(gather_index, str):
        return ""
    try:
        shape = tuple(getattr(gather_index, "shape", None) or np.shape(gather_index))
    except (TypeError, ValueError):   # a ragged list: not an edge_index
        return ""
    if len(shape) != 2:
        return ""
    if shape[0] == 2:
        return (f"; {arg} has shape {shape}, as PyG's edge_index: split it, "
                "gather_scatter(src, edge_index[0], edge_index[1], op) gathers from the sources (row 0) and "
                "reduces into the targets (row 1)")
    if shape[1] == 2:
        return (f"; {arg} has shape {shape}, as PyG's edge_index transposed (one (source, target) pair per "
                "row): split it, gather_scatter(src, edges[:, 0], edges[:, 1], op)")
    return ""


def resolve(src, gather_index, scatter_index, plan, axis, dim_size, mode, xp=np, dims_arg: str = "dim_size"):
    """(plan, axis, batch shape B, feature shape F) for `src` of shape B + S + F: the given plan, checked
    against the other arguments, or one made from the indices. `dims_arg`: where `dim_size` came from, for a
    bound error ("grad_out.shape" where a reverse function read it)."""
    if plan is not None:
        if not isinstance(plan, GatherScatterPlan):
            raise TypeError(f"plan must be a GatherScatterPlan (from cyscatter.gather_scatter_plan), got "
                            f"{type(plan).__name__}")
        if gather_index is not None or scatter_index is not None:
            raise ValueError("pass either plan or gather_index and scatter_index, not both (the plan holds them)")
        if mode is not None and mode != plan.mode:
            raise ValueError(f"mode={mode!r} differs from the plan's mode {plan.mode!r}")
        if dim_size is not None and check_sizes(dim_size, "dim_size") != plan.dims:
            raise ValueError(f"dim_size={dim_size!r} differs from the plan's destination shape {plan.dims}")
    elif gather_index is None or scatter_index is None or isinstance(scatter_index, str):
        raise TypeError(missing_index(gather_index, scatter_index))
    m = len(plan.src_dims) if plan is not None else \
        (len(gather_index) if isinstance(gather_index, tuple) else 1)
    axis = normalize_axis(axis, src.ndim, m, array="src")
    src_dims = src.shape[axis:axis + m]
    if plan is None:
        plan = _edges_plan(gather_index, scatter_index, src_dims, dim_size, "raise" if mode is None else mode,
                           "src.shape", dims_arg)
    elif src_dims != plan.src_dims:
        raise ValueError(f"src shape {src.shape} has {src_dims} rows at axis {axis}, but the plan was made for "
                         f"src_size={plan.src_dims}")
    return plan, axis, src.shape[:axis], src.shape[axis + m:]


def check_weight(weight, index_shape: tuple, feat: tuple, op=None, arg: str = "weight", be=host):
    """`weight` as an array of shape I + W, W broadcasting against the leading feature dims F[:len(W)], with W's
    trailing 1s dropped (a weight of shape (E, 1) scales whole rows: one weight per edge, not one per feature);
    None stays None; the array is one of backend `be`. Returns (weight array, heads), heads = prod(F[:len(W)])."""
    if weight is None:
        return None, 1
    w = be.asarray(weight)
    if not holds_numbers(w.dtype):
        raise TypeError(f"{arg} must hold numbers, got dtype {w.dtype}")
    if op is not None:   # (a longdouble weight would otherwise be refused later as the messages' "src" dtype)
        op.check_dtype(w.dtype, arg)
    k = len(index_shape)
    lead = w.shape[k:]
    if w.shape[:k] != index_shape or len(lead) > len(feat) or \
            any(a not in (1, b) for a, b in zip(lead, feat)):
        raise ValueError(f"{arg} shape {w.shape} does not fit the edges: it must be the index shape {index_shape} "
                         f"followed by at most {len(feat)} dims that broadcast against the feature shape {feat}")
    while lead and lead[-1] == 1:
        lead = lead[:-1]
    return w.reshape(index_shape + lead), prod(feat[:len(lead)])




def value_dtype(src_dtype, w) -> np.dtype:
    """dtype of the messages ``w * src`` (NumPy's promotion), in native byte order; a bool or non-numeric src is
    refused as `scatter` refuses it, whatever the weight would promote it to."""
    if not holds_numbers(src_dtype):
        raise TypeError(f"src must hold numbers (integers, floats or complex), got dtype {src_dtype}")
    return native(src_dtype if w is None else np.result_type(src_dtype, w.dtype))


def weight_shaped(rows2, index_shape: tuple, feat: tuple, w, w_shape):
    """Per-edge (n, heads) values summed back onto the shape `w_shape` of the weight (over its broadcast dims; `w`
    is the weight with its trailing 1s dropped), or onto I when there is no weight."""
    k = len(index_shape)
    if w is None:
        return rows2.reshape(index_shape)
    full = rows2.reshape(index_shape + feat[:w.ndim - k])
    summed = tuple(k + i for i, s in enumerate(w.shape[k:]) if s == 1)
    return (full.sum(axis=summed, keepdims=True) if summed else full).reshape(w_shape)


def derivative_policy(op, vdtype, arrays: dict) -> tuple:
    """(dtype the derivatives are computed in, whether the messages must be materialised) for an op on messages
    of `vdtype` with the cotangents/tangents `arrays` (name: array); shared by the CPU and GPU reverse passes.

    Derivatives are real or complex: integers in float64, float16 in float32, else NumPy's promotion; a complex
    cotangent of a real output is refused (its imaginary part would be dropped). mul/div need the products of
    the other messages, integer max/min the integer messages themselves (their ties, -0.0 aside): both are
    materialised, and so are the NaN-skipping ops' messages (their NaN entries are what the core rules skip);
    the callers run their own fused kernels instead where they have them (the selecting ops: max/min,
    fmax/fmin, nansum/nanmean).
    """
    op.check_dtype(vdtype)
    for name, a in arrays.items():
        if a.dtype.kind == "c" and (op.ordered or vdtype.kind != "c"):
            raise TypeError(f"{name} is complex ({a.dtype}) but op {op.name!r} on {vdtype} values has a real output")
    dtype = np.result_type(vdtype, *[native(a.dtype) for a in arrays.values()])
    if is_bfloat16(dtype):   # as float16: derivatives in float32
        dtype = np.dtype(np.float32)
    dtype = np.dtype(np.float64) if dtype.kind in "iu" else np.dtype(np.float32) if dtype == np.float16 else dtype
    return dtype, bool(op.partials) or (op.ordered and vdtype.kind in "iu") or op.skips_nan


def dims_like(shaped, src, gather_index, scatter_index, axis):
    """The destination shape D read off an array shaped B + D + F (grad_out, out), as the core reverse functions
    read it off `out`; None (inferred from the index) when there is none or it has too few dims."""
    if shaped is None or gather_index is None or scatter_index is None:
        return None
    m_gather = len(gather_index) if isinstance(gather_index, tuple) else 1
    m_scatter = len(scatter_index) if isinstance(scatter_index, tuple) else 1
    axis = normalize_axis(axis, src.ndim, m_gather, array="src")
    shape = shape_of(shaped)
    return tuple(shape[axis:axis + m_scatter]) if len(shape) >= axis + m_scatter else None


def cast_like(result, like):
    """The gradient in the dtype of the value `like` it differentiates, when that is inexact (CPU or GPU arrays):
    a complex gradient of a real value is its real part (the derivative along the real direction), taken
    explicitly, so NumPy's ComplexWarning of a complex-to-real cast never reaches the caller."""
    dtype = like.dtype
    if float_kind(dtype) not in "fc":
        return result
    if result.dtype.kind == "c" and float_kind(dtype) != "c":
        result = result.real
    return result.astype(native(dtype), copy=False)


def gather_scatter_plan(gather_index: IndexLike, scatter_index: IndexLike | None = None, *,
                        src_size: DimSize | None = None,
                        dim_size: DimSize | None = None, mode: Mode = "raise", **porting: object) -> GatherScatterPlan:
    """Validate and group the edges of a graph once, for many `gather_scatter` calls and their reverse passes.

    Parameters
    ----------
    gather_index : int array of shape I, or tuple of int arrays all of shape I
        Source row of each edge (a tuple addresses several source axes, as NumPy advanced indexing).
    scatter_index : int array of shape I, or tuple of int arrays all of shape I
        Destination row of each edge.
    src_size : int or tuple of int, optional
        Source shape S addressed by `gather_index` (default: its largest entry + 1 per coordinate). Must equal
        the shape of the `src` rows the plan is later used with.
    dim_size : int or tuple of int, optional
        Destination shape D addressed by `scatter_index` (default: its largest entry + 1 per coordinate).
    mode : {"raise", "drop", "wrap", "clip", "normalize_drop"}, default "raise"
        Out-of-range entries of either index: "raise" raises IndexError naming the index, position and value;
        "drop" drops the whole edge (it contributes nothing and is not counted by mean); "wrap", "clip" and
        "normalize_drop" (negatives count from the end once, then as "drop") as in `scatter`.

    Returns
    -------
    GatherScatterPlan
        Holds the flattened indices, the CSR by destination row (indptr of ``prod(D) + 1`` int64, the edge
        order, the source rows: 8 bytes per edge each), the counts per destination row, and, built at the first
        reverse pass, the CSR by source row. Memory: 32 bytes per edge plus 16 per destination row (48 per
        edge while it is built); the CSR by source row adds 16 per edge plus 8 per source row.

    Raises
    ------
    TypeError
        A non-integer index; no `scatter_index` (naming PyG's ``edge_index`` split when `gather_index` looks like
        one).
    ValueError
        Index arrays of different shapes (both named), a bad `src_size`/`dim_size` or mode.
    IndexError
        An out-of-range entry under ``mode="raise"``.

    Examples
    --------
    >>> import numpy as np, cyscatter as cs
    >>> plan = cs.gather_scatter_plan(np.array([0, 1, 2, 2]), np.array([1, 0, 0, 1]), src_size=3, dim_size=2)
    >>> cs.gather_scatter(np.array([[1.], [2.], [4.]]), op="add", plan=plan)
    array([[6.],
           [5.]])
    """
    if porting:
        raise unexpected_keywords("gather_scatter_plan", porting)
    if scatter_index is None or isinstance(scatter_index, str):   # required: None only to name the usual port
        raise TypeError("gather_scatter_plan() missing 1 required positional argument: 'scatter_index'"
                        + edge_index_hint(gather_index))
    for name, index in (("gather_index", gather_index), ("scatter_index", scatter_index)):
        # what the functions that take arrays check of their arguments (`backend_of`): a masked entry would be
        # read as an edge, another library's array is named
        members = index if type(index) is tuple else (index,)
        for i, member in enumerate(members):
            if type(member) is not np.ndarray and not np.isscalar(member):
                check_foreign(name if len(members) == 1 else f"{name}[{i}]", member)
    return _edges_plan(gather_index, scatter_index, src_size, dim_size, mode, "src_size")


def _edges_plan(gather_index, scatter_index, src_size, dim_size, mode: str, src_size_arg: str,
                dims_arg: str = "dim_size") -> GatherScatterPlan:
    """`gather_scatter_plan`'s checks and plan; `src_size_arg` and `dims_arg` name where the source and
    destination sizes came from in a bound error (the arguments, or the shape of src, out or grad_out)."""
    check_mode(mode)
    gather_coords = parse_coords(gather_index, "gather_index")
    scatter_coords = parse_coords(scatter_index, "scatter_index")
    if index_shape(gather_coords) != index_shape(scatter_coords):
        raise ValueError(f"gather_index has shape {index_shape(gather_coords)} but scatter_index has shape "
                         f"{index_shape(scatter_coords)}: one entry of each per edge")
    gather_plan = plan_index(None, src_size, mode, arg="gather_index", dims_arg=src_size_arg, coords=gather_coords)
    scatter_plan = plan_index(None, dim_size, mode, arg="scatter_index", dims_arg=dims_arg,
                              coords=scatter_coords)
    return GatherScatterPlan(gather_plan, scatter_plan, mode)


def rule_inputs(call, msgs):
    """(messages, out) for `scatter`'s rules on a reverse call's materialised messages (CPU and GPU `_Call`s):
    integer max/min/fmax/fmin's in their integer dtype (`call._exact`, kept by its `messages`), whose winners the
    rules then compare as integers (float64 rounds above 2**53 and would tie distinct values); `msgs` and the
    derivative-dtype out otherwise."""
    if call.op.selects and call.vdtype.kind in "iu" and call.out_raw is not None and call.out_raw.dtype.kind in "iu":
        return call._exact, call.out_raw.reshape(call.outer, call.plan.size, call.inner)
    return msgs, call.out3

