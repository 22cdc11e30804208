"""One call that works for every public function of `cyscatter`, `cyscatter.dask` and `grad` (its baseline),
and how to make it: shared by the tests that vary one argument of every public call (the hostile campaign,
the array-interop test)."""
from __future__ import annotations

import importlib
import inspect
from typing import Callable

import numpy as np
import pytest

import cyscatter as cs

da = pytest.importorskip("dask.array")
csd = pytest.importorskip("cyscatter.dask")
csgrad = pytest.importorskip("grad")

# ---- the baselines: one call per public function that works --------------------------------------------------

SRC = np.array([1.0, 4.0, 2.0, 3.0])
IDX = np.array([0, 1, 0, 1])
PTR = np.array([0, 2, 2, 4])


def chunked(a):
    return da.from_array(a, chunks=2)


def signature(fn) -> inspect.Signature:
    """The parameters of a public function; an autograd primitive's are those of the function it wraps."""
    return inspect.signature(getattr(fn, "fun", fn))


def _forward(name, *args, **kwargs):
    return getattr(cs, name)(*args, **kwargs)


def _baselines() -> dict[str, Callable[[], dict]]:
    """Qualified name -> arguments of a call that works (fresh arrays each time)."""
    src, idx, ptr = SRC.copy, IDX.copy, PTR.copy
    lse = lambda: _forward("scatter_logsumexp", SRC, IDX, dim_size=3)   # noqa: E731
    sm = lambda: _forward("scatter_softmax", SRC, IDX, dim_size=3)   # noqa: E731
    lsm = lambda: _forward("scatter_log_softmax", SRC, IDX, dim_size=3)   # noqa: E731
    var = lambda: _forward("scatter_var", SRC, IDX, ddof=1, dim_size=3)   # noqa: E731
    std = lambda: _forward("scatter_std", SRC, IDX, ddof=1, dim_size=3)   # noqa: E731
    nanvar = lambda: _forward("scatter_nanvar", SRC, IDX, ddof=1, dim_size=3)   # noqa: E731
    nanstd = lambda: _forward("scatter_nanstd", SRC, IDX, ddof=1, dim_size=3)   # noqa: E731
    group = dict(dim_size=3, axis=0, mode="raise")
    base = {
        "cyscatter.scatter": lambda: dict(src=src(), index=idx(), op="max", dim_size=3, axis=0, fill_value=-1.0,
                                          dtype=None, out=None, mode="raise", indices_are_sorted=False,
                                          num_threads=2),
        "cyscatter.scatter_into": lambda: dict(dst=np.zeros(3), src=src(), index=idx(), op="max", axis=0,
                                               mode="raise", indices_are_sorted=False, num_threads=2),
        "cyscatter.gather": lambda: dict(src=src(), index=idx(), axis=0, mode="drop", fill_value=-1.0,
                                         dtype=None, out=None, num_threads=2),
        "cyscatter.gather_into": lambda: dict(dst=np.zeros(4), src=src(), index=idx(), axis=0, mode="raise",
                                              num_threads=2),
        "cyscatter.scatter_vjp_src": lambda: dict(op="max", grad_out=np.ones(3), src=src(), index=idx(),
                                                  out=_forward("scatter", SRC, IDX, "max", dim_size=3), dst=None,
                                                  axis=0, mode="raise"),
        "cyscatter.scatter_vjp_dst": lambda: dict(op="max", grad_out=np.ones(3), dst=np.full(3, 2.0), src=src(),
                                                  index=idx(), out=np.array([2.0, 4.0, 2.0]), axis=0, mode="raise"),
        "cyscatter.gather_vjp_src": lambda: dict(grad_out=np.ones(4), index=idx(), src_shape=(3,), axis=0,
                                                 mode="raise"),
        "cyscatter.scatter_jvp": lambda: dict(op="max", src=src(), index=idx(), out=np.array([2.0, 4.0, 2.0]),
                                              src_dot=np.ones(4), dst=np.full(3, 2.0), dst_dot=np.ones(3), axis=0,
                                              mode="raise"),
        "cyscatter.gather_jvp": lambda: dict(src_dot=src(), index=idx(), axis=0, mode="raise"),
        "cyscatter.get_op": lambda: dict(op="add"),
        "cyscatter.get_include": lambda: dict(),
        "cyscatter.set_num_threads": lambda: dict(num_threads=2),
        "cyscatter.get_num_threads": lambda: dict(),
        "cyscatter.scatter_argmax": lambda: dict(src=src(), index=idx(), fill_value=-1, **group),
        "cyscatter.scatter_argmin": lambda: dict(src=src(), index=idx(), fill_value=-1, **group),
        "cyscatter.scatter_nanargmax": lambda: dict(src=src(), index=idx(), fill_value=-1, **group),
        "cyscatter.scatter_nanargmin": lambda: dict(src=src(), index=idx(), fill_value=-1, **group),
        "cyscatter.scatter_count": lambda: dict(index=idx(), dim_size=3, mode="raise"),
        **{f"cyscatter.scatter_{kind}": (lambda: dict(src=src(), index=idx(), dim_size=3, axis=0, fill_value=True,
                                                      mode="raise", indices_are_sorted=False, num_threads=2))
           for kind in ("any", "all")},
        "cyscatter.scatter_scan": lambda: dict(src=src(), index=idx(), op="max", exclusive=False, reverse=False,
                                               **group),
        "cyscatter.scatter_scan_vjp": lambda: dict(op="max", grad_out=np.ones(4), src=src(), index=idx(),
                                                   exclusive=False, reverse=False, **group),
        "cyscatter.scatter_scan_jvp": lambda: dict(op="max", src=src(), index=idx(), src_dot=np.ones(4),
                                                   exclusive=False, reverse=False, **group),
        "cyscatter.scatter_logsumexp": lambda: dict(src=src(), index=idx(), out=None, **group),
        "cyscatter.scatter_softmax": lambda: dict(src=src(), index=idx(), out=None, **group),
        "cyscatter.scatter_log_softmax": lambda: dict(src=src(), index=idx(), out=None, **group),
        "cyscatter.scatter_var": lambda: dict(src=src(), index=idx(), ddof=1, **group),
        "cyscatter.scatter_std": lambda: dict(src=src(), index=idx(), ddof=1, **group),
        "cyscatter.scatter_nanvar": lambda: dict(src=src(), index=idx(), ddof=1, **group),
        "cyscatter.scatter_nanstd": lambda: dict(src=src(), index=idx(), ddof=1, **group),
        "cyscatter.segment": lambda: dict(src=src(), indptr=ptr(), op="max", axis=0, fill_value=-1.0, initial=-1.0),
        "cyscatter.gather_segment": lambda: dict(src=np.array([1.0, 2.0, 3.0]), indptr=ptr(), axis=0),
        "cyscatter.segment_ids": lambda: dict(indptr=ptr()),
        "cyscatter.scatter_multi": lambda: dict(src=src(), index=idx(), ops=("mean", "max", "std"), dim_size=3,
                                                axis=0, mode="raise", ddof=0),
        "cyscatter.segment_multi": lambda: dict(src=src(), indptr=ptr(), ops=("mean", "max", "std"), axis=0, ddof=0),
        "cyscatter.gather_scatter_multi": lambda: dict(src=src(), gather_index=idx(), scatter_index=idx(),
                                                       ops=("mean", "max", "std"), weight=np.ones(4), dim_size=3,
                                                       ddof=0),
        "cyscatter.gather_scatter_multi_vjp_src": lambda: dict(
            ops=("mean", "max"), grad_out=np.ones((3, 2)), src=src(), gather_index=idx(), scatter_index=idx(),
            out=_forward("gather_scatter_multi", SRC, IDX, IDX, ("mean", "max"), weight=np.ones(4), dim_size=3),
            weight=np.ones(4), ddof=0),
        "cyscatter.gather_scatter_multi_vjp_weight": lambda: dict(
            ops=("mean", "max"), grad_out=np.ones((3, 2)), src=src(), gather_index=idx(), scatter_index=idx(),
            out=_forward("gather_scatter_multi", SRC, IDX, IDX, ("mean", "max"), weight=np.ones(4), dim_size=3),
            weight=np.ones(4), ddof=0),
        "cyscatter.gather_scatter_multi_jvp": lambda: dict(
            ops=("mean", "max"), src=src(), gather_index=idx(), scatter_index=idx(),
            out=_forward("gather_scatter_multi", SRC, IDX, IDX, ("mean", "max"), weight=np.ones(4), dim_size=3),
            src_dot=np.ones(4), weight=np.ones(4), weight_dot=np.ones(4), ddof=0),
        "cyscatter.scatter_multi_vjp_src": lambda: dict(
            ops=("mean", "max", "std"), grad_out=np.ones((3, 3)), src=src(), index=idx(),
            out=_forward("scatter_multi", SRC, IDX, ("mean", "max", "std"), dim_size=3), axis=0, mode="raise",
            ddof=0),
        "cyscatter.scatter_multi_jvp": lambda: dict(
            ops=("mean", "max", "std"), src=src(), index=idx(),
            out=_forward("scatter_multi", SRC, IDX, ("mean", "max", "std"), dim_size=3), src_dot=np.ones(4), axis=0,
            mode="raise", ddof=0),
        "cyscatter.segment_multi_vjp_src": lambda: dict(
            ops=("mean", "max", "std"), grad_out=np.ones((3, 3)), src=src(), indptr=ptr(),
            out=_forward("segment_multi", SRC, PTR, ("mean", "max", "std")), axis=0, ddof=0),
        "cyscatter.segment_multi_jvp": lambda: dict(
            ops=("mean", "max", "std"), src=src(), indptr=ptr(),
            out=_forward("segment_multi", SRC, PTR, ("mean", "max", "std")), src_dot=np.ones(4), axis=0, ddof=0),
        "cyscatter.segment_ranges": lambda: dict(src=src(), starts=np.array([2, 0]), stops=np.array([4, 3]),
                                                 op="max", axis=0, fill_value=-1.0, initial=-1.0),
        "cyscatter.segment_ranges_vjp_src": lambda: dict(
            op="max", grad_out=np.ones(2), src=src(), starts=np.array([2, 0]), stops=np.array([4, 3]),
            out=_forward("segment_ranges", SRC, np.array([2, 0]), np.array([4, 3]), "max"), axis=0, initial=-1.0),
        "cyscatter.segment_ranges_jvp": lambda: dict(
            op="max", src=src(), starts=np.array([2, 0]), stops=np.array([4, 3]),
            out=_forward("segment_ranges", SRC, np.array([2, 0]), np.array([4, 3]), "max"), src_dot=np.ones(4),
            axis=0, initial=-1.0),
        "cyscatter.scatter_logsumexp_vjp": lambda: dict(grad_out=np.ones(3), src=src(), index=idx(), out=lse(),
                                                        axis=0, mode="raise"),
        "cyscatter.scatter_logsumexp_jvp": lambda: dict(src=src(), index=idx(), out=lse(), src_dot=np.ones(4),
                                                        axis=0, mode="raise"),
        "cyscatter.scatter_softmax_vjp": lambda: dict(grad_out=np.arange(4.0), out=sm(), index=idx(), **group),
        "cyscatter.scatter_softmax_jvp": lambda: dict(out=sm(), index=idx(), src_dot=np.arange(4.0), **group),
        "cyscatter.scatter_log_softmax_vjp": lambda: dict(grad_out=np.arange(4.0), out=lsm(), index=idx(),
                                                          **group),
        "cyscatter.scatter_log_softmax_jvp": lambda: dict(out=lsm(), index=idx(), src_dot=np.arange(4.0), **group),
        "cyscatter.scatter_var_vjp": lambda: dict(grad_out=np.ones(3), src=src(), index=idx(), out=var(), ddof=1,
                                                  axis=0, mode="raise"),
        "cyscatter.scatter_var_jvp": lambda: dict(src=src(), index=idx(), out=var(), src_dot=np.ones(4), ddof=1,
                                                  axis=0, mode="raise"),
        "cyscatter.scatter_std_vjp": lambda: dict(grad_out=np.ones(3), src=src(), index=idx(), out=std(), ddof=1,
                                                  axis=0, mode="raise"),
        "cyscatter.scatter_std_jvp": lambda: dict(src=src(), index=idx(), out=std(), src_dot=np.ones(4), ddof=1,
                                                  axis=0, mode="raise"),
        "cyscatter.scatter_nanvar_vjp": lambda: dict(grad_out=np.ones(3), src=src(), index=idx(), out=nanvar(),
                                                     ddof=1, axis=0, mode="raise"),
        "cyscatter.scatter_nanvar_jvp": lambda: dict(src=src(), index=idx(), out=nanvar(), src_dot=np.ones(4),
                                                     ddof=1, axis=0, mode="raise"),
        "cyscatter.scatter_nanstd_vjp": lambda: dict(grad_out=np.ones(3), src=src(), index=idx(), out=nanstd(),
                                                     ddof=1, axis=0, mode="raise"),
        "cyscatter.scatter_nanstd_jvp": lambda: dict(src=src(), index=idx(), out=nanstd(), src_dot=np.ones(4),
                                                     ddof=1, axis=0, mode="raise"),
        "cyscatter.segment_vjp_src": lambda: dict(op="max", grad_out=np.ones(3), src=src(), indptr=ptr(),
                                                  out=_forward("segment", SRC, PTR, "max"), axis=0, initial=-1.0),
        "cyscatter.segment_jvp": lambda: dict(op="max", src=src(), indptr=ptr(),
                                              out=_forward("segment", SRC, PTR, "max"), src_dot=np.ones(4), axis=0,
                                              initial=-1.0),
        "cyscatter.gather_segment_vjp_src": lambda: dict(grad_out=np.ones(4), indptr=ptr(), axis=0),
        # per-group order statistics: two quantiles, so the q axis leads the result
        **{f"cyscatter.scatter_{nan}quantile": (lambda: dict(src=src(), index=idx(), q=[0.25, 0.5], method="lower",
                                                             fill_value=-1.0, out=None, **group))
           for nan in ("", "nan")},
        **{f"cyscatter.scatter_{nan}quantile_vjp": (lambda: dict(grad_out=np.ones(3), src=src(), index=idx(),
                                                                 q=0.25, method="linear", axis=0, mode="raise"))
           for nan in ("", "nan")},
        **{f"cyscatter.scatter_{nan}quantile_jvp": (lambda: dict(src=src(), index=idx(), src_dot=np.ones(4),
                                                                 q=[0.25, 0.5], method="linear", **group))
           for nan in ("", "nan")},
        **{f"cyscatter.dask.scatter_{nan}quantile": (lambda: dict(
            src=chunked(SRC), index=chunked(IDX), q=[0.25, 0.5], method="lower", dim_size=3, axis=0,
            fill_value=-1.0, mode="raise", dim_chunks=2, split_every=2)) for nan in ("", "nan")},
        # message passing in one pass: edges (IDX -> IDX), one weight per edge
        "cyscatter.gather_scatter": lambda: dict(src=src(), gather_index=idx(), scatter_index=idx(), op="max",
                                                 weight=np.ones(4), dim_size=3, axis=0, fill_value=-1.0,
                                                 mode="raise", plan=None, num_threads=2),
        "cyscatter.gather_scatter_plan": lambda: dict(gather_index=idx(), scatter_index=idx(), src_size=4,
                                                      dim_size=3, mode="raise"),
        **{f"cyscatter.gather_scatter_{vjp}": (lambda: dict(
            op="max", grad_out=np.ones(3), src=src(), gather_index=idx(), scatter_index=idx(),
            out=_forward("gather_scatter", SRC, IDX, IDX, "max", dim_size=3), weight=np.ones(4), dim_size=3,
            axis=0, mode="raise", plan=None, num_threads=2)) for vjp in ("vjp_src", "vjp_weight")},
        "cyscatter.gather_scatter_jvp": lambda: dict(
            op="max", src=src(), gather_index=idx(), scatter_index=idx(),
            out=_forward("gather_scatter", SRC, IDX, IDX, "max", dim_size=3), src_dot=np.ones(4),
            weight=np.ones(4), weight_dot=np.ones(4), dim_size=3, axis=0, mode="raise", plan=None, num_threads=2),
        # Dask: src and index chunked in two
        "cyscatter.dask.scatter": lambda: dict(src=chunked(SRC), index=chunked(IDX), op="max", dim_size=3,
                                               axis=0, fill_value=-1.0, dtype=None, out=None, mode="raise",
                                               dim_chunks=2, split_every=2),
        "cyscatter.dask.gather": lambda: dict(src=chunked(SRC), index=chunked(IDX), axis=0, mode="drop",
                                              fill_value=-1.0, dtype=None, out=None),
        # one output block: nothing in the graph grows with dim_size
        "cyscatter.dask.scatter_argmax": lambda: dict(src=chunked(SRC), index=chunked(IDX), dim_size=3, axis=0,
                                                      fill_value=-1, mode="raise", dim_chunks=None, split_every=2),
        "cyscatter.dask.scatter_argmin": lambda: dict(src=chunked(SRC), index=chunked(IDX), dim_size=3, axis=0,
                                                      fill_value=-1, mode="raise", dim_chunks=None, split_every=2),
        "cyscatter.dask.scatter_nanargmax": lambda: dict(src=chunked(SRC), index=chunked(IDX), dim_size=3, axis=0,
                                                         fill_value=-1, mode="raise", dim_chunks=None, split_every=2),
        "cyscatter.dask.scatter_nanargmin": lambda: dict(src=chunked(SRC), index=chunked(IDX), dim_size=3, axis=0,
                                                         fill_value=-1, mode="raise", dim_chunks=None, split_every=2),
        "cyscatter.dask.scatter_count": lambda: dict(index=chunked(IDX), dim_size=3, mode="raise", split_every=2),
        "cyscatter.dask.scatter_scan": lambda: dict(src=chunked(SRC), index=chunked(IDX), op="max", dim_size=3,
                                                    axis=0, mode="raise", exclusive=True, reverse=True, dtype=None,
                                                    out=None),
        **{f"cyscatter.dask.scatter_{kind}": (lambda: dict(src=chunked(SRC), index=chunked(IDX), dim_size=3, axis=0,
                                                           fill_value=True, mode="raise", dim_chunks=2,
                                                           split_every=2))
           for kind in ("any", "all")},
    }
    # the other Dask functions take their in-memory namesakes' arguments, every array chunked in two
    dask_new = sorted(name for name in csd.__all__ if f"cyscatter.dask.{name}" not in base
                      and f"cyscatter.{name}" in base)
    for name in dask_new:
        core = base[f"cyscatter.{name}"]
        params = signature(getattr(csd, name)).parameters
        own = {k: p.default for k, p in params.items()   # the Dask-only arguments (dim_chunks, ...) at their defaults
               if p.default is not p.empty and f"cyscatter.{name}" in base and k not in core()}
        base[f"cyscatter.dask.{name}"] = (lambda core=core, params=params, own=own: {
            k: chunked(v) if isinstance(v, np.ndarray) and v.ndim else v
            for k, v in core().items() if k in params} | own)
    # grad: the autograd primitives take the arguments of their namesakes (without num_threads)
    for name in csgrad.__all__:
        core = base[f"cyscatter.{name}"]
        params = signature(getattr(csgrad, name)).parameters
        base[f"grad.{name}"] = (lambda core=core, params=params:
                                {k: v for k, v in core().items() if k in params})
    return base


BASELINES = _baselines()


def resolve(qualname: str):
    module, _, name = qualname.rpartition(".")
    return getattr(importlib.import_module(module), name)


def public_functions() -> list[str]:
    names = []
    for module in ("cyscatter", "cyscatter.dask", "grad"):
        mod = importlib.import_module(module)
        for name in mod.__all__:
            obj = getattr(mod, name)
            if callable(obj) and not isinstance(obj, type):
                names.append(f"{module}.{name}")
    return names


PUBLIC = public_functions()

def result(value):
    if isinstance(value, da.Array):
        return value.compute(scheduler="sync")
    return value



def call(function: str, kwargs: dict, compute: bool = True):
    """`function` called with `kwargs`; a lazy Dask result computed unless `compute` is False."""
    fn = resolve(function)
    params = signature(fn).parameters
    positional = [kwargs[p.name] for p in params.values() if p.kind == p.POSITIONAL_OR_KEYWORD and p.name in kwargs]
    keywords = {p.name: kwargs[p.name] for p in params.values() if p.kind == p.KEYWORD_ONLY and p.name in kwargs}
    try:
        got = fn(*positional, **keywords)
        return result(got) if compute else got
    finally:
        if function.endswith("set_num_threads"):
            cs.set_num_threads(None)
