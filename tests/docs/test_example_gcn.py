"""The main example, ``python -m cyscatter.examples.gcn``: a short run end to end, its options, and the NumPy
implementation it times cyscatter against (checked against the plain-loop reference)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from reference import numeric_vjp, ref_scatter

pytestmark = pytest.mark.full   # full tier: the demo end to end

EXTRAS = ("autograd", "sklearn", "matplotlib", "tqdm", "threadpoolctl")
N_CLASSES = 10


@pytest.fixture(scope="module")
def gcn():
    for name in EXTRAS:
        pytest.importorskip(name)
    pytest.importorskip("grad")
    from cyscatter.examples import gcn
    return gcn


def short_run(gcn, tmp_path, *options):
    return gcn.main(["--epochs", "8", "--timing-rounds", "1", "--timing-epochs", "1", "--no-progress",
                     "--out", str(tmp_path / "curves.png"), *options])


@pytest.mark.parametrize("aggr", ["mean", "max", "add"])
def test_short_run_learns_and_writes_the_plot(gcn, tmp_path, capsys, aggr):
    results = short_run(gcn, tmp_path, "--aggr", aggr)
    for model in ("gcn", "baseline"):
        history = results[model]
        assert len(history.loss) == len(history.test_accuracy) == 8
        assert history.loss[-1] < history.loss[0]
        assert history.final_test_accuracy > 3 / N_CLASSES   # chance is 1 / 10
    assert results["plot"] == str(tmp_path / "curves.png")
    assert Path(results["plot"]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert set(results["seconds_per_epoch"]) == {"cyscatter", "NumPy fancy indexing + ufunc.at"}
    curves = list(results["loss_curves"].values())
    np.testing.assert_allclose(curves[0], curves[1], rtol=1e-12)   # both implementations train the same model
    printed = capsys.readouterr().out
    for expected in (f"GCN ({aggr} aggregation)", "graph-less baseline", "speed-up with cyscatter",
                     results["plot"]):
        assert expected in printed


def test_same_seed_same_run_other_seed_other_run(gcn, tmp_path):
    first, again, other = (short_run(gcn, tmp_path, "--seed", seed)["gcn"] for seed in ("3", "3", "4"))
    assert first.loss == again.loss and first.test_accuracy == again.test_accuracy
    assert first.loss != other.loss


def test_help_documents_every_option(gcn, capsys):
    with pytest.raises(SystemExit) as exit_info:
        gcn.main(["--help"])
    assert exit_info.value.code == 0
    printed = capsys.readouterr().out
    for option in ("--aggr", "{mean,max,add}", "--k", "--label-fraction", "--epochs", "--seed", "--out",
                   "--hidden", "--lr"):
        assert option in printed


@pytest.mark.parametrize("options, message", [
    (["--aggr", "min"], "invalid choice"),
    (["--label-fraction", "0"], "must be in (0.0, 0.99]"),
    (["--label-fraction", "0.001"], "at least one per class"),
    (["--k", "0"], "must be in [1, 100]"),
    (["--epochs", "two"], "invalid int value"),
    (["--lr", "nan"], "must be in (0.0, inf), got nan"),
    (["--lr", "inf"], "must be in (0.0, inf), got inf"),
    (["--weight-decay", "nan"], "must be in [0.0, inf), got nan"),
    (["--out", "/nonexistent/dir/x.png"], "argument --out: the folder '/nonexistent/dir'"),
])
def test_bad_options_exit_with_a_message(gcn, tmp_path, capsys, options, message):
    with pytest.raises(SystemExit) as exit_info:
        short_run(gcn, tmp_path, *options)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("op", ["add", "mean", "max"])
def test_numpy_scatter_matches_the_reference(gcn, op):
    from autograd import make_vjp

    from cyscatter.examples._numpy_scatter import numpy_scatter
    rng = np.random.default_rng(0)
    src, index = rng.standard_normal((40, 3)), rng.integers(0, 6, 40)   # rows 6 and 7 stay empty

    def reference(s):
        return ref_scatter(s, index, op, dim_size=8)

    np.testing.assert_array_equal(numpy_scatter(src, index, op, dim_size=8), reference(src))
    g = rng.standard_normal((8, 3))
    vjp, _ = make_vjp(lambda s: numpy_scatter(s, index, op, dim_size=8))(src)
    finite = np.isfinite(reference(src))   # empty max rows hold -inf: no finite differences there
    np.testing.assert_allclose(vjp(g), numeric_vjp(lambda s: np.where(finite, reference(s), 0), src, g),
                               atol=1e-6)


def test_import_cyscatter_loads_no_example_dependency():
    code = ("import sys, cyscatter, cyscatter.examples; "
            f"print(sorted(set({list(EXTRAS)!r}) & set(sys.modules)))")
    import cyscatter
    root = str(Path(cyscatter.__file__).resolve().parents[1])   # the imported copy, in-place or installed
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_plot_has_a_legend_in_every_panel_and_the_measured_epoch_times(gcn, tmp_path):
    from cyscatter.examples._plot import history_figure
    results = short_run(gcn, tmp_path)
    timing = results["seconds_per_epoch"]
    fig = history_figure(results["gcn"], results["baseline"], "title", timing)
    panels = fig.get_axes()
    assert len(panels) == 2
    for ax in panels:
        legend = ax.get_legend()
        assert legend is not None
        assert [t.get_text() for t in legend.get_texts()] == ["GCN", "graph-less baseline"]
    written = "\n".join(t.get_text() for ax in panels for t in ax.texts)
    for name, seconds in timing.items():
        assert f"{seconds * 1e3:8.2f} ms" in written and name in written
    ours, theirs = timing.values()
    assert f"{theirs / ours:.2f}x" in written


def test_the_run_shown_in_getting_started_is_what_the_default_run_gives(gcn, tmp_path, capsys):
    """docs/getting_started.rst shows the default run's graph, accuracies and agreement (a run is reproducible);
    its times are elided there. The accuracies may move by a tenth of a point with another BLAS."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "getting_started.rst").read_text()
    shown = page.split("digits k-NN graph:", 1)[1].split("plot of loss", 1)[0]
    gcn.main(["--timing-rounds", "1", "--timing-epochs", "1", "--no-progress", "--out", str(tmp_path / "p.png")])
    printed = capsys.readouterr().out
    assert "digits k-NN graph:" + shown.splitlines()[0] in printed
    for label in ("GCN (mean aggregation)", "graph-less baseline (no message passing)"):
        want = float(re.search(rf"{re.escape(label)}\s+([\d.]+)%", shown).group(1))
        got = float(re.search(rf"{re.escape(label)}\s+([\d.]+)%", printed).group(1))
        assert abs(got - want) <= 0.2, (label, got, want)
    assert "accuracy on the 1707 unlabelled nodes after 100 epochs:" in shown and \
        "accuracy on the 1707 unlabelled nodes after 100 epochs:" in printed


