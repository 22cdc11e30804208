"""Values and dtypes of a call: `dtype=` and `out=` of the allocating `scatter` and `gather` (NumPy's meaning),
fill values, Python scalars taken by value (NEP 50), and the checks of the reverse functions' array arguments.

`dtype` chooses the dtype `src` is cast to before the call (as ``np.add.reduce(dtype=)``, but under NumPy's
``same_kind`` rule, where NumPy's reductions cast unsafely: ``np.add.reduce([1.5, 2.5], dtype=int)`` is 3);
`out` is an array of exactly the result's shape and dtype that receives the result, which starts from the
identity or fill as a fresh output does (not from `out`'s values: that is `scatter_into`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from cyscatter._arrays.dtypes import float_kind, holds_numbers, is_bfloat16, item_aligned, native
from cyscatter._arrays.protocols import check_foreign

if TYPE_CHECKING:
    from typing import Any


def check_dtype_arg(dtype: Any, src_dtype: np.dtype, numbers: bool = True) -> np.dtype | None:
    """`dtype` as a native NumPy dtype `src_dtype` casts to under ``same_kind`` (None stays None); TypeError
    naming `dtype` otherwise. `numbers`: only number dtypes (scatter); else any but object (gather)."""
    if dtype is None:
        return None
    try:
        dt = np.dtype(dtype)
    except (TypeError, ValueError):
        raise TypeError(f"dtype={dtype!r} is not a NumPy dtype") from None
    if dt.hasobject or (numbers and dt.kind in "VSUaMm" and not is_bfloat16(dt)):
        raise TypeError(f"dtype={dt} holds no numbers: pass an integer, float or complex dtype")
    if not np.can_cast(src_dtype, dt, "same_kind"):
        raise TypeError(f"cannot cast src dtype {src_dtype} to dtype={dt} under NumPy's same_kind rule (as "
                        f"scatter_into casts); to truncate, cast src yourself: src.astype({str(dt)!r})")
    return native(dt)


def check_out(be: Any, out: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    """The array to write for `out` (a writeable array of backend `be` of exactly `shape` and `dtype`, byte order
    aside); ValueError / TypeError naming `out` otherwise."""
    if not isinstance(out, be.xp.ndarray) and not hasattr(type(out), "__dlpack__"):
        raise TypeError(f"out must be an ndarray of the result's shape {tuple(shape)} and dtype {dtype}, got "
                        f"{type(out).__module__.partition('.')[0]}.{type(out).__name__}")
    target = be.check_writable(out, "out")
    if target.shape != tuple(shape):
        raise ValueError(f"out has shape {target.shape} but the result has shape {tuple(shape)}")
    if native(target.dtype) != dtype:
        raise TypeError(f"out has dtype {target.dtype} but the result dtype is {dtype} (the dtype= argument chooses "
                        "another)")
    return target


def direct(be: Any, target: Any, compute_dtype: np.dtype, *inputs: Any, shape3: tuple | None = None,
           apart: bool = False) -> bool:
    """Whether the kernels may write straight into `target`: aligned, native, of the compute dtype, sharing no
    memory with the inputs, and C-contiguous or, given the canonical `shape3`, of strides the backend writes in
    place (`rows_in_place`: any on the host), rows whose elements are apart (a Fortran-ordered 2-d `out`) only
    with `apart`; else the result is made in a work table and copied in."""
    return (type(target) is be.xp.ndarray and item_aligned(target)
            and target.dtype == compute_dtype and target.dtype.isnative
            and (target.flags.c_contiguous or shape3 is not None and _in_place(be, target, shape3, apart))
            and not any(be.xp.may_share_memory(target, a) for a in inputs))


def _in_place(be: Any, target: Any, shape3: tuple, apart: bool) -> bool:
    a3 = be.rows_in_place(target, target.dtype, *shape3)
    return a3 is not None and (apart or a3.shape[2] <= 1 or a3.strides[2] == a3.itemsize)


_PYTHON_KIND = {int: "iu", float: "f", complex: "c"}


def python_scalar_as(value, dtype, xp=np, arg: str = "dst"):
    """A Python int, float or complex `value` for a destination `arg` of `dtype`, taken by value as NumPy 2
    takes Python scalars (NEP 50, as ``np.add.at(uint8_array, idx, 1)``): a 0-d array of `dtype` when `dtype`
    is of the same kind or a higher one (bool < integers < floats < complex), ValueError when an int is out of
    its range; else a 0-d array of NumPy's default dtype for it, which the caller's same_kind rule refuses."""
    dtype = np.dtype(dtype)
    if _KIND_RANK.get(float_kind(dtype), -1) >= _KIND_RANK[_PYTHON_KIND[type(value)][0]]:   # bfloat16: a float
        try:
            return xp.asarray(np.array(value, dtype=dtype))
        except OverflowError:
            raise ValueError(f"src={value!r} is out of range for the {arg} dtype {dtype}") from None
    return xp.asarray(value)


def size_arg(dim_size, plan) -> tuple[str, object]:
    """(name, value) of what sized an allocating call's output, for its errors: `dim_size`, or the index."""
    return ("dim_size", dim_size) if dim_size is not None else ("the dim_size inferred from index", plan.dims)


