"""One-time calibration of the kernels' strategy switches on the running machine.

Usage::

    python -m cyscatter.calibrate            # measure (a few seconds), print, keep the choice for this machine
    python -m cyscatter.calibrate --show     # the machine, the rules in force and where they come from
    python -m cyscatter.calibrate --clear    # forget this machine's calibration

It helps only on a machine that scatters or gathers tables larger than its last-level cache, measured while the
CPU is quiet (`WHEN_IT_HELPS`, printed by every run); a result never depends on it. ``--clear`` removes the file,
its lock file and (when it is left empty) the cache folder it made.

Two switches depend on what a machine's caches cannot tell, so they are measured here, one thread, in
interleaved rounds (each setting once per round; the minimum and the median over rounds are compared):

- streaming (non-temporal) stores for a gather's output: a gather of 64 float32 rows from a 25.6 MB table
  into an output of the size the cache rule would stream from (max(64 MB, 2 x last-level cache)) and of 4x
  that (up to 1 GiB), plain stores against streaming ones;
- how far ahead the row prefetches reach: a scatter-add of 256-byte rows into a table larger than the
  last-level cache (twice it, 32-256 MB), 2, 4 (the default), 8 and 16 KB of rows ahead; no prefetch is timed
  too, for the record.

A measurement departs from the setting the caches give (streaming as `cyscatter._runtime.machine`'s rule says; 4 KB
ahead) only where the other setting beat it by at least 5% in both its minimum and its median
(`cyscatter._runtime.machine.WIN`): on a noisy machine the cache rules stay. Streaming is then used from the smallest
measured size from which every measured size streams. The choice and the figures go to a JSON file per machine
(`cyscatter._runtime.machine.calibration_path`: vendor, model, caches and CPU count in its name) in an absolute
$CYSCATTER_CACHE_DIR, else $XDG_CACHE_HOME/cyscatter, else ~/.cache/cyscatter, written atomically; `import
cyscatter` reads it; ``CYSCATTER_MACHINE=generic`` ignores it. A calibration that could measure nothing (too
little free memory) keeps nothing; while one keeps its choice into a cache folder, another into the same
folder (or a ``--clear`` of it) is refused (a lock file beside the calibration; ``--no-write`` takes no lock,
as it writes nothing). Results never depend on these switches (every setting computes the same bits); only
speed does.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import glob
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from cyscatter._runtime import machine as _machine

_MIB = 1 << 20
ROW_FLOATS = 64                 # 256-byte rows, the benchmarks' W1/W4 rows
GATHER_TABLE_ROWS = 100_000     # W4's table: 25.6 MB
SCATTER_ENTRIES = 500_000
REACHES = (2048, 4096, 8192, 16384)
MAX_OUTPUT = 1 << 30            # the largest array a trial allocates


def _stats(samples: Sequence[float]) -> tuple[float, float]:
    """(minimum, median) in milliseconds."""
    return 1e3 * min(samples), 1e3 * float(np.median(samples))


def time_interleaved(runs: dict[str, Callable[[], object]], rounds: int) -> dict[str, tuple[float, float]]:
    """(min, median) ms of each run, timed once per round in turn, after one warm-up call each."""
    samples: dict[str, list[float]] = {key: [] for key in runs}
    for run in runs.values():
        run()
    for _ in range(rounds):
        for key, run in runs.items():
            t0 = time.perf_counter()
            run()
            samples[key].append(time.perf_counter() - t0)
    return {key: _stats(s) for key, s in samples.items()}


def wins(candidate: tuple[float, float], default: tuple[float, float]) -> bool:
    """True when `candidate` (min, median) beats `default` by `_machine.WIN` in both."""
    return all(c <= (1 - _machine.WIN) * d for c, d in zip(candidate, default))


def _tuned(knobs: dict[str, int], call: Callable[[], object]) -> Callable[[], object]:
    """`call` run with the kernels' `_tune` knobs set, restored after."""
    from cyscatter import kernels

    def run() -> object:
        saved = kernels._tune()
        kernels._tune(**knobs)
        try:
            return call()
        finally:
            kernels._tune(**{key: saved[key] for key in knobs})
    return run


