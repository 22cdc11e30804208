"""Keyword arguments of torch_scatter, PyG, PyTorch and JAX that a port brings along, and their cyscatter
spelling: the one place the public functions' errors for an unexpected keyword come from.

The public functions of `cyscatter` take the unexpected keywords in a ``**porting`` catch-all whose first use
raises `unexpected_keywords` (no wrapper, so no cost per call); `hide_catch_all` takes the catch-all out of the
signature that `inspect`, the docs and the stubs' check see. `grad` and `cyscatter.dask`, whose functions pass
through a wrapper already (`cyscatter._arrays.protocols.takes_foreign`), turn Python's own "unexpected keyword"
TypeError into the same message there (`porting_error`).
"""
from __future__ import annotations

import inspect
import re
from typing import Any

# keyword -> what to write instead (said after "<function>() got an unexpected keyword argument '<keyword>': ")
HINTS = {
    "reduce": ("torch_scatter's and PyG's name for the reduction: cyscatter calls it op, the argument after the "
               "index in the functions that take one (op='sum' or 'add', 'mean', 'max', 'min', 'mul'; PyG's "
               "reduce='any' is op='set'); softmax, logsumexp, var, std, argmax, argmin are functions of their "
               "own (scatter_softmax, ...)"),
    "dim": ("torch_scatter's name for the indexed axis: cyscatter calls it axis (in the functions whose src may "
            "have batch dims), where the index dims start in src (index dims first, feature dims last): "
            "torch_scatter's dim=0 is axis=0; for its default dim=-1, move the indexed axis before the feature "
            "axes"),
    "num_segments": "JAX's name for the output size: cyscatter calls it dim_size",
    "num_nodes": "PyG's name for the output size: cyscatter calls it dim_size (src_size for the gathered side)",
    "segment_ids": "JAX's name for the index: pass it as index, the argument after src",
    "data": "JAX's name for the values: pass them as src, the first argument",
    "device": ("cyscatter computes where its arrays are: pass CuPy arrays (cupy.asarray) to run on the GPU, "
               "NumPy (or other CPU) arrays for the CPU; the result is an array of the same kind"),
    "include_self": ("torch's scatter_reduce switch: cyscatter's scatter starts from the op's identity or fill_value "
                     "(include_self=False); scatter_into(dst, src, index, op) reduces into dst's values "
                     "(include_self=True)"),
    "unique_indices": "a JAX hint that cyscatter does not need: leave it out",
    "edge_index": ("PyG's (2, E) array: split it, gather_index=edge_index[0] (the sources) and "
                   "scatter_index=edge_index[1] (the targets)"),
}


def porting_error(function: str, keyword: str) -> TypeError:
    """The TypeError for `keyword` given to `function`, with the cyscatter spelling where `HINTS` has one."""
    said = f"{function}() got an unexpected keyword argument {keyword!r}"
    hint = HINTS.get(keyword)
    return TypeError(f"{said}: {hint}" if hint else said)


def unexpected_keywords(function: str, given: dict[str, Any]) -> TypeError:
    """The error for the keywords a public function's ``**porting`` catch-all received (the first of them, as
    Python names the first unexpected one)."""
    return porting_error(function, next(iter(given)))


def hide_catch_all(function: Any) -> Any:
    """`function` with a ``__signature__`` that leaves out its ``**porting`` catch-all: the public signature
    (help(), Sphinx, numpydoc, the stubs' check) shows only the real parameters."""
    signature = inspect.signature(function)
    kept = [p for p in signature.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    function.__signature__ = signature.replace(parameters=kept)
    return function


_UNEXPECTED = re.compile(r"got an unexpected keyword argument '(\w+)'")


def hinted(err: TypeError, function: str, kwargs: dict[str, Any], signature: inspect.Signature) -> TypeError | None:
    """The porting error for a failed call of `function` (of `signature`) with `kwargs`, when one of them is a
    peer's keyword that the function does not take (the call fails because of it, whichever TypeError came
    first); None otherwise. A signature that takes any keyword (autograd's wrapper) defers to Python's own
    "unexpected keyword argument" message."""
    params = signature.parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        found = _UNEXPECTED.search(str(err))
        unknown = [found.group(1)] if found is not None and found.group(1) in kwargs else []
    else:
        unknown = [key for key in kwargs if key not in params]
    return porting_error(function, unknown[0]) if unknown and unknown[0] in HINTS else None
