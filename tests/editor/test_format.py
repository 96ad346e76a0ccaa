"""`ver fmt`: one canonical layout, idempotent, the syntax tree unchanged, comments kept; `--check`
for CI; a file that does not parse is a located error and stays as it was."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from veritas_dsl.cli import ExitCode, main
from veritas_dsl.diagnostics import SpecError
from veritas_dsl.editor.format import format_markdown, format_text, tokens
from veritas_dsl.lang.parser import parser

from .corpus import ROOT, shipped_specs
from conftest import examples

SPECS = shipped_specs()

MESSY = """# A header comment
model m=xgboost "m.json"(base_score=0)   # trailing
data  d = csv "d.csv"
features{age:int in[-1,90] `mean radius`:real onehot_group: onehot (a,b)}


query q for r in d[ 0 : 10 ] where class( m , r )==0 {input x,y where x==y except age # tie
   and - x.age> -1 maximize m(x)-m(y)*-2
  # before solve
solve with astar(timeout=10s,memory=2GB),milp}
property p{}
"""
CANONICAL = """# A header comment
model m = xgboost "m.json" (base_score = 0)  # trailing
data d = csv "d.csv"
features {
    age           : int in [-1, 90]
    `mean radius` : real
    onehot_group  : onehot(a, b)
}

