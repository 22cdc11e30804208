"""One case of scatter / scatter_into / gather / gather_into on a backend against the plain-loop reference: the
checks the feature files and the conformance grid share."""
from __future__ import annotations

import cyscatter as cs
from compare import assert_same, tolerance
from inputs import BASE, DIMS, in_layout, index, rng_for, values
from reference import ref_gather, ref_scatter, result_dtype

SCATTER_FORMS = ("scatter", "scatter_into")
GATHER_FORMS = ("gather", "gather_into")


def check_scatter(backend, op, dtype, kind, form, *, geom=BASE, index_dtype="int64", layout="C", mode="raise",
                  dims=None, fill_value=None):
    """Run one scatter case on `backend` and compare it with the reference on NumPy copies of the inputs."""
    rng = rng_for(op, dtype, kind, form, geom, index_dtype, layout, mode, fill_value)
    dims = DIMS[kind] if dims is None else dims
    src = values(dtype, geom.src_shape(), rng, op)
    idx = index(kind, index_dtype, geom.ishape, dims, rng, out_of_range=mode != "raise")
    dim_size = dims if kind == "tuple" else dims[0]
    src_in, idx_in = in_layout(layout, src, backend.xp), in_layout(layout, idx, backend.xp)
    assert src_in is not None, f"no {layout} layout on {backend.name}: leave the case out with pytest.mark.valid"
    dst = None
    if form == "scatter":
        expected = ref_scatter(src, idx, op, dim_size=dim_size, axis=geom.axis, mode=mode, fill_value=fill_value)
        actual = cs.scatter(src_in, idx_in, op, dim_size=dim_size, axis=geom.axis, mode=mode,
                            fill_value=fill_value)
    else:
        dst = values(result_dtype(op, dtype), geom.out_shape(dims), rng, op)
        expected = ref_scatter(src, idx, op, axis=geom.axis, mode=mode, dst=dst)
        actual = in_layout("C" if layout == "readonly" else layout, dst, backend.xp)
        assert cs.scatter_into(actual, src_in, idx_in, op, axis=geom.axis, mode=mode) is actual
    assert_same(backend.to_numpy(actual), expected, *tolerance(backend.name, op, dtype, src, dst))


def check_gather(backend, dtype, kind, form, *, geom=BASE, index_dtype="int64", layout="C", mode="raise",
                 fill_value=0):
    """Gather from src of shape B + D + F into B + I + F on `backend`; compare with the reference."""
    rng = rng_for(dtype, kind, form, geom, index_dtype, layout, mode, fill_value)
    dims = DIMS[kind]
    src = values(dtype, geom.out_shape(dims), rng)
    idx = index(kind, index_dtype, geom.ishape, dims, rng, out_of_range=mode != "raise")
    axis = geom.gather_axis(len(dims))
    src_in, idx_in = in_layout(layout, src, backend.xp), in_layout(layout, idx, backend.xp)
    assert src_in is not None, f"no {layout} layout on {backend.name}: leave the case out with pytest.mark.valid"
    if form == "gather":
        expected = ref_gather(src, idx, axis=axis, mode=mode, fill_value=fill_value)
        actual = cs.gather(src_in, idx_in, axis=axis, mode=mode, fill_value=fill_value)
    else:
        dst = values(dtype, geom.src_shape(), rng)
        expected = ref_gather(src, idx, axis=axis, mode=mode, dst=dst)
        actual = in_layout("C" if layout == "readonly" else layout, dst, backend.xp)
        assert cs.gather_into(actual, src_in, idx_in, axis=axis, mode=mode) is actual
    assert_same(backend.to_numpy(actual), expected)
