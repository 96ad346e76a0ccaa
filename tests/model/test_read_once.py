"""A model file is read once: one parse, one XGBoost load, no copy per spec, and its float32
values still exactly those XGBoost holds (confirmed in its serialisation, decoded only when they
differ); witnesses of a query are validated in one predict."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from fractions import Fraction

import numpy as np
import pytest
import xgboost as xgb

from veritas_dsl.model import Ensemble, load_model, ubjson
from veritas_dsl.model.xgboost_library import Booster
from veritas_dsl.run import validated
from veritas_dsl.solvers.oracle.engine import OracleEngine
from veritas_dsl.spec import load, parse

RNG = np.random.default_rng(11)
X = RNG.normal(size=(300, 3)).astype(np.float32)
BOOSTER = xgb.train(
    {"max_depth": 3, "objective": "binary:logistic", "nthread": 1},
    xgb.DMatrix(X, (X[:, 0] + X[:, 1] * X[:, 2] > 0).astype(int)),
    6,
)

SPEC = """\
model clf = xgboost "{file}"

features {{
    f0 : real in [-3, 3]
    f1 : real in [-3, 3]
    f2 : real in [-3, 3]
}}

query top {{
    input x
    maximize clf(x)
}}

query bottom {{
    input x
    minimize clf(x)
}}

