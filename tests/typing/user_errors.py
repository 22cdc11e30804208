"""Calls a type checker must reject: each carries the ignore comment of the error it must raise.

``mypy --strict`` (warn_unused_ignores) fails on an ignore that no longer silences an error, so this file stops
type-checking as soon as one of these bad calls is accepted. Never run: the calls would raise.
"""
from __future__ import annotations

import dask.array as da
import numpy as np

import cyscatter as cs
import cyscatter.dask as csd
import grad as csgrad

src = np.array([1.0, 2.0, 3.0, 4.0])
index = np.array([0, 2, 0, 2])
indptr = np.array([0, 2, 4])
plan = cs.gather_scatter_plan(index, index)

# ---- the three: an unknown op, a string size, an unknown mode ----------------------------------------
cs.scatter(src, index, op="avg")  # type: ignore[call-overload]
cs.scatter(src, index, dim_size="3")  # type: ignore[arg-type]
cs.scatter(src, index, mode="ignore")  # type: ignore[call-overload]

# ---- cyscatter -------------------------------------------------------------------------------------------------
cs.scatter(src, index, "max", axis="0")  # type: ignore[call-overload]
cs.scatter(src, index, fill_value=[0.0])  # type: ignore[call-overload]
cs.scatter(src, index, num_threads="2")  # type: ignore[call-overload]
cs.scatter(src, index, indices_are_sorted=None)  # type: ignore[call-overload]
cs.scatter_into([0.0, 0.0, 0.0], src, index)  # type: ignore[type-var]
cs.scatter_into(np.zeros(3), src, index, op="avg")  # type: ignore[arg-type]
cs.gather(src, index, mode="fill")  # type: ignore[call-overload]
cs.gather_into(np.zeros(4), src, index, mode="ignore")  # type: ignore[arg-type]
cs.scatter_vjp_src("avg", src, src, index, src)  # type: ignore[call-overload]
cs.scatter_vjp_dst("add", src, src, src, index, src, mode="ignore")  # type: ignore[call-overload]
cs.gather_vjp_src(src, index, "4")  # type: ignore[arg-type]
cs.scatter_jvp("mean", src, index, src, src, axis=None)  # type: ignore[call-overload]
cs.gather_jvp(src, index, mode="nearest")  # type: ignore[call-overload]
cs.scatter_argmax(src, index, dim_size="3")  # type: ignore[arg-type]
cs.scatter_argmin(src, index, mode="ignore")  # type: ignore[call-overload]
cs.scatter_logsumexp(src, index, dim_size=3.0)  # type: ignore[call-overload]
cs.scatter_softmax(src, index, mode="ignore")  # type: ignore[call-overload]
cs.scatter_log_softmax(src, index, axis=1.5)  # type: ignore[call-overload]
cs.scatter_var(src, index, ddof="1")  # type: ignore[call-overload]
cs.scatter_std(src, index, ddof=None)  # type: ignore[call-overload]
cs.segment(src, indptr, "avg")  # type: ignore[call-overload]
cs.gather_segment(src, indptr, axis="0")  # type: ignore[call-overload]
cs.segment_ids(None)  # type: ignore[call-overload]
cs.scatter_scan(src, index, "mean")  # type: ignore[call-overload]
cs.scatter_scan(src, index, exclusive="yes")  # type: ignore[call-overload]
cs.scatter_logsumexp_vjp(src, src, index, src, mode="ignore")  # type: ignore[call-overload]
cs.scatter_logsumexp_jvp(src, index, src, src, axis="0")  # type: ignore[call-overload]
cs.scatter_softmax_vjp(src, src, index, dim_size="3")  # type: ignore[arg-type]
cs.scatter_softmax_jvp(src, index, src, mode="ignore")  # type: ignore[call-overload]
cs.scatter_log_softmax_vjp(src, src, index, dim_size="3")  # type: ignore[arg-type]
cs.scatter_log_softmax_jvp(src, index, src, mode="ignore")  # type: ignore[call-overload]
cs.scatter_var_vjp(src, src, index, src, ddof="0")  # type: ignore[call-overload]
cs.scatter_var_jvp(src, index, src, src, mode="ignore")  # type: ignore[call-overload]
cs.scatter_std_vjp(src, src, index, src, ddof="0")  # type: ignore[call-overload]
cs.scatter_std_jvp(src, index, src, src, mode="ignore")  # type: ignore[call-overload]
cs.scatter_nanvar_vjp(src, src, index, src, ddof="0")  # type: ignore[call-overload]
cs.scatter_nanvar_jvp(src, index, src, src, axis="0")  # type: ignore[call-overload]
cs.scatter_nanstd_vjp(src, src, index, src, mode="ignore")  # type: ignore[call-overload]
cs.scatter_nanstd_jvp(src, index, src, src, ddof=[1])  # type: ignore[call-overload]
cs.segment_vjp_src("avg", src, src, indptr, src)  # type: ignore[call-overload]
cs.segment_jvp("avg", src, indptr, src, src)  # type: ignore[call-overload]
cs.gather_segment_vjp_src(src, indptr, axis="0")  # type: ignore[call-overload]
cs.gather_scatter(src, index, index, "avg")  # type: ignore[call-overload]
cs.gather_scatter(src, plan="plan")  # type: ignore[call-overload]
cs.gather_scatter_plan(index, index, mode="ignore")  # type: ignore[arg-type]
cs.gather_scatter_plan(index, index, src_size="4")  # type: ignore[arg-type]
cs.gather_scatter_vjp_src("avg", src, src, plan=plan)  # type: ignore[call-overload]
cs.gather_scatter_vjp_weight("add", src, src, plan=plan, mode="ignore")  # type: ignore[call-overload]
cs.gather_scatter_jvp("add", src, plan=plan, num_threads="2")  # type: ignore[call-overload]
cs.get_op(3)  # type: ignore[arg-type]
cs.set_num_threads("2")  # type: ignore[arg-type]
bad_include: int = cs.get_include()  # type: ignore[assignment]
bad_threads: str = cs.get_num_threads()  # type: ignore[assignment]
not_a_list: list[float] = cs.scatter(src, index)  # type: ignore[assignment]