def test_bad_out_fails_before_any_training(gcn, tmp_path, capsys, monkeypatch):
    from cyscatter.examples import _gcn_model

    def no_training(*args, **kwargs):
        raise AssertionError("trained before --out was checked")
    monkeypatch.setattr(_gcn_model, "train", no_training)
    for out in (str(tmp_path / "missing" / "x.png"), str(tmp_path)):
        with pytest.raises(SystemExit) as exit_info:
            gcn.main(["--out", out, "--no-progress"])
        assert exit_info.value.code == 2
        assert "argument --out" in capsys.readouterr().err


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_loss_agreement_check_fails_on_a_non_finite_loss(gcn, bad):
    import argparse
    from types import SimpleNamespace
    history = SimpleNamespace(final_test_accuracy=0.5)
    results = {"args": argparse.Namespace(aggr="mean", epochs=1, timing_rounds=1, timing_epochs=1),
               "seconds_per_epoch": {"cyscatter": 1.0, "numpy": 2.0}, "gcn": history, "baseline": history,
               "loss_curves": {"cyscatter": [1.0, bad, 0.5], "numpy": [1.0, 0.7, 0.5]}, "plot": "p.png"}
    with pytest.raises(SystemExit, match="the training diverged: the losses are not all finite"):
        gcn._report(results, n_test=10)
