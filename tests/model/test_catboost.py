"""CatBoost import: parity with predict(prediction_type="RawFormulaVal"), objects and JSON files."""

from __future__ import annotations

import json

import numpy as np
import pytest

from veritas_dsl.model import Ensemble, ModelError, load_model
from veritas_dsl.model.parity import probe_points

from reference.closest import assert_closest_agrees
from reference.points import assert_parity

catboost = pytest.importorskip("catboost", reason="CatBoost is an optional importer")

RNG = np.random.default_rng(23)
X = RNG.normal(size=(200, 4)) * np.array([1.0, 100.0, 0.01, 1.0])
Z = X / np.array([1.0, 100.0, 0.01, 1.0])
TARGETS = {
    "Logloss": (Z[:, 0] + Z[:, 1] > 0).astype(int),
    "MultiClass": np.digitize(Z[:, 0] - Z[:, 2], [-0.6, 0.6]),
    "RMSE": Z[:, 0] * 2 + Z[:, 1] * Z[:, 2] + Z[:, 3],
}
TASKS = {"Logloss": "binary", "MultiClass": "multiclass", "RMSE": "regression"}


def fit(loss: str, depth: int = 3, iterations: int = 3, **options):
    kind = catboost.CatBoostRegressor if loss == "RMSE" else catboost.CatBoostClassifier
    model = kind(
        iterations=iterations,
        depth=depth,
        loss_function=loss,
        verbose=0,
        random_seed=0,
        thread_count=1,
        allow_writing_files=False,
        **options,
    )
    return model.fit(X, TARGETS[loss])


def borders(model) -> list[tuple[int, float]]:
    """(input column, border) of every split, as CatBoost stores them."""
    info = model.get_borders()
    return [(f, b) for f, values in info.items() for b in values]


def raw(model):
    return lambda P: model.predict(P, prediction_type="RawFormulaVal")


@pytest.mark.parametrize("depth", range(1, 9))
@pytest.mark.parametrize("loss", ["Logloss", "MultiClass", "RMSE"])
def test_parity_with_raw_formula_val(loss, depth):
    fitted = fit(loss, depth)
    model = Ensemble.from_catboost(fitted)
    assert model.task == TASKS[loss] and model.n_trees == 3
    assert int(model.tree_depths().max()) <= depth
    points = probe_points(model, X, extra_thresholds=borders(fitted), n_random=200)
    assert_parity(model, raw(fitted), points)
    if loss != "RMSE":
        for name, P in points.items():
            assert np.array_equal(model.predict_class(P), fitted.predict(P).ravel()), name


def test_a_border_is_compared_as_x_greater_than_border_in_float32():
    # CatBoost sends x > border right: x equal to the border goes left, the next float32 right.
    fitted = fit("RMSE", depth=1, iterations=1)
    (feature, border), *_ = [(f, b) for f, b in borders(fitted) if f == 0] or borders(fitted)
    model = Ensemble.from_catboost(fitted)
    b = np.float32(border)
    P = np.zeros((3, 4), dtype=np.float32)
    P[:, feature] = [b, np.nextafter(b, np.float32(np.inf)), np.nextafter(b, np.float32(-np.inf))]
    ours, theirs = model.eval(P), raw(fitted)(P)
    assert np.array_equal(ours, theirs)
    assert ours[0] == ours[2] != ours[1]


def test_scale_and_bias_are_applied(tmp_path):
    fitted = fit("RMSE", depth=2)
    fitted.set_scale_and_bias(2.5, [0.75])
    model = Ensemble.from_catboost(fitted)
    assert model.base_score.tolist() == [0.75]
    assert_parity(model, raw(fitted), probe_points(model, X, n_random=100))


@pytest.mark.parametrize("policy", ["Depthwise", "Lossguide"])
def test_non_symmetric_trees_are_read_from_their_nested_form(policy):
    fitted = fit("MultiClass", depth=3, grow_policy=policy)
    model = Ensemble.from_catboost(fitted)
    assert_parity(model, raw(fitted), probe_points(model, X, extra_thresholds=borders(fitted)))


@pytest.mark.parametrize("loss", ["Logloss", "MultiClass", "RMSE"])
def test_json_file_loads_with_its_library_model(tmp_path, loss):
    fitted = fit(loss, depth=4)
    path = tmp_path / "model.json"
    fitted.save_model(str(path), format="json")
    model = load_model(path)  # detected as catboost from the file's first key
    assert model.source.startswith(f"catboost {loss}")
    assert np.array_equal(model.eval(X), Ensemble.from_catboost(fitted).eval(X))
    points = probe_points(model, X, extra_thresholds=borders(fitted))
    assert_parity(model, model.library.predict, points)
    assert_parity(model, raw(fitted), points)


def test_named_features_keep_their_names():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(X, columns=["age", "income", "rate", "kids"])
    fitted = catboost.CatBoostRegressor(
        iterations=2, depth=2, verbose=0, allow_writing_files=False
    ).fit(frame, TARGETS["RMSE"])
    assert Ensemble.from_catboost(fitted).feature_names == ("age", "income", "rate", "kids")


