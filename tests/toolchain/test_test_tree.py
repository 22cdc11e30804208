"""The test tree itself: no folder of it can stand in for a library the tests import.

pytest puts ``tests/`` on ``sys.path`` (its conftest's folder), so a folder ``tests/torch`` without an
``__init__.py`` is importable as a namespace package called ``torch`` wherever torch is not installed. Then
``pytest.importorskip("torch")`` succeeds and the first ``import torch.autograd`` fails collection instead of
skipping: the README's test command breaks on a machine without that optional library.
"""
import importlib.metadata
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
# import names of the optional libraries the tests use where installed (pyproject's extras and the peers)
OPTIONAL = {"torch", "torch_geometric", "torch_scatter", "jax", "jaxlib", "dask", "distributed", "cupy", "autograd",
            "numba", "numpy_groupies", "ml_dtypes", "scipy", "pandas", "xarray", "sklearn", "matplotlib", "tqdm",
            "threadpoolctl", "hypothesis", "mypy", "sphinx", "numpydoc"}
OWN = {"cyscatter", "grad"}   # this project's packages: installed regular packages, which win over a namespace


def test_no_test_folder_is_named_like_an_importable_library():
    installed = set(importlib.metadata.packages_distributions())
    folders = [p for p in TESTS.rglob("*") if p.is_dir() and not p.name.startswith((".", "_"))
               and not (p / "__init__.py").exists()]
    clashes = sorted(str(p.relative_to(TESTS)) for p in folders
                     if p.name in (OPTIONAL | installed) - OWN)
    assert not clashes, f"test folders named like a library they would shadow where it is absent: {clashes}"
