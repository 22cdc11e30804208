"""The running machine, as the kernels' strategy rules need it: the CPU vendor and the cache sizes.

Read once at import from Linux's sysfs and /proc/cpuinfo; anything unknown gets the
conservative value, under which no strategy can lose to the plain loop. `apply` hands the rules to the kernels;
`cyscatter.kernels._tune` still overrides each switch for the benchmarks. The rules and the measurements
behind them (benchmarks/NOTES.md, "Strategies per machine"):

- Non-temporal stores for a gather's output: on AMD (Zen) only, for outputs over twice the last-level cache
  (at least 64 MB). On a 2-core EPYC VM (32 MiB L3) they won for W4's 256 MB output; on an Intel Xeon VM
  (300 MiB L3, AVX-512) they lost (73.5-90.4 ms against 62.2-82.4 ms without, np.take 64.8 ms): a 256 MB output
  fits in half of that L3, and Intel server cores hold their fill buffers longer for streaming stores. Off on
  every other vendor or when the caches are unknown.
- Row prefetch (scatter, gather, gather_scatter): not while the table fits in a quarter of the core's L2 (the
  prefetches then only cost instructions; 256 KB on the EPYC's 1 MiB L2, where it was measured).
- Destination blocks of the partitioned 2-thread scatter: a quarter of the L2 (256 KB there, measured); the
  partitioning itself only for tables and srcs past half the last-level cache (4 MB when unknown): below it the
  direct loop keeps the table cached. On an EPYC with an 8 MiB L3 (2 threads, 512 B rows), partitioned /
  direct: 1.18-1.35 for 0.5-2 MB tables, 1.08 at 3 MB, 0.98 at 4 MB, 0.87 at 5 MB, 0.72 at 8 MB; on the 32 MiB
  one it won 1.16-1.33x for 51 MB tables (benchmarks/NOTES.md v9, v27).
- nanmean's NaN counts (host): counted in the sum pass while the output and its uint8/uint16 count table
  together fit in half of the last-level cache (8 MB when unknown), else in a second pass over src. On the EPYC
  (one thread, 10% NaN, 1e6 x 64 entries): the one pass won up to 17 MB of tables (1e3 rows f32 23.1 against
  27.5 ms, 3e4 rows f64 59.0 against 63.5 ms) and lost from 32 MB (1e5 rows f32 53.4 against 42.8 ms), where
  every entry's count row misses as well as its output row (benchmarks/NOTES.md v23).
- Row prefetch reach: about 4 KB of rows ahead (16 rows of 256 B; at least 16 and at most 64 index entries in
  the core kernels, 4 and 32 edges in the fused ones, the bounds scaling with the reach), measured on the EPYC.

Fixed on every machine, as they follow from what every x86 core shares: the thread split (feature columns once
each thread gets at least 256 B of a row, destination row ranges for rows of a cache line or more, else one
thread: 64-byte lines), the lean loops (rows of one element, or no prefetch: from the L2 rule above) and the
work below which fewer threads start (32768 element updates per thread, against the microseconds a team start
costs).

What a machine's caches cannot tell (how its stores stream, how far ahead its misses must start) a one-time
calibration measures: ``python -m cyscatter.calibrate`` (`cyscatter/calibrate.py`) times streaming against
plain stores and four prefetch reaches on this machine and caches its choice in a small JSON file per machine
(`cache_dir`, keyed by vendor, model, caches and CPU count), which import reads; a choice departs from what
the rules above give only where the other setting measured at least `WIN` faster.
"""
from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeGuard

_KIB = 1024
_SYS_CACHE = Path("/sys/devices/system/cpu/cpu0/cache")
DEFAULT_PREFETCH_BYTES = 4096
PREFETCH_RANGE = (256, 64 * _KIB)   # the reaches the kernels accept
WIN = 0.05                          # a calibrated choice must beat the default by this fraction
CALIBRATION_FORMAT = 1
_MAX_FILE_BYTES = 64 * _KIB         # a calibration file is ~1 KB; anything larger is not one


