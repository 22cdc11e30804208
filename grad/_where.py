"""`where(condition, x, y)` whose derivatives keep the dtype of the values.

autograd's own rule for ``np.where`` fills the unselected side of a cotangent or tangent with ``np.zeros(shape)``,
float64, so a float32 value differentiated through it comes back float64 (forward mode, and every order past the
first in reverse mode). Here the zeros are Python's 0, which NumPy casts to the other operand's dtype, and the
derivatives are this same primitive, so every order keeps float32 float32.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from autograd.extend import defjvp, defvjp
from autograd.numpy.numpy_vjps import unbroadcast_f
from autograd.tracer import getval

from grad._primitive import primitive


@primitive
def where(condition: Any, x: Any, y: Any) -> Any:
    """``np.where(condition, x, y)``, differentiable in `x` and `y` (`condition` is a constant)."""
    return np.where(condition, x, y)


defvjp(where, None,
       lambda ans, condition, x, y: unbroadcast_f(x, lambda g: where(condition, g, 0)),
       lambda ans, condition, x, y: unbroadcast_f(y, lambda g: where(condition, 0, g)))


def _zeros(g: Any, ans: Any) -> np.ndarray:
    """Zeros of the result's shape and the tangent's dtype (the tangent may cover only part of the result)."""
    return np.zeros(np.shape(ans), np.result_type(getval(g)))


defjvp(where, None,
       lambda g, ans, condition, x, y: where(condition, g, _zeros(g, ans)),
       lambda g, ans, condition, x, y: where(condition, _zeros(g, ans), g))
