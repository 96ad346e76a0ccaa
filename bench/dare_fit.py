"""DareForest.fit against scikit-learn's RandomForestClassifier(bootstrap=False): median fit time
and held-out accuracy, same trees, depth and max_features, one core each.

    python bench/dare_fit.py [--trees 10] [--depth 10] [--runs 3] [--rows 100000]
                             [--data make_classification,breast_cancer,digits] [--clock cpu]

Data: ``make_classification(rows, 40, random_state=0)``; scikit-learn's bundled breast_cancer;
digits as digit 0 against the rest. Each is split 75/25 (stratified, ``random_state=0``); the
models fit on the 75 % and are scored on the 25 %. Models, all with ``max_features="sqrt"`` and
every row in every tree (no bootstrap):

- ``dare k=10``: ``DareForest(trees, depth, k=10, random_depth=0)``, our default: each node
  looks at 10 sampled valid thresholds of each sampled attribute;
- ``dare k=all``: the same with ``k=None``, every valid threshold (the search scikit-learn does);
- ``sklearn``: ``RandomForestClassifier(trees, max_depth=depth, max_features="sqrt",
  bootstrap=False, n_jobs=1)``.

What still differs: scikit-learn breaks ties between equal scores at random (we take the smaller
attribute, then the smaller threshold); it draws attributes until ``max_features`` non-constant
ones, and more only when none of them splits the node, where we draw until ``max_features`` with
a valid threshold; we keep each node's counts and each leaf's rows for deletion, which
scikit-learn does not. Times are medians over ``runs`` fits, after a warm-up that compiles our
Numba kernels, in CPU seconds of this process by default (on a shared machine the steadier
figure; both fit on one thread) or wall seconds with ``--clock wall``. Ratios are ours over
scikit-learn's (under 1: we are faster; target: under 2).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits, make_classification
from sklearn.ensemble import RandomForestClassifier
from sklearn.model_selection import train_test_split

from veritas_dsl.unlearning import DareForest


def data(name: str, rows: int) -> tuple[np.ndarray, np.ndarray]:
    if name == "make_classification":
        X, y = make_classification(rows, 40, random_state=0)
    elif name == "breast_cancer":
        X, y = load_breast_cancer(return_X_y=True)
    elif name == "digits":
        X, y = load_digits(return_X_y=True)
        y = (y == 0).astype(int)
    else:
        raise SystemExit(f"unknown data set {name!r}")
    return X.astype(np.float32), y


def models(trees: int, depth: int) -> dict:
    """Fresh models by name, each with ``fit`` and ``predict_proba``."""
    return {
        "dare k=10": lambda: DareForest(n_trees=trees, max_depth=depth, k=10),
        "dare k=all": lambda: DareForest(n_trees=trees, max_depth=depth, k=None),
        "sklearn": lambda: RandomForestClassifier(
            n_estimators=trees,
            max_depth=depth,
            max_features="sqrt",
            bootstrap=False,
            n_jobs=1,
            random_state=0,
        ),
    }


def measure(make, runs: int, clock, X, y, X_test, y_test) -> tuple[float, float]:
    """``(median fit seconds, held-out accuracy)``; run ``i`` fits with ``random_state=i``."""
    times, accuracy = [], []
    for run in range(runs):
        model = make()
        model.random_state = run
        start = clock()
        model.fit(X, y)
        times.append(clock() - start)
        accuracy.append(np.mean((model.predict_proba(X_test)[:, 1] > 0.5) == y_test))
    return statistics.median(times), statistics.median(accuracy)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", type=int, default=10)
    parser.add_argument("--depth", type=int, default=10)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rows", type=int, default=100_000, help="of make_classification")
    parser.add_argument("--data", default="make_classification,breast_cancer,digits")
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    args = parser.parse_args()
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    X, y = data("breast_cancer", 0)
    for make in models(2, 3).values():  # warm-up: Numba compiles our kernels
        make().fit(X, y)
    names = list(models(1, 1))
    print(
        f"{args.trees} trees, depth {args.depth}, max_features sqrt, no bootstrap; median fit "
        f"{args.clock} seconds of {args.runs} runs on 75 %, accuracy on the held-out 25 %"
    )
    print(
        f"{'data':<20}{'rows x cols':>13}"
        + "".join(f"{name + ' s':>13}" for name in names)
        + "".join(f"{name + '/sk':>14}" for name in names[:-1])
        + "".join(f"{'acc ' + name:>16}" for name in names)
    )
    for name in args.data.split(","):
        X, y = data(name, args.rows)
        X_fit, X_test, y_fit, y_test = train_test_split(
            X, y, test_size=0.25, stratify=y, random_state=0
        )
        results = {
            model: measure(make, args.runs, clock, X_fit, y_fit, X_test, y_test)
            for model, make in models(args.trees, args.depth).items()
        }
        reference = results["sklearn"][0]
        print(
            f"{name:<20}{f'{len(X_fit)} x {X.shape[1]}':>13}"
            + "".join(f"{results[m][0]:>13.3f}" for m in names)
            + "".join(f"{results[m][0] / reference:>14.2f}" for m in names[:-1])
            + "".join(f"{results[m][1]:>16.4f}" for m in names)
        )


if __name__ == "__main__":
    main()
