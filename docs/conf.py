"""Sphinx configuration of the cyscatter documentation.

Build (the README's "Documentation" section): ``python -m sphinx -W --keep-going -b html docs docs/_build/html``.
Nothing is fetched at build time (no intersphinx): the site builds offline, from the installed package.
"""
from __future__ import annotations

import os
import sys

# the repository root first, so an in-place build (python setup.py build_ext --inplace) documents this checkout
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import cyscatter  # noqa: E402

project = "cyscatter"
author = "cyscatter developers"
copyright = "2026, cyscatter developers"
release = version = cyscatter.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
]

source_suffix = {".rst": "restructuredtext"}
# `name` in a docstring links to the object when Sphinx knows it (cyscatter.scatter_vjp_src) and is shown as code
# otherwise (a parameter name): numpydoc's convention
default_role = "py:obj"
root_doc = "index"
exclude_patterns = ["_build", "recipes", "Thumbs.db", ".DS_Store"]
templates_path: list[str] = []

html_theme = "alabaster"               # ships with Sphinx: nothing more to install
html_theme_options = {"page_width": "1240px", "sidebar_width": "240px"}   # room for 112-column examples
html_title = f"cyscatter {release}"
html_static_path: list[str] = []
html_copy_source = False   # the pages' .rst are in the repository; no _sources/ copies in the site

# ---- API pages ----------------------------------------------------------------------------------------------
autosummary_generate = True            # one page per public function, from docs/api/*.rst
autosummary_imported_members = True    # the public names are re-exported from private modules
# Signatures come from inspect.signature, which follows __wrapped__ / __signature__: the grad primitives show
# their real parameters as soon as the primitive carries them (autograd's wrapper alone reads (*args, **kwargs)).
# Type annotations are left out of the signature: the numpydoc Parameters sections give each type with its shape.
autodoc_typehints = "none"
autodoc_default_options = {"members": False}
autodoc_inherit_docstrings = False

# ---- numpydoc -------------------------------------------------------------------------------------------------
numpydoc_show_class_members = False    # GatherScatterPlan's attributes are described in its docstring
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False       # types such as "array_like, shape B + I + F" are prose, not references
# Every rendered public docstring is validated during the build; with -W a finding fails the build. The same
# set is applied by tests/docs/test_docs.py to every public callable of cyscatter, cyscatter.dask and grad.
# "all" minus the checks that do not fit this project's docstrings:
#   GL01  summary on the line of the opening quotes (project style: PEP 257's one-line start)
#   ES01  an extended summary is optional (Notes carry the details)
#   SA01  See Also is optional
#   EX01  Examples are required of the core functions by tests/docs/test_doctests.py, not of every reverse function
#   SS05  the summary may start with a noun ("Gradient of a scatter ..."), not only a third-person verb
#   SS06  summaries may wrap: they name shapes and NNlib's equivalent
#   RT02  Returns entries are named (``out : ndarray, shape B + D + F``): the names are used in the prose
numpydoc_validation_checks = {"all", "GL01", "ES01", "SA01", "EX01", "SS05", "SS06", "RT02"}


def _wrapper_signature_names() -> set[str]:
    """The public grad functions whose signature is still autograd's wrapper's ``(*args, **kwargs)``.

    The build validates what it renders, signature included; for these the parameter checks would compare the
    docstring with ``*args``. tests/docs/test_docs.py validates them against the wrapped function instead; once
    ``inspect.signature`` gives their own parameters (``__signature__`` / ``__wrapped__``) this set is empty and
    the build validates them too."""
    import inspect

    try:
        import grad
    except ImportError:
        return set()
    names = set()
    for name in grad.__all__:
        params = inspect.signature(getattr(grad, name)).parameters.values()
        if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
            names.add(rf"^grad\.{name}$")
    return names


numpydoc_validation_exclude = _wrapper_signature_names()


# ---- search: one entry per function ------------------------------------------------------------------------------
# Each public function has its own page (autosummary), whose title is the function's name: Sphinx's search would
# list the function twice, once as the object ("cyscatter.scatter, Python function") and once as that page (its
# title and its words). The page's title and words are taken out of the search index after the build; the object
# entry, which links to the same page, stays, and so do the words of every other page.
API_PAGE_PREFIX = "api/generated/"


def one_search_entry_per_function(app, exception) -> None:
    import json

    if exception is not None or app.builder.format != "html":
        return
    path = os.path.join(app.outdir, "searchindex.js")
    if not os.path.exists(path):
        return
    with open(path, encoding="utf-8") as f:
        text = f.read()
    head, _, rest = text.partition("(")
    index = json.loads(rest[: rest.rindex(")")])
    api = {i for i, name in enumerate(index["docnames"]) if name.startswith(API_PAGE_PREFIX)}
    for table in ("terms", "titleterms"):
        for term, docs in list(index[table].items()):
            kept = [d for d in (docs if isinstance(docs, list) else [docs]) if d not in api]
            if kept:
                index[table][term] = kept if len(kept) > 1 else kept[0]
            else:
                del index[table][term]
    for title, places in list(index.get("alltitles", {}).items()):
        kept = [place for place in places if place[0] not in api]
        if kept:
            index["alltitles"][title] = kept
        else:
            del index["alltitles"][title]
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"{head}({json.dumps(index, separators=(',', ':'))})")


def setup(app) -> None:
    app.connect("build-finished", one_search_entry_per_function)
