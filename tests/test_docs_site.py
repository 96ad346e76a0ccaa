"""The docs site (mkdocs.yml) builds with ``mkdocs build --strict``, as CI builds it: every page
in the nav, no link to a missing page or anchor; and its ``ver`` blocks are highlighted by the
package's own Pygments lexer (registered by entry point), token for token."""

from __future__ import annotations

import html
import re
import subprocess
import sys
from pathlib import Path

import yaml
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name

from veritas_dsl.editor.highlight import VerLexer

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def nav_pages(entries) -> list[str]:
    pages = []
    for entry in entries:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        pages += nav_pages(value) if isinstance(value, list) else [value]
    return pages


def test_the_nav_holds_every_page_the_user_guide_first():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    pages = nav_pages(config["nav"])
    assert sorted(pages) == sorted(p.name for p in DOCS.glob("*.md"))
    assert pages.index("unlearning.md") < pages.index("unlearning-speed.md")
    assert pages.index("language.md") < pages.index("layers.md")
    # strict fails on a warning; these make a broken link or anchor one
    assert set(config["validation"].values()) == {"warn"}


def test_the_site_builds_strict_and_highlights_ver_blocks(tmp_path):
    site = tmp_path / "site"
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"),
         "-d", str(site)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    assert isinstance(get_lexer_by_name("ver"), VerLexer)  # the entry point, as MkDocs finds it
    for page in ("index", "language", "unlearning"):
        text = (DOCS / f"{page}.md").read_text()
        blocks = re.findall(r"```ver\n(.*?)```", text, flags=re.S)
        assert blocks, page
        built_page = (site / "index.html") if page == "index" else site / page / "index.html"
        rendered = html.unescape(built_page.read_text())
        for block in blocks:
            spans = highlight(block, VerLexer(), HtmlFormatter(nowrap=True))
            assert '<span class="k">' in spans  # keywords are lexed as such
            assert html.unescape(spans) in rendered, f"{page}: a ver block not highlighted as ver"
