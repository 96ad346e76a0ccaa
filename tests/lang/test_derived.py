"""`delete(...)` and `retrain(...)` in a spec make the forests the Python API makes, once, on
copies: the base model stays the forest as saved."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from veritas_dsl import SpecError, load, parse
from veritas_dsl.unlearning import DareForest


def data(seed: int = 0, n: int = 60):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 5, (n, 3)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] + rng.integers(0, 2, n) > 4).astype(int)
    return X, y


def grid() -> np.ndarray:
    axes = [np.arange(-0.5, 5.0, 0.5)] * 3
    return np.array(np.meshgrid(*axes)).reshape(3, -1).T.astype(np.float32)


def saved(tmp_path, random: bool = False, deleted=()) -> tuple[DareForest, np.ndarray]:
    X, y = data()
    settings = (
        dict(k=2, max_features=2, random_depth=1) if random else dict(k=None, max_features=None)
    )
    forest = DareForest(n_trees=4, max_depth=3, random_state=3, **settings).fit(X, y)
    if deleted:
        forest.delete(list(deleted))
    forest.save(tmp_path / "forest.dare")
    return forest, X


def checked(tmp_path, text: str):
    spec = tmp_path / "spec.ver"
    spec.write_text(text)
    return load(spec).checked


@pytest.mark.parametrize("random", [False, True])
def test_delete_and_retrain_are_the_python_forests(tmp_path, random):
    saved(tmp_path, random)
    (tmp_path / "rows.txt").write_text("# rows to forget\n3\n\n17   # a comment\n42\n")
    spec = checked(
        tmp_path,
        'model before = dare "forest.dare"\n'
        "model after = delete(before, rows = [3, 17, 42])\n"
        'model after_file = delete(before, rows = "rows.txt")\n'
        "model retrained = retrain(before, without = [3, 17, 42])\n",
    )
    points = grid()
    as_saved = DareForest.load(tmp_path / "forest.dare")
    after = DareForest.load(tmp_path / "forest.dare").delete([3, 17, 42])
    X, y = as_saved.training_rows()
    keep = np.setdiff1d(np.arange(len(X)), [3, 17, 42])
    again = DareForest(**as_saved.params()).fit(X[keep], y[keep])
    models = spec.models
    assert np.array_equal(models["before"].eval(points), as_saved.predict_proba(points)[:, 1])
    assert np.array_equal(models["after"].eval(points), after.predict_proba(points)[:, 1])
    assert np.array_equal(models["after_file"].eval(points), after.predict_proba(points)[:, 1])
    assert np.array_equal(models["retrained"].eval(points), again.predict_proba(points)[:, 1])
    # The deletion changed something, so `before` being unchanged is not a coincidence.
    assert not np.array_equal(models["before"].eval(points), models["after"].eval(points))


def test_ids_are_those_of_the_saved_forest_and_derivations_chain(tmp_path):
    saved(tmp_path, deleted=[5])
    spec = checked(
        tmp_path,
        'model before = dare "forest.dare"\n'
        "model once = delete(before, rows = [3])\n"
        "model twice = delete(once, rows = [17, 42])\n",
    )
    points = grid()
    expected = DareForest.load(tmp_path / "forest.dare").delete([3, 17, 42])
    assert np.array_equal(spec.models["twice"].eval(points), expected.predict_proba(points)[:, 1])


def test_each_model_is_loaded_and_derived_once(tmp_path, monkeypatch):
    saved(tmp_path)
    calls = {"load": 0, "delete": 0}
    real_load, real_delete = DareForest.load.__func__, DareForest.delete

    def counting_load(cls, path):
        calls["load"] += 1
        return real_load(cls, path)

    def counting_delete(self, indices):
        calls["delete"] += 1
        return real_delete(self, indices)

    monkeypatch.setattr(DareForest, "load", classmethod(counting_load))
    monkeypatch.setattr(DareForest, "delete", counting_delete)
    checked(
        tmp_path,
        'model before = dare "forest.dare"\n'
        "model after = delete(before, rows = [3])\n"
        "model retrained = retrain(before, without = [3])\n"
        "query q {\n input x\n maximize after(x) - before(x)\n}\n",
    )
    assert calls == {"load": 1, "delete": 1}


def test_a_witness_of_a_derived_model_is_checked_on_its_own_forest(tmp_path):
    saved(tmp_path)
    spec = checked(
        tmp_path, 'model before = dare "forest.dare"\nmodel after = delete(before, rows = [3])\n'
    )
    library = spec.models["after"].library
    assert library is not None
    points = grid()
    expected = DareForest.load(tmp_path / "forest.dare").delete([3]).predict_proba(points)[:, 1]
    assert np.array_equal(np.asarray(library.predict(points)).reshape(-1), expected)


def test_deleting_every_remaining_row_is_an_error(tmp_path):
    _, X = saved(tmp_path, deleted=[0])
    rows = ", ".join(str(i) for i in range(1, len(X)))
    with pytest.raises(SpecError) as error:
        checked(
            tmp_path,
            f'model before = dare "forest.dare"\nmodel after = delete(before, rows = [{rows}])\n',
        )
    (diagnostic,) = error.value.diagnostics
    assert diagnostic.code == "V413"
    assert "no training row" in diagnostic.message
    assert (diagnostic.span.line, diagnostic.span.column) == (2, 30)


def test_retraining_on_one_class_is_an_error(tmp_path):
    _, y = data()
    saved(tmp_path)
    positives = ", ".join(str(i) for i in np.flatnonzero(y == 1))
    with pytest.raises(SpecError) as error:
        checked(
            tmp_path,
            f'model before = dare "forest.dare"\nmodel again = retrain(before, without = [{positives}])\n',
        )
    (diagnostic,) = error.value.diagnostics
    assert diagnostic.code == "V413"
    assert "cannot retrain `before`" in diagnostic.message and "two classes" in diagnostic.message


def test_a_row_the_saved_forest_forgot_is_named_in_the_spec_and_in_the_file(tmp_path):
    saved(tmp_path, deleted=[5])
    (tmp_path / "rows.txt").write_text("3\n# again\n5\n")
    with pytest.raises(SpecError) as error:
        checked(
            tmp_path,
            'model before = dare "forest.dare"\n'
            "model a = delete(before, rows = [3, 5])\n"
            'model b = retrain(before, without = "rows.txt")\n',
        )
    located = [
        (d.code, d.span.file.split("/")[-1], d.span.line, d.span.column, d.message)
        for d in error.value.diagnostics
    ]
    assert located == [
        ("V412", "spec.ver", 2, 37, "row 5 is already deleted in `before`"),
        ("V412", "rows.txt", 3, 1, "row 5 is already deleted in `before`"),
    ]


def test_the_spec_examples_of_the_unlearning_pages_run():
    pages = sorted((Path(__file__).resolve().parents[2] / "docs").glob("unlearning*.md"))
    found = [
        (page, text)
        for page in pages
        for text in re.findall(r"```ver\n(.*?)```", page.read_text(), flags=re.S)
    ]
    assert found
    for page, text in found:
        runs = parse(text, str(page)).run(jobs=1)
        assert runs and all(c.holds for r in runs for c in r.checks)
        assert all(
            r.termination.value in ("optimal", "infeasible") for run in runs for r in run.results
        )


def test_constants_in_a_row_list_are_the_literal_ids(tmp_path):
    saved(tmp_path)
    spec = checked(
        tmp_path,
        "const a = 3\n"
        'model before = dare "forest.dare"\n'
        "model named = delete(before, rows = [a, b, 2 * b + a - 3, 42])\n"
        "model literal = delete(before, rows = [3, 17, 34, 42])\n"
        "const b = a + 14  # declared below its use: constants of numbers are known first\n",
    )
    points = grid()
    assert np.array_equal(spec.models["named"].eval(points), spec.models["literal"].eval(points))
    assert not np.array_equal(spec.models["named"].eval(points), spec.models["before"].eval(points))


def test_constants_of_numbers_reach_model_and_data_options():
    examples = Path(__file__).resolve().parents[2] / "examples"
    spec = parse(
        'model m = xgboost_dump "models/scaled_dump.json" (base_score = 0, features = n)\n'
        'data rows = libsvm "data/scaled_test.libsvm" (features = n, first_index = 1)\n'
        "const half = 5\nconst n = 2 * half\n",
        str(examples / "options.ver"),
    )
    assert spec.checked.models["m"].n_features == 10
    with pytest.raises(SpecError) as error:
        parse(
            'model m = xgboost_dump "models/scaled_dump.json" (base_score = 0, features = n)\n'
            "const n = 2 * half\nconst half = 5\n",  # `half` below `n`: not known before it
            str(examples / "options.ver"),
        )
    (diagnostic,) = error.value.diagnostics  # the model failed: `half` says nothing more
    assert (diagnostic.message, diagnostic.span.line) == ("unknown name `n`", 1)
