"""The per-machine calibration: `python -m cyscatter.calibrate`, its file and how import reads it.

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
from cyscatter import calibrate, kernels
from cyscatter._runtime import machine as _machine

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


def test_relative_folders(monkeypatch, tmp_path):
    """A relative XDG_CACHE_HOME is ignored (the XDG rule); a relative CYSCATTER_CACHE_DIR, a folder the user
    chose, is not replaced by another: no calibration at all."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("CYSCATTER_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", "rel")
    assert _machine.cache_dir() == tmp_path / "home" / ".cache" / "cyscatter"
    for chosen in ("relative", "~/cc"):
        monkeypatch.setenv("CYSCATTER_CACHE_DIR", chosen)
        assert _machine.cache_dir() is None
        assert "is not an absolute path" in calibrate.no_folder()


@pytest.mark.parametrize("home", ["", "/", "relative", "//"])
def test_no_usable_home_folder_means_no_calibration(monkeypatch, home):
    monkeypatch.delenv("CYSCATTER_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", home)
    assert _machine.cache_dir() is None
    assert _machine.calibration_path(_bare()) is None
    assert _machine.load_calibration(_bare()) == (None, None)
    assert "no cache folder" in calibrate.no_folder()


def test_a_relative_folder_is_refused_by_the_command(monkeypatch, capsys, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CYSCATTER_CACHE_DIR", "mycache")
    assert calibrate.main(["--rounds", "3", "--scale", "0.01"]) == 1
    assert "is not an absolute path" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_no_folder_is_reported_by_the_command(monkeypatch, capsys, cache):
    monkeypatch.setattr(_machine, "cache_dir", lambda: None)
    assert calibrate.main(["--rounds", "3", "--scale", "0.01"]) == 1
    assert "no cache folder" in capsys.readouterr().err
    assert calibrate.main(["--show"]) == 0
    assert "no cache folder" in capsys.readouterr().out


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
    (b"", "not a regular file of 1 to"),
    (b"{not json", "cannot be read"),
    (b"\xff\xfe\x00garbage", "cannot be read"),
    (b"[" * 30_000 + b"]" * 30_000, "cannot be read"),          # deeper than json's recursion
    (b"[1, 2]", "not a calibration"),
    (b"null", "not a calibration"),
    (b" " * (70 * 1024) + b"{}", "not a regular file of 1 to"),
], ids=["empty", "broken", "not utf-8", "too deep", "a list", "null", "too large"])
def test_a_bad_file_is_ignored(cache, content, why):
    machine = _bare()
    _machine.calibration_path(machine).write_bytes(content)
    got, problem = _machine.load_calibration(machine)
    assert got is None and why in problem


