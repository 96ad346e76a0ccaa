"""Every valid spec we ship: the ```ver blocks of every page under docs/, and examples/*.ver."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def shipped_specs() -> list[tuple[str, str]]:
    """``(name, text)`` of every spec of the docs and the examples."""
    specs = []
    for page in sorted((ROOT / "docs").glob("*.md")):
        blocks = re.findall(r"```ver\n(.*?)```", page.read_text(), flags=re.S)
        specs += [(f"{page.name}#{i}", text) for i, text in enumerate(blocks)]
    specs += [(path.name, path.read_text()) for path in sorted((ROOT / "examples").glob("*.ver"))]
    return specs
