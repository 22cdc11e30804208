"""The .pyi stubs beside the modules of cyscatter and grad (the public functions' overloads, `cyscatter._typing`).

A type checker reads such a stub in place of its module, so mypy sees neither a stub that drifts from the code nor,
in the internal modules that run with ``attr-defined`` off (pyproject.toml), an import of a name the stub lacks.
These tests read the stubs with `ast` and hold them against the imported code: each declares every name that
other modules import from its module, and each function in it takes the parameters the code takes.
"""
from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("cyscatter", "grad")
# where the importers are read: the packages, the tests, the tools and the benchmarks
IMPORTERS = (*PACKAGES, "tests", "tools", "benchmarks")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


# every stub beside a .py (the compiled kernels' stubs sit beside .pyx files: not these)
STUBS = {_module_name(p): p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.pyi"))
         if p.with_suffix(".py").exists()}


def _declared(stub: Path) -> dict[str, object]:
    """name -> its overloads or def (a list of FunctionDef), a ClassDef, an assignment, or the (module, name)
    it re-exports (``from m import x as x``)."""
    names: dict[str, object] = {}
    for node in ast.parse(stub.read_text()).body:
        if isinstance(node, ast.FunctionDef):
            names.setdefault(node.name, []).append(node)
        elif isinstance(node, ast.ClassDef):
            names[node.name] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names[node.target.id] = node
        elif isinstance(node, ast.Assign):
            names.update((t.id, node) for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.ImportFrom):
            names.update((a.name, (node.module, a.name)) for a in node.names if a.asname == a.name)
    return names


def _shape(params) -> list[tuple[str, str, bool]]:
    """(name, kind, has a default) of each parameter of an `inspect.Signature`'s parameters."""
    return [(p.name, p.kind.name, p.default is not inspect.Parameter.empty) for p in params]


def _stub_shape(node: ast.FunctionDef) -> list[tuple[str, str, bool]]:
    a = node.args
    positional = a.posonlyargs + a.args
    first_default = len(positional) - len(a.defaults)
    shape = [(p.arg, "POSITIONAL_ONLY" if i < len(a.posonlyargs) else "POSITIONAL_OR_KEYWORD", i >= first_default)
             for i, p in enumerate(positional)]
    if a.vararg:
        shape.append((a.vararg.arg, "VAR_POSITIONAL", False))
    shape += [(p.arg, "KEYWORD_ONLY", d is not None) for p, d in zip(a.kwonlyargs, a.kw_defaults)]
    if a.kwarg:
        shape.append((a.kwarg.arg, "VAR_KEYWORD", False))
    return shape


def test_stubs_are_found():
    assert {"cyscatter._api.scatter", "cyscatter._reverse.scatter", "grad._scatter"} <= set(STUBS)


@pytest.mark.parametrize("module", sorted(STUBS))
def test_stub_declares_what_the_code_defines(module):
    """Every name in the stub exists in the module; each function's overloads (or its one def) take the code's
    parameters, by name and kind, with a default only where the code has one; a re-exported function takes the
    parameters of the one whose types it borrows."""
    if module.startswith("grad"):
        pytest.importorskip("autograd")
    code = importlib.import_module(module)
    for name, decl in _declared(STUBS[module]).items():
        assert hasattr(code, name), f"{STUBS[module].name} declares {name}, which {module} does not define"
        if isinstance(decl, list):
            real = _shape(inspect.signature(getattr(code, name)).parameters.values())
            for node in decl:
                stub = _stub_shape(node)
                # an overload may require an argument the code defaults (a device index must be passed to be one)
                assert ([p[:2] for p in stub] == [p[:2] for p in real]
                        and all(r[2] for s, r in zip(stub, real) if s[2])), \
                    f"{STUBS[module].name} line {node.lineno}: {name} takes other parameters than in {module}"
        elif isinstance(decl, tuple):
            source = getattr(importlib.import_module(decl[0]), decl[1])
            assert (_shape(inspect.signature(getattr(code, name)).parameters.values())
                    == _shape(inspect.signature(source).parameters.values())), \
                f"{module}.{name} is typed as {decl[0]}.{decl[1]} but takes other parameters"


@pytest.mark.parametrize("module", sorted(STUBS))
def test_code_behind_a_stub_has_no_overloads(module):
    """A type checker would never read them."""
    text = STUBS[module].with_suffix(".py").read_text()
    assert "@overload" not in text, f"{module}: move its overloads to {STUBS[module].name}"


def _imported_names(path: Path) -> list[tuple[int, str, str]]:
    """(line, module, name) for each name `path` takes from a stubbed module: ``from m import name``, and
    ``alias.name`` where `alias` is bound to a stubbed module by an import."""
    found, aliases = [], {}
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                if node.module in STUBS:
                    found.append((node.lineno, node.module, a.name))
                elif f"{node.module}.{a.name}" in STUBS:
                    aliases[a.asname or a.name] = f"{node.module}.{a.name}"
        elif isinstance(node, ast.Import):
            aliases.update((a.asname, a.name) for a in node.names if a.asname and a.name in STUBS)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
            found.append((node.lineno, aliases[node.value.id], node.attr))
    return found


def test_stubs_declare_every_name_imported_from_their_modules():
    declared = {module: _declared(stub) for module, stub in STUBS.items()}
    missing = []
    for folder in IMPORTERS:
        for path in sorted((ROOT / folder).rglob("*.py*")):
            if path.suffix not in (".py", ".pyi"):
                continue
            for line, module, name in _imported_names(path):
                if name not in declared[module] and module != _module_name(path):
                    missing.append(f"{path.relative_to(ROOT)}:{line} imports {name} from {module}")
    assert not missing, "not declared in the stub: " + "; ".join(missing)


def test_the_import_walk_finds_names():
    """The checker itself: an import from a stubbed module and an attribute of an aliased one are found."""
    names = {(m, n) for path in (ROOT / "grad" / "_groups.py", ROOT / "cyscatter" / "__init__.py")
             for _, m, n in _imported_names(path)}
    assert {("grad._scatter", "_broadcast"), ("cyscatter._api.scatter", "scatter")} <= names
