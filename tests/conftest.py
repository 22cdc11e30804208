import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from testing import BACKENDS, Backend  # noqa: E402

SHARED_CASES = Path(__file__).resolve().parents[2] / "shared" / "cases" / "nnlib_cases.json"


@pytest.fixture(params=BACKENDS)
def backend(request):
    """Each test that takes `backend` runs on NumPy, on CuPy (marked gpu) and on the CuPy emulation."""
    if request.param == "cupy-emulated":
        from emulated_cupy import installed
        with installed():
            yield Backend(request.param)
    else:
        yield Backend(request.param)
