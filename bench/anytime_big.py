"""Anytime quality on big models: our A* engine and dtai-veritas 0.3.1 side by side (issue 17).

    pip install dtai-veritas==0.3.1      # for this benchmark only; never a dependency
    python bench/anytime_big.py [--timeout 5] [--rows 20] [--row-timeout 2] [--tasks ...]

Two XGBoost models trained on ``make_classification`` data (3000 rows, seed 0; feature 0 made a
binary attribute the labels depend on; XGBoost ``random_state=0``, learning rate 0.3, ``hist``):
80 trees of depth 8 on 54 features, and 300 x 8 on 28 features. Tasks:

* global max and global min of the raw margin with ``--timeout`` seconds each: the time of the
  first solution, the bounds at the limit and the gap (``(upper - lower) / |incumbent|``, the
  incumbent being the lower bound of a max and the upper bound of a min), ours and theirs;
* the engine's memory: arena bytes per state (``stats["bytes_per_state"]``) and the peak of all
  it allocated over the peak number of open states;
* the closest L-inf adversarial example (a change of the predicted class) of the last ``--rows``
  rows of the 300 x 8 model, ``--row-timeout`` seconds each: how many we prove exact, and the
  median time; dtai-veritas bisects the radius and returns a bracket (never a proof of one
  distance), so its median time and bracket width are shown.

Our times are the engine's wall times (after one warm-up solve, so Numba's compilation is not
counted); theirs are building the search and stepping it, after the model was converted.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import math
import time
from dataclasses import replace

import numpy as np
import xgboost as xgb
from sklearn.datasets import make_classification

from veritas_dsl.ir import (
    Feature,
    Maximize,
    Minimize,
    MinimizeDistance,
    OutputAtom,
    OutputConstraint,
    OutputTerm,
    Query,
    Row,
)
from veritas_dsl.model import Ensemble
from veritas_dsl.result import Termination
from veritas_dsl.solvers.astar.engine import AStarEngine
from veritas_dsl.solvers.base import Limits
from veritas_dsl.validate import validate_witness

#: (features, trees, depth)
MODELS = [(54, 80, 8), (28, 300, 8)]
TERM = OutputTerm((OutputAtom(1.0, "m", "x"),))


def quiet():
    """dtai-veritas prints as it converts and searches."""
    return contextlib.redirect_stdout(io.StringIO())


def model_of(n_features: int, n_trees: int, depth: int):
    """The data set (seed 0) and the XGBoost model of one shape."""
    X, y = make_classification(
        n_samples=3000, n_features=n_features, n_informative=n_features - 1, n_redundant=0,
        random_state=0,
    )  # fmt: skip
    rng = np.random.default_rng(0)
    X[:, 0] = X[:, 0] > 0
    y = np.where(rng.random(len(y)) < 0.15, X[:, 0], y)
    X = X.astype(np.float32)
    clf = xgb.XGBClassifier(
        n_estimators=n_trees, max_depth=depth, learning_rate=0.3, tree_method="hist", n_jobs=2,
        random_state=0,
    ).fit(X, y)  # fmt: skip
    return X, clf


def root_queries(models: str):
    """For each ``FEATURES:TREESxDEPTH`` of ``models`` (comma-separated), the model of
    :func:`model_of` and the maximisation of its margin and of its negation (a min is the max of
    the negated model): yields ``(label, task, model, query)``. Used by the root-bound benches."""
    for spec in models.split(","):
        n_features, shape = spec.split(":")
        n_trees, depth = (int(s) for s in shape.split("x"))
        base = Ensemble.from_xgboost(model_of(int(n_features), n_trees, depth)[1])
        negated = replace(base, value=-base.value, base_score=-base.base_score, library=None)
        for task, model in (("max", base), ("min", negated)):
            features = tuple(Feature(name) for name in model.feature_names)
            yield f"{n_features}f {shape}", task, model, Query(
                task, features, ("x",), {"m": model}, (), Maximize(TERM)
            )


def gap(lower: float, upper: float, incumbent: float) -> float:
    if not (math.isfinite(lower) and math.isfinite(upper)):
        return math.inf
    return (upper - lower) / abs(incumbent) if incumbent else math.inf


def first_solution(result) -> float:
    """Seconds to our first witness: the first trace point with a finite incumbent."""
    for point in result.trace:
        if math.isfinite(point.lower) and math.isfinite(point.upper):
            return point.time_s
    return math.inf


def solve(engine, query, limits):
    start = time.perf_counter()
    result = engine.solve(query, limits)
    elapsed = time.perf_counter() - start
    for witness in result.witnesses:
        validate_witness(query, witness)
    return result, elapsed


def extremes(veritas, name, model, at, features, timeout, engine):
    for task, goal, heuristic in [
        ("max", Maximize(TERM), veritas.HeuristicType.MAX_OUTPUT),
        ("min", Minimize(TERM), veritas.HeuristicType.MIN_OUTPUT),
    ]:
        query = Query(task, features, ("x",), {"m": model}, (), goal)
        ours, _ = solve(engine, query, Limits(timeout_s=timeout))
        incumbent = ours.lower if task == "max" else ours.upper
        g_ours = gap(ours.lower, ours.upper, incumbent)
        with quiet():
            search = veritas.Config(heuristic).get_search(at)
            search.step_for(timeout, 100)
        n = search.num_solutions()
        t_first = search.get_solution(0).time if n else math.inf
        bounds = search.current_bounds()
        # max: atleast is the incumbent, best the bound; min: the other way round (both in the
        # objective's own sign)
        if task == "max":
            lo, up = bounds.atleast, bounds.best
        else:
            lo, up = bounds.best, bounds.atleast
        inc = lo if task == "max" else up
        g_theirs = gap(lo, up, inc) if n else math.inf
        print(
            f"  {name:<12} {task}  ours first {1e3 * first_solution(ours):7.1f} ms "
            f"[{ours.lower:.4f}, {ours.upper:.4f}] gap {100 * g_ours:5.2f} % "
            f"({ours.termination.value}, {ours.stats['states_expanded']} expanded, "
            f"{ours.stats['bytes_per_state']} B/state in the arena, "
            f"{ours.stats['peak_memory_bytes'] / max(ours.stats['peak_open_states'], 1):.0f} B "
            f"per open state at the peak) | theirs first {1e3 * t_first:7.1f} ms "
            f"[{lo:.4f}, {up:.4f}] gap {100 * g_theirs:5.2f} %",
            flush=True,
        )


def adversarial(veritas, name, model, at, features, rows, timeout, engine):
    margins = model.eval(rows)
    exact = 0
    times = []
    widths = []
    for i, row in enumerate(rows):
        positive = margins[i] > model.class_threshold
        flip = OutputConstraint(TERM, "<=", 0.0) if positive else OutputConstraint(TERM, ">", 0.0)
        query = Query(
            "adversarial", features, ("x",), {"m": model}, (flip,),
            MinimizeDistance("linf", "x", Row(tuple(row.tolist()))),
        )  # fmt: skip
        ours, t_ours = solve(engine, query, Limits(timeout_s=timeout))
        exact += ours.termination is Termination.OPTIMAL
        start = time.perf_counter()
        with quiet():
            search = veritas.VeritasRobustnessSearch(
                row.astype(np.float64), 10.0,
                at if positive else None, None if positive else at,
                max_time=timeout, silent=True,
            )  # fmt: skip
            _, lo, up = search.search()
        times.append((t_ours, time.perf_counter() - start))
        widths.append(up - lo)
    mine, theirs = np.median(np.array(times), axis=0)
    print(
        f"  {name:<12} closest linf: ours {exact}/{len(rows)} exact within {timeout:g} s, median "
        f"{1e3 * mine:.0f} ms | theirs median {1e3 * theirs:.0f} ms, median bracket width "
        f"{np.median(widths):.2e}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--timeout", type=float, default=5.0, help="seconds per global max/min")
    parser.add_argument("--rows", type=int, default=20)
    parser.add_argument("--row-timeout", type=float, default=2.0)
    parser.add_argument("--tasks", default="extremes,adversarial")
    parser.add_argument("--models", default=",".join(f"{f}:{n}x{d}" for f, n, d in MODELS))
    args = parser.parse_args()
    import veritas

    engine = AStarEngine()
    tasks = args.tasks.split(",")
    for spec in args.models.split(","):
        n_features, shape = spec.split(":")
        n_trees, depth = (int(s) for s in shape.split("x"))
        X, clf = model_of(int(n_features), n_trees, depth)
        model = Ensemble.from_xgboost(clf)
        with quiet():
            at = veritas.get_addtree(clf)
        features = tuple(Feature(name) for name in model.feature_names)
        name = f"{n_features}f {shape}"
        solve(engine, Query("warm-up", features, ("x",), {"m": model}, (), Maximize(TERM)),
              Limits(timeout_s=0.5))  # fmt: skip
        print(f"model {name}: {model.n_trees} trees, {model.n_nodes} nodes", flush=True)
        if "extremes" in tasks:
            extremes(veritas, name, model, at, features, args.timeout, engine)
        if "adversarial" in tasks and n_trees >= 300:
            adversarial(veritas, name, model, at, features, X[-args.rows :], args.row_timeout,
                        engine)  # fmt: skip


if __name__ == "__main__":
    main()
