"""``proba(m, x)``: a binary model's probability of class 1, where it is exact. A logistic margin's
comparison with a number becomes the margin's comparison with a float64 bound that decides every
float64 margin as the exact logit would (a boundary model whose leaves sit on the float64s either
side of logit(c)); a forest's probability is its output; each importer's scale is its library's
predict_proba; an objective is reported in both scales."""

from __future__ import annotations

import json
import math
from decimal import Decimal, localcontext

import lightgbm
import numpy as np
import pytest
import xgboost
from catboost import CatBoostClassifier
from schema_files import problems
from sklearn.ensemble import (
    GradientBoostingClassifier,
    HistGradientBoostingClassifier,
    RandomForestClassifier,
)

import veritas_dsl
from veritas_dsl import Ensemble
from veritas_dsl.ir.probability import margin_bound, probability_bounds, sigmoid
from veritas_dsl.report import json as json_report
from veritas_dsl.report import terminal
from veritas_dsl.unlearning import DareForest

PROBABILITIES = (0.7, 0.3, 0.9, 0.1, 0.123, 0.5 + 2**-52, 0.999999, 1e-300, 0.5)
OPS = ("<", "<=", ">", ">=")


def logit(c: float) -> Decimal:
    with localcontext() as ctx:
        ctx.prec = 80
        return (Decimal(c) / (1 - Decimal(c))).ln()


def holds(a, op: str, b) -> bool:
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


@pytest.mark.parametrize("c", PROBABILITIES)
def test_the_margin_bound_decides_the_floats_either_side_of_the_logit_as_the_logit_does(c):
    exact = logit(c)
    below = margin_bound(c, ">")
    above = margin_bound(c, ">=")
    assert below == margin_bound(c, "<=") and above == margin_bound(c, "<")
    assert above == (below if c == 0.5 else math.nextafter(below, math.inf))
    for z in (math.nextafter(below, -math.inf), below, above, math.nextafter(above, math.inf)):
        for op in OPS:
            assert holds(z, op, margin_bound(c, op)) == holds(Decimal(z), op, exact), (z, op)


def boundary_model(c: float) -> Ensemble:
    """One split on f0 at 0.5: the margin is the float64 just below logit(c) on the left, just
    above it on the right (so rounding logit(c) to the nearest float64 is wrong on one side)."""
    return Ensemble(
        feature=[0, -1, -1],
        threshold=[0.5, 0, 0],
        left=[1, -1, -1],
        right=[2, -1, -1],
        value=[[0.0], [margin_bound(c, ">")], [margin_bound(c, ">=")]],
        tree_offsets=[0, 3],
        base_score=[0.0],
        feature_names=("f0",),
        task="binary",
        probability="logistic",
    )


@pytest.mark.parametrize("c", (0.7, 0.3, 0.123))
def test_a_margin_on_either_side_of_the_logit_is_decided_exactly(c):
    queries = []
    for op in OPS:
        for where in ("x.f0 < 0.5", "x.f0 >= 0.5"):
            queries.append(
                f"query q_{len(queries)} {{ input x  where {where} and proba(m, x) {op} {c!r}"
                "  find  solve with oracle }"
            )
    spec = veritas_dsl.parse(
        "model m = ensemble\n" + "\n".join(queries), models={"m": boundary_model(c)}
    )
    runs = spec.run(timeout_s=30)
    k = 0
    for op in OPS:
        for z in (margin_bound(c, ">"), margin_bound(c, ">=")):
            found = runs[k].result.solution.value == "optimal"
            assert found == holds(Decimal(z), op, logit(c)), (op, z)
            k += 1


def test_an_expected_bound_of_a_probability_objective_is_decided_exactly():
    c = 0.7  # the model's margins are the float64s either side of logit(0.7)
    expects = {
        "maximize": ("upper > 0.7", "upper <= 0.7", "upper >= 0.7"),
        "minimize": ("lower < 0.7", "lower >= 0.7", "lower <= 0.7"),
    }
    queries = [
        f"query {sense}_{k} {{ input x  {sense} proba(m, x)  expect {e}  solve with oracle }}"
        for sense, written in expects.items()
        for k, e in enumerate(written)
    ]
    spec = veritas_dsl.parse(
        "model m = ensemble\n" + "\n".join(queries), models={"m": boundary_model(c)}
    )
    checks = [run.checks[0] for run in spec.run(timeout_s=30)]
    assert [check.holds for check in checks] == [True, False, True, True, False, True]
    assert checks[0].text == "expect upper > 0.7"
    assert f", probability {sigmoid(margin_bound(c, '>=')):.6g}" in checks[0].detail


