"""The Lagrangian root bound (``solvers/astar/lagrange.py``, issue 44) against A*'s proven bound.

    python bench/lagrange_root.py [--steps 200] [--patience 10] [--models 54:80x8,28:300x8]

On the models of ``bench/anytime_big.py`` (same data and training), for the global max and min of
the margin: A*'s bounds at 1 s and 5 s, and the Lagrangian bound at the root after K subgradient
steps (Polyak steps toward A*'s 5 s incumbent) with the time it took. A min is the max of the
negated model. All in one run, so ratios are comparable on a loaded machine.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from anytime_big import root_queries

from veritas_dsl.solvers.astar import lagrange
from veritas_dsl.solvers.astar.engine import AStarEngine
from veritas_dsl.solvers.base import Limits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--patience", type=int, default=10, help="steps before halving")
    parser.add_argument("--models", default="54:80x8,28:300x8")
    args = parser.parse_args()
    engine = AStarEngine()
    checkpoints = sorted({k for k in (100, 500, 1500, args.steps) if k <= args.steps})
    print(f"{'model':<10} {'task':<4} {'A* 1s [lo, up]':>20} {'A* 5s [lo, up]':>20} "
          f"{'sum best':>9} " + " ".join(f"{'L@' + str(k):>8}" for k in checkpoints)
          + f" {'L time':>7} {'L gap %':>8} {'A*5 gap %':>9}")  # fmt: skip
    for label, task, model, q in root_queries(args.models):
        engine.solve(q, Limits(timeout_s=0.5))  # warm-up (compilation)
        one = engine.solve(q, Limits(timeout_s=1.0))
        five = engine.solve(q, Limits(timeout_s=5.0))
        d = lagrange.decompose(model)
        seen: list[float] = []
        start = time.perf_counter()
        lagrange.minimise(d, args.steps, five.lower, trace=lambda v, _, s=seen: s.append(v),
                          patience=args.patience)  # fmt: skip
        took = time.perf_counter() - start
        at = [min(seen[:k]) for k in checkpoints]
        sign = 1 if task == "max" else -1
        inc = five.lower

        def pair(r, sign=sign):
            lo, up = sorted((sign * r.lower, sign * r.upper))
            return f"[{lo:8.3f}, {up:8.3f}]"

        print(f"{label:<10} {task:<4} {pair(one):>20} {pair(five):>20} "
              f"{sign * seen[0]:9.3f} " + " ".join(f"{sign * v:8.3f}" for v in at)
              + f" {took:6.1f}s {100 * (at[-1] - inc) / abs(inc):8.2f}"
              f" {100 * (five.upper - inc) / abs(inc):9.2f}", flush=True)  # fmt: skip

if __name__ == "__main__":
    main()
