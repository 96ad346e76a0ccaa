"""MILP timings: HiGHS (and Gurobi, where its licence allows the model) to the exact answer.

    python bench/milp.py [--timeout SECONDS] [--rows N]

Trains XGBoost models of two shapes (100 trees of depth 6, 200 of depth 4) on synthetic data made
here, then times, per model: the global maximum and minimum of the margin, the closest L-inf
adversarial example for N test rows (a change of predicted class), and a two-instance fairness
query (two inputs equal except for a binary protected feature; the largest margin gap). Every
witness is validated on the XGBoost booster. A solve that hits the timeout prints its bounds.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import xgboost as xgb

from veritas_dsl.ir import (
    DomainKind,
    Feature,
    Interval,
    Maximize,
    Minimize,
    MinimizeDistance,
    OutputAtom,
    OutputConstraint,
    OutputTerm,
    Query,
    Row,
    Tie,
)
from veritas_dsl.model import Ensemble
from veritas_dsl.result import Termination
from veritas_dsl.solvers.base import Limits
from veritas_dsl.solvers.milp import gurobi
from veritas_dsl.solvers.milp.engine import MilpEngine
from veritas_dsl.validate import validate_witness

SHAPES = [(100, 6), (200, 4)]
N_FEATURES = 10


def data(n: int = 5000):
    """Synthetic binary task; feature 0 is a 0/1 protected attribute the label leans on."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, N_FEATURES)).astype(np.float32)
    X[:, 0] = rng.integers(0, 2, n)
    score = X[:, 1] + X[:, 2] * X[:, 3] - np.abs(X[:, 4]) + 0.5 * X[:, 0] + np.sin(2 * X[:, 5])
    y = (score + 0.3 * rng.normal(size=n) > 0).astype(int)
    return X, y


def model(X, y, trees: int, depth: int) -> Ensemble:
    params = {"max_depth": depth, "eta": 0.1, "objective": "binary:logistic", "seed": 0}
    return Ensemble.from_xgboost(xgb.train(params, xgb.DMatrix(X, y), num_boost_round=trees))


def features(clf: Ensemble) -> tuple[Feature, ...]:
    kinds = [DomainKind.BOOL] + [DomainKind.REAL] * (N_FEATURES - 1)
    return tuple(Feature(n, k) for n, k in zip(clf.feature_names, kinds, strict=True))


def margin(instance: str = "x", coef: float = 1.0) -> OutputAtom:
    return OutputAtom(coef, "clf", instance)


def queries(clf: Ensemble, X: np.ndarray, rows: int):
    feats = features(clf)
    out = OutputTerm((margin(),))
    yield "max", Query("max", feats, ("x",), {"clf": clf}, (), Maximize(out))
    yield "min", Query("min", feats, ("x",), {"clf": clf}, (), Minimize(out))
    for i in range(rows):
        row = Row(tuple(float(v) for v in X[i]), label=f"test[{i}]")
        flip = "<=" if clf.eval(X[i : i + 1])[0] > 0 else ">"
        yield (
            "closest linf",
            Query(
                f"adv{i}",
                feats,
                ("x",),
                {"clf": clf},
                (OutputConstraint(out, flip, 0.0),),
                MinimizeDistance("linf", "x", row),
            ),
        )
    gap = OutputTerm((margin("x2"), margin("x1", -1.0)))
    same = tuple(Tie("x1", "x2", f) for f in range(1, N_FEATURES))
    groups = (Interval("x1", 0, 0.0, 0.0), Interval("x2", 0, 1.0, 1.0))
    yield (
        "fairness",
        Query("fair", feats, ("x1", "x2"), {"clf": clf}, same + groups, Maximize(gap)),
    )


def run(engine: MilpEngine, query: Query, timeout: float):
    start = time.perf_counter()
    result = engine.solve(query, Limits(timeout_s=timeout))
    elapsed = time.perf_counter() - start
    for witness in result.witnesses:
        validate_witness(query, witness)
    return result, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--rows", type=int, default=10)
    args = parser.parse_args()
    X, y = data()
    licence = gurobi.licence()
    engines = [MilpEngine("highs", "highs")]
    if licence:
        engines.append(MilpEngine("gurobi", "gurobi"))
    print(f"gurobi licence: {licence.value}; timeout {args.timeout:g} s per solve")
    print(f"{'model':<8}{'task':<14}{'solver':<8}{'time (s)':>22}  answer")
    for trees, depth in SHAPES:
        clf = model(X, y, trees, depth)
        shape = f"{trees}x{depth}"
        by_task: dict[tuple[str, str], list] = {}
        for task, query in queries(clf, X, args.rows):
            for engine in engines:
                by_task.setdefault((task, engine.name), []).append(run(engine, query, args.timeout))
        for (task, solver), runs in by_task.items():
            print(f"{shape:<8}{task:<14}{solver:<8}{summary(runs)}")


def summary(runs) -> str:
    """Time to the answer and the answer, for one task (several rows for closest examples)."""
    refused = [result for result, _ in runs if result.termination is Termination.LICENCE_LIMIT]
    runs = [
        (result, t) for result, t in runs if result.termination is not Termination.LICENCE_LIMIT
    ]
    if refused:
        note = f"; {len(refused)} beyond the licence ({refused[0].message.split(': ', 1)[-1]})"
        if not runs:
            return f"{'-':>22}  {note[2:]}"
        return summary(runs) + note
    times = [t for _, t in runs]
    columns = max(result.stats.get("columns", 0) for result, _ in runs)
    if len(runs) == 1:
        result = runs[0][0]
        answer = f"{result.termination.value} [{result.lower:.6g}, {result.upper:.6g}]"
        return f"{times[0]:>22.2f}  {answer} ({columns} columns)"
    exact = sum(result.exact for result, _ in runs)
    when = f"median {statistics.median(times):.2f} (max {max(times):.1f})"
    values = ", ".join(f"{result.upper:.4g}" for result, _ in runs if result.exact)
    return f"{when:>22}  {exact}/{len(runs)} exact; distances {values} (<= {columns} columns)"


if __name__ == "__main__":
    main()
