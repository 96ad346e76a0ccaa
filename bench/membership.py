"""Membership attacks on a deletion (issue 41 item 1): how well an attacker who queries a DaRE
forest before and after a deletion tells the deleted rows from rows never trained on, for three
configurations, beside the retraining baseline played in the same run.

Per data set and seed: a random split into the target's training rows and the
rows outside it; a forest of the configuration fit with ``random_state=seed``; ``--batches``
deletions of ``--rows`` random training rows each, each deleted from the forest apart;
``veritas_dsl.unlearning.membership.play`` with ``--shadows`` shadow forests then scores the
deleted rows against as many outside rows. Each cell is the mean over the seeds with its 95 %
Student-t interval across seeds. ``auc``: M_A's AUC; ``PriAA``: |mean decision - 0.5| over
the deleted rows; ``adv``: max TPR - FPR; ``probe``: the AUC of the score |Mu - Mo| alone (the
issue's probe). In the deterministic configuration a fit with a new seed is the deletion's
forest (nothing is drawn), so its retraining row is the deletion's.

    python bench/membership.py [--seeds 5] [--shadows 3] [--batches 8] [--rows 5]
        [--sets breast_cancer,synthetic] [--configs deterministic,default,R-DaRE,sharded]

``sharded``: a ShardedForest (5 shards of R-DaRE forests of a fifth of the trees each, labels
at epsilon 0.2), whose posterior is the probability of the label it publishes.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from sklearn.datasets import load_breast_cancer, make_classification

from veritas_dsl.unlearning import DareForest, ShardedForest
from veritas_dsl.unlearning.membership import METRICS, UNLEARNINGS, estimate, play

CONFIGS = {
    "deterministic": {"k": None, "max_features": None},
    "default": {},
    "R-DaRE": {"random_depth": 2},
    # Item 3: R-DaRE forests on 5 shards, a published label's probability read by the attacker.
    "sharded": {"n_shards": 5, "epsilon": 0.2, "random_depth": 2},
}


def data_sets(names: list[str]) -> dict:
    sets = {}
    if "breast_cancer" in names:
        X, y = load_breast_cancer(return_X_y=True)
        sets["breast_cancer"] = (X, y, 400, 100)  # rows, train rows, trees
    if "synthetic" in names:
        X, y = make_classification(2000, 20, n_informative=5, random_state=0)
        sets["synthetic"] = (X, y, 1000, 50)
    return sets


def cell(estimated) -> str:
    if estimated.low is None:
        return f"{estimated.mean:.3f}"
    return f"{estimated.mean:.3f} [{estimated.low:.3f}, {estimated.high:.3f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--shadows", type=int, default=3)
    parser.add_argument("--batches", type=int, default=8, help="deletions per target")
    parser.add_argument("--rows", type=int, default=5, help="rows per deletion")
    parser.add_argument("--sets", default="breast_cancer,synthetic")
    parser.add_argument("--configs", default=",".join(CONFIGS))
    args = parser.parse_args()
    print(
        f"{args.seeds} seeds, {args.shadows} shadows, {args.batches} deletions of {args.rows} "
        f"rows each per target; load average {os.getloadavg()[0]:.1f} at start"
    )
    header = ["auc", "PriAA", "adv", "probe"]
    for name, (X, y, n_train, trees) in data_sets(args.sets.split(",")).items():
        print(f"\n{name}: {len(X)} rows x {X.shape[1]}, {n_train} in training, {trees} trees")
        print("| config | unlearning | " + " | ".join(header) + " | CPU s |")
        print("|---" * (len(header) + 3) + "|")
        for config in args.configs.split(","):
            params = CONFIGS[config]
            start = time.process_time()
            per_seed: dict[str, list[dict]] = {}
            unlearnings = UNLEARNINGS if config != "deterministic" else {
                "delete": UNLEARNINGS["delete"]
            }
            for seed in range(args.seeds):
                rng = np.random.default_rng(seed)
                order = rng.permutation(len(X))
                train, out = order[:n_train], order[n_train:]
                if "n_shards" in params:  # as many trees in all, split among the shards
                    shards = params["n_shards"]
                    forest = ShardedForest(n_trees=trees // shards, random_state=seed, **params)
                else:
                    forest = DareForest(n_trees=trees, random_state=seed, **params)
                forest.fit(X[train], y[train])
                chosen = rng.choice(n_train, args.batches * args.rows, replace=False)
                batches = chosen.reshape(args.batches, args.rows)
                found = play(forest, batches, X[out], y[out], seed, args.shadows, unlearnings)
                for unlearning, scores in found.items():
                    per_seed.setdefault(unlearning, []).append(scores.metrics())
            seconds = time.process_time() - start
            for unlearning, seeds in per_seed.items():
                cells = [cell(estimate([s[m] for s in seeds])) for m in METRICS]
                label = unlearning if config != "deterministic" else "delete = retrain"
                print(f"| {config} | {label} | " + " | ".join(cells) + f" | {seconds:.0f} |")


if __name__ == "__main__":
    main()
