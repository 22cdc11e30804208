"""The documentation: numpydoc validation of every public docstring, the docs pages' examples (doctests, each
checked against the peer library it compares with, skipped when that library is missing), and the PyTorch and
JAX gradient recipes of docs/recipes (the JAX one now forwards to cyscatter.jax), checked against finite differences
and the peers' own gradients."""
from __future__ import annotations

import doctest
import functools
import importlib
import importlib.util
import inspect
import pathlib
import re
import runpy

import numpy as np
import pytest

pytestmark = pytest.mark.full   # full tier: the docs pages and numpydoc validation

DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs"
PACKAGES = {"cyscatter": None, "cyscatter.dask": "dask", "cyscatter.jax": "jax", "grad": "autograd"}


# ---- numpydoc validation -----------------------------------------------------------------------------------------

@functools.cache
def _conf_checks() -> frozenset:
    """The checks docs/conf.py applies during the build (one list for the build and this test)."""
    return frozenset(runpy.run_path(str(DOCS / "conf.py"))["numpydoc_validation_checks"])


def _wrapper_signature(obj) -> bool:
    """True while `obj` shows autograd's wrapper signature ``(*args, **kwargs)`` instead of its own."""
    kinds = {p.kind for p in inspect.signature(obj).parameters.values()}
    return inspect.Parameter.VAR_POSITIONAL in kinds


def public_callables():
    for package, needs in PACKAGES.items():
        if needs and importlib.util.find_spec(needs) is None:
            continue
        module = importlib.import_module(package)
        for name in module.__all__:
            obj = getattr(module, name)
            if callable(obj):
                yield f"{package}.{name}", obj
            if inspect.isclass(obj):   # its public methods have pages of their own
                for method, member in vars(obj).items():
                    if not method.startswith("_") and inspect.isfunction(member):
                        yield f"{package}.{name}.{method}", member


def findings(qualname: str, obj) -> list[tuple[str, str]]:
    """numpydoc's findings on `obj` under the checks of docs/conf.py.

    An autograd primitive whose signature is still the wrapper's is validated through the function it wraps
    (``.fun``: same docstring, real parameters); where that is not reachable (``notrace_primitive``), the
    parameter-matching checks wait for the real signature."""
    pytest.importorskip("numpydoc")   # the docs extra; .ci/run installs it for its documentation block
    from numpydoc.docscrape import get_doc_object
    from numpydoc.validate import get_validation_checks, validate

    checks = get_validation_checks(_conf_checks())
    target, skip = obj, set()
    if _wrapper_signature(obj):
        raw = inspect.unwrap(obj)
        if hasattr(raw, "fun"):
            target = raw.fun
        else:
            skip = {"PR01", "PR02", "PR03"}
    errors = validate(get_doc_object(target))["errors"]
    return [(code, message) for code, message in errors if code in checks and code not in skip]


def test_every_public_callable_is_validated():
    names = [name for name, _ in public_callables()]
    assert "cyscatter.scatter" in names and "cyscatter.gather_scatter_plan" in names
    assert "grad.scatter" in names or importlib.util.find_spec("autograd") is None
    assert len(names) >= 44


@pytest.mark.parametrize("package", list(PACKAGES))
def test_api_page_lists_every_public_callable(package):
    """docs/api/<package>.rst names every callable of the package's __all__ in an autosummary (a new public
    function without a page fails here, before the site's Chromium check)."""
    needs = PACKAGES[package]
    if needs and importlib.util.find_spec(needs) is None:
        pytest.skip(f"{package} needs {needs}")
    module = importlib.import_module(package)
    listed = set(re.findall(r"^   (\w+)$", (DOCS / "api" / f"{package}.rst").read_text(), re.MULTILINE))
    missing = sorted(n for n in module.__all__ if callable(getattr(module, n)) and n not in listed)
    assert not missing, f"docs/api/{package}.rst does not list {missing}"


@pytest.mark.parametrize("qualname, obj", list(public_callables()), ids=lambda x: x if isinstance(x, str) else "")
def test_numpydoc_validation(qualname, obj):
    found = findings(qualname, obj)
    assert not found, "\n".join(f"{qualname}: {code} {message}" for code, message in found)


# ---- the pages' examples -------------------------------------------------------------------------------------------

PAGES = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.rst") if "_build" not in p.parts
               and "generated" not in p.parts)
NEEDS = re.compile(r"^\.\. needs: (.+)$", re.MULTILINE)
FLAGS = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS


def page_sections(text: str):
    """(needed modules, text) for each part of a page: a ``.. needs: torch jax`` comment (invisible in the HTML)
    starts a part whose examples need those libraries; the part before the first one needs nothing."""
    marks = list(NEEDS.finditer(text))
    starts = [0] + [m.start() for m in marks]
    needs = [()] + [tuple(m.group(1).split()) for m in marks]
    ends = starts[1:] + [len(text)]
    return [(need, text[a:b]) for need, a, b in zip(needs, starts, ends)]


@pytest.fixture
def recipes_on_path(monkeypatch):
    monkeypatch.syspath_prepend(str(DOCS / "recipes"))


