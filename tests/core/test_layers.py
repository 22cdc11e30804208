"""The package's layers: every import (module level or deferred inside a function) goes down the layer list or
stays within its layer, and no set of modules imports itself round a cycle.

Read from the source with `ast`, so a deferred import that only runs on the GPU counts as much as one at the top.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Bottom to top. A module may import from its own layer and from the layers below it, never from one above.
LAYERS = (
    ("leaf", ("cyscatter._version", "cyscatter.kernels",
              "cyscatter.nan_kernels", "cyscatter.group_kernels", "cyscatter.fused_kernels",
              "cyscatter.scan_kernels", "cyscatter.assign_kernels")),
    ("arrays", ("cyscatter._arrays",)),
    ("runtime", ("cyscatter._runtime",)),
    ("registry", ("cyscatter._registry",)),
    ("signatures", ("cyscatter._typing", "cyscatter._docs")),
    ("backends", ("cyscatter._backends",)),
    ("plan", ("cyscatter._plan",)),
    ("api", ("cyscatter._api",)),
    ("reverse", ("cyscatter._reverse",)),
    ("package", ("cyscatter", "cyscatter.typing", "cyscatter.calibrate")),
    ("frontends", ("cyscatter.dask", "cyscatter.examples", "cyscatter.torch", "cyscatter.jax", "grad")),
)


def layer_of(module: str) -> int:
    """Index in LAYERS of the longest prefix that names `module` (a package prefix counts for its modules)."""
    best, rank = -1, None
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best:
                best, rank = len(p), i
    if rank is None:
        raise AssertionError(f"{module} is in no layer: add it to LAYERS")
    return rank


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def sources() -> dict[str, Path]:
    files = list((ROOT / "cyscatter").rglob("*.py")) + list((ROOT / "grad").rglob("*.py"))
    return {module_name(f): f for f in files}


def imports(path: Path, modules: dict) -> list[tuple[int, str]]:
    """(line, module) of every cyscatter/grad import in `path`; ``from pkg import name`` names the submodule
    when `name` is one, else the package."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                found.append((node.lineno, sub if sub in modules or _compiled(sub) else node.module))
    return [(line, m) for line, m in found if m.partition(".")[0] in ("cyscatter", "grad")]


def _compiled(module: str) -> bool:
    return any(module == p for p in LAYERS[0][1])


MODULES = sources()
GRAPH = {name: imports(path, MODULES) for name, path in MODULES.items()}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_go_down_the_layers(module):
    mine = layer_of(module)
    upward = [f"line {line}: {target} ({LAYERS[layer_of(target)][0]})" for line, target in GRAPH[module]
              if layer_of(target) > mine]
    assert not upward, f"{module} ({LAYERS[mine][0]}) imports from a higher layer: " + "; ".join(upward)


def test_no_import_cycles():
    edges = {m: {t for _, t in GRAPH[m] if t in MODULES and t != m} for m in MODULES}
    # a module's parent package runs first when it is imported: that is not an edge of the cycle check
    for m in edges:
        edges[m] = {t for t in edges[m] if not m.startswith(t + ".")}
    index, low, stack, on, cycles, counter = {}, {}, [], set(), [], [0]

    def visit(v):   # Tarjan's strongly connected components
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    assert not cycles, f"import cycles: {cycles}"


def test_the_layer_check_can_fail():
    """The checker itself: an upward import and a cycle are found."""
    assert layer_of("cyscatter._plan.index") < layer_of("cyscatter._api.scatter")
    assert layer_of("cyscatter.kernels") == 0
    with pytest.raises(AssertionError):
        layer_of("numpy")


def test_few_modules_at_the_top():
    top = [p for p in (ROOT / "cyscatter").glob("*.py")]
    assert len(top) <= 12, sorted(p.name for p in top)


def test_no_module_over_600_lines():
    long = {name: n for name, path in MODULES.items() if (n := len(path.read_text().splitlines())) > 600}
    assert not long, long


def _top_level_names(path: Path) -> set[str]:
    names = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.ImportFrom):   # a member defined in a module of its own, imported by name
            names |= {alias.asname or alias.name for alias in node.names}
    return names


@pytest.mark.parametrize("backend", ["host", "cuda"])
def test_each_backend_provides_the_interface(backend):
    """Both backend modules define every member of the `Backend` protocol (read from the source: the GPU module
    imports CuPy)."""
    from cyscatter._backends.interface import MEMBERS
    missing = set(MEMBERS) - _top_level_names(ROOT / "cyscatter" / "_backends" / f"{backend}.py")
    assert not missing, f"cyscatter._backends.{backend} lacks {sorted(missing)}"


# ---- array-library branches stay in the backends ------------------------------------------------------------------

_COMPARISONS = (ast.Is, ast.IsNot, ast.Eq, ast.NotEq)


def numpy_module_tests(source: str) -> list[int]:
    """Lines of `source` that compare something with the numpy module itself (``xp is np``, ``be.xp is not np``,
    ``xp == numpy``): a branch on the array library. ``type(a) is np.ndarray`` compares a class, not the module,
    and is not one."""
    tree = ast.parse(source)
    names = {a.asname or a.name for node in ast.walk(tree) if isinstance(node, ast.Import)
             for a in node.names if a.name == "numpy"}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(isinstance(op, _COMPARISONS) for op in node.ops):
            if any(isinstance(side, ast.Name) and side.id in names for side in (node.left, *node.comparators)):
                found.append(node.lineno)
    return found


@pytest.mark.parametrize("module", sorted(m for m in MODULES if not m.startswith("cyscatter._backends.")))
def test_no_array_library_branch_above_the_backends(module):
    """Above `cyscatter._backends` no code asks whether its arrays are NumPy's (``xp is np``): it asks its backend
    module (`select.backend_of`) to do the backend-specific thing, through a member of the `Backend` protocol."""
    lines = numpy_module_tests(MODULES[module].read_text())
    assert not lines, (f"{module} branches on the array library at line(s) {lines}: ask the backend through a "
                       "member of cyscatter._backends.interface.Backend instead")


def test_the_array_library_check_can_fail():
    """The checker itself finds each spelling of the branch, and leaves class tests alone."""
    source = ("import numpy as np\nimport numpy\n"
              "a = xp is np\nb = be.xp is not np\nc = np is xp\nd = xp == numpy\n"
              "e = type(x) is np.ndarray\nf = xp is cupy\n")
    assert numpy_module_tests(source) == [3, 4, 5, 6]
