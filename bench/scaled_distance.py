"""A* on closest examples, unscaled and scaled: median CPU time per query, and states expanded.

    python bench/scaled_distance.py [--rows 10] [--timeout 60] [--trees 100] [--depth 6]

The model and rows are those of bench/milp.py (XGBoost on a 10-feature task). Per row, the
closest input of the other class in L1 and L-inf: unscaled, scaled by every feature's MAD over
the data (weights 1/MAD; ``scale = mad(train)``), and with weights of 1 (the weighted code path
of the kernels at the unweighted answer). Witnesses are validated; the weights-of-1 answers must
equal the unscaled ones. Run it on two checkouts to compare the unscaled times across versions
(``--unscaled-only`` runs what an older checkout has).
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import replace

import numpy as np
from milp import data, features, margin, model

from veritas_dsl.ir import MinimizeDistance, OutputConstraint, OutputTerm, Query, Row
from veritas_dsl.solvers.astar.engine import AStarEngine
from veritas_dsl.solvers.base import Limits
from veritas_dsl.validate import validate_witness


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10)
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--trees", type=int, default=100)
    parser.add_argument("--depth", type=int, default=6)
    parser.add_argument("--unscaled-only", action="store_true")
    args = parser.parse_args()
    X, y = data()
    clf = model(X, y, args.trees, args.depth)
    mad = np.median(np.abs(X - np.median(X, axis=0)), axis=0).astype(np.float64)
    variants = {"unscaled": None}
    if not args.unscaled_only:
        variants["weights 1"] = (1.0,) * X.shape[1]
        variants["mad"] = tuple(float(1.0 / s) if s > 0 else 1.0 for s in mad)
    engine = AStarEngine()
    out = OutputTerm((margin(),))
    engine.solve(_query(clf, X, 0, out, "l1", None), Limits(timeout_s=args.timeout))  # compile
    print(f"XGBoost {args.trees} trees x depth {args.depth}, {args.rows} rows, A*")
    answers: dict[tuple[str, str, int], float] = {}
    for norm in ("l1", "linf"):
        for name, weights in variants.items():
            times, exact, states = [], 0, 0
            for i in range(args.rows):
                query = _query(clf, X, i, out, norm, weights)
                start = time.process_time()  # CPU: the machine is shared
                result = engine.solve(query, Limits(timeout_s=args.timeout))
                times.append(time.process_time() - start)
                states += int(result.stats.get("states_expanded", 0))
                for witness in result.witnesses:
                    validate_witness(query, witness)
                exact += result.exact
                answers[norm, name, i] = result.upper
            print(
                f"{norm:>5} {name:>10}: median {statistics.median(times) * 1000:8.1f} ms, "
                f"max {max(times) * 1000:8.1f} ms, {exact}/{args.rows} exact, {states} states"
            )
        if "weights 1" in variants:
            same = all(
                answers[norm, "weights 1", i] == answers[norm, "unscaled", i]
                for i in range(args.rows)
            )
            print(f"{norm:>5} weights of 1 answer as unscaled: {same}")


def _query(clf, X, i: int, out, norm: str, weights) -> Query:
    row = Row(tuple(float(v) for v in X[i]), label=f"test[{i}]")
    flip = "<=" if clf.eval(X[i : i + 1])[0] > 0 else ">"
    goal = MinimizeDistance(norm, "x", row)
    if weights is not None:
        goal = replace(goal, weights=weights)
    constraints = (OutputConstraint(out, flip, 0.0),)
    return Query(f"cf{i}", features(clf), ("x",), {"clf": clf}, constraints, goal)


if __name__ == "__main__":
    main()
