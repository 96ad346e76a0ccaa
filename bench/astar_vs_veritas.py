"""Our A* engine against dtai-veritas 0.3.1 (the VERITAS authors' C++ engine), side by side.

    pip install dtai-veritas==0.3.1      # for this benchmark only; never a dependency
    python bench/astar_vs_veritas.py [--models breast,digits,credit,mc54,mc28] [--rows 20]
    python bench/astar_vs_veritas.py --suite synthetic [--features 8] [--shapes 100x6,...]

Both engines run in one process on the same XGBoost models (``bench/veritas_suite.py`` trains
them). The default suite is issue 17's: breast cancer 100 x 6, digits 2 vs 6 200 x 4, a
credit-like 50 x 4 on 9 features, and two big ``make_classification`` models, 80 x 8 on 54
features and 300 x 8 on 28. ``--suite synthetic`` runs the older shapes (100 x 6, 200 x 4,
300 x 8, 1000 x 4 on ``--features`` generated features, feature 0 a protected attribute) and
its fairness task. Tasks:

* global maximum and minimum of the raw margin;
* the closest L-inf adversarial example (a change of the predicted class) for ``--rows`` rows
  (the last rows of the data);
* (synthetic suite) two-instance fairness: the largest margin gap between two inputs equal except
  in the protected feature (dtai-veritas: a ``FeatMap`` sharing every other feature).

Small models get ``--timeout`` seconds per instance; big ones ``--big-timeout`` for the extremes
and ``--row-timeout`` per adversarial row. Times are wall times of the solve (ours:
``AStarEngine.solve`` on a Query, after one warm-up solve so that JIT compilation is not
counted; theirs: building the search and stepping it, after the model was converted). As their
per-model conversion (``get_addtree``) is not timed, neither is our per-model build: the cells
and compacted trees of a model under the features' box, built once per model by
``AStarEngine.prepare`` before its first query and printed apart (``per-model build``).
Everything that depends on the query (its terms' leaf units, the problem arrays, the search,
the witness check) is timed. A small model's extremes are solved ``--repeats`` times, ours
each time on a fresh copy of the model (a first query on its model: nothing memoised from the
repeats before), and the median time and ratio are shown; a big model's once. On small
models dtai-veritas finds the extremes with plain A* (``focal_eps`` 1), its fastest exact search
there (its default focal search, ``focal_eps`` 0.8, often fails to prove the optimum in 10 s;
``--focal`` uses it everywhere); on big models, its default. For big models the summary gives
the first-solution time and the gap at the limit, ``(upper - lower) / max(|lower|, |upper|)``,
of both engines. dtai-veritas bisects the radius ten times for adversarial examples, so it
returns a bracket, not a distance. Its upper end is not always backed by a point, so we check
our exact distance against what it proves: at least its lower end, and at most the distance of
the closest example it actually returned. ``--startup`` also measures a cold start (empty Numba
cache) and a warm one (a fresh process reusing the cache).
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from veritas_suite import SUITE, dataset, synthetic, train

SHAPES = [(100, 6), (200, 4), (300, 8), (1000, 4)]


def quiet():
    """dtai-veritas prints as it converts and searches; keep the report readable."""
    return contextlib.redirect_stdout(io.StringIO())


def first_solution(result) -> float | None:
    """Seconds to our first complete solution: the first trace point with both bounds finite."""
    times = [p.time_s for p in result.trace if math.isfinite(p.lower) and math.isfinite(p.upper)]
    return min(times, default=None)


def gap(lower, upper) -> float:
    """``(upper - lower) / max(|lower|, |upper|)``; inf without both bounds."""
    if lower is None or upper is None or not (math.isfinite(lower) and math.isfinite(upper)):
        return math.inf
    scale = max(abs(lower), abs(upper))
    return 0.0 if upper == lower else (upper - lower) / scale


class Bench:
    def __init__(self, args) -> None:
        import veritas

        self.veritas = veritas
        self.args = args
        self.engine = AStarEngine()
        self.ratios: dict[str, list[float]] = {}
        self.rows: list[str] = []  # the per-model summary lines
        self.builds: list[float] = []  # seconds of our per-model builds of the current model

    def record(self, task: str, ours: float, theirs: float) -> float:
        ratio = ours / theirs
        self.ratios.setdefault(task, []).append(ratio)
        return ratio

    def solve(self, query: Query, timeout: float):
        start = time.perf_counter()
        result = self.engine.solve(query, Limits(timeout_s=timeout))
        elapsed = time.perf_counter() - start
        for witness in result.witnesses:
            validate_witness(query, witness)
        return result, elapsed

    def theirs(self, at, heuristic, timeout: float, focal_eps: float | None = None):
        """dtai-veritas on one extreme: (search, stop reason, seconds, lower, upper, first)."""
        v = self.veritas
        start = time.perf_counter()
        with quiet():
            config = v.Config(heuristic)
            if focal_eps is not None:
                config.focal_eps = focal_eps
            search = config.get_search(at)
            stop = search.step_for(timeout, 100)
        elapsed = time.perf_counter() - start
        n = search.num_solutions()
        best = search.get_solution(0).output if n else None
        bound = search.current_bounds().best
        first = min((search.get_solution(i).time for i in range(n)), default=None)
        maximize = heuristic == v.HeuristicType.MAX_OUTPUT
        lower, upper = (best, bound) if maximize else (bound, best)
        return search, stop, elapsed, lower, upper, first

    # -- tasks --------------------------------------------------------------------------

    def prepare(self, model, features) -> float:
        """Our per-model build (cells and compacted trees, :meth:`AStarEngine.prepare`), in
        seconds; dtai-veritas's per-model conversion (``get_addtree``) is not timed either."""
        term = OutputTerm((OutputAtom(1.0, "m", "x"),))
        query = Query("prepare", features, ("x",), {"m": model}, (), Maximize(term))
        seconds = self.engine.prepare(query)
        self.builds.append(seconds)
        return seconds

    def extremes(self, name, clf, at, features, timeout: float, big: bool = False):
        """Each extreme ``--repeats`` times (median times, median ratio), ours each time on a
        fresh copy of the model, prepared (:meth:`prepare`): a first query on its model."""
        v = self.veritas
        term = OutputTerm((OutputAtom(1.0, "m", "x"),))
        tasks = [
            ("global max", Maximize(term), v.HeuristicType.MAX_OUTPUT),
            ("global min", Minimize(term), v.HeuristicType.MIN_OUTPUT),
        ]
        runs: dict[str, list] = {task: [] for task, *_ in tasks}
        for _ in range(1 if big else self.args.repeats):
            model = Ensemble.from_xgboost(clf)
            self.prepare(model, features)
            for task, goal, heuristic in tasks:
                query = Query(task, features, ("x",), {"m": model}, (), goal)
                ours, t_ours = self.solve(query, timeout)
                eps = None if big or self.args.focal else 1.0
                theirs = self.theirs(at, heuristic, timeout, eps)
                runs[task].append((ours, t_ours, theirs, t_ours / theirs[2]))
        for task, _, heuristic in tasks:
            ours, _, (search, stop, _, lo, up, first), _ = runs[task][-1]
            t_ours = float(np.median([r[1] for r in runs[task]]))
            t_theirs = float(np.median([r[2][2] for r in runs[task]]))
            ratio = float(np.median([r[3] for r in runs[task]]))
            self.ratios.setdefault(f"{task} {name}", []).extend(r[3] for r in runs[task])
            best = lo if heuristic == v.HeuristicType.MAX_OUTPUT else up
            same = (
                ours.termination is Termination.OPTIMAL
                and search.is_optimal()
                and math.isclose(ours.lower, best, rel_tol=1e-6, abs_tol=1e-6)
            )
            line = (
                f"  {task:<10} {name:<7} ours {ours.termination.value:<10} "
                f"[{ours.lower:.6f}, {ours.upper:.6f}] {1e3 * t_ours:9.2f} ms | theirs "
                f"{stop.name.lower():<12} [{_f(lo)}, {_f(up)}] {1e3 * t_theirs:9.2f} ms | ratio "
                f"{ratio:7.3f}{'  same optimum' if same else ''}"
            )
            if big:
                ours_first, ours_gap = first_solution(ours), gap(ours.lower, ours.upper)
                their_gap = gap(lo, up)
                line += f"\n    first solution ours {_s(ours_first)} theirs {_s(first)}; "
                line += f"gap ours {100 * ours_gap:.2f} % theirs {100 * their_gap:.2f} %"
                self.rows.append(
                    f"  {name:<7} {task:<10} first solution ours {_s(ours_first)}, theirs "
                    f"{_s(first)}; gap at {timeout:g} s ours {100 * ours_gap:.2f} %, theirs "
                    f"{100 * their_gap:.2f} %"
                )
            print(line)

    def adversarial(self, name, model, at, features, X, timeout: float):
        v = self.veritas
        term = OutputTerm((OutputAtom(1.0, "m", "x"),))
        margins = model.eval(X)
        inside = exact = unbacked = 0
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
            ours, t_ours = self.solve(query, timeout)
            exact += ours.termination is Termination.OPTIMAL and ours.lower == ours.upper
            start = time.perf_counter()
            with quiet():
                search = v.VeritasRobustnessSearch(
                    row.astype(np.float64), self.args.start_delta,
                    at if positive else None, None if positive else at,
                    max_time=timeout, silent=True,
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
            ratio = self.record(f"closest linf {name}", t_ours, t_theirs)
            if i < self.args.show_rows:
                print(
                    f"  row {i:<3} {name:<7} ours {ours.termination.value} {ours.upper:.6f} "
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
        self.rows.append(
            f"  {name:<7} closest linf: {exact}/{len(X)} exact within {timeout:g} s, "
            f"{inside}/{len(X)} within what dtai-veritas proves; median {1e3 * mine:.1f} ms ours, "
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
        ours, t_ours = self.solve(query, self.args.timeout)
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
            print(f"  {task:<34} {np.median(ratios):8.3f}   over {len(ratios)} solves")
        if self.rows:
            print("\nper model")
            print("\n".join(self.rows))


def _f(value: float | None) -> str:
    return "none" if value is None else f"{value:.6f}"


def _s(seconds: float | None) -> str:
    return "none" if seconds is None else f"{1e3 * seconds:.1f} ms"


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
    parser.add_argument("--suite", choices=("issue17", "synthetic"), default="issue17")
    parser.add_argument("--models", default=",".join(s.name for s in SUITE))
    parser.add_argument("--features", type=int, default=8, help="synthetic suite")
    parser.add_argument("--shapes", default=",".join(f"{n}x{d}" for n, d in SHAPES))
    parser.add_argument("--rows", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5, help="small models' extremes")
    parser.add_argument("--show-rows", type=int, default=3, help="adversarial rows to print")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per instance")
    parser.add_argument("--big-timeout", type=float, default=5.0, help="big models' extremes")
    parser.add_argument("--row-timeout", type=float, default=2.0, help="big models, per row")
    parser.add_argument("--start-delta", type=float, default=10.0, help="dtai-veritas bisection")
    parser.add_argument("--tasks", default="extremes,adversarial,fairness")
    parser.add_argument("--focal", action="store_true", help="their focal search everywhere")
    parser.add_argument("--startup", action="store_true", help="also measure cold/warm starts")
    args = parser.parse_args()

    bench = Bench(args)
    tasks = args.tasks.split(",")
    if args.suite == "synthetic":
        X, y = synthetic(args.features)
        print(f"data: make_classification, {len(X)} rows, {args.features} features (0 protected)")
        runs = [
            (f"{n}x{d}", X, y, n, d, False)
            for n, d in (tuple(int(x) for x in s.split("x")) for s in args.shapes.split(","))
        ]
    else:
        chosen = args.models.split(",")
        runs = [
            (s.name, *dataset(s.name), s.n_trees, s.depth, s.big) for s in SUITE if s.name in chosen
        ]
    warm = True
    for name, X, y, n_trees, depth, big in runs:
        clf = train(X, y, n_trees, depth)
        model = Ensemble.from_xgboost(clf)
        with quiet():
            at = bench.veritas.get_addtree(clf)
        features = tuple(Feature(f) for f in model.feature_names)
        if warm:  # load (or compile) the kernels before anything is timed, on another model
            # (a throwaway one: the benchmark's models start with nothing memoised)
            term = OutputTerm((OutputAtom(1.0, "m", "x"),))
            other = Ensemble.from_xgboost(train(X, y, 3, 2))
            bench.solve(Query("warm-up", features, ("x",), {"m": other}, (), Maximize(term)), 60)
            warm = False
        print(
            f"\nmodel {name}: {n_trees} x {depth}, {model.n_trees} trees, {model.n_nodes} nodes, "
            f"{len(features)} features, {len(X)} rows"
        )
        bench.builds = []
        if "extremes" in tasks:
            timeout = args.big_timeout if big else args.timeout
            bench.extremes(name, clf, at, features, timeout, big)
        if "adversarial" in tasks:
            bench.prepare(model, features)
            timeout = args.row_timeout if big else args.timeout
            bench.adversarial(name, model, at, features, X[-args.rows :], timeout)
        if "fairness" in tasks and args.suite == "synthetic":
            bench.fairness(name, model, at, features)
        print(
            f"  per-model build (ours, not in the times above): median "
            f"{1e3 * float(np.median(bench.builds)):.2f} ms over {len(bench.builds)} builds"
        )
    bench.summary()
    if args.startup:
        startup()


if __name__ == "__main__":
    main()