@pytest.mark.parametrize("change, why", [
    ({"format": 2}, "not a calibration"),
    ({"format": True}, "not a calibration"),
    ({"format": 1.0}, "not a calibration"),
    ({"machine": {"vendor": "other"}}, "another machine"),
    ({"machine": None}, "another machine"),
    ({"chosen": None}, "holds no choice"),
    ({"date": 5}, "holds no choice"),
    ({"date": "2026-12-02T11:00:00Z\x1b[2J"}, "holds no choice"),
    ({"date": "yesterday"}, "holds no choice"),
    ({"date": "9999-99-99T99:99:99Z"}, "holds no choice"),
    ({"date": "\u0662\u0660\u0662\u0666-12-02T11:00:00Z"}, "holds no choice"),   # Arabic-Indic digits
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


def test_the_machine_key_must_match_in_type_too(cache):
    machine = _bare()
    doc = _document(machine)
    doc["machine"] = {**doc["machine"], "l2_bytes": float(machine.l2_bytes)}
    _write(_machine.calibration_path(machine), doc)
    assert "another machine" in _machine.load_calibration(machine)[1]


@pytest.mark.parametrize("kind", ["folder", "fifo", "dangling link", "link to /dev/zero", "link to /proc"])
def test_anything_but_a_small_regular_file_is_ignored_at_once(cache, kind):
    machine = _bare()
    path = _machine.calibration_path(machine)
    if kind == "folder":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to({"dangling link": cache / "nowhere", "link to /dev/zero": "/dev/zero",
                         "link to /proc": "/proc/self/status"}[kind])
    got, problem = _machine.load_calibration(machine)
    assert got is None and "not a regular file" in problem


def test_a_file_swapped_for_a_fifo_does_not_block(cache, monkeypatch):
    """Between the existence check and the open: the open must not wait for a writer."""
    machine = _bare()
    path = _machine.calibration_path(machine)
    os.mkfifo(path)
    monkeypatch.setattr(os.path, "lexists", lambda p: True)
    got, problem = _machine.load_calibration(machine)   # would hang with a blocking open
    assert got is None and "not a regular file" in problem


def test_a_valid_file_through_a_link_is_read(cache):
    machine = _bare()
    target = _write(cache / "elsewhere.json", _document(machine, reach=2048))
    _machine.calibration_path(machine).symlink_to(target)
    assert _machine.load_calibration(machine)[0].prefetch_bytes == 2048


@pytest.mark.parametrize("n, text", [(64 << 20, "64 MiB"), (1536 << 10, "1536 KiB"), (100, "100 B"),
                                     (1, "1 B"), (3 << 30, "3 GiB")])
def test_sizes_in_words(n, text):
    assert _machine._bytes(n) == text


def test_save_replaces_a_link_not_its_target_and_leaves_no_part(cache):
    machine = _bare()
    path = _machine.calibration_path(machine)
    victim = cache / "victim"
    victim.write_text("precious")
    path.symlink_to(victim)
    calibrate.save(_document(machine), path)
    assert victim.read_text() == "precious" and not path.is_symlink()
    assert json.loads(path.read_text())["chosen"]["prefetch_bytes"] == 8192
    assert sorted(p.name for p in cache.iterdir()) == sorted([path.name, "victim"])


def _import_rules(env):
    code = ("import cyscatter.kernels as k, cyscatter, cyscatter._runtime.machine as m; print(k._machine()); "
            "print(m.ACTIVE.rules())")
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


TIE, STREAM_WINS, PLAIN_WINS = ({"plain": (10.0, 11.0), "streaming": (9.9, 10.9)},
                                {"plain": (10.0, 11.0), "streaming": (8.0, 9.0)},
                                {"plain": (8.0, 9.0), "streaming": (10.0, 11.0)})


@pytest.mark.parametrize("vendor, at_base, at_4x, expected", [
    ("AMD", STREAM_WINS, STREAM_WINS, "base"),
    ("AMD", TIE, TIE, "base"),                    # no clear winner: the cache rule (AMD streams from base)
    ("AMD", PLAIN_WINS, STREAM_WINS, "4 base"),
    ("AMD", PLAIN_WINS, TIE, "4 base"),           # the rule holds at 4x
    ("AMD", STREAM_WINS, PLAIN_WINS, "never"),    # the largest size must stream
    ("AMD", PLAIN_WINS, PLAIN_WINS, "never"),
    ("Intel", TIE, TIE, "never"),                 # the rule: never
    ("Intel", TIE, STREAM_WINS, "4 base"),
    ("Intel", STREAM_WINS, STREAM_WINS, "base"),
])
def test_stream_choice(monkeypatch, vendor, at_base, at_4x, expected):
    monkeypatch.setattr(calibrate, "time_interleaved", _fixed([at_base, at_4x]))
    machine = _machine.Machine(vendor, "cpu", MIB, 32 * MIB, 2)
    got = calibrate.stream_trial(machine, 3, scale=0.001)
    base = 64 * MIB
    assert got["stream_min_bytes"] == {"base": base, "4 base": 4 * base, "never": 0}[expected]
    assert got["measured"] and len(got["runs"]) == 2


def test_nothing_measured_keeps_the_rules(monkeypatch):
    monkeypatch.setattr(calibrate, "_fits", lambda nbytes: False)
    machine = _machine.Machine("AMD", "cpu", MIB, 32 * MIB, 2)
    stream = calibrate.stream_trial(machine, 3, scale=0.001)
    assert stream == {"stream_min_bytes": 64 * MIB, "measured": False, "runs": stream["runs"]}
    prefetch = calibrate.prefetch_trial(machine, 3, scale=0.001)
    assert prefetch["prefetch_bytes"] == 4096 and not prefetch["measured"]


def test_a_calibration_that_measured_nothing_is_not_kept(cache, monkeypatch, capsys):
    monkeypatch.setattr(calibrate, "_fits", lambda nbytes: False)
    assert calibrate.main(["--rounds", "3", "--scale", "0.01"]) == 1
    assert "nothing kept" in capsys.readouterr().err
    assert not _machine.calibration_path(_bare()).exists()


def test_the_available_memory_is_known():
    assert calibrate._available_bytes() > 0


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
                                  ["--scale", "nan"], ["--show", "--clear"], ["--clear", "--no-write"],
                                  ["--show", "--rounds", "5"], ["--clear", "--rounds", "5"], ["--bogus"]])
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


