"""The corpus of malformed specs in tests/errors: each file carries the diagnostics it must produce
as inline comments, mypy style:

    where x.incme >= 60  # E:13 V204 unknown feature `incme`

means an error with code V204 at this line, column 13, whose message contains the text. A comment
``# E:path:line:col CODE text`` points into another file (a CSV, say), relative to the spec.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from veritas_dsl import SpecError, load
from veritas_dsl.run import RunOptions, choose_engines

ERRORS = Path(__file__).resolve().parents[1] / "errors"
SAME_LINE = re.compile(r"# E:(\d+) (V\d+) (.*)$")
ELSEWHERE = re.compile(r"# E:([^:\s]+):(\d+):(\d+) (V\d+) (.*)$")


def expected(path: Path) -> list[tuple[str, int, int, str, str]]:
    found = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if m := ELSEWHERE.search(line):
            file, row, column, code, text = m.groups()
            found.append((str((path.parent / file).resolve()), int(row), int(column), code, text))
        elif m := SAME_LINE.search(line):
            column, code, text = m.groups()
            found.append((str(path), number, int(column), code, text))
    return found


def diagnostics(path: Path):
    try:
        spec = load(path)
        for lowered in spec.lowered():
            choose_engines(lowered, RunOptions())
    except SpecError as error:
        return error.diagnostics
    return ()


CASES = sorted(ERRORS.glob("*.ver"))


def test_the_corpus_is_large():
    assert len(CASES) >= 40


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_error(path):
    want = expected(path)
    assert want, f"{path.name} states no expected error"
    got = diagnostics(path)
    located = [
        (
            str(Path(d.span.file).resolve()) if d.span else None,
            d.span and d.span.line,
            d.span and d.span.column,
            d.code,
            d.message,
        )
        for d in got
    ]
    assert len(got) == len(want), f"expected {want}, got {located}"
    for (file, line, column, code, text), actual in zip(want, located, strict=True):
        assert actual[0] == str(Path(file).resolve()), located
        assert (actual[1], actual[2], actual[3]) == (line, column, code), located
        assert text in actual[4], located
