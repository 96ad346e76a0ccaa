"""What a regression check pays when its first bounds settle it: `ver check` stopping once the
bounds decide every `expect` (status `decided`) against the same check solved to the optimum
(`--to-optimum`), and against the time the engine takes to its first bounds.

    python bench/decided.py [--trees 200] [--depth 6] [--timeout 15] [--repeats 3]

The model is the issue's: an XGBoost regressor of ``--trees`` trees of depth ``--depth`` on 20
random features (seeded), saved as JSON. The spec has three queries in the shape of a
regression test: `maximize m(x)` with `expect upper <= 1000`, `minimize m(x)` with
`expect lower >= -1000`, and a two-instance gap (`x1 == x2 except f0`) with `expect upper <=
1000`: bounds no model of this size can break, so the leaves' bounds settle them. Each run is
`ver check` in this process (Spec.run, A*, after one warm-up run so that JIT compilation is not
counted); times are wall seconds, median of ``--repeats``. "first bounds" is the time of the
first point of the A* trace of each query solved to the optimum, summed over the queries.
The target of issue 40: the decided check within 2x its first bounds.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import xgboost as xgb

from veritas_dsl import load

SPEC = """model m = xgboost "{model}"
query top {{
    input x
    maximize m(x)
    expect upper <= 1000
    solve with astar(timeout = {timeout}s)
}}
query bottom {{
    input x
    minimize m(x)
    expect lower >= -1000
    solve with astar(timeout = {timeout}s)
}}
query gap {{
    input x1, x2
    where x1 == x2 except f0
    maximize m(x2) - m(x1)
    expect upper <= 1000
    solve with astar(timeout = {timeout}s)
}}
"""


def model(path: Path, trees: int, depth: int) -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 20)).astype(np.float32)
    y = X[:, 0] * 2 + np.sin(X[:, 1] * 3) + X[:, 2] * X[:, 3] + rng.normal(size=2000) * 0.1
    booster = xgb.train(
        {"max_depth": depth, "eta": 0.1, "nthread": 1, "seed": 0},
        xgb.DMatrix(X, y, feature_names=[f"f{i}" for i in range(20)]),
        num_boost_round=trees,
    )
    booster.save_model(str(path))


def run(spec, to_optimum: bool):
    start = time.perf_counter()
    runs = spec.run(checks_only=True, to_optimum=to_optimum)
    return time.perf_counter() - start, runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trees", type=int, default=200)
    parser.add_argument("--depth", type=int, default=6)
    parser.add_argument("--timeout", type=float, default=15.0)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "model.json"
        model(path, args.trees, args.depth)
        spec_path = Path(folder) / "check.ver"
        spec_path.write_text(SPEC.format(model=path, timeout=args.timeout))
        spec = load(spec_path)
        run(spec, False)  # warm-up: the kernels compiled or loaded
        decided, optimum, first = [], [], []
        for _ in range(args.repeats):
            seconds, runs = run(spec, False)
            decided.append(seconds)
            statuses = sorted({r.result.termination.value for r in runs})
            verdicts = [c.verdict.value for r in runs for c in r.checks]
            seconds, full = run(spec, True)
            optimum.append(seconds)
            first.append(sum(r.result.trace[0].time_s for r in full if r.result.trace))
            full_verdicts = [c.verdict.value for r in full for c in r.checks]
            full_statuses = sorted({r.result.termination.value for r in full})
    d, o, f = (statistics.median(v) for v in (decided, optimum, first))
    print(f"model: XGBoost {args.trees} trees of depth {args.depth}, 20 features; 3 queries")
    print(f"{'run':<28}{'wall s':>9}  statuses / verdicts")
    print(f"{'ver check (decided)':<28}{d:>9.3f}  {statuses} {verdicts}")
    print(f"{'ver check --to-optimum':<28}{o:>9.3f}  {full_statuses} {full_verdicts}")
    print(f"{'first bounds (sum)':<28}{f:>9.3f}")
    print(f"decided / first bounds: {d / f:.2f}x (target <= 2x)")
    print(f"to-optimum / decided: {o / d:.0f}x")
    print(f"same verdicts: {verdicts == full_verdicts}")


if __name__ == "__main__":
    main()
