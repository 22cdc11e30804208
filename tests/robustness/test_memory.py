"""Memory: calling each public function over and over does not grow the process, and an allocating call needs
little beyond its output.

Leaks, per function: after a warm-up, N calls (2,000 by default, 20,000 over the ten functions; 100,000 in the
`slow` variant) may leave at most `BLOCKS_BOUND` more Python objects (``sys.getallocatedblocks``) and grow the
resident set by at most `RSS_BOUND`; then 500 calls under tracemalloc (which also sees NumPy's data buffers) may
leave at most `TRACED_BOUND` bytes live. A call that leaked its output (>= 256 B here) exceeds the last bound
eight times over, one that leaked a single object the first.

Peaks: with a C-ordered src of a kernel dtype and an int64 index, `scatter` needs its output plus O(dim_size)
(the group counts and a mask: at most `PER_ROW` bytes a destination row), `gather` its output; src is never
copied. Widening dtypes (integer div/mean, float16, small integers) convert src once, which is O(n) more and
not tested here.
"""
from __future__ import annotations

import gc
import os
import resource
import sys
import tracemalloc

import numpy as np
import pytest

import cyscatter as cs
from testing import OPS, op_supports, true_division
from reference import ref_scatter

pytestmark = pytest.mark.full   # full tier: thousands of calls per case

BLOCKS_BOUND = 50
RSS_BOUND = {2_000: 4 << 20, 100_000: 8 << 20}
TRACED_BOUND = 16 << 10
TRACED_CALLS = 500
WARMUP = 1_000
# Under tools/sanitize.sh, ASan keeps freed memory in quarantine and PYTHONMALLOC=malloc changes how NumPy's caches
# fill up: memory grows there by design, so the growth checks are for normal builds only
UNDER_ASAN = "libasan" in os.environ.get("LD_PRELOAD", "")


def _rss() -> int:
    """Resident set size in bytes (Linux /proc; elsewhere the peak from getrusage, which still shows growth)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _calls() -> dict:
    rng = np.random.default_rng(3)
    src = rng.standard_normal((64, 4))
    index = rng.integers(0, 16, 64)
    out = cs.scatter(src, index, "max", dim_size=16)
    dst = rng.standard_normal((16, 4))
    g = np.ones((16, 4))
    small = np.zeros((64, 4))
    return {
        "scatter": lambda: cs.scatter(src, index, "mean", dim_size=16, fill_value=0.5),
        "scatter_into": lambda: cs.scatter_into(dst, src, index, "add"),
        "gather": lambda: cs.gather(dst, index),
        "gather_into": lambda: cs.gather_into(small, dst, index),
        "scatter_vjp_src": lambda: cs.scatter_vjp_src("max", g, src, index, out),
        "scatter_vjp_dst": lambda: cs.scatter_vjp_dst("mul", g, dst, src, index, out),
        "gather_vjp_src": lambda: cs.gather_vjp_src(src, index, (16, 4)),
        "scatter_jvp": lambda: cs.scatter_jvp("mul", src, index, out, src),
        "gather_jvp": lambda: cs.gather_jvp(dst, index),
        "raising": lambda: pytest.raises(IndexError, cs.scatter, src, index, dim_size=8),
    }


FUNCTIONS = tuple(_calls())


def _check_no_growth(name: str, n: int) -> None:
    if UNDER_ASAN:
        pytest.skip("memory growth is not measurable under AddressSanitizer")
    call = _calls()[name]
    for _ in range(WARMUP):
        call()
    gc.collect()
    blocks0, rss0 = sys.getallocatedblocks(), _rss()
    for _ in range(n):
        call()
    gc.collect()
    blocks, rss = sys.getallocatedblocks() - blocks0, _rss() - rss0
    assert blocks < BLOCKS_BOUND, f"{name}: {n} calls left {blocks} more Python objects"
    assert rss < RSS_BOUND[n], f"{name}: {n} calls grew the resident set by {rss} bytes"
    tracemalloc.start()
    try:
        traced0 = tracemalloc.get_traced_memory()[0]
        for _ in range(TRACED_CALLS):
            call()
        gc.collect()
        traced = tracemalloc.get_traced_memory()[0] - traced0
    finally:
        tracemalloc.stop()
    assert traced < TRACED_BOUND, f"{name}: {TRACED_CALLS} calls left {traced} more bytes allocated"


@pytest.mark.parametrize("name", FUNCTIONS)
def test_repeated_calls_do_not_grow_memory(name):
    _check_no_growth(name, 2_000)


@pytest.mark.stress   # beyond the full tier: minutes a function (python -m pytest -m stress)
@pytest.mark.parametrize("name", FUNCTIONS)
def test_100k_calls_do_not_grow_memory(name):
    _check_no_growth(name, 100_000)


def _peak(call) -> tuple[object, int]:
    """(result, peak bytes allocated during the call beyond what was live before it).

    No gc.collect() first: only allocations made while tracing count, so earlier garbage cannot inflate the peak,
    and a full collection costs about a second in a whole-suite session (its 60,000 test items)."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        result = call()
        return result, tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


