"""The ROCERF protocol on trees (issue 16; Krishna, Ma & Lakkaraju): do counterfactuals stay valid
after training rows are deleted?

For each data set (a German-credit-like one shipped in examples/data/german_credit.csv, made by
examples/make_examples.py, and scikit-learn's breast cancer set), fits a DareForest of random
nodes: of ``--seeds`` fits (random_state 0, 1, ...), the most accurate one whose worst case after
deleting ``--k`` rows is certified (``worst_case``; greedy nodes on these data are refused at
k = 1: a rival cut within one row, or a threshold between single rows). For the first
``--rows`` test rows the forest rejects, it then asks, through the language, for the closest
counterfactual under ``l1(x, r, scale = mad(train))`` with A*:

- plain: ``class(before, x) == 1``;
- robust: ``class(m, x) == 1 for m in V``, V = ``deletions(before, fraction = --fraction,
  count = --variants)``;
- certified: ``class(w, x) == 1``, w = ``worst_case(before, deletions = k)``.

Then it deletes ``alpha`` % of the training rows at random (``DareForest.delete`` on a copy),
``--draws`` times per alpha, and reports per method and alpha: validity (the share of (row,
deletion) pairs the deleted forest's ``predict_proba`` still grants, > 0.5) and the median cost
(L1 and L-inf, scaled by the training rows' MAD, a MAD of 0 counting 1, as the language does),
and the median A* time per counterfactual. Validity and cost are over the rows every method
answered (``found`` says how many each did), with the same random deletions for each method.

    python bench/recourse.py                     # 25 rows, 100 draws per alpha (a few minutes)
    python bench/recourse.py --rows 5 --draws 10 # a quick run
"""

from __future__ import annotations

import argparse
import copy
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from sklearn.datasets import load_breast_cancer

from veritas_dsl import parse
from veritas_dsl.model.certificate import unstable_nodes
from veritas_dsl.unlearning import DareForest

ROOT = Path(__file__).resolve().parents[1]
ALPHAS = (0.5, 1, 2, 3, 5)
METHODS = ("plain", "robust", "certified")
#: Forest settings per data set: random nodes only (certifiable), shallow, large leaves.
SETTINGS = {
    "german": dict(n_trees=20, max_depth=2, min_samples_leaf=50),
    "cancer": dict(n_trees=10, max_depth=2, min_samples_leaf=50),
}


def german() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    table = np.loadtxt(ROOT / "examples" / "data" / "german_credit.csv", delimiter=",", skiprows=1)
    X, y = table[:, :-1].astype(np.float32), table[:, -1].astype(int)
    return X[:750], y[:750], X[750:], y[750:]


def cancer() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    data = load_breast_cancer()
    X, y = data.data.astype(np.float32), data.target.astype(int)
    order = np.random.default_rng(0).permutation(len(X))
    train, test = order[:426], order[426:]
    return X[train], y[train], X[test], y[test]


def certified_forest(X, y, X_test, y_test, k: int, seeds: int, settings: dict):
    """The most accurate of ``seeds`` random-node fits whose structure no deletion of ``k`` rows
    changes (then ``worst_case(forest, k)`` is accepted); None if none is."""
    best = None
    for seed in range(seeds):
        forest = DareForest(random_depth=settings["max_depth"], random_state=seed, **settings).fit(
            X, y
        )
        if unstable_nodes(forest, k):
            continue
        accuracy = float(np.mean((forest.predict_proba(X_test)[:, 1] > 0.5) == y_test))
        if best is None or accuracy > best[1]:
            best = (forest, accuracy, seed)
    return best


def spec_text(k: int, fraction: float, variants: int, timeout: float) -> str:
    head = (
        'model before = dare "before.dare"\n'
        f"models V = deletions(before, fraction = {fraction}, count = {variants}, seed = 1)\n"
        f"model w = worst_case(before, deletions = {k})\n"
        'data train = csv "train.csv"\ndata rejected = csv "rejected.csv"\n'
        "features from train\n"
    )
    conditions = {
        "plain": "class(before, x) == 1",
        "robust": "class(m, x) == 1 for m in V",
        "certified": "class(w, x) == 1",
    }
    queries = [
        f"query {name} for r in rejected[:] {{\n input x\n where {cond}\n"
        f" minimize l1(x, r, scale = mad(train))\n solve with astar (timeout = {timeout}s)\n}}\n"
        for name, cond in conditions.items()
    ]
    return head + "".join(queries)


def write_csv(path: Path, X: np.ndarray) -> None:
    names = ",".join(f"f{i}" for i in range(X.shape[1]))
    np.savetxt(path, X, delimiter=",", header=names, comments="", fmt="%.9g")


