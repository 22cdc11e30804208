"""Packaging facts checked from outside the code that states them: the version has one source and the installed
metadata agrees with it; a release build carries no debug information (read from the ELF section table by
binutils' readelf, not from the build script)."""
from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

import cyscatter
from cyscatter import fused_kernels, group_kernels, kernels

pytestmark = pytest.mark.full   # full tier: packaging checks (readelf on the compiled modules)

PACKAGE = Path(cyscatter.__file__).resolve().parent
ROOT = Path(__file__).resolve().parents[2]   # the checkout or the unpacked sdist holding these tests
VERSION_FILE = PACKAGE / "_version.py"


def _literal_version(path: Path) -> str:
    """The string assigned to __version__ in `path`, read as text (nothing imported)."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and [t.id for t in node.targets if isinstance(t, ast.Name)] == ["__version__"]:
            return ast.literal_eval(node.value)
    raise AssertionError(f"no __version__ = '...' in {path}")


def test_version_is_the_one_in_version_file():
    version = _literal_version(VERSION_FILE)
    assert cyscatter.__version__ == version
    assert len(version.split(".")) >= 3 and all(part.isdigit() for part in version.split(".")[:3])


def test_pyproject_takes_the_version_from_the_version_file():
    pyproject = ROOT / "pyproject.toml"
    if not pyproject.is_file():
        pytest.skip("no pyproject.toml beside the tests (an installed copy of the tests)")
    tomllib = pytest.importorskip("tomllib")   # Python >= 3.11
    config = tomllib.loads(pyproject.read_text())
    assert "version" not in config["project"], "a literal version in pyproject.toml: a second source"
    assert "version" in config["project"]["dynamic"]
    attr = config["tool"]["setuptools"]["dynamic"]["version"]["attr"]
    module, _, name = attr.rpartition(".")
    assert name == "__version__"
    assert _literal_version(ROOT / (module.replace(".", "/") + ".py")) == cyscatter.__version__


def _metadata_of_imported_copy() -> importlib.metadata.Distribution:
    """The installed distribution `cyscatter` if it is the copy imported here (skip otherwise: an in-place build
    imported while another checkout is installed has metadata of that other copy)."""
    try:
        dist = importlib.metadata.distribution("cyscatter")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("cyscatter is not installed (an in-place build): no metadata to compare")
    located = Path(dist.locate_file("cyscatter/__init__.py")).resolve()
    if located == PACKAGE / "__init__.py":
        return dist
    direct_url = dist.read_text("direct_url.json")
    if direct_url:   # an editable install records the folder it points at
        url = json.loads(direct_url).get("url", "")
        if url.startswith("file:") and Path(unquote(urlparse(url).path)).resolve() == PACKAGE.parent:
            return dist
    pytest.skip(f"the installed cyscatter metadata ({dist.locate_file('')}) is of another copy than {PACKAGE}")


def test_installed_metadata_has_the_same_version():
    dist = _metadata_of_imported_copy()
    assert dist.version == cyscatter.__version__ == importlib.metadata.version("cyscatter")


def test_installed_metadata_has_an_spdx_license_and_urls():
    meta = _metadata_of_imported_copy().metadata
    assert meta["License-Expression"] == "MIT"
    assert not [c for c in meta.get_all("Classifier") or [] if c.startswith("License ::")]   # PEP 639
    assert {url.split(",")[0] for url in meta.get_all("Project-URL") or []} >= {"Homepage", "Source", "Issues"}


def test_imported_copy_has_the_type_stubs():
    """Every .pyi and py.typed of the source tree beside these tests is in the imported copy: the wheel, when
    .ci/run runs these tests from the sdist against it (the public functions' overloads are in the stubs of
    cyscatter._api, cyscatter._reverse and grad). In place, the two are the same folders."""
    for package in ("cyscatter", "grad"):
        source = ROOT / package
        if not source.is_dir():
            pytest.skip(f"no {package}/ source folder beside the tests")
        installed = Path(importlib.util.find_spec(package).origin).resolve().parent   # grad: autograd not needed
        wanted = [p.relative_to(source) for p in source.rglob("*.pyi")] + [Path("py.typed")]
        missing = [str(p) for p in wanted if not (installed / p).is_file()]
        assert not missing, f"{installed} lacks {missing}"


# --- release build: no debug information -------------------------------------------------------------------------

def _sections(path: str) -> str:
    return subprocess.run(["readelf", "-S", "-W", path], capture_output=True, text=True, check=True).stdout


def test_imported_copy_has_the_headers_its_pxd_files_include():
    """Every header a shipped .pxd or .pyx names (``cdef extern from "include/..."``), and the CUDA header the GPU
    kernels read, is in the imported copy: code that cimports the .pxd compiles against them."""
    import re
    named = {m for f in [*PACKAGE.glob("*.pxd"), *PACKAGE.glob("*.pyx")]
             for m in re.findall(r'cdef extern from "(include/[^"]+)"', f.read_text())}
    assert named, "no header named by the .pxd/.pyx files"
    missing = sorted(h for h in named | {"include/cuda_atomics.cuh"} if not (PACKAGE / h).is_file())
    assert not missing, f"{PACKAGE} lacks {missing}"


@pytest.mark.parametrize("module", [kernels, group_kernels, fused_kernels], ids=lambda m: m.__name__)
def test_release_build_has_no_debug_info(module):
    if not sys.platform.startswith("linux"):
        pytest.skip("ELF sections are checked on Linux only")
    if shutil.which("readelf") is None:
        pytest.skip("readelf (binutils) is not installed")
    if kernels.BOUNDS_CHECKED:
        pytest.skip("a debug build (CYSCATTER_DEBUG=1) keeps its debug information")
    dynamic = subprocess.run(["readelf", "-d", "-W", module.__file__], capture_output=True, text=True).stdout
    if "libasan" in dynamic:
        pytest.skip("a sanitizer build (CYSCATTER_SANITIZE=1) keeps its debug information")
    sections = _sections(module.__file__)
    assert ".text" in sections, sections[:2000]   # readelf did read the section table
    assert ".debug_info" not in sections, f"{module.__file__} carries debug information"


def test_every_package_folder_is_listed_for_the_wheel():
    """A subpackage missing from `[tool.setuptools] packages` installs from a checkout but not from a wheel."""
    pyproject = ROOT / "pyproject.toml"
    if not pyproject.is_file():
        pytest.skip("no pyproject.toml beside the tests (an installed copy of the tests)")
    tomllib = pytest.importorskip("tomllib")
    listed = set(tomllib.loads(pyproject.read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(init.parent.relative_to(ROOT).parts)
             for top in ("cyscatter", "grad") for init in (ROOT / top).rglob("__init__.py")}
    assert found - listed == set(), f"packages missing from pyproject.toml: {sorted(found - listed)}"
    missing = [name for name in listed if not (ROOT / name.replace(".", "/")).is_dir()]
    assert missing == [], f"pyproject.toml lists packages that do not exist: {missing}"