def test_clear_reports_what_it_cannot_remove(cache, capsys):
    path = _machine.calibration_path(_bare())
    (path / "inside").mkdir(parents=True)
    assert calibrate.main(["--clear"]) == 1
    assert "cannot remove" in capsys.readouterr().err
    assert calibrate.main(["--show"]) == 0
    assert "ignored:" in capsys.readouterr().out and "not a regular file" in calibrate.show()


def test_two_calibrations_at_once_are_refused(cache, capsys):
    path = _machine.calibration_path(_bare())
    with calibrate.exclusive(path):
        code = subprocess.run([sys.executable, "-m", "cyscatter.calibrate", "--rounds", "3", "--scale", "0.01"],
                              capture_output=True, text=True, env=dict(os.environ, CYSCATTER_CACHE_DIR=str(cache)))
    assert code.returncode == 1 and "another calibration" in code.stderr
    assert not path.exists()


def test_a_closed_pipe_ends_the_command_quietly_and_keeps_the_calibration(cache):
    env = dict(os.environ, CYSCATTER_CACHE_DIR=str(cache))
    proc = subprocess.Popen([sys.executable, "-m", "cyscatter.calibrate", "--rounds", "3", "--scale", "0.01"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    proc.stdout.readline()
    proc.stdout.close()   # `| head -1`
    err = proc.stderr.read().decode()
    proc.wait(timeout=120)
    assert "Traceback" not in err
    assert _machine.load_calibration(_bare())[0] is not None


def test_the_file_is_readable_by_other_users(cache):
    path = _machine.calibration_path(_bare())
    calibrate.save(_document(_bare()), path)
    assert path.stat().st_mode & 0o777 == 0o644


def test_clear_removes_what_a_killed_writer_left(cache, capsys):
    path = _machine.calibration_path(_bare())
    calibrate.save(_document(_bare()), path)
    stale = path.with_name(f".{path.name}.abc123.part")
    stale.write_text("{")
    assert calibrate.leftovers(path) == [stale]
    assert calibrate.main(["--clear"]) == 0
    assert not path.exists() and not stale.exists()
    assert "1 unfinished temporary file" in capsys.readouterr().out


def test_clear_is_refused_while_a_calibration_runs(cache, capsys):
    path = _machine.calibration_path(_bare())
    calibrate.save(_document(_bare()), path)
    code = "from cyscatter import calibrate; from cyscatter._runtime import machine as _machine; import sys; sys.exit(calibrate.main(['--clear']))"
    with calibrate.exclusive(path):
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env=dict(os.environ, CYSCATTER_CACHE_DIR=str(cache)))
    assert proc.returncode == 1 and "is running" in proc.stderr
    assert path.exists()


def test_a_folder_in_place_of_the_file_is_refused_before_measuring(cache, capsys, monkeypatch):
    _machine.calibration_path(_bare()).mkdir()
    monkeypatch.setattr(calibrate, "calibrate", lambda *a: pytest.fail("measured"))
    assert calibrate.main(["--rounds", "3"]) == 1
    assert "not a regular file" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["--show"], ["--clear"], ["--rounds", "3", "--scale", "0.01"]])
