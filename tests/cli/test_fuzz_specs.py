"""A bounded fuzz of `ver run` on mutated shipped examples, in-process: tokens and characters
deleted, inserted and replaced, lines duplicated, numbers made huge, NaN-like or negative, the
file cut. Every mutant ends with exit 0, 1 or 2 and our own messages: never an internal error
or a traceback. (tests/lang/test_mutations.py checks the diagnostics of parse and lowering;
this runs the engines and the report too.)"""

from __future__ import annotations

import contextlib
import io
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lang.specs import EXAMPLES, example_files

from veritas_dsl.cli import main

from conftest import examples

BASES = [(path.name, path.read_text()) for path in example_files()]
#: A token of the examples: a string, a number (with exponent), a name, an operator.
TOKEN = re.compile(r'"[^"\n]*"|\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\w+|==|!=|<=|>=|=>|\S')
TOKENS = sorted({m.group() for _, text in BASES for m in TOKEN.finditer(text)})
NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d*)?(?:[eE][+-]?\d+)?(?![\w.])")
ODD_NUMBERS = [
    "nan", "NaN", "inf", "-inf", "1e999", "-1e999", "1e308", "-1e308", "5e-324", "1e-400",
    "-0", "-0.0", "-1", "-200", "0", "3.4e38", "16777217", "9223372036854775808", "1e18",
    "0x10", "1_000", "1e", ".5", "5.",
]  # fmt: skip
CHARACTERS = [*"{}()[],:;.=<>!+-*/#\"'\\\t\n\x00é", "\r\n", "\ufeff", " "]


@st.composite
def mutants(draw) -> tuple[str, str]:
    name, text = draw(st.sampled_from(BASES))
    for _ in range(draw(st.integers(1, 3))):
        action = draw(
            st.sampled_from(
                ["delete", "insert", "replace", "character", "line", "number", "cut"]
            )
        )
        tokens = list(TOKEN.finditer(text))
        if action in ("delete", "replace") and tokens:
            m = draw(st.sampled_from(tokens))
            new = draw(st.sampled_from(TOKENS)) if action == "replace" else ""
            text = text[: m.start()] + new + text[m.end() :]
        elif action == "insert":
            at = draw(st.integers(0, len(text)))
            text = text[:at] + " " + draw(st.sampled_from(TOKENS)) + " " + text[at:]
        elif action == "character":
            at = draw(st.integers(0, len(text)))
            gone = draw(st.integers(0, 2))
            text = text[:at] + draw(st.sampled_from(CHARACTERS)) + text[at + gone :]
        elif action == "line" and text:
            lines = text.splitlines(keepends=True)
            i = draw(st.integers(0, len(lines) - 1))
            lines.insert(i, lines[i] * draw(st.integers(1, 3)))
            text = "".join(lines)
        elif action == "number":
            numbers = list(NUMBER.finditer(text))
            if numbers:
                m = draw(st.sampled_from(numbers))
                text = text[: m.start()] + draw(st.sampled_from(ODD_NUMBERS)) + text[m.end() :]
        elif action == "cut":
            text = text[: draw(st.integers(0, len(text)))]
    return name, text


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A folder beside which a mutant finds the examples' models and data (as `models/...`)."""
    folder = tmp_path_factory.mktemp("fuzz")
    for sub in ("models", "data"):
        (folder / sub).symlink_to(EXAMPLES / sub, target_is_directory=True)
    return folder


@settings(max_examples=examples(1.5), deadline=None)
@given(mutant=mutants(), solver=st.sampled_from([None, "astar"]))
def test_a_mutated_example_ends_with_our_own_messages(folder, mutant, solver):
    name, text = mutant
    path = folder / name
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    args = ["run", "--timeout", "1", "--jobs", "1", str(path)]
    if solver:
        args[1:1] = ["--solver", solver]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    printed = out.getvalue() + err.getvalue()
    assert code in (0, 1, 2), (code, text, printed)
    assert "internal error" not in printed, (text, printed)
    assert "Traceback" not in printed, (text, printed)
