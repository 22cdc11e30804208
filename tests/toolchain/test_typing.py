"""Typing of the public API: the Literal types follow the registry, every public function is annotated,
the grad primitives show their real signatures, and mypy --strict accepts the user script and rejects every bad
call of tests/typing/user_errors.py."""
from __future__ import annotations

import inspect
import os
import pydoc
import runpy
import typing

import numpy as np
import pytest

import cyscatter as cs
from cyscatter.typing import Mode, ScatterOp

pytestmark = pytest.mark.full   # full tier: mypy --strict on the user scripts

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TYPING_DIR = os.path.join(ROOT, "tests", "typing")


# ---- the Literal types are the registry's names ------------------------------------------------------------------

def test_op_literal_lists_every_name_the_registry_accepts():
    registry = tuple(name for op in cs.OPS for name in (op.name, *op.aliases))
    assert typing.get_args(ScatterOp) == registry
    for name in typing.get_args(ScatterOp):
        assert cs.get_op(name).name in cs.OP_NAMES
    with pytest.raises(ValueError, match="unknown op 'avg'"):
        cs.get_op("avg")


def test_mode_literal_is_modes():
    assert typing.get_args(Mode) == cs.MODES


# ---- every public function is annotated ----------------------------------------------------------------------

def _public(module):
    for name in module.__all__:
        obj = getattr(module, name)
        if inspect.isfunction(obj) or inspect.isfunction(getattr(obj, "__wrapped__", None)):
            yield name, obj


def _modules():
    mods = [cs]
    for name in ("cyscatter.dask", "grad"):
        try:
            mods.append(__import__(name, fromlist=["_"]))
        except ImportError:   # optional extras
            pass
    return mods


@pytest.mark.parametrize("module", _modules(), ids=lambda m: m.__name__)
def test_public_functions_are_fully_annotated(module):
    checked = 0
    for name, func in _public(module):
        sig = inspect.signature(func)
        missing = [p for p, param in sig.parameters.items() if param.annotation is inspect.Parameter.empty]
        assert not missing, f"{module.__name__}.{name}: parameters {missing} are not annotated"
        assert sig.return_annotation is not inspect.Signature.empty, f"{module.__name__}.{name}: no return type"
        checked += 1
    assert checked >= 4


# ---- grad: the primitives show the parameters of the functions they wrap ---------------------------------------

# written out here, not read from either implementation
GRAD_PARAMETERS = {
    "scatter": ["src", "index", "op", "dim_size", "axis", "fill_value", "dtype", "mode", "indices_are_sorted",
                "num_threads"],
    "scatter_into": ["dst", "src", "index", "op", "axis", "mode"],
    "gather": ["src", "index", "axis", "mode", "fill_value", "dtype"],
    "gather_into": ["dst", "src", "index", "axis", "mode"],
    "scatter_logsumexp": ["src", "index", "dim_size", "axis", "mode"],
    "scatter_softmax": ["src", "index", "dim_size", "axis", "mode"],
    "scatter_log_softmax": ["src", "index", "dim_size", "axis", "mode"],
    "scatter_var": ["src", "index", "ddof", "dim_size", "axis", "mode"],
    "scatter_std": ["src", "index", "ddof", "dim_size", "axis", "mode"],
    "scatter_nanvar": ["src", "index", "ddof", "dim_size", "axis", "mode"],
    "scatter_nanstd": ["src", "index", "ddof", "dim_size", "axis", "mode"],
    "scatter_quantile": ["src", "index", "q", "method", "dim_size", "axis", "fill_value", "mode"],
    "scatter_nanquantile": ["src", "index", "q", "method", "dim_size", "axis", "fill_value", "mode"],
    "segment": ["src", "indptr", "op", "axis", "fill_value", "initial"],
    "gather_segment": ["src", "indptr", "axis"],
    "scatter_argmax": ["src", "index", "dim_size", "axis", "fill_value", "mode"],
    "scatter_argmin": ["src", "index", "dim_size", "axis", "fill_value", "mode"],
    "scatter_scan": ["src", "index", "op", "dim_size", "axis", "mode", "exclusive", "reverse"],
    "gather_scatter": ["src", "gather_index", "scatter_index", "op", "weight", "dim_size", "axis", "fill_value",
                       "mode", "plan", "num_threads"],
    "scatter_multi": ["src", "index", "ops", "dim_size", "axis", "mode", "ddof"],
    "segment_multi": ["src", "indptr", "ops", "axis", "ddof"],
    "gather_scatter_multi": ["src", "gather_index", "scatter_index", "ops", "weight", "dim_size", "ddof"],
    "segment_ranges": ["src", "starts", "stops", "op", "axis", "fill_value", "initial"],
}


def test_grad_functions_show_their_parameters():
    csgrad = pytest.importorskip("grad")
    pytest.importorskip("autograd")
    assert set(GRAD_PARAMETERS) == set(csgrad.__all__)
    for name, expected in GRAD_PARAMETERS.items():
        func = getattr(csgrad, name)
        assert list(inspect.signature(func).parameters) == expected, name
        assert func.__name__ == name
        text = pydoc.render_doc(func)
        assert "called_by_autograd_dispatcher" not in text and "*args" not in text, name
        assert all(f"{p}:" in text for p in expected), f"help({name}) does not show its parameters"
    for name in GRAD_PARAMETERS:   # the core namesakes take the same arguments, with the same defaults
        core = inspect.signature(getattr(cs, name)).parameters
        for pname, param in inspect.signature(getattr(csgrad, name)).parameters.items():
            assert pname in core, (name, pname)
            if name != "gather" or pname != "fill_value":   # grad.gather fills dropped rows with 0 explicitly
                assert param.default == core[pname].default, (name, pname)
    assert csgrad.scatter.__module__ == "grad" and csgrad.scatter.__qualname__ == "scatter"


def test_grad_primitives_still_differentiate():
    csgrad = pytest.importorskip("grad")
    autograd = pytest.importorskip("autograd")
    src, index = np.array([1.0, 5.0, 5.0, 2.0]), np.array([0, 0, 0, 1])
    g = autograd.grad(lambda s: autograd.numpy.sum(csgrad.scatter(s, index, "max")))(src)
    np.testing.assert_array_equal(g, [0.0, 0.5, 0.5, 1.0])
    assert getattr(csgrad.scatter, "_is_autograd_primitive", False)


def test_grad_ships_py_typed():
    csgrad = pytest.importorskip("grad")
    assert os.path.exists(os.path.join(os.path.dirname(csgrad.__file__), "py.typed"))


# ---- the user scripts: they run, and mypy --strict accepts the good one and flags every bad call ----------------

def test_user_script_runs():
    pytest.importorskip("dask.array")
    pytest.importorskip("autograd")
    runpy.run_path(os.path.join(TYPING_DIR, "user_script.py"), run_name="user_script")


def test_mypy_strict_on_the_user_scripts(monkeypatch):
    api = pytest.importorskip("mypy.api")
    pytest.importorskip("dask.array")
    monkeypatch.chdir(ROOT)   # the worktree's packages and pyproject.toml's [tool.mypy] (strict)
    files = [os.path.join("tests", "typing", f) for f in ("user_script.py", "user_errors.py")]
    stdout, stderr, status = api.run(["--config-file", "pyproject.toml", *files])
    assert status == 0, stdout + stderr
