"""Integer arguments (axis, sizes, thread counts): what ``operator.index`` accepts, except bools."""
from __future__ import annotations

import operator

import numpy as np


def as_int(value) -> int:
    """`value` as a Python int; TypeError for non-integers and for bools, which would silently mean 0 or 1."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"expected an integer, got the bool {value!r}")
    return operator.index(value)