def counterfactuals(forest, X, rejected, args, k: int):
    """Per method: the counterfactual of each rejected row (None where none was found) and the
    A* times."""
    folder = Path(tempfile.mkdtemp(prefix="recourse-bench-"))
    forest.save(folder / "before.dare")
    write_csv(folder / "train.csv", X)
    write_csv(folder / "rejected.csv", rejected)
    text = spec_text(k, args.fraction / 100, args.variants, args.timeout)
    runs = parse(text, str(folder / "recourse.ver")).run(jobs=1)
    found = {m: [None] * len(rejected) for m in METHODS}
    times = {m: [] for m in METHODS}
    for run in runs:
        method, row = run.name.split("[")
        result = run.result
        times[method].append(result.time_s)
        if result.witnesses:
            found[method][int(row.rstrip("]"))] = np.asarray(result.witnesses[0].inputs["x"])
    return found, times


def validity(forest, points: np.ndarray, alpha: float, draws: int, rng) -> np.ndarray:
    """Per draw (rows) and point (columns): does the forest after deleting a random ``alpha`` %
    of its training rows still grant the point?"""
    n = len(forest.remaining())
    count = max(1, round(alpha / 100 * n))
    granted = np.zeros((draws, len(points)), dtype=bool)
    for d in range(draws):
        after = copy.deepcopy(forest)
        after.delete(sorted(rng.choice(forest.remaining(), count, replace=False).tolist()))
        granted[d] = after.predict_proba(points)[:, 1] > 0.5
    return granted


def one_set(name: str, args, loader) -> list[str]:
    X, y, X_test, y_test = loader()
    settings = SETTINGS[name]
    chosen = certified_forest(X, y, X_test, y_test, args.k, args.seeds, settings)
    if chosen is None:
        return [f"| {name} | no fit of {args.seeds} is certified at k = {args.k} |"]
    forest, accuracy, seed = chosen
    rejected = X_test[forest.predict_proba(X_test)[:, 1] <= 0.5][: args.rows]
    scale = np.median(np.abs(X - np.median(X, axis=0)), axis=0).astype(np.float64)
    scale[scale == 0] = 1.0
    print(
        f"{name}: {len(X)} training rows x {X.shape[1]}; DareForest({settings}, random nodes, "
        f"random_state={seed}), test accuracy {accuracy:.3f}; worst case certified at k = "
        f"{args.k}; {len(rejected)} rejected test rows; robust: {args.variants} variants at "
        f"{args.fraction:g} %; {args.draws} draws per alpha",
        flush=True,
    )
    start = time.perf_counter()
    found, times = counterfactuals(forest, X, rejected, args, args.k)
    print(f"  counterfactuals: {time.perf_counter() - start:.1f} s", flush=True)
    # Validity and cost over the rows every method answered, so the methods face the same
    # rows and, per draw, the same deletion.
    rows = [i for i in range(len(rejected)) if all(found[m][i] is not None for m in METHODS)]
    points = np.array([found[m][i] for m in METHODS for i in rows], dtype=np.float32)
    points = points.reshape(-1, X.shape[1])
    moves = np.abs(points.astype(np.float64) - np.tile(rejected[rows], (len(METHODS), 1))) / scale
    lines = []
    rng = np.random.default_rng(args.seed)
    for alpha in ALPHAS:
        start = time.perf_counter()
        granted = validity(forest, points, alpha, args.draws, rng)
        deleted = max(1, round(alpha / 100 * len(X)))
        for j, m in enumerate(METHODS):
            part = slice(j * len(rows), (j + 1) * len(rows))
            valid = float(granted[:, part].mean()) if rows else float("nan")
            l1 = float(np.median(moves[part].sum(axis=1))) if rows else float("nan")
            linf = float(np.median(moves[part].max(axis=1))) if rows else float("nan")
            answered = sum(x is not None for x in found[m])
            lines.append(
                f"| {name} | {m} | {alpha:g} % ({deleted}) | {answered}/{len(rejected)} | "
                f"{100 * valid:.1f} % | {l1:.3f} | {linf:.3f} | "
                f"{statistics.median(times[m]):.3f} |"
            )
        print(f"  alpha {alpha:g} %: {time.perf_counter() - start:.1f} s", flush=True)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=25, help="rejected test rows to explain")
    parser.add_argument("--draws", type=int, default=100, help="random deletions per alpha (M)")
    parser.add_argument("--k", type=int, default=3, help="deletions the certificate covers")
    parser.add_argument("--seeds", type=int, default=60, help="fits to choose the forest from")
    parser.add_argument("--variants", type=int, default=10, help="K, the robust family's size")
    parser.add_argument("--fraction", type=float, default=1.0, help="% each variant deletes")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per query")
    parser.add_argument("--seed", type=int, default=0, help="of the random deletions")
    parser.add_argument("--sets", default="german,cancer")
    args = parser.parse_args()
    loaders = {"german": german, "cancer": cancer}
    lines = []
    for name in args.sets.split(","):
        lines += one_set(name, args, loaders[name])
    print(
        "| data | method | alpha (rows) | found | validity | L1 median | Linf median | median s |"
    )
    print("|---|---|---|---|---|---|---|---|")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