# ---- cyscatter.dask ----------------------------------------------------------------------------------------------
lazy = da.from_array(src, chunks=2)
csd.scatter(lazy, index, "avg", dim_size=3)  # type: ignore[arg-type]
csd.scatter(lazy, index, dim_size="3")  # type: ignore[arg-type]
csd.gather(lazy, index, mode="ignore")  # type: ignore[arg-type]
csd.scatter_argmax(lazy, index, dim_size=3, split_every="4")  # type: ignore[arg-type]
csd.scatter_argmin(lazy, index, dim_size=3, mode="ignore")  # type: ignore[arg-type]
not_numpy: np.ndarray = csd.scatter(lazy, index, dim_size=3)  # type: ignore[assignment]
csd.scatter_scan(lazy, index, "mean", dim_size=3)  # type: ignore[arg-type]
csd.scatter_scan(lazy, index, dim_size=3, mode="ignore")  # type: ignore[arg-type]

# ---- grad: every function ----------------------------------------------------------------------------------------
csgrad.scatter(src, index, op="avg")  # type: ignore[call-overload]
csgrad.scatter_into(np.zeros(3), src, index, mode="ignore")  # type: ignore[call-overload]
csgrad.gather(src, index, axis="0")  # type: ignore[call-overload]
csgrad.gather_into(np.zeros(4), src, index, mode="ignore")  # type: ignore[call-overload]
csgrad.scatter_logsumexp(src, index, dim_size="3")  # type: ignore[arg-type]
csgrad.scatter_softmax(src, index, mode="ignore")  # type: ignore[arg-type]
csgrad.scatter_log_softmax(src, index, dim_size="3")  # type: ignore[arg-type]
csgrad.scatter_var(src, index, ddof="1")  # type: ignore[call-overload]
csgrad.scatter_std(src, index, mode="ignore")  # type: ignore[call-overload]
csgrad.scatter_nanvar(src, index, ddof="1")  # type: ignore[call-overload]
csgrad.scatter_nanstd(src, index, mode="ignore")  # type: ignore[call-overload]
csgrad.segment(src, indptr, "avg")  # type: ignore[call-overload]
csgrad.gather_segment(src, indptr, axis="0")  # type: ignore[call-overload]
csgrad.scatter_argmax(src, index, dim_size="3")  # type: ignore[arg-type]
csgrad.scatter_argmin(src, index, mode="ignore")  # type: ignore[call-overload]
csgrad.gather_scatter(src, index, index, "avg")  # type: ignore[call-overload]
