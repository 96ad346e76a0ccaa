"""Regenerate the small models and data the examples use. Deterministic: run it, diff nothing.

python examples/make_examples.py
"""

from __future__ import annotations

import zipfile
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


def scaled_data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Ten features scaled to [0, 1], as the robustness literature's benchmark sets are."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 1, size=(n, 10)).astype(np.float32)
    X[X < 0.15] = 0.0  # sparse, so that the LIBSVM file leaves entries out
    y = ((X[:, 0] + X[:, 1] * X[:, 2] - X[:, 3] + 0.3 * X[:, 4]) > 0.4).astype(int)
    return X, y


def write_libsvm(path: Path, X: np.ndarray, y: np.ndarray) -> None:
    """LIBSVM text, indices counting from 1, zeros left out."""
    lines = []
    for row, label in zip(X, y, strict=True):
        entries = [f"{i + 1}:{float(v):.9g}" for i, v in enumerate(row) if v != 0]
        lines.append(" ".join([str(int(label)), *entries]))
    path.write_text("\n".join(lines) + "\n")


def literature_model() -> None:
    """A model shipped as the literature ships them: a JSON tree dump and a LIBSVM test set."""
    X, y = scaled_data(3000, seed=3)
    # base_score 0.5 is a margin of 0, which the dump (recording no base score) then needs.
    params = {
        "objective": "binary:logistic",
        "max_depth": 4,
        "eta": 0.3,
        "seed": 3,
        "base_score": 0.5,
    }
    booster = xgb.train(params, xgb.DMatrix(X, y), num_boost_round=30)
    booster.dump_model(HERE / "models" / "scaled_dump.json", dump_format="json")
    X_test, y_test = scaled_data(100, seed=4)
    write_libsvm(HERE / "data" / "scaled_test.libsvm", X_test, y_test)


def credit_forest(X: np.ndarray, y: np.ndarray) -> None:
    """A random forest that predicts by majority vote, saved as our Ensemble JSON (no
    scikit-learn needed to load it). Regenerating it needs scikit-learn."""
    from dataclasses import replace

    from sklearn.ensemble import RandomForestClassifier

    from veritas_dsl.model import Ensemble

    forest = RandomForestClassifier(n_estimators=15, max_depth=4, random_state=5).fit(X, y)
    named = replace(Ensemble.from_sklearn(forest), feature_names=tuple(FEATURES))
    named.save(HERE / "models" / "credit_forest.json")


def unlearning_forest() -> None:
    """A small DaRE forest in the deterministic configuration (deleting rows then equals fitting
    again without them), and the rows examples/unlearning.ver deletes from it."""
    from veritas_dsl.unlearning import DareForest

    rng = np.random.default_rng(7)
    n = 300
    X = np.column_stack(
        [rng.integers(18, 91, n), rng.integers(0, 200, n), rng.integers(0, 10, n)]
    ).astype(np.float32)
    score = 0.04 * (X[:, 0] - 40) + X[:, 1] / 50 - X[:, 2] / 3
    y = (score + rng.normal(0, 0.7, n) > 1.0).astype(int)
    forest = DareForest(n_trees=10, max_depth=4, k=None, max_features=None, random_state=7)
    path = HERE / "models" / "unlearning.dare"
    forest.fit(X, y).save(path)
    _fix_zip_times(path)
    (HERE / "data" / "deleted_rows.txt").write_text(
        "# Training rows to forget: ids count from 0, one a line.\n6\n12\n15\n"
    )


def capped_unlearning() -> None:
    """The deletion of examples/unlearning.ver published capped (examples/cap.ver): every
    tree's change clipped so that the trees alone prove |capped(x) - before(x)| <= 0.05 (no
    engine runs here, so the file is the same on every machine; the spec proves it)."""
    from veritas_dsl.unlearning import DareForest
    from veritas_dsl.unlearning.cap import cap
    from veritas_dsl.unlearning.dare.derive import deleted

    before = DareForest.load(HERE / "models" / "unlearning.dare")
    after = deleted(before, [6, 12, 15])
    found = cap(before.to_ensemble(), after.to_ensemble(), 0.05, steps=0)
    found.model.save(HERE / "models" / "unlearning_capped.json")
    # The same cap with half of it given to seeded noise in every leaf.
    noisy = cap(before.to_ensemble(), after.to_ensemble(), 0.05, steps=0, noise=0.5, seed=1)
    noisy.model.save(HERE / "models" / "unlearning_capped_noisy.json")


GERMAN = [
    "duration", "amount", "rate", "residence", "age", "credits",
    "checking", "savings", "employment", "owner",
]  # fmt: skip


