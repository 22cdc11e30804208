"""The machine-dependent strategy rules: what is read from sysfs and /proc/cpuinfo, and the
thresholds derived from it (cyscatter._runtime.machine); results never depend on them."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import cyscatter as cs
from cyscatter import kernels
from cyscatter._runtime import machine as _machine

MIB = 1 << 20


def _fake_sysfs(root, caches):
    for i, (level, kind, size) in enumerate(caches):
        d = root / f"index{i}"
        d.mkdir()
        (d / "level").write_text(f"{level}\n")
        (d / "type").write_text(f"{kind}\n")
        (d / "size").write_text(f"{size}\n")
    return root


def test_caches_read_from_sysfs(tmp_path):
    root = _fake_sysfs(tmp_path, [(1, "Data", "32K"), (1, "Instruction", "32K"), (2, "Unified", "2048K"),
                                  (3, "Unified", "300M")])
    assert _machine._caches(root) == (2 * MIB, 300 * MIB)
    assert _machine._caches(tmp_path / "missing") == (0, 0)


def test_vendor_and_model_from_cpuinfo(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Platinum\n\n"
                    "processor\t: 1\nvendor_id\t: GenuineIntel\n")
    assert _machine._cpu(info) == ("Intel", "Intel(R) Xeon(R) Platinum")
    assert _machine._cpu(tmp_path / "none") == ("unknown", "unknown CPU")


@pytest.mark.parametrize("vendor, l2, llc, stream_min, share", [
    ("AMD", 1 * MIB, 32 * MIB, 64 * MIB, 256 << 10),     # the EPYC VM the rules were measured on
    ("AMD", 512 << 10, 256 * MIB, 512 * MIB, 128 << 10),  # a large L3: twice of it
    ("Intel", 2 * MIB, 300 * MIB, 0, 512 << 10),          # streaming stores lost there
    ("unknown", 0, 0, 0, 256 << 10),                      # nothing known: the conservative values
])
def test_rules(vendor, l2, llc, stream_min, share):
    m = _machine.Machine(vendor, "cpu", l2, llc)
    assert (m.stream_min_bytes, m.l2_share_bytes) == (stream_min, share)


@pytest.mark.parametrize("llc, least", [(8 * MIB, 4 * MIB), (32 * MIB, 16 * MIB), (0, 4 * MIB)])
def test_partition_rule(llc, least):
    assert _machine.Machine("AMD", "cpu", MIB, llc).partition_min_bytes == least


@pytest.mark.parametrize("llc, fused", [(32 * MIB, 16 * MIB), (300 * MIB, 150 * MIB), (0, 8 * MIB)])
def test_nan_count_rule(llc, fused):
    assert _machine.Machine("AMD", "cpu", MIB, llc).fused_count_bytes == fused


def test_the_kernels_got_this_machines_thresholds():
    m = _machine.MACHINE
    assert kernels._machine() == {"stream_min_bytes": m.stream_min_bytes, "l2_share": m.l2_share_bytes,
                                  "block_bytes": m.l2_share_bytes, "prefetch_bytes": m.prefetch_bytes,
                                  "partition_min_bytes": m.partition_min_bytes}


def test_generic_machine_switch():
    code = "import cyscatter.kernels as k, cyscatter; print(k._machine()['stream_min_bytes'])"
    env = dict(os.environ, CYSCATTER_MACHINE="generic")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "0"


@pytest.mark.parametrize("rules", [
    _machine.Machine("AMD", "cpu", 1 * MIB, 32 * MIB),            # streams outputs from 64 MB
    _machine.Machine("AMD", "cpu", 64 << 10, 1 << 10),            # streams from 64 MB, prefetches tiny tables
    _machine.Machine("Intel", "cpu", 0, 0),                       # never streams
], ids=["epyc", "small caches", "intel"])
def test_results_do_not_depend_on_the_rules(rules):
    rng = np.random.default_rng(5)
    table = rng.random((3000, 64), dtype=np.float32)
    index = rng.integers(0, 3000, 300_000)
    try:
        _machine.apply(rules)
        kernels._tune(stream=-1)
        got = cs.gather(table, index)          # 77 MB of output: streamed under the first two
        scattered = cs.scatter(table[index[:20000] % 3000], index[:20000] % 50, "add", dim_size=50)
    finally:
        _machine.apply()
    np.testing.assert_array_equal(got, table[index])
    expected = np.zeros((50, 64), np.float32)
    np.add.at(expected, index[:20000] % 50, table[index[:20000] % 3000])
    np.testing.assert_allclose(scattered, expected, rtol=1e-5)
