"""Independent reference implementations: plain Python loops over NumPy rows, no cyscatter code.

They follow the documented semantics (docs/semantics.rst) and are deliberately slow and simple. Updates are
applied in index order, as cyscatter does, so float results can be compared bitwise.
"""
from __future__ import annotations

import numpy as np

IDENTITY = {"add": "zero", "sub": "zero", "mean": "zero", "sqrt_n": "zero", "mul": "one", "div": "one",
            "max": "lowest", "min": "highest", "set": "zero", "first": "zero", "nansum": "zero", "nanprod": "one",
            "fmax": "lowest", "fmin": "highest", "nanmean": "zero", "nanlast": "zero", "nanfirst": "zero"}
ALIASES = {"sum": "add", "prod": "mul", "amax": "max", "amin": "min", "last": "set", "nanadd": "nansum",
           "nanmul": "nanprod", "nanmax": "fmax", "nanmin": "fmin"}
NAN_OPS = ("nansum", "nanprod", "fmax", "fmin", "nanmean", "nanlast", "nanfirst")   # a NaN src entry is absent


def identity(op, dtype):
    kind = IDENTITY[op]
    dtype = np.dtype(dtype)
    if kind == "zero":
        return dtype.type(0)
    if kind == "one":
        return dtype.type(1)
    if dtype.kind in "fc":
        return dtype.type(-np.inf if kind == "lowest" else np.inf)
    info = np.iinfo(dtype)
    return dtype.type(info.min if kind == "lowest" else info.max)


def _max(a, b):
    """Elementwise max with NaN winning and -0.0 < +0.0 (order-independent)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind != "f":
        return np.where(b > a, b, a)
    pick_b = (b > a) | ((a == b) & (a == 0) & np.signbit(a) & ~np.signbit(b)) | (np.isnan(b) & ~np.isnan(a))
    return np.where(pick_b, b, a)


def _min(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind != "f":
        return np.where(b < a, b, a)
    pick_b = (b < a) | ((a == b) & (a == 0) & np.signbit(b) & ~np.signbit(a)) | (np.isnan(b) & ~np.isnan(a))
    return np.where(pick_b, b, a)


def _assign(cur, new):
    return np.array(new, copy=True)


# "first" is "set" applied to a row's first entry only (ref_scatter skips the later ones)
UPDATE = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "max": _max, "min": _min,
          "mean": np.add, "sqrt_n": np.add, "set": _assign, "first": _assign}


def _isnan(b):
    b = np.asarray(b)
    return np.isnan(b) if b.dtype.kind in "fc" else np.zeros(b.shape, bool)


def _skip_nan(update):
    """`update`, or `a` as it is where `b` is NaN: the entry is absent (a -0.0 `a` stays -0.0, a complex `a` with
    one NaN part stays as it is), as ``np.add.at``/``np.multiply.at`` over the non-NaN entries."""
    def apply(a, b):
        with np.errstate(all="ignore"):
            return np.where(_isnan(b), a, update(a, b))
    return apply


def _fmax(a, b):
    """np.fmax with max's -0.0 < +0.0 (order independent)."""
    a, b = np.asarray(a), np.asarray(b)
    return np.where(_isnan(b), a, np.where(_isnan(a), b, _max(a, b)))


