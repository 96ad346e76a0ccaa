"""Our A* engine against dtai-veritas 0.3.1 (the VERITAS authors' C++ engine), side by side.

    pip install dtai-veritas==0.3.1      # for this benchmark only; never a dependency
    python bench/astar_vs_veritas.py [--features 8] [--rows 20] [--timeout 10] [--startup]

Both engines run in one process on the same XGBoost models, trained here on a synthetic data set
(scikit-learn's ``make_classification``; feature 0 is made a binary protected attribute the labels
depend on). Shapes: 100 trees of depth 6, 200 x 4, 300 x 8, 1000 x 4. Tasks:

* global maximum and minimum of the raw margin;
* the closest L-inf adversarial example (a change of the predicted class) for ``--rows`` rows;
* two-instance fairness: the largest margin gap between two inputs equal except in the
  protected feature (dtai-veritas: a ``FeatMap`` sharing every other feature, ``concat_negated``).

For every instance both engines get ``--timeout`` seconds. Times are wall times of the solve
(ours: ``AStarEngine.solve`` on a Query, after one warm-up solve so that JIT compilation is not
counted; theirs: building the search and stepping it, after the model was converted). Each task
prints its instances, then the median ratio of our time to theirs. dtai-veritas bisects the
radius ten times for adversarial examples, so it returns a bracket, not a distance. Its upper
end is not always backed by a point (a bisection step that runs out of time counts as "an example
may exist"), so we check our exact distance against what it proves: at least its lower end, and at
most the distance of the closest example it actually returned. ``--startup`` also measures a
cold start (empty Numba cache, so the kernels compile) and a warm one (a fresh process reusing
the cache). ``--features 4`` gives models whose global extremes both engines prove.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import xgboost as xgb
from sklearn.datasets import make_classification

from veritas_dsl.ir import (
    DomainKind,
    Feature,
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
from veritas_dsl.ir.evaluate import distance
from veritas_dsl.model import Ensemble
from veritas_dsl.result import Termination
from veritas_dsl.solvers.astar.engine import AStarEngine
from veritas_dsl.solvers.base import Limits
from veritas_dsl.validate import validate_witness

SHAPES = [(100, 6), (200, 4), (300, 8), (1000, 4)]


def quiet():
    """dtai-veritas prints as it converts and searches; keep the report readable."""
    return contextlib.redirect_stdout(io.StringIO())


def data(n_features: int):
    X, y = make_classification(
        n_samples=3000, n_features=n_features, n_informative=n_features - 1, n_redundant=0,
        random_state=0,
    )  # fmt: skip
    rng = np.random.default_rng(0)
    X[:, 0] = X[:, 0] > 0
    y = np.where(rng.random(len(y)) < 0.15, X[:, 0], y)
    return X.astype(np.float32), y


def train(X, y, n_trees: int, depth: int):
    model = xgb.XGBClassifier(
        n_estimators=n_trees, max_depth=depth, learning_rate=0.3, tree_method="hist", n_jobs=2,
        random_state=0,
    )  # fmt: skip
    return model.fit(X, y)


class Bench:
    def __init__(self, args) -> None:
        import veritas

        self.veritas = veritas
        self.args = args
        self.engine = AStarEngine()
        self.limits = Limits(timeout_s=args.timeout)
        self.ratios: dict[str, list[float]] = {}

    def record(self, task: str, ours: float, theirs: float) -> float:
        ratio = ours / theirs
        self.ratios.setdefault(task, []).append(ratio)
        return ratio

    def solve(self, query: Query):
        start = time.perf_counter()
        result = self.engine.solve(query, self.limits)
        elapsed = time.perf_counter() - start
        for witness in result.witnesses:
            validate_witness(query, witness)
        return result, elapsed

    # -- tasks --------------------------------------------------------------------------

    def extremes(self, name, model, at, features):
        v = self.veritas
        term = OutputTerm((OutputAtom(1.0, "m", "x"),))
        for task, goal, heuristic in [
            ("global max", Maximize(term), v.HeuristicType.MAX_OUTPUT),
            ("global min", Minimize(term), v.HeuristicType.MIN_OUTPUT),
        ]:
            ours, t_ours = self.solve(Query(task, features, ("x",), {"m": model}, (), goal))
            start = time.perf_counter()
            with quiet():
                config = v.Config(heuristic)
                search = config.get_search(at)
                stop = search.step_for(self.args.timeout, 100)
            t_theirs = time.perf_counter() - start
            best = search.get_solution(0).output if search.num_solutions() else None
            bound = search.current_bounds().best
            theirs = f"best {best}, bound {bound:.6f}"
            same = (
                ours.termination is Termination.OPTIMAL
                and search.is_optimal()
                and math.isclose(ours.lower, best, rel_tol=1e-6, abs_tol=1e-6)
            )
            ratio = self.record(task, t_ours, t_theirs)
            print(
                f"  {task:<10} {name:<9} ours {ours.termination.value:<10} "
                f"[{ours.lower:.6f}, {ours.upper:.6f}] {1e3 * t_ours:9.1f} ms | theirs "
                f"{stop.name.lower():<12} {theirs} {1e3 * t_theirs:9.1f} ms | ratio {ratio:7.3f}"
                f"{'  same optimum' if same else ''}"
            )

    def adversarial(self, name, model, at, features, X):
        v = self.veritas
        term = OutputTerm((OutputAtom(1.0, "m", "x"),))
        margins = model.eval(X)
        inside = 0
        exact = 0
        unbacked = 0
        times = []
        for i, row in enumerate(X):
            positive = margins[i] > model.class_threshold
            flip = (
                OutputConstraint(term, "<=", 0.0) if positive else OutputConstraint(term, ">", 0.0)
            )
            query = Query(
                "adversarial", features, ("x",), {"m": model}, (flip,),
                MinimizeDistance("linf", "x", Row(tuple(row.tolist()))),
            )  # fmt: skip
            ours, t_ours = self.solve(query)
            exact += ours.termination is Termination.OPTIMAL and ours.lower == ours.upper
            start = time.perf_counter()
            with quiet():
                search = v.VeritasRobustnessSearch(
                    row.astype(np.float64), self.args.start_delta,
                    at if positive else None, None if positive else at,
                    max_time=self.args.timeout, silent=True,
                )  # fmt: skip
                _, lo, up = search.search()
            t_theirs = time.perf_counter() - start
            times.append((t_ours, t_theirs))
            found = [
                distance("linf", np.asarray(e, dtype=np.float32), row)
                for e in search.generated_examples
            ]
            closest = min(found, default=math.inf)
            unbacked += closest > up + 1e-6
            ok = lo - 1e-6 <= ours.lower and ours.upper <= closest + 1e-6
            inside += ok
            ratio = self.record("closest linf adversarial", t_ours, t_theirs)
            if i < self.args.show_rows:
                print(
                    f"  row {i:<3} {name:<9} ours {ours.termination.value} {ours.upper:.6f} "
                    f"{1e3 * t_ours:8.1f} ms | theirs [{lo:.6f}, {up:.6f}] {1e3 * t_theirs:8.1f} "
                    f"ms | ratio {ratio:6.3f}{'' if ok else '  OUTSIDE what they prove'}"
                )
        mine, theirs = np.median(np.array(times), axis=0)
        print(
            f"  adversarial {name}: {exact}/{len(X)} exact; {inside}/{len(X)} within what "
            f"dtai-veritas proves (its lower end, its closest example); {unbacked} of its upper "
            f"ends below any example it found; median {1e3 * mine:.1f} ms ours, "
            f"{1e3 * theirs:.1f} ms theirs"
        )

    def fairness(self, name, model, at, features):
        v = self.veritas
        n = len(features)
        kinds = tuple(
            Feature(f.name, DomainKind.BOOL if i == 0 else f.kind) for i, f in enumerate(features)
        )
        gap = OutputTerm((OutputAtom(1.0, "m", "x2"), OutputAtom(-1.0, "m", "x1")))
        ties = tuple(Tie("x1", "x2", f) for f in range(1, n))
        query = Query("fairness", kinds, ("x1", "x2"), {"m": model}, ties, Maximize(gap))
        ours, t_ours = self.solve(query)
        start = time.perf_counter()
        with quiet():
            fmap = v.FeatMap([f.name for f in features])
            for f in range(1, n):
                fmap.use_same_id_for(fmap.get_index(f, 0), fmap.get_index(f, 1))
            contrast = fmap.transform(at, 1).concat_negated(fmap.transform(at, 0))
            # dtai-veritas intervals are half-open, and XGBoost splits a 0/1 feature at 1
            protected = [(0, v.Interval(0, 2)), (fmap.get_index(0, 1), v.Interval(0, 2))]
            search = v.Config(v.HeuristicType.MAX_OUTPUT).get_search(contrast, protected)
            stop = search.step_for(self.args.timeout, 100)
        t_theirs = time.perf_counter() - start
        best = search.get_solution(0).output if search.num_solutions() else None
        bound = search.current_bounds().best
        ratio = self.record("fairness", t_ours, t_theirs)
        same = search.is_optimal() and math.isclose(ours.lower, best, rel_tol=1e-6, abs_tol=1e-6)
        print(
            f"  fairness   {name:<9} ours {ours.termination.value:<10} "
            f"[{ours.lower:.6f}, {ours.upper:.6f}] {1e3 * t_ours:9.1f} ms | theirs "
            f"{stop.name.lower():<12} best {best}, bound {bound:.6f} {1e3 * t_theirs:9.1f} ms"
            f" | ratio {ratio:7.3f}{'  same optimum' if same else ''}"
        )

    def summary(self) -> None:
        print("\nmedian time ratio ours / theirs (below 1: we are faster)")
        for task, ratios in self.ratios.items():
            print(f"  {task:<26} {np.median(ratios):8.3f}   over {len(ratios)} instances")


STARTUP = """
import time
start = time.perf_counter()
from veritas_dsl.ir import Feature, Maximize, OutputAtom, OutputTerm, Query
from veritas_dsl.model import Ensemble
from veritas_dsl.solvers.astar.engine import AStarEngine
imported = time.perf_counter()
model = Ensemble.from_xgboost({path!r})
features = tuple(Feature(name) for name in model.feature_names)
goal = Maximize(OutputTerm((OutputAtom(1.0, "m", "x"),)))
result = AStarEngine().solve(Query("q", features, ("x",), {{"m": model}}, (), goal))
done = time.perf_counter()
print(imported - start, done - imported, done - start, result.termination.value)
"""


def startup() -> None:
    """Cold (empty Numba cache: compile) and warm (fresh process, cache reused) starts."""
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "..", "examples", "models", "credit.json")
    code = STARTUP.format(path=path)
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        print("\nstartup: global max of examples/models/credit.json in a fresh process")
        for label in ("cold (compiles)", "warm (cached)", "warm (cached)"):
            began = time.perf_counter()
            out = subprocess.run(
                [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
            ).stdout.split()
            wall = time.perf_counter() - began
            seconds = [float(x) for x in out[:3]]
            print(
                f"  {label:<16} import {seconds[0]:.2f} s, first solve {seconds[1]:.2f} s, "
                f"process {wall:.2f} s ({out[3]})"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--features", type=int, default=8)
    parser.add_argument("--rows", type=int, default=20)
    parser.add_argument("--show-rows", type=int, default=3, help="adversarial rows to print")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per instance")
    parser.add_argument("--start-delta", type=float, default=10.0, help="dtai-veritas bisection")
    parser.add_argument("--shapes", default=",".join(f"{n}x{d}" for n, d in SHAPES))
    parser.add_argument("--tasks", default="extremes,adversarial,fairness")
    parser.add_argument("--startup", action="store_true", help="also measure cold/warm starts")
    args = parser.parse_args()

    X, y = data(args.features)
    bench = Bench(args)
    print(f"data: make_classification, {len(X)} rows, {args.features} features (0 protected)")
    warm = True
    for shape in args.shapes.split(","):
        n_trees, depth = (int(s) for s in shape.split("x"))
        clf = train(X, y, n_trees, depth)
        model = Ensemble.from_xgboost(clf)
        with quiet():
            at = bench.veritas.get_addtree(clf)
        features = tuple(Feature(name) for name in model.feature_names)
        name = f"{n_trees}x{depth}"
        if warm:  # one solve to load (or compile) the kernels before anything is timed
            term = OutputTerm((OutputAtom(1.0, "m", "x"),))
            bench.solve(Query("warm-up", features, ("x",), {"m": model}, (), Maximize(term)))
            warm = False
        print(f"\nmodel {name}: {model.n_trees} trees, {model.n_nodes} nodes")
        tasks = args.tasks.split(",")
        if "extremes" in tasks:
            bench.extremes(name, model, at, features)
        if "adversarial" in tasks:
            bench.adversarial(name, model, at, features, X[-args.rows :])
        if "fairness" in tasks:
            bench.fairness(name, model, at, features)
    bench.summary()
    if args.startup:
        startup()


if __name__ == "__main__":
    main()
