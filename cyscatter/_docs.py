"""Docstring fragments shared by the public functions (numpydoc), filled in with `fill_doc`."""
from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from cyscatter._typing import _FuncT


def _index_fragment(role: str, table: str) -> str:
    """The `index` parameter, for the functions whose index picks `role` in `table`."""
    text = (f"{role}. An integer array addresses one axis of {table}; a tuple of m arrays addresses m consecutive "
            "axes, as NumPy advanced indexing and NNlib's tuples/CartesianIndex do; the empty tuple () addresses "
            f"no axis (I = D = ()): one entry reaching all of {table}, as NumPy's ``a[()]`` and "
            "``np.add.at(a, (), v)``. Any integer dtype (int8 ... uint64); int32/int64 reach the kernels without "
            "a copy. Boolean and float indices raise TypeError.")
    return ("index : int array of shape I, or tuple of m int arrays all of shape I\n"
            + textwrap.fill(text, 112, initial_indent=" " * 8, subsequent_indent=" " * 8))


_INDEX_ERROR = """IndexError
        An out-of-range index entry under ``mode="raise"``; nothing has been written when it is raised."""

FRAGMENTS = {
    "index": _index_fragment("Destination of each entry", "the destination"),
    "gather_index": _index_fragment("Source row of each output entry", "`src`"),
    "gather_raises": """TypeError
        A non-integer index, an object dtype, a cast NumPy's ``same_kind`` rule refuses (`gather_into`), or
        NumPy and CuPy arrays mixed in one call (both named).
    ValueError
        Unknown mode, mismatched shapes (both are named), an `axis` that does not fit, a read-only `dst` or
        one with overlapping elements (`gather_into`).
    """ + _INDEX_ERROR,
    "op": """op : {"add", "sub", "mul", "div", "max", "min", "mean", "sqrt_n", "set", "first", "nansum", \
"nanprod", "fmax", "fmin", "nanmean", "nanlast", "nanfirst"}, default "add"
        The update ``out[j] = op(out[j], src[k])``; aliases "sum" (add), "prod" (mul), "amax", "amin",
        "nanadd" (nansum), "nanmul" (nanprod), "nanmax" (fmax), "nanmin" (fmin), "last" (set). "sqrt_n" is
        ``sum / sqrt(count)`` (TensorFlow's ``unsorted_segment_sqrt_n``); "set" and "first" assign the last
        (first) entry in index order; the NaN-skipping ops leave NaN entries out ("nanlast" / "nanfirst" assign
        per element its last / first non-NaN entry). Each op's rules, and the peers it follows:
        :doc:`/semantics`.""",
    "axis": """axis : int, default 0
        Where the index dims start inside `src` (and the destination dims inside the output); the dims before
        it are batch dims B, taken one to one. Negative values count from the end.""",
    "mode": """mode : {"raise", "drop", "wrap", "clip", "normalize_drop"}, default "raise"
        Out-of-range entries (negatives included): "raise" raises IndexError naming the position, value and
        bound, before anything is written; "drop" skips them; "wrap" takes them modulo the size (NumPy's
        ``take(mode="wrap")``, so -1 is the last row); "clip" moves them to the nearest end;
        "normalize_drop" is JAX's default rule (``x.at[i].add(v)``): a negative entry counts from the end
        once (``i + size``, so -1 is the last row) and whatever is still out of range (``i < -size`` or
        ``i >= size``) is skipped as under "drop".""",
    "threads": """num_threads : int, optional
        CPU threads for this call (default: `cyscatter.set_num_threads`, else ``OMP_NUM_THREADS``, else every
        core; small inputs use fewer; more than 256 run 256). The result does not depend on it, bitwise (the
        sign and payload of a NaN made from two NaNs aside, see Notes).""",
    "raises": """TypeError
        Unknown op type, a non-integer index, an unsupported dtype (bool, object; complex for max/min), a
        cast NumPy's ``same_kind`` rule refuses, or NumPy and CuPy arrays mixed in one call (both named).
    ValueError
        Unknown op name or mode, mismatched shapes (both are named), a negative or wrongly sized `dim_size`,
        an `axis` that does not fit, a read-only `dst` or one with overlapping elements.
    """ + _INDEX_ERROR,
    "semantics": """Fresh outputs start at the op's identity, as in NNlib: 0 for add/sub/mean, 1 for mul/div, -inf (or the
    integer minimum) for max, +inf (or the integer maximum) for min, 0 for set/first. Updates are applied in
    index order (deterministic on the CPU); max/min let NaN win and order -0.0 < +0.0; integer div and mean
    are true division (float64); float16 and bfloat16 accumulate in float32. The full rules, and where they
    follow or depart from NumPy, PyTorch and JAX: :doc:`/semantics`. CuPy arrays run on the GPU with the same
    rules, float atomics aside (:doc:`/gpu`).""",
}

FRAGMENTS["indptr"] = """indptr : int array, shape (S + 1,) or B' + (S + 1,)
        CSR pointer: segment s holds rows ``indptr[s]:indptr[s + 1]`` along `axis`. Must start at 0, never
        decrease and end at the number of rows; equal neighbours make empty segments. Batched, as
        pytorch_scatter's ``segment_csr``: an indptr with k = ``indptr.ndim - 1`` leading dims B' holds one
        pointer per batch row ``b`` of ``src[b]`` (B' equal to src's first k dims, or 1 there to broadcast);
        the rows then lie along axis k (the default `axis`; a given one must equal it), each row is checked
        (errors name its batch position) and one translated pointer serves all, with no loop over the batch."""

