"""The conformance grid: every op x the kernels' value dtypes x every index dtype x index kind x form x backend,
scatter and gather, against the plain-loop reference (tests/helpers/reference.py).

The grid is built from the registry (`cyscatter.OPS`, the kernels' dtypes `cyscatter._registry.ops.KERNEL_DTYPES`) and its
predicates (`testing.op_supports`, `testing.into_supports`), so it holds no combination the library refuses. The
full tier runs all of it; the default tier a pairwise slice (tests/helpers/tiers.py). The other value dtypes (the
widened ones: small integers, float16, bfloat16) are the feature files' (core/test_scatter.py, test_gather.py,
test_bfloat16.py); refusals are robustness/'s.
"""
from __future__ import annotations

import pytest

from checks import GATHER_FORMS, SCATTER_FORMS, check_gather, check_scatter
from cyscatter._registry.ops import KERNEL_DTYPES
from testing import INDEX_DTYPES, INDEX_KINDS, OPS, into_supports, op_supports

VALUE_DTYPES = tuple(dt.name for dt in KERNEL_DTYPES)


def accepted(op, dtype, form) -> bool:
    """scatter takes every dtype `op` orders; scatter_into also needs `op`'s result to fit the destination."""
    return into_supports(op, dtype) if form == "scatter_into" else op_supports(op, dtype)


@pytest.mark.parametrize("form", SCATTER_FORMS)
@pytest.mark.parametrize("kind", INDEX_KINDS)
@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
@pytest.mark.parametrize("dtype", VALUE_DTYPES)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.valid(lambda op, dtype, form: accepted(op, dtype, form))
def test_scatter(backend, op, dtype, index_dtype, kind, form):
    check_scatter(backend, op, dtype, kind, form, index_dtype=index_dtype)


@pytest.mark.parametrize("form", GATHER_FORMS)
@pytest.mark.parametrize("kind", INDEX_KINDS)
@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
@pytest.mark.parametrize("dtype", VALUE_DTYPES)
def test_gather(backend, dtype, index_dtype, kind, form):
    check_gather(backend, dtype, kind, form, index_dtype=index_dtype)
