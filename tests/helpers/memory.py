"""The traced peak of one call: the memory claims' tests (no n x F copy, no dst-sized temporary) read it."""
from __future__ import annotations

import tracemalloc


def traced_peak(call) -> int:
    """Peak bytes tracemalloc sees (NumPy reports its allocations to it) while `call()` runs."""
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
