"""Index parsing: integer or tuple index -> one flat destination row per entry, with the chosen out-of-range mode.

An integer index addresses one destination axis; a tuple of m integer arrays (NumPy advanced indexing, NNlib's
tuples/CartesianIndex) addresses m axes, which are flattened here into one row number (C order), so the kernels
only ever see a flat int32/int64 vector.
"""
from __future__ import annotations

import importlib
import math
import reprlib
from contextlib import contextmanager
from typing import Any

import numpy as np

from cyscatter import kernels
from cyscatter._arrays.integers import as_int
from cyscatter._arrays.protocols import array_module
from cyscatter._backends import host

MODES = ("raise", "drop", "wrap", "clip", "normalize_drop")
# the modes under which entries still out of range after planning are skipped (the kernels' MODE_DROP)
DROPPING = ("drop", "normalize_drop")
_INT64_MAX = np.iinfo(np.int64).max
_INT32_MAX = np.iinfo(np.int32).max
# the arguments by which a caller sizes the indexed axes: a bound error names the one given (it may be too small)
_SIZE_ARGS = ("dim_size", "src_size")
# a size read off another argument's shape (a reverse function's grad_out, gather_scatter's src): the bound error
# says where it came from, and why that argument's shape gives it
_SHAPE_ARGS = {"grad_out.shape": "grad_out has a row per group", "out.shape": "out has a row per group",
               "src.shape": "src has a row per gathered node"}
_MODE_DROP, _MODE_RAISE = kernels.IndexMode.MODE_DROP, kernels.IndexMode.MODE_RAISE


class IndexPlan:
    """A validated index in the kernels' terms.

    flat : (n,) int32 or int64, the destination row of each entry in the flattened `dims` (C order); entries
        outside ``[0, size)`` are skipped under ``mode='drop'`` and reported under ``mode='raise'``.
    shape : the index shape I (the shape of each coordinate array).
    dims : the destination shape D addressed by the index (m = len(dims) axes).
    n, size : the entries and the destination rows (the product of `dims`).
    drops : whether entries out of range after planning are skipped (mode 'drop' or 'normalize_drop');
        kernel_mode is the kernels' code for it.

    Read-only by convention; the derived values are computed once, here (a plan is read many times a call).
    """

    __slots__ = ("flat", "shape", "dims", "mode", "coords", "arg", "n", "size", "drops", "kernel_mode", "sized_by")

    def __init__(self, flat, shape: tuple, dims: tuple, mode: str, coords: tuple, arg: str = "index",
                 sized_by: str | None = None):
        self.flat, self.shape, self.dims, self.mode, self.coords, self.arg = flat, shape, dims, mode, coords, arg
        self.sized_by = sized_by   # "dim_size=3 was given" when the caller gave the sizes: a bound error names it
        self.n = flat.shape[0]
        self.size = math.prod(dims)
        self.drops = mode in DROPPING
        self.kernel_mode = _MODE_DROP if self.drops else _MODE_RAISE

    def __repr__(self) -> str:
        return f"IndexPlan(n={self.n}, shape={self.shape}, dims={self.dims}, mode={self.mode!r})"

    def __reduce__(self):
        # by its constructor's arguments: every pickle protocol (0 and 1 cannot store __slots__ otherwise)
        return IndexPlan, (self.flat, self.shape, self.dims, self.mode, self.coords, self.arg, self.sized_by)

    def rows(self, r0: int, r1: int) -> IndexPlan:
        """The plan of entries [r0, r1) (a view of `flat`), for a pass over a chunk of src rows after the whole
        index was checked: its errors would name positions within the chunk."""
        flat = self.flat[r0:r1]
        return IndexPlan(flat, flat.shape, self.dims, self.mode, (flat,), self.arg, self.sized_by)

    def valid(self) -> np.ndarray:
        """Boolean (n,) mask of the entries that take part (all of them unless mode='drop' or
        'normalize_drop')."""
        return (self.flat >= 0) & (self.flat < self.size)

    def groups(self) -> tuple:
        """(order, indptr), both int64: the positions of the valid entries sorted by destination row, stably,
        and where each row's run starts, so row j's entries are ``order[indptr[j]:indptr[j + 1]]`` in index
        order (the layout of a CSR matrix)."""
        xp = array_module(self.flat)
        valid = self.valid()
        order = xp.argsort(xp.where(valid, self.flat, self.size), kind="stable")[: int(valid.sum())]
        indptr = xp.zeros(self.size + 1, np.int64)
        xp.cumsum(xp.bincount(self.flat[valid], minlength=self.size), out=indptr[1:])
        return order.astype(np.int64, copy=False), indptr

    def error(self, position: int) -> IndexError:
        """The IndexError for the entry at flat position `position` of the index."""
        where = np.unravel_index(position, self.shape) if self.shape else ()
        for axis, coord in enumerate(self.coords):
            value = int(coord[where])
            if not 0 <= value < self.dims[axis]:
                break
        label = self.arg if len(self.coords) == 1 else f"{self.arg}[{axis}]"
        pos = ", ".join(str(int(w)) for w in where)
        # a negative entry is out of range whatever the size: one at or past the end blames the given size
        given = f"; {self.sized_by}: it may be too small" if self.sized_by and value >= 0 else ""
        return IndexError(
            f"{label}[{pos}] = {value} is out of bounds for an indexed axis of size {self.dims[axis]}{given} "
            f"(mode='raise'; use mode='drop', 'wrap', 'clip' or 'normalize_drop' to accept it)")


