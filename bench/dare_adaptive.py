"""The adaptive attack on DaRE forests (Gupta et al., NeurIPS 2021): deletions chosen by reading
the published forest, against deleting the same number of rows at random.

    python bench/dare_adaptive.py [--seeds 300] [--budgets 1,5] [--depth 4]
                                  [--data tail,uniform,breast_cancer]

The adaptive requester (``adaptive``) reads the root of tree 0: its attribute ``a`` and
threshold ``v``. It deletes the rows with the smallest values of ``a`` below ``v``, at most
``budget`` % of the rows, keeping the row just below ``v``: the root keeps both sides, so a
random root keeps ``v``, which now sits near the attribute's new minimum. ``adapt. 2`` does the
same on the side of ``v`` holding fewer rows (from the top down when that is the upper side), so
it also reaches attributes whose range is held by a few large values. The random requester
(``random``) deletes as many rows as ``adaptive``, chosen at random without reading the forest.
Per seed, the forest each requester edits is compared with fits from scratch on the same
remaining rows, same settings:

- KS, p: the two-sample Kolmogorov-Smirnov statistic and p-value (scipy, which comes with
  scikit-learn) between the edited forests' relative root thresholds ``(v - min) / (max - min)``
  (``min``, ``max`` of ``a`` over the remaining rows) and those of fits with other seeds;
- identical: the fraction of seeds whose edited forest equals the fit with the same seed node for
  node (attributes, thresholds, children, counts).

Configurations: R-DaRE (``random_depth=1``, ``k=10``, ``max_features="sqrt"``) and the
deterministic one (``random_depth=0``, ``k=None``, ``max_features=None``). Data: ``tail``, 4
attributes with a long lower tail (a few rows hold most of the range); ``uniform``, 4 uniform
attributes (the range is spread over every row); ``breast_cancer``, scikit-learn's bundled set
(its attributes have long upper tails). All 300 rows but breast_cancer's 569.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from scipy.stats import ks_2samp
from sklearn.datasets import load_breast_cancer

from veritas_dsl.unlearning import DareForest

CONFIGS = {
    "R-DaRE": dict(random_depth=1, k=10, max_features="sqrt"),
    "determ.": dict(random_depth=0, k=None, max_features=None),
}
REQUESTERS = ("adaptive", "adapt. 2", "random")
NODE_FIELDS = ("kind", "feature", "threshold", "left", "right", "count", "positives")


def data(name: str) -> tuple[np.ndarray, np.ndarray]:
    if name == "breast_cancer":
        X, y = load_breast_cancer(return_X_y=True)
        return X.astype(np.float32), y
    rng = np.random.default_rng(0)
    n, p = 300, 4
    X = rng.uniform(0, 1, (n, p)) if name == "uniform" else -rng.lognormal(0, 1, (n, p))
    z = (X - X.mean(axis=0)) / X.std(axis=0)
    y = (z.sum(axis=1) + rng.normal(0, 1, n) > 0).astype(int)
    return X.astype(np.float32), y


def adaptive(forest: DareForest, X: np.ndarray, budget: int, side: str = "low") -> np.ndarray:
    """The ids an adaptive requester deletes: on one side of the root's threshold, the values of
    its attribute farthest from it, at most ``budget``, keeping the nearest. ``side`` is
    ``"low"`` (below the threshold) or ``"fewer"`` (the side holding fewer rows)."""
    view = forest.view()
    attribute, threshold = int(view.feature[0]), view.threshold[0]
    ids = forest.remaining()
    below = X[ids, attribute] <= threshold
    low = side == "low" or below.sum() <= (~below).sum()
    chosen = ids[below] if low else ids[~below]
    order = np.argsort(X[chosen, attribute], kind="stable")
    chosen = chosen[order] if low else chosen[order[::-1]]
    return chosen[: max(0, min(budget, len(chosen) - 1))]


def relative(forest: DareForest, rows: np.ndarray) -> float:
    """The root's threshold relative to its attribute's range over ``rows``."""
    view = forest.view()
    values = rows[:, int(view.feature[0])].astype(np.float64)
    return float((view.threshold[0] - values.min()) / (values.max() - values.min()))


def same(a: DareForest, b: DareForest) -> bool:
    va, vb = a.view(), b.view()
    return all(np.array_equal(getattr(va, f), getattr(vb, f)) for f in NODE_FIELDS)


def trial(X, y, params: dict, seed: int, seeds: int, deleted: np.ndarray) -> tuple:
    """``(edited's relative threshold, other seed's fit's, edited == same seed's fit)`` after
    deleting ``deleted`` from the forest fit with ``seed``."""
    forest = DareForest(**params, random_state=seed).fit(X, y)
    if len(deleted):
        forest.delete(deleted)
    keep = np.setdiff1d(np.arange(len(X)), deleted)
    other = DareForest(**params, random_state=seeds + seed).fit(X[keep], y[keep])
    twin = DareForest(**params, random_state=seed).fit(X[keep], y[keep])
    return relative(forest, X[keep]), relative(other, X[keep]), same(forest, twin)


def run(X, y, params: dict, budget: int, seeds: int) -> dict[str, dict]:
    """The requesters over ``seeds`` seeds: per requester, the three columns of the table."""
    samples: dict[str, list] = {name: [] for name in REQUESTERS}
    counts: dict[str, list] = {name: [] for name in REQUESTERS}
    for seed in range(seeds):
        forest = DareForest(**params, random_state=seed).fit(X, y)
        low = adaptive(forest, X, budget, "low")
        fewer = adaptive(forest, X, budget, "fewer")
        at_random = np.random.default_rng(seed).choice(len(X), len(low), replace=False)
        for name, deleted in zip(REQUESTERS, (low, fewer, at_random), strict=True):
            samples[name].append(trial(X, y, params, seed, seeds, deleted))
            counts[name].append(len(deleted))
    out = {}
    for requester, rows in samples.items():
        edited, fresh, identical = (np.array(column) for column in zip(*rows, strict=True))
        test = ks_2samp(edited, fresh)
        out[requester] = {
            "deleted": statistics.median(counts[requester]),
            "edited": edited.mean(),
            "fresh": fresh.mean(),
            "ks": test.statistic,
            "p": test.pvalue,
            "identical": identical.mean(),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=300)
    parser.add_argument("--budgets", default="1,5", help="% of the rows, comma-separated")
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--data", default="tail,uniform,breast_cancer")
    args = parser.parse_args()
    budgets = [float(b) for b in args.budgets.split(",")]
    X, y = data("uniform")
    DareForest(n_trees=1, max_depth=2).fit(X, y).delete([0])  # warm-up: Numba compiles
    print(
        f"{args.seeds} seeds, 1 tree of depth {args.depth}; rel = mean relative root threshold "
        "(edited | fit again), identical = edited equals the same seed's fit node for node"
    )
    print(
        f"{'data':<14}{'n':>5} {'config':<8}{'budget':>7} {'requester':<10}{'deleted':>8}"
        f"{'rel edit':>9}{'rel fit':>8}{'KS':>7}{'p':>10}{'identical':>10}"
    )
    start = time.perf_counter()
    for name in args.data.split(","):
        X, y = data(name)
        for config, settings in CONFIGS.items():
            params = dict(n_trees=1, max_depth=args.depth, **settings)
            for percent in budgets:
                budget = round(percent / 100 * len(X))
                for requester, r in run(X, y, params, budget, args.seeds).items():
                    print(
                        f"{name:<14}{len(X):>5} {config:<8}{percent:>6g}% {requester:<10}"
                        f"{r['deleted']:>8g}{r['edited']:>9.3f}{r['fresh']:>8.3f}{r['ks']:>7.3f}"
                        f"{r['p']:>10.2g}{r['identical']:>10.0%}"
                    )
    print(f"{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
