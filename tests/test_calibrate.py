"""The per-machine calibration (issue 22): `python -m cyscatter.calibrate`, its file and how import reads it.

The trials' decisions are checked on fixed figures, the file's reading on every kind of bad file, the CLI end to
end on small arrays into a temporary cache folder, and the results of every kernel family under the extreme
prefetch reaches against the default's, bit for bit, and against NumPy."""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import cyscatter as cs
from cyscatter import _machine, calibrate, kernels

MIB = 1 << 20


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A private cache folder; the process's rules and `_tune` knobs restored after."""
    monkeypatch.setenv("CYSCATTER_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("CYSCATTER_MACHINE", raising=False)
    active, knobs = _machine.ACTIVE, kernels._tune()
    yield tmp_path
    _machine.apply(active)
    kernels._tune(**knobs)


def _bare():
    return _machine.detect(calibrated=False)


def _document(machine, stream=64 * MIB, reach=8192):
    return {"format": 1, "machine": machine.key(), "date": "2026-12-02T11:00:00Z",
            "chosen": {"stream_min_bytes": stream, "prefetch_bytes": reach}}


def _write(path, doc):
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


# ---- the file ------------------------------------------------------------------------------------------------------

def test_cache_dir_precedence(monkeypatch, tmp_path):
    monkeypatch.setenv("CYSCATTER_CACHE_DIR", str(tmp_path / "mine"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert _machine.cache_dir() == tmp_path / "mine"
    monkeypatch.delenv("CYSCATTER_CACHE_DIR")
    assert _machine.cache_dir() == tmp_path / "xdg" / "cyscatter"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert _machine.cache_dir() == tmp_path / "home" / ".cache" / "cyscatter"


@pytest.mark.parametrize("vendor, model", [("AMD", "AMD EPYC"), ("Intel", "../../etc/passwd x/y"),
                                           ("", ""), ("weird/vendor\n", "é" * 200)])
def test_file_name_is_one_plain_name_in_the_folder(tmp_path, vendor, model):
    path = _machine.calibration_path(_machine.Machine(vendor, model, MIB, 32 * MIB, 2), tmp_path)
    assert path.parent == tmp_path
    assert all(c.isascii() and (c.isalnum() or c in "._-") for c in path.name)
    assert path.name.startswith("machine-") and path.name.endswith(".json") and ".." not in path.name


def test_a_calibration_round_trip(cache):
    machine = _bare()
    calibrate.save(_document(machine, stream=128 * MIB, reach=2048), _machine.calibration_path(machine))
    got, problem = _machine.load_calibration(machine)
    assert problem is None
    assert got == _machine.Calibration(128 * MIB, 2048, "2026-12-02T11:00:00Z")
    tuned = dataclasses.replace(machine, calibration=got)
    assert (tuned.stream_min_bytes, tuned.prefetch_bytes) == (128 * MIB, 2048)
    assert "calibrated 2026-12-02" in tuned.describe() and "(calibrated)" in tuned.rules()
    assert "from the caches" in machine.rules()


def test_no_file_is_no_calibration_and_no_problem(cache):
    assert _machine.load_calibration(_bare()) == (None, None)


@pytest.mark.parametrize("content, why", [
    (b"{not json", "cannot be read"),
    (b"\xff\xfe\x00garbage", "cannot be read"),
    (b"[" * 30_000 + b"]" * 30_000, "cannot be read"),          # deeper than json's recursion
    (b"[1, 2]", "not a calibration"),
    (b"null", "not a calibration"),
    (b" " * (70 * 1024) + b"{}", "larger than a calibration"),
], ids=["broken", "not utf-8", "too deep", "a list", "null", "too large"])
def test_a_bad_file_is_ignored(cache, content, why):
    machine = _bare()
    _machine.calibration_path(machine).write_bytes(content)
    got, problem = _machine.load_calibration(machine)
    assert got is None and why in problem


@pytest.mark.parametrize("change, why", [
    ({"format": 2}, "not a calibration"),
    ({"machine": {"vendor": "other"}}, "another machine"),
    ({"chosen": None}, "holds no choice"),
    ({"date": 5}, "holds no choice"),
    ({"chosen": {"stream_min_bytes": -1, "prefetch_bytes": 4096}}, "out of range"),
    ({"chosen": {"stream_min_bytes": 0, "prefetch_bytes": 100}}, "out of range"),
    ({"chosen": {"stream_min_bytes": 0, "prefetch_bytes": 1 << 20}}, "out of range"),
    ({"chosen": {"stream_min_bytes": 0, "prefetch_bytes": 4096.0}}, "out of range"),
    ({"chosen": {"stream_min_bytes": True, "prefetch_bytes": 4096}}, "out of range"),
    ({"chosen": {"stream_min_bytes": 1 << 60, "prefetch_bytes": 4096}}, "out of range"),
    ({"chosen": {"prefetch_bytes": 4096}}, "out of range"),
])
def test_a_wrong_document_is_ignored(cache, change, why):
    machine = _bare()
    _write(_machine.calibration_path(machine), {**_document(machine), **change})
    got, problem = _machine.load_calibration(machine)
    assert got is None and why in problem


def test_a_directory_in_place_of_the_file_is_no_calibration(cache):
    machine = _bare()
    _machine.calibration_path(machine).mkdir()
    assert _machine.load_calibration(machine) == (None, None)


def _import_rules(env):
    code = "import cyscatter.kernels as k, cyscatter, cyscatter._machine as m; print(k._machine()); print(m.ACTIVE.rules())"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    lines = out.stdout.strip().splitlines()
    return eval(lines[0]), lines[1]   # a dict literal the kernel printed


def test_import_reads_this_machines_calibration(cache):
    machine = _bare()
    _write(_machine.calibration_path(machine), _document(machine, stream=96 * MIB, reach=16384))
    env = dict(os.environ, CYSCATTER_CACHE_DIR=str(cache))
    thresholds, rules = _import_rules(env)
    assert (thresholds["stream_min_bytes"], thresholds["prefetch_bytes"]) == (96 * MIB, 16384)
    assert "(calibrated)" in rules
    thresholds, rules = _import_rules(dict(env, CYSCATTER_MACHINE="generic"))   # ignores it
    assert (thresholds["stream_min_bytes"], thresholds["prefetch_bytes"]) == (0, 4096)
    _machine.calibration_path(machine).write_bytes(b"\x00 broken")
    thresholds, rules = _import_rules(env)
    assert (thresholds["stream_min_bytes"], thresholds["prefetch_bytes"]) == (machine.rule_stream_min_bytes, 4096)
    assert "from the caches" in rules


def test_an_unusable_cache_folder_does_not_stop_import(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    for folder in (blocker, blocker / "below", tmp_path / "missing"):
        thresholds, _ = _import_rules(dict(os.environ, CYSCATTER_CACHE_DIR=str(folder)))
        assert thresholds["prefetch_bytes"] == 4096


# ---- the decisions -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("candidate, default, won", [
    ((90.0, 90.0), (100.0, 100.0), True),
    ((95.0, 95.0), (100.0, 100.0), True),      # exactly the margin
    ((96.0, 80.0), (100.0, 100.0), False),     # the minimum gained too little
    ((80.0, 99.0), (100.0, 100.0), False),     # the median too little
    ((120.0, 120.0), (100.0, 100.0), False),
])
def test_wins_needs_the_margin_in_both(candidate, default, won):
    assert calibrate.wins(candidate, default) is won


def _fixed(figures):
    """A `time_interleaved` stand-in returning `figures[call number]` (key -> (min, median))."""
    calls = iter(figures)

    def timed(runs, rounds):
        got = next(calls)
        assert set(got) == set(runs)
        return got
    return timed


@pytest.mark.parametrize("figures, expected", [
    ([{"plain": (10.0, 11.0), "streaming": (8.0, 9.0)}], "base"),                  # won at the first size
    ([{"plain": (10.0, 11.0), "streaming": (9.9, 10.0)},
      {"plain": (40.0, 44.0), "streaming": (30.0, 33.0)}], "4 base"),               # only at 4x
    ([{"plain": (10.0, 11.0), "streaming": (10.0, 12.0)},
      {"plain": (40.0, 44.0), "streaming": (39.0, 43.0)}], "never"),                # never by the margin
])
def test_stream_choice(monkeypatch, figures, expected):
    monkeypatch.setattr(calibrate, "time_interleaved", _fixed(figures))
    machine = _machine.Machine("AMD", "cpu", MIB, 32 * MIB, 2)
    got = calibrate.stream_trial(machine, 3, scale=0.001)
    base = 64 * MIB
    assert got["stream_min_bytes"] == {"base": base, "4 base": 4 * base, "never": 0}[expected]
    assert len(got["runs"]) == len(figures)


@pytest.mark.parametrize("ms, expected", [
    ({"0": (50.0, 50.0), "2048": (30.0, 31.0), "4096": (28.0, 29.0), "8192": (25.0, 26.0), "16384": (27.0, 27.0)},
     8192),
    ({"0": (50.0, 50.0), "2048": (30.0, 31.0), "4096": (28.0, 29.0), "8192": (27.0, 28.0), "16384": (29.0, 29.0)},
     4096),    # 8 KB best by less than the margin
    ({"0": (20.0, 20.0), "2048": (30.0, 31.0), "4096": (28.0, 29.0), "8192": (29.0, 30.0), "16384": (29.0, 29.0)},
     4096),    # no prefetch best: not a candidate (the kernels' table rule decides that)
    ({"0": (50.0, 50.0), "2048": (20.0, 21.0), "4096": (28.0, 29.0), "8192": (29.0, 30.0), "16384": (29.0, 29.0)},
     2048),
])
def test_prefetch_choice(monkeypatch, ms, expected):
    monkeypatch.setattr(calibrate, "time_interleaved", _fixed([ms]))
    got = calibrate.prefetch_trial(_machine.Machine("AMD", "cpu", MIB, 32 * MIB, 2), 3, scale=0.001)
    assert got["prefetch_bytes"] == expected
    assert set(got["ms"]) == {"none", "2048 B", "4096 B", "8192 B", "16384 B"}


def test_time_interleaved_times_each_run_once_per_round():
    calls = []
    got = calibrate.time_interleaved({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}, 3)
    assert calls == ["a", "b"] + ["a", "b"] * 3   # warm-up, then rounds in turn
    assert set(got) == {"a", "b"} and all(low <= mid for low, mid in got.values())


# ---- the command ---------------------------------------------------------------------------------------------------

def test_the_command_measures_keeps_shows_and_clears(cache, capsys):
    machine = _bare()
    path = _machine.calibration_path(machine)
    knobs = kernels._tune()
    assert calibrate.main(["--rounds", "3", "--scale", "0.01", "--no-write"]) == 0
    assert not path.exists()
    assert "chosen: streaming stores" in capsys.readouterr().out
    assert calibrate.main(["--rounds", "3", "--scale", "0.01"]) == 0
    assert kernels._tune() == knobs          # the trials' knobs restored
    doc = json.loads(path.read_text())
    assert doc["machine"] == machine.key() and doc["rounds"] == 3
    got, problem = _machine.load_calibration(machine)
    assert problem is None and got.prefetch_bytes in calibrate.REACHES
    assert kernels._machine()["prefetch_bytes"] == got.prefetch_bytes   # applied in this process too
    assert "kept in" in capsys.readouterr().out
    assert calibrate.main(["--show"]) == 0
    shown = capsys.readouterr().out
    assert f"calibrated {got.date}" in shown and str(path) in shown
    assert calibrate.main(["--clear"]) == 0 and not path.exists()
    assert calibrate.main(["--clear"]) == 0
    assert "no calibration" in capsys.readouterr().out
    assert calibrate.main(["--show"]) == 0
    assert "none (rules from the caches)" in capsys.readouterr().out


def test_show_names_an_ignored_file(cache, capsys):
    _machine.calibration_path(_bare()).write_text("{}")
    assert calibrate.main(["--show"]) == 0
    assert "ignored:" in capsys.readouterr().out


@pytest.mark.parametrize("argv", [["--rounds", "1"], ["--rounds", "x"], ["--scale", "0"], ["--scale", "2"],
                                  ["--show", "--clear"], ["--bogus"]])
def test_bad_arguments(cache, argv, capsys):
    with pytest.raises(SystemExit) as exc:
        calibrate.main(argv)
    assert exc.value.code == 2
    assert "error" in capsys.readouterr().err


def test_an_unwritable_folder_is_reported(cache, capsys, monkeypatch):
    blocker = cache / "blocker"
    blocker.write_text("")
    monkeypatch.setenv("CYSCATTER_CACHE_DIR", str(blocker / "below"))
    assert calibrate.main(["--rounds", "3", "--scale", "0.005"]) == 1
    assert "cannot write" in capsys.readouterr().err


def test_the_module_runs_as_a_command(cache):
    out = subprocess.run([sys.executable, "-m", "cyscatter.calibrate", "--show"], capture_output=True, text=True,
                         env=dict(os.environ, CYSCATTER_CACHE_DIR=str(cache)), check=True)
    assert "rules in force" in out.stdout


# ---- results do not depend on the reach ----------------------------------------------------------------------------

def _all_families(rng):
    """One call of each kernel family that prefetches rows, on tables past the small L2 share used below."""
    table = rng.standard_normal((4000, 24)).astype(np.float32)
    table[rng.random(table.shape) < 0.1] = np.nan
    index = rng.integers(0, 4000, 30_000)
    src = table[rng.integers(0, 4000, 30_000)]
    rows, cols = rng.integers(0, 3000, 20_000), rng.integers(0, 4000, 20_000)
    clean = np.nan_to_num(table)
    return {
        "gather": cs.gather(table, index),
        "add": cs.scatter(src, index, "add", dim_size=4000, num_threads=1),
        "max": cs.scatter(src, index, "max", dim_size=4000, num_threads=2),
        "mean": cs.scatter(src, index, "mean", dim_size=4000, num_threads=1),
        "nansum": cs.scatter(src, index, "nansum", dim_size=4000, num_threads=1),
        "nanmean": cs.scatter(src, index, "nanmean", dim_size=4000, num_threads=2),
        "gather_scatter": cs.gather_scatter(clean, cols, rows, "add", dim_size=3000),
        "gather_scatter_max": cs.gather_scatter(clean, cols, rows, "max", dim_size=3000),
    }, (table, index, src, rows, cols, clean)


@pytest.mark.parametrize("reach", [256, 2048, 65536])
def test_results_do_not_depend_on_the_reach(cache, reach):
    small_l2 = _machine.Machine("AMD", "cpu", 64 << 10, 32 * MIB, 2)   # 16 KB share: every table prefetched
    _machine.apply(small_l2)
    want, (table, index, src, rows, cols, clean) = _all_families(np.random.default_rng(3))
    _machine.apply(dataclasses.replace(small_l2, calibration=_machine.Calibration(0, reach, "now")))
    assert kernels._machine()["prefetch_bytes"] == reach
    got, _ = _all_families(np.random.default_rng(3))
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)
    # and they are right (independent references)
    np.testing.assert_array_equal(got["gather"], table[index])
    expected = np.zeros((4000, 24), np.float32)
    np.add.at(expected, index, src)
    np.testing.assert_allclose(got["add"], expected, rtol=1e-4, atol=1e-4)
    expected = np.zeros((4000, 24), np.float32)
    np.add.at(expected, index, np.nan_to_num(src))
    np.testing.assert_allclose(got["nansum"], expected, rtol=1e-4, atol=1e-4)
    expected = np.zeros((3000, 24), np.float32)
    np.add.at(expected, rows, clean[cols])
    np.testing.assert_allclose(got["gather_scatter"], expected, rtol=1e-4, atol=1e-4)
