"""One table of names (veritas_dsl/names.py): every reader's table is the same list, so a format,
an engine or a built-in added in one place and not another fails here."""

from __future__ import annotations

from veritas_dsl import names
from veritas_dsl.lang import environment, scales, symbols
from veritas_dsl.model import limits, load
from veritas_dsl.solvers import registry
from veritas_dsl.unlearning.checking import coverage, derived, families


def test_the_loaders_and_the_registry_read_the_table():
    assert load.FORMATS == names.MODEL_FORMATS
    # a format without its own limit would silently get the largest one
    assert set(limits.MAX_BYTES) == set(names.MODEL_FORMATS)
    assert set(load.FORMAT_OPTIONS) <= set(names.MODEL_FORMATS)
    assert set(environment.DATA_FORMATS) == set(names.DATA_FORMATS)
    assert tuple(registry.ENGINES) == names.ENGINES


def test_the_checkers_tables_are_the_names_tables():
    assert symbols.BUILTINS == names.FUNCTIONS
    assert scales.STATISTICS == names.STATISTICS
    assert tuple(derived.DERIVATIONS) == names.DERIVATIONS
    assert set(derived.BOUNDS) == set(coverage.CERTIFICATES) == set(names.CERTIFICATES)
    assert tuple(families.FAMILIES) == names.FAMILIES
    assert families.WORST == names.WORST_OF


def test_no_name_has_two_meanings():
    every = names.BUILTINS + names.CONSTANTS
    assert len(every) == len(set(every))
