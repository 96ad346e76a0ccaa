"""``features from DATA``: ranges from a data set's columns, declared features overriding."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from veritas_dsl import parse
from veritas_dsl.ir import DomainKind, Feature

from conftest import build


@pytest.fixture
def folder(tmp_path):
    """A model over (age, income, owner) and a training set with a label column."""
    tree = (0, 40.0, (1, 30000.0, -1.0, 1.0), (2, 0.5, 0.5, 2.0))
    model = build([tree], 3, names=("age", "income", "owner"))
    rows = [
        ("age", "income", "owner", "label"),
        (25, 18000.5, 0, 1),
        (61, 52000.25, 1, 0),
        (38, 9000, 1, 1),
        (19, 71000.75, 0, 0),
    ]
    (tmp_path / "train.csv").write_text("\n".join(",".join(map(str, r)) for r in rows) + "\n")
    return tmp_path, model


def spec(folder, text: str):
    path, model = folder
    model.save(path / "m.json")
    header = 'model m = ensemble "m.json"\ndata train = csv "train.csv"\n'
    return parse(header + text, str(path / "spec.ver"))


def expected(folder) -> dict[str, Feature]:
    """The ranges computed from the file itself, with the csv module."""
    path, model = folder
    with open(path / "train.csv") as file:
        columns = {k: [float(v) for v in vs] for k, vs in _columns(csv.DictReader(file)).items()}
    found = {}
    for name in model.feature_names:
        values = np.asarray(columns[name], dtype=np.float32).astype(float)
        kind = DomainKind.INT if all(v.is_integer() for v in values) else DomainKind.REAL
        found[name] = Feature(name, kind, float(values.min()), float(values.max()))
    return found


def _columns(reader) -> dict[str, list[str]]:
    columns: dict[str, list[str]] = {}
    for row in reader:
        for key, value in row.items():
            columns.setdefault(key, []).append(value)
    return columns


def test_every_feature_takes_its_columns_range_and_kind(folder):
    features = spec(folder, "features from train\n").checked.features
    want = expected(folder)
    assert list(features) == [want[f.name] for f in features]
    kinds = {f.name: f.kind for f in features}
    assert DomainKind.REAL in kinds.values() and DomainKind.INT in kinds.values()


def test_declared_features_override_the_data(folder):
    text = "features from train {\n  owner : bool\n}\n"
    features = {f.name: f for f in spec(folder, text).checked.features}
    want = expected(folder)
    assert features["owner"] == Feature("owner", DomainKind.BOOL, 0.0, 1.0)
    others = [name for name in features if name != "owner"]
    assert others and all(features[name] == want[name] for name in others)


def test_a_counterfactual_stays_in_the_data_ranges(folder):
    text = (
        "features from train\n"
        "query low { input x  minimize m(x)  }\n"
        "query far for r in train[0:1] { input x  where m(x) >= 2  minimize linf(x, r) }\n"
    )
    runs = spec(folder, text).run(solver="oracle")
    want = expected(folder)
    assert all(run.result.witnesses for run in runs)
    for run in runs:
        for witness in run.result.witnesses:
            for name, value in zip(want, witness.inputs["x"], strict=True):
                assert want[name].lo <= value <= want[name].hi
