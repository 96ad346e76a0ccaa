"""DaRE's deletion benchmark (Brophy & Lowd 2021, issue 15 (a)): deletions per naive retraining.

For each data set and for G-DaRE (``random_depth=0``) and R-DaRE (``random_depth=--rdepth``),
with the defaults otherwise (100 trees, depth 10, k=10, max_features="sqrt"): the time of one
naive retraining (``fit`` from scratch on every row), then the median and mean time of one
``delete`` under two adversaries, and the ratio retraining / mean deletion:

- random: rows drawn uniformly, deleted one after another from the same forest;
- worst of 1,000: before each deletion, 1,000 random candidate rows are ranked by a cheap
  proxy of what their deletion costs, and the worst is deleted. The proxy is the number of
  training rows in the nodes on the row's paths whose split one deletion can flip: greedy
  nodes of at least n/64 rows whose best and second-best sampled splits score within 4 of each
  other (one row moves a score by less than 2) and random nodes with a side of one row.

With ``--budget``, each forest then goes on deleting random rows until the deletions have taken
as long as the retraining did (DaRE's protocol over a long sequence, where memos of retired
subtrees pay off): the number done is printed with their mean time.

Data, all offline: make_classification(100_000, 40, random_state=0), scikit-learn's
breast_cancer and digits (digit 0 against the rest). Numba is warmed up first.

    python bench/dare_deletion.py                    # default: a few minutes on 2 cores
    python bench/dare_deletion.py --random 20 --worst 3 --sets synthetic
    python bench/dare_deletion.py --sets synthetic --budget   # adds about two retrainings
    python bench/dare_deletion.py --sets synthetic --cpu      # CPU time, on a loaded machine
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits, make_classification

from veritas_dsl.model.dare.kernels import gini, threshold_key
from veritas_dsl.model.dare.tree import GREEDY, RANDOM
from veritas_dsl.unlearning import DareForest

TARGETS = {"G-DaRE": 250, "R-DaRE": 1000}  # deletions per retraining, random adversary
clock = time.perf_counter  # time.process_time with --cpu


def data_sets(names):
    out = {}
    if "synthetic" in names:
        X, y = make_classification(100_000, 40, random_state=0)
        out["synthetic 100k x 40"] = (X, y)
    if "breast_cancer" in names:
        out["breast_cancer 569 x 30"] = load_breast_cancer(return_X_y=True)
    if "digits" in names:
        X, y = load_digits(return_X_y=True)
        out["digits 1797 x 64 (0 vs rest)"] = (X, (y == 0).astype(int))
    return out


def _margin(cache, n, positives, k, seed) -> float:
    """Best minus second-best score among the node's sampled splits."""
    attrs, _, cand, values = cache
    scores = []
    for a in attrs:
        rows = np.flatnonzero((cand[:, 0] == a) & (cand[:, 7] == 1))
        keys = [threshold_key(seed, a, (values[c, 0] + values[c, 1]) / 2.0) for c in rows]
        sample = rows[np.argsort(np.array(keys, dtype=np.uint64))][:k]
        scores += [_score(gini(cand[c, 1], cand[c, 2], n, positives), n) for c in sample]
    scores.sort(reverse=True)
    return scores[0] - scores[1] if len(scores) > 1 else np.inf


def _score(g, n) -> float:
    """Gini's score ``n - 2 G`` of a cut's exact ``G`` (:func:`gini`), as a float."""
    whole, rest, den = g
    return n - 2 * (whole + rest / den)


def fragile_weight(forest: DareForest, candidates: np.ndarray) -> np.ndarray:
    """The proxy cost of deleting each candidate row (module docstring)."""
    n_all = len(forest.remaining())
    k = forest.k or 10**9
    weight = np.zeros(len(candidates))
    for tree in forest._trees:
        leaves = tree.leaf_of[candidates]
        for node in range(len(tree.kind)):
            n = tree.count[node]
            if tree.kind[node] == RANDOM:
                small = min(tree.count[tree.left[node]], tree.count[tree.right[node]])
                fragile = small == 1
            elif tree.kind[node] == GREEDY and 64 * n >= n_all and node in tree.cache:
                cache, seed = tree.cache[node], tree.seed[node]
                fragile = _margin(cache, n, tree.positives[node], k, seed) < 4.0
            else:
                continue
            if fragile:
                inside = (leaves >= node) & (leaves < tree.end[node])
                weight[inside] += n
    return weight


