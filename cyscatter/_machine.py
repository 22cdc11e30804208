"""The running machine, as the kernels' strategy rules need it: the CPU vendor and the cache sizes.

Read once at import from Linux's sysfs and /proc/cpuinfo (about 0.1 ms); anything unknown gets the
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
- Destination blocks of the partitioned 2-thread scatter: a quarter of the L2 (256 KB there, measured).
- nanmean's NaN counts (host): counted in the sum pass while the output and its uint8/uint16 count table
  together fit in half of the last-level cache (8 MB when unknown), else in a second pass over src. On the EPYC
  (one thread, 10% NaN, 1e6 x 64 entries): the one pass won up to 17 MB of tables (1e3 rows f32 23.1 against
  27.5 ms, 3e4 rows f64 59.0 against 63.5 ms) and lost from 32 MB (1e5 rows f32 53.4 against 42.8 ms), where
  every entry's count row misses as well as its output row (benchmarks/NOTES.md v23).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

_KIB = 1024
_SYS_CACHE = Path("/sys/devices/system/cpu/cpu0/cache")


@dataclass(frozen=True)
class Machine:
    """What the rules read: `vendor` ("AMD", "Intel" or what /proc/cpuinfo says), `model`, `l2_bytes` (one
    core's L2, 0 when unknown) and `llc_bytes` (the last-level cache one core shares, 0 when unknown)."""

    vendor: str
    model: str
    l2_bytes: int
    llc_bytes: int

    @property
    def stream_min_bytes(self) -> int:
        """Smallest gather output written with non-temporal stores (0: never)."""
        if self.vendor != "AMD" or not self.llc_bytes:
            return 0
        return max(64 * _KIB * _KIB, 2 * self.llc_bytes)

    @property
    def l2_share_bytes(self) -> int:
        """A quarter of the L2 (256 KB when unknown): the prefetch threshold and the destination block."""
        return self.l2_bytes // 4 if self.l2_bytes else 256 * _KIB

    @property
    def fused_count_bytes(self) -> int:
        """Largest output + NaN-count tables (bytes) whose counts nanmean takes in its sum pass."""
        return self.llc_bytes // 2 if self.llc_bytes else 8 * _KIB * _KIB

    def describe(self) -> str:
        caches = ", ".join(f"{name} {size // _KIB} KiB" for name, size in (("L2", self.l2_bytes),
                                                                           ("LLC", self.llc_bytes)) if size)
        return f"{self.model} ({self.vendor}; {caches or 'caches unknown'})"


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


def detect() -> Machine:
    vendor, model = _cpu()
    l2, llc = _caches()
    return Machine(vendor, model, l2, llc)


MACHINE = detect()
ACTIVE = MACHINE   # the rules in force (`apply`)


def apply(machine: Machine = MACHINE) -> None:
    """Set the kernels' machine-dependent thresholds from `machine` (CYSCATTER_MACHINE=generic: the conservative
    values, as on an unknown machine)."""
    global ACTIVE
    from cyscatter import fused_kernels, kernels
    if os.environ.get("CYSCATTER_MACHINE") == "generic":
        machine = Machine("unknown", machine.model, 0, 0)
    ACTIVE = machine
    kernels._set_machine(machine.stream_min_bytes, machine.l2_share_bytes, machine.l2_share_bytes)
    fused_kernels._set_machine(machine.l2_share_bytes)