# outputs of 256 B a row (float64) against PER_ROW: an extra copy of the output would not fit in the bound
N, DIM, FEATURES = 50_000, 2_000, 32
PER_ROW = 64
SLACK = 64 << 10   # the small Python objects of one call


@pytest.mark.parametrize("dtype", ("float32", "float64", "int64", "complex128"))
@pytest.mark.parametrize("op", OPS)
def test_scatter_peak_is_output_plus_o_dim_size(op, dtype):
    dtype = np.dtype(dtype)
    if not op_supports(op, dtype) or (true_division(op) and dtype.kind in "iu"):
        pytest.skip("unsupported or widening: src is converted")
    rng = np.random.default_rng(0)
    src = rng.standard_normal((N, FEATURES)).astype(dtype)
    index = rng.integers(0, DIM, N)
    for fill in (None, 0):
        out, peak = _peak(lambda: cs.scatter(src, index, op, dim_size=DIM, fill_value=fill))
        assert peak <= out.nbytes + _nan_counts(op, fill, out.size) + PER_ROW * DIM + SLACK, \
            f"peak {peak} B for an output of {out.nbytes} B"


def _nan_counts(op, fill, elements: int) -> int:
    """What a NaN-skipping op that counts (nanmean, or a fill_value) holds besides on the host: int32 non-NaN
    counts per output element and int64 entries per destination row (`cyscatter._api.scatter._run_counted_host`)."""
    counts = cs.get_op(op).skips_nan and (cs.get_op(op).counts or fill is not None)
    return 4 * elements + 8 * DIM if counts else 0


@pytest.mark.parametrize("mode", ("raise", "drop", "wrap"))
def test_gather_peak_is_output(mode):
    rng = np.random.default_rng(0)
    table = rng.standard_normal((DIM, FEATURES))
    index = rng.integers(0, DIM, N)
    out, peak = _peak(lambda: cs.gather(table, index, mode=mode))
    extra = index.nbytes if mode == "wrap" else 0   # wrap makes a wrapped copy of the index
    assert peak <= out.nbytes + extra + SLACK, f"peak {peak} B for an output of {out.nbytes} B"


@pytest.mark.parametrize("op", OPS)
def test_scatter_into_peak_is_o_dim_size(op):
    """In place needs no output; mean adds group means, so it holds one (dim_size, features) buffer of sums."""
    rng = np.random.default_rng(0)
    src = rng.standard_normal((N, FEATURES))
    index = rng.integers(0, DIM, N)
    dst = rng.standard_normal((DIM, FEATURES))
    _, peak = _peak(lambda: cs.scatter_into(dst, src, index, op))
    sums = dst.nbytes if cs.get_op(op).counts else 0
    assert peak <= sums + _nan_counts(op, None, dst.size) + PER_ROW * DIM + SLACK, \
        f"peak {peak} B for a dst of {dst.nbytes} B"


@pytest.mark.parametrize("call", ("fast", "general"))
@pytest.mark.parametrize("op", OPS)
def test_scatter_outputs_start_on_a_cache_line(op, call):
    """An allocating scatter's output of at least a page starts on a 64-byte boundary (NumPy hands out large
    blocks 16 B past one: every 64 B row would straddle two lines), narrow rows and features-first data's
    outputs too; it is an ordinary C-ordered, writeable array holding the right values, whose `base` is the
    slightly larger buffer. Small outputs are allocated as usual."""
    rng = np.random.default_rng(1)
    index = rng.integers(0, 300, 2_000)
    extra = {} if call == "fast" else dict(fill_value=7)   # the general path (fill, counts)
    # (1 float64 feature: 2.4 kB, under a page, allocated as usual)
    for features, dtype, aligned in ((16, "float32", True), (3, "float64", True), (4, "float32", True),
                                     (1, "float64", False)):
        src = rng.standard_normal((2_000, features)).astype(dtype) + (1 if op in ("mul", "div") else 0)
        want = ref_scatter(src, index, op, dim_size=300, fill_value=extra.get("fill_value"))
        for _ in range(4):   # allocations land at different offsets: check several
            out = cs.scatter(src, index, op, dim_size=300, **extra)
            np.testing.assert_array_equal(out, want, strict=True)
            assert out.flags.c_contiguous and out.flags.writeable and out.flags.aligned
            if aligned:
                assert out.ctypes.data % 64 == 0
                assert out.base is not None and out.base.nbytes < out.nbytes + 128
            out[...] = 0   # an ordinary array
    features_first = np.ascontiguousarray(rng.standard_normal((2_000, 16)).T) + (1 if op in ("mul", "div") else 0)
    for _ in range(4):
        out = cs.scatter(features_first, index, op, dim_size=300, axis=1, **extra)
        np.testing.assert_array_equal(out, ref_scatter(features_first, index, op, dim_size=300, axis=1,
                                                       fill_value=extra.get("fill_value")), strict=True)
        assert out.flags.c_contiguous and out.ctypes.data % 64 == 0
    small = cs.scatter(np.ones((10, 16)), np.arange(10) % 3, op)   # 384 B: below a page, no padded buffer
    owner = small if small.base is None else small.base   # the general path returns a reshaped view
    assert owner.flags.owndata and owner.nbytes == small.nbytes
