"""Models given as Python objects (``models={"clf": model}``): checked and answered as the same
model read from a file, without touching the disk."""

from __future__ import annotations

import builtins
import io
import os
import tempfile
from pathlib import Path

import lightgbm
import numpy as np
import pytest
import xgboost
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression

import veritas_dsl
from veritas_dsl import SpecError
from veritas_dsl.model import Ensemble
from veritas_dsl.unlearning import DareForest

QUERIES = """
query top {
    input x
    where x.f0 <= 0.5
    maximize clf(x)
}
query bottom {
    input x
    minimize clf(x)
    expect lower >= -100
}
property bounded {
    forall x: clf(x) <= 100
}
"""


def spec_text(declaration: str) -> str:
    return declaration + "\n" + QUERIES


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.random((300, 3))
    y = (X[:, 0] + X[:, 1] > 1).astype(int)
    return X, y


def models(X, y):
    """Each format with a fitted model of it and how that model is written to a file."""
    xgb = xgboost.XGBClassifier(n_estimators=6, max_depth=3, random_state=0).fit(X, y)
    names = ["f0", "f1", "f2"]
    lgb = lightgbm.LGBMClassifier(n_estimators=6, num_leaves=6, verbose=-1)
    lgb.fit(X, y, feature_name=names)
    rf = RandomForestClassifier(n_estimators=4, max_depth=3, random_state=0).fit(X, y)
    dare = DareForest(n_trees=4, max_depth=3, k=None, max_features=None).fit(X, y)

    def skops_save(estimator, path):
        import skops.io

        skops.io.dump(estimator, path)

    return {
        "xgboost": (xgb, "m.json", lambda m, p: m.save_model(p)),
        "lightgbm": (lgb, "m.txt", lambda m, p: m.booster_.save_model(p)),
        "sklearn": (rf, "m.skops", skops_save),
        "dare": (dare, "m.dare", lambda m, p: m.save(p)),
    }


FORMATS = ("xgboost", "lightgbm", "sklearn", "dare")


@pytest.fixture(scope="module")
def fitted(data):
    return models(*data)


def answers(runs):
    return [
        (
            run.name,
            run.result.termination,
            run.result.lower,
            run.result.upper,
            [check.holds for check in run.checks],
            [w.inputs["x"].tolist() for w in run.result.witnesses],
        )
        for run in runs
    ]


class NoWrites:
    """Fails any file opened for writing, anything created in the temporary folder, and any
    file saved by the libraries' savers."""

    def __init__(self, monkeypatch):
        real_open = builtins.open
        real_os_open = os.open

        def guarded_open(file, mode="r", *args, **kwargs):
            if any(flag in mode for flag in "wax+"):
                raise AssertionError(f"opened {file!r} for writing")
            return real_open(file, mode, *args, **kwargs)

        def guarded_os_open(path, flags, *args, **kwargs):
            if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
                raise AssertionError(f"os.open({path!r}) for writing")
            return real_os_open(path, flags, *args, **kwargs)

        monkeypatch.setattr(builtins, "open", guarded_open)
        monkeypatch.setattr(io, "open", guarded_open)
        monkeypatch.setattr(os, "open", guarded_os_open)
        monkeypatch.setattr(Path, "write_text", _refused)
        monkeypatch.setattr(Path, "write_bytes", _refused)
        monkeypatch.setattr(xgboost.Booster, "save_model", _refused)
        monkeypatch.setattr(lightgbm.Booster, "save_model", _refused)
        monkeypatch.setattr(DareForest, "save", _refused)
        monkeypatch.setattr(Ensemble, "save", _refused)
        self.temp = Path(tempfile.gettempdir())
        self.before = set(self.temp.iterdir())

    def created(self) -> set[Path]:
        return set(self.temp.iterdir()) - self.before


def _refused(*args, **kwargs):
    raise AssertionError("a model was saved")


@pytest.mark.parametrize("format", FORMATS)
def test_a_model_in_memory_answers_as_its_file(format, fitted, tmp_path, monkeypatch):
    model, name, save = fitted[format]
    save(model, str(tmp_path / name))
    from_file = veritas_dsl.parse(
        spec_text(f'model clf = {format} "{name}"'), str(tmp_path / "spec.ver")
    )
    expected = answers(from_file.run(timeout_s=60))

    guard = NoWrites(monkeypatch)
    given = veritas_dsl.parse(spec_text(f"model clf = {format}"), models={"clf": model})
    got = answers(given.run(timeout_s=60))
    assert not guard.created()
    monkeypatch.undo()

    assert got == expected
    assert [t for _, t, *_ in got] == [veritas_dsl.Termination.OPTIMAL] * 2 + [
        veritas_dsl.Termination.INFEASIBLE
    ]
    # Witnesses were validated on the library model the object gave.
    assert given.checked.models["clf"].library is not None


def test_a_given_model_replaces_the_file_its_declaration_names(fitted, tmp_path):
    model, name, save = fitted["xgboost"]
    save(model, str(tmp_path / name))
    text = spec_text(f'model clf = xgboost "{name}"')
    path = str(tmp_path / "spec.ver")
    from_file = veritas_dsl.parse(text, path)
    (tmp_path / name).unlink()  # not read when the model is given
    given = veritas_dsl.parse(text, path, models={"clf": model})
    assert answers(given.run(timeout_s=60)) == answers(from_file.run(timeout_s=60))
    assert given.checked.model_paths == {}


