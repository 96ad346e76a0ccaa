"""The ROCERF protocol on trees (issue 16; Krishna, Ma & Lakkaraju): do counterfactuals stay valid
after training rows are deleted?

For each data set (a German-credit-like one shipped in examples/data/german_credit.csv, made by
examples/make_examples.py: rows 0-749 train, the rest test; and scikit-learn's breast cancer
set, 75 % train), two DareForests:

- ``random``: random nodes only, shallow, large leaves; of ``--seeds`` fits (random_state 0, 1,
  ...) the most accurate on the test rows whose worst case after deleting ``--k`` rows is
  certified (``worst_case``);
- ``greedy`` (skip with ``--no-greedy``): the usual G-DaRE forest, more accurate, whose worst
  case is refused at k = 1 (a rival cut within one row of the chosen one, or a threshold between
  single rows): no certified query on it.

For the first ``--rows`` test rows the forest rejects, it asks, through the language, for the
closest counterfactual under ``l1(x, r, scale = mad(train))`` with A* (``--timeout`` per query):

- plain: ``class(before, x) == 1``;
- robust: ``class(m, x) == 1 for m in V``, V = ``deletions(before, fraction = --fraction %,
  count = --variants, seed = 1)``;
- certified: ``class(w, x) == 1``, w = ``worst_case(before, deletions = --k)``.

Then it deletes ``alpha`` % of the training rows at random (``DareForest.delete`` on a copy),
``--draws`` times per alpha, and reports per method and alpha: validity (the share of (row,
deletion) pairs whose deleted forest's ``predict_proba`` still grants the counterfactual, > 0.5)
and the median cost (L1 and L-inf, each feature's change divided by the training rows' MAD, a
MAD of 0 counting 1, as the language does), and the median A* time per counterfactual.
Validity and cost are over the rows every method answered (``found``: how many each did, of
which proven optimal), with the same random deletions for each method.

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
from veritas_dsl.result import Termination
from veritas_dsl.unlearning import DareForest, UnstableError, certified_fit, worst_case

ROOT = Path(__file__).resolve().parents[1]
ALPHAS = (0.5, 1, 2, 3, 5)
METHODS = ("plain", "robust", "certified")
#: Random nodes only (the certificate accepts them), shallow, large leaves, per data set.
RANDOM = {
    "german": dict(n_trees=20, max_depth=2, min_samples_leaf=50),
    "cancer": dict(n_trees=10, max_depth=2, min_samples_leaf=50),
}
#: The usual greedy forest (G-DaRE), for comparison: its worst case is refused.
GREEDY = dict(n_trees=20, max_depth=4, min_samples_leaf=10, random_state=0)


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


def accuracy(forest: DareForest, X_test, y_test) -> float:
    return float(np.mean((forest.predict_proba(X_test)[:, 1] > 0.5) == y_test))


def refused(forest: DareForest, k: int) -> tuple:
    """The splits that deleting ``k`` rows may change, for which ``worst_case`` refuses the
    forest (empty: certified)."""
    try:
        worst_case(forest, k)
    except UnstableError as error:
        return error.nodes
    return ()


def largest_certified(forest: DareForest, most: int = 10) -> int:
    k = 0
    while k < most and not refused(forest, k + 1):
        k += 1
    return k


def spec_text(k: int | None, fraction: float, variants: int, timeout: float) -> str:
    """The three queries (no certified one when ``k`` is None: the worst case is refused)."""
    head = (
        'model before = dare "before.dare"\n'
        f"models V = deletions(before, fraction = {fraction}, count = {variants}, seed = 1)\n"
        'data train = csv "train.csv"\ndata rejected = csv "rejected.csv"\n'
        "features from train\n"
    )
    conditions = {
        "plain": "class(before, x) == 1",
        "robust": "class(m, x) == 1 for m in V",
    }
    if k is not None:
        head += f"model w = worst_case(before, deletions = {k})\n"
        conditions["certified"] = "class(w, x) == 1"
    queries = [
        f"query {name} for r in rejected[:] {{\n input x\n where {cond}\n"
        f" minimize l1(x, r, scale = mad(train))\n solve with astar (timeout = {timeout}s)\n}}\n"
        for name, cond in conditions.items()
    ]
    return head + "".join(queries)


def write_csv(path: Path, X: np.ndarray) -> None:
    names = ",".join(f"f{i}" for i in range(X.shape[1]))
    np.savetxt(path, X, delimiter=",", header=names, comments="", fmt="%.9g")


def counterfactuals(forest, X, rejected, args, k: int | None):
    """Per method asked: the counterfactual of each rejected row (None where none was found),
    the A* times, and how many were proven optimal."""
    with tempfile.TemporaryDirectory(prefix="recourse-bench-") as name:
        folder = Path(name)
        forest.save(folder / "before.dare")
        write_csv(folder / "train.csv", X)
        write_csv(folder / "rejected.csv", rejected)
        text = spec_text(k, args.fraction / 100, args.variants, args.timeout)
        runs = parse(text, str(folder / "recourse.ver")).run(jobs=1)
    methods = METHODS if k is not None else METHODS[:2]
    found = {m: [None] * len(rejected) for m in methods}
    times = {m: [] for m in methods}
    optimal = dict.fromkeys(methods, 0)
    for run in runs:
        method, row = run.name.split("[")
        result = run.result
        times[method].append(result.time_s)
        optimal[method] += result.termination is Termination.OPTIMAL
        if result.witnesses:
            found[method][int(row.rstrip("]"))] = np.asarray(result.witnesses[0].inputs["x"])
    return found, times, optimal


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


def forests(name: str, args, X, y, X_test, y_test):
    """``(label, forest, k or None, description)`` of the forests to run on: the certified one of
    random nodes and the greedy one (``--greedy``)."""
    found = []
    chosen = certified_fit(X, y, args.k, X_test, y_test, range(args.seeds), **RANDOM[name])
    if chosen is None:
        print(f"{name}: no random-node fit of {args.seeds} is certified at k = {args.k}")
    else:
        forest, seed = chosen
        note = (
            f"DareForest({RANDOM[name]}, random nodes, random_state={seed}), test accuracy "
            f"{accuracy(forest, X_test, y_test):.3f}, worst case certified up to k = "
            f"{largest_certified(forest)} (of 10); certified queries use k = {args.k}"
        )
        found.append(("random", forest, args.k, note))
    if args.greedy:
        forest = DareForest(**GREEDY).fit(X, y)
        splits = len(refused(forest, 1))
        note = (
            f"DareForest({GREEDY}, greedy nodes), test accuracy "
            f"{accuracy(forest, X_test, y_test):.3f}, worst case refused at k = 1 "
            f"({splits} splits may change)"
        )
        found.append(("greedy", forest, None, note))
    return found


def one_set(name: str, args, loader) -> list[str]:
    X, y, X_test, y_test = loader()
    scale = np.median(np.abs(X - np.median(X, axis=0)), axis=0).astype(np.float64)
    scale[scale == 0] = 1.0
    lines = []
    for label, forest, k, note in forests(name, args, X, y, X_test, y_test):
        rejected_ids = np.flatnonzero(forest.predict_proba(X_test)[:, 1] <= 0.5)[: args.rows]
        rejected = X_test[rejected_ids]
        print(
            f"{name} ({len(X)} training rows x {X.shape[1]}), {label} forest: {note}; "
            f"{len(rejected)} rejected test rows ({', '.join(map(str, rejected_ids))}); robust: "
            f"{args.variants} variants at {args.fraction:g} %; A*; {args.draws} draws per alpha",
            flush=True,
        )
        start = time.perf_counter()
        found, times, optimal = counterfactuals(forest, X, rejected, args, k)
        print(f"  counterfactuals: {time.perf_counter() - start:.1f} s", flush=True)
        lines += table_rows(
            f"{name} | {label}", forest, rejected, found, times, optimal, scale, args
        )
    return lines


def table_rows(what, forest, rejected, found, times, optimal, scale, args) -> list[str]:
    """Validity and cost per method and alpha, over the rows every method answered, so that
    the methods face the same rows and, per draw, the same deletion."""
    methods = list(found)
    rows = [i for i in range(len(rejected)) if all(found[m][i] is not None for m in methods)]
    width = rejected.shape[1]
    points = np.array([found[m][i] for m in methods for i in rows], np.float32).reshape(-1, width)
    moves = np.abs(points.astype(np.float64) - np.tile(rejected[rows], (len(methods), 1))) / scale
    n = len(forest.remaining())
    lines = []
    rng = np.random.default_rng(args.seed)
    for alpha in ALPHAS:
        start = time.perf_counter()
        granted = validity(forest, points, alpha, args.draws, rng)
        for j, m in enumerate(methods):
            part = slice(j * len(rows), (j + 1) * len(rows))
            valid = float(granted[:, part].mean()) if rows else float("nan")
            l1 = float(np.median(moves[part].sum(axis=1))) if rows else float("nan")
            linf = float(np.median(moves[part].max(axis=1))) if rows else float("nan")
            answered = sum(x is not None for x in found[m])
            lines.append(
                f"| {what} | {m} | {alpha:g} % ({max(1, round(alpha / 100 * n))}) | "
                f"{answered}/{optimal[m]}/{len(rejected)} | {100 * valid:.1f} % | {l1:.3f} | "
                f"{linf:.3f} | {statistics.median(times[m]):.3f} |"
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
    parser.add_argument(
        "--no-greedy", dest="greedy", action="store_false", help="skip the greedy forest"
    )
    args = parser.parse_args()
    loaders = {"german": german, "cancer": cancer}
    lines = []
    for name in args.sets.split(","):
        lines += one_set(name, args, loaders[name])
    print(
        "| data | forest | method | alpha (rows) | found/optimal/rows | validity "
        "| L1 median | Linf median | median s |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
