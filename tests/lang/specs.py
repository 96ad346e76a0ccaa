"""Valid specs to start from: the examples on docs/language.md and the files in examples/."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "language.md"
EXAMPLES = ROOT / "examples"


def doc_examples() -> list[tuple[str, str]]:
    """``(name, text)`` of every ```ver block of the language reference."""
    blocks = re.findall(r"```ver\n(.*?)```", DOCS.read_text(), flags=re.S)
    return [(f"language.md#{i}", text) for i, text in enumerate(blocks)]


def example_files() -> list[Path]:
    return sorted(EXAMPLES.glob("*.ver"))
