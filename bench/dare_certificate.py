"""How loose the worst-case certificate (``worst_case``) is, on tiny data where every deletion of at
most k rows can be enumerated.

    python bench/dare_certificate.py [--seeds 40] [--rows 12] [--repeat 4] [--depth 2]

Per configuration and k: over ``--seeds`` data sets (``--rows`` rows of ``--rows / --repeat``
distinct ones, 2 attributes in {0, 1, 2}, 3 trees), how many forests are certified, how many are
refused, and of those how many a deletion really changes (some split moves, or a node becomes a
leaf: the refusal was needed). For certified ones, the gap between the bounds and the true
extremes over every deletion, at every cell of the grid (mean and largest), in probability.
"""

from __future__ import annotations

import argparse
import copy
import itertools

import numpy as np

from veritas_dsl.unlearning import DareForest, UnstableError, worst_case

CONFIGS = {
    "deterministic": dict(k=None, max_features=None, random_depth=0),
    "k=1, 1 attribute": dict(k=1, max_features=1, random_depth=0),
    "random root": dict(k=None, max_features=None, random_depth=1),
    "random root, k=2, 1 attr.": dict(k=2, max_features=1, random_depth=1),
}


def data(seed: int, rows: int, repeat: int):
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 3, (rows // repeat, 2))
    X = np.repeat(base, repeat, axis=0).astype(np.float32)
    y = (rng.random(rows) < np.repeat(0.15 + 0.7 * (base[:, 0] >= 1), repeat)).astype(int)
    return X, y


def structure(forest: DareForest):
    view = forest.view()
    return view.kind.tobytes(), view.feature.tobytes(), view.threshold.tobytes()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=40)
    parser.add_argument("--rows", type=int, default=12)
    parser.add_argument("--repeat", type=int, default=4)
    parser.add_argument("--depth", type=int, default=2)
    args = parser.parse_args()
    grid = np.array(list(itertools.product(np.arange(-0.5, 2.75, 0.5), repeat=2)), np.float32)
    print("| config | k | certified | refused | of which needed | gap mean | gap max |")
    print("|---|---|---|---|---|---|---|")
    for name, settings in CONFIGS.items():
        for k in (1, 2, 3):
            certified = refused = needed = 0
            gaps = []
            for seed in range(args.seeds):
                X, y = data(seed, args.rows, args.repeat)
                if len(set(y)) < 2:
                    continue
                forest = DareForest(
                    n_trees=3, max_depth=args.depth, random_state=seed, **settings
                ).fit(X, y)
                afters = [
                    copy.deepcopy(forest).delete(list(rows))
                    for size in range(1, k + 1)
                    for rows in itertools.combinations(range(len(X)), size)
                ]
                try:
                    lower, upper = worst_case(forest, k)
                except UnstableError:
                    refused += 1
                    needed += any(structure(a) != structure(forest) for a in afters)
                    continue
                certified += 1
                values = np.stack([a.predict_proba(grid)[:, 1] for a in afters])
                gaps.extend(values.min(axis=0) - lower.eval(grid))
                gaps.extend(upper.eval(grid) - values.max(axis=0))
            gap = f"{np.mean(gaps):.3f} | {np.max(gaps):.3f}" if gaps else "- | -"
            print(f"| {name} | {k} | {certified} | {refused} | {needed} | {gap} |")


if __name__ == "__main__":
    main()
