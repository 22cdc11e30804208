"""cyscatter.dask's assignments (set / first) move every dtype the in-memory ones do (datetimes, strings), with
the same fresh rows (NaT for datetime64, the dtype's zero otherwise), checked against a plain loop."""
import numpy as np
import pytest

da = pytest.importorskip("dask.array")
import cyscatter.dask as csd

INDEX = np.array([3, 0, 3, 1, 0])


def _loop(src, first):
    out = np.full(4, np.array("NaT", src.dtype)[()] if src.dtype.kind == "M" else np.zeros((), src.dtype)[()],
                  src.dtype)
    seen = set()
    for k, j in enumerate(INDEX):
        if not (first and j in seen):
            out[j] = src[k]
        seen.add(j)
    return out


@pytest.mark.parametrize("op", ["set", "first"])
@pytest.mark.parametrize("src", [
    np.array(["2020-01-01", "NaT", "1999-12-31", "2000-02-29", "2024-07-04"], "M8[D]"),
    np.array(["a", "bcd", "", "ef", "g"]),
], ids=["datetime64", "str"])
def test_dask_assignment_of_non_number_dtypes_matches_the_loop(op, src):
    got = csd.scatter(da.from_array(src, chunks=2), da.from_array(INDEX, chunks=2), op, dim_size=4).compute()
    assert got.dtype == src.dtype
    np.testing.assert_array_equal(got, _loop(src, op == "first"))
