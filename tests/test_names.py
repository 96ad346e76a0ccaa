"""One table of names (veritas_dsl/names.py): every reader's table is the same list, so a format,
an engine or a built-in added in one place and not another fails here."""

from __future__ import annotations

import re
from typing import get_args

import pytest

from veritas_dsl import names, parse
from veritas_dsl.ir.constructs import CONSTRUCTS
from veritas_dsl.ir.query import Norm
from veritas_dsl.lang import context, environment, quantifiers, scales
from veritas_dsl.lang.parser import parser
from veritas_dsl.model import limits, load
from veritas_dsl.run import DEFAULT_ENGINES
from veritas_dsl.solvers import registry
from veritas_dsl.unlearning.checking import coverage, derived, families
from veritas_dsl.unlearning.leakage import DEFAULT_ENGINE as LEAKAGE_ENGINE


def test_the_loaders_and_the_registry_read_the_table():
    assert load.FORMATS == names.MODEL_FORMATS
    # a format without its own limit would silently get the largest one
    assert set(limits.MAX_BYTES) == set(names.MODEL_FORMATS)
    assert set(load.FORMAT_OPTIONS) <= set(names.MODEL_FORMATS)
    assert set(environment.DATA_FORMATS) == set(names.DATA_FORMATS)
    assert tuple(registry.ENGINES) == names.ENGINES
    assert set(DEFAULT_ENGINES) <= set(names.ENGINES)
    assert LEAKAGE_ENGINE in names.ENGINES


def test_the_checkers_tables_are_the_names_tables():
    assert context.BUILTINS == names.FUNCTIONS
    assert scales.STATISTICS == names.STATISTICS
    assert tuple(derived.DERIVATIONS) == names.DERIVATIONS
    assert set(derived.BOUNDS) == set(coverage.CERTIFICATES) == set(names.CERTIFICATES)
    assert tuple(families.FAMILIES) == names.FAMILIES
    assert quantifiers.WORST == names.WORST_OF


def test_no_name_has_two_meanings():
    every = names.BUILTINS + names.CONSTANTS
    assert len(every) == len(set(every))


def test_a_distance_of_the_language_is_a_norm_and_a_construct_of_the_ir():
    # a new norm named here is typed by the checker; the IR's Norm and CONSTRUCTS must list
    # it too, and then every engine refuses it until it lists it (tests/solvers/test_contract.py)
    assert get_args(Norm) == names.NORMS
    assert set(names.NORMS) <= CONSTRUCTS
    assert set(names.SCALED) <= set(names.FUNCTIONS)


def test_the_parsers_units_are_the_tables():
    terminals = {terminal.name: terminal.pattern.value for terminal in parser().terminals}
    for terminal, units in (("DURATION", names.DURATION_UNITS), ("SIZE", names.SIZE_UNITS)):
        (alternation,) = re.findall(r"\(([A-Za-z|]+)\)\\b$", terminals[terminal])
        assert set(alternation.split("|")) == set(units), terminal


@pytest.mark.parametrize(
    ("option", "unit", "factor", "field"),
    [("timeout", u, f, "timeout_s") for u, f in names.DURATION_UNITS.items()]
    + [("memory", u, f, "max_memory_bytes") for u, f in names.SIZE_UNITS.items()],
)
def test_the_checker_reads_every_unit_of_the_table(tmp_path, two_trees, option, unit, factor, field):
    two_trees.save(tmp_path / "m.json")
    text = (
        f'model m = ensemble "{tmp_path / "m.json"}"\n'
        f"query q {{ input x  maximize m(x)  solve with oracle({option} = 3{unit}) }}"
    )
    (lowered,) = parse(text).lowered()
    (choice,) = lowered.origin.engines
    assert getattr(choice, field) == pytest.approx(3 * factor)