query some {{
    input x
    where clf(x) >= 0
    find
}}
"""


class Calls:
    """Counts XGBoost's loads, serialisations and copies of a model (through its library,
    :mod:`veritas_dsl.model.xgboost_library`), and the calls of our UBJSON decoder."""

    def __init__(self, monkeypatch) -> None:
        self.loads = self.saves = self.copies = self.decodes = 0
        init, save, copy = Booster.__init__, Booster.save_ubj, Booster.copy

        def counted_init(booster, *args, **kwargs):
            self.loads += 1
            init(booster, *args, **kwargs)

        def counted_save(booster):
            self.saves += 1
            return save(booster)

        def counted_copy(booster):
            self.copies += 1
            return copy(booster)

        def counted_decode(data):
            self.decodes += 1
            return decode(data)

        decode = ubjson.loads
        monkeypatch.setattr(ubjson, "loads", counted_decode)
        monkeypatch.setattr(Booster, "__init__", counted_init)
        monkeypatch.setattr(Booster, "save_ubj", counted_save)
        monkeypatch.setattr(Booster, "copy", counted_copy)


def spec_file(tmp_path, model_name: str = "m.json"):
    BOOSTER.save_model(tmp_path / model_name)
    path = tmp_path / "s.ver"
    path.write_text(SPEC.format(file=model_name))
    return path


@pytest.mark.parametrize("name", ["m.json", "m.ubj"])
def test_a_spec_loads_its_model_file_once_and_never_writes_it_back(tmp_path, monkeypatch, name):
    path = spec_file(tmp_path, name)
    calls = Calls(monkeypatch)
    spec = load(path)
    counts = (calls.loads, calls.saves, calls.copies, calls.decodes)
    # XGBoost loads the file once, and serialises it once to confirm its float32s; the only
    # UBJSON decoded is a .ubj file itself
    assert counts == (1, 1, 0, int(name == "m.ubj"))
    for run in spec.run():  # three queries, each validating its witness on the library model
        assert run.results[0].witnesses
    assert (calls.loads, calls.saves, calls.copies, calls.decodes) == counts


def test_specs_sharing_a_model_file_share_one_load(tmp_path, monkeypatch):
    path = spec_file(tmp_path)
    calls = Calls(monkeypatch)
    first, second = load(path), parse(path.read_text(), str(path))
    assert calls.loads == 1
    assert first.checked.models["clf"] is second.checked.models["clf"]
    assert first.digest() == second.digest()


def test_a_changed_model_file_is_read_again(tmp_path, monkeypatch):
    path = spec_file(tmp_path)
    before = load(path)
    model = tmp_path / "m.json"
    document = json.loads(model.read_text())
    document["learner"]["learner_model_param"]["base_score"] = "[2.5E-1]"
    model.write_text(json.dumps(document))
    stat = model.stat()
    os.utime(model, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # a coarse clock
    after = load(path)
    assert before.digest() != after.digest()
    models = before.checked.models["clf"], after.checked.models["clf"]
    assert not np.array_equal(models[0].base_score, models[1].base_score)


def test_the_digest_hashes_the_bytes_loaded(tmp_path, monkeypatch):
    path = spec_file(tmp_path)
    read_bytes = []
    real = type(tmp_path).read_bytes
    monkeypatch.setattr(type(tmp_path), "read_bytes", lambda p: read_bytes.append(p) or real(p))
    spec = load(path)
    assert read_bytes == []  # the model's bytes are hashed as they were read for loading
    expected = hashlib.sha256(b"veritas-dsl spec\0" + path.read_text().encode())
    expected.update(b"\0model\0clf\0")
    expected.update(hashlib.sha256(real(tmp_path / "m.json")).digest())
    assert spec.digest() == expected.hexdigest()


# -- float32 values as XGBoost holds them ---------------------------------------------------


def halfway(f: np.float32) -> Fraction:
    """The exact midpoint between ``f`` and the next float32 up."""
    return (Fraction(float(f)) + Fraction(float(np.nextafter(f, np.float32(np.inf))))) / 2


def decimal(value: Fraction, digits: int = 60) -> str:
    """``value`` as decimal text, exact or to ``digits`` significant digits."""
    sign, value = ("-" if value < 0 else ""), abs(value)
    shift = digits - len(str(int(value))) if value >= 1 else digits + 40
    scaled = round(value * 10**shift)
    text = str(scaled).rjust(shift + 1, "0")
    return f"{sign}{text[:-shift]}.{text[-shift:]}"


def with_conditions(tmp_path, offsets: list[Fraction]) -> tuple:
    """A JSON model file whose first tree's conditions are decimal texts near float32
    midpoints (``offsets`` relative to each midpoint), and the model XGBoost holds for it."""
    document = json.loads(BOOSTER.save_raw("json"))
    tree = document["learner"]["gradient_booster"]["model"]["trees"][0]
    n = len(tree["split_conditions"])
    rng = np.random.default_rng(5)
    texts = []
    for i in range(n):
        f = np.float32(rng.normal() * 10.0 ** rng.integers(-3, 4))
        middle = halfway(f)
        texts.append(decimal(middle + offsets[i % len(offsets)] * abs(middle)))
    tree["split_conditions"] = ["@"]
    path = tmp_path / "near_halfway.json"
    path.write_text(json.dumps(document).replace('"@"', ", ".join(texts)))
    return path, Ensemble.from_xgboost(xgb.Booster(model_file=str(path)))


def assert_same(ours: Ensemble, theirs: Ensemble) -> None:
    assert np.array_equal(ours.threshold, theirs.threshold)
    assert np.array_equal(ours.value, theirs.value)
    assert np.array_equal(ours.feature, theirs.feature)
    assert np.array_equal(ours.base_score, theirs.base_score)


def test_json_numbers_are_the_float32s_xgboost_parses(tmp_path, monkeypatch):
    # Near float32 midpoints, but not so near that the float64 lands on one: the float64's
    # float32 is the nearest float32 of the text, as XGBoost rounds it; nothing is decoded.
    offsets = [Fraction(1, 10**12), Fraction(-1, 10**12), Fraction(1, 10**9)]
    path, theirs = with_conditions(tmp_path, offsets)
    calls = Calls(monkeypatch)
    ours = load_model(path)
    assert calls.decodes == 0
    assert_same(ours, theirs)


def test_json_numbers_whose_float64_is_halfway_are_rounded_once(tmp_path, monkeypatch):
    # Exact midpoints (ties to even) and texts so near one that the float64 is the midpoint:
    # the float64 cannot tell which float32 XGBoost parsed; the text read again exactly can
    # (xgboost_document.load), so XGBoost's serialisation confirms them and is not decoded.
    offsets = [Fraction(0), Fraction(1, 10**40), Fraction(-1, 10**40)]
    path, theirs = with_conditions(tmp_path, offsets)
    calls = Calls(monkeypatch)
    ours = load_model(path)
    assert calls.decodes == 0
    assert_same(ours, theirs)
    # ... where the float64 alone gives another float32 for some of them
    document = json.loads(path.read_text())
    first = document["learner"]["gradient_booster"]["model"]["trees"][0]["split_conditions"]
    naive = np.array(first, dtype=np.float64).astype(np.float32)
    xgboost_holds = json.loads(xgb.Booster(model_file=str(path)).save_raw("json"))
    exact = xgboost_holds["learner"]["gradient_booster"]["model"]["trees"][0]
    assert not np.array_equal(naive, np.array(exact["split_conditions"], dtype=np.float32))


def test_a_base_score_whose_float64_is_halfway_is_rounded_once(tmp_path, monkeypatch):
    document = json.loads(BOOSTER.save_raw("json"))
    text = decimal(halfway(np.float32(0.3)) + Fraction(1, 10**45))
    document["learner"]["learner_model_param"]["base_score"] = f"[{text}]"
    path = tmp_path / "base.json"
    path.write_text(json.dumps(document))
    assert np.float32(float(text)) != np.float32(np.nextafter(np.float32(0.3), np.float32(1)))
    calls = Calls(monkeypatch)
    ours = load_model(path)
    assert calls.decodes == 0  # its text rounded once is the float32 XGBoost holds
    theirs = Ensemble.from_xgboost(xgb.Booster(model_file=str(path)))
    assert np.array_equal(ours.base_score, theirs.base_score)


def test_a_serialisation_that_looks_odd_is_decoded(tmp_path, monkeypatch):
    # A feature named like the base score's key: its text is found twice, so nothing is
    # confirmed, and the model comes from XGBoost's serialisation, decoded.
    booster = BOOSTER.copy()
    booster.feature_names = ["base_score", "f1", "f2"]
    booster.save_model(tmp_path / "odd.json")
    calls = Calls(monkeypatch)
    ours = load_model(tmp_path / "odd.json")
    assert calls.decodes == 1
    assert_same(ours, Ensemble.from_xgboost(booster))


def test_a_ubj_file_gives_the_model_xgboost_holds(tmp_path):
    BOOSTER.save_model(tmp_path / "m.ubj")
    assert_same(load_model(tmp_path / "m.ubj"), Ensemble.from_xgboost(BOOSTER))


# -- witness validation ------------------------------------------------------------------


def test_the_witnesses_of_a_result_are_validated_in_one_predict(tmp_path, monkeypatch):
    spec = load(spec_file(tmp_path))
    lowered = next(item for item in spec.lowered() if item.query.name == "some")
    result = OracleEngine().solve(lowered.query)
    several = dataclasses.replace(result, witnesses=tuple(result.witnesses) * 3)
    rows = []
    margins = Booster.margins

    def counted(booster, X, *args, **kwargs):
        rows.append(len(X))
        return margins(booster, X, *args, **kwargs)

    monkeypatch.setattr(Booster, "margins", counted)
    validated(lowered, several)
    assert rows == [3]
