"""Integer arguments (axis, sizes, thread counts): what ``operator.index`` accepts, except bools."""
from __future__ import annotations

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


def prod(shape) -> int:
    return int(np.prod(shape, dtype=np.int64))
