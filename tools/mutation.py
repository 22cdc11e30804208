"""Mutation sample: how many small semantic bugs each test tier finds.

Each mutant is one small change a real bug would make (an identity, a tie split, a mode's bound, a mean's
divisor, a dtype promotion, a reverse rule's sign, a fast path's condition, a kernel's NaN or signed-zero rule),
across the registry, index planning, the reverse rules, grad and the compiled kernels. For each mutant this
script applies it to a scratch copy of the checkout (rebuilding the compiled modules it touches), runs the
chosen suite with ``-x`` and records whether a test failed (killed) or not (survived).

Usage::

    python tools/mutation.py --list
    python tools/mutation.py --suite default --suite full --json results.json   # this checkout's tiers
    python tools/mutation.py --suite tests-at=288fae9                           # the test tree of a commit
    python tools/mutation.py --only ops-mul-identity --suite default

A suite named ``tests-at=REV`` runs the tests (and pyproject.toml) of commit REV against this checkout's product
code: the way to compare a test suite before and after a change to the tests. ``full`` runs the cases the
default tier leaves out once the default tier has not killed a mutant (the default tier is part of the full
tier). Needs a built checkout (``pip install -e .``); takes about a minute a mutant and suite on 2 cores, more
for the survivors, which run their whole suite.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMPILED = (".pyx", ".pxd", ".h")


@dataclass(frozen=True)
class Mutant:
    name: str
    path: str      # relative to the checkout
    old: str       # must occur exactly once in the file
    new: str
    what: str


MUTANTS = (
    # ---- the registry ------------------------------------------------------------------------------------------
    Mutant("ops-mul-identity", "cyscatter/_registry/ops.py",
           'Op("mul", ("prod",), kernels.OpCode.OP_MUL, "one"', 'Op("mul", ("prod",), kernels.OpCode.OP_MUL, "zero"',
           "mul's fresh output starts from 0"),
    Mutant("ops-int-lowest", "cyscatter/_registry/ops.py",
           'return dtype.type(info.min if self.identity_kind == "lowest" else info.max)',
           'return dtype.type(info.min + 1 if self.identity_kind == "lowest" else info.max)',
           "integer max's identity one above the dtype's minimum"),
    Mutant("ops-empty-group-divisor", "cyscatter/_registry/ops.py",
           "xp.maximum(per_group, 1, out=per_group)", "xp.maximum(per_group, 0, out=per_group)",
           "an empty group's mean divides by 0"),
    Mutant("ops-sqrt-n-root", "cyscatter/_registry/ops.py",
           "xp.sqrt(per_group, out=per_group)", "xp.cbrt(per_group, out=per_group)",
           "sqrt_n divides by the cube root of the count"),
    Mutant("ops-unsigned-true-division", "cyscatter/_registry/ops.py",
           'return np.dtype(np.float64) if self.true_division and dtype.kind in "iu" else dtype',
           'return np.dtype(np.float64) if self.true_division and dtype.kind in "i" else dtype',
           "unsigned mean/div keep the unsigned dtype"),
    Mutant("ops-float16-accumulation", "cyscatter/_registry/ops.py",
           "if dtype == np.float16 or is_bfloat16(dtype):\n            return np.dtype(np.float32)",
           "if is_bfloat16(dtype):\n            return np.dtype(np.float32)",
           "float16 accumulates in float16"),
    Mutant("ops-small-int-widening", "cyscatter/_registry/ops.py",
           'if dtype.kind in "iu" and dtype not in KERNEL_DTYPES:\n            return np.dtype(np.int64)',
           'if dtype.kind in "iu" and dtype not in KERNEL_DTYPES:\n            return np.dtype(np.int32)',
           "small integers accumulate in int32"),
    Mutant("ops-sub-combine", "cyscatter/_registry/ops.py",
           'Op("sub", (), kernels.OpCode.OP_SUB, "zero", combine="add"',
           'Op("sub", (), kernels.OpCode.OP_SUB, "zero", combine="sub"',
           "chunked sub merges its partials by subtracting"),
    Mutant("ops-fast-path-admits-counts", "cyscatter/_registry/ops.py",
           "return not op.counts and not op.winner and op.result_dtype(dtype) == dtype",
           "return not op.winner and op.result_dtype(dtype) == dtype",
           "the fast path admits mean (no division)"),
    Mutant("ops-bool-reductions", "cyscatter/_registry/ops.py",
           'if self.winner:   # an assignment moves bytes', 'if self.winner or dtype.kind == "b":   #',
           "the reductions accept a bool src (only the assignments may)"),
    # ---- index planning ----------------------------------------------------------------------------------------
    Mutant("index-clip-bound", "cyscatter/_plan/index.py",
           'xp.clip(flat, 0, size - 1)', 'xp.clip(flat, 0, size)', "mode='clip' clips to size, one past the end"),
    Mutant("index-wrap-negative", "cyscatter/_plan/index.py",
           'flat = xp.mod(flat, size) if mode == "wrap"', 'flat = xp.mod(xp.abs(flat), size) if mode == "wrap"',
           "mode='wrap' wraps -1 to 1"),
    Mutant("index-normalize-drop", "cyscatter/_plan/index.py",
           "flat = xp.where(negative, flat + flat.dtype.type(size), flat)",
           "flat = xp.where(negative, flat + flat.dtype.type(size - 1), flat)",
           "normalize_drop counts negative entries from one before the end"),
    Mutant("index-uint64-clip", "cyscatter/_plan/index.py",
           "flat = xp.minimum(flat, np.uint64(size - 1)).astype(np.int64)",
           "flat = xp.minimum(flat, np.uint64(size)).astype(np.int64)",
           "huge uint64 entries clip one past the end"),
    Mutant("index-inferred-size", "cyscatter/_plan/index.py",
           "inferred.append(max(int(be.reduce_max(c)) + 1, 0) if c.size else 0)",
           "inferred.append(max(int(be.reduce_max(c)), 0) if c.size else 0)",
           "the inferred dim_size misses the largest entry"),
    Mutant("segment-decreasing-indptr", "cyscatter/_api/segment.py",
           "if steps.size and steps.min() < 0:", "if steps.size and steps.min() < -1:",
           "an indptr decreasing by one is accepted"),
    Mutant("segment-indptr-start", "cyscatter/_api/segment.py",
           "if ptr[0] != 0:", "if ptr[0] < 0:", "an indptr not starting at 0 is accepted"),
    # ---- public functions and fast paths -----------------------------------------------------------------------
    # (a mutant letting scatter's fast path take any mode is equivalent, not a bug: the C fast path refuses a call
    # with an out-of-range entry, where the modes differ, and the general path then runs)
    Mutant("scatter-fast-path-dtype", "cyscatter/_api/scatter.py",
           "and fill_value is None and type(src) is np.ndarray and indices_are_sorted is False \\\n            and dtype is "
           "None and out is None",
           "and fill_value is None and type(src) is np.ndarray and indices_are_sorted is False \\\n            and out is "
           "None", "scatter's fast path ignores dtype="),
    Mutant("scatter-fast-path-fill", "cyscatter/_api/scatter.py",
           'mode == "raise" \\\n            and fill_value is None and type(src) is np.ndarray '
           'and indices_are_sorted is False',
           'mode == "raise" \\\n            and type(src) is np.ndarray and indices_are_sorted is False',
           "scatter's fast path ignores fill_value"),
    Mutant("moments-ddof", "cyscatter/_api/moments.py",
           "dof = ctx.xp.subtract(counts, ddof, dtype=real)",
           "dof = ctx.xp.subtract(counts, 0, dtype=real)", "var ignores ddof"),
    Mutant("moments-no-dof-nan", "cyscatter/_api/moments.py",
           "ctx.xp.copyto(summed, np.nan, where=~(dof > 0))", "ctx.xp.copyto(summed, np.nan, where=~(dof >= 0))",
           "var of a group with count == ddof is inf, not NaN"),
    Mutant("softmax-shift", "cyscatter/_api/softmax.py",
           "shifted = ctx.xp.exp(ctx.src3 - ctx.take(group_max(ctx)))", "shifted = ctx.xp.exp(ctx.src3)",
           "softmax without the group maximum's shift (overflows)"),
    # ---- reverse rules -----------------------------------------------------------------------------------------
    Mutant("rules-sub-sign", "cyscatter/_reverse/rules.py",
           '"negated": Rules(vjp_src=lambda ctx, g3: -ctx.take(g3)',
           '"negated": Rules(vjp_src=lambda ctx, g3: ctx.take(g3)', "sub's src cotangent has the wrong sign"),
    Mutant("rules-tie-split", "cyscatter/_reverse/rules.py",
           "share = xp.where(nwin > 0, g3 / xp.maximum(nwin, 1), 0)", "share = xp.where(nwin > 0, g3, 0)",
           "tied max/min winners each get the whole cotangent (general path)"),
    Mutant("rules-dst-tie-split", "cyscatter/_reverse/rules.py",
           "return xp.where(dst_win, g3 / xp.maximum(nwin, 1), 0)", "return xp.where(dst_win, g3, 0)",
           "a tied initial dst gets the whole cotangent (general path)"),
    Mutant("rules-mean-divisor", "cyscatter/_reverse/rules.py",
           "per_group = g3 / get_op(op).divisor(ctx.counts(),", "per_group = g3 / get_op(op).divisor(ctx.counts() + 1,",
           "mean's cotangent divided by count + 1"),
    Mutant("rules-div-sign", "cyscatter/_reverse/rules.py",
           "grad = -(ctx.take(g3, plan) * ctx.take(ctx.out3, plan)) / rows3",
           "grad = (ctx.take(g3, plan) * ctx.take(ctx.out3, plan)) / rows3", "div's src cotangent has the wrong sign"),
    Mutant("rules-mul-dst", "cyscatter/_reverse/rules.py",
           "return g3 * ctx.put_src(get_op(\"mul\"), start=1)\n",
           "return g3 * ctx.put_src(get_op(\"add\"), start=1)\n",
           "mul's dst cotangent uses the sum of the group, not its product"),
    Mutant("rules-assign-dst", "cyscatter/_reverse/rules.py",
           "ctx.xp.where((ctx.counts() == 0)[None, :, None], g3, 0)",
           "ctx.xp.where((ctx.counts() <= 1)[None, :, None], g3, 0)",
           "an assignment's dst also gets the cotangent of rows one entry reached"),
    Mutant("rules-signed-zero-ties", "cyscatter/_reverse/rules.py",
           "    if a.dtype.kind == \"f\":\n        same &= xp.signbit(a) == xp.signbit(best)\n", "",
           "-0.0 and +0.0 tie in max/min's reverse rules"),
    Mutant("rules-nanmean-count", "cyscatter/_reverse/rules.py",
           "per_element = (g3 / ctx.xp.maximum(counts, 1))", "per_element = (g3 / ctx.xp.maximum(counts, 2))",
           "nanmean's cotangent of a single non-NaN entry is halved (general path)"),
    Mutant("rules-set-winner", "cyscatter/_reverse/rules.py",
           '"assign_last": Rules(vjp_src=_assign_src(True)', '"assign_last": Rules(vjp_src=_assign_src(False)',
           "set's cotangent goes to the first entry, not the last"),
    Mutant("rules-nan-entries", "cyscatter/_reverse/rules.py",
           "return ctx.src3 == ctx.src3   # NumPy's isnan negated", "return ctx.src3 == ctx.src3.real   # wrong",
           "a complex entry NaN in its imaginary part counts as present"),
    # ---- grad ----------------------------------------------------------------------------------------------------
    Mutant("grad-cast-back", "grad/_args.py",
           "defvjp(cast, lambda ans, x, dtype: lambda g: cast(g, np.result_type(x)))",
           "defvjp(cast, lambda ans, x, dtype: lambda g: g)", "dtype='s cotangent is not cast back to src's dtype"),
    Mutant("grad-gather-dtype", "grad/_gather.py",
           "    return lambda g: cast(vjp(g), src_dtype)\n\n\ndef _gather_jvp", "    return vjp\n\n\ndef _gather_jvp",
           "gather(dtype=)'s VJP returns the cotangent in the cast dtype"),
    Mutant("grad-scatter-into-order", "grad/_scatter.py",
           "vjps = [(lin.vjp_dst, lambda g: _unbroadcast(lin.vjp_src(g), shape))[argnum] for argnum in argnums]",
           "vjps = [(lambda g: _unbroadcast(lin.vjp_src(g), shape), lin.vjp_dst)[argnum] for argnum in argnums]",
           "scatter_into's dst and src VJPs swapped"),
    # ---- Dask ----------------------------------------------------------------------------------------------------
    Mutant("dask-combine-counts", "cyscatter/dask/_blocks.py",
           "        if counts is not None:\n            counts += other_counts\n", "",
           "chunked mean merges the sums but not the counts"),
    Mutant("dask-first-winner", "cyscatter/dask/_blocks.py",
           'take = other_counts > 0 if merge.winner == "last" else (other_counts > 0) & (counts == 0)',
           'take = other_counts > 0 if merge.winner == "last" else (other_counts > 0)',
           "chunked 'first' lets a later chunk win"),
    # ---- compiled kernels ----------------------------------------------------------------------------------------
    Mutant("kernel-uint64-max", "cyscatter/kernels.pyx",
           "    elif value_t is int32_t or value_t is int64_t or value_t is uint64_t:\n        return new > cur",
           "    elif value_t is int32_t or value_t is int64_t:\n        return new > cur",
           "uint64 max never replaces the value held"),
    Mutant("kernel-min-signed-zero", "cyscatter/include/_cpu.h",
           "CYSCATTER_EXTREME(cyscatter_min_d, double, <, cyscatter_or_d)",
           "CYSCATTER_EXTREME(cyscatter_min_d, double, <, cyscatter_and_d)",
           "min of doubles (scalar rule) keeps +0.0 over -0.0"),
    Mutant("kernel-half-subnormal", "cyscatter/include/_halfconv.h",
           "uint32_t is_normal = (0u - (uint32_t)(em >= 0x0400u)) & ~is_special;",
           "uint32_t is_normal = (0u - (uint32_t)(em >= 0x0200u)) & ~is_special;",
           "float16 -> float32: the upper half of the subnormals read as normals"),
    Mutant("kernel-exclusive-scan", "cyscatter/scan_kernels.pyx",
           "                cur = table[j * table_stride]\n                out[k * out_stride] = cur\n",
           "                cur = table[j * table_stride]\n                out[k * out_stride] = running(op, cur, "
           "src[k * src_stride])\n",
           "an exclusive scan includes the entry itself (one-element rows)"),
    Mutant("kernel-complex-division", "cyscatter/include/_cdiv.h",
           "            out[1] = (ai - ar * rat) * scl;", "            out[1] = (ai + ar * rat) * scl;",
           "complex division's imaginary part has a sign error"),
)


def _copy_checkout(dest: Path) -> None:
    """The checkout as it is (built modules and the build cache included), without .git and caches."""
    shutil.copytree(ROOT, dest, symlinks=True, ignore=shutil.ignore_patterns(
        ".git", "__pycache__", ".hypothesis", ".pytest_cache", "docs", "dist", "*.egg-info"))
    shutil.copytree(ROOT / "docs", dest / "docs", ignore=shutil.ignore_patterns("_build", "generated"))


def _tests_at(rev: str, dest: Path) -> None:
    """Replaces dest's tests/ and pyproject.toml by those of commit `rev`."""
    shutil.rmtree(dest / "tests")
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "tests", "pyproject.toml"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)


