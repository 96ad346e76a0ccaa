"""DaRE's deletion benchmark (Brophy & Lowd 2021, issue 15 (a)): deletions per naive retraining.

For each data set and for G-DaRE (``random_depth=0``) and R-DaRE (``random_depth=--rdepth``),
with the defaults otherwise (100 trees, depth 10, k=10, max_features="sqrt"): the time of one
naive retraining (``fit`` from scratch on every row), then the median and mean time of one
``delete`` under two adversaries, and the ratio retraining / mean deletion:

- random: rows drawn uniformly, deleted one after another from the same forest;
- worst of 1,000 (the paper's adversary): before each deletion, 1,000 random remaining rows
  (all but one when fewer remain) are ranked by the exact cost of their deletion
  (:func:`~veritas_dsl.unlearning.worst_deletion`: ``last_deletion_cost``, the rows the trees
  re-examine, by a trial deletion that leaves the forest as it was), and the costliest is
  deleted. As in the paper only the deletion is timed; the search is timed apart
  (``search s``, per deletion) and the pick's cost is checked against the deletion's.

A second table gives the rows re-examined per deletion (mean) under each adversary, and a third
the geometric means over the data sets of the deletions per retraining beside the paper's
Table 2 (its 14 data sets, its machine; random and worst-of-1,000 columns).

With ``--budget``, each forest then goes on deleting random rows until the deletions have taken
as long as the retraining did (DaRE's protocol over a long sequence, where memos of retired
subtrees pay off): the number done is printed with their mean time.

Data, all offline: make_classification(100_000, 40, random_state=0), scikit-learn's
breast_cancer and digits (digit 0 against the rest). Numba is warmed up first.

    python bench/dare_deletion.py                    # default: about 40 min on 2 cores
    python bench/dare_deletion.py --random 20 --worst 1 --sets breast_cancer,digits
    python bench/dare_deletion.py --sets synthetic --budget   # adds about two retrainings
    python bench/dare_deletion.py --sets synthetic --cpu      # CPU time, on a loaded machine
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits, make_classification

from veritas_dsl.unlearning import DareForest, worst_deletion

TARGETS = {"G-DaRE": 250, "R-DaRE": 1000}  # deletions per retraining, random adversary
#: Brophy & Lowd 2021, Table 2: geometric means over their 14 data sets of the deletions done in
#: one naive retraining's time, random and worst-of-1,000 adversaries (None: not quoted here).
PAPER = {"G-DaRE": (257, 52), "R-DaRE": (1272, None)}
clock = time.perf_counter  # time.process_time with --cpu


def data_sets(names):
    out = {}
    if "synthetic" in names:
        X, y = make_classification(100_000, 40, random_state=0)
        out["synthetic 100k x 40"] = (X, y)
    if "breast_cancer" in names:
        out["breast_cancer 569 x 30"] = load_breast_cancer(return_X_y=True)
    if "digits" in names:
        X, y = load_digits(return_X_y=True)
        out["digits 1797 x 64 (0 vs rest)"] = (X, (y == 0).astype(int))
    return out


def measure(X, y, params, n_random, n_worst, budget, seed=0):
    rng = np.random.default_rng(seed)
    start = clock()
    forest = DareForest(**params).fit(X, y)
    out = {"fit": clock() - start, "random": [], "random cost": [], "worst": [], "worst cost": []}
    out.update({"search": [], "candidates": 0, "mismatches": 0, "regrew": []})
    for r in rng.choice(len(X), n_random, replace=False):
        start = clock()
        forest.delete([int(r)])
        out["random"].append(clock() - start)
        out["random cost"].append(forest.last_deletion_cost)
    for _ in range(n_worst):
        alive = forest.remaining()
        candidates = rng.choice(alive, min(1000, len(alive) - 1), replace=False)
        start = clock()
        row, cost = worst_deletion(forest, candidates)
        out["search"].append(clock() - start)
        out["candidates"] = len(candidates)
        start = clock()
        forest.delete([row])
        out["worst"].append(clock() - start)
        out["worst cost"].append(forest.last_deletion_cost)
        out["mismatches"] += forest.last_deletion_cost != cost
    out["regrew"] = np.array(out["random cost"]) > 0
    spent, done = 0.0, 0
    if budget:
        alive = forest.remaining()
        for r in rng.choice(alive, min(len(alive) - 1, 10**6), replace=False):
            if spent >= out["fit"]:
                break
            start = clock()
            forest.delete([int(r)])
            spent, done = spent + clock() - start, done + 1
    out["budget"] = (done, spent)
    return out


def _ms(times, how) -> float:
    return 1e3 * how(times) if times else np.nan


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--random", type=int, default=40, help="random deletions per forest")
    parser.add_argument("--worst", type=int, default=5, help="worst-of-1,000 deletions")
    parser.add_argument("--trees", type=int, default=100)
    parser.add_argument("--rdepth", type=int, default=2, help="R-DaRE's random_depth")
    parser.add_argument("--sets", default="synthetic,breast_cancer,digits")
    parser.add_argument(
        "--budget", action="store_true", help="count deletions done in one retraining's time"
    )
    parser.add_argument(
        "--cpu", action="store_true", help="CPU time (process_time) instead of wall time"
    )
    args = parser.parse_args()
    global clock
    clock = time.process_time if args.cpu else time.perf_counter
    DareForest(n_trees=2, random_depth=1).fit(*load_breast_cancer(return_X_y=True)).delete([0])
    configs = {"G-DaRE": 0, "R-DaRE": args.rdepth}
    head = (
        f"{'data set':30} {'model':7} {'retrain s':>9} {'random med ms':>13} {'mean ms':>8} "
        f"{'ratio':>7} {'target':>6} {'worst med ms':>12} {'mean ms':>8} {'ratio':>7} "
        f"{'regrew':>6} {'other med ms':>12}"
    )
    print(f"trees={args.trees} depth=10 k=10 max_features=sqrt; R-DaRE random_depth={args.rdepth}")
    print("times: " + ("CPU (process_time)" if args.cpu else "wall clock"))
    print(f"random: {args.random} deletions; worst of 1,000: {args.worst} deletions")
    print(head)
    print("-" * len(head))
    results = {}
    for name, (X, y) in data_sets(args.sets.split(",")).items():
        for model, depth in configs.items():
            params = dict(n_trees=args.trees, random_depth=depth)
            out = results[name, model] = measure(
                X, y, params, args.random, args.worst, args.budget
            )
            fit, rand, worst, regrew = out["fit"], out["random"], out["worst"], out["regrew"]
            calm = np.array(rand)[~regrew]
            rmean, wmean = statistics.mean(rand), statistics.mean(worst) if worst else np.nan
            print(
                f"{name:30} {model:7} {fit:9.3f} {_ms(rand, statistics.median):13.2f} "
                f"{1e3 * rmean:8.2f} {fit / rmean:7.0f} {TARGETS[model]:>6} "
                f"{_ms(worst, statistics.median):12.2f} {1e3 * wmean:8.2f} {fit / wmean:7.0f} "
                f"{regrew.mean():6.0%} {_ms(list(calm), np.median):12.2f}",
                flush=True,
            )
            if args.budget:
                done, spent = out["budget"]
                print(
                    f"{'':30} {model:7} in one retraining's time: {done} more random "
                    f"deletions, mean {1e3 * spent / max(done, 1):.2f} ms"
                    + (" (ran out of rows)" if spent < fit else ""),
                    flush=True,
                )
    print("target: a 100-tree forest on the 100k set deletes a row in under 10 ms (median)")
    print("regrew: share of the random deletions that grew a subtree again (last_deletion_cost")
    print("> 0); other med ms: median time of the other random deletions")
    _costs(results)
    _paper(results, configs)


def _costs(results) -> None:
    """Rows re-examined per deletion, and what the adversary's search took."""
    head = (
        f"{'data set':30} {'model':7} {'random rows':>11} {'worst rows':>10} {'worst/random':>12} "
        f"{'candidates':>10} {'search s':>8} {'pick = deletion':>15}"
    )
    print()
    print("rows re-examined per deletion (mean last_deletion_cost); search s: the adversary's")
    print("ranking of its candidates, per worst deletion (not in the deletion times above)")
    print(head)
    print("-" * len(head))
    for (name, model), out in results.items():
        rand, worst = statistics.mean(out["random cost"]), np.nan
        search, rounds = np.nan, len(out["worst cost"])
        if rounds:
            worst, search = statistics.mean(out["worst cost"]), statistics.mean(out["search"])
        print(
            f"{name:30} {model:7} {rand:11.0f} {worst:10.0f} {worst / max(rand, 1):12.1f} "
            f"{out['candidates']:10} {search:8.2f} {rounds - out['mismatches']:>8} of {rounds:<4}"
        )


def _paper(results, configs) -> None:
    """Geometric means over the data sets of the deletions per retraining, beside the paper's."""
    print()
    print("deletions per retraining (retrain / mean deletion), geometric mean over the data sets")
    print("run here, beside Brophy & Lowd 2021 Table 2 (geometric mean over its 14 data sets)")
    head = f"{'model':7} {'random':>7} {'worst':>7} {'paper random':>12} {'paper worst':>11}"
    print(head)
    print("-" * len(head))
    for model in configs:
        ratios = [
            (out["fit"] / statistics.mean(out["random"]),
             out["fit"] / statistics.mean(out["worst"]) if out["worst"] else np.nan)
            for (_, m), out in results.items()
            if m == model
        ]  # fmt: skip
        rand, worst = np.exp(np.log(np.array(ratios)).mean(axis=0))
        paper_rand, paper_worst = PAPER[model]
        paper_worst = "-" if paper_worst is None else paper_worst
        print(f"{model:7} {rand:7.0f} {worst:7.0f} {paper_rand:>12} {paper_worst:>11}")


if __name__ == "__main__":
    main()
