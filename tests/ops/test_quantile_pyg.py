"""Per-group quantiles against PyG's QuantileAggregation / MedianAggregation on the same data.

cyscatter follows NumPy's formulas; PyG agrees on lower and higher bit for bit, on midpoint to the last ulp
((a + b) / 2 against NumPy's interpolation), on linear to float32 position rounding, and on nearest except where the position falls exactly half-way (NumPy rounds half to even)."""
from __future__ import annotations

import numpy as np
import pytest

import cyscatter as cs

torch = pytest.importorskip("torch")
aggr = pytest.importorskip("torch_geometric.nn.aggr")


def _graph(seed: int):
    rng = np.random.default_rng(seed)
    index = np.sort(rng.integers(0, 7, 40))
    index[index == 3] = 2                         # group 3 empty: PyG's fill is 0
    return rng.standard_normal((40, 3)), index


def _pyg(x, index, q, method):
    layer = aggr.QuantileAggregation(q, interpolation=method)
    return layer(torch.from_numpy(x), torch.from_numpy(index), dim_size=8).numpy()


@pytest.mark.parametrize("q", [0.0, 0.25, 0.5, 0.9, 1.0])
@pytest.mark.parametrize("method", ["lower", "higher", "midpoint", "linear"])
def test_quantile_matches_pyg(method, q):
    x, index = _graph(0)
    ours = cs.scatter_quantile(x, index, q, method=method, dim_size=8, fill_value=0.0)
    atol = {"linear": 1e-5, "midpoint": 1e-12}.get(method, 0.0)   # PyG: float32 positions, (a + b) / 2
    np.testing.assert_allclose(ours, _pyg(x, index, q, method), rtol=0, atol=atol)


def test_nearest_matches_pyg_away_from_half_way_positions():
    x, index = _graph(1)
    counts = np.bincount(index, minlength=8)
    q = 0.3
    tie = (q * (counts - 1)) % 1 == 0.5
    ours = cs.scatter_quantile(x, index, q, method="nearest", dim_size=8, fill_value=0.0)
    np.testing.assert_array_equal(ours[~tie], _pyg(x, index, q, "nearest")[~tie])


def test_median_aggregation_is_the_lower_median():
    x, index = _graph(2)
    pyg = aggr.MedianAggregation()(torch.from_numpy(x), torch.from_numpy(index), dim_size=8).numpy()
    np.testing.assert_array_equal(cs.scatter_quantile(x, index, 0.5, method="lower", dim_size=8, fill_value=0.0), pyg)
    # cyscatter's "median" is NumPy's (the mean of the middle pair), not PyG's lower median
    assert not np.array_equal(cs.scatter(x, index, "median", dim_size=8, fill_value=0.0), pyg)
