"""Import fitted scikit-learn trees, forests and gradient boosting.

scikit-learn sends ``x <= t`` left, comparing the float32 input with a float64 threshold; each
threshold becomes the float32 ``s`` with ``x < s`` on exactly the same inputs
(:func:`~veritas_dsl.model.library.le_threshold_as_lt`). A forest's output is the mean of its
trees, so leaf values are divided by the number of trees. A classifier's raw output is its
``predict_proba`` (class 1's probability for two classes), a gradient-boosting model's is its
``decision_function``, a regressor's its ``predict``. ``HistGradientBoosting*`` estimators are
read by :mod:`veritas_dsl.model.sklearn_hist`.

A tree trained on data with NaN can split the missing values from the rest: threshold ``+inf``,
missing values right. Inputs are never NaN, so every input goes left there, and the split is
replaced by its left subtree.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from veritas_dsl.model.errors import ModelError
from veritas_dsl.model.forest import skip_left
from veritas_dsl.model.library import le_threshold_as_lt
from veritas_dsl.model.sklearn_hist import ESTIMATORS, from_hist_gradient_boosting
from veritas_dsl.model.sklearn_inputs import evaluates, input_names, library_model

if TYPE_CHECKING:
    from veritas_dsl.model.ensemble import Ensemble

SUPPORTED_ESTIMATORS = (
    "DecisionTreeClassifier",
    "DecisionTreeRegressor",
    "ExtraTreeClassifier",
    "ExtraTreeRegressor",
    "RandomForestClassifier",
    "RandomForestRegressor",
    "ExtraTreesClassifier",
    "ExtraTreesRegressor",
    "GradientBoostingClassifier",
    "GradientBoostingRegressor",
    *ESTIMATORS,
)


@dataclass(frozen=True)
class _Kind:
    """How one family of estimators maps onto an ensemble: its trees (each with the output it
    feeds), the factor on their leaf values, the raw output the library computes."""

    trees: list
    leaf_values: Callable[[object, int], np.ndarray]  # (tree, n_outputs) -> per node
    scale: float
    n_outputs: int
    base: np.ndarray
    raw: Callable[[np.ndarray], np.ndarray]  # X -> the library's raw output
    class_threshold: float
    probability: str = ""  # the library's predict_proba of class 1, of a binary model's output
    votes: Callable[[np.ndarray], np.ndarray] | None = None  # only classifiers' trees vote


def from_sklearn(cls: type[Ensemble], estimator: object) -> Ensemble:
    """Import a fitted scikit-learn estimator named in :data:`SUPPORTED_ESTIMATORS` as a ``cls``."""
    try:
        from sklearn import ensemble, tree
        from sklearn.base import is_classifier
    except ImportError:
        raise ModelError(
            "scikit-learn is not installed (pip install 'veritas-dsl[sklearn]')"
        ) from None

    kind = type(estimator).__name__
    hist = (ensemble.HistGradientBoostingClassifier, ensemble.HistGradientBoostingRegressor)
    if isinstance(estimator, hist):
        return from_hist_gradient_boosting(cls, estimator, is_classifier(estimator))
    supported = tuple(getattr(ensemble, n, None) or getattr(tree, n) for n in SUPPORTED_ESTIMATORS)
    if not isinstance(estimator, supported) or not hasattr(estimator, "n_features_in_"):
        raise ModelError(
            f"{kind} is not a fitted estimator we can import; supported are "
            + ", ".join(SUPPORTED_ESTIMATORS)
        )
    if getattr(estimator, "n_outputs_", 1) != 1:
        raise ModelError(f"{kind} predicts {estimator.n_outputs_} targets; only one is supported")

    feature_names = input_names(estimator, kind)
    n_features = len(feature_names)
    classifier = is_classifier(estimator)
    n_classes = len(estimator.classes_) if classifier else 0
    if classifier and n_classes < 2:
        raise ModelError(f"{kind} was fitted on a single class; it has nothing to verify")

    boosting = (ensemble.GradientBoostingClassifier, ensemble.GradientBoostingRegressor)
    if isinstance(estimator, boosting):
        parts = _boosting(estimator, classifier, n_features)
    else:
        parts = _forest(estimator, classifier, n_classes)
    task = "multiclass" if n_classes > 2 else "binary" if n_classes == 2 else "regression"
    library = library_model(kind, parts.raw, n_features, parts.votes)
    return evaluates(_assemble(cls, parts, feature_names, task, f"sklearn {kind}", library))


def _boosting(estimator, classifier: bool, n_features: int) -> _Kind:
    from sklearn.dummy import DummyClassifier, DummyRegressor

    init = estimator.init_
    if not (isinstance(init, str) and init == "zero") and not isinstance(
        init, (DummyClassifier, DummyRegressor)
    ):
        raise ModelError(
            f"{type(estimator).__name__} has an init estimator of type {type(init).__name__}; "
            "only the default (constant) init or init='zero' is supported"
        )
    stages = estimator.estimators_
    n_outputs = stages.shape[1]
    # The init estimator is constant, so its raw prediction at any point is the base score.
    base = estimator._raw_predict_init(np.zeros((1, n_features), dtype=np.float32))[0]
    return _Kind(
        trees=[(stages[i, k].tree_, k) for i in range(stages.shape[0]) for k in range(n_outputs)],
        leaf_values=_regression_leaves,
        scale=float(estimator.learning_rate),
        n_outputs=n_outputs,
        base=np.asarray(base, dtype=np.float64).reshape(n_outputs),
        raw=estimator.decision_function if classifier else estimator.predict,
        class_threshold=0.0,  # a margin picks class 1 above 0
        # predict_proba is expit(margin) for the log loss, expit(2 margin) for the exponential
        probability="logistic" if getattr(estimator, "loss", "") == "log_loss" else "",
    )


def _forest(estimator, classifier: bool, n_classes: int) -> _Kind:
    members = getattr(estimator, "estimators_", [estimator])
    n_outputs = 1 if n_classes <= 2 else n_classes
    common = dict(
        trees=[(member.tree_, 0) for member in members],
        scale=1.0 / len(members),
        n_outputs=n_outputs,
        base=np.zeros(n_outputs),
    )
    if not classifier:
        return _Kind(
            **common, leaf_values=_regression_leaves, raw=estimator.predict, class_threshold=0.0
        )
    return _Kind(
        **common,
        leaf_values=_probability_leaves,
        raw=_probability(estimator.predict_proba, n_classes),
        class_threshold=0.5,  # a probability picks class 1 above one half
        probability="identity",
        votes=_tree_votes(members),
    )


def _tree_votes(members):
    """The class index each tree predicts (its ``predict`` is the first largest probability)."""

    def votes(X: np.ndarray) -> np.ndarray:
        return np.stack([np.argmax(m.predict_proba(X), axis=1) for m in members], axis=1)

    return votes


def _nodes(tree, parts: _Kind, where: str) -> tuple[np.ndarray, ...]:
    """A tree's nodes as (leaf, feature, threshold, left, right, leaf values), children relative
    to the tree; a leaf's threshold is 0. A split every float32 passes to the left (threshold at
    or above float32's largest: +inf splits the missing values from the rest) is replaced by its
    left subtree."""
    left = np.asarray(tree.children_left, dtype=np.int64)
    # scikit-learn's rule, which its predictor follows unchecked: a leaf's left child is -1.
    leaf = left == -1
    bad = np.nonzero(left < -1)[0]
    if len(bad):
        raise ModelError(f"{where}, node {bad[0]}: its left child {left[bad[0]]} is not a node")
    right = np.asarray(tree.children_right, dtype=np.int64)
    feature = np.asarray(tree.feature, dtype=np.int64)
    threshold = np.where(leaf, 0.0, np.asarray(tree.threshold, dtype=np.float64))
    per_node = parts.leaf_values(tree, parts.n_outputs) * parts.scale
    skipped = ~leaf & (threshold >= np.finfo(np.float32).max)
    if not np.any(skipped):
        return leaf, feature, threshold, left, right, per_node
    kept, left, right = skip_left(left, right, leaf, skipped, where)
    return leaf[kept], feature[kept], threshold[kept], left, right, per_node[kept]


def _probability(predict_proba, n_classes: int):
    def raw(X: np.ndarray) -> np.ndarray:
        proba = predict_proba(X)
        return proba[:, 1] if n_classes == 2 else proba

    return raw


def _probability_leaves(tree, n_outputs: int) -> np.ndarray:
    """Class probabilities per node, as ``predict_proba`` normalises the stored values."""
    value = np.asarray(tree.value[:, 0, :], dtype=np.float64)
    total = value.sum(axis=1, keepdims=True)
    total[total == 0.0] = 1.0
    proba = value / total
    return proba[:, 1:2] if n_outputs == 1 else proba


def _regression_leaves(tree, n_outputs: int) -> np.ndarray:
    return np.asarray(tree.value[:, 0, 0:1], dtype=np.float64)


def _assemble(cls: type[Ensemble], parts: _Kind, feature_names, task, source, library) -> Ensemble:
    features, thresholds, lefts, rights, values, sizes = [], [], [], [], [], []
    offset = 0
    for t, (tree, output) in enumerate(parts.trees):
        leaf, feature, threshold, left, right, per_node = _nodes(tree, parts, f"tree {t}")
        features.append(np.where(leaf, -1, feature))
        thresholds.append(np.where(leaf, np.float32(0), le_threshold_as_lt(threshold)))
        lefts.append(np.where(leaf, -1, left + offset))
        rights.append(np.where(leaf, -1, right + offset))
        value = np.zeros((len(left), parts.n_outputs))
        if per_node.shape[1] == parts.n_outputs:
            value[leaf] = per_node[leaf]
        else:
            value[leaf, output] = per_node[leaf, 0]
        values.append(value)
        sizes.append(len(left))
        offset += len(left)
    return cls(
        feature=np.concatenate(features),
        threshold=np.concatenate(thresholds),
        left=np.concatenate(lefts),
        right=np.concatenate(rights),
        value=np.concatenate(values),
        tree_offsets=np.concatenate([[0], np.cumsum(sizes)]),
        base_score=parts.base,
        feature_names=feature_names,
        task=task,
        class_threshold=parts.class_threshold if task == "binary" else 0.0,
        probability=parts.probability if task == "binary" else "",
        source=source,
        library=library,
    )
