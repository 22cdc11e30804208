"""A torch-style expanded index (``index.view(-1, 1).expand_as(src)``: src's shape, stride 0 on the last axis) is
refused, never read as a scalar scatter that sums the features; the index the message names gives
PyTorch's result. The rule is the layout: equal values along a row of an ordinary index keep NNlib's meaning."""
from __future__ import annotations

import numpy as np
import pytest

import cyscatter as cs

grad = pytest.importorskip("grad")

SRC = np.arange(12.0).reshape(4, 3)
IDX = np.array([0, 2, 0, 1])
EXPANDED = np.broadcast_to(IDX[:, None], SRC.shape)   # what expand_as makes: stride 0 on the last axis


def _torch_style_sum(src, index_1d, size):
    """out[index[i, j], j] += src[i, j] with index[i, j] = index_1d[i], by plain loops."""
    out = np.zeros((size,) + src.shape[1:])
    for i, row in enumerate(index_1d):
        out[row] += src[i]
    return out


CALLS = {
    "scatter": lambda idx: cs.scatter(SRC, idx, "add", dim_size=3),
    "scatter_into": lambda idx: cs.scatter_into(np.zeros(3), SRC, idx),
    "scatter_argmax": lambda idx: cs.scatter_argmax(SRC, idx, dim_size=3),
    "scatter_softmax": lambda idx: cs.scatter_softmax(SRC, idx, dim_size=3),
    "scatter_var": lambda idx: cs.scatter_var(SRC, idx, dim_size=3),
    "scatter_vjp_src": lambda idx: cs.scatter_vjp_src("add", np.ones(3), SRC, idx, np.zeros(3)),
    "grad.scatter": lambda idx: grad.scatter(SRC, idx, "add", dim_size=3),
}


def _torch_expanded():
    torch = pytest.importorskip("torch")
    return torch.from_numpy(IDX).view(-1, 1).expand_as(torch.from_numpy(SRC))


@pytest.mark.parametrize("name", CALLS)
@pytest.mark.parametrize("make", [lambda: EXPANDED, _torch_expanded], ids=["broadcast_to", "torch expand_as"])
def test_refused_with_the_index_to_pass(name, make):
    with pytest.raises(ValueError, match=r"torch-style expanded index.*index\[:, 0\]"):
        CALLS[name](make())


def test_the_named_index_gives_torchs_result():
    np.testing.assert_array_equal(cs.scatter(SRC, EXPANDED[:, 0], "add", dim_size=3), _torch_style_sum(SRC, IDX, 3))
    torch = pytest.importorskip("torch")
    expected = torch.zeros(3, 3, dtype=torch.float64).scatter_reduce(
        0, torch.from_numpy(np.ascontiguousarray(EXPANDED)), torch.from_numpy(SRC), "sum")
    np.testing.assert_array_equal(cs.scatter(SRC, EXPANDED[:, 0], "add", dim_size=3), expected.numpy())


def test_three_dims_and_the_message_shows_the_index():
    src = np.arange(24.0).reshape(2, 3, 4)
    index = np.broadcast_to(np.array([[0, 1, 1], [2, 0, 1]])[..., None], src.shape)
    with pytest.raises(ValueError, match=r"index\[:, :, 0\] \(shape \(2, 3\)\)"):
        cs.scatter(src, index)


@pytest.mark.parametrize("index, src", [
    (np.array([[0, 1, 0], [1, 1, 0], [2, 0, 0], [1, 0, 1]]), SRC),   # varies along the last axis
    (IDX[:, None], SRC[:, :1]),                                         # a last axis of one
    (np.ascontiguousarray(EXPANDED), SRC),                              # equal values, a plain layout
    (np.zeros((0, 3), np.int64), np.zeros((0, 3))),                     # empty
])
def test_other_2d_indices_keep_nnlibs_meaning(index, src):
    expected = np.zeros(int(index.max(initial=-1)) + 1)
    np.add.at(expected, index.ravel(), src.ravel())
    np.testing.assert_array_equal(cs.scatter(src, index, "add"), expected)


def test_an_index_with_feature_dims_is_not_checked():
    """A 2-d index of a 3-d src has a feature dim: NNlib's index of entries, whatever its values."""
    src = np.arange(24.0).reshape(4, 3, 2)
    index = np.ascontiguousarray(EXPANDED)
    expected = np.zeros((3, 2))
    np.add.at(expected, index.ravel(), src.reshape(-1, 2))
    np.testing.assert_array_equal(cs.scatter(src, index, "add"), expected)


def test_dask_refuses_an_in_memory_expanded_index():
    csd = pytest.importorskip("cyscatter.dask")
    with pytest.raises(ValueError, match=r"torch-style expanded index"):
        csd.scatter(SRC, EXPANDED, dim_size=3)
    with pytest.raises(ValueError, match=r"torch-style expanded index"):
        csd.scatter_argmin(SRC, EXPANDED, dim_size=3)
    np.testing.assert_array_equal(csd.scatter(SRC, EXPANDED[:, 0], dim_size=3).compute(),
                                  _torch_style_sum(SRC, IDX, 3))


def test_the_message_shows_src_with_its_batch_dims():
    src = np.ones((5, 4, 3))
    with pytest.raises(ValueError, match=r"index has the shape \(4, 3\) of src \(5, 4, 3\) after axis=1"):
        cs.scatter(src, EXPANDED, axis=1)