def test_output_that_cannot_be_written_does_not_change_the_status(cache, argv):
    """stdout on a full disk (/dev/full), a closed pipe, a strict encoding and an unencodable folder name."""
    env = dict(os.environ, CYSCATTER_CACHE_DIR=os.fsdecode(os.fsencode(str(cache)) + b"/bad\xff"),
               PYTHONIOENCODING="utf-8")
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "cyscatter.calibrate", *argv], stdout=full,
                              stderr=subprocess.PIPE, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "cyscatter.calibrate", "--show"], capture_output=True,
                          env=env)
    assert proc.returncode == 0 and b"\\udcff" in proc.stdout


def test_a_tie_beyond_the_measured_sizes_keeps_the_rule(monkeypatch):
    """An LLC over 512 MiB: the rule streams from past 1 GiB, the largest size measured; a tie there says
    nothing against it."""
    monkeypatch.setattr(calibrate, "time_interleaved", _fixed([TIE]))
    machine = _machine.Machine("AMD", "big", MIB, 768 * MIB, 64)
    got = calibrate.stream_trial(machine, 3, scale=0.0001)
    assert got["stream_min_bytes"] == machine.rule_stream_min_bytes == 1536 * MIB
    monkeypatch.setattr(calibrate, "time_interleaved", _fixed([PLAIN_WINS]))
    assert calibrate.stream_trial(machine, 3, scale=0.0001)["stream_min_bytes"] == 0


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


def test_every_run_says_when_calibrating_helps(cache, capsys):
    assert calibrate.main(["--show"]) == 0
    assert calibrate.WHEN_IT_HELPS in capsys.readouterr().out
    assert calibrate.main(["--rounds", "3", "--scale", "0.01", "--no-write"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == calibrate.WHEN_IT_HELPS
    with pytest.raises(SystemExit):
        calibrate.main(["--help"])
    assert "last-level cache" in " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize("named_folder", [True, False])
def test_clear_leaves_nothing_behind(cache, capsys, monkeypatch, named_folder):
    """A calibration leaves its file and its lock; --clear removes both, and the cache folder it made when that
    is left empty ($XDG_CACHE_HOME/cyscatter); a folder the user named in $CYSCATTER_CACHE_DIR stays."""
    if not named_folder:
        monkeypatch.delenv("CYSCATTER_CACHE_DIR")
        monkeypatch.setenv("XDG_CACHE_HOME", str(cache / "xdg"))
    path = _machine.calibration_path(_bare())
    assert calibrate.main(["--rounds", "3", "--scale", "0.01"]) == 0
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name, calibrate.lock_path(path).name]
    assert calibrate.main(["--clear"]) == 0
    if named_folder:
        assert list(cache.iterdir()) == []
    else:
        assert not path.parent.exists() and list((cache / "xdg").iterdir()) == []
    capsys.readouterr()


def test_clear_removes_a_lock_left_without_a_calibration(cache, capsys):
    path = _machine.calibration_path(_bare())
    with calibrate.exclusive(path):
        pass
    assert calibrate.lock_path(path).exists() and not path.exists()
    assert calibrate.main(["--clear"]) == 0
    assert list(cache.iterdir()) == []
    assert "removed its lock file" in capsys.readouterr().out
