"""scatter_argmax and scatter_argmin: the position of each group's max/min winner."""
from __future__ import annotations

import numpy as np

from cyscatter import group_kernels
from cyscatter._canonical import prod, rows_view
from cyscatter._docs import fill_doc
from cyscatter._groups import require_host
from cyscatter._index import parse_coords, plan_index
from cyscatter._ops import get_op
from cyscatter._scatter import split_src


def _scatter_arg(name: str, src, index, dim_size, axis, mode) -> np.ndarray:
    require_host(f"scatter_arg{name}", src=src, index=index)
    op = get_op(name)
    src = np.asarray(src)
    compute = op.compute_dtype(op.result_dtype(src.dtype))
    coords = parse_coords(index)
    axis, batch, feat = split_src(src, coords, axis)
    plan = plan_index(index, dim_size, mode, coords=coords)
    outer, inner = prod(batch), prod(feat)
    best = np.full((outer, plan.size, inner), op.identity(compute), compute)
    arg = np.full((outer, plan.size, inner), plan.n, np.int64)
    src3 = rows_view(src, compute, outer, plan.n, inner)
    status = group_kernels.scatter_arg(op.opcode, src3, plan.flat, best, arg, plan.kernel_mode)
    if status >= 0:
        raise plan.error(status)
    return arg.reshape(batch + plan.dims + feat)


_DOC = """Position of each group's {which} winner: ``out[b, j, f] = k`` of the winning ``src[b, k, f]`` with
    ``index[k] == j``.

    The second result of pytorch_scatter's ``scatter_{which}`` (whose empty-group sentinel is n too), but
    deterministic: the winner follows the rules of ``scatter(..., "{which}")`` (NaN wins, {zero}) and
    ties go to the *smallest* position whatever the order of the updates (pytorch_scatter leaves ties on
    the GPU to timing).

    Parameters
    ----------
    src : array_like, shape B + I + F
        Integers or floats (complex has no order and raises TypeError).
    {{index}}
    dim_size : int or tuple of m ints, optional
        Destination shape D. Default: the largest entry + 1 per coordinate.
    {{axis}}
    {{mode}}

    Returns
    -------
    out : int64 ndarray, shape B + D + F
        Positions k in ``range(n)``, ``n = prod(I)``: the flat (C-order) position of the winner in the index,
        i.e. along the index dims of `src` (``np.unravel_index(k, I)`` for an n-d index). Empty groups, and
        groups whose every entry was dropped, get the sentinel ``n``, which is never a valid position.

    Raises
    ------
    {{raises}}

    Examples
    --------
    >>> import numpy as np, cyscatter as cs
    >>> cs.scatter_arg{which}(np.array([{example}]), np.array([0, 0, 2, 0]))
    array([{result}])
    """


def _arg_doc(which: str, zero: str, example: str, result: str):
    def decorate(func):
        func.__doc__ = _DOC.format(which=which, zero=zero, example=example, result=result)
        return fill_doc(func)
    return decorate


@_arg_doc("max", "+0.0 beats -0.0", "3., 5., 1., 5.", "1, 4, 2")
def scatter_argmax(src, index, *, dim_size=None, axis=0, mode="raise"):
    return _scatter_arg("max", src, index, dim_size, axis, mode)


@_arg_doc("min", "-0.0 beats +0.0", "3., 5., 1., 3.", "0, 4, 2")
def scatter_argmin(src, index, *, dim_size=None, axis=0, mode="raise"):
    return _scatter_arg("min", src, index, dim_size, axis, mode)
