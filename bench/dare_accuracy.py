"""What each DaRE configuration costs in test accuracy: the default, R-DaRE and the deterministic
configuration that docs/unlearning-exactness.md recommends against adaptive requesters.

    python bench/dare_accuracy.py [--seeds 3] [--trees 50] [--depth 10]
                                  [--data breast_cancer,digits,classification]

Configurations: ``default`` is ``DareForest()``'s (``random_depth=0, k=10,
max_features="sqrt"``); ``R-DaRE`` adds two levels of random nodes (``random_depth=2``);
``determ.`` looks at every attribute and threshold (``random_depth=0, k=None,
max_features=None``). Data: scikit-learn's breast cancer (569 rows, 30 attributes), digits as
even against odd (1,797 rows, 64 attributes), and ``make_classification(2000, 20,
n_informative=10, random_state=0)``. Per seed ``s``: a stratified split, a quarter for testing
(``random_state=s``), and each forest fit with ``random_state=s``. Columns: test accuracy (mean
and standard deviation over the seeds; the class is 1 above 0.5), the number of distinct trees in
the forest (mean over seeds: the deterministic configuration draws nothing, so every tree is the
same tree), and the share of test rows whose probability lies strictly between 0 and 1.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits, make_classification
from sklearn.model_selection import train_test_split

from veritas_dsl.unlearning import DareForest

CONFIGS = {
    "default": dict(),
    "R-DaRE": dict(random_depth=2),
    "determ.": dict(random_depth=0, k=None, max_features=None),
}


def data(name: str) -> tuple[np.ndarray, np.ndarray]:
    if name == "breast_cancer":
        return load_breast_cancer(return_X_y=True)
    if name == "digits":
        X, y = load_digits(return_X_y=True)
        return X, y % 2
    if name == "classification":
        return make_classification(2000, 20, n_informative=10, random_state=0)
    raise SystemExit(f"unknown data set {name!r}")


def distinct_trees(forest: DareForest) -> int:
    """How many different trees (same nodes, attributes, thresholds, children) the forest holds."""
    view = forest.view()
    offsets = view.tree_offsets
    keys = set()
    for a, b in itertools.pairwise(offsets.tolist()):
        parts = [view.kind[a:b], view.feature[a:b], view.threshold[a:b]]
        parts += [np.where(c[a:b] >= 0, c[a:b] - a, -1) for c in (view.left, view.right)]
        keys.add(b"|".join(part.tobytes() for part in parts))
    return len(keys)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--trees", type=int, default=50)
    parser.add_argument("--depth", type=int, default=10)
    parser.add_argument("--data", default="breast_cancer,digits,classification")
    args = parser.parse_args()
    start = time.perf_counter()
    print(f"{args.trees} trees, depth {args.depth}, seeds 0..{args.seeds - 1}")
    print("| data | config | test accuracy | distinct trees | probability in (0, 1) |")
    print("|---|---|---|---|---|")
    for name in args.data.split(","):
        X, y = data(name)
        for config, settings in CONFIGS.items():
            accuracy, trees, between = [], [], []
            for seed in range(args.seeds):
                X_train, X_test, y_train, y_test = train_test_split(
                    X, y, test_size=0.25, stratify=y, random_state=seed
                )
                forest = DareForest(
                    n_trees=args.trees, max_depth=args.depth, random_state=seed, **settings
                ).fit(X_train, y_train)
                p = forest.predict_proba(X_test)[:, 1]
                accuracy.append(float(np.mean((p > 0.5) == y_test)))
                trees.append(distinct_trees(forest))
                between.append(float(np.mean((p > 0) & (p < 1))))
            spread = statistics.stdev(accuracy) if len(accuracy) > 1 else 0.0
            print(
                f"| {name} | {config} | {statistics.mean(accuracy):.3f} ± {spread:.3f} "
                f"| {statistics.mean(trees):.0f} | {statistics.mean(between):.0%} |",
                flush=True,
            )
    print(f"{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
