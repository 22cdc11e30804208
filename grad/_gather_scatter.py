"""gather_scatter (message passing in one pass) as autograd primitives, differentiable in `src` and `weight`.

add, sub and mean form a closed family of three bilinear primitives, each fused and each the others' derivative:
the product ``P(x, w)`` (forward), its transpose ``Pt(g, w)`` (the `src` VJP) and the per-edge dots ``Dots(g, x)``
(the `weight` VJP, SDDMM). Their derivatives of any order are calls of the same three, so no step of any order
allocates an E x F array.

max and min run the fused forward and fused first-order rules (the tie-splitting VJPs and JVP of the core), and so
do the NaN-skipping fmax/fmin (a NaN message never wins) and nansum/nanmean (the non-NaN messages). Those rules are
primitives too; their own derivatives (second order and up) are taken through the materialised messages
``scatter(gather(x) * w)`` with the `grad` package's scatter and gather primitives, whose selection rule is the
same. mul, div and nanprod are differentiated through that materialised composition throughout.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import autograd.numpy as anp
import numpy as np
from autograd import make_jvp, make_vjp
from autograd.extend import defjvp, defvjp
from autograd.tracer import getval

import cyscatter as cs
from cyscatter._plan.edges import GatherScatterPlan, resolve
from cyscatter._registry.ops import ORDER_STATS
from grad._args import cast, require_inexact, require_inexact_traced
from grad._gather import gather
from grad._primitive import primitive
from grad._scatter import scatter
from grad._where import where

if TYPE_CHECKING:
    from typing import Any, SupportsIndex

    from cyscatter._typing import ArrayInput, DimSize, FillValue, IndexLike, Mode, OpLike


@dataclass(frozen=True)
class _Edges:
    """The non-differentiable part of a call: op, plan, axis, fill and threads, and the shapes and dtypes of
    src and weight (for the transposes, which need only those)."""

    op: str
    plan: GatherScatterPlan
    axis: int
    fill_value: object
    num_threads: object
    src_shape: tuple
    src_dtype: np.dtype
    weight_shape: tuple | None
    weight_dtype: np.dtype | None

    def kw(self) -> dict:
        return dict(plan=self.plan, axis=self.axis, num_threads=self.num_threads)

    @property
    def derivative(self) -> _Edges:
        """The same edges for a derivative: no fill (filled rows are constants, their derivative 0)."""
        return replace(self, fill_value=None)

    def zeros_src(self):
        # the transposes read only src's shape and dtype: a broadcast zero allocates nothing
        return np.broadcast_to(np.zeros((), self.src_dtype), self.src_shape)

    def ones_weight(self):
        return None if self.weight_shape is None else np.ones(self.weight_shape, self.weight_dtype)


def gather_scatter(src: ArrayInput, gather_index: IndexLike | None = None, scatter_index: IndexLike | None = None,
                   op: OpLike = "add", *, weight: ArrayInput | None = None, dim_size: DimSize | None = None,
                   axis: SupportsIndex = 0, fill_value: FillValue | None = None, mode: Mode | None = None,
                   plan: GatherScatterPlan | None = None, num_threads: SupportsIndex | None = None) -> Any:
    """Differentiable `cyscatter.gather_scatter`: same parameters, result and errors.

    Differentiable with respect to `src` and `weight` in reverse and forward mode, to any order. add, sub and
    mean are fused at every order (the transposed product and the per-edge dots, no E x F array); max and min
    are fused at first order (the gradient goes to the tied winning edges, split evenly, as `scatter`), and so
    are fmax/fmin, nansum and nanmean (a NaN message, left out, passes no gradient to its src row or weight);
    their higher orders and mul/div/nanprod go through the materialised messages (mul and nanprod to second
    order: a third raises NotImplementedError, as in `scatter`). float16 is computed in float32, as the forward
    pass, and rounded back.
    Indices, `plan`, `dim_size` and `fill_value` are not differentiable; rows filled with `fill_value` and
    dropped edges pass no gradient.

    Parameters
    ----------
    src : array_like, shape B + S + F
        Source rows (node features).
    gather_index, scatter_index : int array or tuple of int arrays, shape I, optional
        Source and destination row of each edge (omit both with `plan`).
    op : str, default "add"
        As in `cyscatter.gather_scatter`: "add", "sub", "mul", "div", "max", "min", "mean", "sqrt_n", "nansum",
        "nanprod", "nanmean", "fmax", "fmin" (and their aliases).
    weight : array_like, shape I + W, optional
        Scales each message (differentiable).
    dim_size, axis, fill_value, mode, plan, num_threads : optional
        As in `cyscatter.gather_scatter` (keyword-only).

    Returns
    -------
    out : ndarray, shape B + D + F
        The result of `cyscatter.gather_scatter`.

    Examples
    --------
    >>> import numpy as np, autograd.numpy as anp, grad as csgrad
    >>> from autograd import grad
    >>> x, w = np.array([1., 2., 3.]), np.array([1., 1., 2.])
    >>> gi, si = np.array([0, 1, 2]), np.array([0, 0, 1])
    >>> grad(lambda w: anp.sum(csgrad.gather_scatter(x, gi, si, "add", weight=w) ** 2))(w)
    array([ 6., 12., 36.])
    """
    order_stat = type(op) is str and op in ORDER_STATS   # median / nanmedian: scatter of the messages
    reduction = None if order_stat else cs.get_op(op)
    opname = op if reduction is None else reduction.name
    require_inexact_traced(src, "src", "gather_scatter")
    require_inexact_traced(weight, "weight", "gather_scatter")
    src_v = np.asarray(_value(src))
    plan, axis_n, _, _ = resolve(src_v, gather_index, scatter_index, plan, axis, dim_size, mode)
    w_v = None if weight is None else np.asarray(_value(weight))
    edges = _Edges(opname, plan, axis_n, fill_value, num_threads, src_v.shape, src_v.dtype,
                   None if w_v is None else w_v.shape, None if w_v is None else w_v.dtype)
    if reduction is None or not (reduction.linear or reduction.selection):   # mul, div, nanprod, median (assignments, "linear", reach the forward's refusal)
        return _materialised(src, weight, edges)
    return _forward(src, weight, edges)


def _value(x):
    return getval(x)


# ---- the bilinear family (add, sub, mean) and the fused forward ----------------------------------------------

@primitive
def _forward(src, weight, edges):
    return cs.gather_scatter(src, op=edges.op, weight=weight, fill_value=edges.fill_value, **edges.kw())


@primitive
def _transpose(g, weight, edges):
    """add/sub/mean: the src VJP ``g -> A.T g`` (with the op's sign or 1/count), bilinear in (g, weight)."""
    return cs.gather_scatter_vjp_src(edges.op, g, edges.zeros_src(), weight=weight, **edges.kw())


@primitive
def _dots(g, x, edges):
    """add/sub/mean: the weight VJP, per edge ``<g'[d_e], x[s_e]>``, bilinear in (g, x)."""
    return cs.gather_scatter_vjp_weight(edges.op, g, x, weight=edges.ones_weight(), **edges.kw())


def _forward_vjp_src(ans, src, weight, edges):
    require_inexact(src, "src", "gather_scatter")
    if cs.get_op(edges.op).selection:
        return lambda g: _extreme_vjp_src(g, src, weight, ans, edges)
    return lambda g: _transpose(g, weight, edges)


def _forward_vjp_weight(ans, src, weight, edges):
    require_inexact(weight, "weight", "gather_scatter")
    if cs.get_op(edges.op).selection:
        return lambda g: _extreme_vjp_weight(g, src, weight, ans, edges)
    return lambda g: _dots(g, src, edges)


def _forward_jvp_src(src_dot, ans, src, weight, edges):
    require_inexact(src, "src", "gather_scatter")
    if cs.get_op(edges.op).selection:
        return _extreme_jvp(src_dot, None, src, weight, ans, edges)
    return _forward(src_dot, weight, edges.derivative)


def _forward_jvp_weight(weight_dot, ans, src, weight, edges):
    require_inexact(weight, "weight", "gather_scatter")
    if cs.get_op(edges.op).selection:
        return _extreme_jvp(None, weight_dot, src, weight, ans, edges)
    return _forward(src, weight_dot, edges.derivative)


defvjp(_forward, _forward_vjp_src, _forward_vjp_weight)
defjvp(_forward, _forward_jvp_src, _forward_jvp_weight)

# P(x, w) = forward, Pt(g, w) = transpose, D(g, x) = dots:  <P(x, w), c> = <x, Pt(c, w)> = <w, D(c, x)>
defvjp(_transpose,
       lambda ans, g, weight, edges: lambda c: _forward(c, weight, edges.derivative),
       lambda ans, g, weight, edges: lambda c: _dots(g, c, edges))
defjvp(_transpose,
       lambda g_dot, ans, g, weight, edges: _transpose(g_dot, weight, edges),
       lambda w_dot, ans, g, weight, edges: _transpose(g, w_dot, edges))
defvjp(_dots,
       lambda ans, g, x, edges: lambda c: _forward(x, c, edges.derivative),
       lambda ans, g, x, edges: lambda c: _transpose(g, c, edges))
defjvp(_dots,
       lambda g_dot, ans, g, x, edges: _dots(g_dot, x, edges),
       lambda x_dot, ans, g, x, edges: _dots(g, x_dot, edges))


# ---- max / min: fused first-order rules, higher orders through the materialised messages ------------------------

@primitive
def _extreme_vjp_src(g, src, weight, out, edges):
    return cs.gather_scatter_vjp_src(edges.op, g, src, out=out, weight=weight, **edges.kw())


@primitive
def _extreme_vjp_weight(g, src, weight, out, edges):
    return cs.gather_scatter_vjp_weight(edges.op, g, src, out=out, weight=weight, **edges.kw())


@primitive
def _extreme_jvp(src_dot, weight_dot, src, weight, out, edges):
    if src_dot is None and weight_dot is None:
        return np.zeros_like(out)
    tangent = cs.gather_scatter_jvp(edges.op, src, out=out, src_dot=src_dot, weight=weight, weight_dot=weight_dot,
                                    **edges.kw())
    # a float16 out's tangent is float16, as its cotangents are
    return tangent.astype(out.dtype, copy=False) if out.dtype.kind in "fc" else tangent


def _materialised(src, weight, edges):
    """``scatter(gather(src) * weight, op)`` over the kept edges, through the differentiable gather and scatter.
    float16 runs in float32, as the core forms and reduces its messages, and is rounded back once."""
    plan = edges.plan
    result = np.result_type(*(getval(a) for a in (src, weight) if a is not None))
    if result == np.float16:
        src = cast(src, np.float32)
        weight = None if weight is None else cast(weight, np.float32)
    keep = np.flatnonzero(plan.valid_edges())
    # an empty index tuple (no indexed axes) reads/writes its one row through a size-1 axis: the kept edges
    # need an edge axis, which an index of shape () cannot give
    src_dims, dims = plan.src_dims or (1,), plan.dims or (1,)
    if not plan.src_dims:
        src = anp.expand_dims(src, edges.axis)
    gather_rows = np.unravel_index(plan.gather[keep], src_dims)
    scatter_rows = np.unravel_index(plan.scatter[keep], dims)
    messages = gather(src, gather_rows, axis=edges.axis)
    if weight is not None:
        w = weight.reshape((-1,) + weight.shape[len(plan.index_shape):])[keep]
        k = edges.axis + 1
        w = w.reshape((1,) * edges.axis + w.shape + (1,) * (messages.ndim - k - w.ndim + 1))
        if edges.op not in ORDER_STATS and cs.get_op(edges.op).skips_nan:
            # a NaN message (NaN in src or weight, inf * 0) is left out, so its factors get no derivative: they
            # are zeroed (constants) before the product, whose chain rule would give 0 * NaN = NaN
            value = getval(messages) * getval(w)
            absent = value != value
            if cs.get_op(edges.op).ordered:
                # fmax/fmin: a losing message is left out as well (it passes no derivative, as max/min's losers),
                # so an inf weight on a loser gives 0, not 0 * inf; the winners, hence the result, are unchanged
                best = cs.scatter(value, scatter_rows, edges.op, dim_size=dims, axis=edges.axis)
                absent |= value != cs.gather(best, scatter_rows, axis=edges.axis)
            w = where(absent, 0, w * np.ones(value.shape, value.dtype))   # broadcast, then masked
            messages = where(absent, np.nan, where(absent, 0, messages) * w)
        else:
            messages = messages * w
    out = scatter(messages, scatter_rows, edges.op, dim_size=dims, axis=edges.axis, fill_value=edges.fill_value)
    out = out if plan.dims else anp.squeeze(out, edges.axis)
    return cast(out, result) if result == np.float16 else out


def _materialised_vjp_src(g, src, weight, edges):
    return make_vjp(lambda s: _materialised(s, weight, edges.derivative))(src)[0](g)


def _materialised_vjp_weight(g, src, weight, edges):
    return make_vjp(lambda w: _materialised(src, w, edges.derivative))(weight)[0](g)


def _materialised_jvp(src_dot, weight_dot, src, weight, edges):
    total = 0
    if src_dot is not None:
        total = total + make_jvp(lambda s: _materialised(s, weight, edges.derivative))(src)(src_dot)[1]
    if weight_dot is not None:
        total = total + make_jvp(lambda w: _materialised(src, w, edges.derivative))(weight)(weight_dot)[1]
    return total


def _rule_vjp(materialised_rule, argnum):
    """VJP maker of a first-order rule ``rule(*values, out, edges)`` in `values[argnum]`, by autograd through the
    rule's materialised twin ``materialised_rule(*values, edges)``."""
    def maker(ans, *args):
        *values, _out, edges = args

        def f(a):
            return materialised_rule(*values[:argnum], a, *values[argnum + 1:], edges)
        return lambda c: _quiet(lambda: make_vjp(f)(values[argnum])[0](c))
    return maker


def _rule_jvp(materialised_rule, argnum):
    def jvp(tangent, ans, *args):
        *values, _out, edges = args

        def f(a):
            return materialised_rule(*values[:argnum], a, *values[argnum + 1:], edges)
        return _quiet(lambda: make_jvp(f)(values[argnum])(tangent)[1])
    return jvp


def _quiet(thunk):
    # a rule can be constant in one of its values (the src VJP of max in src): autograd then warns that the
    # output seems independent of the input, which is the expected zero derivative here
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Output seems independent of input", UserWarning)
        return thunk()


def _define_rule_derivatives(rule, materialised_rule, n_values: int) -> None:
    """Derivatives of a first-order rule of the selecting ops: through its materialised twin in each value; `out`
    only fixes the selection (the winners, the non-NaN messages), a locally constant choice, so its derivative is
    0 (in the dtype of what it stands for: float32 stays float32)."""
    defvjp(rule, *(_rule_vjp(materialised_rule, i) for i in range(n_values)),
           lambda ans, *args: lambda c: np.zeros_like(getval(args[-2])))
    defjvp(rule, *(_rule_jvp(materialised_rule, i) for i in range(n_values)),
           lambda tangent, ans, *args: np.zeros_like(getval(ans)))


_define_rule_derivatives(_extreme_vjp_src, _materialised_vjp_src, 3)
_define_rule_derivatives(_extreme_vjp_weight, _materialised_vjp_weight, 3)
_define_rule_derivatives(_extreme_jvp, _materialised_jvp, 4)