def _available_bytes() -> int | None:
    """Memory the system can give without swapping (MemAvailable, which counts the page cache it can drop;
    else the free pages), None when unknown."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _fits(nbytes: int) -> bool:
    """Whether `nbytes` more can be allocated without pressing on the memory (half of what is available)."""
    available = _available_bytes()
    return nbytes <= (2 * MAX_OUTPUT if available is None else available // 2)


def stream_trial(machine: _machine.Machine, rounds: int, scale: float = 1.0) -> dict[str, Any]:
    """Plain against streaming stores for gather outputs of the size the cache rule would stream from (`base`)
    and 4x it (those within `MAX_OUTPUT`). At each size the setting is the cache rule's unless the other one
    won by the margin (`wins`); `stream_min_bytes` is the smallest measured size from which every measured size
    streams (0 when the largest does not), the rule's when nothing could be measured (`measured` False)."""
    import cyscatter as cs
    rng = np.random.default_rng(0)
    table = rng.standard_normal((max(1000, int(GATHER_TABLE_ROWS * scale)), ROW_FLOATS), dtype=np.float32)
    rule = machine.rule_stream_min_bytes
    base = max(64 * _MIB, 2 * machine.llc_bytes)
    sizes = [size for size in (base, 4 * base) if size <= MAX_OUTPUT] or [MAX_OUTPUT]
    figures: list[dict[str, Any]] = []
    settings: list[tuple[int, bool]] = []
    for size in sizes:
        n = max(1000, int(size * scale) // (ROW_FLOATS * 4))
        if not _fits(n * ROW_FLOATS * 4):
            figures.append({"output_bytes": n * ROW_FLOATS * 4, "skipped": "not enough free memory"})
            continue
        index = rng.integers(0, table.shape[0], n)
        out = np.empty((n, ROW_FLOATS), np.float32)

        def gather() -> object:
            return cs.gather_into(out, table, index, num_threads=1)
        got = time_interleaved({"plain": _tuned({"stream": 0}, gather),
                                "streaming": _tuned({"stream": 1}, gather)}, rounds)
        if wins(got["streaming"], got["plain"]):
            verdict, streams = "streaming won", True
        elif wins(got["plain"], got["streaming"]):
            verdict, streams = "plain won", False
        else:
            verdict, streams = "no clear winner: the cache rule", bool(rule) and size >= rule
        settings.append((size, streams))
        figures.append({"output_bytes": out.nbytes, "plain_ms": got["plain"], "streaming_ms": got["streaming"],
                        "verdict": verdict, "streams": streams})
        del out, index
    if not settings:
        return {"stream_min_bytes": rule, "measured": False, "runs": figures}
    chosen = 0
    for size, streams in reversed(settings):
        if not streams:
            break
        chosen = size
    if not chosen and rule > settings[-1][0] and figures[-1]["verdict"].startswith("no clear"):
        chosen = rule   # the rule streams only past every measured size, where nothing contradicted it
    return {"stream_min_bytes": chosen, "measured": True, "runs": figures}


def prefetch_trial(machine: _machine.Machine, rounds: int, scale: float = 1.0) -> dict[str, Any]:
    """Scatter-add rows into an out-of-cache table, prefetching `REACHES` bytes of rows ahead (and not at all);
    `prefetch_bytes` is the fastest reach where it beat the default by the margin (`wins`), else the default
    (also when nothing could be measured: `measured` False)."""
    import cyscatter as cs
    row_bytes = ROW_FLOATS * 4
    table_bytes = min(256 * _MIB, max(32 * _MIB, 2 * machine.llc_bytes)) if machine.llc_bytes else 64 * _MIB
    rows = max(1000, int(table_bytes * scale) // row_bytes)
    n = max(2000, int(SCATTER_ENTRIES * scale))
    default = _machine.DEFAULT_PREFETCH_BYTES
    if not _fits((rows + n) * row_bytes):
        return {"prefetch_bytes": default, "measured": False, "skipped": "not enough free memory"}
    rng = np.random.default_rng(1)
    src = rng.standard_normal((n, ROW_FLOATS), dtype=np.float32)
    index = rng.integers(0, rows, n)
    out = np.zeros((rows, ROW_FLOATS), np.float32)

    def scatter() -> object:
        return cs.scatter_into(out, src, index, "add", num_threads=1)
    runs = {"0": _tuned({"prefetch_rows": 0}, scatter)}
    runs.update({str(reach): _tuned({"prefetch_rows": reach // row_bytes}, scatter) for reach in REACHES})
    got = time_interleaved(runs, rounds)
    best = min(REACHES, key=lambda reach: got[str(reach)])
    chosen = best if best != default and wins(got[str(best)], got[str(default)]) else default
    return {"prefetch_bytes": chosen, "measured": True, "table_bytes": out.nbytes, "entries": n,
            "ms": {("none" if key == "0" else f"{key} B"): value for key, value in got.items()}}


def calibrate(rounds: int = 7, scale: float = 1.0,
              machine: _machine.Machine | None = None) -> tuple[_machine.Calibration, dict[str, Any]]:
    """Measure this machine: its `Calibration` and the JSON document to keep (figures included; `measured`
    False when neither trial could run). The kernels' `_tune` knobs are set during the trials and restored
    after, so nothing else should call the kernels of this process meanwhile."""
    machine = _machine.detect(calibrated=False) if machine is None else machine
    stream = stream_trial(machine, rounds, scale)
    prefetch = prefetch_trial(machine, rounds, scale)
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    chosen = _machine.Calibration(int(stream["stream_min_bytes"]), int(prefetch["prefetch_bytes"]), date)
    from cyscatter._version import __version__
    document = {"format": _machine.CALIBRATION_FORMAT, "machine": machine.key(), "date": date,
                "cyscatter": __version__, "rounds": rounds, "scale": scale,
                "chosen": {"stream_min_bytes": chosen.stream_min_bytes, "prefetch_bytes": chosen.prefetch_bytes},
                "rule_stream_min_bytes": machine.rule_stream_min_bytes,
                "measured": bool(stream["measured"] or prefetch["measured"]),
                "stream": stream, "prefetch": prefetch}
    return chosen, document


def save(document: dict[str, Any], path: Path) -> None:
    """Write `document` to `path` atomically: into a temporary file of its own in the same folder (created
    exclusively, so that no other writer and no planted link shares it), flushed to disk, then renamed over
    `path`; a reader sees the old file or the new one, never a part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, part = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    try:
        os.fchmod(fd, 0o644)   # readable by the machine's other users, as any cache file (mkstemp gives 0600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(json.dumps(document, indent=1) + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(part, path)
    finally:
        if os.path.lexists(part):
            os.unlink(part)


@contextlib.contextmanager
def exclusive(path: Path) -> Iterator[None]:
    """Hold the lock of `path` (a `.lock` file beside it) while measuring: two calibrations at once would time
    each other. Raises BlockingIOError when another process holds it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:   # no flock (Windows): unlocked
        yield
        return
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    lock = lock_path(path)
    fd = os.open(lock, flags, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        try:   # a --clear removes the lock file: one opened before that is no longer the lock
            same = os.path.samestat(os.fstat(fd), os.stat(lock, follow_symlinks=False))
        except OSError:
            same = False
        if not same:
            raise BlockingIOError(f"{lock} was replaced while it was being taken")
        yield
    finally:
        os.close(fd)


def lock_path(path: Path) -> Path:
    """The lock file of `path`'s calibration (`exclusive`); `--clear` removes it with the calibration."""
    return path.with_name(path.name + ".lock")


def leftovers(path: Path) -> list[Path]:
    """Temporary files of `save` for `path` that a killed writer left behind."""
    return sorted(path.parent.glob(f".{glob.escape(path.name)}.*.part"))


def _from(stream_min_bytes: int) -> str:
    return f"from {_machine._bytes(stream_min_bytes)}" if stream_min_bytes else "never"


def _ms(pair: Sequence[float]) -> str:
    low, mid = pair
    return f"{low:7.1f} {mid:7.1f}"


def report(document: dict[str, Any]) -> str:
    """The trials' figures as text: min and median ms per setting, and what was chosen."""
    stream, prefetch = document["stream"], document["prefetch"]
    lines = ["gather output (streaming stores)          min  median ms"]
    for run in stream["runs"]:
        size = f"{run['output_bytes'] / 1e6:.3g} MB"
        if "skipped" in run:
            lines.append(f"  {size}: skipped ({run['skipped']})")
            continue
        lines.append(f"  {size:>8} plain stores          {_ms(run['plain_ms'])}")
        lines.append(f"  {size:>8} streaming stores      {_ms(run['streaming_ms'])}   {run['verdict']}")
    if "skipped" in prefetch:
        lines.append(f"row prefetch: skipped ({prefetch['skipped']})")
    else:
        lines.append(f"scatter-add, {prefetch['entries']} rows of 256 B into {prefetch['table_bytes'] / 1e6:.3g} "
                     "MB (prefetch reach)   min  median ms")
        for name, pair in prefetch["ms"].items():
            label = "no prefetch" if name == "none" else f"{name} ahead"
            lines.append(f"  {label:>14}                 {_ms(pair)}")
    chosen, rule = document["chosen"], document["rule_stream_min_bytes"]
    lines.append(f"chosen: streaming stores {_from(chosen['stream_min_bytes'])} (the cache rule: {_from(rule)}), "
                 f"prefetch {chosen['prefetch_bytes']} B ahead (default {_machine.DEFAULT_PREFETCH_BYTES})")
    return "\n".join(lines)


def _shown(path: Path | None) -> str:
    """`path` for printing: bytes that are not UTF-8 (kept by the OS as surrogates) escaped, not an error."""
    return "-" if path is None else str(path).encode("utf-8", "backslashreplace").decode("utf-8")


def no_folder() -> str:
    """Why there is no cache folder (`_machine.cache_dir` gave None), in words."""
    chosen = os.environ.get("CYSCATTER_CACHE_DIR")
    if chosen and not os.path.isabs(chosen):
        return (f"CYSCATTER_CACHE_DIR={_shown(Path(chosen))!r} is not an absolute path: no calibration is read "
                "or kept (give an absolute one)")
    return ("no cache folder (no home folder and no absolute XDG_CACHE_HOME): set CYSCATTER_CACHE_DIR to an "
            "absolute path")


def show() -> str:
    """The machine, its calibration file and the rules in force, as text."""
    bare = _machine.detect(calibrated=False)
    path = _machine.calibration_path(bare)
    calibration, problem = _machine.load_calibration(bare, path) if path is not None else (None, None)
    if path is None:
        state = no_folder()
    elif calibration is not None:
        state = f"calibrated {calibration.date}"
    elif problem is not None:
        state = f"ignored: {problem}"
    else:
        state = "none (rules from the caches)"
    generic = os.environ.get("CYSCATTER_MACHINE") == "generic"
    return "\n".join([
        f"machine: {bare.describe()}, {bare.cpus} CPUs",
        f"calibration file: {_shown(path)}",
        f"calibration: {state}".encode("utf-8", "backslashreplace").decode("utf-8"),
        f"rules in force: {_machine.ACTIVE.rules()}" + (" (CYSCATTER_MACHINE=generic)" if generic else ""),
    ])


WHEN_IT_HELPS = ("Calibrating helps only on a machine that scatters or gathers tables larger than its last-level "
                 "cache on a quiet CPU; it never changes a result, and without it the rules come from the caches.")


class _Output:
    """Printing that cannot fail the command: a closed pipe, a full disk or an unencodable character in
    stdout/stderr ends that stream's output, not the command (its exit status is the action's)."""

    def __init__(self) -> None:
        self.dead: set[int] = set()

    def __call__(self, text: str, err: bool = False) -> None:
        stream = sys.stderr if err else sys.stdout
        if stream is None or id(stream) in self.dead:
            return
        try:
            print(text.encode("utf-8", "backslashreplace").decode("utf-8"), file=stream, flush=True)
        except (OSError, ValueError, UnicodeError):   # closed, broken pipe, full, strict non-UTF-8 encoding
            self.dead.add(id(stream))
            if stream is sys.stdout:
                try:   # no second error at exit, when Python flushes stdout again
                    os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
                except (OSError, ValueError):
                    pass


def _rounds(text: str) -> int:
    value = int(text)
    if not 3 <= value <= 101:
        raise argparse.ArgumentTypeError(f"--rounds must be between 3 and 101, got {value}")
    return value


def _scale(text: str) -> float:
    value = float(text)
    if not 1e-6 <= value <= 1:
        raise argparse.ArgumentTypeError(f"--scale must be in [1e-6, 1], got {value}")
    return value


def _under_lock(path: Path, say: _Output, verb: str, work: Callable[[], None]) -> bool:
    """Run `work` holding `path`'s lock (`exclusive`); False, said on stderr, when another calibration holds it
    or the OS refuses (`verb` names what could not be done)."""
    try:
        with exclusive(path):
            work()
    except BlockingIOError:
        say(f"another calibration of this machine is running (it holds {_shown(path)}.lock): cannot {verb} "
            f"{_shown(path)} now", err=True)
        return False
    except OSError as exc:
        say(f"cannot {verb} {_shown(path)}: {exc}", err=True)
        return False
    return True


def _clear(path: Path, say: _Output) -> int:
    """Remove the calibration, its lock file and any unfinished temporary file, then the cache folder if that
    leaves it empty (and it is not $CYSCATTER_CACHE_DIR, a folder the user named): nothing is left behind."""
    stale = leftovers(path)
    if not os.path.lexists(path) and not stale and not os.path.lexists(lock_path(path)):
        say(f"no calibration at {_shown(path)}")
        return 0
    had_file = os.path.lexists(path)

    def remove() -> None:
        for part in stale:
            part.unlink(missing_ok=True)
        if os.path.lexists(path):
            os.unlink(path)
        lock_path(path).unlink(missing_ok=True)   # still held: a waiting opener finds it replaced (`exclusive`)
    if not _under_lock(path, say, "remove", remove):
        return 1
    named = os.environ.get("CYSCATTER_CACHE_DIR")
    if not (named and os.path.abspath(named) == os.path.abspath(path.parent)):
        with contextlib.suppress(OSError):   # not empty (other machines' files), or not ours to remove
            path.parent.rmdir()
    if not had_file and not stale:
        say(f"no calibration at {_shown(path)} (removed its lock file)")
        return 0
    say(f"removed {_shown(path)}" + (f" and {len(stale)} unfinished temporary file(s)" if stale else ""))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """The command (see the module docstring); returns its exit status."""
    say = _Output()
    parser = argparse.ArgumentParser(
        prog="python -m cyscatter.calibrate",
        description="Measure the kernels' streaming-store and prefetch switches on this machine and keep the "
                    "choice (read by `import cyscatter`). " + WHEN_IT_HELPS)
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--show", action="store_true", help="print the machine, its calibration and the rules")
    action.add_argument("--clear", action="store_true", help="remove this machine's calibration file")
    action.add_argument("--no-write", action="store_true", help="measure and print, keep nothing")
    parser.add_argument("--rounds", type=_rounds, help="timed rounds per setting (3-101, default 7)")
    parser.add_argument("--scale", type=_scale, help=argparse.SUPPRESS)   # tests: smaller arrays
    args = parser.parse_args(argv)
    if (args.show or args.clear) and (args.rounds is not None or args.scale is not None):
        parser.error("--rounds and --scale apply to a measurement, not to --show or --clear")
    rounds, scale = args.rounds or 7, args.scale or 1.0
    if args.show:
        say(show())
        say(WHEN_IT_HELPS)
        return 0
    bare = _machine.detect(calibrated=False)
    path = _machine.calibration_path(bare)
    if path is None and not args.no_write:
        say(no_folder(), err=True)
        return 1
    if args.clear:
        assert path is not None
        return _clear(path, say)
    if path is not None and not args.no_write and os.path.lexists(path) and not os.path.isfile(path):
        say(f"{_shown(path)} is not a regular file: remove it first (nothing measured)", err=True)
        return 1
    say(WHEN_IT_HELPS)
    say(f"machine: {bare.describe()}, {bare.cpus} CPUs; measuring ({rounds} rounds) ...")
    if args.no_write:
        say(report(calibrate(rounds, scale, bare)[1]))
        return 0
    assert path is not None
    done: list[tuple[_machine.Calibration, dict[str, Any]]] = []

    def measure_and_keep() -> None:
        done.append(calibrate(rounds, scale, bare))
        if done[0][1]["measured"]:
            save(done[0][1], path)
    if not _under_lock(path, say, "write", measure_and_keep):
        return 1
    calibration, document = done[0]
    say(report(document))
    if not document["measured"]:
        say("nothing could be measured: nothing kept (the rules still come from the caches)", err=True)
        return 1
    _machine.apply(dataclasses.replace(bare, calibration=calibration))
    say(f"kept in {_shown(path)}; in force from the next `import cyscatter` (CYSCATTER_MACHINE=generic ignores "
        "it)")
    return 0


def _command() -> int:
    """`main` as a command: Ctrl-C ends it quietly (nothing is kept before a measurement ends)."""
    try:
        return main()
    except KeyboardInterrupt:
        _Output()("interrupted: nothing kept", err=True)
        return 130


if __name__ == "__main__":
    sys.exit(_command())
