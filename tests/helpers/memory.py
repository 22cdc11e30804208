"""The traced peak of one call: the memory claims' tests (no n x F copy, no dst-sized temporary) read it."""
from __future__ import annotations

import tracemalloc


def traced_peak(call):
    """(`call()`'s result, the peak bytes tracemalloc saw while it ran: NumPy reports its allocations to it)."""
    tracemalloc.start()
    try:
        result = call()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
