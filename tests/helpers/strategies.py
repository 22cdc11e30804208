"""Hypothesis strategies for scatter/gather problems: shapes around an axis (empty ones included), int and tuple
indices of every integer dtype with chosen hit patterns and out-of-range entries, values with NaN, +-inf, -0.0,
huge and tiny magnitudes, and the memory layouts (Fortran, strided, negative strides) every argument may come in.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import hypothesis.extra.numpy as hnp
import numpy as np
from hypothesis import settings
from hypothesis import strategies as st

from cyscatter import get_op
from testing import INDEX_DTYPES, OPS, VALUE_DTYPES, op_supports

MODES = ("raise", "drop", "wrap", "clip")
LAYOUTS = ("C", "F", "strided", "reversed")
# gather only moves items, so it must take any dtype: odd item sizes (bool, 16-byte long double, 32-byte complex),
# strings and datetimes too
GATHER_DTYPES = VALUE_DTYPES + ("bool", "longdouble", "clongdouble", "U3", "M8[s]")


def examples(n: int) -> settings:
    """`n` examples, scaled with the profile (conftest's "thorough" profile runs 20 times as many)."""
    return settings(max_examples=max(1, n * settings.default.max_examples // 100))


# ---- values ------------------------------------------------------------------------------------------------------

def _specials(dtype: np.dtype) -> list:
    if dtype.kind not in "fc":
        return []
    real = np.dtype(dtype.char.lower()) if dtype.kind == "c" else dtype
    info = np.finfo(real)
    return [np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, -1.0, info.max, -info.max, info.tiny, info.smallest_subnormal]


def elements(dtype, finite: bool = False, op: str = "add", complex_result: bool = False) -> st.SearchStrategy:
    """Scalars of `dtype`, often the special ones (unless `finite`).

    Complex products (a complex `dtype`, or `complex_result`: values cast into a complex destination) are the
    exception, with magnitudes in [0.5, 2]: NumPy multiplies complex numbers with fused multiply-adds where the
    CPU has them and the kernels do not, so they agree to a few ulps only while nothing overflows or underflows;
    and with infinities the kernels' C complex multiply (C99 Annex G) and NumPy's differ (see the report).
    """
    dtype = np.dtype(dtype)
    if op in ("mul", "nanprod") and (dtype.kind == "c" or complex_result):
        if dtype.kind == "c":
            return st.complex_numbers(min_magnitude=0.5, max_magnitude=2, width=8 * dtype.itemsize).map(dtype.type)
        if dtype.kind == "f":
            return st.floats(0.5, 2, width=8 * dtype.itemsize).flatmap(lambda v: st.sampled_from((v, -v)))
        return st.integers(0 if dtype.kind == "u" else -2, 2).map(dtype.type)
    if finite:
        return hnp.from_dtype(dtype, allow_nan=False, allow_infinity=False)
    plain = hnp.from_dtype(dtype)
    specials = _specials(dtype)
    return st.one_of(st.sampled_from(specials), plain) if specials else plain


def value_arrays(dtype, shape, finite: bool = False, op: str = "add", complex_result: bool = False):
    return hnp.arrays(np.dtype(dtype), shape, elements=elements(dtype, finite, op, complex_result))


# ---- layouts -----------------------------------------------------------------------------------------------------

@dataclass
class Laid:
    """An array in some memory layout, with the buffer around it so that writes outside the view can be seen."""

    view: np.ndarray
    base: np.ndarray
    slices: tuple | None

    def assert_outside_untouched(self, base_before: np.ndarray) -> None:
        """Everything of `base` that is not part of `view` still holds what it held before."""
        if self.slices is None:
            return
        now = self.base.copy()
        now[self.slices] = base_before[self.slices]
        assert now.tobytes() == base_before.tobytes(), "a write landed outside the destination view"


def lay_out(a: np.ndarray, layout: str) -> Laid:
    """The values of `a` in `layout`: C, F (Fortran), strided (every other element of a padded buffer, every
    axis) or reversed (negative strides on every axis)."""
    if a.ndim == 0 or layout == "C":
        a = np.array(a, order="C")
        return Laid(a, a, None)
    if layout == "F":
        a = np.asfortranarray(a)
        return Laid(a, a, None)
    if layout == "strided":
        base = np.zeros(tuple(2 * s + 1 for s in a.shape), a.dtype)
        slices = tuple(slice(1, 2 * s, 2) for s in a.shape)
        base[slices] = a
        return Laid(base[slices], base, slices)
    flip = (slice(None, None, -1),) * a.ndim
    buffer = np.ascontiguousarray(a[flip])
    return Laid(buffer[flip], buffer, None)


def laid_out(draw, a: np.ndarray) -> np.ndarray:
    return lay_out(a, draw(st.sampled_from(LAYOUTS))).view


# ---- indices -----------------------------------------------------------------------------------------------------

@dataclass
class IndexCase:
    """An index (int array or tuple of arrays) over destination `dims`, and how it was drawn."""

    index: object
    dims: tuple
    dim_size: object      # what to pass as dim_size: the dims, an int, or None (inferred)
    pattern: str
    has_huge: bool

    @property
    def coords(self) -> tuple:
        return self.index if isinstance(self.index, tuple) else (self.index,)


def _shape(draw, max_dims: int, max_side: int) -> tuple:
    return tuple(draw(st.lists(st.integers(0, max_side), max_size=max_dims)))


@st.composite
def index_cases(draw, ishape: tuple, mode: str, max_rows: int = 5) -> IndexCase:
    """An index of shape `ishape`: an int array (one destination axis) or a tuple of 1-2 arrays.

    Patterns: random rows; every row hit; one-element groups (distinct rows); one group for all; no row hit.
    Under any mode but raise some entries are moved out of range (negatives for signed dtypes; for uint64
    sometimes past 2**63); under raise that happens rarely, and the reference says what should be raised.
    """
    kind = draw(st.sampled_from(("int", "tuple")))
    m = 1 if kind == "int" else draw(st.integers(1, 2))
    dtype = np.dtype(draw(st.sampled_from(INDEX_DTYPES)))
    n = math.prod(ishape)
    pattern = draw(st.sampled_from(("random", "cover", "distinct", "same", "none")))
    dims = tuple(draw(st.integers(0 if pattern != "cover" else 1, max_rows)) for _ in range(m))
    rows = math.prod(dims)
    if pattern == "cover" and n >= rows:
        flat = list(draw(st.permutations(range(rows)))) + draw(st.lists(st.integers(0, rows - 1), min_size=n - rows,
                                                                        max_size=n - rows))
    elif pattern == "distinct" and 0 < n <= rows:
        flat = draw(st.lists(st.integers(0, rows - 1), min_size=n, max_size=n, unique=True))
    elif pattern == "same" and rows:
        flat = [draw(st.integers(0, rows - 1))] * n
    elif rows and pattern != "none":
        flat = draw(st.lists(st.integers(0, rows - 1), min_size=n, max_size=n))
    else:
        flat = [0] * n
    if rows:
        coords = [c.reshape(-1).tolist() for c in np.unravel_index(np.asarray(flat, np.int64), dims)]
    else:
        coords = [[0] * n for _ in dims]
    has_huge = False
    if pattern == "none" or not rows or (mode != "raise" and draw(st.booleans())) or \
            (mode == "raise" and n and draw(st.integers(0, 9)) == 0):
        everything = pattern == "none" or not rows
        for k in range(n):
            if not everything and not draw(st.booleans()):
                continue
            axis = draw(st.integers(0, m - 1))
            size = dims[axis]
            choices = [st.integers(size, 2 * size + 2)]
            if dtype.kind == "i":
                choices.append(st.integers(-2 * size - 2, -1))
            if dtype == np.uint64:
                choices.append(st.integers(2**63, 2**63 + 5))
            bad = draw(st.one_of(choices))
            has_huge |= bad >= 2**63
            coords[axis][k] = bad
    info = np.iinfo(dtype)
    for c in coords:
        if any(not info.min <= v <= info.max for v in c):   # a value the index dtype cannot hold: keep it in range
            c[:] = [v if info.min <= v <= info.max else 0 for v in c]
    arrays = tuple(laid_out(draw, np.asarray(c, dtype).reshape(ishape)) for c in coords)
    index = arrays[0] if kind == "int" else arrays
    if has_huge or draw(st.booleans()):
        dim_size = dims if kind == "tuple" or draw(st.booleans()) else dims[0]
    else:
        dim_size = None
    return IndexCase(index, dims, dim_size, pattern, has_huge)


def inferred_dims(case: IndexCase) -> tuple:
    """The documented default destination sizes: the largest entry + 1 per coordinate, 0 for an empty index."""
    if case.dim_size is not None:
        return case.dims if isinstance(case.dim_size, tuple) else (case.dim_size,)
    return tuple(max(int(c.max()) + 1, 0) if c.size else 0 for c in case.coords)


# ---- whole problems ----------------------------------------------------------------------------------------------

@dataclass
class Problem:
    """src of shape B + I + F around an index of shape I at `axis` (possibly given as a negative number)."""

    op: str
    op_name: str          # what is passed: the op's name or one of its aliases
    mode: str
    batch: tuple
    ishape: tuple
    feat: tuple
    axis: int
    case: IndexCase

    @property
    def index(self):
        return self.case.index

    def out_shape(self, dims=None) -> tuple:
        return self.batch + tuple(inferred_dims(self.case) if dims is None else dims) + self.feat


@st.composite
def problems(draw, ops=OPS, max_dims: int = 2, max_side: int = 3) -> Problem:
    """Shapes, op, mode and index of a scatter (or, read backwards, of a gather)."""
    op = draw(st.sampled_from(ops))
    op_name = draw(st.sampled_from((op,) + get_op(op).aliases))
    mode = draw(st.sampled_from(MODES))
    batch = _shape(draw, max_dims, max_side)
    ishape = _shape(draw, max_dims, max_side + 1)
    feat = _shape(draw, max_dims, max_side)
    case = draw(index_cases(ishape, mode))
    return Problem(op, op_name, mode, batch, ishape, feat, len(batch), case)


def axis_as_given(draw, problem: Problem, ndim: int) -> int:
    """`problem.axis`, or the same axis counted from the end of an ndim-array."""
    return problem.axis - ndim if problem.axis < ndim and draw(st.booleans()) else problem.axis


def value_dtypes(op: str) -> st.SearchStrategy:
    return st.sampled_from([d for d in VALUE_DTYPES if op_supports(op, d)])
