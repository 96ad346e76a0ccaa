"""scikit-learn import: parity with predict_proba, decision_function or predict, per estimator."""

from __future__ import annotations

import numpy as np
import pytest

from veritas_dsl.model.parity import probe_points

from reference.points import assert_parity

pytest.importorskip("sklearn", reason="scikit-learn is an optional importer")
from sklearn import ensemble, tree

from veritas_dsl.model import Ensemble, ModelError, load_model

RNG = np.random.default_rng(11)
# float64 training data, so that scikit-learn's thresholds are midpoints that float32 cannot hold.
X = RNG.normal(size=(300, 4)) * np.array([1.0, 100.0, 0.01, 1.0])
X[:, 3] = np.round(X[:, 3] * 3)
Z = X / np.array([1.0, 100.0, 0.01, 1.0])
Y_BINARY = (Z[:, 0] + Z[:, 1] > 0).astype(int)
Y_CLASS = np.digitize(Z[:, 0] - Z[:, 2], [-0.6, 0.6])
Y_REAL = Z[:, 0] * 2 + Z[:, 1] * Z[:, 2] + Z[:, 3]

CLASSIFIERS = [
    tree.DecisionTreeClassifier(max_depth=5, random_state=0),
    tree.ExtraTreeClassifier(max_depth=5, random_state=0),
    ensemble.RandomForestClassifier(n_estimators=7, max_depth=4, random_state=0),
    ensemble.ExtraTreesClassifier(n_estimators=7, max_depth=4, random_state=0),
    ensemble.GradientBoostingClassifier(n_estimators=7, max_depth=3, random_state=0),
]
REGRESSORS = [
    tree.DecisionTreeRegressor(max_depth=5, random_state=0),
    tree.ExtraTreeRegressor(max_depth=5, random_state=0),
    ensemble.RandomForestRegressor(n_estimators=7, max_depth=4, random_state=0),
    ensemble.ExtraTreesRegressor(n_estimators=7, max_depth=4, random_state=0),
    ensemble.GradientBoostingRegressor(n_estimators=7, max_depth=3, random_state=0),
    ensemble.GradientBoostingRegressor(n_estimators=7, loss="absolute_error", random_state=0),
]


def raw_output(estimator, n_classes: int):
    if hasattr(estimator, "decision_function"):
        return estimator.decision_function
    if n_classes == 2:
        return lambda points: estimator.predict_proba(points)[:, 1]
    return estimator.predict_proba if n_classes else estimator.predict


def original_thresholds(estimator):
    members = np.ravel(getattr(estimator, "estimators_", [estimator]))
    return [
        (f, t)
        for m in members
        for f, t in zip(m.tree_.feature, m.tree_.threshold, strict=True)
        if f >= 0
    ]


@pytest.mark.parametrize("labels", ["binary", "multiclass"])
@pytest.mark.parametrize("estimator", CLASSIFIERS, ids=lambda e: type(e).__name__)
def test_classifier_parity(estimator, labels):
    y = Y_BINARY if labels == "binary" else Y_CLASS
    fitted = estimator.fit(X, y)
    model = Ensemble.from_sklearn(fitted)
    n_classes = len(fitted.classes_)
    assert model.task == labels
    points = probe_points(model, X, extra_thresholds=original_thresholds(fitted))
    assert_parity(model, raw_output(fitted, n_classes), points)
    for name, P in points.items():
        assert np.array_equal(model.predict_class(P), fitted.predict(P)), name


@pytest.mark.parametrize(
    "estimator",
    REGRESSORS,
    ids=lambda e: f"{type(e).__name__}-{e.loss if hasattr(e, 'loss') else ''}",
)
def test_regressor_parity(estimator):
    fitted = estimator.fit(X, Y_REAL)
    model = Ensemble.from_sklearn(fitted)
    assert model.task == "regression"
    points = probe_points(model, X, extra_thresholds=original_thresholds(fitted))
    assert_parity(model, fitted.predict, points)


def test_thresholds_that_round_up_in_float32_still_split_the_same():
    # A threshold just below a float32 value: the float32 equal to round(t) must go right.
    t = float(np.nextafter(np.float32(1.0), np.float32(2.0))) - 1e-12
    Xs = np.array([[0.0], [2.0]])
    fitted = tree.DecisionTreeRegressor(max_depth=1).fit(Xs, [0.0, 1.0])
    fitted.tree_.threshold[0] = t  # the Tree exposes its arrays writable; set the threshold we need
    model = Ensemble.from_sklearn(fitted)
    x = np.float32(t)  # rounds up, above t
    assert float(x) > t
    assert (
        model.eval(np.array([[x]]))[0]
        == fitted.predict(np.array([[x]], dtype=np.float32))[0]
        == 1.0
    )


def test_feature_names_and_library_model():
    fitted = ensemble.RandomForestClassifier(n_estimators=3, max_depth=3, random_state=0).fit(
        X, Y_BINARY
    )
    model = Ensemble.from_sklearn(fitted)
    assert model.feature_names == ("f0", "f1", "f2", "f3")
    assert model.class_threshold == 0.5
    assert np.array_equal(
        model.library.predict(X.astype(np.float32)),
        fitted.predict_proba(X.astype(np.float32))[:, 1],
    )


