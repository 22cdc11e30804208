"""float16 -> float32 in the branchless kernel (`kernels.half_to_float`, `_canonical.cast`): the same bits as
NumPy's own cast for every one of the 65536 inputs (NaN payloads, signalling ones and signs included), and the
fallbacks for the layouts it does not take."""
import numpy as np
import pytest

import cyscatter as cs
from cyscatter import kernels
from cyscatter._backends.host import cast

ALL = np.arange(65536, dtype=np.uint32).astype(np.uint16)


def test_every_float16_converts_as_numpy_does():
    got = np.empty(ALL.size, np.float32)
    kernels.half_to_float(ALL, got)
    want = ALL.view(np.float16).astype(np.float32)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_lengths_must_match():
    with pytest.raises(ValueError, match="3 elements but dst 2"):
        kernels.half_to_float(np.zeros(3, np.uint16), np.zeros(2, np.float32))


@pytest.mark.parametrize("layout", ["c", "strided", "fortran", "big-endian", "empty", "0-d"])
def test_cast_takes_every_layout(layout):
    rng = np.random.default_rng(3)
    base = rng.standard_normal((6, 5)).astype(np.float16)
    arr = {"c": base, "strided": base[:, ::2], "fortran": np.asfortranarray(base),
           "big-endian": base.astype(">f2"), "empty": base[:0], "0-d": base[0, 0]}[layout]
    arr = np.asarray(arr)
    got = cast(arr, np.float32)
    assert got.dtype == np.float32 and got.shape == arr.shape
    np.testing.assert_array_equal(got, arr.astype(np.float32))


@pytest.mark.parametrize("op", ["add", "max", "mean", "nansum"])
def test_float16_scatter_matches_float32_of_the_same_values(op):
    rng = np.random.default_rng(4)
    src = rng.standard_normal((2000, 7)).astype(np.float16)
    src[5, 3] = np.nan
    index = rng.integers(0, 40, 2000)
    want = cs.scatter(src.astype(np.float32), index, op, dim_size=40).astype(np.float16)
    np.testing.assert_array_equal(cs.scatter(src, index, op, dim_size=40), want)
