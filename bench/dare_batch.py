"""Deleting many rows at once (issue 15): forgetting them one at a time in place
(``DareForest._forget``, what ``delete`` does for up to ``ONE_BY_ONE`` rows) against updating
every tree from its rows at once on a copy (``DareForest._change``, what it does beyond).

On make_classification(100_000, 40, random_state=0), 100 trees, depth 10, k=10,
max_features="sqrt", G-DaRE (``random_depth=0``) and R-DaRE (``random_depth=--rdepth``): for each
batch size, the same random rows are deleted from two copies of one fitted forest, one by each
path; printed side by side with the rows each path re-examined (``last_deletion_cost``).
In the deterministic configuration the two results are the same forest; in the randomized one
they are distributed alike but draw differently.

    python bench/dare_batch.py                     # about two fits and the deletions
    python bench/dare_batch.py --sizes 100 --trees 20
"""

from __future__ import annotations

import argparse
import copy
import time

import numpy as np
from sklearn.datasets import load_breast_cancer, make_classification

from veritas_dsl.unlearning import DareForest


def timed(action) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="100,1000", help="rows deleted at once")
    parser.add_argument("--trees", type=int, default=100)
    parser.add_argument("--rdepth", type=int, default=2, help="R-DaRE's random_depth")
    args = parser.parse_args()
    warm = DareForest(n_trees=2, random_depth=1).fit(*load_breast_cancer(return_X_y=True))
    warm._forget(np.array([0, 1]))  # Numba compiles
    warm._change(warm._alive & (np.arange(warm.n_rows) > 2), np.array([2]), adding=False)
    X, y = make_classification(100_000, 40, random_state=0)
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"make_classification(100_000, 40); trees={args.trees} depth=10 k=10 max_features=sqrt")
    head = (
        f"{'model':7} {'fit s':>6} {'rows':>5} {'at once s':>12} {'cost':>10} "
        f"{'one by one s':>12} {'cost':>10} {'speed-up':>8} {'ms/row':>7}"
    )
    print(head)
    print("-" * len(head))
    for model, depth in (("G-DaRE", 0), ("R-DaRE", args.rdepth)):
        forest = DareForest(n_trees=args.trees, random_depth=depth)
        fit = timed(lambda forest=forest: forest.fit(X, y))
        rng = np.random.default_rng(0)
        for size in sizes:
            ids = np.sort(rng.choice(len(X), size, replace=False))
            old, new = copy.deepcopy(forest), copy.deepcopy(forest)
            alive = old._alive.copy()
            alive[ids] = False
            slow = timed(lambda old=old, alive=alive, ids=ids: old._change(alive, ids, False))
            fast = timed(lambda new=new, ids=ids: new._forget(ids))
            print(
                f"{model:7} {fit:6.1f} {size:5} {slow:12.2f} {old.last_deletion_cost:10} "
                f"{fast:12.2f} {new.last_deletion_cost:10} {slow / fast:8.1f} "
                f"{1e3 * fast / size:7.2f}",
                flush=True,
            )
    print("cost: rows re-examined by growing subtrees again (last_deletion_cost)")


if __name__ == "__main__":
    main()
