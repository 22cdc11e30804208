"""The traced peak of one call: the memory claims' tests (no n x F copy, no dst-sized temporary) read it."""
from __future__ import annotations

import tracemalloc


def traced(call):
    """(`call()`'s result, the bytes tracemalloc saw still held when it returned, the peak while it ran): NumPy
    reports its allocations to tracemalloc."""
    tracemalloc.start()
    try:
        result = call()
        return (result, *tracemalloc.get_traced_memory())
    finally:
        tracemalloc.stop()


def traced_peak(call):
    """(`call()`'s result, the peak bytes tracemalloc saw while it ran)."""
    result, _, peak = traced(call)
    return result, peak