def test_a_margin_bound_is_a_probability_strictly_between_0_and_1():
    for c in (0.0, 1.0, -0.5, math.nan):
        with pytest.raises(ValueError):
            margin_bound(c, ">")


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.random((300, 3)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] > 1).astype(int)
    return X, y


def fitted(data):
    X, y = data
    small = dict(n_estimators=4, max_depth=3)
    booster = xgboost.XGBClassifier(**small).fit(X, y)
    return {
        "xgboost": (booster, booster.predict_proba),
        "sklearn gradient boosting": (
            GradientBoostingClassifier(**small, random_state=0).fit(X, y),
            None,
        ),
        "sklearn hist": (HistGradientBoostingClassifier(max_iter=4).fit(X, y), None),
        "sklearn forest": (RandomForestClassifier(**small, random_state=0).fit(X, y), None),
        "lightgbm": (lightgbm.LGBMClassifier(**small, verbose=-1).fit(X, y), None),
        "catboost": (
            CatBoostClassifier(iterations=4, depth=3, verbose=0, allow_writing_files=False).fit(
                X, y
            ),
            None,
        ),
    }


def test_each_importer_says_how_its_libraries_probability_follows_from_the_output(data):
    X, _ = data
    for name, (model, _) in fitted(data).items():
        ensemble = (
            Ensemble.from_xgboost(model)
            if name == "xgboost"
            else Ensemble.from_lightgbm(model)
            if name == "lightgbm"
            else Ensemble.from_catboost(model)
            if name == "catboost"
            else Ensemble.from_sklearn(model)
        )
        out = ensemble.eval(X)
        p = out if ensemble.probability == "identity" else np.vectorize(sigmoid)(out)
        assert ensemble.probability == ("identity" if "forest" in name else "logistic"), name
        assert np.allclose(p, model.predict_proba(X)[:, 1], atol=1e-6), name
    dare = DareForest(n_trees=3, max_depth=3, random_state=0).fit(X, data[1])
    assert dare.to_ensemble().probability == "identity"


def test_an_objective_without_a_probability_is_none_and_an_ensemble_file_keeps_it(data, tmp_path):
    X, y = data
    raw = xgboost.XGBClassifier(n_estimators=2, objective="binary:logitraw").fit(X, y)
    assert Ensemble.from_xgboost(raw).probability == ""
    exponential = GradientBoostingClassifier(n_estimators=2, loss="exponential").fit(X, y)
    assert Ensemble.from_sklearn(exponential).probability == ""
    model = Ensemble.from_xgboost(fitted(data)["xgboost"][0])
    model.save(tmp_path / "m.json")
    assert Ensemble.load(tmp_path / "m.json").probability == "logistic"


def test_a_forests_probability_is_its_output_and_sums_of_it_are_linear(data):
    X, y = data
    a = RandomForestClassifier(n_estimators=3, max_depth=2, random_state=0).fit(X, y)
    b = RandomForestClassifier(n_estimators=3, max_depth=2, random_state=1).fit(X, y)
    spec = veritas_dsl.parse(
        """
        model a = sklearn
        model b = sklearn
        query both { input x  maximize proba(a, x) + proba(b, x)  solve with oracle }
        """,
        models={"a": a, "b": b},
    )
    (run,) = spec.run(timeout_s=30)
    x = run.result.witnesses[0].inputs["x"][None, :]
    expected = a.predict_proba(x)[0, 1] + b.predict_proba(x)[0, 1]
    assert run.result.upper == pytest.approx(expected)
    assert not run.lowered.origin.probability  # a forest's probability is its own scale


def test_a_probability_objective_is_reported_in_both_scales(data):
    booster = fitted(data)["xgboost"][0]
    spec = veritas_dsl.parse(
        "model clf = xgboost\nquery top { input x  maximize proba(clf, x)  solve with oracle }",
        models={"clf": booster},
    )
    runs = spec.run(timeout_s=30)
    (run,) = runs
    x = run.result.witnesses[0].inputs["x"][None, :]
    assert run.result.upper == pytest.approx(booster.predict(x, output_margin=True)[0], abs=1e-5)
    p = sigmoid(run.result.upper)
    assert p == pytest.approx(booster.predict_proba(x)[0, 1], abs=1e-6)
    document = json.loads(json_report.dumps(runs))
    bounds = document["results"][0]["probability"]
    assert bounds["lower"] <= p <= bounds["upper"]
    assert math.nextafter(bounds["lower"], 1) >= bounds["upper"]  # the exact value between
    assert problems(document, "run.schema.json") == []
    assert f"(probability {p:.6g})" in terminal.render(runs, "spec.ver")[0]


