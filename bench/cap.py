"""The verified cap (issue 41 item 2) over a grid of tau: what it does to the membership attack
of item 1, to accuracy and to the distance from a retrained model; the paper's lambda study as
a table.

Per seed: a random split into the target's training rows and the rows outside it (the test
rows of the utility columns); a DaRE forest (default configuration) fit with
``random_state=seed``; ``--batches`` single-row deletions, each deleted from the forest
apart; ``play`` with ``--shadows`` shadows scores, for each unlearning, M_A on the deleted
rows against as many outside rows. The unlearnings are the forest's deletion (``delete``,
tau = inf), a retraining with a fresh seed (``retrain``, the paper's baseline), the
deletion capped at each tau (``veritas_dsl.unlearning.cap``, the cap proven by the trees'
bound; no engine runs) and capped with noise (``--noisy TAU:SHARE``: that share of tau is
seeded noise in every leaf, drawn afresh per publication from the game's seed). Per
deletion and unlearning, on the test rows: the accuracy, the
agreement of the predicted class with a model retrained with a fresh seed, the mean
``|Mu'(x) - Mr(x)|``, and the footprint bound. Cells: means over seeds (and deletions), with
the 95 % interval across seeds for the attack's measures.

    python bench/cap.py [--seeds 3] [--shadows 2] [--batches 30] [--taus 0.05,0.01,...]
        [--noisy 0.05:0.9,0.5:0.95,...] [--sets breast_cancer,synthetic]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from membership import data_sets  # bench/membership.py: the same sets, rows and trees

from veritas_dsl.unlearning import DareForest
from veritas_dsl.unlearning.cap import capped_deletion
from veritas_dsl.unlearning.membership import UNLEARNINGS, estimate, play


def cell(values) -> str:
    e = estimate(values)
    return f"{e.mean:.3f}" if e.low is None else f"{e.mean:.3f} [{e.low:.3f}, {e.high:.3f}]"


def utility(unlearn, forest, batches, X_test, y_test, seed) -> dict:
    """Means over the deletions of accuracy, agreement with the retrained model, the distance
    to it, and the footprint bound (0 for the model before, none for the retraining)."""
    rows = []
    for ids in batches:
        # Fresh seeds, neither the forest's (a refit with it is the deletion) nor each other's.
        model = unlearn(forest, ids, seed + 1000)
        retrained = UNLEARNINGS["retrain"](forest, ids, seed + 2000)
        p = model.predict_proba(X_test)[:, 1]
        r = retrained.predict_proba(X_test)[:, 1]
        rows.append(
            (
                np.mean((p > 0.5) == y_test),
                np.mean((p > 0.5) == (r > 0.5)),
                np.mean(np.abs(p - r)),
                getattr(model, "footprint", np.nan),
            )
        )
    return dict(zip(("acc", "agree", "dist", "footprint"), np.mean(rows, axis=0), strict=True))


def _mean(values) -> str:
    return "" if np.all(np.isnan(values)) else f"{np.nanmean(values):.4f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--shadows", type=int, default=2)
    parser.add_argument("--batches", type=int, default=30, help="single-row deletions")
    parser.add_argument("--taus", default="0.05,0.01,0.002,0.0005")
    parser.add_argument(
        "--noisy", default="0.05:0.9,0.2:0.9,0.5:0.95", help="TAU:SHARE,...: noisy caps"
    )
    parser.add_argument("--sets", default="breast_cancer")
    args = parser.parse_args()
    taus = [float(t) for t in args.taus.split(",") if t]
    noisy = [tuple(map(float, pair.split(":"))) for pair in args.noisy.split(",") if pair]
    print(
        f"{args.seeds} seeds, {args.shadows} shadows, {args.batches} single-row deletions per "
        f"target; load average {os.getloadavg()[0]:.1f} at start"
    )
    for name, (X, y, n_train, trees) in data_sets(args.sets.split(",")).items():
        start = time.process_time()
        unlearnings = {
            **UNLEARNINGS,
            **{f"cap {t:g}": capped_deletion(t) for t in taus},
            **{f"cap {t:g}, noise {n:g}": capped_deletion(t, n) for t, n in noisy},
        }
        attack: dict[str, list[dict]] = {}
        use: dict[str, list[dict]] = {}
        for seed in range(args.seeds):
            rng = np.random.default_rng(seed)
            order = rng.permutation(len(X))
            train, out = order[:n_train], order[n_train:]
            forest = DareForest(n_trees=trees, random_state=seed).fit(X[train], y[train])
            batches = rng.choice(n_train, args.batches, replace=False)[:, None]
            found = play(forest, batches, X[out], y[out], seed, args.shadows, unlearnings)
            for unlearning, scores in found.items():
                attack.setdefault(unlearning, []).append(scores.metrics())
                use.setdefault(unlearning, []).append(
                    utility(unlearnings[unlearning], forest, batches, X[out], y[out], seed)
                )
            before = {"acc": np.mean((forest.predict_proba(X[out])[:, 1] > 0.5) == y[out])}
            use.setdefault("before (Mo)", []).append(before)
        seconds = time.process_time() - start
        print(f"\n{name}: {len(X)} rows x {X.shape[1]}, {n_train} in training, {trees} trees")
        head = ["AUC", "PriAA", "advantage", "probe AUC", "accuracy", "agree w/ retrain",
                "mean |Mu'-Mr|", "footprint bound"]  # fmt: skip
        print("| unlearning | " + " | ".join(head) + " |")
        print("|---" * (len(head) + 1) + "|")
        for unlearning in ["before (Mo)", *unlearnings]:
            cells = [
                cell([s[m] for s in attack[unlearning]]) if unlearning in attack else ""
                for m in ("auc", "priaa", "advantage", "probe_auc")
            ]
            cells += [
                _mean([s.get(m, np.nan) for s in use[unlearning]])
                for m in ("acc", "agree", "dist", "footprint")
            ]  # fmt: skip
            print(f"| {unlearning} | " + " | ".join(cells) + " |")
        print(f"({seconds:.0f} s of CPU)")


if __name__ == "__main__":
    main()