def test_an_ensemble_and_the_wrapper_and_booster_of_one_model(fitted):
    model = fitted["xgboost"][0]
    text = spec_text("model clf = xgboost")
    booster = veritas_dsl.parse(text, models={"clf": model.get_booster()})
    wrapper = veritas_dsl.parse(text, models={"clf": model})
    ensemble = veritas_dsl.parse(text, models={"clf": Ensemble.from_xgboost(model)})
    plain = veritas_dsl.parse(
        spec_text("model clf = ensemble"), models={"clf": Ensemble.from_xgboost(model)}
    )
    expected = answers(wrapper.run(timeout_s=60))
    for spec in (booster, ensemble, plain):
        assert answers(spec.run(timeout_s=60)) == expected
    assert booster.digest() == wrapper.digest() == ensemble.digest()


def test_models_derived_from_a_given_forest(fitted, tmp_path):
    forest, name, save = fitted["dare"]
    save(forest, str(tmp_path / name))
    derived = """
model after = delete(clf, rows = [0, 5, 7])
model again = retrain(clf, without = [0, 5, 7])
query change {
    input x
    maximize after(x) - clf(x)
}
query same {
    input x
    maximize again(x) - after(x)
    expect upper <= 0
}
"""
    path = str(tmp_path / "s.ver")
    from_file = veritas_dsl.parse(f'model clf = dare "{name}"' + derived, path)
    given = veritas_dsl.parse("model clf = dare" + derived, models={"clf": forest})
    assert answers(given.run(timeout_s=60)) == answers(from_file.run(timeout_s=60))
    assert forest.n_rows == len(forest.remaining())  # the caller's forest deleted nothing


def test_later_changes_to_the_object_change_nothing(data):
    X, y = data
    forest = DareForest(n_trees=3, max_depth=3).fit(X, y)
    text = "model clf = dare\n" + QUERIES
    spec = veritas_dsl.parse(text, models={"clf": forest})
    before = answers(spec.run(timeout_s=60))
    digest = spec.digest()
    forest.delete(list(range(100)))
    assert answers(spec.run(timeout_s=60)) == before
    assert spec.digest() == digest
    again = veritas_dsl.parse(text, models={"clf": forest})
    assert again.digest() != digest


def test_jobs_take_a_given_model(fitted, tmp_path):
    model = fitted["lightgbm"][0]
    rows = "f0,f1,f2\n" + "\n".join(f"{i / 10},{1 - i / 10},0.5" for i in range(8)) + "\n"
    (tmp_path / "rows.csv").write_text(rows)
    text = """
model clf = lightgbm
data rows = csv "rows.csv"
property steady for r in rows[0:8] {
    forall x: linf(x, r) <= 0.02 => class(clf, x) == class(clf, r)
}
"""
    spec = veritas_dsl.parse(text, str(tmp_path / "s.ver"), models={"clf": model})
    one = answers(spec.run(timeout_s=60))
    two = answers(spec.run(timeout_s=60, jobs=2))
    assert two == one and len(one) == 8


def first_error(text, **models):
    with pytest.raises(SpecError) as caught:
        veritas_dsl.parse(text, "spec.ver", models=models)
    return caught.value.diagnostics[0]


def test_a_format_that_disagrees_with_the_object_is_located(fitted):
    error = first_error("model clf = lightgbm\n", clf=fitted["xgboost"][0])
    assert error.code == "V401"
    assert (error.span.line, error.span.column) == (1, 13)
    assert "`lightgbm` takes a LightGBM Booster or LGBMModel" in error.message
    assert "declare it `xgboost`" in error.message


def test_an_object_that_is_no_model(data):
    error = first_error("model clf = sklearn\n", clf=np.zeros((3, 3)))
    assert error.code == "V401" and "not a numpy.ndarray" in error.message
    error = first_error('model clf = xgboost "m.json"\n', clf="m.json")
    assert error.code == "V401" and "not a builtins.str" in error.message
    error = first_error("model clf = dare\n", clf=DareForest(n_trees=2))
    assert error.code == "V401" and "not fitted" in error.message


def test_an_importer_refusal_is_located(data):
    X, y = data
    error = first_error("model clf = sklearn\n", clf=LogisticRegression().fit(X, y))
    assert error.code == "V401" and "LogisticRegression is not a fitted estimator" in error.message
    assert (error.span.line, error.span.column) == (1, 13)


def test_an_undeclared_name(fitted):
    model = fitted["xgboost"][0]
    error = first_error("model clf = xgboost\n", clf=model, cfl=model)
    assert error.code == "V416" and "`cfl`, which this spec does not declare" in error.message
    assert error.help == "did you mean `clf`?"
    derived = "model f = dare\nmodel g = delete(f, rows = [1])\n"
    error = first_error(derived, f=fitted["dare"][0], g=fitted["dare"][0])
    assert error.code == "V416" and error.span.line == 2


def test_a_model_declared_without_a_file_must_be_given():
    error = first_error("model clf = xgboost\n")
    assert error.code == "V415" and error.span.line == 1
    assert "models={'clf': model}" in error.help


def test_features_must_match_the_spec(fitted, data):
    X, y = data
    wide = xgboost.XGBRegressor(n_estimators=2).fit(np.hstack([X, X]), y)
    text = "model clf = xgboost\nmodel old = xgboost\nfeatures {\n f0 : real in [0, 1]\n}\n"
    error = first_error(text, clf=fitted["xgboost"][0], old=wide)
    assert error.code == "V404" and "different features" in error.message
    error = first_error("model clf = xgboost\nfeatures {\n f7 : real\n}\n", clf=wide)
    assert "f7" in error.message


def test_a_wrong_container_is_a_type_error(fitted):
    with pytest.raises(TypeError, match="mapping"):
        veritas_dsl.parse("model clf = xgboost\n", models=[fitted["xgboost"][0]])
    with pytest.raises(TypeError, match="string"):
        veritas_dsl.parse("model clf = xgboost\n", models={1: fitted["xgboost"][0]})