def check_mode(mode) -> str:
    if mode not in MODES:
        raise ValueError(f"mode={mode!r} is not one of {MODES}")
    return mode


class Coords(tuple):
    """The coordinate arrays of an index (one per indexed axis, m in all) with the index shape I they share and
    the backend module `be` whose arrays they are.

    A tuple, so code that reads the m arrays reads them as before; `shape` and `be` still answer for m = 0,
    the empty tuple index (NumPy's ``a[()]``): I = () there (NumPy broadcasts no arrays to ()), one entry that
    addresses the whole destination, whose indexed axes D are none."""

    shape: tuple
    be: Any

    def __new__(cls, arrays, shape: tuple, be):
        self = super().__new__(cls, arrays)
        self.shape, self.be = tuple(shape), be
        return self

    def __reduce__(self):
        # a backend is a module, which pickle cannot store: it travels by name (plans go to worker processes)
        return _coords_from, (tuple(self), self.shape, self.be.__name__)


def _coords_from(arrays: tuple, shape: tuple, backend: str) -> Coords:
    return Coords(arrays, shape, importlib.import_module(backend))


def index_shape(coords: tuple) -> tuple:
    """The index shape I of `coords` (a `Coords`, or a plain tuple of at least one array)."""
    return coords.shape if type(coords) is Coords else coords[0].shape


def parse_coords(index, arg: str = "index", be: Any = host) -> Coords:
    """Coordinate arrays (of backend `be`) of an integer index or of a tuple of integer arrays, one shape.

    The empty tuple is the index of no axes (m = 0): one entry, index shape (), addressing the destination as a
    whole as NumPy's ``a[()]`` and ``np.add.at(a, (), v)`` / JAX's ``x.at[()].add(v)`` do."""
    parts = index if isinstance(index, tuple) else (index,)
    coords = []
    for i, part in enumerate(parts):
        name = arg if len(parts) == 1 else f"{arg}[{i}]"
        if isinstance(part, str):
            raise TypeError(f"{name}={part!r} is a string where an index array is expected: an op name goes in the "
                            "op position, after the index arrays (or as op=...)")
        # a NumPy array is taken as it is: `backend_of`, which every call's index goes through, refuses one in a
        # call on the GPU backend
        arr = part if type(part) is np.ndarray else be.asarray(part)
        if arr.size == 0 and arr.dtype == np.float64 and not hasattr(part, "dtype"):
            arr = arr.astype(np.intp)   # an empty Python list, as NumPy's own a[[]]
        if arr.dtype == np.bool_ or arr.dtype.kind not in "iu":
            raise TypeError(f"{name} must hold integers, got dtype {arr.dtype} "
                            "(boolean masks and float indices are not accepted)")
        coords.append(arr)
    shape = coords[0].shape if coords else ()
    for i, arr in enumerate(coords):
        if arr.shape != shape:
            raise ValueError(f"{arg}[{i}] has shape {arr.shape} but {arg}[0] has shape {shape}: "
                             "the arrays of a tuple index must all have one shape")
    return Coords(coords, shape, be)


