"""Regenerate the small models and data the examples use. Deterministic: run it, diff nothing.

python examples/make_examples.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xgboost as xgb

HERE = Path(__file__).resolve().parent
FEATURES = ["age", "income", "debt", "sex", "housing_own", "housing_rent", "housing_free"]


def credit_data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A synthetic credit data set: integer age, real income and debt, bool sex, one-hot housing."""
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 91, n)
    income = np.round(rng.gamma(2.0, 25_000.0, n), 2)
    debt = np.round(rng.uniform(0, 1, n) * income * 0.8, 2)
    sex = rng.integers(0, 2, n)
    housing = np.eye(3)[rng.choice(3, n, p=[0.5, 0.35, 0.15])]
    X = np.column_stack([age, income, debt, sex, housing]).astype(np.float32)
    score = 0.03 * (age - 40) + income / 40_000 - debt / 20_000 + 0.6 * housing[:, 0] - 0.2 * sex
    y = (score + rng.normal(0, 0.5, n) > 0.5).astype(int)
    return X, y


def train(X: np.ndarray, y: np.ndarray, rounds: int, depth: int, seed: int) -> xgb.Booster:
    data = xgb.DMatrix(X, y, feature_names=FEATURES)
    params = {"objective": "binary:logistic", "max_depth": depth, "eta": 0.3, "seed": seed}
    return xgb.train(params, data, num_boost_round=rounds)


def main() -> None:
    (HERE / "models").mkdir(exist_ok=True)
    (HERE / "data").mkdir(exist_ok=True)
    X, y = credit_data(2000, seed=1)
    train(X, y, rounds=20, depth=3, seed=1).save_model(HERE / "models" / "credit.json")
    train(X[:1000], y[:1000], rounds=20, depth=3, seed=2).save_model(
        HERE / "models" / "credit_v2.json"
    )
    X_test, y_test = credit_data(200, seed=2)
    header = ",".join([*FEATURES, "label"])
    rows = np.column_stack([X_test, y_test])
    np.savetxt(
        HERE / "data" / "credit_test.csv",
        rows,
        delimiter=",",
        header=header,
        comments="",
        fmt="%.9g",
    )


if __name__ == "__main__":
    main()