query q for r in d[0:10] where class(m, r) == 0 {
    input x, y
    where x == y except age  # tie
        and -x.age > -1
    maximize m(x) - m(y) * -2
    # before solve
    solve with astar(timeout = 10s, memory = 2GB), milp
}
property p {}
"""


def tree(text: str):
    """The syntax tree, without positions (Lark's trees compare data and children only)."""
    return parser().parse(text)


def comments(text: str) -> list[str]:
    return [t.value.rstrip() for t in tokens(text) if t.type == "COMMENT"]


def test_a_messy_spec_gets_the_canonical_layout():
    assert format_text(MESSY) == CANONICAL
    assert format_text(CANONICAL) == CANONICAL


@pytest.mark.parametrize("name, text", SPECS, ids=[name for name, _ in SPECS])
def test_every_shipped_spec_formats_idempotently_to_the_same_tree(name, text):
    formatted = format_text(text)
    assert format_text(formatted) == formatted
    assert tree(formatted) == tree(text)
    assert comments(formatted) == comments(text)


#: What a mutation inserts before a token: blanks, line breaks, comments (own line or trailing).
SEPARATORS = [" ", "   ", "\t", "\n", "\n\n\n", " # inserted\n", "\n# own line\n\n", "\n  \n"]


@st.composite
def mutated(draw):
    """A shipped spec, with whitespace and comments inserted before some of its tokens."""
    _, text = draw(st.sampled_from(SPECS))
    starts = sorted({t.start_pos for t in tokens(text)})
    edits = draw(
        st.lists(st.tuples(st.sampled_from(starts), st.sampled_from(SEPARATORS)), max_size=12)
    )
    for position, separator in sorted(edits, reverse=True):
        text = text[:position] + separator + text[position:]
    return text


@settings(max_examples=examples(4), deadline=None)
@given(mutated())
@example(MESSY)
@example("query q { input x # c\n}")
@example("const c = 0 .a")  # `0.a` would read as the number `0.` then `a`
def test_mutated_specs_format_idempotently_to_the_same_tree(text):
    formatted = format_text(text)
    assert format_text(formatted) == formatted
    assert tree(formatted) == tree(text)
    assert comments(formatted) == comments(text)


def test_a_spec_that_does_not_parse_is_a_located_error():
    with pytest.raises(SpecError) as caught:
        format_text("query q {\n    input x\n    where x.a = 1\n}\n", "bad.ver")
    (diagnostic,) = caught.value.diagnostics
    assert (diagnostic.code, diagnostic.span.line, diagnostic.span.column) == ("V101", 3, 15)


def test_ver_fmt_rewrites_and_check_lists_what_would_change(tmp_path, capsys):
    messy, tidy = tmp_path / "messy.ver", tmp_path / "tidy.ver"
    messy.write_text(MESSY)
    tidy.write_text(CANONICAL)
    assert main(["fmt", "--check", str(tmp_path)]) == ExitCode.FAILED
    assert capsys.readouterr().out == f"would reformat {messy}\n"
    assert messy.read_text() == MESSY  # --check changes nothing
    assert main(["fmt", str(messy), str(tidy)]) == ExitCode.OK
    assert capsys.readouterr().out == f"reformatted {messy}\n"
    assert messy.read_text() == CANONICAL
    assert main(["fmt", "--check", str(messy), str(tidy)]) == ExitCode.OK
    assert sorted(p.name for p in tmp_path.iterdir()) == ["messy.ver", "tidy.ver"]  # no temp file


def test_ver_fmt_leaves_a_file_that_does_not_parse_untouched(tmp_path, capsys):
    bad, messy = tmp_path / "bad.ver", tmp_path / "messy.ver"
    bad.write_text("model m = xgboost m.json\n")
    messy.write_text(MESSY)
    assert main(["fmt", str(bad), str(messy)]) == ExitCode.ERROR
    err = capsys.readouterr().err
    assert f"--> {bad}:1:19" in err and "error[V101]" in err
    assert bad.read_text() == "model m = xgboost m.json\n"
    assert messy.read_text() == CANONICAL  # the other files are still formatted
    assert main(["fmt", "--check", str(tmp_path / "missing.ver")]) == ExitCode.ERROR


def test_windows_line_ends_are_a_change(tmp_path):
    path = tmp_path / "crlf.ver"
    path.write_bytes(CANONICAL.replace("\n", "\r\n").encode())
    assert main(["fmt", "--check", str(path)]) == ExitCode.FAILED
    assert main(["fmt", str(path)]) == ExitCode.OK
    assert path.read_bytes() == CANONICAL.encode()


def test_the_example_of_docs_editors_md_is_what_ver_fmt_does():
    page = (ROOT / "docs" / "editors.md").read_text()
    (before,) = re.findall(r"```text\n(model clf=.*?)```", page, flags=re.S)
    (after,) = re.findall(r"```ver\n(model clf = .*?)```", page, flags=re.S)
    assert format_text(before) == after


MARKDOWN = f"""# A page

Some text, `inline code`, and a block of another language:

```python
x  =  1
```

```ver
{MESSY}```

Between the blocks.

```ver
{CANONICAL}```
"""


def test_ver_fmt_lays_out_the_ver_blocks_of_markdown_and_nothing_else(tmp_path, capsys):
    page = tmp_path / "page.md"
    page.write_text(MARKDOWN)
    assert format_markdown(MARKDOWN) == MARKDOWN.replace(MESSY, CANONICAL)
    assert main(["fmt", "--check", str(tmp_path)]) == ExitCode.FAILED  # a folder: .md too
    assert capsys.readouterr().out == f"would reformat {page}\n"
    assert main(["fmt", str(page)]) == ExitCode.OK
    assert page.read_text() == MARKDOWN.replace(MESSY, CANONICAL)


def test_a_ver_block_that_does_not_parse_is_located_in_the_markdown_file(tmp_path, capsys):
    page = tmp_path / "page.md"
    text = "# Title\n\ntext\n\n```ver\nquery q {\n    input x\n    where x.a = 1\n}\n```\n"
    page.write_text(text)
    assert main(["fmt", str(page)]) == ExitCode.ERROR
    assert f"--> {page}:8:15" in capsys.readouterr().err  # the block's line 3 is the file's 8
    assert page.read_text() == text


def test_shipped_specs_and_the_docs_ver_blocks_are_in_the_layout(capsys):
    paths = [str(ROOT / "examples"), str(ROOT / "docs"), str(ROOT / "README.md")]
    assert main(["fmt", "--check", *paths]) == ExitCode.OK, capsys.readouterr().out
