"""Integer arguments (axis, sizes, thread counts): what ``operator.index`` accepts, except bools."""
from __future__ import annotations

import math
import operator

import numpy as np


def as_int(value, error: str) -> int:
    """`value` as a Python int; TypeError(`error`) for non-integers and for bools, which would silently mean 0 or 1."""
    if not isinstance(value, (bool, np.bool_)):
        try:
            return operator.index(value)
        except TypeError:
            pass
    raise TypeError(error)


# The element count of a shape, exact (Python ints do not wrap) and without a Python-level call.
prod = math.prod
