"""Which OpenMP runtime cyscatter's kernels run on, and what it costs on busy cores.

torch ships its own ``libgomp.so.1``; the loader keeps the first library of that name, so with torch imported
before cyscatter every OpenMP region in the process runs on torch's copy. Each case runs in a fresh process:

    python benchmarks/bench_openmp_runtime.py            # torch first / cyscatter first / torch first + ACTIVE

It prints the median of 10 calls of a mean scatter of (64, 1000, 16) float64 along axis 1 into 100 rows, 2 threads,
and the libgomp the process mapped.
"""
import os
import subprocess
import sys

CASE = r"""
import sys, time
import numpy as np
if sys.argv[1] == "torch first":
    import torch  # noqa: F401
    import cyscatter as cs
else:
    import cyscatter as cs
    import torch  # noqa: F401
x, idx = np.random.default_rng(0).standard_normal((64, 1000, 16)), np.random.default_rng(1).integers(0, 100, 1000)
cs.set_num_threads(2)
cs.scatter(x, idx, "mean", axis=1, dim_size=100)
times = []
for _ in range(10):
    t = time.perf_counter()
    cs.scatter(x, idx, "mean", axis=1, dim_size=100)
    times.append(time.perf_counter() - t)
gomp = sorted({line.split()[-1] for line in open("/proc/self/maps") if "libgomp" in line})
print(f"{sorted(times)[5] * 1e3:8.2f} ms   {', '.join(gomp)}")
"""


def main() -> None:
    for label, first, env in (("torch first", "torch first", {}), ("cyscatter first", "cyscatter first", {}),
                              ("torch first, OMP_WAIT_POLICY=ACTIVE", "torch first", {"OMP_WAIT_POLICY": "ACTIVE"})):
        done = subprocess.run([sys.executable, "-c", CASE, first], env={**os.environ, **env}, capture_output=True,
                              text=True, check=True)
        print(f"{label:<38}{done.stdout.strip()}")


if __name__ == "__main__":
    main()
