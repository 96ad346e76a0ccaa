"""A* and the MILP engine (HiGHS) side by side: median time to the exact answer per task.

    python bench/astar_vs_milp.py [--timeout 60] [--rows 10]

Models and tasks are those of bench/milp.py (XGBoost 100 x depth 6 and 200 x depth 4 on a
10-feature task): global max and min, closest L-inf adversarial example per row, and a fairness
gap over a protected bool feature. Every witness is validated; exact answers must agree.
"""

from __future__ import annotations

import argparse
import statistics

from milp import SHAPES, data, model, queries, run

from veritas_dsl.run import EngineDisagreement, cross_check
from veritas_dsl.solvers.astar.engine import AStarEngine
from veritas_dsl.solvers.milp.engine import MilpEngine


def median_or_none(times):
    return statistics.median(times) if times else None


def show(value):
    return "-" if value is None else f"{value:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--rows", type=int, default=10)
    args = parser.parse_args()
    engines = {"astar": AStarEngine(), "highs": MilpEngine("milp", "highs")}
    X, y = data()
    header = f"{'model':<7} {'task':<13} {'astar s':>9} {'highs s':>9} {'ratio':>8}"
    print(header + "  agree  exact (astar/highs)")
    for trees, depth in SHAPES:
        clf = model(X, y, trees, depth)
        tasks: dict[str, dict[str, list]] = {}
        for task, query in queries(clf, X, args.rows):
            entry = tasks.setdefault(task, {"astar": [], "highs": [], "agree": [], "n": 0})
            entry["n"] += 1
            exact = []
            for name, engine in engines.items():
                result, elapsed = run(engine, query, args.timeout)
                if result.exact:
                    entry[name].append(elapsed)
                    exact.append(result)
            if len(exact) == 2:
                try:
                    cross_check(query.name, exact)
                    entry["agree"].append(True)
                except EngineDisagreement:
                    entry["agree"].append(False)
        for task, entry in tasks.items():
            a, h = median_or_none(entry["astar"]), median_or_none(entry["highs"])
            ratio = f"{a / h:.4f}" if a and h else "-"
            agree = "-" if not entry["agree"] else "yes" if all(entry["agree"]) else "NO"
            exact = f"{len(entry['astar'])}/{len(entry['highs'])} of {entry['n']}"
            times = f"{show(a):>9} {show(h):>9} {ratio:>8}"
            print(f"{trees}x{depth:<4} {task:<13} {times}  {agree:<5}  {exact}")


if __name__ == "__main__":
    main()