@dataclass(frozen=True)
class Calibration:
    """What ``python -m cyscatter.calibrate`` chose for one machine: `stream_min_bytes`, the smallest gather
    output written with non-temporal stores (0: never),
    `prefetch_bytes`, the row prefetch reach, and `date` (ISO 8601, UTC) of the measurement."""

    stream_min_bytes: int
    prefetch_bytes: int
    date: str


@dataclass(frozen=True)
class Machine:
    """What the rules read: `vendor` ("AMD", "Intel" or what /proc/cpuinfo says), `model`, `l2_bytes` (one
    core's L2, 0 when unknown), `llc_bytes` (the last-level cache one core shares, 0 when unknown), `cpus`
    (logical CPUs, 0 when unknown) and the `calibration` found for them, if any."""

    vendor: str
    model: str
    l2_bytes: int
    llc_bytes: int
    cpus: int = 0
    calibration: Calibration | None = None

    @property
    def stream_min_bytes(self) -> int:
        """Smallest gather output written with non-temporal stores (0: never)."""
        if self.calibration is not None:
            return self.calibration.stream_min_bytes
        return self.rule_stream_min_bytes

    @property
    def rule_stream_min_bytes(self) -> int:
        """`stream_min_bytes` from the vendor and caches alone, as without a calibration."""
        if self.vendor != "AMD" or not self.llc_bytes:
            return 0
        return max(64 * _KIB * _KIB, 2 * self.llc_bytes)

    @property
    def prefetch_bytes(self) -> int:
        """How far ahead the row prefetches reach, in bytes of rows."""
        return self.calibration.prefetch_bytes if self.calibration is not None else DEFAULT_PREFETCH_BYTES

    def key(self) -> dict[str, object]:
        """What identifies this machine to a calibration file (a calibration holds only where all of it matches)."""
        return {"vendor": self.vendor, "model": self.model, "l2_bytes": self.l2_bytes,
                "llc_bytes": self.llc_bytes, "cpus": self.cpus}

    @property
    def l2_share_bytes(self) -> int:
        """A quarter of the L2 (256 KB when unknown): the prefetch threshold and the destination block."""
        return self.l2_bytes // 4 if self.l2_bytes else 256 * _KIB

    @property
    def partition_min_bytes(self) -> int:
        """Largest table (and src) the 2-thread scatter leaves to the direct loop: half the last-level cache."""
        return self.llc_bytes // 2 if self.llc_bytes else 4 * _KIB * _KIB

    @property
    def fused_count_bytes(self) -> int:
        """Largest output + NaN-count tables (bytes) whose counts nanmean takes in its sum pass."""
        return self.llc_bytes // 2 if self.llc_bytes else 8 * _KIB * _KIB

    def describe(self) -> str:
        caches = ", ".join(f"{name} {size // _KIB} KiB" for name, size in (("L2", self.l2_bytes),
                                                                           ("LLC", self.llc_bytes)) if size)
        calibrated = f"; calibrated {self.calibration.date}" if self.calibration is not None else ""
        return f"{self.model} ({self.vendor}; {caches or 'caches unknown'}{calibrated})"

    def rules(self) -> str:
        """The strategy thresholds in force, in words (the benchmarks print it with the machine)."""
        stream = (f"streaming-store gathers from {_bytes(self.stream_min_bytes)}" if self.stream_min_bytes
                  else "no streaming stores")
        source = "calibrated" if self.calibration is not None else "from the caches"
        return (f"{stream}, no prefetch up to {_bytes(self.l2_share_bytes)} tables, prefetch "
                f"{self.prefetch_bytes} B of rows ahead ({source}), 2-thread partitioning past "
                f"{_bytes(self.partition_min_bytes)}")


