"""Fixtures shared by the Dask tests: a LocalCluster of 2 worker processes (tests marked ``distributed``)."""
import os

import pytest


@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("dask.distributed")
    environ = dict(os.environ)   # the nanny sets OMP_NUM_THREADS=1 (and MKL/OpenBLAS) in this process's environment
    try:
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                      worker_dashboard_address=None) as cluster, \
                distributed.Client(cluster, set_as_default=False) as client:
            yield client
    finally:   # later tests that start processes would inherit one thread
        os.environ.clear()
        os.environ.update(environ)