_KIND_RANK = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}


def fill_for(fill_value, result_dtype, xp=np):
    """`fill_value` as a 0-d array of the output dtype (None stays None).

    NumPy's same_kind rule on the kind of the value (bool < integers < floats < complex); a Python scalar of a
    higher kind is also accepted when the output dtype holds it exactly, as NumPy 2 takes Python scalars by
    value: 0 or 1 fill a bool output, 2.0 an integer one, -1 no unsigned one (ValueError), 2.5 no integer one
    (TypeError).
    """
    if fill_value is None:
        return None
    if type(fill_value) not in (bool, int, float, complex, str, bytes) and not isinstance(fill_value, np.generic):
        check_foreign("fill_value", fill_value)
    dtype = np.dtype(result_dtype)
    value = np.asarray(fill_value)
    if is_bfloat16(dtype):   # a float for the rule below (its kind is 'V'), cast by ml_dtypes
        return _fill_float(fill_value, value, dtype, xp)
    if dtype.kind not in _KIND_RANK:   # strings, datetimes, records (gather, the assignment ops)
        if dtype.fields is not None and isinstance(fill_value, tuple):
            try:   # a record given as a tuple of its fields, as np.array((1, 2.0), dtype) takes it
                return xp.asarray(np.array(fill_value, dtype=dtype))
            except (TypeError, ValueError) as err:
                raise TypeError(f"fill_value={fill_value!r} is not a record of the output dtype {dtype}: "
                                f"{err}") from None
        if dtype.kind in "mM" and value.dtype.kind in "mM" and value.dtype.kind != dtype.kind:
            # a timedelta is no date and a date no duration: NumPy's same_kind rule refuses the pair, whose
            # ticks would be read in the other's meaning (and unit)
            wanted = "np.datetime64" if dtype.kind == "M" else "np.timedelta64"
            raise TypeError(f"fill_value={fill_value!r} cannot be cast to the output dtype {dtype} under "
                            f"NumPy's same_kind rule (give a {wanted})")
        if dtype.kind in "mM" and value.dtype.kind == "f" and not (value.ndim == 0 and float(value).is_integer()):
            # a number is a count of the unit's ticks (as np.full takes it): only a whole one, not truncated
            raise TypeError(f"fill_value={fill_value!r} is not a whole number of {dtype}'s ticks")
        try:
            return xp.asarray(value.astype(dtype))
        except (TypeError, ValueError):
            raise TypeError(f"fill_value={fill_value!r} cannot be cast to the output dtype {dtype}") from None
    python_scalar = isinstance(fill_value, (bool, int, float, complex))
    try:
        cast = np.array(fill_value, dtype=dtype) if python_scalar else value.astype(dtype)
    except OverflowError:
        raise ValueError(f"fill_value={fill_value!r} is out of range for the output dtype {dtype}") from None
    except (TypeError, ValueError):
        cast = None
    if value.dtype.kind in _KIND_RANK and dtype.kind in _KIND_RANK:
        higher_kind = _KIND_RANK[value.dtype.kind] > _KIND_RANK[dtype.kind]
    else:   # strings, datetimes, ... (gather takes any dtype): NumPy's own rule
        higher_kind = not np.can_cast(value.dtype, dtype, "same_kind")
    if (cast is not None and not python_scalar and value.ndim == 0 and value.dtype.kind in "iub"
            and dtype.kind in "iu" and int(value) != int(cast)):   # a NumPy integer astype wrapped
        raise ValueError(f"fill_value={fill_value!r} is out of range for the output dtype {dtype}")
    if value.ndim or cast is None or (higher_kind and not (python_scalar and cast.item() == fill_value)):
        raise TypeError(f"fill_value={fill_value!r} cannot be cast to the output dtype {dtype} "
                        "under NumPy's same_kind rule (it must be a scalar the dtype holds)")
    return xp.asarray(cast)