@pytest.mark.parametrize(
    "estimator, message",
    [
        (ensemble.AdaBoostClassifier(n_estimators=2), "AdaBoostClassifier is not"),
        (ensemble.RandomForestClassifier(n_estimators=2), "not a fitted"),
        (tree.DecisionTreeRegressor(max_depth=2), "2 targets"),
        (
            ensemble.GradientBoostingClassifier(
                n_estimators=2, init=tree.DecisionTreeClassifier(max_depth=1)
            ),
            "init estimator",
        ),
    ],
)
def test_unsupported_estimators_are_refused(estimator, message):
    if "not a fitted" not in message:
        target = np.column_stack([Y_REAL, -Y_REAL]) if "targets" in message else Y_BINARY
        estimator.fit(X, target)
    with pytest.raises(ModelError, match=message):
        Ensemble.from_sklearn(estimator)


def test_skops_file_loads_without_pickle(tmp_path):
    skops_io = pytest.importorskip("skops.io", reason="skops is an optional importer")
    fitted = ensemble.GradientBoostingClassifier(n_estimators=4, random_state=0).fit(X, Y_CLASS)
    path = tmp_path / "model.skops"
    skops_io.dump(fitted, path)
    model = load_model(path)
    assert np.array_equal(model.eval(X), Ensemble.from_sklearn(fitted).eval(X))


def test_pickle_needs_the_trust_flag(tmp_path):
    import pickle

    fitted = tree.DecisionTreeClassifier(max_depth=2).fit(X, Y_BINARY)
    path = tmp_path / "model.pkl"
    path.write_bytes(pickle.dumps(fitted))
    with pytest.raises(ModelError, match="runs code"):
        load_model(path)
    assert load_model(path, trust_pickle=True).n_trees == 1


# Trained on data with missing values: a split of the missing values from the rest has threshold
# +inf, and every number goes left there (scikit-learn sends x <= inf left; only NaN goes right).
MISSING = RNG.random(len(X)) < 0.3
X_NAN = np.where(MISSING[:, None] & (np.arange(4) == 1), np.nan, X)
NAN_TARGETS = {
    "binary": ((Z[:, 0] > 0) != MISSING).astype(int),
    "multiclass": Y_CLASS + MISSING * (Y_CLASS == 0),
    "regression": Z[:, 0] + 2 * MISSING,
}
NAN_ESTIMATORS = [
    (tree.DecisionTreeClassifier(max_depth=5, random_state=0), "binary"),
    (tree.ExtraTreeClassifier(max_depth=5, random_state=0), "binary"),
    (ensemble.RandomForestClassifier(n_estimators=7, max_depth=4, random_state=0), "binary"),
    (ensemble.RandomForestClassifier(n_estimators=7, max_depth=4, random_state=0), "multiclass"),
    (ensemble.ExtraTreesClassifier(n_estimators=7, max_depth=4, random_state=0), "binary"),
    (tree.DecisionTreeRegressor(max_depth=5, random_state=0), "regression"),
    (ensemble.RandomForestRegressor(n_estimators=7, max_depth=4, random_state=0), "regression"),
    (ensemble.ExtraTreesRegressor(n_estimators=7, max_depth=4, random_state=0), "regression"),
]


@pytest.mark.parametrize(
    "estimator, task", NAN_ESTIMATORS, ids=[f"{type(e).__name__}-{t}" for e, t in NAN_ESTIMATORS]
)
def test_models_trained_on_missing_values_import_with_parity(estimator, task):
    """Inputs are never NaN: such a split is its left subtree. It was refused ("tree 1, node 9 has
    threshold inf"). Parity on float32 points on and beside every finite threshold, and at huge
    numbers, which an inf threshold passes to the left too."""
    fitted = estimator.fit(X_NAN, NAN_TARGETS[task])
    model = Ensemble.from_sklearn(fitted)
    assert model.task == task
    finite = X[~MISSING]
    thresholds = [(f, t) for f, t in original_thresholds(fitted) if np.isfinite(t)]
    points = probe_points(model, finite, extra_thresholds=thresholds)
    # (scikit-learn's finiteness check sums the input: float32's largest would overflow there)
    huge = 1e37
    points["extremes"] = np.array([[huge] * 4, [-huge] * 4, [0, huge, 0, 0]], np.float32)
    n_classes = len(fitted.classes_) if task != "regression" else 0
    assert_parity(model, raw_output(fitted, n_classes), points)
    if task != "regression":
        for name, P in points.items():
            assert np.array_equal(model.predict_class(P), fitted.predict(P)), name


def test_the_missing_value_splits_are_there_and_are_skipped():
    """The case above is not vacuous: the forest has +inf splits, and none is left."""
    fitted = ensemble.RandomForestClassifier(n_estimators=7, max_depth=4, random_state=0)
    fitted.fit(X_NAN, NAN_TARGETS["binary"])
    assert any(t == np.inf for _, t in original_thresholds(fitted))
    model = Ensemble.from_sklearn(fitted)
    assert np.all(np.isfinite(model.threshold))
    kept = sum(int(np.sum(m.tree_.threshold != np.inf)) for m in fitted.estimators_)
    assert len(model.feature) < kept  # each +inf split went with its right subtree


@pytest.mark.parametrize("threshold", [3.5e38, 1e300, float(np.finfo(np.float32).max)])
def test_a_threshold_beyond_every_float32_sends_every_input_left(threshold):
    """scikit-learn compares float32 inputs with float64 thresholds: x <= 3.5e38 holds for every
    float32, as x <= inf does (it was refused as a threshold of inf)."""
    fitted = tree.DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, Y_BINARY)
    fitted.tree_.threshold[0] = threshold
    model = Ensemble.from_sklearn(fitted)
    assert np.all(np.isfinite(model.threshold))
    points = probe_points(model, X)
    points["extremes"] = np.array([[1e37] * 4, [-1e37] * 4], np.float32)
    assert_parity(model, raw_output(fitted, 2), points)
