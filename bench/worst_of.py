"""The worst model's value over a family of deletion variants (issue 16): for K variants of one
DaRE forest, `maximize min(m(x) for m in V)` within an L-inf ball around held-out rows, by A* and
the MILP.

Fits a DareForest (``--trees``, ``--depth``) on make_classification(``--rows``, 10), saves it,
and for each K of ``--ks`` runs

    models V = deletions(before, fraction = F, count = K, seed = 0)
    query surest for r in test[0:N] {
        input x
        where linf(x, r) <= RADIUS
        maximize min(m(x) for m in V)
    }

with each engine of ``--engines``. Prints, per K and engine: the distinct trees of the family
(as functions: ``tree_keys``), the median and largest time per query, how many were optimal, and
the largest gap between the bounds of those stopped by the time limit.

    python bench/worst_of.py                    # K = 1, 5, 10, 25; astar and milp
    python bench/worst_of.py --ks 1,50 --engines astar
"""

from __future__ import annotations

import argparse
import statistics

from family import forest_and_rows

from veritas_dsl import parse
from veritas_dsl.ir.reductions.cancel import tree_keys
from veritas_dsl.result import Termination


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--trees", type=int, default=100)
    parser.add_argument("--depth", type=int, default=5)
    parser.add_argument("--fraction", type=float, default=0.001)
    parser.add_argument("--ks", default="1,5,10,25")
    parser.add_argument("--engines", default="astar,milp")
    parser.add_argument("--radius", type=float, default=0.3)
    parser.add_argument("--queries", type=int, default=5, help="rows of test around which")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per query")
    args = parser.parse_args()

    folder = forest_and_rows(args.rows, args.trees, args.depth, "worst-of-bench-")
    print(
        f"forest: {args.trees} trees, depth {args.depth}, {args.rows} rows; each variant forgets "
        f"{args.fraction:g} of them; {args.queries} test rows, L-inf radius {args.radius}"
    )
    print("K   engine  distinct  median_s  max_s  optimal  largest_gap")
    for k in [int(v) for v in args.ks.split(",")]:
        for engine in args.engines.split(","):
            text = (
                'model before = dare "before.dare"\n'
                f"models V = deletions(before, fraction = {args.fraction}, count = {k}, seed = 0)\n"
                'data test = csv "test.csv"\nfeatures from test\n'
                f"query surest for r in test[0:{args.queries}] {{\n input x\n"
                f" where linf(x, r) <= {args.radius}\n maximize min(m(x) for m in V)\n"
                f" solve with {engine} (timeout = {args.timeout}s)\n}}\n"
            )
            spec = parse(text, str(folder / "worst_of.ver"))
            models = next(iter(spec.lowered())).query.models
            distinct = len({key for m in models.values() for key in tree_keys(m, 0)})
            runs = spec.run(jobs=1)
            times = [r.result.time_s for r in runs]
            optimal = sum(r.result.termination is Termination.OPTIMAL for r in runs)
            gaps = [r.result.upper - r.result.lower for r in runs if r.result.lower is not None]
            print(
                f"{k:<3} {engine:<7} {distinct:>8} {statistics.median(times):>9.3f} "
                f"{max(times):>6.2f}  {optimal}/{len(runs)}  {max(gaps, default=0.0):>11.3g}"
            )


if __name__ == "__main__":
    main()
