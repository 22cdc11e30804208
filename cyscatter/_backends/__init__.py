"""Backends: the code that runs kernels on canonical (outer, rows, inner) views.

`host` runs the Cython kernels on NumPy arrays, `cuda` the CuPy kernels of `cuda_kernels` on CUDA arrays; both
provide the names of the `Backend` protocol (`interface`), and `select.backend_of` picks one from the arrays of a
call. `reduce` drives a counted reduction (mean, fill values, NaN-skipping counts) on either backend, `assign`
the winner pass of the assignment ops, and `context.Reverse` is the canonical view that the reverse rules
read. Nothing here validates user arguments: the planning layer above does, once.
"""
