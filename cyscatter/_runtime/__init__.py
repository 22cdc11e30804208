"""Runtime settings of the CPU kernels: the OpenMP wait policy at load time, thread counts, and the machine's
cache sizes and calibration that the kernels' strategy switches read."""
