"""A batch of closest-example queries, one per row, with `ver run --jobs 1` and `--jobs 2`.

    python bench/batch_jobs.py [--rows 200] [--trees 300] [--depth 8] [--norm l1]

Writes a model, a CSV and a spec to a temporary folder, runs the spec once to fill Numba's cache,
then times `ver run SPEC --json --jobs N` as a user would run it (process start, imports and
worker start-up included). Prints both wall times, their ratio, and whether every row got the
same answer. The default batch, the closest L1 counterfactual on 300 trees of depth 8, takes a
few tenths of a second per row on A*: long enough for processes to pay.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import xgboost as xgb

#: The `ver` command of the environment running this script.
VER = str(Path(sys.executable).with_name("ver"))

SPEC = """model clf = xgboost "model.json"
data test = csv "test.csv"
query closest for r in test[0:{rows}] {{
    input x
    where class(clf, x) != class(clf, r)
    minimize {norm}(x, r)
}}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200)
    parser.add_argument("--trees", type=int, default=300)
    parser.add_argument("--depth", type=int, default=8)
    parser.add_argument("--norm", choices=("linf", "l1"), default="l1")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp())
    write_inputs(folder, args)
    spec = folder / "batch.ver"
    ver(spec, 1)  # fills the Numba cache, as any earlier run on this machine would have
    timings, answers = {}, {}
    for jobs in (1, 2):
        start = time.monotonic()
        document = ver(spec, jobs)
        timings[jobs] = time.monotonic() - start
        answers[jobs] = [(r["status"], r["lower"], r["upper"]) for r in document["results"]]
    print(
        f"{args.rows} rows, {args.trees} trees of depth {args.depth}, "
        f"closest {args.norm} example per row, on {os.cpu_count()} cores"
    )
    print(f"--jobs 1: {timings[1]:.2f} s")
    print(f"--jobs 2: {timings[2]:.2f} s")
    same = answers[1] == answers[2]
    ratio = timings[2] / timings[1]
    print(f"ratio jobs 2 / jobs 1: {ratio:.2f}; same answers on every row: {same}")


def write_inputs(folder: Path, args: argparse.Namespace) -> None:
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, size=(4000, 8)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] * X[:, 2] - X[:, 3] + 0.5 * np.sin(6 * X[:, 4]) > 0.5).astype(int)
    params = {"objective": "binary:logistic", "max_depth": args.depth, "eta": 0.1, "seed": 0}
    booster = xgb.train(params, xgb.DMatrix(X, y), num_boost_round=args.trees)
    booster.save_model(folder / "model.json")
    names = ",".join(f"f{i}" for i in range(8))
    np.savetxt(
        folder / "test.csv", X[: args.rows], delimiter=",", header=names, comments="", fmt="%.9g"
    )
    (folder / "batch.ver").write_text(SPEC.format(rows=args.rows, norm=args.norm))


def ver(spec: Path, jobs: int) -> dict:
    command = [VER, "run", str(spec), "--json", "--jobs", str(jobs)]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


if __name__ == "__main__":
    main()