def german_credit(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A German-credit-like data set (the UCI set's kinds of columns, made up): duration in
    months, amount in DM (multiples of 250), installment rate and years of residence (1 to 4),
    age, existing credits, and coded checking account, savings and employment status (0 = worst),
    home owner (0/1); the label (1 = good risk, about half) follows a noisy linear score."""
    rng = np.random.default_rng(seed)
    months = [6, 9, 12, 15, 18, 24, 30, 36, 42, 48, 60]
    share = [0.08, 0.05, 0.2, 0.07, 0.12, 0.2, 0.06, 0.1, 0.03, 0.06, 0.03]
    duration = rng.choice(months, n, p=share)
    amount = np.exp(rng.normal(7.6, 0.6, n)) * (0.6 + duration / 40)
    amount = np.clip(np.round(amount / 250) * 250, 250, 20_000)
    rate = rng.integers(1, 5, n)
    residence = rng.integers(1, 5, n)
    age = np.clip(np.round(19 + rng.gamma(2.2, 7.5, n)), 19, 75)
    credits = rng.choice([1, 2, 3, 4], n, p=[0.63, 0.33, 0.03, 0.01])
    checking = rng.choice(4, n, p=[0.27, 0.27, 0.06, 0.40])
    savings = rng.choice(5, n, p=[0.6, 0.1, 0.06, 0.05, 0.19])
    employment = rng.choice(5, n, p=[0.06, 0.17, 0.34, 0.17, 0.26])
    owner = (rng.random(n) < 0.71).astype(int)
    score = (
        -0.035 * duration
        - amount / 8000
        + 0.02 * (age - 35)
        - 0.15 * (rate - 2.5)
        + np.array([-0.9, -0.4, 0.2, 0.8])[checking]
        + np.array([-0.3, -0.1, 0.2, 0.5, 0.3])[savings]
        + 0.12 * employment
        + 0.3 * owner
    )
    y = (score + rng.normal(0, 0.3, n) > -0.8).astype(int)
    columns = [duration, amount, rate, residence, age, credits, checking, savings, employment]
    return np.column_stack([*columns, owner]).astype(np.float32), y


def recourse_forest() -> None:
    """The German-credit-like data (rows 0-749 train, the rest test; bench/recourse.py reads it
    too) and a DaRE forest of random nodes on the training rows whose worst case after deleting
    3 rows is certified (examples/recourse.ver): `certified_fit` over random_state 0 to 59, as
    bench/recourse.py chooses."""
    from veritas_dsl.unlearning import certified_fit

    X, y = german_credit(1000, seed=11)
    # A DaRE forest's features are f0, f1, ...: the columns are named so (GERMAN's order).
    header = ",".join([*(f"f{i}" for i in range(len(GERMAN))), "label"])
    np.savetxt(
        HERE / "data" / "german_credit.csv",
        np.column_stack([X, y]),
        delimiter=",",
        header=header,
        comments="",
        fmt="%.9g",
    )
    forest, _ = certified_fit(
        X[:750], y[:750], 3, X[750:], y[750:], range(60),
        n_trees=20, max_depth=2, min_samples_leaf=50,
    )  # fmt: skip
    path = HERE / "models" / "recourse.dare"
    forest.save(path)
    _fix_zip_times(path)


def credit_catboost(X: np.ndarray, y: np.ndarray) -> None:
    """A CatBoost model of the credit data, as CatBoost's JSON (no timestamp or GUID, so that the
    file is the same each time). Regenerating it needs CatBoost."""
    import json

    from catboost import CatBoostClassifier, Pool

    model = CatBoostClassifier(
        iterations=12, depth=3, random_seed=1, thread_count=1, verbose=0, allow_writing_files=False
    ).fit(Pool(X, y, feature_names=FEATURES))
    path = HERE / "models" / "credit_catboost.json"
    model.save_model(str(path), format="json")
    document = json.loads(path.read_text())
    info = document["model_info"]
    for key in ("model_guid", "train_finish_time", "catboost_version_info", "output_options"):
        info.pop(key, None)
    path.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n")


def scaled_onnx() -> None:
    """A scikit-learn gradient-boosting model of the scaled data, exported to ONNX by skl2onnx
    (ONNX keeps no feature names: its features are f0..f9, as the LIBSVM file's). Regenerating
    it needs scikit-learn and skl2onnx."""
    from skl2onnx import to_onnx
    from sklearn.ensemble import GradientBoostingClassifier

    X, y = scaled_data(3000, seed=3)
    model = GradientBoostingClassifier(n_estimators=12, max_depth=3, random_state=3).fit(X, y)
    proto = to_onnx(
        model, X[:1], options={id(model): {"zipmap": False}}, target_opset={"": 17, "ai.onnx.ml": 3}
    )
    (HERE / "models" / "scaled.onnx").write_bytes(proto.SerializeToString())


def _fix_zip_times(path: Path) -> None:
    """An npz archive stamps each entry with the time of writing; fix them, so that running
    this script again changes no byte."""
    with zipfile.ZipFile(path) as source:
        entries = [(info, source.read(info)) for info in source.infolist()]
    with zipfile.ZipFile(path, "w") as target:
        for info, data in entries:
            info.date_time = (1980, 1, 1, 0, 0, 0)
            target.writestr(info, data)


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
    credit_forest(X, y)
    literature_model()
    unlearning_forest()
    capped_unlearning()
    recourse_forest()
    credit_catboost(X, y)
    scaled_onnx()


if __name__ == "__main__":
    main()