def _dims_from(dim_size, coords, arg: str, be: Any = host) -> tuple:
    """The destination shape D: `dim_size` checked against the m coordinates, or inferred from them (on backend
    `be`, or the backend of `coords` when it is a `Coords`)."""
    m = len(coords)
    if dim_size is None:
        be = coords.be if type(coords) is Coords else be
        inferred = []
        for c in coords:   # (a loop, not a comprehension: this runs on every call without dim_size)
            inferred.append(max(int(be.reduce_max(c)) + 1, 0) if c.size else 0)
        dims = tuple(inferred)
        if dims and max(dims) > _INT64_MAX:
            raise ValueError(f"index holds {max(dims) - 1}: the inferred dim_size {max(dims)} is larger than an "
                             "array axis can be; pass dim_size (with mode='drop', 'wrap', 'clip' or 'normalize_drop')")
        return _checked_total(dims, dims, "the inferred dim_size")
    dims = check_sizes(dim_size, arg)
    if len(dims) != m:
        raise ValueError(f"{arg}={dim_size!r} gives {len(dims)} sizes but the index addresses {m} axes")
    return _checked_total(dims, dim_size, arg)


def check_sizes(value, arg: str) -> tuple:
    """`value` (an int, or a tuple/list/1-d array of ints) as a tuple of axis sizes in [0, 2**63)."""
    sizes = tuple(value) if isinstance(value, (tuple, list)) or np.ndim(value) > 0 else (value,)
    dims = []
    for s in sizes:
        try:
            s = as_int(s, "")
        except TypeError:   # the message made only here: a long sequence is shown cut (reprlib), once
            raise TypeError(f"{arg}={reprlib.repr(value)} must be a non-negative integer (or a tuple of them)") \
                from None
        if s < 0:
            raise ValueError(f"{arg}={reprlib.repr(value)} must be non-negative")
        if s > _INT64_MAX:
            raise ValueError(f"{arg}={reprlib.repr(value)} is larger than an array axis can be (2**63 - 1)")
        dims.append(s)
    return tuple(dims)


def _checked_total(dims: tuple, given, arg: str) -> tuple:
    # the kernels address destination rows with int64: the flattened row count must fit, or it would wrap
    total = math.prod(dims)
    if total <= _INT64_MAX:
        return dims
    if total > _INT64_MAX:
        raise ValueError(f"{arg}={given!r} addresses {total} rows, more than an int64 row number can reach")
    return dims


# NumPy refuses arrays of more than 2**63 - 1 bytes ("array is too big"); the fresh tables also take up to 64 bytes
# more to start on a cache line
_MAX_TABLE_BYTES = _INT64_MAX - 64


def check_table_bytes(shape: tuple, dtype, arg: str, given) -> None:
    """ValueError naming `arg` (= `given`) when an array of `shape` and `dtype`, the output it sizes, could not
    exist: its byte count would pass what an array can address (and, unchecked, wrap around). NumPy counts the
    dims that are not 0, so an empty array whose other dims are huge cannot exist either."""
    nbytes = np.dtype(dtype).itemsize
    for d in shape:   # (a loop, not a generator: this runs on every call)
        nbytes *= max(d, 1)
    if nbytes > _MAX_TABLE_BYTES:
        raise ValueError(f"{arg}={given!r} asks for an output of shape {tuple(shape)} and dtype {np.dtype(dtype)}: "
                         f"{nbytes} bytes, too big for any array (at most 2**63 - 1 bytes)")


@contextmanager
def sized_by(arg: str, given):
    """Re-raise a MemoryError of the block as one that names the argument which sized the arrays (NumPy's own
    names only a shape)."""
    try:
        yield
    except MemoryError as err:
        raise MemoryError(f"{arg}={given!r} asks for more memory than can be allocated: {err}") from None


def _coordinate(coord: np.ndarray, size: int, mode: str, axis: int, m: int, arg: str = "index",
                be: Any = host) -> np.ndarray:
    """One coordinate (an array of backend `be`) as a flat int32/int64 vector with wrap/clip applied and uint64
    made safe."""
    xp = be.xp
    flat = coord.reshape(-1)
    if flat.dtype == np.uint64 and flat.size and be.reduce_max(flat) > _INT64_MAX:
        big = flat > _INT64_MAX
        if mode == "raise" or (mode in ("wrap", "clip") and size == 0):
            return None          # reported by the caller with the position
        if mode in DROPPING:
            flat = xp.where(big, -1, flat.astype(np.int64))
        elif mode == "wrap":
            flat = (flat % np.uint64(size)).astype(np.int64)
        else:
            flat = xp.minimum(flat, np.uint64(size - 1)).astype(np.int64)
        return flat
    if flat.dtype not in (np.int32, np.int64) or (m > 1 and flat.dtype != np.int64) or \
            (flat.dtype == np.int32 and mode in ("wrap", "clip", "normalize_drop")
             and size > _INT32_MAX):   # results need int64
        flat = flat.astype(np.int64)
    if mode in ("wrap", "clip") and flat.size:
        if size == 0:
            # (`axis` counts the coordinates of a tuple index, not the axes of src)
            label = arg if m == 1 else f"{arg}[{axis}]"
            raise IndexError(f"{label} cannot be {mode}ped into an indexed axis of size 0; mode='drop' drops every "
                             "entry instead")
        flat = xp.mod(flat, size) if mode == "wrap" else xp.clip(flat, 0, size - 1)
    elif mode == "normalize_drop" and flat.dtype.kind == "i" and flat.size:
        # JAX's default: a negative entry counts from the end once (NumPy's i + size); what is still out of
        # range (below -size, or >= size) is dropped by the kernels. i + size cannot overflow: i < 0 and the
        # size fits the dtype (an int32 index of a larger axis was made int64 above)
        negative = flat < 0
        if bool(negative.any()):
            flat = xp.where(negative, flat + flat.dtype.type(size), flat)
    return xp.ascontiguousarray(flat)


