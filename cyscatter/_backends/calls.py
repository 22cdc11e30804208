"""Running a prepared call (`cyscatter._plan.prepare.Call`) on its backend: the scatter into a fresh table or a
given `out`, the scatter into `dst`, and the gathers. The call is valid already; nothing here checks arguments
again, except the index entries that only a kernel pass can see.
"""
from __future__ import annotations

from typing import Any

from cyscatter._backends import host
from cyscatter._backends.reduce import _reduce_into, _runner, finish_fresh, new_counts, run_counted


def scatter_fresh(call: Any, indices_are_sorted: bool = False, threads: int = 0) -> Any:
    """The allocating scatter: its result (a fresh array of the result's shape, or the caller's `out`)."""
    be, op, plan = call.be, call.op, call.plan
    shape3 = (call.outer, plan.size, call.inner)
    run = _runner(be, indices_are_sorted) if indices_are_sorted else be.run_scatter
    staged = _staged(call, run, op.counts or call.fill is not None)
    if call.direct:
        be.precheck(plan)   # under mode="raise", before `out` is written: the kernels then meet no bad entry
        counts = new_counts(op, shape3, be.xp, call.fill, plan.n)
        work3 = be.rows_in_place(call.target, call.compute, *shape3)   # any strides the kernels write in place
        work3[...] = op.identity(call.result_dtype)
        src3 = call.src_rows() if staged else _src_in_place(call)
        counts = run_counted(run, op, src3, plan, work3, counts, threads, split=True)
        finish_fresh(op, work3, counts, call.fill, call.result_dtype, be, threads)
        return call.given
    try:
        try:
            work3 = be.fresh_table(shape3, call.compute, call.identity)
        except ValueError as err:   # NumPy refuses a shape whose element count it cannot address, even of 0 bytes
            arg, given = call.size_arg
            raise ValueError(f"{arg}={given!r} asks for an output of shape {call.shape}, more elements than an "
                             f"array can hold ({err})") from None
        src3 = call.src_rows(work3.dtype) if staged else _src_in_place(call, work3.dtype)
        if op.counts or call.fill is not None:
            counts = run_counted(run, op, src3, plan, work3, new_counts(op, shape3, be.xp, call.fill, plan.n),
                                 threads, split=True)
            result = finish_fresh(op, work3, counts, call.fill, call.result_dtype, be, threads)
        else:   # no counts to make or finish with: the table is the result, cast once
            run(op, src3, plan, work3, None, threads)
            result = work3 if work3.dtype == call.result_dtype else be.rounded(work3, call.result_dtype)
    except MemoryError as err:   # NumPy's own message names only a shape
        arg, given = call.size_arg
        raise MemoryError(f"{arg}={given!r} asks for more memory than can be allocated: {err}") from None
    if call.target is not None:
        be.xp.copyto(call.target, result.reshape(call.target.shape))
        return call.given
    return result.reshape(call.shape)


def scatter_into(call: Any, indices_are_sorted: bool = False, threads: int = 0) -> Any:
    """The in-place scatter into the call's `dst`; returns the object the caller passed."""
    be, dst = call.be, call.target
    work3, direct = be.writable_rows(dst, call.compute, call.outer, call.plan.size, call.inner)
    op = call.op
    staged = _staged(call, _runner(be, indices_are_sorted), op.counts)
    _reduce_into(be, op, call.src_rows() if staged else _src_in_place(call), call.plan, work3,
                 indices_are_sorted, threads)
    if not direct:   # (a float16 / bfloat16 dst: rounded by the backend's loop, NumPy's bits and errors)
        back = be.rounded(work3, dst.dtype) if dst.dtype.itemsize == 2 and dst.dtype.kind in "fV" else work3
        be.xp.copyto(dst, back.reshape(dst.shape), casting="unsafe")
    return call.given


def _staged(call: Any, run: Any, counting: bool) -> bool:
    """Whether the scatter reads src in place (converting blocks of rows, `rows_source`): always but for an
    assignment's winner pass, and for a NaN-skipping op that counts (element counts: nanmean, a fill_value) off
    the host's own counting passes, which read such blocks too (the GPU's and the sorted-run kernel's take the
    whole array)."""
    op = call.op
    if op.winner:
        return False
    return not (op.skips_nan and counting) or run is host.run_scatter


def _src_in_place(call: Any, dtype: Any = None) -> Any:
    """src as (outer, rows, inner) for the runs that read any strides (assignments, gathers; `run_scatter`'s
    other kernels take it as `src3` gives it): src itself where it is of `dtype`, else `call.src3`'s copy."""
    if call.op is not None and not call.op.winner:
        return call.src3(dtype)
    dtype = call.compute if dtype is None else dtype
    rows = call.plan.size if call.gathers else call.plan.n
    a3 = call.be.rows_in_place(call.src, dtype, call.outer, rows, call.inner)
    return call.src3(dtype) if a3 is None else a3


def gather(call: Any, threads: int = 0) -> Any:
    """The allocating gather (into a fresh array, or the caller's `out`)."""
    be, plan = call.be, call.plan
    n3 = (call.outer, plan.n, call.inner)
    if call.direct:
        be.precheck(plan)   # under mode="raise", before `out` is written
        out3 = be.rows_in_place(call.target, call.target.dtype, *n3)   # any strides `run_gather` writes
        if plan.drops:   # zero bytes by default, as a fresh output: also '' for strings
            out3[...] = be.xp.zeros((), out3.dtype) if call.fill is None else call.fill
    elif plan.drops:
        out3 = be.xp.zeros(n3, call.compute)   # zero bytes: also '' for strings
        if call.fill is not None:
            out3[...] = call.fill
    else:
        out3 = be.xp.empty(n3, call.compute)
    be.run_gather(_src_in_place(call), plan, out3, threads)
    if call.target is None:
        return out3.reshape(call.shape)
    if not call.direct:
        be.xp.copyto(call.target, out3.reshape(call.target.shape))
    return call.given


def gather_into(call: Any, threads: int = 0) -> Any:
    """The in-place gather into the call's `dst`; returns the object the caller passed."""
    be, dst = call.be, call.target
    work3, direct = be.writable_rows(dst, dst.dtype, call.outer, call.plan.n, call.inner)
    be.run_gather(_src_in_place(call), call.plan, work3, threads)
    if not direct:
        be.xp.copyto(dst, work3.reshape(dst.shape))
    return call.given
