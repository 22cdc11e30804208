"""The partials of scatter "mul" as a primitive: per entry, the product of the other members of its group.

Its derivative is the Hessian of the group product, which is symmetric, so one function (the core's dual-number
kernel: exact with zeros, no division) is both its VJP and its JVP. That gives mul its second derivatives.
"""
from __future__ import annotations

import numpy as np
from autograd.extend import defjvp, defvjp, primitive

from cyscatter._reverse.scatter import others_product as _others_product
from grad._primitive import primitive


@primitive
def others_product(src, index, dims, axis, mode):
    """Per entry of `src`: the product of the other entries of its group (`cyscatter._reverse.scatter.others_product`)."""
    return _in_dtype_of(src, _others_product(src, index, dims, axis=axis, mode=mode))


@primitive
def others_product_hvp(src, vector, index, dims, axis, mode):
    """The Hessian of the group products applied to `vector`: the derivative of `others_product` along it."""
    return _in_dtype_of(src, _others_product(src, index, dims, axis=axis, mode=mode, src_dot=vector)[1])


def _in_dtype_of(src, products):
    """float16 `src` is computed in float64 by the core; give its derivatives back in its own dtype."""
    dtype = np.result_type(src)
    return products.astype(dtype, copy=False) if dtype.kind in "fc" else products


def _third_derivative(*args, **kwargs):
    raise NotImplementedError("third derivatives of scatter 'mul' and 'nanprod' (the products of a group's other "
                              "members) with respect to src are not implemented")


defvjp(others_product, lambda ans, src, *meta: lambda u: others_product_hvp(src, u, *meta))
defjvp(others_product, lambda src_dot, ans, src, *meta: others_product_hvp(src, src_dot, *meta))
# linear in `vector`, and symmetric: it is its own transpose
defvjp(others_product_hvp, _third_derivative,
       lambda ans, src, vector, *meta: lambda u: others_product_hvp(src, u, *meta))
defjvp(others_product_hvp, _third_derivative, "same")