def plan_index(index, dim_size=None, mode: str = "raise", *, arg: str = "index",
               dims_arg: str = "dim_size", coords: tuple | None = None, be: Any = host) -> IndexPlan:
    """Validate `index` against destination sizes `dim_size` (None: inferred) and flatten it, on backend `be` (or
    that of `coords`, a `Coords`).

    Raises TypeError (non-integer index), ValueError (shapes, sizes, mode) and IndexError (an out-of-range
    entry under mode='raise' when it can be seen here; the kernels report the rest through `IndexPlan.error`).
    """
    if mode not in MODES:
        check_mode(mode)
    coords = parse_coords(index, arg, be) if coords is None else coords
    if type(coords) is Coords:
        be = coords.be
    xp = be.xp
    dims = _dims_from(dim_size, coords, dims_arg, be)
    given_sizes = None
    if dim_size is not None and dims_arg in _SIZE_ARGS:
        given_sizes = f"{dims_arg}={dim_size!r} was given"
    elif dim_size is not None and dims_arg in _SHAPE_ARGS:
        given_sizes = f"the size {tuple(dims)} was read from {dims_arg.split('.')[0]}'s shape ({_SHAPE_ARGS[dims_arg]})"
    m = len(coords)
    if m == 0:
        # the one entry of the empty tuple index: row 0 of the single row that no indexed axes make
        return IndexPlan(xp.zeros(1, np.int64), (), (), mode, coords, arg, given_sizes)
    flats = []
    for axis, (coord, size) in enumerate(zip(coords, dims)):
        flat = _coordinate(coord, size, mode, axis, m, arg, be)
        if flat is None:
            # the first entry out of range, not the first past int64 (an earlier one may be too large already)
            bad = int(xp.argmax(coord.reshape(-1) >= np.uint64(size))) if mode == "raise" else 0
            plan = IndexPlan(np.zeros(0, np.int64), index_shape(coords), dims, mode, coords, arg, given_sizes)
            raise plan.error(bad)
        flats.append(flat)
    if m == 1:
        plan = IndexPlan(flats[0], coords.shape if type(coords) is Coords else index_shape(coords), dims, mode,
                         coords, arg, given_sizes)
        if mode == "raise" and not be.raises_in_kernels:
            # GPU kernels cannot raise: under mode='raise' every entry is checked here, before any write
            bad = ~plan.valid()
            if bool(bad.any()):
                raise plan.error(int(bad.argmax()))
        return plan
    valid: Any = None
    for flat, size in zip(flats, dims):
        inside = (flat >= 0) & (flat < size)
        valid = inside if valid is None else xp.logical_and(valid, inside, out=valid)
    # (on the host a ufunc reduce: ndarray.all goes through numpy's Python-level _methods)
    every = bool(be.reduce_all(valid)) if valid.size else True
    if mode == "raise" and not every:
        plan = IndexPlan(np.zeros(0, np.int64), index_shape(coords), dims, mode, coords, arg, given_sizes)
        raise plan.error(int(valid.argmin()))
    if every:
        flat = xp.ravel_multi_index(flats, dims) if valid.size else flats[0]
    elif not bool(be.reduce_any(valid)):
        flat = xp.full(valid.shape, -1, np.int64)
    else:
        flat = xp.ravel_multi_index(tuple(xp.where(valid, f, 0) for f in flats), dims)
        flat[~valid] = -1
    return IndexPlan(xp.ascontiguousarray(flat, dtype=np.int64),
                     coords.shape if type(coords) is Coords else index_shape(coords), dims, mode, coords, arg,
                     given_sizes)