def _fill_float(fill_value, value, dtype, xp):
    """`fill_for` of a bfloat16 output: as for a float one (a real number scalar; complex refused)."""
    python_scalar = isinstance(fill_value, (bool, int, float))
    if value.ndim or not (python_scalar or (value.dtype.kind in "biuf" or is_bfloat16(value.dtype))):
        raise TypeError(f"fill_value={fill_value!r} cannot be cast to the output dtype {dtype} "
                        "under NumPy's same_kind rule (it must be a scalar the dtype holds)")
    return xp.asarray(value.astype(dtype))


def check_numeric(arr, arg: str):
    """`arr` (an output, cotangent or tangent) if it holds numbers; integers are then cast to float64 like the
    inputs. Bool, object, string, datetime or record arrays raise TypeError naming `arg`: cast to a float, they
    would give wrong numbers silently (a string '1.5' parses, True is 1)."""
    if not holds_numbers(arr.dtype):
        raise TypeError(f"{arg} must hold numbers (integers, floats or complex), got dtype {arr.dtype}")
    return arr


def check_real_derivative(arg: str, arr, *primals) -> None:
    """TypeError naming `arg` where a cotangent or tangent is complex but every primal array (src, out, dst: the
    inputs and the output it belongs to) is real: the derivative of a real function w.r.t. a real input is real
    (JAX's rule, and gather_scatter's), and a complex one would only carry an imaginary part made up by the
    caller. One rule for every reverse function whose primal it is given."""
    if arr.dtype.kind != "c" or any(p is not None and p.dtype.kind == "c" for p in primals):
        return
    real = ", ".join(sorted({str(p.dtype) for p in primals if p is not None}))
    raise TypeError(f"{arg} is complex ({arr.dtype}) but the values it differentiates are real ({real}): the "
                    f"derivative w.r.t. a real input is real; pass {arg}.real if its real part is what you mean")


def check_given(arg: str, value, what: str = ""):
    """TypeError naming a required array argument given as None."""
    if value is None:
        raise TypeError(f"{arg}{what} is required, got None")
    return value


def _float_dtype(*arrays) -> np.dtype:
    dtype = np.result_type(*[a.dtype for a in arrays if a is not None])
    return dtype if dtype.kind in "fc" and dtype != np.float16 else np.dtype(np.float64)


def flag(name: str, value, none_is_false: bool = False) -> bool:
    """A bool argument: True/False (NumPy's too) or the integers 0/1, and None where `none_is_false` (a hint not
    given, as JAX's ``indices_are_sorted``); anything else (a string, 2) raises TypeError rather than being taken
    for its truth value."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)) and value in (0, 1):
        return bool(value)
    if value is None and none_is_false:
        return False
    allowed = "a bool (or None: no hint)" if none_is_false else "a bool"
    raise TypeError(f"{name} must be {allowed}, got {type(value).__name__} {value!r}")