def _bytes(n: int) -> str:
    """`n` bytes in the largest binary unit that divides it ("64 MiB", "1536 KiB", "100 B")."""
    for unit, name in ((_KIB ** 3, "GiB"), (_KIB ** 2, "MiB"), (_KIB, "KiB")):
        if n >= unit and n % unit == 0:
            return f"{n // unit} {name}"
    return f"{n} B"


def _size(text: str) -> int:
    """Bytes of a sysfs cache size ("1024K", "32M")."""
    text = text.strip().upper()
    scale = {"K": _KIB, "M": _KIB * _KIB, "G": _KIB ** 3}.get(text[-1:], 1)
    return int(text.rstrip("KMG") or 0) * scale


def _caches(root: Path = _SYS_CACHE) -> tuple[int, int]:
    """(L2 bytes, last-level bytes) of cpu0's data/unified caches; 0 for what cannot be read."""
    sizes = {}
    try:
        for index in root.glob("index*"):
            if (index / "type").read_text().strip() in ("Data", "Unified"):
                sizes[int((index / "level").read_text())] = _size((index / "size").read_text())
    except (OSError, ValueError):
        return 0, 0
    return sizes.get(2, 0), (sizes[max(sizes)] if sizes else 0)


def _cpu(cpuinfo: Path = Path("/proc/cpuinfo")) -> tuple[str, str]:
    vendor, model = "unknown", "unknown CPU"
    try:
        for line in cpuinfo.read_text().splitlines():
            key, _, value = line.partition(":")
            key = key.strip()
            if key == "vendor_id":
                vendor = {"AuthenticAMD": "AMD", "GenuineIntel": "Intel"}.get(value.strip(), value.strip())
            elif key == "model name":
                model = value.strip()
            if key == "" and model != "unknown CPU":
                break
    except OSError:
        pass
    return vendor, model


def cache_dir() -> Path | None:
    """Where calibrations are kept: $CYSCATTER_CACHE_DIR, else $XDG_CACHE_HOME/cyscatter, else
    ~/.cache/cyscatter. None when there is none: a $CYSCATTER_CACHE_DIR that is not an absolute path (the
    user chose a folder: it is not replaced by another; `python -m cyscatter.calibrate` says so), or no home
    folder (an empty or relative HOME, or "/"). A relative $XDG_CACHE_HOME is ignored, as the XDG rule says (it
    would make the calibration depend on the working folder)."""
    chosen = os.environ.get("CYSCATTER_CACHE_DIR")
    if chosen:
        return Path(chosen) if os.path.isabs(chosen) else None
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "cyscatter"
    home = os.environ["HOME"] if "HOME" in os.environ else os.path.expanduser("~")   # "~" when unknown
    if not os.path.isabs(home) or os.path.dirname(home) == home:   # empty, relative, or the root
        return None
    return Path(home) / ".cache" / "cyscatter"


def calibration_path(machine: Machine, folder: Path | None = None) -> Path | None:
    """The calibration file of `machine` in `folder` (default `cache_dir()`; None without one): its key in a
    file name of letters, digits, '.', '_' and '-'."""
    folder = cache_dir() if folder is None else folder
    if folder is None:
        return None
    model = re.sub(r"[^A-Za-z0-9._-]+", "-", machine.model).strip("-.")[:80] or "cpu"
    name = (f"machine-{re.sub(r'[^A-Za-z0-9]+', '', machine.vendor)[:20] or 'unknown'}-{model}-"
            f"l2-{machine.l2_bytes}-llc-{machine.llc_bytes}-cpus-{machine.cpus}.json")
    return folder / name


def _valid(value: object, low: int, high: int) -> TypeGuard[int]:
    return type(value) is int and low <= value <= high


