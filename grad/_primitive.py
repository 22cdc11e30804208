"""autograd's `primitive` and `notrace_primitive`, keeping the wrapped function's signature and static type.

autograd's wrapper is ``f_wrapped(*args, called_by_autograd_dispatcher=False, **kwargs)`` and copies only the
name and docstring, so ``inspect.signature``, ``help()`` and IDEs showed that generic signature, and a type checker
saw an untyped function (autograd has no type information). Here the wrapper also gets `f`'s ``__wrapped__``
(``inspect.signature`` follows it), ``__qualname__`` and ``__module__``, and is typed as `f` itself.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, TypeVar, cast

from autograd.extend import notrace_primitive as _notrace_primitive
from autograd.extend import primitive as _primitive

_F = TypeVar("_F", bound=Callable[..., Any])


def primitive(f: _F) -> _F:
    """``autograd.extend.primitive(f)`` that shows and types as `f`: derivatives are attached with ``defvjp`` etc."""
    return cast(_F, functools.update_wrapper(_primitive(f), f))


def notrace_primitive(f: _F) -> _F:
    """``autograd.extend.notrace_primitive(f)`` (boxes unwrapped, no derivative) that shows and types as `f`."""
    return cast(_F, functools.update_wrapper(_notrace_primitive(f), f))
