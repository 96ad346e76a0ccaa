"""Benchmark (d) of issue 15: what comparing a DaRE forest before and after one deletion reveals.

For random single deletions from a forest on scikit-learn's bundled breast-cancer set (no
download), ``veritas_dsl.unlearning.leakage`` finds the exact extremes of ``after(x) - before(x)``
and the anonymity set: the training rows inside the box where the larger extreme is reached.
Prints the set's size (min, median, max), how often it is the deleted row alone, how often it
holds the deleted row at all, and the time per leakage query with identical trees cancelled
(the default) and, on the first ``--without`` deletions, with both whole forests handed to the
engine, side by side on the same deletions. A query the engine does not finish within the limit
is counted, never timed as if it had.

    python bench/unlearning_leakage.py [--deletions 100] [--without 10] [--timeout 10]
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time

import numpy as np
from sklearn.datasets import load_breast_cancer

from veritas_dsl.unlearning import DareForest, LeakageError, leakage


def timed(before, after, engine, timeout, cancel):
    start = time.perf_counter()
    try:
        found = leakage(before, after, engine=engine, timeout_s=timeout, cancel=cancel)
    except LeakageError:
        return None, time.perf_counter() - start
    return found, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deletions", type=int, default=100)
    parser.add_argument("--without", type=int, default=10, help="deletions timed uncancelled")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per optimisation")
    parser.add_argument("--trees", type=int, default=20)
    parser.add_argument("--depth", type=int, default=8)
    parser.add_argument("--engine", default="milp")
    args = parser.parse_args()

    X, y = load_breast_cancer(return_X_y=True)
    params = dict(n_trees=args.trees, max_depth=args.depth, k=10, random_state=0)
    before = DareForest(**params).fit(X, y)
    rows = np.random.default_rng(0).choice(len(X), args.deletions, replace=False)
    print(f"data      breast_cancer {X.shape[0]} x {X.shape[1]}; DareForest({params})")
    print(
        f"queries   {args.deletions} random single deletions, engine {args.engine}, "
        f"limit {args.timeout:g} s per optimisation (two per query)"
    )

    sizes, alone, holds, changed, fast, slow, pairs = [], 0, 0, [], [], [], []
    unfinished = {"cancelled": 0, "whole": 0}
    timed(before, copy.deepcopy(before).delete([int(rows[0])]), args.engine, 1.0, True)  # compile
    for i, row in enumerate(rows):
        after = copy.deepcopy(before).delete([int(row)])
        found, seconds = timed(before, after, args.engine, args.timeout, True)
        if found is None:
            unfinished["cancelled"] += 1
        else:
            fast.append(seconds)
            sizes.append(len(found.anonymity))
            alone += found.anonymity == (int(row),)
            holds += int(row) in found.anonymity
            changed.append(found.changed_trees)
        if i < args.without:
            whole, whole_s = timed(before, after, args.engine, args.timeout, False)
            if whole is None:
                unfinished["whole"] += 1
            else:
                slow.append(whole_s)
            pairs.append((int(row), seconds if found else None, whole_s if whole else None))

    n = len(sizes)
    print(f"answered  {n} of {args.deletions} ({unfinished['cancelled']} hit the limit)")
    if n:
        print(
            f"anonymity set size  min {min(sizes)}, median {statistics.median(sizes):g}, "
            f"max {max(sizes)}"
        )
        print(f"  the deleted row alone  {alone} of {n}")
        print(f"  holds the deleted row  {holds} of {n}")
        print(f"  empty                  {sum(s == 0 for s in sizes)} of {n}")
        print(
            f"trees that do not cancel (of {2 * args.trees})  min {min(changed)}, "
            f"median {statistics.median(changed):g}, max {max(changed)}"
        )
        print(
            f"time per leakage query, cancelled  median {statistics.median(fast):.3f} s, "
            f"max {max(fast):.3f} s"
        )
    print(f"\nside by side on the first {len(pairs)} deletions (s; '-' = hit the limit)")
    print(f"  {'row':>5}  {'cancelled':>10}  {'whole forests':>13}")
    for row, a, b in pairs:
        print(
            f"  {row:>5}  {'-' if a is None else f'{a:.3f}':>10}  "
            f"{'-' if b is None else f'{b:.3f}':>13}"
        )
    both = [(a, b) for _, a, b in pairs if a is not None and b is not None]
    if both:
        print(
            f"  median where both finished: {statistics.median(a for a, _ in both):.3f} s "
            f"against {statistics.median(b for _, b in both):.3f} s"
        )
    print(f"  whole forests hit the limit on {unfinished['whole']} of {len(pairs)}")


if __name__ == "__main__":
    main()
