"""Figures the README, the docs pages and CONTRIBUTING.md state, checked against what they describe: the code
(module lists, counts) or the benchmark result file a figure is quoted from. A drift fails here; a figure
without such a source is not stated at all (timings are left to the benchmark files, which carry their date,
machine and command)."""
from __future__ import annotations

import ast
import re
import runpy
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = sorted(p for p in DOCS.rglob("*.rst") if "_build" not in p.parts and "generated" not in p.parts)


def _words(number: int) -> str:
    return ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
            "twelve"][number]


# ---- the README's headline figure ---------------------------------------------------------------------------------

def _gcn_rows(section: str) -> dict[str, list[str]]:
    """aggr -> cells of the 1-thread rows of one graph's table in benchmarks/GCN.md."""
    text = (ROOT / "benchmarks" / "GCN.md").read_text()
    body = text.split(f"### {section}", 1)[1].split("\n### ", 1)[0]
    rows = {}
    for line in body.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) > 3 and cells[1] == "1":
            rows[cells[0]] = cells[2:]
    return rows


def test_the_readme_performance_figures_are_those_of_the_benchmark_file():
    """The headline table quotes benchmarks/GCN.md (its 1e5 graph, one thread), with that file's date, machine
    and command."""
    readme = README.read_text()
    section = readme.split("## Performance", 1)[1].split("\n## ", 1)[0]
    quoted = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells[0] in ("mean", "add", "max"):
            quoted[cells[0]] = cells[1:]
    assert quoted, "no figures quoted"
    recorded = _gcn_rows("1e5:")
    for aggr, cells in quoted.items():
        assert cells == recorded[aggr][:len(cells)], (aggr, cells, recorded[aggr])
    header = (ROOT / "benchmarks" / "GCN.md").read_text().split("\n## ", 1)[0]
    date = re.search(r"^- date: (\S+ \S+)", header, re.MULTILINE).group(1)
    command = re.search(r"^- command: `([^`]+)`", header, re.MULTILINE).group(1)
    assert date in section and f"`{command}`" in section
    assert "1e5 nodes and 1.1e6 edges" in " ".join(section.split())
    assert "### 1e5: 100,000 nodes, 1,100,000 edges" in (ROOT / "benchmarks" / "GCN.md").read_text()


# ---- counts stated in the docs and CONTRIBUTING.md ---------------------------------------------------------------

def _setup_modules() -> list[str]:
    tree = ast.parse((ROOT / "setup.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.comprehension) and isinstance(node.iter, ast.Tuple):
            names = [e.value for e in node.iter.elts if isinstance(e, ast.Constant)]
            if names and all(n.endswith("_kernels") or n == "kernels" for n in names):
                return names
    raise AssertionError("setup.py's module list not found")


def test_the_packaging_page_lists_the_compiled_modules():
    modules = _setup_modules()
    assert sorted(modules) == sorted(p.stem for p in (ROOT / "cyscatter").glob("*.pyx"))
    text = " ".join((DOCS / "packaging.rst").read_text().split())
    found = re.search(r"the (\w+) compiled kernel modules \(([^:]+):", text)
    assert found, "docs/packaging.rst no longer says which compiled modules a wheel holds"
    assert found.group(1) == _words(len(modules))
    assert sorted(re.findall(r"``(\w+)``", found.group(2))) == sorted(modules)


def test_the_mutation_count_is_the_sample_size():
    mutants = runpy.run_path(str(ROOT / "tools" / "mutation.py"), run_name="not_main")["MUTANTS"]
    stated = re.findall(r"how many of (\d+) planted bugs", (ROOT / "CONTRIBUTING.md").read_text())
    assert stated == [str(len(mutants))]


def test_the_cibuildwheel_pythons_are_those_built():
    pyproject = (ROOT / "pyproject.toml").read_text()
    built = re.search(r'^build = \[(.*)\]$', pyproject, re.MULTILINE).group(1)
    minors = sorted(int(m) for m in re.findall(r'"cp3(\d+)-\*"', built))
    stated = re.search(r"CPython 3\.(\d+)-3\.(\d+)", (DOCS / "packaging.rst").read_text())
    assert (int(stated.group(1)), int(stated.group(2))) == (minors[0], minors[-1])
    assert minors == list(range(minors[0], minors[-1] + 1))


# ---- no figure without a source ------------------------------------------------------------------------------------

# a duration or speed-up in prose: "about 4 minutes", "1 min 45 s", "took 16 s", "3.2 ms", "6.7x faster", "2.5×"
TIMING = re.compile(r"\b\d[\d.,]*\s?(?:ms|µs|minutes?|min|seconds?)\b|\b\d[\d.,]*\s+s\b|"
                    r"\b\d[\d.,]*\s?[x×] (?:faster|slower)|\b\d[\d.,]*[x×] (?:the time|one thread)")
# counts of test cases ("10,235 cases", "about 1,200 cases")
CASES = re.compile(r"\b\d[\d,]* (?:cases|tests)\b")


def _prose(path: Path) -> list[tuple[int, str]]:
    """(line number, line) of a page, code comments included, but not its doctest lines (``>>>``, ``...``), whose
    figures are the output of a call that runs."""
    return [(number, line) for number, line in enumerate(path.read_text().splitlines(), 1)
            if not line.strip().startswith((">>>", "... "))]


@pytest.mark.parametrize("path", [README, ROOT / "CONTRIBUTING.md", *PAGES],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_no_timing_or_case_count_without_its_source(path):
    found = [f"{path.relative_to(ROOT)}:{n}: {line.strip()}" for n, line in _prose(path)
             if TIMING.search(line) or CASES.search(line)]
    assert not found, "\n".join(found)


def test_the_figure_checks_can_fail():
    assert TIMING.search("the default tier takes about 4 minutes") and TIMING.search("(1 min 45 s here)")
    assert TIMING.search("its pip install -e took 16 s here") and TIMING.search("1.9 µs vs 2.9 µs")
    assert TIMING.search("12.8× faster than NumPy") and CASES.search("(about 1,200 cases")
    assert not TIMING.search("rows of 16 floats into a 4 KB table, axis=1, `1s` padded")


def _public_docstrings():
    import importlib
    import importlib.util
    import inspect

    for package, needs in {"cyscatter": None, "cyscatter.dask": "dask", "grad": "autograd",
                           "cyscatter.calibrate": None, "cyscatter.examples.gcn": None}.items():
        if needs and importlib.util.find_spec(needs) is None:
            continue
        module = importlib.import_module(package)
        yield package, inspect.getdoc(module) or ""
        for name in getattr(module, "__all__", ()):
            yield f"{package}.{name}", inspect.getdoc(getattr(module, name)) or ""


def test_no_timing_in_a_public_docstring():
    found = [f"{name}: {line.strip()}" for name, doc in _public_docstrings() for line in doc.splitlines()
             if not line.strip().startswith((">>>", "... ")) and (TIMING.search(line) or CASES.search(line))]
    assert not found, "\n".join(found)
