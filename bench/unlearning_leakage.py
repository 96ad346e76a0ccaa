"""Benchmark (d) of issue 15: what comparing a DaRE forest before and after a deletion reveals.

For random deletions (``--rows`` rows each) from a forest on scikit-learn's bundled breast-cancer
set (no download), ``veritas_dsl.unlearning.leakage`` gives the anonymity set (the rows whose
deletion is consistent with the change, by trial deletion) and both extremes of
``after(x) - before(x)`` with their boxes. Prints the set's size (min, median, max), how often
the change identified the deleted row (a set of one) or changed no tree, how often each
extreme's box holds a deleted row, how often the engine proved each extreme within the limit,
and the time per report, with identical trees cancelled (the default) and, on the first
``--without`` deletions, with both whole forests handed to the engine, side by side.

    python bench/unlearning_leakage.py [--deletions 100] [--rows 1] [--without 10]
        [--timeout 10] [--config default|deterministic|rdare] [--engine astar]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from sklearn.datasets import load_breast_cancer

from veritas_dsl.unlearning import DareForest, leakage

CONFIGS = {
    "default": {},
    "deterministic": {"k": None, "max_features": None},
    "rdare": {"random_depth": 2},
}


def timed(before, after, engine, timeout, cancel):
    start = time.perf_counter()
    found = leakage(before, after, engine=engine, timeout_s=timeout, cancel=cancel)
    return found, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deletions", type=int, default=100)
    parser.add_argument("--rows", type=int, default=1, help="rows per deletion")
    parser.add_argument("--without", type=int, default=10, help="deletions timed uncancelled")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per report")
    parser.add_argument("--trees", type=int, default=20)
    parser.add_argument("--depth", type=int, default=8)
    parser.add_argument("--config", choices=sorted(CONFIGS), default="default")
    parser.add_argument("--engine", default="astar")
    args = parser.parse_args()

    X, y = load_breast_cancer(return_X_y=True)
    params = dict(n_trees=args.trees, max_depth=args.depth, random_state=0, **CONFIGS[args.config])
    before = DareForest(**params).fit(X, y)
    rng = np.random.default_rng(0)
    sets = [rng.choice(len(X), args.rows, replace=False).tolist() for _ in range(args.deletions)]
    print(f"data      breast_cancer {X.shape[0]} x {X.shape[1]}; DareForest({params})")
    print(
        f"queries   {args.deletions} random deletions of {args.rows} row(s), engine "
        f"{args.engine}, limit {args.timeout:g} s per report (trial deletions, two optimisations)"
    )

    sizes, changed, fast, pairs = [], [], [], []
    counts = dict.fromkeys(
        ("identified", "unchanged", "holds", "exact", "min_box", "max_box", "min", "max"), 0
    )
    timed(before, before.copy().delete(sets[0]), args.engine, 1.0, True)  # compile
    for i, rows in enumerate(sets):
        after = before.copy().delete(rows)
        found, seconds = timed(before, after, args.engine, args.timeout, True)
        fast.append(seconds)
        sizes.append(len(found.anonymity))
        changed.append(found.changed_trees)
        counts["identified"] += found.identified
        counts["unchanged"] += found.unchanged
        counts["holds"] += set(rows) <= set(found.anonymity)
        counts["exact"] += found.anonymity_exact
        counts["min_box"] += bool(found.minimum.deleted)
        counts["max_box"] += bool(found.maximum.deleted)
        counts["min"] += found.minimum.proven
        counts["max"] += found.maximum.proven
        if i < args.without:
            whole, whole_s = timed(before, after, args.engine, args.timeout, False)
            both = found.minimum.proven and found.maximum.proven
            whole_both = whole.minimum.proven and whole.maximum.proven
            pairs.append((rows, seconds if both else None, whole_s if whole_both else None))

    n = args.deletions
    median = statistics.median(sizes)
    print(f"anonymity set size  min {min(sizes)}, median {median:g}, max {max(sizes)}")
    print(f"  holds the deleted rows       {counts['holds']} of {n}")
    print(f"  exact (every row tried)      {counts['exact']} of {n}")
    print(f"  identified (a set of one)    {counts['identified']} of {n}")
    print(f"  no tree changed              {counts['unchanged']} of {n}")
    print(f"box of the minimum holds a deleted row  {counts['min_box']} of {n}")
    print(f"box of the maximum holds a deleted row  {counts['max_box']} of {n}")
    print(f"proven within the limit  minimum {counts['min']}, maximum {counts['max']} of {n}")
    print(
        f"trees that do not cancel (of {2 * args.trees})  min {min(changed)}, "
        f"median {statistics.median(changed):g}, max {max(changed)}"
    )
    print(f"time per report  median {statistics.median(fast):.3f} s, max {max(fast):.3f} s")
    print(f"\nside by side on the first {len(pairs)} deletions (s; '-' = not both proven)")
    print(f"  {'rows':>12}  {'cancelled':>10}  {'whole forests':>13}")
    for rows, a, b in pairs:
        shown = ",".join(map(str, rows))
        print(
            f"  {shown:>12}  {'-' if a is None else f'{a:.3f}':>10}  "
            f"{'-' if b is None else f'{b:.3f}':>13}"
        )
    both = [(a, b) for _, a, b in pairs if a is not None and b is not None]
    if both:
        print(
            f"  median where both proven: {statistics.median(a for a, _ in both):.3f} s "
            f"against {statistics.median(b for _, b in both):.3f} s"
        )
    print(f"  whole forests left an extreme unproven on {sum(b is None for *_, b in pairs)}")


if __name__ == "__main__":
    main()
