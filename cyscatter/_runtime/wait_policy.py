"""Loading the kernels with passive OpenMP waiting, leaving the user's environment as it was.

OpenMP threads that spin while they wait take whole cores from other processes: on a busy 2-core machine a
parallel call ran 20-40x slower than on one thread; passive waiting costs microseconds per parallel call.
libgomp reads OMP_WAIT_POLICY once, when it loads with the kernels (its constructor runs at dlopen), so the
variable is set for that moment only: everything the kernels import is loaded first, and the window is the
dlopen and the module's initialisation (a few ms). A value the user set, through os.environ or os.putenv (read
from the C environment), is never touched and is what libgomp gets; if another library loaded libgomp first,
its setting stays. Other threads starting processes inside that window would pass the variable on.
"""
from __future__ import annotations

import ctypes
import os
from types import ModuleType

_NAME = "OMP_WAIT_POLICY"


def _c_getenv(name: str) -> bytes | None:
    """The C environment's value (os.environ does not see os.putenv)."""
    try:
        libc = ctypes.CDLL(None)
        libc.getenv.restype = ctypes.c_char_p
        value: bytes | None = libc.getenv(name.encode())
        return value
    except (OSError, AttributeError):   # no C library to ask: os.environ is the best there is
        text = os.environ.get(name)
        return None if text is None else text.encode()


def load_kernels() -> ModuleType:
    """Import `cyscatter.kernels` (and with it libgomp) with OMP_WAIT_POLICY=PASSIVE unless the user set one."""
    set_here = _c_getenv(_NAME) is None and _NAME not in os.environ
    if set_here:
        os.environ[_NAME] = "PASSIVE"
    try:
        from cyscatter import kernels
    finally:
        if set_here:
            del os.environ[_NAME]
    return kernels
