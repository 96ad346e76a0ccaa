"""Parity figures: how closely Ensemble.eval matches each library's raw output, per importer and
objective, on data rows, random points and points on and beside every threshold.

    python bench/parity.py

Needs the dev extra (scikit-learn, LightGBM). Prints one line per model; the worst relative error
is max |library - ours| / max(1, |library|).
"""

from __future__ import annotations

import numpy as np
import xgboost as xgb

from veritas_dsl.model import Ensemble
from veritas_dsl.model.parity import compare, probe_points

RNG = np.random.default_rng(0)
X = (RNG.normal(size=(2000, 8)) * np.array([1, 10, 0.1, 1000, 1, 1, 5, 0.01])).astype(np.float32)
Z = X / np.array([1, 10, 0.1, 1000, 1, 1, 5, 0.01], dtype=np.float32)
Y_BIN = (Z[:, 0] + Z[:, 1] - Z[:, 2] * Z[:, 3] > 0).astype(int)
Y_CLS = np.digitize(Z[:, 0] + 0.5 * Z[:, 3] - Z[:, 5], [-0.7, 0.7])
Y_REAL = 3 * Z[:, 0] - 2 * Z[:, 1] * Z[:, 2] + Z[:, 4] + np.sin(Z[:, 6])


def xgboost_models():
    targets = {
        "binary:logistic": (Y_BIN, {}),
        "binary:logitraw": (Y_BIN, {}),
        "reg:logistic": ((Y_REAL > 0) * 0.8 + 0.1, {}),
        "reg:squarederror": (Y_REAL, {}),
        "reg:absoluteerror": (Y_REAL, {}),
        "reg:quantileerror": (Y_REAL, {"quantile_alpha": 0.3}),
        "count:poisson": (np.round(np.abs(Y_REAL)), {}),
        "reg:gamma": (np.abs(Y_REAL) + 0.1, {}),
        "reg:tweedie": (np.abs(Y_REAL), {}),
        "multi:softprob": (Y_CLS, {"num_class": 3}),
        "multi:softmax": (Y_CLS, {"num_class": 3}),
    }
    for objective, (y, extra) in targets.items():
        params = {"objective": objective, "max_depth": 6, "eta": 0.1, "seed": 0, **extra}
        booster = xgb.train(params, xgb.DMatrix(X, y), num_boost_round=200)
        yield f"xgboost {objective} (200 rounds, depth 6)", Ensemble.from_xgboost(booster)


def sklearn_models():
    from sklearn import ensemble, tree

    cases = [
        (tree.DecisionTreeClassifier(max_depth=8), Y_CLS),
        (ensemble.RandomForestClassifier(100, max_depth=8, random_state=0), Y_BIN),
        (ensemble.RandomForestClassifier(100, max_depth=8, random_state=0), Y_CLS),
        (ensemble.ExtraTreesRegressor(100, max_depth=8, random_state=0), Y_REAL),
        (ensemble.GradientBoostingClassifier(n_estimators=100, random_state=0), Y_BIN),
        (ensemble.GradientBoostingClassifier(n_estimators=50, random_state=0), Y_CLS),
        (ensemble.GradientBoostingRegressor(n_estimators=100, random_state=0), Y_REAL),
    ]
    for estimator, y in cases:
        fitted = estimator.fit(X.astype(np.float64), y)
        kind = f"{len(np.unique(y))} classes" if y is not Y_REAL else "regression"
        yield f"sklearn {type(estimator).__name__} ({kind})", Ensemble.from_sklearn(fitted)


def lightgbm_models():
    import lightgbm as lgb

    cases = {
        "binary": (Y_BIN, {}),
        "multiclass": (Y_CLS, {"num_class": 3}),
        "regression": (Y_REAL, {}),
        "poisson": (np.round(np.abs(Y_REAL)), {}),
        "quantile": (Y_REAL, {"alpha": 0.7}),
    }
    for objective, (y, extra) in cases.items():
        params = {"objective": objective, "num_leaves": 31, "verbose": -1, "seed": 0, **extra}
        booster = lgb.train(params, lgb.Dataset(X.astype(np.float64), y), num_boost_round=100)
        yield f"lightgbm {objective} (100 rounds, 31 leaves)", Ensemble.from_lightgbm(booster)


def main() -> None:
    print(f"{'model':<58} {'points':>7} {'worst rel. error':>17}  ok")
    for source in (xgboost_models, sklearn_models, lightgbm_models):
        for name, model in source():
            report = compare(model, model.library.predict, probe_points(model, X))
            print(f"{name:<58} {report.points:>7} {report.worst_error:>17.2e}  {report.ok}")


if __name__ == "__main__":
    main()