def test_a_batch_of_probability_objectives_sums_up_in_both_scales(tmp_path):
    (tmp_path / "rows.csv").write_text("f0\n0.25\n0.75\n")
    spec = veritas_dsl.parse(
        'model m = ensemble\ndata rows = csv "rows.csv"\n'
        "query q for r in rows[0:2] { input x  where x == r  maximize proba(m, x)  "
        "solve with oracle }",
        str(tmp_path / "spec.ver"),
        models={"m": boundary_model(0.7)},
    )
    runs = spec.run(timeout_s=30)
    low, high = margin_bound(0.7, ">"), margin_bound(0.7, ">=")
    summary = terminal.render(runs, "spec.ver")[0].splitlines()[-2]
    p_low, p_high = f"{sigmoid(low):.6g}", f"{sigmoid(high):.6g}"
    assert summary == (
        f"q: 2 rows: optimum min {low:.6g}, median {high:.6g}, max {high:.6g}"
        f" (probability {p_low}, {p_high}, {p_high}) (2 exact)"
    )


def test_a_probability_is_the_exact_logistic_of_the_margin_not_the_librarys_rounding():
    """docs/language.md: at the bound the library's rounded probability can equal the number
    compared with, where the exact one is above it (scikit-learn's predict_proba is expit)."""
    from scipy.special import expit

    z = margin_bound(0.7, ">=")  # the least float64 margin whose exact probability is > 0.7
    assert expit(z) == 0.7
    spec = veritas_dsl.parse(
        "model m = ensemble\nquery q { input x  where x.f0 >= 0.5 and proba(m, x) > 0.7  find"
        "  solve with oracle }",
        models={"m": boundary_model(0.7)},
    )
    (run,) = spec.run(timeout_s=30)
    assert run.result.solution.value == "optimal"
    assert float(np.float32(sigmoid(z))) < 0.7  # in float32, as XGBoost has it: 0.699999988


def test_an_ensemble_file_saved_before_the_scale_says_to_save_it_again(data, tmp_path):
    # its source still says "sklearn GradientBoostingClassifier": the help said only that
    # binary models with a logistic probability have one, which this one seemed to be
    model = Ensemble.from_sklearn(fitted(data)["sklearn gradient boosting"][0])
    model.save(tmp_path / "m.json")
    document = json.loads((tmp_path / "m.json").read_text())
    del document["probability"]
    (tmp_path / "m.json").write_text(json.dumps(document))
    with pytest.raises(veritas_dsl.SpecError) as error:
        veritas_dsl.parse(
            'model m = ensemble "m.json"\nquery q { input x  maximize proba(m, x) }',
            tmp_path / "s.ver",
        )
    (diagnostic,) = error.value.diagnostics
    assert diagnostic.code == "V340" and "save" in diagnostic.help, diagnostic.help


def exact_probability(z: float) -> Decimal:
    with localcontext() as ctx:
        ctx.prec = 80
        return 1 / (1 + (-Decimal(z)).exp())


# margins whose float64 sigmoid is below the exact probability (rounded twice): as the upper
# bound of a probability objective --json said it, the exact probability was above its "upper"
MARGINS = (0.8472978603872034, 1.86618, -0.4, 3.0, 40.0, -40.0, 300.0, -745.0, -800.0, 0.0)


@pytest.mark.parametrize("z", MARGINS)
def test_the_probability_bounds_of_json_enclose_the_exact_probability(z):
    low, high = probability_bounds(z)
    assert Decimal(low) <= exact_probability(z) <= Decimal(high)
    assert high == low or math.nextafter(low, 2) == high


def test_a_probability_objectives_json_upper_is_at_least_its_exact_probability():
    z = 0.8472978603872034
    assert Decimal(sigmoid(z)) < exact_probability(z)  # the case the report got wrong
    model = Ensemble(
        feature=[-1], threshold=[0.0], left=[-1], right=[-1], value=[[z]], tree_offsets=[0, 1],
        base_score=[0.0], feature_names=("f0",), task="binary", probability="logistic",
    )  # fmt: skip
    spec = veritas_dsl.parse(
        "model m = ensemble\nquery top { input x  maximize proba(m, x)  solve with oracle }",
        models={"m": model},
    )
    document = json.loads(json_report.dumps(spec.run(timeout_s=30)))
    bounds = document["results"][0]["probability"]
    assert Decimal(bounds["lower"]) < exact_probability(z) < Decimal(bounds["upper"])
