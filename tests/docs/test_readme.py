"""The README: short enough to read in five minutes, its two set-up commands the ones CI runs, its links
working, its examples running."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
README_LIMIT = 12 * 1024


def test_the_readme_is_read_in_five_minutes():
    assert README.stat().st_size <= README_LIMIT, f"README.md is {README.stat().st_size} bytes (at most {README_LIMIT})"


def test_the_readme_keeps_the_two_set_up_commands_and_ci_runs_the_second():
    text = README.read_text()
    main_job = 'pip install -e ".[examples]" && python -m cyscatter.examples.gcn'
    tests = 'pip install -e ".[test]" && python -m pytest'
    assert re.search(rf"^{re.escape(main_job)}$", text, re.MULTILINE)
    assert re.search(rf"^{re.escape(tests)}$", text, re.MULTILINE)
    assert re.search(rf"^{re.escape(tests)}$", (ROOT / ".ci" / "run").read_text(), re.MULTILINE)


def test_every_readme_link_leads_somewhere():
    targets = re.findall(r"\]\(([^)#]+)\)", README.read_text())
    assert targets
    missing = [t for t in targets if not t.startswith("http") and not (ROOT / t).exists()]
    assert not missing, missing


def _python_blocks() -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", README.read_text(), re.MULTILINE | re.DOTALL)


def test_the_readme_examples_run():
    blocks = _python_blocks()
    assert len(blocks) == 2
    namespace: dict = {}
    exec(compile(blocks[0], "README.md (API tour)", "exec"), namespace)   # noqa: S102 - our own README
    cs = namespace["cs"]
    np.testing.assert_array_equal(cs.scatter(namespace["src"], namespace["index"], "add"),
                                  [[6, 8], [7, 8], [3, 4]])
    pytest.importorskip("autograd")
    exec(compile(blocks[1], "README.md (autograd)", "exec"), namespace)   # noqa: S102
