"""The models of ``bench/astar_vs_veritas.py``: issue 17's suite, and the older synthetic shapes.

Each model is an XGBoost classifier trained here, deterministically, on one of:

* ``breast``: scikit-learn's bundled breast cancer set (569 rows, 30 features), 100 trees x 6;
* ``digits``: the bundled digits, 2 against 6 (64 features), 200 x 4;
* ``credit``: credit-like generated data (9 features: int age, years employed and dependents,
  real income and debt, a 0/1 sex, a one-hot housing group of three), 50 x 4;
* ``mc54``: ``make_classification`` with 54 features, 80 x 8 (a big model);
* ``mc28``: ``make_classification`` with 28 features, 300 x 8 (a big model).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import xgboost as xgb
from sklearn.datasets import load_breast_cancer, load_digits, make_classification


@dataclass(frozen=True)
class Shape:
    """One model of the suite: its data, trees and depth; ``big`` models are timed for their
    anytime bounds (first solution, gap at the limit) rather than for an exact answer."""

    name: str
    n_trees: int
    depth: int
    big: bool = False


SUITE = [
    Shape("breast", 100, 6),
    Shape("digits", 200, 4),
    Shape("credit", 50, 4),
    Shape("mc54", 80, 8, big=True),
    Shape("mc28", 300, 8, big=True),
]


def synthetic(n_features: int):
    """The older benchmark's data: feature 0 a binary protected attribute the labels depend on."""
    X, y = make_classification(
        n_samples=3000, n_features=n_features, n_informative=n_features - 1, n_redundant=0,
        random_state=0,
    )  # fmt: skip
    rng = np.random.default_rng(0)
    X[:, 0] = X[:, 0] > 0
    y = np.where(rng.random(len(y)) < 0.15, X[:, 0], y)
    return X.astype(np.float32), y


def credit_like(n: int = 2000, seed: int = 5):
    """Credit-like rows: 9 features, ints, a 0/1 feature and a one-hot group of three."""
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 91, n)
    years = np.minimum(rng.integers(0, 41, n), age - 18)
    dependents = rng.choice(5, n, p=[0.4, 0.25, 0.2, 0.1, 0.05])
    income = np.round(rng.gamma(2.0, 25_000.0, n), 2)
    debt = np.round(rng.uniform(0, 1, n) * income * 0.8, 2)
    sex = rng.integers(0, 2, n)
    housing = np.eye(3)[rng.choice(3, n, p=[0.5, 0.35, 0.15])]
    X = np.column_stack([age, years, dependents, income, debt, sex, housing]).astype(np.float32)
    score = (
        0.03 * (age - 40) + 0.02 * years - 0.1 * dependents + income / 40_000 - debt / 20_000
        + 0.6 * housing[:, 0] - 0.2 * sex
    )  # fmt: skip
    y = (score + rng.normal(0, 0.5, n) > 0.5).astype(int)
    return X, y


def dataset(name: str):
    """Rows and labels of the suite's data set ``name``."""
    if name == "breast":
        X, y = load_breast_cancer(return_X_y=True)
        return X.astype(np.float32), y
    if name == "digits":
        d = load_digits()
        keep = (d.target == 2) | (d.target == 6)
        return d.data[keep].astype(np.float32), (d.target[keep] == 6).astype(int)
    if name == "credit":
        return credit_like()
    n_features = {"mc54": 54, "mc28": 28}[name]
    X, y = make_classification(
        n_samples=5000, n_features=n_features, n_informative=n_features // 2, random_state=17,
    )  # fmt: skip
    return X.astype(np.float32), y


def train(X, y, n_trees: int, depth: int):
    model = xgb.XGBClassifier(
        n_estimators=n_trees, max_depth=depth, learning_rate=0.3, tree_method="hist", n_jobs=2,
        random_state=0,
    )  # fmt: skip
    return model.fit(X, y)
