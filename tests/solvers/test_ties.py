"""Every engine at a DaRE forest's ties: the optimum of ``m(x)`` is the exact mean of the leaves'
fractions rounded once (0.5 at a tie, 1.0 where every tree says 1), thresholds at those values
are decided on it, and ``ver check`` holds ``expect upper <= 0.5`` on a tie (issue 38, item 4).

The reference shares nothing with the engines: the forest's own walk of its trees on every point
of the threshold grid, and its leaves' fractions added in rationals.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from veritas_dsl.cli import ExitCode, main
from veritas_dsl.ir import Find, Interval, Maximize, Minimize, OutputConstraint, Prove, Query
from veritas_dsl.result import Termination
from veritas_dsl.solvers import registry
from veritas_dsl.solvers.base import Limits
from veritas_dsl.solvers.solve import solve
from veritas_dsl.unlearning import DareForest
from veritas_dsl.validate import validate_witness

from conftest import examples, require
from reference.grid import grid_points
from reference.ir import features, out, term

ENGINES = ("astar", "milp", "sat", "oracle")
README_X = np.array([[0, 1], [0, 1], [0, 1], [1, 0], [1, 0]])
README_Y = np.array([1, 1, 1, 0, 1])
TIE_BOX = (Interval("x", 0, 1.0, np.inf), Interval("x", 1, -np.inf, 0.0))


def readme_forest(n_trees: int) -> DareForest:
    return DareForest(n_trees=n_trees, max_depth=3, k=5, random_state=1).fit(README_X, README_Y)


def query(model, goal, constraints=()) -> Query:
    return Query("tie", features(model), ("x",), {"m": model}, tuple(constraints), goal)


def answer(name: str, q: Query):
    engine = registry.get(name)
    require(engine)
    result = solve(engine, q, Limits(timeout_s=60))
    for witness in result.witnesses:
        validate_witness(q, witness)
    return result


@pytest.mark.parametrize("name", ENGINES)
@pytest.mark.parametrize("n_trees", [10, 100])
def test_engines_at_the_readme_tie(name, n_trees):
    forest = readme_forest(n_trees)
    model = forest.to_ensemble()
    m = term(out())
    top = answer(name, query(model, Maximize(m), TIE_BOX))
    assert (top.lower, top.upper) == (0.5, 0.5)
    holds = answer(name, query(model, Prove((OutputConstraint(m, "<=", 0.5),)), TIE_BOX))
    assert holds.termination is Termination.INFEASIBLE  # no counterexample
    above = answer(name, query(model, Find(), (*TIE_BOX, OutputConstraint(m, ">", 0.5))))
    assert above.termination is Termination.INFEASIBLE
    at = answer(name, query(model, Find(), (*TIE_BOX, OutputConstraint(m, ">=", 0.5))))
    assert at.witnesses
    pure = forest.delete([3]).to_ensemble()  # every tree says 1 in the box
    top = answer(name, query(pure, Maximize(m)))
    assert (top.lower, top.upper) == (1.0, 1.0)
    low = answer(name, query(pure, Minimize(m), TIE_BOX))
    assert (low.lower, low.upper) == (1.0, 1.0)


@st.composite
def tied_data(draw, max_rows: int, max_columns: int):
    """Rows from a few values per column (ties, duplicate rows), labels of both classes."""
    n = draw(st.integers(2, max_rows))
    p = draw(st.integers(1, max_columns))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 3, (n, p)) * 0.5 - 1.0
    y = rng.integers(0, 2, n)
    y[rng.choice(n, 2, replace=False)] = [0, 1]
    return X.astype(np.float32), y, seed


def exact_extremes(forest: DareForest, model) -> tuple[float, float]:
    """The least and largest probability over every cell, in rationals, rounded once."""
    points = grid_points([model], [(-np.inf, np.inf)] * model.n_features)
    view = forest.view()
    means = [
        sum((Fraction(int(view.positives[j]), int(view.count[j])) for j in row), Fraction(0))
        / view.n_trees
        for row in view.leaves(points)
    ]
    return float(min(means)), float(max(means))


@settings(max_examples=examples(0.3), deadline=None)
@given(
    data=tied_data(max_rows=16, max_columns=2),
    n_trees=st.sampled_from([3, 6, 10]),
    name=st.sampled_from(ENGINES),
)
def test_engines_find_the_exact_extremes(data, n_trees, name):
    X, y, seed = data
    forest = DareForest(n_trees=n_trees, max_depth=2, k=3, random_state=seed).fit(X, y)
    model = forest.to_ensemble()
    low, high = exact_extremes(forest, model)
    m = term(out())
    top = answer(name, query(model, Maximize(m)))
    assert (top.lower, top.upper) == (high, high)
    bottom = answer(name, query(model, Minimize(m)))
    assert (bottom.lower, bottom.upper) == (low, low)
    # the largest value is a tie for `<=` and out of reach for `>`
    proof = answer(name, query(model, Prove((OutputConstraint(m, "<=", high),))))
    assert proof.termination is Termination.INFEASIBLE
    beyond = answer(name, query(model, Find(), (OutputConstraint(m, ">", high),)))
    assert beyond.termination is Termination.INFEASIBLE


def test_engines_decide_on_the_rounded_exact_sum_of_signed_fractions():
    # 155/102 - 3/2 is 0.0196078431372549 rounded once; the float64 leaves (155/102 rounds to a
    # float64 of 49 significant bits) add to 0.019607843137254832 with no rounding, which SAT's
    # "float64 adds exactly" took for the model's output
    from veritas_dsl.model import Ensemble
    from veritas_dsl.model.fractions import LeafFractions

    fractions = LeafFractions([0, 155, 155, 0, -3, -3], [1, 102, 102, 1, 2, 2])
    model = Ensemble(
        feature=[0, -1, -1, 0, -1, -1],
        threshold=[0.0, 0.0, 0.0, 1.0, 0.0, 0.0],
        left=[1, -1, -1, 4, -1, -1],
        right=[2, -1, -1, 5, -1, -1],
        value=fractions.values(),
        tree_offsets=[0, 3, 6],
        base_score=[0.0],
        feature_names=("x0",),
        fractions=fractions,
    )
    value = 0.0196078431372549
    assert model.eval(np.zeros((1, 1))).tolist() == [value]
    m = term(out())
    for name in ENGINES:
        proof = answer(name, query(model, Prove((OutputConstraint(m, ">", value),))))
        assert proof.witnesses, name  # m(x) == value everywhere: a counterexample


TIE_SPEC = """\
model m = dare "tie.dare"
model gone = delete(m, rows = [3])

query tie {
    input x
    where x.f0 >= 1 and x.f1 <= 0
    maximize m(x)
    expect upper <= 0.5
    solve with astar, milp, sat, oracle
}

property tie_class {
    forall x: x.f0 >= 1 and x.f1 <= 0 => class(m, x) == 0
    solve with astar, milp, sat, oracle
}

query pure {
    input x
    maximize gone(x)
    expect upper <= 1
    solve with astar, milp, sat, oracle
}
"""


def test_ver_check_holds_at_a_tie(tmp_path, capsys):
    readme_forest(100).save(tmp_path / "tie.dare")
    (tmp_path / "tie.ver").write_text(TIE_SPEC)
    assert main(["check", str(tmp_path / "tie.ver")]) == ExitCode.OK
    out = capsys.readouterr().out
    assert "tie: expect upper <= 0.5: holds (upper = 0.5;" in out
    assert "pure: expect upper <= 1: holds (upper = 1;" in out
    assert "3 hold" in out
