"""The group ops built from the core kernels (softmax family, moments): their calls planned by `prepare`'s
"group" kind, as the `Reverse` context their kernels and rules read."""
from __future__ import annotations

import operator

from cyscatter._backends.chunks import chunked_source
from cyscatter._backends.context import Reverse
from cyscatter._plan.prepare import float_dtypes, prepare

__all__ = ["float_dtypes", "group_view", "dst_shape", "src_shape"]


def group_view(name, src, index, dim_size, axis, mode, *, compute=None, complex_ok=False, src_arg="src",
               broadcast=True, dims_arg="dim_size", layout=False, contiguous=False):
    """(context, result dtype, batch shape B, feature shape F) of a group op on `src` (NumPy or CuPy).

    The context holds the validated index plan, `src` as (outer, n, inner) in the compute dtype (`compute`, or
    the `float_dtypes` rule; read in place and converted by chunks where the backend can: `Reverse.src_chunks`),
    and the core's take (gather) and put (scatter) helpers on the arrays' backend.
    `src_arg` is the argument that holds `src`, for the errors. `broadcast`: `src` may broadcast against the
    shape B + I + F it stands for (see `cyscatter._plan.layout.src_layout`); False where it must have that shape.
    `dims_arg`: what `dim_size` came from, for a bound error ("grad_out.shape" where a reverse function read it).
    `layout`: a Fortran-ordered or strided src is read by chunks too (`chunked_source`), not copied whole;
    `contiguous`: a C-ordered one too.
    """
    call = prepare("group", src, index, dim_size=dim_size, axis=axis, mode=mode, dtype=compute, name=name,
                   complex_ok=complex_ok, src_arg=src_arg, broadcast=broadcast, dims_arg=dims_arg)
    # src as the scatter kernels read it (a float16/bfloat16 src in place, or one only `src_chunks` reads: float16
    # to float64): `src3` converts it whole only for the families that ask for it, `src_chunks` a chunk at a time
    source = chunked_source(call.src, call.compute, call.outer, call.plan.n, call.inner, layout, contiguous)
    ctx = Reverse(call.be, call.plan, call.src3 if source is None else None, None, None, dtype=call.compute,
                  source=source)
    return ctx, call.result_dtype, call.batch, call.feat


def sizes_of_out(out, index, axis, dim_size, lead: int = 0) -> tuple:
    """(dim_size, dims_arg) for a group op given `out`: D read off `out`'s shape (as scatter's ``out=``) when no
    `dim_size` is given, its dims at the index position past `lead` leading dims (a quantile's q axis), named
    "out.shape" for the bound errors; `dim_size` itself where it is given, `axis` is negative or `out` has too few
    dims (D then inferred from the index, and `out` checked against it)."""
    shape = getattr(out, "shape", None)
    if shape is None or dim_size is not None:
        return dim_size, "dim_size"
    m = len(index) if isinstance(index, tuple) else 1
    start = operator.index(axis)
    if start < 0 or len(shape) < lead + start + m:
        return None, "dim_size"
    dims = tuple(int(d) for d in shape[lead + start:lead + start + m])
    return (dims[0] if m == 1 and not isinstance(index, tuple) else dims), "out.shape"


def dst_shape(ctx: Reverse, batch: tuple, feat: tuple) -> tuple:
    return batch + ctx.plan.dims + feat


def src_shape(ctx: Reverse, batch: tuple, feat: tuple) -> tuple:
    return batch + ctx.plan.shape + feat
