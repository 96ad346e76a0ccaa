"""How far a deletion's walk reads the presorted order of every row (issue 15: the walk is most of
a calm tree's time; veritas_dsl/unlearning/dare/cache.py).

Fits the forest (depth 10, k=10, max_features="sqrt", random_depth 0), then for ``--deletions``
random rows follows each row down each tree (before deleting it) and, at each greedy node and
attribute where :func:`~veritas_dsl.unlearning.dare.cache.follow_deletion` must look for the node's
values next to the row's (no cached threshold beside it, and the cache does not hold every
threshold), counts what the compiled code reads, in numpy:

- steps: positions of the attribute's presorted order read by ``_neighbours`` (outward from the
  row, both ways, to the node's nearest rows), against the node's rows ``n``;
- merges: the two thresholds around the row's value merge into one whose key is under the
  bound, so ``_rows_up_to`` counts the node's rows up to it: the positions between it and the
  cached threshold nearest in value, or the node's rows when fewer (what it reads).

Per depth: the node's median rows, searches and merges per walk, mean positions per search and
rows or positions read per merge. Continuous data (no ties).

    python bench/dare_scans.py --trees 5 --deletions 10
"""

from __future__ import annotations

import argparse
from collections import defaultdict

import numpy as np
from sklearn.datasets import make_classification

from veritas_dsl.unlearning import DareForest
from veritas_dsl.unlearning.dare.kernels import ALL, threshold_key
from veritas_dsl.unlearning.dare.tree import LEAF


def searches(tree, presorted, X, r):
    """Per search on ``r``'s path: ``(depth, n, steps, merge positions or -1)``."""
    node = depth = 0
    while tree.kind[node] != LEAF:
        if node in tree.cache:
            attrs, bound, cand, values = tree.cache[node]
            member = (tree.leaf_of >= node) & (tree.leaf_of < tree.end[node])
            for i, a in enumerate(attrs.tolist()):
                here = presorted.position[a, r]
                x = presorted.values[a, here]
                alive = (cand[:, 0] == a) & (cand[:, 7] == 1)
                if bound[i] == ALL or np.any(alive & ((values[:, 0] == x) | (values[:, 1] == x))):
                    continue
                inside = member[presorted.order[a]]
                inside[here] = False
                below = np.flatnonzero(inside[:here])
                above = here + 1 + np.flatnonzero(inside[here + 1 :])
                steps = (here - below[-1] if len(below) else here) + (
                    above[0] - here if len(above) else len(inside) - here
                )
                merge = -1
                if len(below) and len(above):
                    low, high = presorted.values[a, [below[-1], above[0]]].astype(np.float64)
                    if threshold_key(tree.seed[node], a, (low + high) / 2.0) <= bound[i]:
                        kept = np.flatnonzero(alive)
                        near = values[kept[np.argmin(np.abs(values[kept, 0] - low))], 0]
                        ends = np.searchsorted(presorted.values[a], [near, low], side="right")
                        merge = min(int(abs(ends[1] - ends[0])), tree.count[node])
                yield depth, tree.count[node], int(steps), merge
        go_left = X[r, tree.feature[node]] <= tree.threshold[node]
        node = tree.left[node] if go_left else tree.right[node]
        depth += 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trees", type=int, default=5)
    parser.add_argument("--deletions", type=int, default=10)
    parser.add_argument("--rows", type=int, default=100_000)
    args = parser.parse_args()
    X, y = make_classification(args.rows, 40, random_state=0)
    forest = DareForest(n_trees=args.trees).fit(X, y)
    presorted = forest._grower().presorted
    walks = args.trees * args.deletions
    by_depth = defaultdict(list)
    for r in np.random.default_rng(0).choice(len(X), args.deletions, replace=False).tolist():
        for tree in forest._trees:
            for depth, n, steps, merge in searches(tree, presorted, forest._X, r):
                by_depth[depth].append((n, steps, merge))
    print(
        f"make_classification({args.rows}, 40), {args.trees} trees, {args.deletions} rows: "
        "per depth, per walk"
    )
    print(f"{'depth':>5} {'rows n':>8} {'searches':>9} {'steps':>8} {'merges':>7} {'read':>9}")
    totals = np.zeros(4)
    for depth in sorted(by_depth):
        n, steps, merge = np.array(by_depth[depth]).T
        merged = merge[merge >= 0]
        row = [
            len(steps) / walks,
            steps.mean(),
            len(merged) / walks,
            merged.mean() if len(merged) else 0,
        ]
        totals += [row[0], row[0] * row[1], row[2], row[2] * row[3]]
        cells = f"{row[0]:9.2f} {row[1]:8.1f} {row[2]:7.2f} {row[3]:9.0f}"
        print(f"{depth:5d} {np.median(n):8.0f} {cells}")
    print(
        f"per walk: {totals[0]:.1f} searches reading {totals[1]:.0f} positions, "
        f"{totals[2]:.2f} merges reading {totals[3]:.0f} rows or positions"
    )


if __name__ == "__main__":
    main()
