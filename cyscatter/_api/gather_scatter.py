"""gather_scatter: message passing in one pass, and the plan that pays for the edge preprocessing once per graph.

``gather_scatter(src, gather_index, scatter_index, op, weight=w)`` equals
``scatter(gather(src, gather_index) * w, scatter_index, op)`` without the E x F message matrix: the edges are
grouped by destination row (CSR, a stable counting sort, so each row keeps index order) and each destination row
is reduced in one pass over its edges, reading the source rows it needs. A `GatherScatterPlan` keeps that grouping
(and the one by source row, for the reverse pass) for a graph used many times.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from cyscatter._api.quantile_edges import gather_scatter_order_stat
from cyscatter._arrays.keywords import unexpected_keywords
from cyscatter._docs import fill_doc
from cyscatter._plan.edges import GatherScatterPlan
from cyscatter._plan.prepare import prepare
from cyscatter._registry.ops import ORDER_STATS
from cyscatter._runtime.threads import check_threads

if TYPE_CHECKING:
    from typing import Any, SupportsIndex

    from cyscatter._typing import ArrayInput, DimSize, FillValue, IndexLike, Mode, OpLike


@fill_doc
def gather_scatter(src: ArrayInput, gather_index: IndexLike | None = None, scatter_index: IndexLike | None = None,
                   op: OpLike = "add", *, weight: ArrayInput | None = None, dim_size: DimSize | None = None,
                   axis: SupportsIndex = 0, fill_value: FillValue | None = None, mode: Mode | None = None,
                   plan: GatherScatterPlan | None = None, num_threads: SupportsIndex | None = None,
                   **porting: object) -> Any:
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
    op : {{"add", "sub", "mul", "div", "max", "min", "mean", "sqrt_n", "nansum", "nanprod", "fmax", "fmin", \
"nanmean", "median", "nanmedian"}}, default "add"
        The reduction of each destination row's messages, as `scatter`'s op (aliases "sum", "prod", "amax",
        "amin", "nanadd", "nanmul", "nanmax", "nanmin"; median / nanmedian: ``np.median`` / ``np.nanmedian`` of
        each row's messages). Message-passing layers use add, mean, max and min
        (PyG's and DGL's aggregations). The assignments "set" / "last" and "first" are refused (ValueError):
        the fused kernels reduce messages; assign them with ``scatter(gather(src, gather_index), scatter_index,
        "set")``. The NaN-skipping ops
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
    {reduce_semantics}
    Without a plan each call validates the indices and groups the edges by destination (a stable counting sort,
    O(E), 48 bytes per edge at its peak); a plan does this once. Two exceptions to "each message rounded to the value
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
    if porting:
        raise unexpected_keywords("gather_scatter", porting)
    threads = check_threads(num_threads)
    if type(op) is str and op in ORDER_STATS:
        return gather_scatter_order_stat(src, gather_index, scatter_index, op, weight, dim_size, axis, fill_value,
                                         mode, plan)
    call = prepare("gather_scatter", src, (gather_index, scatter_index), op, weight=weight, plan=plan,
                   dim_size=dim_size, axis=axis, mode=mode, fill_value=fill_value)
    return (_BY_BACKEND.get(call.be.name) or _implementation(call.be)).forward(call, threads, num_threads)


# backend name -> the module that runs gather_scatter on that backend (at its first call: see `_implementation`)
_BY_BACKEND: dict = {}


def _implementation(be):
    """The module gather_scatter_<be.name> beside this one, which runs gather_scatter on backend `be` (its
    `forward`): imported at the first call on that backend (the CUDA one imports the kernel builder and is never
    imported for host arrays)."""
    module = _BY_BACKEND[be.name] = importlib.import_module(f"{__name__}_{be.name}")
    return module
