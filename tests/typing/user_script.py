"""A user's script calling every public function of cyscatter, cyscatter.dask and grad.

Checked with ``mypy --strict`` (tests/toolchain/test_typing.py, .ci/run): it must type-check without errors, and the
results of host calls are NumPy arrays. It also runs (tests/toolchain/test_typing.py), so the calls are real ones.
"""
from __future__ import annotations

from typing import Any

import autograd.numpy as anp
import dask.array as da
import numpy as np
from autograd import grad as autograd_grad
from numpy.typing import NDArray

import cyscatter as cs
import cyscatter.dask as csd
import grad as csgrad
from cyscatter.typing import Mode, Op, ScanOp, ScatterOp

src: NDArray[np.float64] = np.array([1.0, 2.0, 3.0, 4.0])
index: NDArray[np.int64] = np.array([0, 2, 0, 2])
pair = (np.array([0, 1, 1, 0]), np.array([0, 0, 1, 1]))
indptr = np.array([0, 2, 2, 4])
op: ScatterOp = "max"
mode: Mode = "drop"


def check(a: NDArray[np.float64]) -> float:
    return float(a.sum())


# ---- cyscatter: forward ----------------------------------------------------------------------------------------
out: NDArray[np.float64] = cs.scatter(src, index, "add", dim_size=3, mode=mode)
out = cs.scatter(src, pair, op, dim_size=(2, 2), axis=0, fill_value=0.0, num_threads=1)
out = cs.scatter([1.0, 2.0], [0, 1], "mean", indices_are_sorted=True)
dst: NDArray[np.float64] = np.zeros(3)
same: NDArray[np.float64] = cs.scatter_into(dst, src, index, "sub", mode="wrap")
same = cs.scatter_into(dst, 1.0, index)   # a scalar src broadcasts
out = cs.scatter(1.0, index, dim_size=3)
gathered: NDArray[np.float64] = cs.gather(src, np.array([3, 0]), axis=-1, fill_value=-1.0)
gathered = cs.gather_into(np.zeros(2), src, np.array([1, 9]), mode="clip")
positions: NDArray[np.int64] = cs.scatter_argmax(src, index, dim_size=3)
positions = cs.scatter_argmin(src, index, mode="raise")
truth: NDArray[np.bool_] = cs.scatter_any(src, index, dim_size=3, fill_value=False)
truth = cs.scatter_all(src, pair, mode="drop", num_threads=1)
out = cs.scatter(src, index, "sqrt_n", dim_size=3)
positions = cs.scatter_nanargmax(src, index, fill_value=-1)
positions = cs.scatter_nanargmin(src, index, dim_size=3)
nansum: NDArray[np.float64] = cs.scatter(src, index, "nansum")
nanmax = cs.scatter(src, index, "nanmax", dim_size=3)
lse: NDArray[np.float64] = cs.scatter_logsumexp(src, index)
soft: NDArray[np.float64] = cs.scatter_softmax(src, index, dim_size=3)
logsoft: NDArray[np.float64] = cs.scatter_log_softmax(src, index)
var: NDArray[np.float64] = cs.scatter_var(src, index, ddof=1)
std: NDArray[np.float64] = cs.scatter_std(src, index, ddof=0.5)
var = cs.scatter_nanvar(src, index, ddof=1)
std = cs.scatter_nanstd(src, index)
med: NDArray[Any] = cs.scatter(src, index, "median", fill_value=0.0)
med = cs.scatter(src, index, "nanmedian")
quant: NDArray[Any] = cs.scatter_quantile(src, index, [0.25, 0.75], method="nearest")
quant = cs.scatter_nanquantile(src, index, 0.5, out=np.empty(3))
quant = cs.scatter_quantile_vjp(np.ones(3), src, index, 0.5)
quant = cs.scatter_nanquantile_jvp(src, index, np.ones_like(src), [0.5])
med = cs.segment(src, indptr, "median")
seg: NDArray[np.float64] = cs.segment(src, indptr, "min", fill_value=0.0)
back: NDArray[np.float64] = cs.gather_segment(seg, indptr)
ids: NDArray[np.int64] = cs.segment_ids(indptr)
batched: NDArray[np.float64] = cs.segment(np.ones((2, 4)), np.array([[0, 1, 4], [0, 4, 4]]), "add", axis=None)
running: NDArray[np.float64] = cs.scatter_scan(src, index, "max", exclusive=True, reverse=False)
running_op: ScanOp = "prod"
running = cs.scatter_scan(src, index, running_op, mode="drop")
plan: cs.GatherScatterPlan = cs.gather_scatter_plan(index, np.array([1, 0, 1, 0]), src_size=4, dim_size=2)
messages: NDArray[np.float64] = cs.gather_scatter(src, index, np.array([1, 0, 1, 0]), "add", weight=src)
messages = cs.gather_scatter(src, op="mean", plan=plan, num_threads=2)

