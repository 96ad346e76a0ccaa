"""A robust L1 counterfactual over a family of deletion variants (issue 16): for K variants of
one DaRE forest, the closest input every variant grants, with A*.

Fits a DareForest (``--trees``, ``--depth``; the rest default) on make_classification(``--rows``,
10), saves it, and for each K of ``--ks`` runs the spec

    models V = deletions(before, fraction = F, count = K, seed = 0)
    query cf for r in test[0:N] where class(before, r) == 0 {
        input x
        where class(m, x) == 1 for m in V
        minimize l1(x, r)
    }

on held-out rows (feature ranges from them: `features from test`). Prints, per K: the trees of
the query (base and variants), how many are distinct (as functions: ``tree_keys``) and how many
have distinct structure (features, thresholds and children, leaf values aside), the time to
make the variants, and the median and largest A* time per counterfactual, with how many were
solved to optimality; per row, the constraints the search switched on (of the family's).

    python bench/family.py                      # K = 1, 5, 10, 25, 50, fraction 0.01
    python bench/family.py --fraction 0.001 --ks 1,50
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from sklearn.datasets import make_classification

from veritas_dsl import parse
from veritas_dsl.ir.reductions.cancel import shape_keys, tree_keys
from veritas_dsl.result import Termination
from veritas_dsl.unlearning import DareForest


def forest_and_rows(rows: int, trees: int, depth: int, prefix: str) -> Path:
    """A new folder holding ``before.dare`` (a DareForest fit on the first ``rows`` of
    make_classification(rows + 400, 10)) and ``test.csv`` (the 400 held-out rows, f0..f9)."""
    X, y = make_classification(rows + 400, 10, random_state=0)
    X = X.astype(np.float32)
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    forest = DareForest(n_trees=trees, max_depth=depth, random_state=0)
    forest.fit(X[:rows], y[:rows]).save(folder / "before.dare")
    names = ",".join(f"f{i}" for i in range(10))
    np.savetxt(folder / "test.csv", X[rows:], delimiter=",", header=names, comments="", fmt="%.9g")
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--trees", type=int, default=100)
    parser.add_argument("--depth", type=int, default=10)
    parser.add_argument("--fraction", type=float, default=0.01)
    parser.add_argument("--ks", default="1,5,10,25,50")
    parser.add_argument("--queries", type=int, default=5, help="rows of test to explain")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per query")
    args = parser.parse_args()

    folder = forest_and_rows(args.rows, args.trees, args.depth, "family-bench-")
    try:
        run(args, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def run(args: argparse.Namespace, folder: Path) -> None:
    """The table, one line per K, each followed by its rows' answers."""
    print(
        f"forest: {args.trees} trees, depth {args.depth}, {args.rows} rows; each variant "
        f"forgets {args.fraction:g} of them; {args.queries} test rows, A*"
    )
    print("K   trees  distinct  structures  variants_s  median_s  max_s  optimal")
    for k in [int(v) for v in args.ks.split(",")]:
        text = (
            'model before = dare "before.dare"\n'
            f"models V = deletions(before, fraction = {args.fraction}, count = {k}, seed = 0)\n"
            'data test = csv "test.csv"\nfeatures from test\n'
            f"query cf for r in test[0:{args.queries}] where class(before, r) == 0 {{\n"
            " input x\n where class(m, x) == 1 for m in V\n minimize l1(x, r)\n"
            f" solve with astar (timeout = {args.timeout}s)\n}}\n"
        )
        start = time.perf_counter()
        spec = parse(text, str(folder / "family.ver"))
        lowered = list(spec.lowered())
        made = time.perf_counter() - start
        models = lowered[0].query.models if lowered else {}
        keys = {key for m in models.values() for key in tree_keys(m, 0)}
        shapes = {key for m in models.values() for key in shape_keys(m)}
        n_trees = sum(m.n_trees for m in models.values())
        runs = spec.run(jobs=1)
        times = [r.result.time_s for r in runs]
        optimal = sum(r.result.termination is Termination.OPTIMAL for r in runs)
        median = statistics.median(times) if times else float("nan")
        print(
            f"{k:<3} {n_trees:>6} {len(keys):>9} {len(shapes):>11} {made:>11.1f} "
            f"{median:>9.3f} {max(times, default=float('nan')):>6.2f}  {optimal}/{len(runs)}"
        )
        for r in runs:  # the answers, to compare between versions of the engine
            res = r.result
            print(
                f"    row {r.lowered.row}: {res.termination.value} "
                f"[{res.lower:.6g}, {res.upper:.6g}] {res.time_s:.2f} s, "
                f"{res.stats.get('states_expanded', 0)} states expanded, constraints switched "
                f"on {res.stats.get('lazy_constraints', '-')}"
            )


if __name__ == "__main__":
    main()
