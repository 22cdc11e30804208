"""gather_scatter: message passing in one pass, and the plan that pays for the edge preprocessing once per graph.

``gather_scatter(src, gather_index, scatter_index, op, weight=w)`` equals
``scatter(gather(src, gather_index) * w, scatter_index, op)`` without the E x F message matrix: the edges are
grouped by destination row (CSR, a stable counting sort, so each row keeps index order) and each destination row
is reduced in one pass over its edges, reading the source rows it needs. A `GatherScatterPlan` keeps that grouping
(and the one by source row, for the reverse pass) for a graph used many times.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, overload

import numpy as np

from cyscatter import fused_kernels, kernels
from cyscatter._backend import backend_of, host_asarray
from cyscatter._canonical import normalize_axis, prod, rows_view
from cyscatter._docs import fill_doc
from cyscatter._index import (DROPPING, check_mode, check_sizes, check_table_bytes, index_shape, parse_coords,
                              plan_index, sized_by)
from cyscatter._ops import OPS, get_op, holds_numbers, native, refuse_assignment
from cyscatter._scatter import fill_for, finish_fresh, scatter
from cyscatter._threads import check_threads

if TYPE_CHECKING:
    from typing import Any, SupportsIndex

    from numpy.typing import NDArray

    from cyscatter._typing import ArrayInput, DeviceArray, DeviceIndex, DimSize, FillValue, IndexLike, Mode, OpLike

_MIN_WORK = 32768   # element updates per thread below which fewer threads are used (as the core kernels)


def _frozen(a) -> np.ndarray:
    """A read-only int64 copy of `a` over an immutable buffer: its writeable flag cannot be set back."""
    a = np.ascontiguousarray(a, dtype=np.int64)
    return np.frombuffer(a.tobytes(), dtype=np.int64).reshape(a.shape)


_NO_IDS = _frozen(np.zeros(0, np.int64))


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
        set_("gather", _frozen(gather_plan.flat))
        set_("scatter", _frozen(scatter_plan.flat))
        set_("n_edges", self.gather.shape[0])
        indptr, edge_ids, cols = self._group(self.scatter, self.size, self.gather, self.src_size, "dim_size",
                                             scatter_plan, gather_plan)
        set_("indptr", indptr)
        set_("edge_ids", edge_ids)
        set_("cols", cols)
        set_("counts", _frozen(np.diff(indptr)))

    def __setattr__(self, name, value):
        raise AttributeError(f"a GatherScatterPlan is immutable: make a new one with gather_scatter_plan "
                             f"(cannot set {name!r})")

    def __delattr__(self, name):
        raise AttributeError(f"a GatherScatterPlan is immutable (cannot delete {name!r})")

    @property
    def size(self) -> int:
        """Destination rows, ``prod(dims)``."""
        return prod(self.dims)

    @property
    def src_size(self) -> int:
        """Source rows, ``prod(src_dims)``."""
        return prod(self.src_dims)

    def _group(self, key, size, other, other_size, size_arg, key_plan, other_plan):
        check_table_bytes((size + 1,), np.int64, size_arg, size)
        with sized_by(size_arg, size):
            status, indptr, edge_ids, cols = fused_kernels.csr(key, size, other, other_size, self.mode in DROPPING)
        if status >= 0:
            raise (key_plan if not 0 <= key[status] < size else other_plan).error(status)
        if edge_ids.shape[0] == self.n_edges and np.array_equal(edge_ids, np.arange(self.n_edges)):
            edge_ids = _NO_IDS   # already in destination order: the kernels read the weights in sequence
        return _frozen(indptr), _frozen(edge_ids), _frozen(cols)

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


def gather_scatter_plan(gather_index: IndexLike, scatter_index: IndexLike, *, src_size: DimSize | None = None,
                        dim_size: DimSize | None = None, mode: Mode = "raise") -> GatherScatterPlan:
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
        reverse pass, the CSR by source row. Memory: about 24 bytes per edge plus 8 per row, each way.

    Raises
    ------
    TypeError
        A non-integer index.
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
    check_mode(mode)
    gather_coords = parse_coords(gather_index, "gather_index")
    scatter_coords = parse_coords(scatter_index, "scatter_index")
    if index_shape(gather_coords) != index_shape(scatter_coords):
        raise ValueError(f"gather_index has shape {index_shape(gather_coords)} but scatter_index has shape "
                         f"{index_shape(scatter_coords)}: one entry of each per edge")
    gather_plan = plan_index(None, src_size, mode, arg="gather_index", dims_arg="src_size", coords=gather_coords)
    scatter_plan = plan_index(None, dim_size, mode, arg="scatter_index", dims_arg="dim_size",
                              coords=scatter_coords)
    return GatherScatterPlan(gather_plan, scatter_plan, mode)


def resolve(src, gather_index, scatter_index, plan, axis, dim_size, mode, xp=np):
    """(plan, axis, batch shape B, feature shape F) for `src` of shape B + S + F: the given plan, checked
    against the other arguments, or one made from the indices."""
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
    elif gather_index is None or scatter_index is None:
        raise TypeError("gather_scatter needs gather_index and scatter_index, or a plan")
    m = len(plan.src_dims) if plan is not None else \
        (len(gather_index) if isinstance(gather_index, tuple) else 1)
    axis = normalize_axis(axis, src.ndim, m, array="src")
    src_dims = src.shape[axis:axis + m]
    if plan is None:
        plan = gather_scatter_plan(gather_index, scatter_index, src_size=src_dims, dim_size=dim_size,
                                   mode="raise" if mode is None else mode)
    elif src_dims != plan.src_dims:
        raise ValueError(f"src shape {src.shape} has {src_dims} rows at axis {axis}, but the plan was made for "
                         f"src_size={plan.src_dims}")
    return plan, axis, src.shape[:axis], src.shape[axis + m:]


def check_weight(weight, index_shape: tuple, feat: tuple, op=None, arg: str = "weight", xp=np):
    """`weight` as an array of shape I + W, W broadcasting against the leading feature dims F[:len(W)], with W's
    trailing 1s dropped (a weight of shape (E, 1) scales whole rows: one weight per edge, not one per feature);
    None stays None. Returns (weight array, heads), heads = prod(F[:len(W)])."""
    if weight is None:
        return None, 1
    w = host_asarray(weight) if xp is np else xp.asarray(weight)
    if not holds_numbers(w.dtype):
        raise TypeError(f"{arg} must hold numbers, got dtype {w.dtype}")
    if op is not None and op.ordered and w.dtype.kind == "c":
        raise TypeError(f"op {op.name!r} needs ordered values; {arg} dtype {w.dtype} is complex")
    k = len(index_shape)
    lead = w.shape[k:]
    if w.shape[:k] != index_shape or len(lead) > len(feat) or \
            any(a not in (1, b) for a, b in zip(lead, feat)):
        raise ValueError(f"{arg} shape {w.shape} does not fit the edges: it must be the index shape {index_shape} "
                         f"followed by at most {len(feat)} dims that broadcast against the feature shape {feat}")
    while lead and lead[-1] == 1:
        lead = lead[:-1]
    return w.reshape(index_shape + lead), prod(feat[:len(lead)])


def weight_rows(w, index_shape: tuple, feat: tuple, heads: int, dtype, xp=np):
    """The weight as a C-contiguous (n_edges, heads) array of `dtype` (broadcast head dims materialised)."""
    k = len(index_shape)
    full = xp.broadcast_to(w, index_shape + feat[:w.ndim - k])
    return xp.ascontiguousarray(full.reshape(prod(index_shape), heads), dtype=dtype)


def team(threads: int, work: int) -> int:
    """Threads for a call of `work` element updates (0: the process default), fewer for small work."""
    t = threads if threads > 0 else kernels.get_num_threads()
    return max(1, min(t, work // _MIN_WORK, 256))


def value_dtype(src_dtype, w) -> np.dtype:
    """dtype of the messages ``w * src`` (NumPy's promotion), in native byte order; a bool or non-numeric src is
    refused as `scatter` refuses it, whatever the weight would promote it to."""
    if not holds_numbers(src_dtype):
        raise TypeError(f"src must hold numbers (integers, floats or complex), got dtype {src_dtype}")
    return native(src_dtype if w is None else np.result_type(src_dtype, w.dtype))


@overload
def gather_scatter(src: DeviceArray, gather_index: IndexLike | None = ..., scatter_index: IndexLike | None = ...,
                   op: OpLike = ..., *, weight: ArrayInput | None = ..., dim_size: DimSize | None = ...,
                   axis: SupportsIndex = ..., fill_value: FillValue | None = ..., mode: Mode | None = ...,
                   plan: GatherScatterPlan | None = ..., num_threads: SupportsIndex | None = ...) -> Any: ...


@overload
def gather_scatter(src: ArrayInput, gather_index: DeviceIndex, scatter_index: IndexLike | None = ..., op: OpLike = ...,
                   *, weight: ArrayInput | None = ..., dim_size: DimSize | None = ..., axis: SupportsIndex = ...,
                   fill_value: FillValue | None = ..., mode: Mode | None = ..., plan: GatherScatterPlan | None = ...,
                   num_threads: SupportsIndex | None = ...) -> Any: ...


@overload
def gather_scatter(src: ArrayInput, gather_index: IndexLike | None = ..., scatter_index: IndexLike | None = ...,
                   op: OpLike = ..., *, weight: ArrayInput | None = ..., dim_size: DimSize | None = ...,
                   axis: SupportsIndex = ..., fill_value: FillValue | None = ..., mode: Mode | None = ...,
                   plan: GatherScatterPlan | None = ..., num_threads: SupportsIndex | None = ...) -> NDArray[Any]: ...


@fill_doc
def gather_scatter(src: ArrayInput, gather_index: IndexLike | None = None, scatter_index: IndexLike | None = None,
                   op: OpLike = "add", *, weight: ArrayInput | None = None, dim_size: DimSize | None = None,
                   axis: SupportsIndex = 0, fill_value: FillValue | None = None, mode: Mode | None = None,
                   plan: GatherScatterPlan | None = None, num_threads: SupportsIndex | None = None) -> Any:
    """Gather rows along the edges and scatter-reduce them into destination rows, in one pass (message passing).

    ``out[b, scatter_index[e], f] = op(out[b, scatter_index[e], f], weight[e] * src[b, gather_index[e], f])``:
    the same result as ``scatter(gather(src, gather_index) * weight[..., None], scatter_index, op)`` (bitwise:
    every destination row receives its messages in edge order, each rounded to the value dtype), without the
    E x F message matrix. PyG's ``propagate``/``spmm``, DGL's ``u_mul_e_sum`` (``update_all``), a sparse-dense
    product ``A @ src`` for add. Each destination row is owned by one thread: no atomics, the same bits on any
    thread count.

    Parameters
    ----------
    src : array_like, shape B + S + F
        Source rows (node features); B = ``src.shape[:axis]`` batch dims, S the shape the gather index
        addresses, F feature dims.
    gather_index, scatter_index : int array of shape I, or tuple of int arrays all of shape I
        Source and destination row of each edge (an integer array addresses one axis, a tuple of m arrays m
        axes). Omit both when `plan` is given.
    {op}
        Message-passing layers use add ("sum"), mean, max and min (PyG's and DGL's aggregations). The
        assignments "set" / "last" and "first" are refused (ValueError): the fused kernels reduce messages;
        assign them with ``scatter(gather(src, gather_index), scatter_index, "set")``. The NaN-skipping ops
        (nansum, nanprod, nanmean, fmax/nanmax, fmin/nanmin) test NaN on the message ``weight[e] * src[...]``,
        the value that is scattered: a NaN in `src` or in `weight`, or ``inf * 0``, makes a NaN message, which is
        left out; an output element whose messages are all NaN is an empty group (the identity, or
        `fill_value`), and nanmean divides by each element's non-NaN messages (counted by the kernel as it
        reduces, on the CPU and on CuPy arrays: no E x F array).
    weight : array_like, shape I + W, optional
        Scales each message: one number per edge (W empty: GCN normalisation, edge weights), or per edge and
        leading feature dims (W broadcasting against ``F[:len(W)]``: per attention head). Integer or float;
        the messages take NumPy's promoted dtype of `src` and `weight`.
    {dim_size}
    {axis}
    fill_value : scalar, optional
        Value of the destination rows no edge reaches (default: the op's identity; 0 for mean); for the
        NaN-skipping ops, of the output elements whose messages are all NaN too.
    mode : {{"raise", "drop", "wrap", "clip", "normalize_drop"}}, optional
        Out-of-range entries of either index, as in `scatter` ("raise" by default); under "drop" (and
        "normalize_drop", once negatives are counted from the end) an edge with either end out of range is
        dropped whole. With a plan: the plan's mode (another one raises).
    plan : GatherScatterPlan, optional
        The edges grouped once (`gather_scatter_plan`): skips the per-call validation and counting sort.
    {threads}

    Returns
    -------
    out : ndarray, shape B + D + F
        The dtype of the messages (`src`, or NumPy's promotion of `src` and `weight`), except float64 for integer
        messages with div, mean, sqrt_n and nanmean.

    Raises
    ------
    TypeError
        Unknown op type, a non-integer index, an unsupported dtype of `src` or `weight` (bool, object; complex
        for max/min), a `plan` that is not a GatherScatterPlan, missing indices.
    ValueError
        Unknown op name or mode, an assignment op (set, last, first), index arrays of different shapes, a `weight` of the wrong shape, an `axis` that
        does not fit, a `src` whose rows differ from the plan's `src_size`, indices given together with a plan.
    IndexError
        An out-of-range entry of either index under ``mode="raise"`` (nothing is computed).

    Notes
    -----
    {semantics}
    Without a plan each call validates the indices and groups the edges by destination (a stable counting sort,
    O(E), 16 bytes per edge); a plan does this once. Two exceptions to "each message rounded to the value
    dtype": float16 and bfloat16 messages are computed and reduced in float32, not rounded one by one (max/min
    still give the composition's bits, since rounding keeps the order; sums are more accurate, can differ from
    the composition's in the last bit, and may not overflow where the composition does);
    integer messages that the kernels would widen (small integer dtypes, or div/mean) are formed as NumPy forms
    them, in their own dtype with its wrap-around, and so are materialised (E x F) before the scatter.

    Examples
    --------
    >>> import numpy as np, cyscatter as cs
    >>> x = np.array([[1., 10.], [2., 20.], [3., 30.]])          # 3 nodes, 2 features
    >>> senders, receivers = np.array([0, 1, 2, 2]), np.array([1, 0, 0, 1])
    >>> cs.gather_scatter(x, senders, receivers, "add")
    array([[ 5., 50.],
           [ 4., 40.]])
    >>> cs.gather_scatter(x, senders, receivers, "max", weight=np.array([1., 1., -1., 2.]))
    array([[ 2., 20.],
           [ 6., 60.]])
    """
    threads = check_threads(num_threads)
    op = get_op(op)
    refuse_assignment(op, "gather_scatter", "its fused kernels reduce messages with atomics or in registers")
    be = backend_of(src=src, gather_index=gather_index, scatter_index=scatter_index, weight=weight)
    if be.xp is not np:
        from cyscatter._gather_scatter_gpu import gather_scatter_gpu
        return gather_scatter_gpu(src, gather_index, scatter_index, op, weight=weight, dim_size=dim_size,
                                  axis=axis, fill_value=fill_value, mode=mode, plan=plan)
    if src is None:
        raise TypeError("src must be an array of numbers, got None")
    src = host_asarray(src)
    plan, axis, batch, feat = resolve(src, gather_index, scatter_index, plan, axis, dim_size, mode)
    w, heads = check_weight(weight, plan.index_shape, feat, op)
    vdtype = value_dtype(src.dtype, w)
    result_dtype = op.result_dtype(vdtype)
    fill = fill_for(fill_value, result_dtype)
    outer, inner = prod(batch), prod(feat)
    if w is not None and vdtype.kind in "iu" and op.compute_dtype(result_dtype) != vdtype:
        # integer messages the kernel would compute wider (small integers in int64, div and mean in float64)
        # than w * src wraps or rounds in its own dtype: the messages are formed as NumPy forms them
        msgs3, keep = messages(rows_view(src, vdtype, outer, plan.src_size, inner), plan, w, heads, feat, vdtype)
        out = scatter(msgs3, plan.scatter[keep], op, dim_size=plan.size, axis=1, fill_value=fill_value,
                      num_threads=num_threads)
        return out.reshape(batch + plan.dims + feat)
    out3 = op.fresh((outer, plan.size, inner), result_dtype)
    src3 = rows_view(src, out3.dtype, outer, plan.src_size, inner)
    counts = plan.counts if op.counts or fill is not None else None
    if counts is not None and op.skips_nan and out3.dtype.kind in "fc":
        # non-NaN messages per output element, counted by the kernel as it reduces (int32 below 2**31 edges, as
        # scatter's element counts): an element whose messages are all NaN is an empty group
        counts = np.zeros(out3.shape, np.int32 if plan.n_edges < 2**31 - 1 else np.int64)
        run_forward(op.opcode, src3, plan, w, heads, feat, out3, threads, counts=counts)
    else:
        run_forward(op.opcode, src3, plan, w, heads, feat, out3, threads)
    return finish_fresh(op, out3, counts, fill, result_dtype, threads=threads).reshape(batch + plan.dims + feat)


def messages(src3, plan, w, heads: int, feat: tuple, dtype):
    """(messages (outer, kept, inner) of the kept edges in `dtype`, their edge positions): the E x F matrix the
    fused kernels avoid, for the few cases that need it (integer messages, the mul/div reverse rules)."""
    keep = np.flatnonzero(plan.valid_edges())
    taken = src3[:, plan.gather[keep], :].astype(dtype, copy=False)
    if w is None:
        return taken, keep
    rows = weight_rows(w, plan.index_shape, feat, heads, dtype)[keep]
    return taken * np.repeat(rows, src3.shape[2] // max(heads, 1), axis=1)[None], keep


# op code of a NaN-skipping op -> its twin's: integers have no NaN, so they run the twin's kernel
_TWIN_OPCODES = {op.opcode: get_op(op.twin).opcode for op in OPS if op.skips_nan}
_NO_COUNTS = np.zeros((0, 0, 0), np.int32)


def run_forward(opcode, src3, plan, w, heads, feat, out3, threads, transpose: bool = False, counts=None) -> None:
    """The fused kernel from `src3` into `out3` (started at the identity) along the plan's CSR by destination,
    or, `transpose`, along its CSR by source (src3 then holds destination rows, out3 source rows). A NaN-skipping
    op on floats adds the non-NaN messages of each output element to `counts` (out3's shape) when given."""
    if out3.shape[0] == 0 or out3.shape[2] == 0:
        return   # no batch slice or no feature: nothing to compute (a head dim of length 0 included)
    indptr, edge_ids, cols = plan.transpose if transpose else (plan.indptr, plan.edge_ids, plan.cols)
    w2 = np.zeros((0, 1), out3.dtype) if w is None else weight_rows(w, plan.index_shape, feat, heads, out3.dtype)
    parts = team(threads, cols.shape[0] * out3.shape[0] * out3.shape[2])
    if opcode in _TWIN_OPCODES and out3.dtype.kind in "fc":
        status = fused_kernels.forward_nan(opcode, src3, indptr, cols, edge_ids, w2, w is not None, out3,
                                           _NO_COUNTS if counts is None else counts, counts is not None, parts)
    else:
        status = fused_kernels.forward(_TWIN_OPCODES.get(opcode, opcode), src3, indptr, cols, edge_ids, w2,
                                       w is not None, out3, parts)
    if status != -1:   # a plan validates everything the kernel checks; only a corrupted one gets here
        raise ValueError(f"the plan's edges do not fit src and out (kernel status {status})")
