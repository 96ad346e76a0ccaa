"""Enumerated output configurations of clusters of trees (issue 44's second idea), measured at
the root: how far does the exact maximum of clusters of k trees that share features bring the
bound below the sum of each tree's best leaf, against A*'s proven bound at 5 s?

    python bench/oc_clusters.py [--models 54:80x8,28:300x8] [--ks 1,2,3,4] [--cap 200000]

On the models of ``bench/anytime_big.py`` (same data and training), for the global max and min
of the margin. The trees are grouped greedily into clusters of ``k``: the first tree left, then
the ``k - 1`` left that share most split features with the cluster. A cluster's bound is the
largest sum of one leaf per tree over leaves whose boxes meet (a depth-first search over the
trees' leaves, best first, pruned by the best sum found and by each remaining tree's best leaf);
a search that passes ``--cap`` nodes stops and the cluster counts the sum of its trees' best
leaves instead (still a bound). The root bound is the sum over clusters. This is the bound an
OC-space heuristic would give at the root, the loosest state; at deeper states the boxes are
smaller and every bound tighter. All in one run, so the figures are comparable.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from anytime_big import root_queries

from veritas_dsl.model import Ensemble
from veritas_dsl.solvers.astar.engine import AStarEngine
from veritas_dsl.solvers.base import Limits


def tree_leaves(model: Ensemble, t: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Tree ``t``'s leaves: values (best first), and their boxes ``[low, high)`` per feature."""
    p = model.n_features
    values, lows, highs = [], [], []
    stack = [(int(model.roots[t]), np.full(p, -np.inf), np.full(p, np.inf))]
    while stack:
        node, low, high = stack.pop()
        f = int(model.feature[node])
        if f < 0:
            values.append(float(model.value[node, 0]))
            lows.append(low)
            highs.append(high)
            continue
        t_ = float(model.threshold[node])
        left_high, right_low = high.copy(), low.copy()
        left_high[f], right_low[f] = min(high[f], t_), max(low[f], t_)
        stack.append((int(model.left[node]), low, left_high))
        stack.append((int(model.right[node]), right_low, high))
    order = np.argsort(values)[::-1]
    return np.array(values)[order], np.array(lows)[order], np.array(highs)[order]


def clusters(model: Ensemble, k: int) -> list[list[int]]:
    bounds = zip(model.tree_offsets[:-1], model.tree_offsets[1:], strict=True)
    used = [set(model.feature[s:e][model.feature[s:e] >= 0].tolist()) for s, e in bounds]
    left, out = list(range(model.n_trees)), []
    while left:
        group = [left.pop(0)]
        features = set(used[group[0]])
        while len(group) < k and left:
            best = max(left, key=lambda t: (len(used[t] & features), -t))
            left.remove(best)
            group.append(best)
            features |= used[best]
        out.append(group)
    return out


def cluster_max(leaves: list, cap: int) -> tuple[float, bool]:
    """The largest sum of one leaf per tree over meeting boxes, and whether the search ended
    (False: it passed ``cap`` nodes, and the sum of best leaves is returned)."""
    tops = [v[0] for v, _, _ in leaves]
    rest = np.concatenate([np.cumsum(tops[::-1])[::-1][1:], [0.0]])
    best, nodes = -np.inf, 0

    def search(j, low, high, total):
        nonlocal best, nodes
        if j == len(leaves):
            best = max(best, total)
            return True
        values, lows, highs = leaves[j]
        for v, lo, hi in zip(values, lows, highs, strict=True):
            if total + v + rest[j] <= best:
                return True  # leaves are best first: none later can do better
            nodes += 1
            if nodes > cap:
                return False
            new_low, new_high = np.maximum(low, lo), np.minimum(high, hi)
            if np.all(new_low < new_high) and not search(j + 1, new_low, new_high, total + v):
                return False
        return True

    p = leaves[0][1].shape[1]
    done = search(0, np.full(p, -np.inf), np.full(p, np.inf), 0.0)
    return (best, True) if done else (float(sum(tops)), False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="54:80x8,28:300x8")
    parser.add_argument("--ks", default="1,2,3,4")
    parser.add_argument("--cap", type=int, default=200_000, help="search nodes per cluster")
    args = parser.parse_args()
    ks = [int(k) for k in args.ks.split(",")]
    engine = AStarEngine()
    print(f"load average {os.getloadavg()[0]:.1f} at start")
    print("| model | task | A* 5 s bound | incumbent | " + " | ".join(
        f"k = {k} bound (clusters exact, time)" for k in ks) + " |")  # fmt: skip
    print("|---" * (4 + len(ks)) + "|")
    for label, task, model, q in root_queries(args.models):
        engine.solve(q, Limits(timeout_s=0.5))  # warm-up (compilation)
        five = engine.solve(q, Limits(timeout_s=5.0))
        per_tree = [tree_leaves(model, t) for t in range(model.n_trees)]
        base_score = float(model.base_score[0])
        cells = []
        for k in ks:
            start = time.perf_counter()
            groups = clusters(model, k)
            found = [cluster_max([per_tree[t] for t in g], args.cap) for g in groups]
            bound = base_score + sum(v for v, _ in found)
            exact = sum(done for _, done in found)
            assert bound >= five.lower - 1e-9, (k, bound, five.lower)  # a bound, or a bug
            took = time.perf_counter() - start
            cells.append(f"{bound:.3f} ({exact}/{len(found)}, {took:.1f} s)")
        print(f"| {label} | {task} | {five.upper:.3f} | {five.lower:.3f} | "
              + " | ".join(cells) + " |", flush=True)  # fmt: skip
    print(f"load average {os.getloadavg()[0]:.1f} at end (a min is the max of the negated model)")


if __name__ == "__main__":
    main()
