"""Docstrings of the Dask functions that mirror an in-memory one: its Parameters, Returns, Raises and Notes, with a
Dask summary, the Dask-only parameters and notes, and without its (in-memory) examples."""
from __future__ import annotations

import inspect
import re

_SECTION = re.compile(r"\n    (Parameters|Returns|Raises|Notes|Examples|See Also)\n    -+\n")


def _sections(doc: str) -> dict:
    parts = _SECTION.split(doc)
    found = {"": parts[0]}
    for name, body in zip(parts[1::2], parts[2::2]):
        found[name] = body.rstrip() + "\n"
    return found


_ENTRY = re.compile(r"^    (?=\S)", re.MULTILINE)


def _taken(params: str, names) -> str:
    """The numpydoc entries of `params` naming a parameter in `names` (the in-memory function's own, e.g. `out`,
    are left out where the Dask function does not take them)."""
    entries = _ENTRY.split(params)
    kept = [e for e in entries[1:] if any(n.strip() in names for n in e.split(" : ")[0].split("\n")[0].split(","))]
    return "".join("    " + e for e in kept)


def mirror(memory_fn, summary: str | None = None, *, params: str = "", notes: str = "", raises: str = ""):
    """A decorator giving a Dask function the docstring of `memory_fn` (see the module docstring): `summary`
    first (default: the function's own docstring); `params` (numpydoc entries, 4-space indented) after the in-memory parameters; `raises` after its
    Raises entries; `notes` before its Notes. In-memory parameters the Dask function does not take are left out."""
    def decorate(fn):
        memory = _sections(memory_fn.__doc__)
        doc = (fn.__doc__ if summary is None else summary).strip() + "\n"

        def joined(*parts):
            return "\n".join(part.rstrip("\n") for part in parts if part.strip()) + "\n"
        taken = _taken(memory.get("Parameters", ""), inspect.signature(fn).parameters)
        doc += "\n    Parameters\n    ----------\n" + joined(taken, params)
        returns = memory.get("Returns", "")
        returns = re.sub(r"^(    \w+ : )ndarray", r"\1dask.array.Array", returns, count=1)
        doc += "\n    Returns\n    -------\n" + joined(returns)
        doc += "\n    Raises\n    ------\n" + joined(memory.get("Raises", ""), raises)
        body = "\n\n".join(part.strip("\n") for part in ("    " + notes.strip(), memory.get("Notes", ""))
                           if part.strip())
        if body:
            doc += "\n    Notes\n    -----\n" + body.rstrip() + "\n"
        doc += "    "
        fn.__doc__ = doc
        return fn
    return decorate