# ---- cyscatter: reverse and forward derivatives ----------------------------------------------------------------
out = cs.scatter(src, index, "mul")
g = np.ones_like(out)
d_src: NDArray[np.float64] = cs.scatter_vjp_src("mul", g, src, index, out)
d_src = cs.scatter_vjp_src(cs.get_op("mul"), g, src, index, out, dst=None, axis=0, mode="raise")
d_dst: NDArray[np.float64] = cs.scatter_vjp_dst("add", g, np.zeros(3), src, index, out + 0)
d_gather: NDArray[np.float64] = cs.gather_vjp_src(np.ones(2), np.array([3, 0]), (4,))
tangent: NDArray[np.float64] = cs.scatter_jvp("mul", src, index, out, np.ones(4))
tangent = cs.gather_jvp(np.ones(4), np.array([3, 0]))
tangent = cs.scatter_logsumexp_vjp(np.ones(3), src, index, lse)
tangent = cs.scatter_logsumexp_jvp(src, index, lse, np.ones(4))
tangent = cs.scatter_softmax_vjp(np.ones(4), soft, index)
tangent = cs.scatter_softmax_jvp(soft, index, np.ones(4), dim_size=3)
tangent = cs.scatter_log_softmax_vjp(np.ones(4), logsoft, index)
tangent = cs.scatter_log_softmax_jvp(logsoft, index, np.ones(4))
tangent = cs.scatter_var_vjp(np.ones(3), src, index, var, ddof=1)
tangent = cs.scatter_var_jvp(src, index, var, np.ones(4), ddof=1)
tangent = cs.scatter_std_vjp(np.ones(3), src, index, std, ddof=0.5)
tangent = cs.scatter_std_jvp(src, index, std, np.ones(4), ddof=0.5)
tangent = cs.scatter_nanvar_vjp(np.ones(3), src, index, var, ddof=1)
tangent = cs.scatter_nanvar_jvp(src, index, var, np.ones(4), ddof=1, mode="drop")
tangent = cs.scatter_nanstd_vjp(np.ones(3), src, index, std, ddof=0.5, axis=0)
tangent = cs.scatter_nanstd_jvp(src, index, std, np.ones(4))
tangent = cs.segment_vjp_src("min", np.ones(3), src, indptr, seg)
tangent = cs.segment_jvp("min", src, indptr, seg, np.ones(4))
tangent = cs.gather_segment_vjp_src(np.ones(4), indptr)
tangent = cs.scatter_scan_vjp("mul", np.ones(4), src, index, exclusive=True)
tangent = cs.scatter_scan_jvp("min", src, index, np.ones(4), reverse=True)
weighted = cs.gather_scatter(src, op="max", plan=plan, weight=src)
tangent = cs.gather_scatter_vjp_src("max", np.ones(2), src, out=weighted, plan=plan, weight=src)
tangent = cs.gather_scatter_vjp_weight("max", np.ones(2), src, out=weighted, plan=plan, weight=src)
tangent = cs.gather_scatter_jvp("max", src, out=weighted, src_dot=np.ones(4), plan=plan, weight=src,
                                weight_dot=np.ones(4))

