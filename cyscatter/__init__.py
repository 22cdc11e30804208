"""cyscatter: fast scatter/gather for NumPy, with split reverse functions for any autodiff system.

Semantics follow NNlib.jl (`scatter`, `scatter!`, `gather`, `gather!`, `∇scatter_src`, `∇scatter_dst`,
`∇gather_src`) in NumPy conventions: index dims first, feature dims last.
"""
from __future__ import annotations

import os

from cyscatter._gather import gather, gather_into
from cyscatter._index import MODES
from cyscatter._ops import OP_NAMES, OPS, get_op
from cyscatter._reverse import gather_jvp, gather_vjp_src, scatter_jvp, scatter_vjp_dst, scatter_vjp_src
from cyscatter._scatter import scatter, scatter_into
from cyscatter._threads import get_num_threads, set_num_threads

__version__ = "0.1.0"

__all__ = [
    "scatter", "scatter_into", "gather", "gather_into",
    "scatter_vjp_src", "scatter_vjp_dst", "gather_vjp_src", "scatter_jvp", "gather_jvp",
    "OPS", "OP_NAMES", "MODES", "get_op", "get_include", "set_num_threads", "get_num_threads",
]


def get_include() -> str:
    """Directory holding ``cyscatter/kernels.pxd``, for ``include_path`` when cythonizing code that cimports it.

    Returns the folder *above* the package, so ``from cyscatter.kernels cimport ...`` resolves.
    """
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
