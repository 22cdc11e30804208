"""Smoke test of an installed cyscatter (a wheel in a fresh environment): run it from outside the checkout.

    python tools/smoke_test.py [--bundled-libgomp] [--no-openmp-ok]

Checks import (the compiled modules, not a source tree), the version against the installed metadata, scatter
against NumPy's ufunc.at, gather against np.take, the same bits on 1 and 3 threads, and that the kernels really
run on several threads (OpenMP). --bundled-libgomp also asks that libgomp was loaded from the wheel's own
`cyscatter.libs` (what `auditwheel repair` bundles). Exits non-zero on the first failure.
"""
from __future__ import annotations

import argparse
import importlib.metadata
import os
import sys
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundled-libgomp", action="store_true", help="libgomp must come from cyscatter.libs")
    parser.add_argument("--no-openmp-ok", action="store_true", help="accept a build without OpenMP")
    args = parser.parse_args()

    import numpy as np

    import cyscatter as cs
    from cyscatter import kernels

    here = Path.cwd().resolve()
    package = Path(cs.__file__).resolve().parent
    print(f"cyscatter {cs.__version__} from {package}; kernels {Path(kernels.__file__).name}")
    assert package != here / "cyscatter", "imported the cyscatter/ of the current folder: run this from elsewhere"
    assert cs.__version__ == importlib.metadata.version("cyscatter"), "version differs from the installed metadata"

    rng = np.random.default_rng(0)
    src = rng.standard_normal((5000, 7))
    index = rng.integers(0, 300, 5000)
    expected = np.zeros((300, 7))
    np.add.at(expected, index, src)
    np.testing.assert_allclose(cs.scatter(src, index, "add", dim_size=300), expected, rtol=1e-12, atol=1e-12)
    expected_max = np.full((300, 7), -np.inf)
    np.maximum.at(expected_max, index, src)
    got_max = cs.scatter(src, index, "max", dim_size=300)
    filled = np.isin(np.arange(300), index)
    np.testing.assert_array_equal(got_max[filled], expected_max[filled])
    ints = rng.integers(-50, 50, (5000, 3)).astype(np.int32)
    expected_int = np.zeros((300, 3), np.int32)
    np.add.at(expected_int, index, ints)
    np.testing.assert_array_equal(cs.scatter(ints, index, "add", dim_size=300), expected_int)
    gather_index = rng.integers(0, 5000, 20000)
    np.testing.assert_array_equal(cs.gather(src, gather_index), np.take(src, gather_index, axis=0))

    big = rng.standard_normal((400_000, 4))
    big_index = rng.integers(0, 1000, 400_000)
    one = cs.scatter(big, big_index, "add", dim_size=1000, num_threads=1)
    three = cs.scatter(big, big_index, "add", dim_size=1000, num_threads=3)
    assert np.array_equal(one, three), "results depend on the thread count"

    cs.set_num_threads(3)
    try:
        threads = cs.get_num_threads()
    finally:
        cs.set_num_threads(None)
    print(f"threads with set_num_threads(3): {threads}")
    if threads != 3 and not args.no_openmp_ok:
        print("FAIL: the kernels run on one thread (built without OpenMP?)", file=sys.stderr)
        return 1

    gomp = sorted({line.split()[-1] for line in Path("/proc/self/maps").read_text().splitlines()
                   if "gomp" in line.split()[-1]}) if os.path.exists("/proc/self/maps") else []
    print(f"libgomp loaded from: {gomp or 'nowhere'}")
    if args.bundled_libgomp and not any("cyscatter.libs" in path for path in gomp):
        print("FAIL: libgomp is not the one bundled in the wheel (cyscatter.libs)", file=sys.stderr)
        return 1
    print("smoke test passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
