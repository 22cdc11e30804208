#!/usr/bin/env python3
"""Open the built documentation in headless Chromium and check that a reader can reach the API from the index.

    python -m sphinx -W --keep-going -b html docs docs/_build/html
    python tools/check_docs_site.py [docs/_build/html]

Loads index.html through Chromium (``--dump-dom``: the DOM after the page ran), follows its links to the API pages
of ``cyscatter``, ``cyscatter.dask`` and ``grad``, loads those, and checks that each lists every public function
of its package with a link to a page that exists; then loads one function page per package and checks that it
shows the function's signature. The user-guide pages must be linked from the index too. Chromium is found as
$CHROMIUM, else chromium, chromium-headless-shell or chromium-browser on PATH (Debian:
``apt-get install chromium-headless-shell`` or ``chromium``). Exit status 0 when every check passes.
"""
from __future__ import annotations

import html.parser
import importlib
import json
import os
import pathlib
import shutil
import subprocess
import sys
import urllib.parse

ROOT = pathlib.Path(__file__).resolve().parent.parent
API_PAGES = {"cyscatter": "api/cyscatter.html", "cyscatter.dask": "api/cyscatter.dask.html", "grad": "api/grad.html"}
GUIDE_PAGES = ["getting_started.html", "concepts.html", "semantics.html", "gather_scatter.html", "gradients.html",
               "interop.html", "errors.html", "gpu.html", "dask.html", "cython.html", "performance.html",
               "packaging.html", "guides/numpy.html", "guides/pytorch_scatter.html", "guides/jax.html",
               "guides/numpy_groupies.html", "changelog.html", "contributing.html"]


def chromium() -> str:
    for name in (os.environ.get("CHROMIUM"), "chromium", "chromium-headless-shell", "chromium-browser"):
        if name and shutil.which(name):
            return shutil.which(name)
    sys.exit("check_docs_site: no Chromium found (apt-get install chromium-headless-shell, or set CHROMIUM)")


class Links(html.parser.HTMLParser):
    """The hrefs of a DOM's <a> elements, and its text."""

    def __init__(self):
        super().__init__()
        self.hrefs: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "a" and dict(attrs).get("href"):
            self.hrefs.append(dict(attrs)["href"])

    def handle_data(self, data):
        self.text.append(data)


def load(browser: str, page: pathlib.Path) -> Links:
    """The DOM of `page` as Chromium renders it, parsed."""
    run = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                          "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    if run.returncode != 0 or "<html" not in run.stdout:
        raise SystemExit(f"check_docs_site: Chromium could not load {page}:\n{run.stderr[-2000:]}")
    links = Links()
    links.feed(run.stdout)
    return links


def resolve(base: pathlib.Path, href: str) -> pathlib.Path | None:
    """The local file a relative href of the page `base` points to (None for external links)."""
    parts = urllib.parse.urlsplit(href)
    if parts.scheme or parts.netloc or not parts.path:
        return None
    return (base.parent / urllib.parse.unquote(parts.path)).resolve()


def public_functions(package: str) -> list[str]:
    module = importlib.import_module(package)
    return [name for name in module.__all__ if callable(getattr(module, name))]


def search_duplicates(site: pathlib.Path) -> list[str]:
    """The public functions the site's search would list more than once: not exactly one object entry, or their
    page also found by its title or words (docs/conf.py's build hook takes those out)."""
    text = (site / "searchindex.js").read_text(encoding="utf-8")
    index = json.loads(text[text.index("(") + 1: text.rindex(")")])
    docnames = index["docnames"]
    found: dict[str, int] = {}
    for module, entries in index["objects"].items():
        for entry in entries:
            full = f"{module}.{entry[4]}" if module else entry[4]
            found[full] = found.get(full, 0) + 1
    pages = set()
    for table in ("terms", "titleterms"):
        for docs in index[table].values():
            pages.update(docs if isinstance(docs, list) else [docs])
    problems = []
    for package in API_PAGES:
        for name in public_functions(package):
            full = f"{package}.{name}"
            if found.get(full, 0) != 1:
                problems.append(f"search lists {full} {found.get(full, 0)} times as an object")
            page = f"api/generated/{full}"
            if page in docnames and docnames.index(page) in pages:
                problems.append(f"search lists {full} also as its page {page}")
    return problems


def main() -> int:
    site = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "docs" / "_build" / "html").resolve()
    index = site / "index.html"
    if not index.is_file():
        sys.exit(f"check_docs_site: {index} not found; build the site first")
    sys.path.insert(0, str(ROOT))
    browser = chromium()
    problems: list[str] = []

    home = load(browser, index)
    linked = {resolve(index, h) for h in home.hrefs} - {None}
    for page in GUIDE_PAGES + list(API_PAGES.values()):
        if (site / page).resolve() not in linked:
            problems.append(f"index.html does not link to {page}")
    print(f"index.html: {len(home.hrefs)} links, {len(linked)} local pages")

    for package, page in API_PAGES.items():
        path = site / page
        if path.resolve() not in linked or not path.is_file():
            continue
        dom = load(browser, path)
        targets = {}
        for href in dom.hrefs:
            target = resolve(path, href)
            if target is not None:
                targets.setdefault(target.name.split("#")[0], target)
        names = public_functions(package)
        missing = []
        for name in names:
            target = targets.get(f"{package}.{name}.html")
            if target is None or not target.is_file():
                missing.append(name)
        if missing:
            problems.append(f"{page} has no working link to {', '.join(missing)}")
        first = targets.get(f"{package}.{names[0]}.html")
        if first is not None and first.is_file():
            text = " ".join(load(browser, first).text)
            if f"{names[0]}(" not in text.replace(" (", "("):
                problems.append(f"{first.relative_to(site)} does not show the signature of {package}.{names[0]}")
        print(f"{page}: {len(names) - len(missing)} of {len(names)} public functions linked; "
              f"{first.relative_to(site) if first else '-'} loaded")

    duplicates = search_duplicates(site)
    problems += duplicates
    print(f"search index: {len(duplicates)} functions listed more than once")

    for problem in problems:
        print("FAIL:", problem)
    print("check_docs_site:", "FAILED" if problems else "OK")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
