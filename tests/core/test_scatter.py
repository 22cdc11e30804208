"""scatter and scatter_into against the reference: ops x value dtypes x int/tuple index x axis x
layouts x modes, allocating and in place (the index dtypes: test_conformance.py). Results must match bit for bit
(see compare.py)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import cyscatter as cs
from checks import SCATTER_FORMS as FORMS, check_scatter
from compare import assert_same, tolerance
from inputs import DIMS, EMPTY_GEOMETRIES, GEOMETRIES, index, pick, rng_for, values
from reference import ref_scatter
from testing import INDEX_KINDS, KERNEL_VALUE_DTYPES, OPS, VALUE_DTYPES, into_supports, op_supports, true_division


def supported(*lists):
    """The product of (op, dtype, ...) lists without the combinations the op rejects (complex max/min)."""
    return [p for p in itertools.product(*lists) if op_supports(p[0], p[1])]


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("op,dtype,kind", supported(OPS, VALUE_DTYPES, INDEX_KINDS))
def test_every_op_dtype_and_index_kind(backend, op, dtype, kind, form):
    check_scatter(backend, op, dtype, kind, form)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("kind", INDEX_KINDS)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("geom", GEOMETRIES + EMPTY_GEOMETRIES, ids=str)
def test_axis_and_shapes(backend, geom, op, kind, form):
    dtype = pick(KERNEL_VALUE_DTYPES, geom, op, kind, form)
    check_scatter(backend, op, dtype, kind, form, geom=geom)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("kind", INDEX_KINDS)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("layout", ["C", "fortran", "strided", "reversed", "readonly"])
@pytest.mark.valid(lambda backend, layout: layout != "readonly" or backend == "numpy")   # CuPy: no read-only
def test_layouts(backend, layout, op, kind, form):
    """src, index and dst in the layout (dst stays writeable); results as for C-ordered copies."""
    dtype = pick(("float64", "float32", "int64", "complex128" if op_supports(op, "c16") else "int32"),
                 layout, op, kind, form)
    geom = pick(GEOMETRIES, layout, op, kind)
    check_scatter(backend, op, dtype, kind, form, geom=geom, layout=layout)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("kind", INDEX_KINDS)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("mode", ["drop", "wrap", "clip"])
def test_modes(backend, mode, op, kind, form):
    """Out-of-range entries (negative and too large, signed and unsigned index dtypes) under each mode."""
    index_dtype = pick(("int64", "int32", "int8", "uint8", "uint64"), mode, op, kind, form)
    dtype = pick(KERNEL_VALUE_DTYPES, mode, op, kind, form)
    check_scatter(backend, op, dtype, kind, form, index_dtype=index_dtype, mode=mode,
                  geom=pick(GEOMETRIES, mode, op, kind, form))


@pytest.mark.parametrize("kind", INDEX_KINDS)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("fill_value", [-7, 2.5, np.nan])
def test_fill_value(backend, fill_value, op, kind):
    """Positions no entry reaches hold fill_value (dims larger than the index reaches guarantee some)."""
    dtype = "float64" if isinstance(fill_value, float) or true_division(op) else pick(("int64", "int32"),
                                                                                          op, kind)
    dims = (9,) if kind == "int" else (4, 6)
    check_scatter(backend, op, dtype, kind, "scatter", dims=dims, fill_value=fill_value)


def test_fill_value_is_cast_same_kind():
    with pytest.raises(TypeError):
        cs.scatter(np.ones(3, np.int64), np.array([0, 0, 2]), fill_value=0.5)


@pytest.mark.parametrize("kind", INDEX_KINDS)
@pytest.mark.parametrize("op", OPS)
def test_dim_size_inferred(backend, op, kind):
    """Default dim_size: the largest entry + 1 per coordinate, as the reference infers it."""
    rng = rng_for("infer", op, kind)
    src = values("float64", (9, 2), rng, op)
    idx = index(kind, "int64", (9,), DIMS[kind], rng)
    expected = ref_scatter(src, idx, op)
    assert expected.shape[:-1] == tuple(int(c.max()) + 1 for c in (idx if kind == "tuple" else (idx,)))
    backend.assert_result(cs.scatter(backend.asarray(src), backend.asarray(idx), op), expected, op, src)


@pytest.mark.parametrize("kind", INDEX_KINDS)
def test_dim_size_of_empty_index_is_zero(backend, kind):
    m = 1 if kind == "int" else 3
    idx = tuple(np.zeros(0, np.int64) for _ in range(m))
    out = cs.scatter(backend.asarray(np.zeros((0, 4))), backend.asarray(idx[0] if kind == "int" else idx))
    assert out.shape == (0,) * m + (4,)


def test_tuple_dim_size(backend):
    src = np.arange(1.0, 5.0)
    idx = (np.array([0, 1, 1, 0]), np.array([2, 0, 2, 2]))
    out = cs.scatter(backend.asarray(src), backend.asarray(idx), dim_size=(3, 4))
    backend.assert_result(out, ref_scatter(src, idx, dim_size=(3, 4)), "add", src)
    assert out.shape == (3, 4)


@pytest.mark.parametrize("alias,op", [("sum", "add"), ("prod", "mul"), ("amax", "max"), ("amin", "min")])
def test_op_aliases(backend, alias, op):
    rng = rng_for("alias", alias)
    src, idx = values("float64", (8, 2), rng, op), index("int", "int64", (8,), (5,), rng)
    out = cs.scatter(backend.asarray(src), backend.asarray(idx), alias, dim_size=5)
    backend.assert_result(out, ref_scatter(src, idx, op, dim_size=5), op, src)


def test_src_cast_to_dst_dtype_first(backend):
    """scatter_into casts src to dst's dtype before reducing (NumPy's ufunc.at does the same)."""
    dst = np.zeros(3, np.float32)
    src = np.array([0.1, 0.2, 0.3, 1e-9], np.float64)
    idx = np.array([0, 0, 2, 2])
    expected = dst.copy()
    np.add.at(expected, idx, src.astype(np.float32))
    out = backend.asarray(dst)
    cs.scatter_into(out, backend.asarray(src), backend.asarray(idx))
    assert_same(backend.to_numpy(out), expected)


CAST_PAIRS = [("float64", "float16"), ("float64", "float32"), ("int64", "int8"), ("int8", "int64"),
              ("int32", "float64"), ("float32", "complex64"), ("uint8", "int16"), ("uint64", "float64")]


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("src_dtype,dst_dtype", CAST_PAIRS, ids=str)
@pytest.mark.valid(lambda dst_dtype, op: into_supports(op, dst_dtype))
def test_scatter_into_other_dtype(backend, src_dtype, dst_dtype, op):
    """src of another dtype (same_kind castable) is cast to dst's dtype first, then reduced in dst's rules."""
    rng = rng_for("cast", src_dtype, dst_dtype, op)
    src = values(src_dtype, (9, 2), rng, op) * (50 if np.dtype(src_dtype).kind in "iu" and op != "mul" else 1)
    idx = index("int", "int64", (9,), (4,), rng)
    dst = values(dst_dtype, (4, 2), rng, op)
    expected = ref_scatter(src, idx, op, dst=dst)
    out = backend.call(cs.scatter_into, dst.copy(), src, idx, op)
    assert_same(out, expected, *tolerance(backend.name, op, dst_dtype, src, dst))
