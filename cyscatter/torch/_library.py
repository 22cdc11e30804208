"""cyscatter's functions as ``torch.library`` custom ops (namespace ``cyscatter::``), each with a fake kernel.

The real kernels hand the tensors' memory to cyscatter (`_bridge.array`) and wrap its result (`_bridge.tensor`);
the fake kernels give the result's shape and dtype only, so ``torch.compile(fullgraph=True)`` traces a call
without running it. Every argument is canonical here: the wrappers in `native` resolved `dim_size`, the axis
and the op name, so a fake kernel never needs the data. The reverse functions are custom ops too
(`_reverse_ops`), so the backward passes trace as well.
"""
from __future__ import annotations

import torch

import cyscatter as cs
from cyscatter.torch._bridge import array, plan_of, result_dtype, tensor

lib = torch.library


def _rows(shape, axis: int, n_index_dims: int, size: int) -> list[int]:
    """B + (size,) + F: the index dims of a B + I + F shape replaced by one dimension of `size`."""
    return [*shape[:axis], size, *shape[axis + n_index_dims:]]


# ---- scatter and gather -------------------------------------------------------------------------------------------

@lib.custom_op("cyscatter::scatter", mutates_args=())
def scatter(src: torch.Tensor, index: torch.Tensor, op: str, dim_size: int, axis: int, mode: str,
            fill_value: float | None) -> torch.Tensor:
    return tensor(cs.scatter(array(src), array(index), op, dim_size=dim_size, axis=axis, mode=mode,
                             fill_value=fill_value))


@scatter.register_fake
def _(src, index, op, dim_size, axis, mode, fill_value):
    return src.new_empty(_rows(src.shape, axis, index.dim(), dim_size),
                         dtype=result_dtype("scatter", src.dtype, op))


@lib.custom_op("cyscatter::scatter_out", mutates_args=("out",))
def scatter_out(src: torch.Tensor, index: torch.Tensor, op: str, out: torch.Tensor, axis: int, mode: str,
                fill_value: float | None) -> None:
    cs.scatter(array(src), array(index), op, out=array(out), axis=axis, mode=mode, fill_value=fill_value)


@scatter_out.register_fake
def _(src, index, op, out, axis, mode, fill_value):
    return None


@lib.custom_op("cyscatter::scatter_into", mutates_args=())
def scatter_into(dst: torch.Tensor, src: torch.Tensor, index: torch.Tensor, op: str, axis: int,
                 mode: str) -> torch.Tensor:
    out = array(dst).copy()
    cs.scatter_into(out, array(src), array(index), op, axis=axis, mode=mode)
    return tensor(out)


@scatter_into.register_fake
def _(dst, src, index, op, axis, mode):
    return torch.empty_like(dst)


@lib.custom_op("cyscatter::scatter_into_", mutates_args=("dst",))
def scatter_into_(dst: torch.Tensor, src: torch.Tensor, index: torch.Tensor, op: str, axis: int, mode: str) -> None:
    cs.scatter_into(array(dst), array(src), array(index), op, axis=axis, mode=mode)


@scatter_into_.register_fake
def _(dst, src, index, op, axis, mode):
    return None


@lib.custom_op("cyscatter::gather", mutates_args=())
def gather(src: torch.Tensor, index: torch.Tensor, axis: int, mode: str,
           fill_value: float | None) -> torch.Tensor:
    return tensor(cs.gather(array(src), array(index), axis=axis, mode=mode, fill_value=fill_value))


@gather.register_fake
def _(src, index, axis, mode, fill_value):
    return src.new_empty([*src.shape[:axis], *index.shape, *src.shape[axis + 1:]])


@lib.custom_op("cyscatter::gather_into_", mutates_args=("dst",))
def gather_into_(dst: torch.Tensor, src: torch.Tensor, index: torch.Tensor, axis: int, mode: str) -> None:
    cs.gather_into(array(dst), array(src), array(index), axis=axis, mode=mode)


@gather_into_.register_fake
def _(dst, src, index, axis, mode):
    return None


@lib.custom_op("cyscatter::gather_scatter", mutates_args=())
def gather_scatter(src: torch.Tensor, gather_index: torch.Tensor | None, scatter_index: torch.Tensor | None,
                   weight: torch.Tensor | None, op: str, dim_size: int, axis: int, mode: str | None,
                   plan: int) -> torch.Tensor:
    return tensor(cs.gather_scatter(array(src), array(gather_index), array(scatter_index), op, weight=array(weight),
                                    dim_size=None if plan else dim_size, axis=axis, mode=mode, plan=plan_of(plan)))


@gather_scatter.register_fake
def _(src, gather_index, scatter_index, weight, op, dim_size, axis, mode, plan):
    dtype = result_dtype("gather_scatter", src.dtype, op)
    if weight is not None:
        dtype = torch.promote_types(dtype, weight.dtype)
    return src.new_empty(_rows(src.shape, axis, 1, dim_size), dtype=dtype)


# ---- segments -----------------------------------------------------------------------------------------------------

@lib.custom_op("cyscatter::segment", mutates_args=())
def segment(src: torch.Tensor, indptr: torch.Tensor, op: str, axis: int,
            fill_value: float | None) -> torch.Tensor:
    return tensor(cs.segment(array(src), array(indptr), op, axis=axis, fill_value=fill_value))


@segment.register_fake
def _(src, indptr, op, axis, fill_value):
    return src.new_empty(_rows(src.shape, axis, 1, indptr.shape[-1] - 1),
                         dtype=result_dtype("segment", src.dtype, op))


