"""Leaf values as exact fractions (``veritas_dsl.model.fractions``): a model of fractions outputs
their exact sum rounded once to float64, whatever the row, and its file keeps them."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from veritas_dsl.model import Ensemble
from veritas_dsl.model.errors import ModelError
from veritas_dsl.model.fractions import LeafFractions

from conftest import examples


def _reference(numerator, denominator, nodes) -> list[float]:
    return [
        float(sum(Fraction(int(numerator[j]), int(denominator[j])) for j in row)) for row in nodes
    ]


@st.composite
def fraction_rows(draw):
    """Leaves of a few trees (three per tree) as fractions, and rows reaching one per tree:
    small denominators (sums on a tie), large ones, negative numerators, and sums placed on a
    point halfway between two float64 values (which the fast path cannot decide)."""
    n_trees = draw(st.integers(1, 12))
    size = draw(st.sampled_from([3, 7, 100, 2**20, 2**52]))
    denominator = draw(
        st.lists(st.integers(1, size), min_size=3 * n_trees, max_size=3 * n_trees)
    )
    low = draw(st.sampled_from([0, -(2**20)]))
    numerator = [draw(st.integers(low, d)) for d in denominator]
    if n_trees > 2 and draw(st.booleans()):  # 1/3 + 2/3 + 2**-53: halfway between floats
        numerator[:7:3], denominator[:7:3] = [1, 2, 1], [3, 3, 2**53]
    rows = draw(
        st.lists(
            st.tuples(*[st.integers(0, 2).map(lambda i, t=t: 3 * t + i) for t in range(n_trees)]),
            min_size=1,
            max_size=8,
        )
    )
    return np.array(numerator), np.array(denominator), np.array(rows)


@settings(max_examples=examples(1.0))
@given(case=fraction_rows())
def test_sums_are_the_exact_sum_rounded_once(case):
    numerator, denominator, nodes = case
    got = LeafFractions(numerator, denominator).sums(nodes)[:, 0]
    assert got.tolist() == _reference(numerator, denominator, nodes)


def test_a_tie_and_a_whole_are_exact_where_float64_sums_are_not():
    # 100 trees each 1/2 / 100, and 100 trees each 1/100: tree-order float64 sums err
    tie = LeafFractions([1], [200]).sums(np.zeros((1, 100), dtype=int))
    whole = LeafFractions([1], [100]).sums(np.zeros((1, 100), dtype=int))
    assert sum([1 / 200] * 100) != 0.5 and sum([1 / 100] * 100) != 1.0
    assert tie.tolist() == [[0.5]] and whole.tolist() == [[1.0]]


def test_a_midpoint_is_decided_in_rationals(monkeypatch):
    # 1/3 + 2/3 + 2**-53 lies halfway between 1 and the next float64: it rounds to even, 1,
    # and 108 digits of 1/3 cannot tell, so it is added in rationals. A hair above (by about
    # 2**-106), 1/3 + 2/3 + 1 / (2**53 - 1) rounds up, and the digits tell.
    fractions = LeafFractions([1, 2, 1, 1], [3, 3, 2**53, 2**53 - 1])
    exact = []
    original = LeafFractions._exact_sum
    monkeypatch.setattr(
        LeafFractions, "_exact_sum", lambda *a: exact.append(a) or original(*a)
    )
    assert fractions.sums(np.array([[0, 1, 2]])).tolist() == [[1.0]]
    assert fractions.sums(np.array([[0, 1, 3]]))[0, 0] == math.nextafter(1.0, 2.0)
    assert len(exact) == 1


def _model(values, fractions=None, base=0.0) -> Ensemble:
    """One tree, ``x0 < 0`` left: two leaves."""
    return Ensemble(
        feature=[0, -1, -1],
        threshold=[0.0, 0.0, 0.0],
        left=[1, -1, -1],
        right=[2, -1, -1],
        value=np.array(values, dtype=np.float64)[:, None],
        tree_offsets=[0, 3],
        base_score=[base],
        feature_names=("x0",),
        fractions=fractions,
    )


def test_a_model_of_fractions_is_checked():
    thirds = LeafFractions([0, 1, 2], [1, 3, 3])
    model = _model([0.0, 1 / 3, 2 / 3], thirds)
    assert model.eval(np.array([[-1.0], [1.0]])).tolist() == [1 / 3, 2 / 3]
    with pytest.raises(ModelError, match="not its fraction"):
        _model([0.0, 0.33, 2 / 3], thirds)
    with pytest.raises(ModelError, match="base score"):
        _model([0.0, 1 / 3, 2 / 3], thirds, base=1.0)
    with pytest.raises(ModelError, match="denominator is below 1"):
        _model([0.0, 1 / 3, 2 / 3], LeafFractions([0, 1, 2], [1, 3, 0]))
    with pytest.raises(ModelError, match="beyond 2\\*\\*53"):
        _model([0.0, 1 / 3, 2 / 3], LeafFractions([0, 2**54, 2], [1, 3 * 2**54, 3]))


def test_a_saved_model_keeps_its_fractions(tmp_path):
    model = _model([0.0, 1 / 3, 2 / 3], LeafFractions([0, 1, 2], [1, 3, 3]))
    model.save(tmp_path / "m.json")
    again = Ensemble.load(tmp_path / "m.json")
    assert np.array_equal(again.fractions.numerator, model.fractions.numerator)
    assert np.array_equal(again.fractions.denominator, model.fractions.denominator)
