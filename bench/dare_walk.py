"""One deletion's walk down the trees, before and after a change (issue 15: 10 ms median for a
100-tree forest on make_classification(100_000, 40)).

Per checkout given (default: this one), a child process puts the checkout first on ``sys.path``
(ahead of any editable install; it checks ``veritas_dsl.__file__``), fits the forest
(depth 10, k=10, max_features="sqrt", random_depth 0), deletes ``--deletions`` random rows one
``delete`` call each (their median and mean time), then ``--walks`` more rows tree by tree as
``delete`` does (``Grower.forget`` per tree, timed alone): the median and mean time of a tree
whose update grew nothing again (its ``Grower.cost`` unchanged), which is the walk's cost per
tree. The same rows are deleted in every checkout, so the columns compare like with like.

    python bench/dare_walk.py --checkout /tmp/old-pertree --checkout .
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path


def worker(root: str, n_trees: int, deletions: int, walks: int, rows: int) -> dict:
    sys.path.insert(0, root)
    import numpy as np
    from sklearn.datasets import make_classification

    import veritas_dsl
    from veritas_dsl.unlearning import DareForest

    where = Path(veritas_dsl.__file__).resolve()
    assert Path(root).resolve() in where.parents, f"imported {where}, not from {root}"
    DareForest(n_trees=2).fit(*make_classification(300, 5, random_state=1)).delete([0])  # warm
    X, y = make_classification(rows, 40, random_state=0)
    start = time.perf_counter()
    forest = DareForest(n_trees=n_trees).fit(X, y)
    fit = time.perf_counter() - start
    chosen = np.random.default_rng(0).choice(len(X), deletions + walks, replace=False)
    times, cpu, calm, calm_cpu = [], [], [], []
    for r in chosen[:deletions].tolist():
        start, start_cpu = time.perf_counter(), time.process_time()
        forest.delete([r])
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    grew = 0
    for r in chosen[deletions:].tolist():
        grower = forest._grower()  # what DareForest._forget does, one tree timed at a time
        for tree in forest._trees:
            cost = grower.cost
            start, start_cpu = time.perf_counter(), time.process_time()
            grower.forget(tree, r)
            spent, spent_cpu = time.perf_counter() - start, time.process_time() - start_cpu
            if grower.cost == cost:
                calm.append(spent)
                calm_cpu.append(spent_cpu)
            else:
                grew += 1
        forest._alive[r] = False
    return {
        "module": str(where.parent),
        "fit_s": fit,
        "median_ms": 1e3 * statistics.median(times),
        "mean_ms": 1e3 * statistics.mean(times),
        "cpu_median_ms": 1e3 * statistics.median(cpu),
        "grew": grew / (walks * n_trees),
        "tree_median_us": 1e6 * statistics.median(calm),
        "tree_mean_us": 1e6 * statistics.mean(calm),
        "tree_cpu_median_us": 1e6 * statistics.median(calm_cpu),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checkout", action="append", help="a checkout to measure (repeat)")
    parser.add_argument("--trees", type=int, default=100)
    parser.add_argument("--deletions", type=int, default=60)
    parser.add_argument("--walks", type=int, default=20, help="deletions timed per tree")
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.trees, args.deletions, args.walks, args.rows)))
        return
    checkouts = args.checkout or [str(Path(__file__).resolve().parents[1])]
    results = []
    for root in checkouts:
        command = [sys.executable, __file__, "--worker", str(Path(root).resolve())]
        command += ["--trees", str(args.trees), "--deletions", str(args.deletions)]
        command += ["--walks", str(args.walks)]
        command += ["--rows", str(args.rows)]
        out = subprocess.run(command, capture_output=True, text=True, check=True, cwd="/")
        results.append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(f"make_classification({args.rows}, 40), {args.trees} trees, depth 10, k=10, sqrt;")
    print(
        f"{args.deletions} random single-row deletions by delete(), then {args.walks} timed per "
        "tree; the same rows in every checkout"
    )
    print(
        f"{'checkout':30} {'fit s':>5} {'delete median ms':>16} {'mean':>6} {'cpu':>6} "
        f"{'regrown':>7} {'walk median us':>14} {'mean':>6} {'cpu':>6}"
    )
    for res in results:
        print(
            f"{res['module'][-30:]:30} {res['fit_s']:5.1f} {res['median_ms']:16.1f} "
            f"{res['mean_ms']:6.1f} {res['cpu_median_ms']:6.1f} {res['grew']:7.1%} "
            f"{res['tree_median_us']:14.1f} {res['tree_mean_us']:6.1f} "
            f"{res['tree_cpu_median_us']:6.1f}"
        )
    print("delete: one delete() call (median and mean wall time, median CPU time); regrown:")
    print("share of trees that grew a subtree again; walk: one tree's Grower.forget when it grew")
    print("nothing again (median and mean wall time, median CPU time)")


if __name__ == "__main__":
    main()