def categorical_model():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"a": X[:, 0], "colour": np.where(X[:, 1] > 0, "red", "blue")})
    return catboost.CatBoostClassifier(
        iterations=3,
        depth=2,
        verbose=0,
        cat_features=["colour"],
        one_hot_max_size=1,
        allow_writing_files=False,
    ).fit(frame, TARGETS["Logloss"])


def test_categorical_features_are_refused_by_name(tmp_path):
    fitted = categorical_model()
    with pytest.raises(ModelError, match=r"feature `colour` \(input column 1\) is a categorical"):
        Ensemble.from_catboost(fitted)
    path = tmp_path / "model.json"
    fitted.save_model(str(path), format="json")
    with pytest.raises(
        ModelError,
        match=r"feature `colour` \(input column 1\) is a categorical feature; only float features are supported \(categorical_features",
    ):
        load_model(path)


def doctored(tmp_path, fitted, change) -> str:
    path = tmp_path / "model.json"
    fitted.save_model(str(path), format="json")
    document = json.loads(path.read_text())
    change(document)
    path.write_text(json.dumps(document))
    return str(path)


def test_ctrs_and_ctr_splits_are_refused(tmp_path):
    fitted = categorical_model()

    def drop_categorical(document):
        del document["features_info"]["categorical_features"]

    with pytest.raises(ModelError, match="the model has CTRs"):
        Ensemble.from_catboost(doctored(tmp_path, fitted, drop_categorical))

    def drop_ctrs(document):
        drop_categorical(document)
        document.pop("ctr_data")
        document["features_info"].pop("ctrs")

    with pytest.raises(ModelError, match=r"tree \d+, level \d splits on a OnlineCtr"):
        Ensemble.from_catboost(doctored(tmp_path, fitted, drop_ctrs))


@pytest.mark.parametrize("kind", ["text", "embedding"])
def test_text_and_embedding_features_are_refused(tmp_path, kind):
    def add(document):
        document["features_info"][f"{kind}_features"] = [
            {"feature_id": "notes", "feature_index": 0, "flat_feature_index": 4}
        ]

    path = doctored(tmp_path, fit("RMSE", depth=2), add)
    with pytest.raises(
        ModelError, match=f"feature `notes` \\(input column 4\\) is a {kind} feature"
    ):
        load_model(path)


def test_text_features_of_a_model_object_are_refused_by_name():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"a": X[:, 0], "notes": np.where(X[:, 1] > 0, "good day", "bad day")})
    fitted = catboost.CatBoostClassifier(
        iterations=2, depth=2, verbose=0, text_features=["notes"], allow_writing_files=False
    ).fit(frame, TARGETS["Logloss"])
    with pytest.raises(ModelError, match=r"feature `notes` \(input column 1\) is a text feature"):
        Ensemble.from_catboost(fitted)


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda d: d["oblivious_trees"][0]["leaf_values"].pop(), "tree 0 has 7 leaf values, not 8"),
        (
            lambda d: d["oblivious_trees"][1]["splits"][0].update(border=1e300),
            "tree 1, level 0 has border",
        ),
        (lambda d: d.pop("oblivious_trees"), "neither `oblivious_trees` nor `trees`"),
        # two features on one column: CatBoost loaded this and crashed in predict
        (
            lambda d: d["features_info"]["float_features"][3].update(flat_feature_index=0),
            "float feature 3 has feature_index 3 and flat_feature_index 0",
        ),
        (
            lambda d: d["oblivious_trees"][0]["splits"][0].update(split_index=99),
            "tree 0, level 0: border",
        ),
        (lambda d: d["oblivious_trees"][0].update(splits=7), "malformed CatBoost JSON model"),
    ],
)
def test_corrupt_json_is_refused_before_catboost_reads_it(tmp_path, change, message):
    path = doctored(tmp_path, fit("RMSE", depth=3), change)
    with pytest.raises(ModelError, match=message):
        load_model(path)


def test_other_objects_and_unfitted_models_are_refused():
    with pytest.raises(ModelError, match="expected a CatBoost model"):
        Ensemble.from_catboost(3)
    with pytest.raises(ModelError, match="CatBoostRegressor is not fitted"):
        Ensemble.from_catboost(catboost.CatBoostRegressor())


@pytest.mark.parametrize("loss", ["Logloss", "MultiClass"])
def test_closest_example_agrees_across_engines_and_flips_the_class(tmp_path, loss):
    fitted = catboost.CatBoostClassifier(
        iterations=3,
        depth=2,
        loss_function=loss,
        verbose=0,
        random_seed=0,
        allow_writing_files=False,
    ).fit(X[:, :3], TARGETS[loss])
    fitted.save_model(str(tmp_path / "m.json"), format="json")
    assert_closest_agrees(
        tmp_path,
        'model m = catboost "m.json"',
        ("f0", "f1", "f2"),
        X[:3, :3],
        lambda P: fitted.predict(P).ravel(),
    )
