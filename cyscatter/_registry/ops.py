"""The op registry: the single source of truth for every scatter reduction.

Each `Op` says how the kernels compute it (op code, counts), what a fresh output starts from (identity), which
dtypes it accepts and how integers are promoted, and which family of reverse rules differentiates it (`rule`, a
key of `cyscatter._reverse.rules.RULES`). The public API, the `grad` package, the GPU backend and the tests all
read this table.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from cyscatter import kernels
from cyscatter._arrays.dtypes import float_kind, holds_numbers, is_bfloat16, native

# Op codes of the assignment ops, after the reduction codes of `kernels.OpCode` (0-5).
OP_SET, OP_FIRST = 6, 7
# ... and of their NaN-skipping twins, after the NaN-skipping reductions' codes
OP_NANLAST, OP_NANFIRST = 16, 17

# Value dtypes the compiled kernels take as they are; others are widened (see `Op.compute_dtype`).
KERNEL_DTYPES = tuple(np.dtype(t) for t in
                      (np.float32, np.float64, np.int32, np.int64, np.uint64, np.complex64, np.complex128))
_FLOAT_DTYPES = tuple(np.dtype(t) for t in (np.float16, np.float32, np.float64, np.complex64, np.complex128))












@dataclass(frozen=True)
class Op:
    """One scatter reduction.

    name, aliases : the names `scatter(..., op=...)` accepts.
    opcode : kernel op code (`kernels.OpCode`); mean runs the add kernel and divides by the counts.
    identity_kind : "zero", "one", "lowest" or "highest": the start of a fresh output, per dtype.
    true_division : integer inputs give float64 results (NumPy true division), as div and mean.
    ordered : needs an order (max/min): complex dtypes are rejected.
    linear : out is linear in (dst, src) jointly, so the JVP is the op applied to the tangents.
    counts : the kernel must count the entries of each group, and the sums are divided by a function of the
        counts (mean: the counts; sqrt_n: their square roots); an empty group is divided by 1.
    sqrt_counts : with `counts`, the divisor is sqrt(count) (TensorFlow's ``unsorted_segment_sqrt_n``).
    combine : the op whose kernel merges two partial results of this op, each reduced from the identity over
        part of the entries (chunked scatter, `cyscatter.dask`): sub's partials are negated sums, so they add;
        div's are reciprocal products, so they multiply; mean's partial sums add (and its counts add).
    gpu_update : the update the GPU kernels apply, ``cs_atomic_<gpu_update>`` (one thread per src element) or
        ``cs_<gpu_update>`` (ordered kernel) of ``cuda_atomics.cuh``; see `cyscatter._backends.cuda_kernels`.
    gpu_cas : the atomic is (for floats at least) a compare-and-swap loop on the element's bits, so an element
        wider than the widest atomicCAS word (8 bytes: complex128 mul/div) takes the ordered kernel instead.
    winner : "" for a reduction; "last" or "first" for an assignment (set / last, first): each destination row
        takes the row of one entry, the last (first) in index order that reaches it, found by a winner pass over
        the index and moved by the gather kernels (`cyscatter._backends.assign`), so no arithmetic is done and every
        dtype gather moves is accepted (bool too). Assignments are linear in (dst, src) jointly.
    skips_nan : a NaN-skipping twin (nansum, nanprod, nanmean, fmax/nanmax, fmin/nanmin): a NaN src
        entry (NumPy's isnan; complex: either part) counts as absent. Its counts, where it needs any (mean's
        division, a fill_value), are per element: the non-NaN entries of each output element, so an element whose
        entries are all NaN is an empty group (numpy_groupies' rule). Integers have no NaN: the twin's results.
    twin : the NaN-propagating op this one skips NaN for (its identity, dtypes and tie rules are the twin's).
    rule : the family of reverse rules (vjp_src, vjp_dst) that differentiates the op: a key of
        `cyscatter._reverse.rules.RULES`, which holds one for every op's family (a test checks it). Ops that share
        a family share their rules (max and min: "extreme"; fmax and fmin: "nan_extreme").
    partials : the family of value-dependent partial derivatives, "" where each entry's partial is locally constant
        given the index (a sign, 1 / divisor, a tie share, a NaN mask, the winner of an assignment); "products"
        (mul: the product of the group's other members and the initial value), "quotient" (div: -out / src),
        "nan_products" (nanprod: mul's over the non-NaN entries). `grad` differentiates such partials again (its
        second derivatives), and gather_scatter's reverse passes materialise the messages for them.
    negates : each entry enters the output negated (sub: dst - sum), so its derivative is -1.
    scans : `scatter_scan` takes the op: it has a running form per group (add, mul, max, min; sub and div are not
        associative, mean's running form is a running sum over a running count), and so do the NaN-skipping twins
        of those (nansum, nanprod, fmax, fmin: a NaN entry is the identity, so the running value carries through
        it, as np.nancumsum / np.nancumprod treat NaN as 0 / 1).
    """

    name: str
    aliases: tuple
    opcode: int
    identity_kind: str
    combine: str
    rule: str
    true_division: bool = False
    ordered: bool = False
    linear: bool = False
    counts: bool = False
    sqrt_counts: bool = False
    gpu_update: str = ""
    gpu_cas: bool = False
    winner: str = ""
    skips_nan: bool = False
    twin: str = ""
    partials: str = ""
    negates: bool = False
    scans: bool = False

    # The derived facts below are read on every call: each is worked out once per op (functools.cached_property
    # stores it in the instance's dict, which the frozen dataclass does not guard).

    @cached_property
    def sums(self) -> bool:
        """add, sub, mean, sqrt_n: each output element is a signed sum of its entries, divided by a function of
        their count, so the reverse pass is the transposed sum (the assignments are linear too, but move one row)."""
        return self.linear and not self.winner

    @cached_property
    def larger_wins(self) -> bool:
        """max and fmax keep the larger of two values, min and fmin the smaller (the others order nothing)."""
        return self.identity_kind == "lowest"

    @cached_property
    def twin_opcode(self) -> int:
        """The op code integer inputs run: a NaN-skipping op's twin's (integers hold no NaN), else the op's own."""
        return _BY_NAME[self.twin].opcode if self.twin else self.opcode

    @cached_property
    def selects(self) -> bool:
        """max/min and fmax/fmin: each output element is the value of one of its entries (or its start), so the
        entries that do not win take no part in its derivatives, not even through an inf or NaN tangent (JAX's
        select rule)."""
        return self.identity_kind in ("lowest", "highest")

    @cached_property
    def selection(self) -> str:
        """The entries each output element's cotangent reaches, for the ops whose reverse kernels pick them
        (the fused gather-scatter's, `fused_kernels` and `_cuda_kernels.SELECTS`): "tied" (max/min: the entries
        equal to the kept value, NaN tying NaN), "won" (fmax/fmin: the same, a NaN never winning), "present"
        (nansum/nanmean: the non-NaN entries); "" for the others (mul, div, nanprod need products)."""
        if self.selects:
            return "won" if self.skips_nan else "tied"
        return "present" if self.skips_nan and self.combine == "add" else ""

    @cached_property
    def splits(self) -> bool:
        """For the ops with a `selection`: an output element's cotangent (or its tangent sum) is divided among its
        selected entries (max/min, fmax/fmin: the tied winners; nanmean: the non-NaN entries, its counts), where
        nansum passes it whole to each."""
        return bool(self.selection) and (self.selection != "present" or self.counts)

    def identity(self, dtype) -> np.generic:
        """The value a fresh output holds before any update (NNlib's init), in `dtype`."""
        dtype = native(dtype)
        if self.winner and not holds_numbers(dtype):
            # an assignment's fresh rows where no entry lands: NaT for datetime64 (its zero, 1970-01-01, would
            # pass for a date), else the dtype's zero as np.zeros makes it ("" for strings, 0 for timedelta64)
            return np.array("NaT", dtype)[()] if dtype.kind == "M" else np.zeros((), dtype)[()]
        if self.identity_kind in ("zero", "one"):
            return dtype.type(0 if self.identity_kind == "zero" else 1)
        if float_kind(dtype) == "f":
            return dtype.type(-np.inf if self.identity_kind == "lowest" else np.inf)
        info = np.iinfo(dtype)
        return dtype.type(info.min if self.identity_kind == "lowest" else info.max)

    def divisor(self, counts, dtype, xp=np):
        """The per-group divisor of a counting op as a (1, size, 1) array of the real dtype of `dtype`: the counts
        (mean) or their square roots (sqrt_n), 1 for an empty group."""
        real = np.empty(0, dtype).real.dtype
        per_group = counts.astype(real)   # one temporary, worked on in place: 8 bytes a row for float64
        xp.maximum(per_group, 1, out=per_group)
        if self.sqrt_counts:
            xp.sqrt(per_group, out=per_group)
        return per_group[None, :, None]

    def check_dtype(self, dtype, arg: str = "src") -> None:
        dtype = native(dtype)
        if self.winner:   # an assignment moves bytes: any dtype gather moves (all but object)
            if dtype.hasobject:
                raise TypeError(f"op {self.name!r} does not support {arg} dtype {dtype} (it moves items as bytes: "
                                f"any dtype but object)")
            return
        if dtype.kind not in "iu" and dtype not in _FLOAT_DTYPES and not is_bfloat16(dtype):
            supported = "integers, float16/32/64, bfloat16" + ("" if self.ordered else ", complex64/128")
            raise TypeError(f"op {self.name!r} does not support {arg} dtype {dtype} (supported: {supported})")
        if self.ordered and dtype.kind == "c":
            raise TypeError(f"op {self.name!r} needs ordered values; {arg} dtype {dtype} is complex")

    def result_dtype(self, dtype) -> np.dtype:
        """dtype of an allocating scatter's output for a `src` of `dtype` (native byte order, as NumPy's ufuncs)."""
        dtype = native(dtype)
        self.check_dtype(dtype)
        return np.dtype(np.float64) if self.true_division and dtype.kind in "iu" else dtype

    def compute_dtype(self, dtype) -> np.dtype:
        """dtype the kernel accumulates in for an output of `dtype`.

        float16 and bfloat16 (ml_dtypes') accumulate in float32 (3000 ones sum to 3000; pytorch_scatter and JAX
        accumulate bfloat16 the same way on the CPU), the result rounded once to nearest even; small integers in
        int64, whose wrap-around cast back gives NumPy's modular result for add/sub/mul and the exact one for
        max/min.
        """
        dtype = native(dtype)
        if self.winner:   # no arithmetic: rows are moved as they are
            return dtype
        if dtype == np.float16 or is_bfloat16(dtype):
            return np.dtype(np.float32)
        if dtype.kind in "iu" and dtype not in KERNEL_DTYPES:
            return np.dtype(np.int64)
        return dtype


OPS = (
    Op("add", ("sum",), kernels.OpCode.OP_ADD, "zero", combine="add", rule="linear", linear=True, gpu_update="add",
       scans=True),
    Op("sub", (), kernels.OpCode.OP_SUB, "zero", combine="add", rule="negated", linear=True, gpu_update="sub",
       negates=True),
    Op("mul", ("prod",), kernels.OpCode.OP_MUL, "one", combine="mul", rule="products", gpu_update="mul",
       gpu_cas=True, partials="products", scans=True),
    Op("div", (), kernels.OpCode.OP_DIV, "one", combine="mul", rule="quotient", true_division=True, gpu_update="div",
       gpu_cas=True, partials="quotient"),
    Op("max", ("amax",), kernels.OpCode.OP_MAX, "lowest", combine="max", rule="extreme", ordered=True,
       gpu_update="max", gpu_cas=True, scans=True),
    Op("min", ("amin",), kernels.OpCode.OP_MIN, "highest", combine="min", rule="extreme", ordered=True,
       gpu_update="min", gpu_cas=True, scans=True),
    Op("mean", (), kernels.OpCode.OP_ADD, "zero", combine="add", rule="mean", true_division=True, linear=True,
       counts=True, gpu_update="add"),
    # TensorFlow's unsorted_segment_sqrt_n: sum / sqrt(count), 0 for an empty group; mean's path and conventions
    Op("sqrt_n", (), kernels.OpCode.OP_ADD, "zero", combine="add", rule="sqrt_n", true_division=True, linear=True,
       counts=True, sqrt_counts=True, gpu_update="add"),
    # assignments: the last entry in index order wins (JAX .at[].set, NumPy a[idx] = v,
    # numpy_groupies "last"), or the first (numpy_groupies "first"); a fresh output starts from 0, as
    # numpy_groupies' fill_value and PyG's scatter(reduce="any") into zeros. Op codes 6 and 7 are this registry's
    # own: the reduction kernels never see them (see `cyscatter._backends.assign`).
    Op("set", ("last",), OP_SET, "zero", combine="set", rule="assign_last", linear=True, winner="last"),
    Op("first", (), OP_FIRST, "zero", combine="first", rule="assign_first", linear=True, winner="first"),
    # NaN-skipping twins. fmax/fmin are NumPy's np.fmax/np.fmin (a NaN on either side loses,
    # also a NaN already in scatter_into's dst); nanmax/nanmin are their aliases: with NaN entries left out a
    # group's nanmax is the fmax of its members, and numpy_groupies' nanmax of an all-NaN group (an empty group
    # here) is the fill, as fmax.at from the identity gives.
    Op("nansum", ("nanadd",), kernels.OpCode.OP_NANADD, "zero", combine="add", rule="nansum", gpu_update="nanadd",
       skips_nan=True, twin="add", scans=True),
    Op("nanprod", ("nanmul",), kernels.OpCode.OP_NANMUL, "one", combine="mul", rule="nanprod", gpu_update="nanmul",
       gpu_cas=True, skips_nan=True, twin="mul", partials="nan_products", scans=True),
    Op("fmax", ("nanmax",), kernels.OpCode.OP_FMAX, "lowest", combine="fmax", rule="nan_extreme", ordered=True,
       gpu_update="fmax", gpu_cas=True, skips_nan=True, twin="max", scans=True),
    Op("fmin", ("nanmin",), kernels.OpCode.OP_FMIN, "highest", combine="fmin", rule="nan_extreme", ordered=True,
       gpu_update="fmin", gpu_cas=True, skips_nan=True, twin="min", scans=True),
    Op("nanmean", (), kernels.OpCode.OP_NANADD, "zero", combine="add", rule="nanmean", true_division=True,
       counts=True, gpu_update="nanadd", skips_nan=True, twin="mean"),
    # numpy_groupies' nanlast / nanfirst: per output element the value of its last (first) non-NaN entry in index
    # order, a winner per element (`cyscatter._backends.assign.element_winners`); an element whose entries are
    # all NaN is empty (0, or fill_value). Not `linear`: which entry wins depends on src's NaN pattern, so the
    # tangent is the winner's (the rules), not the op applied to the tangents.
    Op("nanlast", (), OP_NANLAST, "zero", combine="nanlast", rule="nan_assign_last", winner="last",
       skips_nan=True, twin="set"),
    Op("nanfirst", (), OP_NANFIRST, "zero", combine="nanfirst", rule="nan_assign_first", winner="first",
       skips_nan=True, twin="first"),
)

_BY_NAME = {name: op for op in OPS for name in (op.name, *op.aliases)}

# The order statistics: op names that `scatter`, `segment` and `gather_scatter` take besides the `OPS`, run by a
# sort per call (`cyscatter._api.quantile`), not by a reduction kernel: no identity (an empty group has no
# median), no combine (Dask reduces whole groups). name -> whether it skips NaN entries (NumPy's nanmedian).
ORDER_STATS = {"median": False, "nanmedian": True}
OP_NAMES = tuple(op.name for op in OPS)


def _kernel_ready(op: Op, dtype: np.dtype) -> bool:
    """The op runs on `dtype` as it is, with no counts, promotion or widening (what the fast paths take)."""
    try:
        op.check_dtype(dtype)
    except TypeError:
        return False
    return not op.counts and not op.winner and op.result_dtype(dtype) == dtype and op.compute_dtype(dtype) == dtype


# op name or alias -> (op code, {dtype: identity}) for the (op, dtype) pairs the kernels run as they are: the
# fast paths of scatter/scatter_into read it; every other pair (and every assignment) takes the general path.
FAST = {name: (op.opcode, {dt: op.identity(dt) for dt in KERNEL_DTYPES if _kernel_ready(op, dt)})
        for name, op in _BY_NAME.items() if not op.winner}
# op code -> the assignment op ("last" or "first" winner), for the backends' run_scatter
WINNERS = {op.opcode: op.winner for op in OPS if op.winner}
# op code of a NaN-skipping op -> its twin's (`Op.twin_opcode`), for the backends' fused forward, which takes op
# codes: integers have no NaN, so they run the twin's kernel
TWIN_OPCODES = {op.opcode: op.twin_opcode for op in OPS if op.skips_nan}


def get_op(op: str | Op) -> Op:
    """The registry entry for an op name or alias.

    Parameters
    ----------
    op : str
        An op name ("add", "sub", "mul", "div", "max", "min", "mean", "sqrt_n", "set", "first", "nansum",
        "nanprod", "fmax", "fmin", "nanmean", "nanlast", "nanfirst") or alias ("sum", "prod", "amax", "amin", "last", "nanadd", "nanmul",
        "nanmax", "nanmin").

    Returns
    -------
    Op
        The registry entry (its ``name`` is the canonical name: ``get_op("sum").name == "add"``).

    Raises
    ------
    TypeError
        `op` is not a string.
    ValueError
        Unknown op name (the message lists the known ones).
    """
    if isinstance(op, Op):
        return op
    if not isinstance(op, str):
        raise TypeError(f"op must be a string naming a reduction, got {type(op).__name__} {op!r}")
    try:
        return _BY_NAME[op]
    except KeyError:
        if op in ORDER_STATS:
            raise ValueError(f"op {op!r} is an order statistic, not a reduction: only scatter, segment and "
                             f"gather_scatter take it (scatter_quantile / scatter_nanquantile for other q, "
                             f"scatter_quantile_vjp / _jvp for its derivatives)") from None
        raise ValueError(f"unknown op {op!r}; known ops: {', '.join(sorted(_BY_NAME))} (and the order statistics "
                         f"{', '.join(ORDER_STATS)} in scatter, segment and gather_scatter)") from None


def refuse_assignment(op: Op, fun: str, why: str = "it reduces groups with arithmetic") -> None:
    """ValueError naming `op` and `fun` for an assignment op (set / last / first) where `fun` has no meaning
    for it."""
    if op.winner:
        raise ValueError(f"op {op.name!r} is an assignment (the {op.winner} entry of each group wins), not a "
                         f"reduction: {fun} does not support it ({why}); use scatter / scatter_into")
