"""Where one deletion's CPU time goes (issue 15: 10 ms median for a 100-tree forest on
make_classification(100_000, 40)).

Fits the forest (depth 10, k=10, max_features="sqrt", random_depth 0; fewer trees with
``--trees`` to save time: the per-tree figures scale), then deletes ``--deletions`` random rows,
one tree at a time as ``DareForest.delete`` does (``Grower.forget``), and splits each
deletion's CPU time (``time.process_time``):

- by tree: trees whose update grew nothing again (the walk alone) and trees that regrew a
  subtree (with the depth where it started, the rows it re-examined: ``Grower.cost``);
- by part, inside both: the compiled walk, greedy choices (``best_split``, as ``fit`` calls
  it), the tree's index rebuild (``Tree.compact``, the caches' pool flush included), gathering
  a node's rows (``Tree.rows_below``), memos (``Grower._recall``), and the rest (Python).

Each part's time is exclusive (a part called inside another counts once, for itself).

    python bench/dare_breakdown.py --trees 20 --deletions 30
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import defaultdict

import numpy as np
from sklearn.datasets import make_classification

from veritas_dsl.unlearning import DareForest
from veritas_dsl.unlearning.dare import tree as tree_module
from veritas_dsl.unlearning.dare.pool import CachePool

PARTS = {
    "walk": (tree_module, "walk"),
    "greedy": (tree_module.Grower, "_greedy"),
    "compact": (tree_module.Tree, "compact"),
    "pool flush": (CachePool, "_flush"),
    "rows_below": (tree_module.Tree, "rows_below"),
    "memos": (tree_module.Grower, "_recall"),
}


class Clock:
    """Exclusive CPU time per part, with a stack so nested parts are not counted twice."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self._stack: list[float] = []  # time of children, per open part

    def wrap(self, name: str, function):
        def timed(*args, **kwargs):
            self._stack.append(0.0)
            start = time.process_time()
            try:
                return function(*args, **kwargs)
            finally:
                spent = time.process_time() - start
                children = self._stack.pop()
                self.spent[name] += spent - children
                self.calls[name] += 1
                if self._stack:
                    self._stack[-1] += spent

        return timed

    def take(self) -> tuple[dict, dict]:
        spent, calls = dict(self.spent), dict(self.calls)
        self.spent.clear()
        self.calls.clear()
        return spent, calls


def install(clock: Clock) -> None:
    for name, (owner, attribute) in PARTS.items():
        setattr(owner, attribute, clock.wrap(name, getattr(owner, attribute)))


def start_depth(grower) -> list:
    """Record the depth of each ``_update`` ``forget`` hands over to (where regrowth starts)."""
    depths = []
    update = grower._update

    def first_update(tree, node, rows, touched, depth, adding, chosen=None):
        depths.append(depth)
        grower._update = update  # the recursion below calls the plain method
        try:
            return update(tree, node, rows, touched, depth, adding, chosen)
        finally:
            grower._update = first_update

    grower._update = first_update
    return depths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trees", type=int, default=20)
    parser.add_argument("--deletions", type=int, default=30)
    parser.add_argument("--rows", type=int, default=100_000)
    args = parser.parse_args()
    DareForest(n_trees=2).fit(*make_classification(300, 5, random_state=1)).delete([0])  # warm
    X, y = make_classification(args.rows, 40, random_state=0)
    forest = DareForest(n_trees=args.trees).fit(X, y)
    clock = Clock()
    install(clock)
    chosen = np.random.default_rng(0).choice(len(X), args.deletions, replace=False)
    lines, totals = [], defaultdict(list)
    for r in chosen.tolist():
        grower = forest._grower()
        depths = start_depth(grower)
        calm = {"time": 0.0, "parts": defaultdict(float)}
        grown = {"time": 0.0, "parts": defaultdict(float), "trees": 0, "rows": 0}
        start_all = time.process_time()
        for tree in forest._trees:
            cost, before = grower.cost, len(depths)
            clock.take()
            start = time.process_time()
            grower.forget(tree, r)
            spent = time.process_time() - start
            parts, _ = clock.take()
            side = calm if grower.cost == cost and len(depths) == before else grown
            side["time"] += spent
            for name, value in parts.items():
                side["parts"][name] += value
            if side is grown:
                grown["trees"] += 1
                grown["rows"] += grower.cost - cost
        forest._alive[r] = False
        total = time.process_time() - start_all
        for side in (calm, grown):
            side["parts"]["python"] = side["time"] - sum(side["parts"].values())
        totals["total"].append(total)
        totals["calm"].append(calm["time"])
        totals["grown"].append(grown["time"])
        for name in [*PARTS, "python"]:
            totals[f"calm {name}"].append(calm["parts"][name])
            totals[f"grown {name}"].append(grown["parts"][name])
        totals["grown trees"].append(grown["trees"])
        totals["grown rows"].append(grown["rows"])
        lines.append(
            f"{r:7d} {1e3 * total:8.1f} {1e3 * calm['time']:8.1f} {grown['trees']:6d} "
            f"{','.join(map(str, depths)) or '-':>14} {grown['rows']:8d} "
            f"{1e3 * grown['time']:8.1f}  "
            + " ".join(f"{1e3 * grown['parts'][name]:6.1f}" for name in [*PARTS, "python"])
        )
    print(
        f"make_classification({args.rows}, 40), {args.trees} trees, depth 10, k=10, sqrt; "
        f"{args.deletions} random single-row deletions, CPU ms (process_time)"
    )
    print(
        f"{'row':>7} {'total':>8} {'calm':>8} {'grown':>6} {'depths':>14} {'rows':>8} "
        f"{'grown ms':>8}  " + " ".join(f"{name[:6]:>6}" for name in [*PARTS, "python"])
    )
    print("\n".join(lines))
    print("\nmedian (mean) per deletion, CPU ms; calm: trees that regrew nothing, grown: the rest")
    for key in ("total", "calm", "grown"):
        values = totals[key]
        median, mean = 1e3 * statistics.median(values), 1e3 * statistics.mean(values)
        print(f"  {key:22} {median:8.2f} ({mean:.2f})")
    for side in ("calm", "grown"):
        for name in [*PARTS, "python"]:
            values = totals[f"{side} {name}"]
            print(
                f"  {side + ' ' + name:22} {1e3 * statistics.median(values):8.2f} "
                f"({1e3 * statistics.mean(values):.2f})"
            )
    for key in ("grown trees", "grown rows"):
        values = totals[key]
        print(f"  {key:22} {statistics.median(values):8.1f} ({statistics.mean(values):.1f})")
    per_tree = (
        1e6
        * statistics.mean(totals["calm"])
        / max(1, args.trees - statistics.mean(totals["grown trees"]))
    )
    print(f"  calm tree mean          {per_tree:8.1f} us")
    n_grown = sum(totals["grown trees"])
    if n_grown:
        print(f"  grown tree mean         {1e3 * sum(totals['grown']) / n_grown:8.2f} ms")


if __name__ == "__main__":
    main()
