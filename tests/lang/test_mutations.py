"""Mutated valid specs fail only with our own located errors: never a traceback, never a crash."""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

from veritas_dsl import SpecError, parse
from veritas_dsl.run import RunOptions, choose_engines

from .specs import DOCS, doc_examples, example_files
from conftest import examples

BASES = [(str(DOCS), text) for _, text in doc_examples()]
#: The issue's example: a division by a subnormal number raised OverflowError.
OVERFLOWED = BASES[0][1].replace("where x.age >= 60", "where x.age / 1e-320 >= 1")
BASES += [(str(path), path.read_text()) for path in example_files()]
TOKENS = [
    "query",
    "property",
    "model",
    "data",
    "features",
    "const",
    "input",
    "where",
    "maximize",
    "minimize",
    "find",
    "forall",
    "expect",
    "solve",
    "with",
    "for",
    "in",
    "and",
    "or",
    "not",
    "except",
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    ",",
    ":",
    "=>",
    "=",
    "==",
    "!=",
    "<",
    "<=",
    ">",
    ">=",
    "+",
    "-",
    "*",
    "/",
    ".",
    "x",
    "x2",
    "clf",
    "test",
    "age",
    "income",
    "class",
    "linf",
    "l1",
    "changed",
    "0",
    "1.5",
    "-3",
    "1e9",
    "inf",
    '"',
    '"nowhere.json"',
    "10s",
    "2GB",
    "#",
    "\n",
    "upper",
    "lower",
    "found",
    "none",
    "astar",
    "oracle",
    "int",
    "real",
    "bool",
    "onehot",
]


NAMES = [
    "x",
    "x1",
    "x2",
    "r",
    "clf",
    "test",
    "age",
    "income",
    "debt",
    "sex",
    "housing",
    "housing_rent",
    "eps",
    "class",
    "linf",
    "l1",
    "changed",
    "upper",
    "found",
    "astar",
    "milp",
]
NUMBERS = ["0", "1", "-1", "2.5", "0.05", "199", "200", "1e30", "inf", "3"]
WORD = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
NUMBER = re.compile(r"\d+(\.\d+)?")


@st.composite
def mutants(draw):
    path, text = draw(st.sampled_from(BASES))
    for _ in range(draw(st.integers(1, 3))):
        position = draw(st.integers(0, len(text)))
        action = draw(
            st.sampled_from(["delete", "insert", "replace", "duplicate", "rename", "renumber"])
        )
        if action in ("rename", "renumber"):
            pattern, choices = (WORD, NAMES) if action == "rename" else (NUMBER, NUMBERS)
            matches = list(pattern.finditer(text))
            if matches:
                m = draw(st.sampled_from(matches))
                text = text[: m.start()] + draw(st.sampled_from(choices)) + text[m.end() :]
        elif action == "delete":
            text = text[:position] + text[position + draw(st.integers(1, 12)) :]
        elif action == "insert":
            text = text[:position] + " " + draw(st.sampled_from(TOKENS)) + " " + text[position:]
        elif action == "replace":
            end = position + draw(st.integers(1, 8))
            text = text[:position] + draw(st.sampled_from(TOKENS)) + text[end:]
        else:
            end = position + draw(st.integers(1, 40))
            text = text[:end] + text[position:]
    return path, text


@settings(max_examples=examples(6), deadline=None)
@given(mutants())
def test_mutants_fail_only_with_located_diagnostics(mutant):
    path, text = mutant
    try:
        spec = parse(text, path)
        for lowered in spec.lowered():
            choose_engines(lowered, RunOptions())
    except SpecError as error:
        assert error.diagnostics
        for diagnostic in error.diagnostics:
            assert diagnostic.message and diagnostic.code.startswith("V")
            assert diagnostic.span is not None, diagnostic
            span = diagnostic.span
            lines = (
                text.splitlines() if span.file == path else Path(span.file).read_text().splitlines()
            )
            assert 1 <= span.line <= max(1, len(lines) + 1), diagnostic
            assert span.column >= 1, diagnostic


EXTREMES = ["1e308", "-1e308", "1e-320", "1e400", "1e-400", "-0.0", "0", "5e-324", "3.4e38"]
# A number as written: not part of a name (x2), a duration (10s) or a size (2GB).
LITERAL = re.compile(r"(?<![\w.])\d+(\.\d*)?([eE][+-]?\d+)?(?![\w.])")
#: Where the IR may hold an infinity: unbounded features and intervals, a ball of any radius.
INFINITE_OK = {("Feature", "lo"), ("Feature", "hi"), ("Interval", "lo"), ("Interval", "hi")}
INFINITE_OK |= {("Ball", "radius")}


@st.composite
def extreme_numbers(draw):
    """A spec of the docs or examples with one to three numbers made extreme."""
    path, text = draw(st.sampled_from(BASES))
    for _ in range(draw(st.integers(1, 3))):
        m = draw(st.sampled_from(list(LITERAL.finditer(text))))
        text = text[: m.start()] + draw(st.sampled_from(EXTREMES)) + text[m.end() :]
    return path, text


def _numbers(value):
    """Every float in an IR value, with the type and the field that hold it."""
    stack = [(value, None, None)]
    while stack:
        value, owner, field = stack.pop()
        if isinstance(value, float):
            yield value, owner, field
        elif isinstance(value, tuple):
            stack += [(item, owner, field) for item in value]
        elif dataclasses.is_dataclass(value):
            name = type(value).__name__
            stack += [(getattr(value, f.name), name, f.name) for f in dataclasses.fields(value)]


@settings(max_examples=examples(4), deadline=None)
@given(extreme_numbers())
@example((str(DOCS), OVERFLOWED))
def test_extreme_numbers_give_a_located_error_or_a_finite_query(mutant):
    path, text = mutant
    try:
        spec = parse(text, path)
        lowered = list(spec.lowered())
        for item in lowered:
            choose_engines(item, RunOptions())
    except SpecError as error:
        for diagnostic in error.diagnostics:
            assert diagnostic.span is not None and diagnostic.span.line >= 1, diagnostic
        return
    for item in lowered:
        query = item.query
        for number, owner, field in _numbers((query.features, query.constraints, query.goal)):
            assert math.isfinite(number) or (owner, field) in INFINITE_OK, (owner, field, number)
        for expectation in item.expectations:
            assert expectation.bound is None or math.isfinite(expectation.bound), expectation