def measure(X, y, params, n_random, n_worst, budget, seed=0):
    rng = np.random.default_rng(seed)
    start = clock()
    forest = DareForest(**params).fit(X, y)
    fit = clock() - start
    random_times, worst_times, regrew = [], [], []
    for r in rng.choice(len(X), n_random, replace=False):
        start = clock()
        forest.delete([int(r)])
        random_times.append(clock() - start)
        regrew.append(forest.last_deletion_cost > 0)
    for _ in range(n_worst):
        alive = forest.remaining()
        candidates = rng.choice(alive, min(1000, len(alive) - 1), replace=False)
        worst = candidates[int(np.argmax(fragile_weight(forest, candidates)))]
        start = clock()
        forest.delete([int(worst)])
        worst_times.append(clock() - start)
    spent, done = 0.0, 0
    if budget:
        alive = forest.remaining()
        for r in rng.choice(alive, min(len(alive) - 1, 10**6), replace=False):
            if spent >= fit:
                break
            start = clock()
            forest.delete([int(r)])
            spent, done = spent + clock() - start, done + 1
    return fit, random_times, worst_times, np.array(regrew), (done, spent)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--random", type=int, default=40, help="random deletions per forest")
    parser.add_argument("--worst", type=int, default=5, help="worst-of-1,000 deletions")
    parser.add_argument("--trees", type=int, default=100)
    parser.add_argument("--rdepth", type=int, default=2, help="R-DaRE's random_depth")
    parser.add_argument("--sets", default="synthetic,breast_cancer,digits")
    parser.add_argument(
        "--budget", action="store_true", help="count deletions done in one retraining's time"
    )
    parser.add_argument(
        "--cpu", action="store_true", help="CPU time (process_time) instead of wall time"
    )
    args = parser.parse_args()
    global clock
    clock = time.process_time if args.cpu else time.perf_counter
    DareForest(n_trees=2, random_depth=1).fit(*load_breast_cancer(return_X_y=True)).delete([0])
    configs = {"G-DaRE": 0, "R-DaRE": args.rdepth}
    head = (
        f"{'data set':30} {'model':7} {'retrain s':>9} {'random med ms':>13} {'mean ms':>8} "
        f"{'ratio':>7} {'target':>6} {'worst med ms':>12} {'mean ms':>8} {'ratio':>7} "
        f"{'regrew':>6} {'other med ms':>12}"
    )
    print(f"trees={args.trees} depth=10 k=10 max_features=sqrt; R-DaRE random_depth={args.rdepth}")
    print("times: " + ("CPU (process_time)" if args.cpu else "wall clock"))
    print(f"random: {args.random} deletions; worst of 1,000: {args.worst} deletions")
    print(head)
    print("-" * len(head))
    for name, (X, y) in data_sets(args.sets.split(",")).items():
        for model, depth in configs.items():
            params = dict(n_trees=args.trees, random_depth=depth)
            fit, rand, worst, regrew, (done, spent) = measure(
                X, y, params, args.random, args.worst, args.budget
            )
            calm = np.array(rand)[~regrew]
            rmean, wmean = statistics.mean(rand), statistics.mean(worst) if worst else np.nan
            print(
                f"{name:30} {model:7} {fit:9.2f} {1e3 * statistics.median(rand):13.2f} "
                f"{1e3 * rmean:8.2f} {fit / rmean:7.0f} {TARGETS[model]:>6} "
                f"{1e3 * statistics.median(worst) if worst else np.nan:12.2f} "
                f"{1e3 * wmean:8.2f} {fit / wmean:7.0f} {regrew.mean():6.0%} "
                f"{1e3 * np.median(calm) if len(calm) else np.nan:12.2f}",
                flush=True,
            )
            if args.budget:
                print(
                    f"{'':30} {model:7} in one retraining's time: {done} more random "
                    f"deletions, mean {1e3 * spent / max(done, 1):.2f} ms"
                    + (" (ran out of rows)" if spent < fit else ""),
                    flush=True,
                )
    print("target: a 100-tree forest on the 100k set deletes a row in under 10 ms (median)")
    print("regrew: share of the random deletions that grew a subtree again (last_deletion_cost")
    print("> 0); other med ms: median time of the other random deletions")


if __name__ == "__main__":
    main()