FRAGMENTS["indices_are_sorted"] = """indices_are_sorted : bool, default False
        A speed hint (JAX's name): equal index entries are mostly adjacent, as in a sorted index. For
        one-element rows (no feature dims) runs of equal entries are then reduced in a register and stored
        once, on one thread (``benchmarks/bench_segment.py`` times it); wider rows run the usual kernel, as without
        the hint. The result is the same either way, bit for bit, even when the hint is wrong (unlike JAX,
        where a wrong hint is undefined behaviour). CuPy arrays ignore it (the GPU kernels update with atomics
        in any order)."""

FRAGMENTS["dim_size"] = """dim_size : int or tuple of m ints, optional
        Destination shape D (the number of groups per index axis). Default: the largest entry + 1 per
        coordinate (0 for an empty index)."""

_GROUP_REST = """{index}
    {dim_size}
    {axis}
    {mode}""".format(**FRAGMENTS)

FRAGMENTS["group_args"] = """src : array_like, shape B + I + F
        Integers (computed in float64) or floats; float16 and bfloat16 are computed in float32. Exactly this
        shape: the result has it, so a src that broadcasts (as `scatter`'s may) is refused with ValueError.
    """ + _GROUP_REST

FRAGMENTS["group_args_broadcast"] = """src : array_like, shape B + I + F, or broadcastable to it along I
        Integers (computed in float64) or floats; float16 and bfloat16 are computed in float32. Its dims at the
        index position may be 1 (broadcast over the entries, as in `scatter`).
    """ + _GROUP_REST

FRAGMENTS["gpu"] = """CuPy inputs run on the GPU and give CuPy arrays; the scatters there use float atomics,
    whose arrival order makes the last bits of float sums and products run-dependent (see `scatter`)."""

FRAGMENTS["forward_args"] = """src : array_like, shape B + I + F, or broadcastable to it
        The `src` the forward scatter was called with (one that broadcast there broadcasts here: its
        cotangent is summed over the broadcast dims, a tangent of its shape is broadcast as it is).
    {index}
    out : array_like, shape B + D + F
        The forward result (for in-place forms: `dst` after the update).
    dst : array_like, shape B + D + F, optional
        The initial destination of an in-place ``scatter_into``; None for the allocating ``scatter``.
    {axis}
    {mode}""".format(**FRAGMENTS)

FRAGMENTS["gs_reverse"] = """op : {"add", "sub", "mean", "sqrt_n", "max", "min", "mul", "div", "nansum", "nanprod",
        "nanmean", "fmax", "fmin"}
        The op of the forward `gather_scatter` call (aliases as there; the assignments set/last/first raise
        ValueError, as there).
    grad_out : array_like, shape B + D + F
        Cotangent of the output.
    src : array_like, shape B + S + F
        The forward call's `src`.
    gather_index, scatter_index : int array or tuple of int arrays, shape I
        The forward call's indices (omit both with `plan`).
    out : array_like, shape B + D + F, optional
        The forward result; needed by max, min, mul, div and the NaN-skipping ops.
    weight : array_like, shape I + W, optional
        The forward call's weight.
    dim_size, axis, mode, plan, num_threads : optional
        As in `gather_scatter`."""


def fill_doc(func: _FuncT) -> _FuncT:
    """Replace ``{name}`` fields of `func.__doc__` by the shared fragments."""
    func.__doc__ = func.__doc__.format(**FRAGMENTS)
    return func


def _reverse_fragments(forward: str) -> dict[str, str]:
    """The parameters a reverse function of `forward` shares with it, each naming `forward`."""
    given = f"\n        As given to `{forward}`."
    src = "src : array_like, shape B + I + F, or broadcastable to it\n        The `src` given to " + f"`{forward}`"
    return {
        "grad_out": "grad_out : array_like, shape B + D + F\n        Cotangent of the output.",
        "src": src + ".",
        "real_src": src + " (real dtypes only).",
        "nan_src": src + " (real dtypes only), NaN entries included.",
        "index": f"index : int array or tuple of int arrays, shape I\n        The index given to `{forward}`.",
        "out": "out : array_like, shape B + D + F\n        Its result.",
        "src_dot": ("src_dot : array_like, the shape of `src` (its tangent; a broadcast `src` takes one of its own "
                    "shape)\n        Tangent of `src`."),
        "ddof": "ddof : int, default 0" + given,
        "dim_size": "dim_size : int or tuple of ints, optional" + given,
        "axis": "axis : int, default 0" + given,
        "mode": 'mode : {"raise", "drop", "wrap", "clip", "normalize_drop"}, default "raise"' + given,
    }


def reverse_doc(forward: str) -> Callable[[_FuncT], _FuncT]:
    """Replace ``{name}`` fields of a reverse function's docstring by the parameters it shares with `forward`."""
    def fill(func: _FuncT) -> _FuncT:
        func.__doc__ = func.__doc__.format(**_reverse_fragments(forward))
        return func
    return fill
