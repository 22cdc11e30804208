import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "helpers"))   # the shared test helpers: testing, reference, ...

from testing import BACKENDS, Backend  # noqa: E402
from tiers import pytest_addoption, pytest_collection_modifyitems, pytest_report_header  # noqa: E402,F401



@pytest.fixture(params=BACKENDS)
def backend(request):
    """Each test that takes `backend` runs on NumPy, on CuPy (marked gpu) and on the CuPy emulation."""
    if request.param == "cupy-emulated":
        from emulated_cupy import installed
        with installed():
            yield Backend(request.param)
    else:
        yield Backend(request.param)


@pytest.fixture(params=["registers", "scalar"])
def sum_loop(request):
    """Each test that takes `sum_loop` runs the float sums of several rows into one (segments, the fused
    gather-scatter's CSR rows) with the row held in AVX2 registers and with the scalar row loop."""
    from cyscatter import kernels

    on = request.param == "registers"
    kernels._tune_registers(on)
    if on and not kernels._tune_registers(None):
        pytest.skip("no AVX2 here")
    yield request.param
    kernels._tune_registers(True)


# Hypothesis: CI (CI=true) replays one fixed, derandomized set of examples with no example database, so a run
# is reproducible and a failure prints the example and its reproduction blob; locally the search is random and
# remembers failures in .hypothesis/. HYPOTHESIS_PROFILE=thorough multiplies every example count by 20.
from hypothesis import HealthCheck, settings  # noqa: E402

_COMMON = dict(deadline=None, print_blob=True,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
settings.register_profile("ci", derandomize=True, database=None, **_COMMON)
settings.register_profile("dev", **_COMMON)
settings.register_profile("thorough", max_examples=2000, **_COMMON)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") == "true" else "dev"))
