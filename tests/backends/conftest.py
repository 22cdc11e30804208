"""The `cp` fixture of the GPU backend's tests: real CuPy (marked gpu) and the host emulation of CuPy."""
import pytest

from testing import require_gpu


@pytest.fixture(params=[pytest.param("cupy", marks=pytest.mark.gpu), "cupy-emulated"])
def cp(request):
    """The CuPy module: the real one on a GPU, or the host emulation."""
    if request.param == "cupy":
        require_gpu()
        import cupy
        yield cupy
    else:
        from emulated_cupy import installed
        with installed() as emulation:
            yield emulation
