"""The NNlib.jl / ScatterNNlib.jl reference cases (``../shared/cases/nnlib_cases.json`` beside the checkout when it
exists, else the vendored ``tests/data`` copy) and the readers the tests share."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

SHARED_CASES = Path(__file__).resolve().parents[3] / "shared" / "cases" / "nnlib_cases.json"
CASES_FILE = SHARED_CASES if SHARED_CASES.exists() else Path(__file__).parents[1] / "data" / "nnlib_cases.json"
CASES = json.loads(CASES_FILE.read_text())["cases"]
ERRORS = (IndexError, ValueError, TypeError)


def _decode(value):
    """JSON numbers with "inf", "-inf", "nan" strings -> array (int64 when every number is an integer)."""
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return float(value) if isinstance(value, str) else value


def array(case, key, dtype=None):
    return np.array(_decode(case[key]), dtype=dtype)


def index_of(case):
    """The case's index as cyscatter takes it: an int array, or a tuple of m arrays from the last axis."""
    idx = np.array(case["index"], dtype=np.int64)
    return tuple(np.moveaxis(idx, -1, 0)) if case.get("index_kind") == "tuple" else idx


def src_of(case):
    if "src_shape" in case:
        return np.zeros(case["src_shape"], case["dtype"])
    return array(case, "src", case["dtype"])


def assert_matches(actual, expected):
    """Floats to rtol 1e-12 (NaN == NaN), integers exactly."""
    actual = np.asarray(actual)
    assert actual.shape == expected.shape, f"shape {actual.shape} != expected {expected.shape}"
    if actual.dtype.kind in "iu":
        np.testing.assert_array_equal(actual, expected, strict=False)
    else:
        np.testing.assert_allclose(actual, expected, rtol=1e-12, atol=0, equal_nan=True)


def by_kind(*kinds):
    chosen = [c for c in CASES if c["kind"] in kinds]
    return pytest.mark.parametrize("case", chosen, ids=[c["name"] for c in chosen])