def _read_small_regular_file(path: Path) -> bytes | None:
    """The bytes of `path` when it is a regular file of 1 to `_MAX_FILE_BYTES` bytes, else None (nothing there,
    or something else: a folder, a FIFO, a device, a /proc file). Opened without blocking and checked on the
    open descriptor, so that a file swapped for a FIFO meanwhile cannot make the caller (import) wait."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
                     | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or not 0 < info.st_size <= _MAX_FILE_BYTES:
            return None
        return os.read(fd, _MAX_FILE_BYTES + 1)
    finally:
        os.close(fd)


def _is_date(text: object) -> bool:
    """`text` is an ISO 8601 UTC time of the form the calibration writes (ASCII digits, a real date)."""
    form = r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z"
    if not isinstance(text, str) or not re.fullmatch(form, text):
        return False
    import datetime
    try:
        datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        return False
    return True


def load_calibration(machine: Machine, path: Path | None = None) -> tuple[Calibration | None, str | None]:
    """(the calibration of `machine` in its file, None) or (None, why there is none usable: None when there is
    no file). Never raises: a file that cannot be read, is not a regular file of at most 64 KiB, is not a
    calibration, belongs to another machine or holds values out of range is ignored, and the rules come from
    the caches."""
    path = calibration_path(machine) if path is None else path
    if path is None:
        return None, None
    try:
        if not os.path.lexists(path):
            return None, None
        raw = _read_small_regular_file(path)
        if raw is None:
            return None, f"{path} is not a regular file of 1 to {_MAX_FILE_BYTES} bytes"
        import json  # only when a file exists: import time stays as it was
        data = json.loads(raw.decode("utf-8"))
    except Exception as exc:   # an unreadable or malformed file (any error json or the OS raise) is ignored
        return None, f"{path} cannot be read as a calibration ({type(exc).__name__}: {exc})"
    if not isinstance(data, dict) or not _valid(data.get("format"), CALIBRATION_FORMAT, CALIBRATION_FORMAT):
        return None, f"{path} is not a calibration of format {CALIBRATION_FORMAT}"
    found, key = data.get("machine"), machine.key()
    if not (isinstance(found, dict) and found.keys() == key.keys()
            and all(type(found[k]) is type(v) and found[k] == v for k, v in key.items())):
        return None, f"{path} was measured on another machine"
    chosen, date = data.get("chosen"), data.get("date")
    if not isinstance(chosen, dict) or not _is_date(date):
        return None, f"{path} holds no choice (or no date of the form 2026-12-02T11:00:00Z)"
    stream, reach = chosen.get("stream_min_bytes"), chosen.get("prefetch_bytes")
    if not _valid(stream, 0, 1 << 50) or not _valid(reach, *PREFETCH_RANGE):
        return None, f"{path} holds values out of range (stream_min_bytes={stream!r}, prefetch_bytes={reach!r})"
    assert isinstance(date, str)
    return Calibration(stream, reach, date), None


def detect(calibrated: bool = True) -> Machine:
    """This machine, with its calibration when `calibrated` and one is found (`load_calibration`)."""
    vendor, model = _cpu()
    l2, llc = _caches()
    machine = Machine(vendor, model, l2, llc, os.cpu_count() or 0)
    if calibrated:
        machine = replace(machine, calibration=load_calibration(machine)[0])
    return machine


MACHINE = detect()
ACTIVE = MACHINE   # the rules in force (`apply`)


def apply(machine: Machine = MACHINE) -> None:
    """Set the kernels' machine-dependent thresholds from `machine` (CYSCATTER_MACHINE=generic: the conservative
    values, as on an unknown machine, whatever calibration there is)."""
    global ACTIVE
    from cyscatter import fused_kernels, kernels, nan_kernels
    if os.environ.get("CYSCATTER_MACHINE") == "generic":
        machine = Machine("unknown", machine.model, 0, 0, machine.cpus)
    ACTIVE = machine
    kernels._set_machine(machine.stream_min_bytes, machine.l2_share_bytes, machine.l2_share_bytes,
                         machine.prefetch_bytes, machine.partition_min_bytes)
    fused_kernels._set_machine(machine.l2_share_bytes, machine.prefetch_bytes)
    nan_kernels._set_machine(machine.l2_share_bytes, machine.prefetch_bytes)
