"""SAT timings: the exact SAT engine's time to the exact answer on medium XGBoost models.

    python bench/sat.py [--timeout SECONDS] [--rows N] [--eps EPS] [--all]

Trains XGBoost models of two shapes (100 trees of depth 6, 200 of depth 4) on synthetic data made
here (the recipe of ``bench/milp.py``: 10 features, feature 0 a 0/1 attribute, logistic loss,
learning rate 0.1, seed 0; so the models are the same and times compare). Per model it times:

* the global maximum and minimum of the margin, with the sanity check that needs no brute force:
  the optimum must equal ``Ensemble.eval`` at the engine's witness (and the witness reproduces
  on the XGBoost booster, ``validate_witness``);
* an L-inf robustness check (prove) for N test rows: every input within EPS of the row keeps the
  row's predicted class; prints how many hold and the times;
* with ``--all``: the closest L-inf adversarial example per row and the two-instance fairness gap
  of ``bench/milp.py``.

A solve that reaches the timeout prints its bounds (status ``time_limit``).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import xgboost as xgb

from veritas_dsl.ir import (
    Ball,
    DomainKind,
    Feature,
    Interval,
    Maximize,
    Minimize,
    MinimizeDistance,
    OutputAtom,
    OutputConstraint,
    OutputTerm,
    Prove,
    Query,
    Row,
    Tie,
)
from veritas_dsl.model import Ensemble
from veritas_dsl.result import Termination
from veritas_dsl.solvers.base import Limits
from veritas_dsl.solvers.sat.engine import SatEngine
from veritas_dsl.validate import validate_witness

SHAPES = [(100, 6), (200, 4)]
N_FEATURES = 10


def data(n: int = 5000):
    """A synthetic binary task; feature 0 is a 0/1 attribute the label leans on."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, N_FEATURES)).astype(np.float32)
    X[:, 0] = rng.integers(0, 2, n)
    score = X[:, 1] + X[:, 2] * X[:, 3] - np.abs(X[:, 4]) + 0.5 * X[:, 0] + np.sin(2 * X[:, 5])
    y = (score + 0.3 * rng.normal(size=n) > 0).astype(int)
    return X, y


def train(X, y, trees: int, depth: int) -> Ensemble:
    params = {"max_depth": depth, "eta": 0.1, "objective": "binary:logistic", "seed": 0}
    return Ensemble.from_xgboost(xgb.train(params, xgb.DMatrix(X, y), num_boost_round=trees))


def features(clf: Ensemble) -> tuple[Feature, ...]:
    kinds = [DomainKind.BOOL] + [DomainKind.REAL] * (N_FEATURES - 1)
    return tuple(Feature(n, k) for n, k in zip(clf.feature_names, kinds, strict=True))


def margin(instance: str = "x", coef: float = 1.0) -> OutputTerm:
    return OutputTerm((OutputAtom(coef, "clf", instance),))


def solve(query: Query, timeout: float):
    start = time.perf_counter()
    result = SatEngine().solve(query, Limits(timeout_s=timeout))
    elapsed = time.perf_counter() - start
    for witness in result.witnesses:
        validate_witness(query, witness)  # reproduces on the XGBoost booster
    return result, elapsed


def extremes(clf: Ensemble, timeout: float) -> None:
    for goal in (Maximize, Minimize):
        query = Query(goal.__name__, features(clf), ("x",), {"clf": clf}, (), goal(margin()))
        result, elapsed = solve(query, timeout)
        line = f"{result.termination.value} [{result.lower:.10g}, {result.upper:.10g}]"
        if result.witnesses:
            at_witness = float(clf.eval(result.witnesses[0].inputs["x"][None, :])[0])
            agrees = at_witness == (result.lower if goal is Maximize else result.upper)
            line += f"; eval at witness {at_witness:.10g} ({'equal' if agrees else 'DIFFERS'})"
        calls = result.stats["solver_calls"]
        print(f"  {goal.__name__.lower():<10}{elapsed:9.2f} s  {line} ({calls} SAT calls)")


def robustness(clf: Ensemble, X: np.ndarray, rows: int, eps: float, timeout: float) -> None:
    times, verdicts = [], []
    for i in range(rows):
        row = Row(tuple(float(v) for v in X[i]), label=f"test[{i}]")
        positive = clf.eval(X[i : i + 1])[0] > clf.class_threshold
        keeps = OutputConstraint(margin(), ">" if positive else "<=", clf.class_threshold)
        ball = Ball("linf", "x", row, eps)
        query = Query(f"robust{i}", features(clf), ("x",), {"clf": clf}, (ball,), Prove((keeps,)))
        result, elapsed = solve(query, timeout)
        times.append(elapsed)
        verdicts.append(
            {
                Termination.INFEASIBLE: "holds",
                Termination.OPTIMAL: "counterexample",
            }.get(result.termination, result.termination.value)
        )
    summary = ", ".join(f"{v} {verdicts.count(v)}" for v in sorted(set(verdicts)))
    print(
        f"  {'robust':<10}{statistics.median(times):9.2f} s  median of {rows} rows "
        f"(max {max(times):.2f} s), eps {eps:g}: {summary}"
    )


def closest(clf: Ensemble, X: np.ndarray, rows: int, timeout: float) -> None:
    times, answers = [], []
    for i in range(rows):
        row = Row(tuple(float(v) for v in X[i]), label=f"test[{i}]")
        flip = "<=" if clf.eval(X[i : i + 1])[0] > 0 else ">"
        query = Query(
            f"adv{i}",
            features(clf),
            ("x",),
            {"clf": clf},
            (OutputConstraint(margin(), flip, 0.0),),
            MinimizeDistance("linf", "x", row),
        )
        result, elapsed = solve(query, timeout)
        times.append(elapsed)
        answers.append(f"{result.upper:.4g}" if result.exact else result.termination.value)
    print(
        f"  {'closest':<10}{statistics.median(times):9.2f} s  median of {rows} rows "
        f"(max {max(times):.2f} s); distances {', '.join(answers)}"
    )


def fairness(clf: Ensemble, timeout: float) -> None:
    gap = OutputTerm((OutputAtom(1.0, "clf", "x2"), OutputAtom(-1.0, "clf", "x1")))
    same = tuple(Tie("x1", "x2", f) for f in range(1, N_FEATURES))
    groups = (Interval("x1", 0, 0.0, 0.0), Interval("x2", 0, 1.0, 1.0))
    query = Query("fair", features(clf), ("x1", "x2"), {"clf": clf}, same + groups, Maximize(gap))
    result, elapsed = solve(query, timeout)
    print(
        f"  {'fairness':<10}{elapsed:9.2f} s  "
        f"{result.termination.value} [{result.lower:.10g}, {result.upper:.10g}]"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--rows", type=int, default=10)
    parser.add_argument("--eps", type=float, default=0.1)
    parser.add_argument("--all", action="store_true", help="also closest examples and fairness")
    args = parser.parse_args()
    X, y = data()
    print(
        f"SAT engine (CaDiCaL 1.9.5 + exact sum propagator); timeout {args.timeout:g} s per solve"
    )
    for trees, depth in SHAPES:
        clf = train(X, y, trees, depth)
        print(f"model {trees} trees x depth {depth} ({clf.n_nodes} nodes)")
        extremes(clf, args.timeout)
        robustness(clf, X, args.rows, args.eps, args.timeout)
        if args.all:
            closest(clf, X, args.rows, args.timeout)
            fairness(clf, args.timeout)


if __name__ == "__main__":
    main()
