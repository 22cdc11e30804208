"""Input builders shared by the table tests: values per dtype, int/tuple indices, shapes around an axis, and
the memory layouts every function must accept. Deterministic (seeded), so a failure names a reproducible case."""
from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

# Destination shape D an index addresses: one axis for an integer index, two for a tuple index.
DIMS = {"int": (5,), "tuple": (3, 4)}


def rng_for(*key) -> np.random.Generator:
    """A generator seeded by the test's parameters, so each case draws its own reproducible inputs."""
    return np.random.default_rng([zlib.crc32(str(k).encode()) for k in key])


def values(dtype, shape, rng, op: str = "add") -> np.ndarray:
    """Random values of `dtype` that keep every op finite and free of integer-division corner cases.

    mul/div draw magnitudes near 1 (no overflow, no division by zero); integers stay small so that products
    of a few of them fit every integer dtype.
    """
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind in "MV":   # only moved, never computed with: random bytes
        return rng.integers(0, 256, tuple(shape) + (dtype.itemsize,), np.uint8).view(dtype)[..., 0]
    if dtype.kind in "iu":
        low, high = (1, 4) if op in ("mul", "div", "nanprod") else ((0 if dtype.kind == "u" else -9), 10)
        return rng.integers(low, high, size=shape).astype(dtype)
    if op in ("mul", "div", "nanprod"):
        real = rng.uniform(0.5, 2.0, shape) * rng.choice([-1.0, 1.0], shape)
    else:
        real = rng.standard_normal(shape) * 4
    if dtype.kind == "c":
        imag = rng.uniform(0.5, 2.0, shape) if op in ("mul", "div", "nanprod") else rng.standard_normal(shape)
        return (real + 1j * imag).astype(dtype)
    return real.astype(dtype)


def index(kind: str, dtype, ishape, dims, rng, *, out_of_range: bool = False):
    """An int index (kind "int", one dim) or a tuple of len(dims) arrays, each of shape `ishape`.

    With `out_of_range`, about a third of the entries fall outside ``[0, size)``: negatives (for signed
    dtypes) and values at or past the size, to exercise the modes.
    """
    dtype = np.dtype(dtype)
    coords = []
    for size in dims:
        c = rng.integers(0, max(size, 1), size=ishape) if size else np.zeros(ishape, np.int64)
        if out_of_range and c.size:
            low = -2 * size if dtype.kind == "i" else size
            bad = rng.integers(low, 2 * size + 1, size=ishape)
            bad = np.where((bad >= 0) & (bad < size), size, bad)
            c = np.where(rng.random(ishape) < 0.35, bad, c)
            if len(coords) == 0:   # at least one bad entry in every such index
                c.flat[0] = bad.flat[0]
        coords.append(c.astype(dtype))
    return coords[0] if kind == "int" else tuple(coords)


@dataclass(frozen=True)
class Geometry:
    """Where the index sits in src: batch dims B, index shape I, feature dims F and the `axis` passed."""

    name: str
    batch: tuple
    ishape: tuple
    feat: tuple
    axis: int

    def src_shape(self) -> tuple:
        return self.batch + self.ishape + self.feat

    def out_shape(self, dims) -> tuple:
        return self.batch + tuple(dims) + self.feat

    def gather_axis(self, m: int) -> int:
        """`axis` for gathering from an array of shape B + D + F with m = len(D): a negative axis counts from
        the end of that array, as it counts from the end of src (B + I + F) for a scatter."""
        if self.axis >= 0:
            return self.axis
        return len(self.batch) - (len(self.batch) + m + len(self.feat))

    def __str__(self):
        return self.name


GEOMETRIES = (
    Geometry("axis0", (), (7,), (3,), 0),
    Geometry("axis1", (2,), (7,), (3,), 1),
    Geometry("axis-1", (2,), (7,), (), -1),
    Geometry("index2d", (), (2, 4), (2,), 0),
    Geometry("index2d-axis-2", (3,), (2, 4), (), -2),
    Geometry("features2d", (), (6,), (2, 3), 0),
)
# Shapes with nothing to do somewhere: every function must return the right (possibly empty) result.
EMPTY_GEOMETRIES = (
    Geometry("feature0d", (), (7,), (), 0),
    Geometry("empty-index", (2,), (0,), (3,), 1),
    Geometry("empty-batch", (0,), (7,), (3,), 1),
    Geometry("zero-size-feature", (), (7,), (0,), 0),
)
BASE = GEOMETRIES[1]   # batch, index and feature dims all present


# ---- layouts ------------------------------------------------------------------------------------------------
# Each takes an array (NumPy or CuPy) and returns an array with the same values in another memory layout.

def _c(a, xp):
    return xp.ascontiguousarray(a)


def _fortran(a, xp):
    return xp.asfortranarray(a)


def _strided(a, xp):
    """A non-contiguous view: every other element of a doubled last axis."""
    return xp.stack([a, xp.zeros_like(a)], axis=-1)[..., 0]


def _reversed(a, xp):
    """A view with negative strides on every axis."""
    flip = (slice(None, None, -1),) * a.ndim
    return xp.ascontiguousarray(a[flip])[flip]


def _readonly(a, xp):
    if xp is not np:
        return None
    a = np.array(a)
    a.setflags(write=False)
    return a


LAYOUTS = {"C": _c, "fortran": _fortran, "strided": _strided, "reversed": _reversed, "readonly": _readonly}


def in_layout(name: str, a, xp=np):
    """`a` (array or tuple of arrays) in layout `name`; None when the backend has no such layout."""
    if isinstance(a, tuple):
        parts = tuple(in_layout(name, x, xp) for x in a)
        return None if any(p is None for p in parts) else parts
    return LAYOUTS[name](xp.asarray(a), xp)


def pick(choices, *key):
    """One of `choices`, chosen by a hash of `key`: spreads a dimension over a product without multiplying it."""
    return choices[zlib.crc32(repr(key).encode()) % len(choices)]


def with_nans(a: np.ndarray, rng, share: float = 0.3) -> np.ndarray:
    """`a` with about `share` of its entries NaN (complex: NaN in the real or the imaginary part only)."""
    a = np.array(a)
    if a.dtype.kind not in "fc" or a.size == 0:
        return a
    where = rng.random(a.shape) < share
    if a.dtype.kind == "c":
        real_part = rng.random(a.shape) < 0.5
        a[where & real_part] = a[where & real_part].imag * 1j + np.nan
        a[where & ~real_part] = a[where & ~real_part].real + 1j * np.nan
    else:
        a[where] = np.nan
    return a


# ---- gather_scatter: edges between a source of SRC_DIMS and a destination of DST_DIMS, weight kinds

WEIGHTS = ("none", "edge", "head", "head-broadcast")
SRC_DIMS = {"int": (7,), "tuple": (3, 4)}
DST_DIMS = {"int": (6,), "tuple": (2, 5)}


def edges(kind, n_edges, rng, *, out_of_range=False):
    """(gather_index, scatter_index) of `kind`, every destination row of the int kind reached but one."""
    def coords(dims):
        cs_ = [rng.integers(0, d, n_edges) for d in dims]
        if out_of_range:
            for c, d in zip(cs_, dims):
                bad = rng.random(n_edges) < 0.3
                c[bad] = rng.choice([-1, d, d + 2, -d - 3], int(bad.sum()))
        return cs_[0] if kind == "int" else tuple(cs_)
    return coords(SRC_DIMS[kind]), coords(DST_DIMS[kind])