def _build(tree: Path) -> None:
    subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=tree, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _pytest(tree: Path, args: list[str], workers: int) -> tuple[bool, str, float]:
    """(killed, first failing test or "", seconds) of one pytest run that stops at its first failure."""
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", *args]
    if workers > 1:
        cmd += ["-n", str(workers)]
    start = time.perf_counter()
    run = subprocess.run(cmd, cwd=tree, capture_output=True, text=True,
                         env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "HYPOTHESIS_PROFILE": "ci"})
    seconds = time.perf_counter() - start
    failed = [line.split(" ", 1)[1].split(" - ")[0] for line in run.stdout.splitlines()
              if line.startswith(("FAILED ", "ERROR "))]
    if run.returncode == 4 and "while loading conftest" in run.stdout + run.stderr:
        return True, "(the tests cannot import the package)", seconds
    if run.returncode not in (0, 1, 2):   # 5: nothing collected, 3/4: internal or usage error
        raise RuntimeError(f"pytest exited {run.returncode} in {tree}:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}")
    return run.returncode != 0, failed[0] if failed else "", seconds


def _same_file(tree: Path, record: dict) -> str:
    """The test file of `tree` named as the one whose test killed the mutant in an earlier suite, or ""."""
    for result in record.values():
        if isinstance(result, dict) and result.get("test"):
            name = Path(result["test"].split("::")[0]).name
            found = sorted((tree / "tests").rglob(name))
            if found:
                return str(found[0].relative_to(tree))
    return ""