# ---- cyscatter: registry, threads, build support ---------------------------------------------------------------
names: tuple[str, ...] = cs.OP_NAMES
modes: tuple[str, ...] = cs.MODES
entry: Op = cs.OPS[0]
include: str = cs.get_include()
cs.set_num_threads(2)
threads: int = cs.get_num_threads()
cs.set_num_threads(None)

# ---- cyscatter.dask ---------------------------------------------------------------------------------------------
lazy_src = da.from_array(src, chunks=2)
lazy: da.Array = csd.scatter(lazy_src, index, "add", dim_size=3, dim_chunks=2, split_every=2)
lazy = csd.gather(lazy_src, np.array([3, 0]), mode="raise", fill_value=0.0)
lazy = csd.scatter(lazy_src, index, "add", dim_size=3, dtype=np.float32, out=None)
lazy = csd.gather(lazy_src, np.array([1, 0]), dtype="float32")
lazy = csd.scatter_argmax(lazy_src, index, dim_size=3)
lazy = csd.scatter_any(lazy_src, index, dim_size=3)
lazy = csd.scatter_all(lazy_src, index, dim_size=3, fill_value=False)
lazy = csd.scatter_argmin(lazy_src, index, dim_size=3, mode="drop")
lazy = csd.scatter_scan(lazy_src, index, "mul", dim_size=3, exclusive=True, reverse=False, dtype=np.float32)
computed: NDArray[np.float64] = lazy.compute()

# ---- grad --------------------------------------------------------------------------------------------------------
fwd: NDArray[np.float64] = csgrad.scatter(src, index, "max", dim_size=3)
fwd = csgrad.scatter_into(np.zeros(3), src, index, "mean")
fwd = csgrad.gather(src, np.array([1, 9]), mode="drop", fill_value=0.0)
fwd = csgrad.gather_into(np.zeros(2), src, np.array([1, 0]))
fwd = csgrad.scatter_logsumexp(src, index)
fwd = csgrad.scatter_softmax(src, index)
fwd = csgrad.scatter_log_softmax(src, index, mode="raise")
fwd = csgrad.scatter_var(src, index, ddof=1)
fwd = csgrad.scatter_std(src, index)
fwd = csgrad.scatter_nanvar(src, index, ddof=1)
fwd = csgrad.scatter_nanstd(src, index, dim_size=3)
fwd = csgrad.scatter_quantile(src, index, 0.3, method="midpoint")
fwd = csgrad.scatter_nanquantile(src, index)
fwd = csgrad.segment(src, indptr, "add")
fwd = csgrad.gather_segment(fwd, indptr)
fwd = csgrad.scatter_scan(src, index, "add", exclusive=True)
fwd = csgrad.gather_scatter(src, index, np.array([1, 0, 1, 0]), "add", weight=src)
argmax: NDArray[np.int64] = csgrad.scatter_argmax(src, index)
argmin: NDArray[np.int64] = csgrad.scatter_argmin(src, index, dim_size=3)


# ---- other libraries' arrays: a DLPack producer (torch, JAX and NumPy define __dlpack__ this way) ----------------
class Producer:
    def __init__(self, values: NDArray[np.float64]) -> None:
        self.values = values

    def __dlpack__(self, *, stream: Any = None, max_version: Any = None, dl_device: Any = None,
                   copy: Any = None) -> Any:
        return self.values.__dlpack__(stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)


from_dlpack: NDArray[Any] = cs.scatter(Producer(src), index, "add")
written: Producer = cs.scatter_into(Producer(np.zeros(3)), src, index)   # the dst it was given
cs.set_num_threads(np.int64(1))   # NumPy integers wherever an int is taken
cs.set_num_threads(None)


def loss(x: Any) -> Any:   # traced by autograd: x and the results are boxes, which no type describes
    pooled = csgrad.scatter(x, index, op, dim_size=3)
    return anp.sum(csgrad.gather(pooled, index) ** 2)


gradient: NDArray[np.float64] = autograd_grad(loss)(src)
total = check(out) + check(gradient) + check(computed) + threads + len(names) + len(modes) + len(include)
