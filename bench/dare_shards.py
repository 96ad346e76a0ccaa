"""Adaptive-safe publishing (issue 41 item 3): a sharded DaRE forest whose labels are published
through the exponential mechanism, against R-DaRE publishing its plain labels.

    python bench/dare_shards.py [--seeds 200] [--data breast_cancer,classification]
                                [--shards 5] [--private 4:inf,4:400,4:40,0.2:0.2] [--share 5]

Each data set is split once (a stratified quarter held out). Every configuration uses forests of
``--trees`` trees of depth ``--depth`` with R-DaRE's random top levels (``random_depth=2``):

- ``R-DaRE``: one DareForest; it publishes its plain labels (probability above 1/2).
- ``shards, eps inf``: ``--shards`` DaRE forests on disjoint shards, the plain majority of their
  votes published (sharding alone, no noise, no budget).
- ``e:B``: the same shards, labels drawn by the exponential mechanism at ``e`` per label,
  every shard drawn again with fresh seeds when the budget ``B`` runs out
  (:class:`veritas_dsl.unlearning.ShardedForest`), for each pair of ``--private`` (``B`` inf:
  never drawn again, the noise alone). ``bound`` is ``shards * B``, the proven bound on the
  edited forest given the requests (``ShardedForest.adaptive_bound`` at the end of a draw):
  meaningful about 1 or less.

**The adaptive requester** reads published labels only. It asks for the labels of training rows
(its own) in a random order and deletes those published wrong ("I do not like what the model
says about me"), at most ``--share`` % of the rows. Against the private configuration it reads
only as many labels as one draw's budget allows (``budget / epsilon``): labels published before
a draw say nothing of the seeds after it. Per seed, the edited model is compared with a fit from
scratch on the same remaining rows (the same shards, another seed) by what the requester can
read: the expected share of remaining training rows whose published label is wrong (a label
drawn by the mechanism is wrong with the mechanism's probability). A requester who deletes the
rows this model's own randomness gets wrong leaves an edited model that gets fewer rows wrong
than a fit from scratch: KS, p is the two-sample Kolmogorov-Smirnov test between the two over the
seeds (scipy). The control, on R-DaRE: ``random`` deletes as many rows, chosen at random without
reading anything (deletion is exact in distribution for such requests).

**Accuracy**: the expected test accuracy of the published labels (a label drawn by the mechanism
is right with the mechanism's probability), mean over ``--accuracy-seeds`` fits; it does not
depend on the budget (each draw is a fit like the first), which sets the draws per 1,000 labels
(``1000 / floor(B / e)``), each a fit of every shard. **Speed**: on make_classification
with ``--speed-rows`` rows, the time to fit from scratch over the median time to delete one row
(``--deletions`` rows at random, one at a time), for one DareForest and for the sharded forest.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import numpy as np
from scipy.stats import ks_2samp
from sklearn.datasets import load_breast_cancer, make_classification
from sklearn.model_selection import train_test_split

from veritas_dsl.unlearning import DareForest, ShardedForest
from veritas_dsl.unlearning.shards import vote_probability


def data(name: str, rows: int = 1000) -> tuple[np.ndarray, ...]:
    if name == "breast_cancer":
        X, y = load_breast_cancer(return_X_y=True)
    else:
        X, y = make_classification(
            n_samples=rows, n_features=20, n_informative=8, flip_y=0.02, random_state=0
        )
    return tuple(
        train_test_split(X.astype(np.float32), y, test_size=0.25, stratify=y, random_state=0)
    )


class Published:
    """One configuration: how it is fitted, what it publishes, and what a label costs."""

    def __init__(self, args, shards: bool, epsilon: float = np.inf, budget: float = np.inf):
        self.shards, self.epsilon, self.budget = shards, epsilon, budget
        if not shards:
            self.name = "R-DaRE"
        elif np.isfinite(epsilon):
            self.name = f"shards, {epsilon:g}:{budget:g}"
        else:
            self.name = "shards, plain"
        self.forest = dict(n_trees=args.trees, max_depth=args.depth, random_depth=2)
        self.n_shards = args.shards

    def fit(self, X, y, seed: int, shard=None):
        if not self.shards:
            return DareForest(**self.forest, random_state=seed).fit(X, y)
        private = np.isfinite(self.epsilon)
        model = ShardedForest(
            n_shards=self.n_shards,
            epsilon=self.epsilon if private else 1.0,
            budget=min(self.budget, 1e300) if private else 1e300,
            random_state=seed,
            **self.forest,
        )
        return model.fit(X, y, shard=shard)

    def read(self, model, X) -> np.ndarray:
        """Labels as published (spending the budget where there is one)."""
        if not self.shards:
            return (model.predict_proba(X)[:, 1] > 0.5).astype(int)
        if np.isfinite(self.epsilon):
            return model.predict(X)
        return (model.votes(X) > self.n_shards / 2).astype(int)

    def readable(self, model) -> int | None:
        """How many labels one draw publishes (None: no limit)."""
        if self.shards and np.isfinite(self.epsilon) and np.isfinite(self.budget):
            return model.accountant.room(self.epsilon)
        return None

    def wrong(self, model, X, y) -> float:
        """The expected share of rows whose published label is wrong."""
        if not self.shards:
            one = (model.predict_proba(X)[:, 1] > 0.5).astype(float)  # as published
        else:
            epsilon = self.epsilon if np.isfinite(self.epsilon) else 1e300
            one = vote_probability(model.votes(X), self.n_shards, epsilon)
        return float(np.mean(np.where(y == 1, 1 - one, one)))


def adaptive(config: Published, model, X, y, limit: int, rng) -> np.ndarray:
    """The rows the requester deletes: those published wrong among the rows it reads."""
    order = rng.permutation(len(X))
    readable = config.readable(model)
    if readable is not None:
        order = order[:readable]
    labels = config.read(model, X[order])
    return np.sort(order[labels != y[order]][:limit])


def attack(config: Published, X, y, seeds: int, limit: int) -> dict[str, dict]:
    out = {}
    for requester in ("adaptive", "random") if config.name == "R-DaRE" else ("adaptive",):
        edited, fresh, counts = [], [], []
        for seed in range(seeds):
            model = config.fit(X, y, seed)
            rng = np.random.default_rng(seed)
            deleted = adaptive(config, model, X, y, limit, rng)
            if requester == "random":
                deleted = np.sort(rng.choice(len(X), len(deleted), replace=False))
            if len(deleted):
                model.delete(deleted)
            keep = np.setdiff1d(np.arange(len(X)), deleted)
            shard = model.shard_of()[keep] if config.shards else None
            again = config.fit(X[keep], y[keep], seeds + seed, shard)
            edited.append(config.wrong(model, X[keep], y[keep]))
            fresh.append(config.wrong(again, X[keep], y[keep]))
            counts.append(len(deleted))
        test = ks_2samp(edited, fresh)
        out[requester] = dict(
            deleted=statistics.median(counts),
            edited=np.mean(edited),
            fresh=np.mean(fresh),
            ks=test.statistic,
            p=test.pvalue,
        )
    return out


def accuracy(config: Published, split, seeds: int) -> float:
    """The expected test accuracy of the published labels, mean over ``seeds`` fits."""
    X, X_test, y, y_test = split
    fits = (config.fit(X, y, 1000 + seed) for seed in range(seeds))
    return 1 - float(np.mean([config.wrong(model, X_test, y_test) for model in fits]))


def costs(config: Published, n_shards: int) -> tuple[float, float]:
    """Draws per 1,000 labels, and the bound ``n_shards * B``."""
    if not (config.shards and np.isfinite(config.epsilon)):
        return 0.0, np.inf
    per_draw = math.floor(config.budget / config.epsilon) if np.isfinite(config.budget) else 0
    return (1000 / per_draw if per_draw else 0.0), n_shards * config.budget


def speed(args) -> None:
    X, _, y, _ = data("classification", args.speed_rows)
    forest = dict(n_trees=args.trees, max_depth=args.depth, random_depth=2)
    rows = np.random.default_rng(0).choice(len(X), args.deletions, replace=False)
    print(f"\nspeed: make_classification, {len(X)} training rows, {args.deletions} deletions")
    for name, make in (
        ("R-DaRE", lambda: DareForest(**forest)),
        ("shards", lambda: ShardedForest(n_shards=args.shards, **forest)),
    ):
        start = time.process_time()
        model = make().fit(X, y)
        fit = time.process_time() - start
        times = []
        for row in rows:
            start = time.process_time()
            model.delete([row])
            times.append(time.process_time() - start)
        delete = statistics.median(times)
        print(
            f"{name:<8} fit {fit:7.3f} s  delete (median) {1000 * delete:8.3f} ms  "
            f"speed-up over a refit {fit / delete:8.0f}x"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--accuracy-seeds", type=int, default=10)
    parser.add_argument("--data", default="breast_cancer,classification")
    parser.add_argument("--trees", type=int, default=20)
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--shards", type=int, default=5)
    parser.add_argument(
        "--private", default="4:inf,4:400,4:40,0.2:0.2", help="epsilon:budget, comma-separated"
    )
    parser.add_argument("--share", type=float, default=5.0, help="% of rows deleted at most")
    parser.add_argument("--speed-rows", type=int, default=20000)
    parser.add_argument("--deletions", type=int, default=20)
    args = parser.parse_args()
    pairs = [tuple(float(v) for v in pair.split(":")) for pair in args.private.split(",")]
    configs = [Published(args, shards=False), Published(args, shards=True)] + [
        Published(args, shards=True, epsilon=e, budget=b) for e, b in pairs
    ]
    DareForest(n_trees=1, max_depth=2).fit(*data("breast_cancer")[::2]).delete([0])  # compile
    print(
        f"{args.seeds} seeds; {args.trees} trees of depth {args.depth}, random_depth 2; "
        f"{args.shards} shards; e:B = epsilon e per label, budget B a draw"
    )
    print(
        "wrong = expected share of remaining training rows published wrong "
        "(edited | fit from scratch); acc = test accuracy of the published labels"
    )
    print(
        f"{'data':<15}{'n':>5} {'config':<18}{'acc':>7}{'draws/1k':>9}{'bound':>6} "
        f"{'requester':<9}{'deleted':>8}{'wrong ed.':>10}{'fresh':>7}{'KS':>7}{'p':>10}"
    )
    start, cpu = time.perf_counter(), time.process_time()
    for name in args.data.split(","):
        split = data(name)
        X, y = split[0], split[2]
        limit = round(args.share / 100 * len(X))
        for config in configs:
            acc = accuracy(config, split, args.accuracy_seeds)
            draws, bound = costs(config, args.shards)
            for requester, r in attack(config, X, y, args.seeds, limit).items():
                print(
                    f"{name:<15}{len(X):>5} {config.name:<18}{acc:>7.2%}{draws:>9.0f}"
                    f"{bound:>6g} {requester:<9}{r['deleted']:>8g}{r['edited']:>10.4f}"
                    f"{r['fresh']:>7.4f}{r['ks']:>7.3f}{r['p']:>10.2g}"
                )
    speed(args)
    print(f"{time.perf_counter() - start:.0f} s wall, {time.process_time() - cpu:.0f} s CPU")


if __name__ == "__main__":
    main()
