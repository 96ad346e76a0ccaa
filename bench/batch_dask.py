"""A 2,000-row closest-example batch with `ver run --jobs 2` and on a Dask LocalCluster of 2
workers (`--scheduler`), and the throughput to expect from N workers.

    python bench/batch_dask.py [--rows 2000] [--trees 50] [--depth 4]

Writes a model, a CSV and a spec to a temporary folder, runs the spec once to fill Numba's cache,
then times `ver run SPEC --json` as a user would run it (process start and imports included),
with `--jobs 2` and with `--scheduler` on a LocalCluster of 2 worker processes (one thread each)
started beforehand, as a cluster a user keeps running is. It also measures:

- c, the compute time of a row in one process (the batch run in-process, after a warm-up);
- S, the fixed cost of a cluster run (a 1-row batch on the cluster: process start, connecting,
  every worker loading the spec);
- o, the overhead of a task on the cluster: a cluster run of R rows on W workers keeps each
  worker busy for about (wall - S), so o = (wall - S) * W / R - c;
- the scheduler's ceiling: tasks per second it hands out for tasks that do nothing.

From these, a run of R rows on N workers takes about S + R * (c + o) / N seconds, i.e.
N / (c + o) rows per second, until that reaches the scheduler's ceiling.
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
from distributed import Client, LocalCluster

VER = [sys.executable, "-m", "veritas_dsl.cli"]

SPEC = """model clf = xgboost "model.json"
data test = csv "test.csv"
query closest for r in test[0:{rows}] {{
    input x
    where class(clf, x) != class(clf, r)
    minimize linf(x, r)
}}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--trees", type=int, default=50)
    parser.add_argument("--depth", type=int, default=4)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp())
    write_inputs(folder, args.rows, args.trees, args.depth)
    spec, one = folder / "batch.ver", folder / "one.ver"
    one.write_text(SPEC.format(rows=1))
    ver(one, ["--jobs", "1"])  # fills the Numba cache, as any earlier run would have
    c = compute_per_row(spec)
    jobs_s, jobs_answers = timed(spec, ["--jobs", "2"])
    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        address = ["--scheduler", cluster.scheduler_address]
        ver(one, address)  # the workers load their compiled kernels once, as a kept cluster has
        fixed_s, _ = timed(one, address)
        dask_s, dask_answers = timed(spec, address)
        with Client(cluster) as client:
            ceiling = scheduler_ceiling(client)
    rows, workers = args.rows, 2
    overhead = (dask_s - fixed_s) * workers / rows - c
    print(
        f"{rows} rows, closest linf example on {args.trees} trees of depth {args.depth}, "
        f"{os.cpu_count()} cores (load average {os.getloadavg()[0]:.1f})"
    )
    print(f"compute per row in one process: c = {c * 1e3:.2f} ms")
    print(f"--jobs 2:              {jobs_s:7.2f} s  {rows / jobs_s:7.1f} rows/s")
    print(f"LocalCluster(2):       {dask_s:7.2f} s  {rows / dask_s:7.1f} rows/s")
    print(f"same answers on every row: {jobs_answers == dask_answers}")
    print(f"fixed cost of a cluster run (1 row): S = {fixed_s:.2f} s")
    print(
        f"overhead per task: o = ({dask_s:.2f} - {fixed_s:.2f}) * 2 / {rows} - c "
        f"= {overhead * 1e3:.2f} ms"
    )
    print(f"scheduler ceiling (no-op tasks): {ceiling:.0f} tasks/s")
    per_row = c + max(overhead, 0.0)
    print(
        "expected on N workers: min(N / (c + o), ceiling) = "
        f"min(N * {1 / per_row:.1f}, {ceiling:.0f}) rows/s"
    )
    for n in (1, 2, 4, 8, 16, 32, 64):
        rate = min(n / per_row, ceiling)
        wall = fixed_s + rows / rate
        print(
            f"  N = {n:3d}: {rate:8.1f} rows/s, {rows} rows in {wall:7.1f} s, "
            f"100,000 rows in {fixed_s + 1e5 / rate:8.0f} s"
        )


def write_inputs(folder: Path, rows: int, trees: int, depth: int) -> None:
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, size=(max(4000, rows), 8)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] * X[:, 2] - X[:, 3] + 0.5 * np.sin(6 * X[:, 4]) > 0.5).astype(int)
    params = {"objective": "binary:logistic", "max_depth": depth, "eta": 0.3, "seed": 0}
    booster = xgb.train(params, xgb.DMatrix(X, y), num_boost_round=trees)
    booster.save_model(folder / "model.json")
    names = ",".join(f"f{i}" for i in range(8))
    np.savetxt(folder / "test.csv", X[:rows], delimiter=",", header=names, comments="", fmt="%.9g")
    (folder / "batch.ver").write_text(SPEC.format(rows=rows))


def compute_per_row(spec: Path) -> float:
    """Seconds per row of the batch solved in this process (spec loaded, kernels ready)."""
    from veritas_dsl import load

    loaded = load(spec)
    loaded.run(jobs=1)  # warm-up: kernels compiled or loaded from the cache
    start = time.monotonic()
    runs = loaded.run(jobs=1)
    return (time.monotonic() - start) / len(runs)


def ver(spec: Path, options: list[str]) -> dict:
    done = subprocess.run(
        [*VER, "run", str(spec), "--json", *options], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)


def timed(spec: Path, options: list[str]) -> tuple[float, list]:
    start = time.monotonic()
    document = ver(spec, options)
    answers = [(r["row"], r["status"], r["lower"], r["upper"]) for r in document["results"]]
    return time.monotonic() - start, answers


def scheduler_ceiling(client: Client, tasks: int = 2000) -> float:
    """Tasks per second the scheduler hands out when the tasks themselves cost nothing."""
    client.gather(client.map(_nothing, range(100), pure=False))  # warm-up
    start = time.monotonic()
    client.gather(client.map(_nothing, range(tasks), pure=False))
    return tasks / (time.monotonic() - start)


def _nothing(i: int) -> int:
    return i


if __name__ == "__main__":
    main()
