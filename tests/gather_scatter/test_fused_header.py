"""`_fused.h`'s selection rows and per-edge dots: the SSE2 build (what x86-64 compiles) and the portable fallback
(what other targets compile, `__SSE2__` undefined) give bitwise the same results, on values the masks must tell
apart, and the results are what NumPy computes elementwise (the dots: to rounding; they sum in partial sums).

Both are compiled here into two small shared libraries and called through ctypes, on every selection, widths 0
to 19 (the vector body and the tail), float and double.
"""
from __future__ import annotations

import ctypes
import shutil
import subprocess
import sysconfig
from pathlib import Path

import numpy as np
import pytest

import cyscatter

HEADER_DIR = Path(cyscatter.__file__).parent / "include"
if not (HEADER_DIR / "_fused.h").exists():
    pytest.skip("_fused.h is not installed next to the package", allow_module_level=True)

WRAPPERS = """
#include <stddef.h>
#include "_fused.h"
#define WRAP(T, SUF)                                                                                      \\
    void axpy_##SUF(int sel, T *acc, const T *x, const T *o, const T *s, T w, ptrdiff_t n)               \\
        { cyscatter_sel_axpy_row_##SUF(sel, acc, x, sel == 2 ? NULL : o, s, w, n); }                     \\
    void count_##SUF(int sel, T *c, const T *x, const T *o, T w, ptrdiff_t n)                            \\
        { cyscatter_sel_count_row_##SUF(sel, c, x, sel == 2 ? NULL : o, w, n); }                         \\
    void tangent_##SUF(int sel, T *c, T *acc, const T *x, const T *o, const T *t, T w, int with_tw,      \\
                       T tw, ptrdiff_t n)                                                                \\
        { cyscatter_sel_tangent_row_##SUF(sel, c, acc, x, sel == 2 ? NULL : o, t, w, with_tw, tw, n); }   \
    T dot_##SUF(int sel, const T *g, const T *x, const T *o, T w, ptrdiff_t n)                           \
        { return cyscatter_dot_row_##SUF(sel, g, x, sel == 2 ? NULL : o, w, n); }
WRAP(float, f)
WRAP(double, d)
"""


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(cc) is None:
        pytest.skip(f"no C compiler ({cc})")
    folder = tmp_path_factory.mktemp("fused_header")
    (folder / "wrap.c").write_text(WRAPPERS)
    libs = {}
    for name, extra in (("sse2", []), ("portable", ["-U__SSE2__"])):
        lib = folder / f"{name}.so"
        subprocess.run([cc, "-std=c99", "-O2", "-shared", "-fPIC", *extra, f"-I{HEADER_DIR}", str(folder / "wrap.c"),
                        "-o", str(lib)], check=True, capture_output=True)
        libs[name] = ctypes.CDLL(str(lib))
    return libs


def _values(rng, dtype, n):
    pool = np.array([0.0, -0.0, 1.0, -1.0, 2.0, 0.5, np.nan, np.inf, -np.inf, 3.0], dtype)
    return rng.choice(pool, n)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("sel", [-1, 0, 1, 2])
def test_sse2_and_portable_rows_agree(builds, dtype, sel):
    rng = np.random.default_rng([sel + 1, len(dtype)])
    dtype_ = np.dtype(dtype).type
    suffix = "f" if dtype == "float32" else "d"
    real = ctypes.c_float if dtype == "float32" else ctypes.c_double
    ptr = np.ctypeslib.ndpointer(dtype=dtype, flags="C_CONTIGUOUS")
    for lib in builds.values():
        getattr(lib, f"axpy_{suffix}").argtypes = [ctypes.c_int, ptr, ptr, ptr, ptr, real, ctypes.c_ssize_t]
        getattr(lib, f"count_{suffix}").argtypes = [ctypes.c_int, ptr, ptr, ptr, real, ctypes.c_ssize_t]
        getattr(lib, f"tangent_{suffix}").argtypes = [ctypes.c_int, ptr, ptr, ptr, ptr, ptr, real, ctypes.c_int,
                                                      real, ctypes.c_ssize_t]
        getattr(lib, f"dot_{suffix}").argtypes = [ctypes.c_int, ptr, ptr, ptr, real, ctypes.c_ssize_t]
        getattr(lib, f"dot_{suffix}").restype = real
    for trial in range(120):
        n = trial % 20
        x, o, share, t = (_values(rng, dtype, n) for _ in range(4))
        o = np.where(rng.random(n) < 0.5, x, o)   # ties, with the sign of zero differing where x is -0.0
        w = float(rng.choice([1.0, 2.0, -1.0, 0.0, np.inf, np.nan]))
        g = rng.standard_normal(n).astype(dtype)
        g[rng.random(n) < 0.1] = np.inf
        results, dots = {}, {}
        for name, lib in builds.items():
            dots[name] = np.array(getattr(lib, f"dot_{suffix}")(sel, g, x, o, w, n), dtype)
            if sel < 0:   # (the rows take a selection)
                continue
            acc, count, acc2 = (np.full(n, 0.25, dtype) for _ in range(3))
            getattr(lib, f"axpy_{suffix}")(sel, acc, x, o, share, w, n)
            getattr(lib, f"count_{suffix}")(sel, count, x, o, w, n)
            getattr(lib, f"tangent_{suffix}")(sel, count, acc2, x, o, t, w, trial % 2, 1.5, n)
            # bits, NaN as one value (the sign of a NaN from inf - inf depends on the operand order)
            results[name] = [np.where(np.isnan(a), np.nan, a).view(f"u{a.itemsize}") for a in (acc, count, acc2)]
        a, b = dots["sse2"], dots["portable"]
        assert (np.isnan(a) and np.isnan(b)) or a.tobytes() == b.tobytes(), (sel, n, dots)   # (a NaN's sign: no)
        # and the results are what the selection says (NumPy, elementwise)
        with np.errstate(invalid="ignore", over="ignore"):
            m = (dtype_(w) * x).astype(dtype)
            same = (m == o) & (np.signbit(m) == np.signbit(o))
            hit = [same | (np.isnan(m) & np.isnan(o)), same & ~np.isnan(m), ~np.isnan(m), np.ones(n, bool)][sel]
            terms = np.where(hit, g.astype(np.float64) * x, 0.0)
            expected_dot = np.sum(terms)
            scale = np.sum(np.abs(terms[np.isfinite(terms)]))   # (float32 sums cancel)
        np.testing.assert_allclose(dots["sse2"], expected_dot, rtol=1e-6, atol=1e-6 * scale)
        if sel < 0:
            continue
        for a, b in zip(results["sse2"], results["portable"]):
            np.testing.assert_array_equal(a, b)
        with np.errstate(invalid="ignore", over="ignore"):
            acc = np.float64(0.25).astype(dtype) + np.where(hit, dtype_(w) * share, 0).astype(dtype)
            acc = np.where(np.isnan(acc), np.nan, acc).astype(dtype)
        np.testing.assert_array_equal(results["sse2"][0], acc.view(f"u{acc.itemsize}"))
        np.testing.assert_array_equal(results["sse2"][1].view(dtype), 0.25 + 2 * hit.astype(dtype))