@pytest.mark.parametrize("page", PAGES)
def test_page_examples(page, recipes_on_path):
    """Every ``>>>`` example of the page runs and prints what the page shows; a part whose peer library is
    missing is skipped (the page's other parts still run)."""
    text = (DOCS / page).read_text()
    globs: dict = {"__name__": f"docs.{page}"}
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    parser = doctest.DocTestParser()
    skipped, attempted = [], 0
    line = 0
    for need, part in page_sections(text):
        missing = [m for m in need if importlib.util.find_spec(m) is None]
        if missing:
            skipped.append(", ".join(missing))
        else:
            test = parser.get_doctest(part, globs, page, str(DOCS / page), line)
            runner.run(test, clear_globs=False)
            globs = test.globs   # (a DocTest runs in a copy of the globals it is given)
            attempted += len(test.examples)
        line += part.count("\n")
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in docs/{page}"
    if skipped and not attempted:
        pytest.skip(f"docs/{page} needs {'; '.join(skipped)}")


# ---- the gradient recipes of docs/gradients.rst ----------------------------------------------------------------------

OPS = ["add", "sub", "mean", "mul", "div", "max", "min"]
INDEX = np.array([0, 2, 0, 1, 1, 4, 2, 0, 1, 3, 4, 0])   # every group of 5 reached: max/min stay finite


def _src(shape=(12, 3)):
    # distinct values away from 0: max/min have no ties, div no division by ~0, so finite differences hold
    return 0.5 + np.random.default_rng(7).permutation(np.prod(shape)).reshape(shape) / np.prod(shape)


@pytest.mark.parametrize("op", OPS)
def test_torch_recipe_gradcheck(op, recipes_on_path):
    torch = pytest.importorskip("torch")
    import torch_function as ctorch

    src = torch.tensor(_src(), requires_grad=True)
    dst = torch.tensor(_src((5, 3))[::-1].copy() + 0.25, requires_grad=True)
    index = torch.tensor(INDEX)
    assert torch.autograd.gradcheck(lambda s: ctorch.scatter(s, index, op, 5), (src,))
    assert torch.autograd.gradcheck(lambda d, s: ctorch.scatter_into(d, s, index, op), (dst, src))
    assert torch.autograd.gradcheck(lambda s: ctorch.gather(s, index[:7] % 3), (src[:3].detach().requires_grad_(),))


@pytest.mark.parametrize("op, torch_op", [("add", "sum"), ("mul", "prod"), ("mean", "mean"), ("max", "amax"),
                                          ("min", "amin")])
def test_torch_recipe_matches_scatter_reduce(op, torch_op, recipes_on_path):
    """The recipe's gradients equal PyTorch's own scatter_reduce's, ties and zeros included.

    The base tensor holds a value no group reaches: PyTorch 2.13's amax/amin backward counts the base (which
    ``include_self=False`` leaves out of the forward) as a tied winner (docs/guides/pytorch_scatter.rst)."""
    torch = pytest.importorskip("torch")
    import torch_function as ctorch

    values = np.array([2., 0., 3., 3., 1., 0., 5., 5.])
    index = torch.tensor([0, 0, 1, 1, 2, 2, 3, 3])
    weights = torch.tensor(np.arange(1., 5.))
    ours = torch.tensor(values, requires_grad=True)
    (ctorch.scatter(ours, index, op, 4) * weights).sum().backward()
    theirs = torch.tensor(values, requires_grad=True)
    (torch.full((4,), 123.0, dtype=torch.float64).scatter_reduce(0, index, theirs, torch_op, include_self=False)
     * weights).sum().backward()
    torch.testing.assert_close(ours.grad, theirs.grad)


@pytest.mark.parametrize("op", ["add", "mean", "mul", "max", "min"])
def test_jax_frontend_grads(op, recipes_on_path):
    """The shipped frontend that replaced the JAX recipe (docs/jax.rst; the recipe file forwards to it)."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    import jax_vjp
    from jax.test_util import check_grads

    import cyscatter.jax as cjax

    x = jnp.asarray(_src(), dtype=jnp.float32)   # JAX's default precision; x64 is not switched on here
    ids = jnp.asarray(INDEX)
    f = lambda s: cjax.scatter(s, ids, op, dim_size=5)   # noqa: E731
    np.testing.assert_array_equal(jax_vjp.scatter(x, ids, op, 5), f(x))
    check_grads(f, (x,), order=1, modes=["rev"], eps=1e-2, atol=2e-2, rtol=2e-2)
    loss = lambda fun: lambda s: jnp.sum(jnp.sin(fun(s)))   # noqa: E731
    ours = jax.grad(loss(f))(x)
    np.testing.assert_allclose(jax.jit(jax.grad(loss(f)))(x), ours)
    native = {"add": jax.ops.segment_sum, "max": jax.ops.segment_max, "min": jax.ops.segment_min}.get(op)
    if native is not None:   # JAX's own rule (segment_prod has no gradient for repeated ids; mean has no segment_*)
        theirs = jax.grad(loss(lambda s: native(s, ids, num_segments=5)))(x)
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-6)
    # against the split reverse function called directly
    g = np.cos(np.asarray(f(x), np.float64))
    x64 = np.asarray(x, np.float64)
    direct = cs_vjp(op, g, x64, INDEX)
    np.testing.assert_allclose(ours, direct, rtol=1e-5, atol=1e-5)


def cs_vjp(op, g, src, index):
    import cyscatter as cs
    return cs.scatter_vjp_src(op, g, src, index, cs.scatter(src, index, op, dim_size=5))
