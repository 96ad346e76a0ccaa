"""The exact engines side by side: median time to the exact answer per task, A* against HiGHS,
with the SAT engine beside them.

    python bench/astar_vs_milp.py [--timeout 60] [--rows 10] [--engines astar,highs,sat]

Models and tasks are those of bench/milp.py (XGBoost 100 x depth 6 and 200 x depth 4 on a
10-feature task): global max and min, closest L-inf adversarial example per row, and a fairness
gap over a protected bool feature. Every witness is validated on the XGBoost booster; every exact
answer of every engine must agree with every other on the same query (the cross-check of
``ver run``). Ratios are each engine's median over HiGHS's, on the queries both answered exactly.
"""

from __future__ import annotations

import argparse
import statistics

from milp import SHAPES, data, model, queries, run

from veritas_dsl.run import EngineDisagreement, cross_check
from veritas_dsl.solvers.astar.engine import AStarEngine
from veritas_dsl.solvers.milp.engine import MilpEngine
from veritas_dsl.solvers.sat.engine import SatEngine

ENGINES = {
    "astar": AStarEngine,
    "highs": lambda: MilpEngine("milp", "highs"),
    "sat": SatEngine,
}
REFERENCE = "highs"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--rows", type=int, default=10)
    parser.add_argument("--engines", default="astar,highs,sat")
    args = parser.parse_args()
    names = args.engines.split(",")
    engines = {name: ENGINES[name]() for name in names}
    others = [name for name in names if name != REFERENCE]
    X, y = data()
    print(f"timeout {args.timeout:g} s per solve; median seconds to the exact answer")
    columns = "".join(f"{name + ' s':>10}" for name in names)
    ratios = "".join(f"{name + '/' + REFERENCE:>12}" for name in others if REFERENCE in names)
    print(f"{'model':<7} {'task':<13}{columns}{ratios}  agree  exact of n")
    for trees, depth in SHAPES:
        clf = model(X, y, trees, depth)
        tasks: dict[str, list[dict]] = {}
        for task, query in queries(clf, X, args.rows):
            times, exact = {}, []
            for name, engine in engines.items():
                result, elapsed = run(engine, query, args.timeout)
                if result.exact:
                    times[name] = elapsed
                    exact.append(result)
            agree = None
            if len(exact) > 1:
                try:
                    cross_check(query.name, exact)
                    agree = True
                except EngineDisagreement:
                    agree = False
            tasks.setdefault(task, []).append({"times": times, "agree": agree})
        for task, entries in tasks.items():
            print(f"{trees}x{depth:<4} {task:<13}{line(names, others, entries)}")


def line(names: list[str], others: list[str], entries: list[dict]) -> str:
    medians = "".join(f"{show(median(entries, name)):>10}" for name in names)
    ratios = ""
    if REFERENCE in names:
        for name in others:
            both = [e for e in entries if name in e["times"] and REFERENCE in e["times"]]
            mine, theirs = median(both, name), median(both, REFERENCE)
            ratios += f"{show(mine / theirs if mine and theirs else None, 4):>12}"
    verdicts = [e["agree"] for e in entries if e["agree"] is not None]
    agree = "-" if not verdicts else "yes" if all(verdicts) else "NO"
    counts = "/".join(str(sum(name in e["times"] for e in entries)) for name in names)
    return f"{medians}{ratios}  {agree:<5}  {counts} of {len(entries)}"


def median(entries: list[dict], name: str) -> float | None:
    times = [e["times"][name] for e in entries if name in e["times"]]
    return statistics.median(times) if times else None


def show(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


if __name__ == "__main__":
    main()
