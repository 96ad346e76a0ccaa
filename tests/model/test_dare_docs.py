"""The examples of the unlearning pages run, in order, as one script: the guide
(docs/unlearning.md) first, whose forest the other pages use."""

from __future__ import annotations

import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGES = [DOCS / "unlearning.md", *sorted(DOCS.glob("unlearning-*.md"))]


def test_unlearning_page_examples_run():
    namespace: dict = {}
    for page in PAGES:
        blocks = re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.S)
        for block in blocks:
            exec(compile(block, str(page), "exec"), namespace)
    assert namespace["model"].n_trees == 10
    assert "leakage" in namespace and "worst_case" in namespace  # the other pages' blocks ran
