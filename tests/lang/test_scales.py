"""The ``scale`` of a distance: ``l1(x, r, scale = mad(train))``, ``std(train)``, a number, or
``{feature: number}``; typed into the IR's weights ``1 / scale``, the same for every row of a
batch, and answered alike by every engine."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from veritas_dsl import parse
from veritas_dsl.diagnostics import Severity
from veritas_dsl.lang.scales import weight

from conftest import build

#: Approved (output 1) at age >= 40 or income >= 30000.
TREE = (0, 40.0, (1, 30000.0, -1.0, 1.0), 1.0)
TRAIN = [
    ("age", "income", "label"),
    (25, 18000, 1),
    (61, 52000, 0),
    (38, 9000, 1),
    (19, 71000, 0),
    (40, 30000, 1),
]


@pytest.fixture
def folder(tmp_path):
    build([TREE], 2, names=("age", "income")).save(tmp_path / "m.json")
    (tmp_path / "train.csv").write_text("\n".join(",".join(map(str, r)) for r in TRAIN) + "\n")
    (tmp_path / "test.csv").write_text("age,income\n30,20000\n35,25000\n")
    return tmp_path


def spec(folder, body: str):
    header = (
        'model m = ensemble "m.json"\ndata train = csv "train.csv"\ndata test = csv "test.csv"\n'
    )
    return parse(header + body, str(folder / "spec.ver"))


def closest(folder, distance: str, engines: str = "astar, milp, oracle"):
    """The closest approved input to test[0] (age 30, income 20000) under ``distance``: every
    engine named must agree (the run reports a disagreement as an error)."""
    body = f"""query q {{
        input x
        where m(x) > 0
        minimize {distance}
        solve with {engines}
    }}"""
    (run,) = spec(folder, body).run()
    for result in run.results:
        assert result.termination.value == "optimal", result
    witness = run.result.witnesses[0].inputs["x"]
    return run.result.upper, tuple(float(v) for v in witness)


def test_unscaled_the_years_win_scaled_the_dollars_do(folder):
    """Worked by hand: from (30, 20000) approval needs age 40 (10 years) or income 30000
    (10000 dollars). Unscaled, 10 < 10000: the age moves. Scaled by 2000 dollars, the income
    move costs 10000 / 2000 = 5 < 10: the income moves."""
    assert closest(folder, "l1(x, test[0])") == (10.0, (40.0, 20000.0))
    five = float(10000 * Fraction(weight(2000)))  # 5 less a rounding (weights round down)
    assert five == pytest.approx(5, rel=2**-52) and five <= 5
    scaled = "l1(x, test[0], scale = {income: 2000})"
    assert closest(folder, scaled) == (five, (30.0, 30000.0))
    linf = "linf(x, test[0], scale = {income: 2000})"
    assert closest(folder, linf, "astar, milp, sat, oracle") == (five, (30.0, 30000.0))


def test_mad_by_hand(folder):
    """MAD over train: age 25, 61, 38, 19, 40 has median 38 and deviations 13, 23, 0, 19, 2,
    median 13; income 18000, 52000, 9000, 71000, 30000 has median 30000 and deviations 12000,
    22000, 21000, 41000, 0, median 21000. The income move costs 10000/21000 < 10/13: it wins,
    at the exact weighted distance 10000 * (1/21000 in float64)."""
    value, point = closest(folder, "l1(x, test[0], scale = mad(train))")
    assert point == (30.0, 30000.0)
    assert value == float(Fraction(10000) * Fraction(weight(21000)))
    assert value == pytest.approx(10 / 21, rel=1e-15)


def test_std_is_the_columns_standard_deviation(folder):
    checked = spec(folder, "query q { input x  minimize l1(x, test[0], scale = std(train)) }")
    (lowered,) = checked.lowered()
    weights = lowered.query.goal.weights
    data = np.array([r[:2] for r in TRAIN[1:]], dtype=np.float64)
    assert weights == tuple(weight(s) for s in data.std(axis=0))


def test_a_weight_is_one_over_the_scale_rounded_toward_zero():
    for scale in (1.0, 2.0, 3.0, 2000.0, 21000.0, 0.1, 1e-300, 1e300, 7.5e-5):
        w = weight(scale)
        assert Fraction(w) * Fraction(scale) <= 1
        assert Fraction(math.nextafter(w, math.inf)) * Fraction(scale) > 1
    assert weight(2000.0) < 1 / 2000  # 1/2000 rounds up to the nearest float64


def test_a_scale_of_one_is_the_unscaled_distance(folder):
    plain = closest(folder, "l1(x, test[0])")
    assert closest(folder, "l1(x, test[0], scale = 1)") == plain
    assert closest(folder, "l1(x, test[0], scale = {})") == plain
    assert closest(folder, "linf(x, test[0], scale = {age: 1})") == closest(
        folder, "linf(x, test[0])"
    )


def test_a_scaled_bound_is_a_box_of_radius_c_times_the_scale(folder):
    """linf(x, r, scale = {income: 2000}) <= 4 keeps income within 8000 of 20000: 30000 is out
    of reach, so the age moves (10 years, beyond 4: infeasible); at <= 5, income reaches 30000."""
    body = """query q {{
        input x
        where m(x) > 0
        where linf(x, test[0], scale = {{income: 2000}}) <= {bound}
        find
        solve with astar, milp, sat, oracle
    }}"""
    (run,) = spec(folder, body.format(bound=4)).run()
    assert run.result.termination.value == "infeasible"
    (run,) = spec(folder, body.format(bound=5)).run()
    assert run.result.termination.value == "optimal"


def test_a_batch_shares_one_scale_computed_once(folder):
    checked = spec(
        folder,
        """query q for r in test[0:2] {
            input x
            where m(x) > 0
            minimize l1(x, r, scale = mad(train))
        }""",
    )
    goals = [lowered.query.goal for lowered in checked.lowered()]
    assert len(goals) == 2
    assert goals[0].weights == goals[1].weights == (weight(13), weight(21000))
    assert goals[0].center != goals[1].center


def test_a_statistic_of_zero_keeps_scale_one_with_a_located_warning(tmp_path):
    build([TREE], 2, names=("age", "income")).save(tmp_path / "m.json")
    rows = "age,income\n30,1000\n30,2000\n30,4000\n"  # one age: MAD and std 0
    (tmp_path / "flat.csv").write_text(rows)
    text = (
        'model m = ensemble "m.json"\ndata flat = csv "flat.csv"\n'
        "query q {\n    input x\n    minimize l1(x, flat[0], scale = mad(flat))\n}\n"
    )
    checked = parse(text, str(tmp_path / "spec.ver"))
    (lowered,) = checked.lowered()
    assert lowered.query.goal.weights == (1.0, weight(1000))
    (warning,) = checked.warnings()
    assert warning.severity is Severity.WARNING and warning.code == "V604"
    assert "`age`" in warning.message and "`income`" not in warning.message
    assert (warning.span.line, warning.span.column) == (5, 37)


@pytest.mark.parametrize(
    "held, warned",
    [
        ("", True),  # age moves: its scale matters
        ("    where x == flat[0] except income\n", False),  # age held at the distance's row
        ("    where x.income >= 0 and x == flat[0] except income\n", False),  # inside an `and`
        ("    where x == flat[1] except income\n", True),  # held at another row: it counts
        ("    where x == flat[0] except age\n", True),  # only income is held
    ],
)
def test_no_warning_for_a_zero_statistic_the_query_holds_at_the_distances_row(
    tmp_path, held, warned
):
    build([TREE], 2, names=("age", "income")).save(tmp_path / "m.json")
    (tmp_path / "flat.csv").write_text("age,income\n30,1000\n30,2000\n30,4000\n")
    text = (
        'model m = ensemble "m.json"\ndata flat = csv "flat.csv"\n'
        f"query q {{\n    input x\n{held}    minimize l1(x, flat[0], scale = mad(flat))\n}}\n"
    )
    warnings = parse(text, str(tmp_path / "spec.ver")).warnings()
    assert [w.code for w in warnings] == (["V604"] if warned else [])


def test_no_warning_for_a_zero_statistic_two_tied_instances_share(tmp_path):
    build([TREE], 2, names=("age", "income")).save(tmp_path / "m.json")
    (tmp_path / "flat.csv").write_text("age,income\n30,1000\n30,2000\n30,4000\n")
    text = (
        'model m = ensemble "m.json"\ndata flat = csv "flat.csv"\nquery q {\n'
        "    input x1, x2\n    where x1 == x2 except income\n"
        "    minimize linf(x2, x1, scale = mad(flat))\n}\n"
    )
    assert parse(text, str(tmp_path / "spec.ver")).warnings() == []


def test_a_one_hot_groups_name_scales_each_member(tmp_path):
    """`{housing: 2}` scales own and rent; A* refuses a group member scaled by other than 1 and
    names the engines that take it, which find the closest approval: switching the group costs
    two members' 1 / 2 each, 1 in all, less than the 10 years of age."""
    tree = (0, 40.0, (3, 0.5, -1.0, 1.0), 1.0)  # approved at age >= 40, or renting
    build([tree], 4, names=("age", "income", "own", "rent")).save(tmp_path / "m.json")
    (tmp_path / "test.csv").write_text("age,income,own,rent\n30,20000,1,0\n")
    text = """model m = ensemble "m.json"
data test = csv "test.csv"
features { housing : onehot(own, rent) }
query q {
    input x
    where m(x) > 0
    minimize l1(x, test[0], scale = {housing: 2})
    solve with milp, oracle
}
"""
    checked = parse(text, str(tmp_path / "spec.ver"))
    (lowered,) = checked.lowered()
    assert lowered.query.goal.weights == (1.0, 1.0, 0.5, 0.5)
    (run,) = checked.run()
    assert run.result.upper == 1.0
    assert run.result.witnesses[0].inputs["x"].tolist() == [30.0, 20000.0, 0.0, 1.0]
    (refused,) = checked.run(solver="astar")
    assert refused.result.termination.value == "unsupported"
    assert "weighted distance over a one-hot group" in refused.result.message