def _suite_args(suite: str) -> list[str]:
    return {"default": ["--tier=default"], "full": ["--tier=rest"]}.get(suite, [])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", action="append", default=[],
                        help="default, full or tests-at=REV (repeatable; default: default and full)")
    parser.add_argument("--only", action="append", default=[], help="mutant names (repeatable)")
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    parser.add_argument("--workers", type=int, default=2, help="pytest-xdist processes (1: none)")
    parser.add_argument("--json", type=Path, help="write the results here after each mutant (and read the ones "
                        "an earlier, stopped run wrote there: those mutants are not run again)")
    args = parser.parse_args(argv)
    mutants = [m for m in MUTANTS if not args.only or m.name in args.only]
    if args.list:
        for m in mutants:
            print(f"{m.name:30} {m.path:28} {m.what}")
        return 0
    suites = args.suite or ["default", "full"]
    results = {m.name: {"what": m.what, "path": m.path} for m in mutants}
    if args.json and args.json.exists():   # a run stopped part-way: keep what it measured
        for name, record in json.loads(args.json.read_text()).items():
            if name in results:
                results[name].update(record)
    with tempfile.TemporaryDirectory(prefix="cyscatter-mutants-") as scratch:
        trees = {}
        for suite in suites:
            tree = Path(scratch) / suite.replace("=", "-")
            _copy_checkout(tree)
            if suite.startswith("tests-at="):
                _tests_at(suite.split("=", 1)[1], tree)
            trees[suite] = tree
        for m in mutants:
            for suite, tree in trees.items():
                path = tree / m.path
                original = path.read_text()
                if original.count(m.old) != 1:
                    raise SystemExit(f"{m.name}: the text to change occurs {original.count(m.old)} times in {m.path}")
                record = results[m.name]
                if suite in record:
                    continue
                if suite == "full" and record.get("default", {}).get("killed"):
                    record[suite] = dict(record["default"], by="default tier")   # the default tier is in the full one
                    print(f"{m.name:30} {suite:18} killed (by the default tier, part of the full one)", flush=True)
                    continue
                path.write_text(original.replace(m.old, m.new))
                try:
                    if m.path.endswith(COMPILED):
                        _build(tree)
                    killed, test, seconds = False, "", 0.0
                    hint = _same_file(tree, record)
                    if hint:   # the file of the test that killed it in another suite first: a quick kill
                        killed, test, seconds = _pytest(tree, [hint], args.workers)
                    if not killed:
                        killed, test, more = _pytest(tree, _suite_args(suite), args.workers)
                        seconds += more
                finally:
                    path.write_text(original)
                    if m.path.endswith(COMPILED):
                        _build(tree)   # the build cache gives the original modules back
                record[suite] = {"killed": killed, "test": test, "seconds": round(seconds, 1)}
                if args.json:
                    args.json.write_text(json.dumps(results, indent=1))
                print(f"{m.name:30} {suite:18} {'killed' if killed else 'SURVIVED':8} {seconds:6.0f} s  {test}",
                      flush=True)
    print()
    for suite in suites:
        killed = sum(results[m.name][suite]["killed"] for m in mutants)
        print(f"{suite}: {killed} of {len(mutants)} mutants killed")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
