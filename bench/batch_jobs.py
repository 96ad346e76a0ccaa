"""A batch of 200 closest-adversarial-example queries on one process and on two.

    python bench/batch_jobs.py [--rows 200] [--trees 100] [--depth 6]

Prints the wall time of each, their ratio, and whether every row got the same answer.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import xgboost as xgb

from veritas_dsl import parse

SPEC = """model clf = xgboost "model.json"
data test = csv "test.csv"
query closest for r in test[0:{rows}] {{
    input x
    where class(clf, x) != class(clf, r)
    minimize linf(x, r)
}}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=200)
    parser.add_argument("--trees", type=int, default=100)
    parser.add_argument("--depth", type=int, default=6)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, size=(4000, 8)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] * X[:, 2] - X[:, 3] + 0.5 * np.sin(6 * X[:, 4]) > 0.5).astype(int)
    folder = Path(tempfile.mkdtemp())
    params = {"objective": "binary:logistic", "max_depth": args.depth, "eta": 0.1, "seed": 0}
    xgb.train(params, xgb.DMatrix(X, y), num_boost_round=args.trees).save_model(
        folder / "model.json"
    )
    names = ",".join(f"f{i}" for i in range(8))
    np.savetxt(
        folder / "test.csv", X[: args.rows], delimiter=",", header=names, comments="", fmt="%.9g"
    )
    text = SPEC.format(rows=args.rows)
    path = str(folder / "batch.ver")

    spec = parse(text, path)
    spec.run(jobs=1, checks_only=False)  # warm the compiled kernels before timing
    timings, answers = {}, {}
    for jobs in (1, 2):
        start = time.monotonic()
        runs = parse(text, path).run(jobs=jobs)
        timings[jobs] = time.monotonic() - start
        answers[jobs] = [(r.result.termination, r.result.lower, r.result.upper) for r in runs]
    same = answers[1] == answers[2]
    print(
        f"{args.rows} rows, {args.trees} trees of depth {args.depth}, closest L-inf example per row"
    )
    print(f"--jobs 1: {timings[1]:.2f} s")
    print(f"--jobs 2: {timings[2]:.2f} s")
    print(
        f"ratio jobs 2 / jobs 1: {timings[2] / timings[1]:.2f}; same answers on every row: {same}"
    )


if __name__ == "__main__":
    main()
