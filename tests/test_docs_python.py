"""The examples of docs/python.md run, in order, as one script, from the repository root."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "python.md"


def test_python_api_examples_run(monkeypatch):
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(), flags=re.S)
    assert len(blocks) >= 2
    monkeypatch.chdir(ROOT)
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, str(PAGE), "exec"), namespace)
    assert namespace["top"].result.exact


def test_the_readme_links_the_python_api():
    assert "(docs/python.md)" in (ROOT / "README.md").read_text()