def _fmin(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return np.where(_isnan(b), a, np.where(_isnan(a), b, _min(a, b)))


UPDATE.update({"nansum": _skip_nan(np.add), "nanprod": _skip_nan(np.multiply), "fmax": _fmax,
               "fmin": _fmin, "nanmean": _skip_nan(np.add)})
# nanlast: set where the entry is not NaN; nanfirst: the same, only while the element has no non-NaN entry yet
# (ref_scatter and ref_segment pass that state as `elements`)
UPDATE.update(nanlast=_skip_nan(_assign), nanfirst=_skip_nan(_assign))
UPDATE.update(nanadd=UPDATE["nansum"], nanmul=UPDATE["nanprod"])   # the GPU update names (emulated_cupy.py)
# divisor of the group sums by group count: mean's count, and TensorFlow's unsorted_segment_sqrt_n definition
# (``sum / sqrt(N)``, N the number of entries of the group, an empty group 0); nanmean's count is per element
DIVISOR = {"mean": lambda count: count, "sqrt_n": np.sqrt, "nanmean": lambda count: count}


def compute_dtype(op, result_dtype):
    result_dtype = np.dtype(result_dtype)
    if result_dtype == np.float16:
        return np.dtype(np.float32)
    if result_dtype.kind in "iu" and result_dtype.itemsize < 8 and result_dtype != np.int32:
        return np.dtype(np.int64)
    return result_dtype


def result_dtype(op, src_dtype):
    src_dtype = np.dtype(src_dtype)
    if op in ("div", "mean", "sqrt_n", "nanmean") and src_dtype.kind in "iu":
        return np.dtype(np.float64)
    return src_dtype


def divide_parts(values, divisor):
    """values / divisor for a real divisor, each part of a complex value divided by it as np.mean does (a complex
    division by divisor + 0j rounds the complex64 quotient through a reciprocal)."""
    values, divisor = np.asarray(values), np.asarray(divisor)
    quotient = np.empty(np.broadcast_shapes(values.shape, divisor.shape), values.dtype)
    quotient.real = values.real / divisor
    if values.dtype.kind == "c":
        quotient.imag = values.imag / divisor
    return quotient


def _resolve(c, size, mode):
    """Apply the out-of-range mode to one coordinate; None means skip."""
    c = int(c)
    if 0 <= c < size:
        return c
    if mode == "raise":
        raise IndexError(f"index {c} out of bounds for size {size}")
    if mode == "drop":
        return None
    if mode == "normalize_drop":   # JAX's default: negatives count from the end once, the rest is dropped
        return c + size if -size <= c < 0 else None
    if size == 0:
        raise IndexError("empty axis")
    return c % size if mode == "wrap" else min(max(c, 0), size - 1)


def ref_scatter(src, index, op="add", *, dim_size=None, axis=0, fill_value=None, mode="raise", dst=None):
    """Reference of cyscatter.scatter (dst None) and of scatter_into (returns the updated copy of dst)."""
    op = ALIASES.get(op, op)
    src = np.asarray(src)
    coords = [np.asarray(c) for c in (index if isinstance(index, tuple) else (index,))]
    ishape, m = (coords[0].shape if coords else ()), len(coords)
    if axis < 0:
        axis += src.ndim
    batch, feat = src.shape[:axis], src.shape[axis + len(ishape):]
    if dst is not None:
        dims = dst.shape[axis:axis + m]
        rdtype = dst.dtype
    elif dim_size is not None:
        dims = tuple(dim_size) if isinstance(dim_size, (tuple, list)) else (dim_size,)
        rdtype = result_dtype(op, src.dtype)
    else:
        dims = tuple(int(c.max()) + 1 if c.size else 0 for c in coords)
        rdtype = result_dtype(op, src.dtype)
    cdtype = compute_dtype(op, rdtype)
    if dst is not None:
        init = np.array(dst, dtype=cdtype)
    else:
        init = np.full(batch + dims + feat, identity(op, rdtype), dtype=cdtype)
    acc = np.zeros_like(init) if op in DIVISOR else init.copy()
    counts = np.zeros(dims, np.int64)
    elements = np.zeros(init.shape, np.int64)   # non-NaN entries per element (the NaN-skipping ops)
    src_c = src.astype(rdtype).astype(cdtype) if dst is not None else src.astype(cdtype)
    for k in np.ndindex(*ishape):
        target = tuple(_resolve(c[k], s, mode) for c, s in zip(coords, dims))
        if None in target:
            continue
        counts[target] += 1
        if op == "first" and counts[target] > 1:   # the first entry of a row wins: later ones are skipped
            continue
        for b in np.ndindex(*batch):
            new = UPDATE[op](acc[b + target], src_c[b + k])
            acc[b + target] = np.where(elements[b + target] > 0, acc[b + target], new) if op == "nanfirst" else new
            elements[b + target] += ~_isnan(src_c[b + k])
    hit = (counts > 0).reshape((1,) * len(batch) + dims + (1,) * len(feat))
    if op in NAN_OPS:   # an element whose entries are all NaN is an empty group
        hit = elements > 0
    if op in DIVISOR:
        shaped = elements if op == "nanmean" else counts.reshape((1,) * len(batch) + dims + (1,) * len(feat))
        means = divide_parts(acc, DIVISOR[op](np.maximum(shaped, 1).astype(acc.real.dtype)))
        acc = np.where(hit, init + means if dst is not None else means, init)
    if fill_value is not None and dst is None:
        acc = np.where(hit, acc, np.asarray(fill_value).astype(rdtype))
    return acc.astype(rdtype)


def ref_gather(src, index, *, axis=0, mode="raise", fill_value=0, dst=None):
    """Reference of cyscatter.gather (dst None) and gather_into (returns the updated copy of dst)."""
    src = np.asarray(src)
    coords = [np.asarray(c) for c in (index if isinstance(index, tuple) else (index,))]
    ishape, m = (coords[0].shape if coords else ()), len(coords)
    if axis < 0:
        axis += src.ndim
    batch, dims, feat = src.shape[:axis], src.shape[axis:axis + m], src.shape[axis + m:]
    if dst is not None:   # cast first, as documented (an int32 scalar 128 would not fit an int8 dst otherwise)
        src = src.astype(np.asarray(dst).dtype)
    out = np.full(batch + ishape + feat, fill_value, src.dtype) if dst is None else np.array(dst)
    for k in np.ndindex(*ishape):
        target = tuple(_resolve(c[k], s, mode) for c, s in zip(coords, dims))
        if None in target:
            continue
        for b in np.ndindex(*batch):
            out[b + k] = src[b + target]
    return out


def numeric_vjp(f, x, g, eps=1e-6):
    """<g, df/dx> by central differences, for float64 x (a reference gradient).

    Outputs that do not move (an untouched -inf of a max, say) contribute 0, not inf - inf.
    """
    x = np.array(x, dtype=np.float64)
    grad = np.zeros_like(x)
    for i in np.ndindex(*x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += eps
        xm[i] -= eps
        fp, fm = f(xp), f(xm)
        with np.errstate(invalid="ignore"):
            grad[i] = np.sum(g * np.where(fp == fm, 0.0, fp - fm)) / (2 * eps)
    return grad


def ref_others_product(src, index, dims, *, axis=0, src_dot=None, mode="raise"):
    """Per entry: the product of the other entries of its group, and (src_dot given) its derivative along src_dot:
    sum over the other members m of src_dot[m] times the product of the members other than k and m."""
    src = np.asarray(src, dtype=np.float64)
    coords = [np.asarray(c) for c in (index if isinstance(index, tuple) else (index,))]
    ishape = coords[0].shape if coords else ()
    batch = src.shape[:axis]
    dims = tuple(dims) if isinstance(dims, (tuple, list)) else (dims,)
    groups = {}
    for k in np.ndindex(*ishape):
        target = tuple(_resolve(c[k], s, mode) for c, s in zip(coords, dims))
        if None not in target:
            groups.setdefault(target, []).append(k)
    products, products_dot = np.zeros_like(src), np.zeros_like(src)
    for members in groups.values():
        for b in np.ndindex(*batch):
            for k in members:
                others = [m for m in members if m != k]
                products[b + k] = np.prod([src[b + m] for m in others], axis=0) if others else 1.0
                if src_dot is not None:
                    for m in others:
                        rest = [src[b + i] for i in others if i != m]
                        products_dot[b + k] += src_dot[b + m] * (np.prod(rest, axis=0) if rest else 1.0)
    return products if src_dot is None else (products, products_dot)