@lib.custom_op("cyscatter::gather_segment", mutates_args=())
def gather_segment(src: torch.Tensor, indptr: torch.Tensor, axis: int, total: int) -> torch.Tensor:
    return tensor(cs.gather_segment(array(src), array(indptr), axis=axis))


@gather_segment.register_fake
def _(src, indptr, axis, total):
    return src.new_empty(_rows(src.shape, axis, 1, total))


# ---- group statistics ---------------------------------------------------------------------------------------------

@lib.custom_op("cyscatter::softmax", mutates_args=())
def softmax(src: torch.Tensor, index: torch.Tensor, kind: str, dim_size: int, axis: int,
            mode: str) -> torch.Tensor:
    """kind: "softmax", "log_softmax" (shaped like src; dim_size -1: inferred) or "logsumexp" (one row per
    group)."""
    return tensor(getattr(cs, f"scatter_{kind}")(array(src), array(index), dim_size=None if dim_size < 0 else dim_size,
                                                 axis=axis, mode=mode))


@softmax.register_fake
def _(src, index, kind, dim_size, axis, mode):
    dtype = result_dtype(kind, src.dtype)
    if kind == "logsumexp":
        return src.new_empty(_rows(src.shape, axis, index.dim(), dim_size), dtype=dtype)
    return src.new_empty(src.shape, dtype=dtype)


@lib.custom_op("cyscatter::moment", mutates_args=())
def moment(src: torch.Tensor, index: torch.Tensor, kind: str, ddof: float, dim_size: int, axis: int,
           mode: str) -> torch.Tensor:
    """kind: "var", "std", "nanvar" or "nanstd"."""
    return tensor(getattr(cs, f"scatter_{kind}")(array(src), array(index), ddof=ddof, dim_size=dim_size, axis=axis,
                                                 mode=mode))


@moment.register_fake
def _(src, index, kind, ddof, dim_size, axis, mode):
    return src.new_empty(_rows(src.shape, axis, index.dim(), dim_size), dtype=result_dtype(kind, src.dtype))


@lib.custom_op("cyscatter::argext", mutates_args=())
def argext(src: torch.Tensor, index: torch.Tensor, kind: str, dim_size: int, axis: int, mode: str,
           fill_value: int | None) -> torch.Tensor:
    """kind: "argmax", "argmin", "nanargmax" or "nanargmin"; int64 positions along `axis`."""
    return tensor(getattr(cs, f"scatter_{kind}")(array(src), array(index), dim_size=dim_size, axis=axis, mode=mode,
                                                 fill_value=fill_value))


@argext.register_fake
def _(src, index, kind, dim_size, axis, mode, fill_value):
    return src.new_empty(_rows(src.shape, axis, index.dim(), dim_size), dtype=torch.int64)


@lib.custom_op("cyscatter::count", mutates_args=())
def count(index: torch.Tensor, dim_size: int, mode: str) -> torch.Tensor:
    return tensor(cs.scatter_count(array(index), dim_size, mode=mode))


@count.register_fake
def _(index, dim_size, mode):
    return index.new_empty([dim_size], dtype=torch.int64)


@lib.custom_op("cyscatter::logical", mutates_args=())
def logical(src: torch.Tensor, index: torch.Tensor, kind: str, dim_size: int, axis: int, mode: str) -> torch.Tensor:
    """kind: "any" or "all"."""
    return tensor(getattr(cs, f"scatter_{kind}")(array(src), array(index), dim_size=dim_size, axis=axis, mode=mode))


@logical.register_fake
def _(src, index, kind, dim_size, axis, mode):
    return src.new_empty(_rows(src.shape, axis, index.dim(), dim_size), dtype=torch.bool)


@lib.custom_op("cyscatter::scan", mutates_args=())
def scan(src: torch.Tensor, index: torch.Tensor, op: str, dim_size: int, axis: int, mode: str, exclusive: bool,
         reverse: bool) -> torch.Tensor:
    return tensor(cs.scatter_scan(array(src), array(index), op, dim_size=dim_size, axis=axis, mode=mode,
                                  exclusive=exclusive, reverse=reverse))


@scan.register_fake
def _(src, index, op, dim_size, axis, mode, exclusive, reverse):
    return src.new_empty(src.shape, dtype=result_dtype("scan", src.dtype, op))


@lib.custom_op("cyscatter::quantile", mutates_args=())
def quantile(src: torch.Tensor, index: torch.Tensor, q: float, nan: bool, method: str, dim_size: int, axis: int,
             mode: str, fill_value: float | None) -> torch.Tensor:
    """`cyscatter.scatter_quantile` (nan: `scatter_nanquantile`) of one scalar q; method "median" is `scatter`'s op
    "median" / "nanmedian" (np.median's mean of the middle pair, bit for bit), whose derivatives are those of
    q = 0.5, "linear"."""
    if method == "median":
        return tensor(cs.scatter(array(src), array(index), "nanmedian" if nan else "median", dim_size=dim_size,
                                 axis=axis, mode=mode, fill_value=fill_value))
    fn = cs.scatter_nanquantile if nan else cs.scatter_quantile
    return tensor(fn(array(src), array(index), q, method=method, dim_size=dim_size, axis=axis, mode=mode,
                     fill_value=fill_value))


@quantile.register_fake
def _(src, index, q, nan, method, dim_size, axis, mode, fill_value):
    return src.new_empty(_rows(src.shape, axis, index.dim(), dim_size), dtype=result_dtype("quantile", src.dtype))
