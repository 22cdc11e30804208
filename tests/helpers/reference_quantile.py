"""Plain-loop references of the per-group order statistics: NumPy's median / quantile (and their NaN-skipping
twins) called on each group's members, in src's own dtype, and the selection weights of their derivatives."""
from __future__ import annotations

import warnings

import numpy as np

from reference_extra import _dims, _value, groups, layout


def numpy_stat(values: np.ndarray, stat: str, q: float = 0.5, method: str = "linear"):
    """np.median / np.nanmedian / np.quantile / np.nanquantile of one group (q a Python float)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if stat in ("median", "nanmedian"):
            return getattr(np, stat)(values)
        return getattr(np, stat)(values, float(q), method=method)


def ref_order_stat(src, index, stat, q=0.5, method="linear", *, dim_size=None, axis=0, mode="raise", fill=None,
                   result=None):
    """out[b, j, f] = numpy_stat(members of group j at (b, f)); `fill` (default NaN, 0 for an integer result)
    for an empty group and, for the nan twins, an all-NaN one."""
    src, coords, batch, ishape, feat, axis = layout(src, index, axis)
    dims = _dims(coords, dim_size)
    result = np.dtype(result) if result is not None else np.asarray(numpy_stat(src.reshape(-1)[:1], stat, q,
                                                                               method)).dtype
    fill = fill if fill is not None else (np.nan if result.kind == "f" else 0)
    out = np.full(batch + dims + feat, fill, dtype=result)
    members, _ = groups(coords, ishape, dims, mode)
    for target, ks in members.items():
        for b in np.ndindex(*batch):
            for f in np.ndindex(*feat):
                values = np.array([_value(src, b, ishape, k, f) for k in ks], dtype=src.dtype)
                if stat.startswith("nan") and values.dtype.kind == "f":
                    values = values[~np.isnan(values)]
                    if values.size == 0:
                        continue
                out[b + target + f] = numpy_stat(values, stat, q, method)
    return out


def ref_selection_vjp(src, index, grad_out, stat, q=0.5, method="linear", *, dim_size=None, axis=0):
    """The cotangent of src under the documented rule, by a loop per group: each selected sorted position's
    weight (1 - t and t of the interpolation, 1/2 and 1/2 for an even median) is split evenly among the members
    equal to the value there (NaN equal to NaN); a group holding a NaN (plain twins) sends all to its NaN members."""
    src, coords, batch, ishape, feat, axis = layout(src, index, axis)
    dims = _dims(coords, dim_size)
    grad = np.zeros(src.shape)
    members, _ = groups(coords, ishape, dims, "raise")
    skip = stat.startswith("nan")
    for target, ks in members.items():
        for b in np.ndindex(*batch):
            for f in np.ndindex(*feat):
                vals = np.array([_value(src, b, ishape, k, f) for k in ks], dtype=np.float64)
                keep = [i for i in range(len(ks)) if not (skip and np.isnan(vals[i]))]
                if not keep:
                    continue
                g = grad_out[b + target + f]
                if not skip and np.isnan(vals).any():
                    weights = {float("nan"): 1.0}
                else:
                    ordered = np.sort(vals[keep])
                    n = len(ordered)
                    if stat.endswith("median"):
                        picks = [((n - 1) // 2, 0.5), (n // 2, 0.5)]
                    else:
                        v = (n - 1) * q
                        if method in ("lower", "higher", "nearest"):
                            p = {"lower": np.floor, "higher": np.ceil, "nearest": np.around}[method](v)
                            picks = [(int(p), 1.0)]
                        else:
                            lo = int(np.floor(v))
                            t = 0.5 if method == "midpoint" and v % 1 else (0.0 if method == "midpoint" else v - lo)
                            picks = [(lo, 1 - t), (min(lo + 1, n - 1), t)]
                    weights = {}
                    for pos, w in picks:
                        weights[ordered[pos]] = weights.get(ordered[pos], 0.0) + w
                for value, w in weights.items():
                    tied = [i for i in keep if vals[i] == value or (np.isnan(value) and np.isnan(vals[i]))]
                    for i in tied:
                        grad[b + np.unravel_index(ks[i], ishape) + f] += g * w / len(tied)
    return grad
