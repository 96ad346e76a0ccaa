"""The ROCERF protocol on trees (issue 16; Krishna, Ma & Lakkaraju): do counterfactuals stay valid
after training rows are deleted, and after the forest is fit again without them (issue 38)?

For each data set (a German-credit-like one shipped in examples/data/german_credit.csv, made by
examples/make_examples.py: rows 0-749 train, the rest test; and scikit-learn's breast cancer
set, 75 % train), two DareForests:

- ``random``: random nodes only, shallow, large leaves; of ``--seeds`` fits (random_state 0, 1,
  ...) the most accurate on the test rows whose worst case after deleting ``--k`` rows is
  certified (``worst_case``);
- ``greedy`` (skip with ``--no-greedy``): the usual G-DaRE forest, more accurate, whose worst
  case at k = 1 grows most splits again (a rival cut within one row of the chosen one) and so
  certifies no test row (bench/dare_certificate.py --german): no certified query on it.

For the first ``--rows`` test rows the forest rejects, it asks, through the language, for the
closest counterfactual under ``l1(x, r, scale = mad(train))`` with A* (``--timeout`` per query):

- plain: ``class(before, x) == 1``;
- robust: ``class(m, x) == 1 for m in V``, V = ``deletions(before, fraction = --fraction %,
  count = --variants, seed = 1)`` (the family holds ``before`` itself and the variants);
- certified: ``class(w, x) == 1``, w = ``worst_case(before, deletions = --k)``, which covers
  ``DareForest.delete`` of up to k rows and nothing else.

Then it removes training rows and asks whether the forest still grants each counterfactual
(``predict_proba`` > 0.5), after three updates of the same deletion set S:

- ``delete``: ``DareForest.delete(S)`` on a copy (what the certificate covers);
- ``refit``: a forest fit with the same settings and ``random_state`` on the remaining rows but
  S (the language's ``retrain``);
- ``fresh``: the same with another ``random_state`` (one per draw: 10,000 + the draw's index).

Deletion sets: ``random``, ``alpha`` % of the training rows drawn uniformly, ``--draws`` sets per
alpha (alpha 0: no row, so ``fresh`` shows what the random draws alone do); and ``adversarial``,
at most ``--k`` rows chosen greedily to break the most counterfactuals of one method: each step
tries every remaining row with the update applied to the set so far plus that row, and keeps the
one that breaks the most (ties: the least total margin p - 0.5 left over the ones still granted);
the best prefix counts (the longest of equals). Exact search is out of reach (C(750, 3) = 7 *
10^7 sets); ``--exact N`` measures the greedy's gap by trying every set of at most N rows
through ``delete`` (N = 2 on cancer: 90,951 sets). The adversary of ``delete`` chooses through
``delete``, that of ``refit`` through the same-seed refit; ``fresh`` is scored on the refit
adversary's set over ``--draws`` fresh seeds (the requester cannot choose the seed). Validity is
the share of counterfactuals granted, per draw, reported as mean ± standard error over the draws
(none where nothing is drawn: no row removed without a fresh seed, and the deterministic
adversaries), over the rows every method answered, with the same deletion sets for every method.

    python bench/recourse.py                     # 25 rows, 100 draws per alpha
    python bench/recourse.py --rows 5 --draws 10 # a quick run
    python bench/recourse.py --sets cancer --no-greedy --exact 2  # the greedy adversary's gap
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from sklearn.datasets import load_breast_cancer

from veritas_dsl import parse
from veritas_dsl.result import Termination
from veritas_dsl.unlearning import DareForest, UnstableError, certified_fit, worst_case
from veritas_dsl.unlearning.dare.certificate import unstable_nodes

ROOT = Path(__file__).resolve().parents[1]
ALPHAS = (0, 0.5, 1, 2, 3, 5)
METHODS = ("plain", "robust", "certified")
UPDATES = ("delete", "refit", "fresh")
FRESH = 10_000  # a fresh refit of draw d has random_state FRESH + d
#: Random nodes only (the certificate accepts them), shallow, large leaves, per data set.
RANDOM = {
    "german": dict(n_trees=20, max_depth=2, min_samples_leaf=50),
    "cancer": dict(n_trees=10, max_depth=2, min_samples_leaf=50),
}
#: The usual greedy forest (G-DaRE), for comparison: its worst case certifies nothing here.
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
    """The three queries (no certified one when ``k`` is None: the greedy forest)."""
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


class Updates:
    """The forest after removing training rows (ids), by each of the three updates."""

    def __init__(self, forest: DareForest) -> None:
        self.forest = forest
        self.X, self.y = forest.training_rows()
        self.ids = forest.remaining()

    def delete(self, rows) -> DareForest:
        return self.forest.copy().delete(sorted(rows)) if len(rows) else self.forest

    def refit(self, rows, seed: int | None = None) -> DareForest:
        """A fit on the remaining rows but ``rows``: same settings, ``random_state`` ``seed``
        (None: the forest's own)."""
        keep = ~np.isin(self.ids, np.asarray(rows, dtype=np.int64))
        params = self.forest.params()
        if seed is not None:
            params["random_state"] = seed
        return DareForest(**params).fit(self.X[keep], self.y[keep])

    def apply(self, how: str, rows, draw: int) -> DareForest:
        if how == "delete":
            return self.delete(rows)
        return self.refit(rows, None if how == "refit" else FRESH + draw)


def granted(forest: DareForest, points: np.ndarray) -> np.ndarray:
    return forest.predict_proba(points)[:, 1] > 0.5


def random_validity(updates: Updates, points, draws: int, rng) -> dict:
    """``{(update, alpha): granted}``, ``granted[d, i]``: whether the forest after removing
    the d-th random set of ``alpha`` % of the rows by ``update`` grants ``points[i]`` (one row
    when nothing is removed and the update draws nothing)."""
    n = len(updates.ids)
    out = {}
    for alpha in ALPHAS:
        start = time.perf_counter()
        count = max(1, round(alpha / 100 * n)) if alpha else 0
        sets = [rng.choice(updates.ids, count, replace=False) for _ in range(draws)]
        for how in UPDATES:
            if count == 0 and how != "fresh":  # nothing removed: the forest itself, once
                out[how, alpha] = granted(updates.forest, points)[None]
                continue
            out[how, alpha] = np.array(
                [granted(updates.apply(how, rows, d), points) for d, rows in enumerate(sets)]
            )
        print(f"  alpha {alpha:g} %: {time.perf_counter() - start:.1f} s", flush=True)
    return out


def adversary(updates: Updates, points, k: int, how: str) -> list[int]:
    """The set of at most ``k`` rows, chosen greedily (module docstring), whose removal by
    ``how`` (``delete`` or ``refit``) breaks the most of ``points``."""
    chosen: list[int] = []
    best = (-1, [])
    for _ in range(k):
        prefix = updates.delete(chosen) if how == "delete" else None
        top = None
        for c in updates.ids.tolist():
            if c in chosen:
                continue
            rows = [*chosen, c]
            model = prefix.copy().delete([c]) if how == "delete" else updates.refit(rows)
            p = model.predict_proba(points)[:, 1]
            key = (int(np.sum(p <= 0.5)), -float(np.clip(p - 0.5, 0, None).sum()))
            if top is None or key > top[0]:
                top = (key, c)
        chosen.append(top[1])
        if top[0][0] >= best[0]:  # at equal breaks the longer set (more for `fresh` to lose)
            best = (top[0][0], list(chosen))
    return best[1]


def exact_check(updates: Updates, points, parts: dict, size: int) -> None:
    """Print, per method (``parts``: its slice of ``points``), the most counterfactuals any set
    of at most ``size`` rows breaks through ``delete``, found by trying every set, beside what
    the greedy adversary finds with ``size`` rows."""
    start = time.perf_counter()
    most = dict.fromkeys(parts, 0)
    tried = 0
    for chosen in itertools.chain.from_iterable(
        itertools.combinations(updates.ids.tolist(), n) for n in range(1, size + 1)
    ):
        broken = ~granted(updates.delete(list(chosen)), points)
        tried += 1
        for m, part in parts.items():
            most[m] = max(most[m], int(broken[part].sum()))
    for m, part in parts.items():
        greedy = adversary(updates, points[part], size, "delete")
        found = int((~granted(updates.delete(greedy), points[part])).sum())
        print(
            f"  exact check, {m}: every set of <= {size} rows ({tried:,}) breaks at most "
            f"{most[m]}; the greedy adversary's set {greedy} breaks {found}",
            flush=True,
        )
    print(f"  exact check: {time.perf_counter() - start:.1f} s", flush=True)


def adversarial_validity(updates: Updates, points, k: int, draws: int) -> dict:
    """``{update: granted}`` under the adversarial sets (module docstring): one row for
    ``delete`` and ``refit``, ``draws`` fresh seeds for ``fresh``; and the sets."""
    start = time.perf_counter()
    sets = {how: adversary(updates, points, k, how) for how in ("delete", "refit")}
    out = {how: granted(updates.apply(how, sets[how], 0), points)[None] for how in sets}
    out["fresh"] = np.array(
        [granted(updates.apply("fresh", sets["refit"], d), points) for d in range(draws)]
    )
    print(f"  adversary: {time.perf_counter() - start:.1f} s, sets {sets}", flush=True)
    return out


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
        splits = len(unstable_nodes(forest, 1))
        note = (
            f"DareForest({GREEDY}, greedy nodes), test accuracy "
            f"{accuracy(forest, X_test, y_test):.3f}, no certified query: at k = 1 {splits} "
            f"splits may change, bounded too loosely to certify (docs/unlearning.md)"
        )
        found.append(("greedy", forest, None, note))
    return found


def one_set(name: str, args, loader) -> tuple[list[str], list[str]]:
    """The validity table's lines and the cost table's lines of one data set."""
    X, y, X_test, y_test = loader()
    scale = np.median(np.abs(X - np.median(X, axis=0)), axis=0).astype(np.float64)
    scale[scale == 0] = 1.0
    validity, cost = [], []
    for label, forest, k, note in forests(name, args, X, y, X_test, y_test):
        rejected_ids = np.flatnonzero(forest.predict_proba(X_test)[:, 1] <= 0.5)[: args.rows]
        rejected = X_test[rejected_ids]
        n = len(forest.remaining())
        counts = ", ".join(f"{a:g} % = {max(1, round(a / 100 * n)) if a else 0}" for a in ALPHAS)
        print(
            f"{name} ({n} training rows x {X.shape[1]}), {label} forest: {note}; "
            f"{len(rejected)} rejected test rows ({', '.join(map(str, rejected_ids))}); robust: "
            f"{args.variants} variants at {args.fraction:g} %; A*; {args.draws} draws per alpha "
            f"({counts} rows); adversary: at most {args.k} rows",
            flush=True,
        )
        start = time.perf_counter()
        found, times, optimal = counterfactuals(forest, X, rejected, args, k)
        print(f"  counterfactuals: {time.perf_counter() - start:.1f} s", flush=True)
        more = table_rows(f"{name} | {label}", forest, rejected, found, times, optimal, scale, args)
        validity += more[0]
        cost += more[1]
    return validity, cost


def mean_se(granted: np.ndarray) -> str:
    """``granted[d, i]`` as the mean over draws d of the share granted, ± its standard error
    (none for one draw), in %."""
    per_draw = 100 * granted.mean(axis=1)
    if len(per_draw) == 1:
        return f"{per_draw[0]:.1f}"
    se = per_draw.std(ddof=1) / np.sqrt(len(per_draw))
    return f"{per_draw.mean():.1f} ± {se:.1f}"


def table_rows(what, forest, rejected, found, times, optimal, scale, args):
    """Validity per method, update and deletion set, and cost per method, over the rows every
    method answered, so that the methods face the same rows and, per draw, the same sets."""
    methods = list(found)
    rows = [i for i in range(len(rejected)) if all(found[m][i] is not None for m in methods)]
    if not rows:
        print(f"  {what}: no row answered by every method")
        return [], []
    width = rejected.shape[1]
    points = np.array([found[m][i] for m in methods for i in rows], np.float32).reshape(-1, width)
    moves = np.abs(points.astype(np.float64) - np.tile(rejected[rows], (len(methods), 1))) / scale
    updates = Updates(forest)
    at_random = random_validity(updates, points, args.draws, np.random.default_rng(args.seed))
    if args.exact:
        parts = {m: slice(j * len(rows), (j + 1) * len(rows)) for j, m in enumerate(methods)}
        exact_check(updates, points, parts, args.exact)
    validity, cost = [], []
    for j, m in enumerate(methods):
        part = slice(j * len(rows), (j + 1) * len(rows))
        worst = (
            adversarial_validity(updates, points[part], args.k, args.draws)
            if args.adversary
            else {}
        )
        for how in UPDATES:
            cells = [mean_se(at_random[how, alpha][:, part]) for alpha in ALPHAS]
            cells.append(mean_se(worst[how]) if worst else "-")
            validity.append(f"| {what} | {m} | {how} | {' | '.join(cells)} |")
        answered = sum(x is not None for x in found[m])
        cost.append(
            f"| {what} | {m} | {answered}/{optimal[m]}/{len(rejected)} | "
            f"{np.median(moves[part].sum(axis=1)):.3f} | {np.median(moves[part].max(axis=1)):.3f} "
            f"| {statistics.median(times[m]):.3f} |"
        )
    return validity, cost


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=25, help="rejected test rows to explain")
    parser.add_argument("--draws", type=int, default=100, help="random sets (and seeds) per alpha")
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
    parser.add_argument(
        "--no-adversary", dest="adversary", action="store_false", help="skip the adversary"
    )
    parser.add_argument(
        "--exact",
        type=int,
        default=0,
        help="also try every set of at most this many rows through delete (slow: 2 on cancer)",
    )
    args = parser.parse_args()
    loaders = {"german": german, "cancer": cancer}
    validity, cost = [], []
    for name in args.sets.split(","):
        more = one_set(name, args, loaders[name])
        validity += more[0]
        cost += more[1]
    alphas = " | ".join(f"{a:g} %" for a in ALPHAS)
    print(f"\n| data | forest | method | update | {alphas} | adversarial <= {args.k} |")
    print("|---" * (5 + len(ALPHAS)) + "|")
    print("\n".join(validity))
    print("\n| data | forest | method | found/optimal/rows | L1 median | Linf median | median s |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(cost))


if __name__ == "__main__":
    main()
