"""gather_scatter with the order statistics median / nanmedian: the composition scatter(w * gather(src))."""
import numpy as np
import pytest

import cyscatter as cs
from reference_quantile import ref_order_stat


@pytest.mark.parametrize("op", ("median", "nanmedian"))
@pytest.mark.parametrize("weighted", (False, True))
@pytest.mark.parametrize("mode", ("raise", "drop", "wrap"))
def test_is_the_composition(backend, op, weighted, mode):
    rng = np.random.default_rng(31)
    src = rng.integers(-4, 5, (2, 7, 3)).astype(float)
    src[rng.random(src.shape) < 0.15] = np.nan
    g, s = rng.integers(0, 7, 40), rng.integers(0, 6, 40)
    if mode != "raise":
        g[3], s[5] = 9, -8
    w = rng.integers(1, 4, 40).astype(float) if weighted else None
    got = backend.to_numpy(cs.gather_scatter(backend.asarray(src), backend.asarray(g), backend.asarray(s), op,
                                             weight=None if w is None else backend.asarray(w), axis=1,
                                             dim_size=6, mode=mode))
    if mode == "drop":   # an edge with either end out of range is dropped whole
        keep = (g < 7) & (s >= 0) & (s < 6)
        g, s, w = g[keep], s[keep], None if w is None else w[keep]
    messages = src[:, g % 7, :] * (1.0 if w is None else w[None, :, None])
    want = ref_order_stat(messages, s % 6, op, dim_size=6, axis=1)
    np.testing.assert_array_equal(got, want)


def test_with_a_plan():
    src = np.array([[1.0, 10.0], [2.0, 20.0], [3.0, 30.0]])
    senders, receivers = np.array([0, 1, 2, 2]), np.array([1, 0, 0, 1])
    plan = cs.gather_scatter_plan(senders, receivers)
    np.testing.assert_array_equal(cs.gather_scatter(src, op="median", plan=plan),
                                  cs.scatter(src[senders], receivers, "median"))
    with pytest.raises(ValueError, match="omitted"):
        cs.gather_scatter(src, senders, receivers, "median", plan=plan)
