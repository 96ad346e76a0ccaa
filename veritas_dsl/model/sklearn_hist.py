"""Import scikit-learn's ``HistGradientBoostingClassifier`` / ``HistGradientBoostingRegressor``.

Each fitted predictor is a node array (``nodes``): a numerical split sends ``x <= num_threshold``
left, comparing the input in float64 with a float64 threshold, like the classic trees; the
threshold becomes the float32 ``s`` with ``x < s`` on the same float32 inputs
(:func:`~veritas_dsl.model.library.le_threshold_as_lt`). A split whose threshold is ``+inf`` (a
"split on missing values", which sends every number left) is replaced by its left subtree. Leaf
values already carry the learning rate; the raw output is the baseline prediction plus the sum of
the trees, one tree per class per iteration for more than two classes: the classifier's
``decision_function``, the regressor's ``predict`` before its inverse link (``_raw_predict``).

Inputs are never NaN here, so the direction a split sends missing values never matters. Refused,
naming the tree and node: categorical splits; and any categorical feature at all, since
scikit-learn then re-orders the columns through its own encoder.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from veritas_dsl.model.errors import ModelError
from veritas_dsl.model.forest import skip_left
from veritas_dsl.model.library import le_threshold_as_lt
from veritas_dsl.model.sklearn_inputs import evaluates, input_names, library_model

if TYPE_CHECKING:
    from veritas_dsl.model.ensemble import Ensemble

ESTIMATORS = ("HistGradientBoostingClassifier", "HistGradientBoostingRegressor")


def from_hist_gradient_boosting(cls: type[Ensemble], estimator, classifier: bool) -> Ensemble:
    """Import a fitted ``HistGradientBoosting*`` estimator as a ``cls``."""
    kind = type(estimator).__name__
    if not hasattr(estimator, "_predictors"):
        raise ModelError(f"{kind} is not a fitted estimator we can import (call fit first)")
    feature_names = input_names(estimator, kind)
    _check_categorical(estimator, kind, feature_names)

    n_outputs = int(estimator.n_trees_per_iteration_)
    n_classes = len(estimator.classes_) if classifier else 0
    if classifier and n_classes < 2:
        raise ModelError(f"{kind} was fitted on a single class; it has nothing to verify")
    features, thresholds, lefts, rights, values, sizes = [], [], [], [], [], []
    for i, iteration in enumerate(estimator._predictors):
        for k, predictor in enumerate(iteration):
            where = f"{kind}: tree {i * n_outputs + k} (iteration {i}, output {k})"
            feature, threshold, left, right, leaf_value = _tree(predictor.nodes, where)
            offset = sum(sizes)
            leaf = feature < 0
            features.append(feature)
            thresholds.append(threshold)
            lefts.append(np.where(leaf, -1, left + offset))
            rights.append(np.where(leaf, -1, right + offset))
            value = np.zeros((len(feature), n_outputs))
            value[leaf, k] = leaf_value[leaf]
            values.append(value)
            sizes.append(len(feature))
    if not sizes:
        raise ModelError(f"{kind} has no trees")

    raw = estimator.decision_function if classifier else _raw_regression(estimator)
    task = "multiclass" if n_classes > 2 else "binary" if n_classes == 2 else "regression"
    model = cls(
        feature=np.concatenate(features),
        threshold=np.concatenate(thresholds),
        left=np.concatenate(lefts),
        right=np.concatenate(rights),
        value=np.concatenate(values),
        tree_offsets=np.concatenate([[0], np.cumsum(sizes)]),
        base_score=np.asarray(estimator._baseline_prediction, dtype=np.float64).reshape(n_outputs),
        feature_names=feature_names,
        task=task,
        class_threshold=0.0,  # a margin picks class 1 above 0
        probability="logistic" if task == "binary" else "",  # the log loss: expit
        source=f"sklearn {kind} (loss {_loss_name(estimator)})",
        library=library_model(kind, raw, len(feature_names)),
    )
    return evaluates(model)


def _check_categorical(estimator, kind: str, feature_names: tuple[str, ...]) -> None:
    categorical = getattr(estimator, "is_categorical_", None)
    if categorical is not None and np.any(categorical):
        names = [feature_names[i] for i in np.nonzero(categorical)[0]]
        raise ModelError(
            f"{kind} treats feature(s) {', '.join(names)} as categorical; categorical features "
            "are not supported (fit with categorical_features=None)"
        )


def _tree(nodes: np.ndarray, where: str):
    """One predictor's nodes as ours, parent first: (feature, threshold, left, right, value),
    children relative to the tree. Splits on missing values (threshold +inf) are skipped."""
    categorical = np.nonzero((nodes["is_leaf"] == 0) & (nodes["is_categorical"] != 0))[0]
    if len(categorical):
        n = int(categorical[0])
        raise ModelError(
            f"{where}, node {n} splits feature {int(nodes['feature_idx'][n])} by category; "
            "categorical splits are not supported"
        )
    leaf = nodes["is_leaf"] != 0
    old, left, right = skip_left(
        nodes["left"], nodes["right"], leaf, nodes["num_threshold"] == np.inf, where
    )
    picked = nodes[old]
    leaf = picked["is_leaf"] != 0
    bad = np.nonzero(~leaf & ~np.isfinite(picked["num_threshold"]))[0]
    if len(bad):
        raise ModelError(
            f"{where}, node {old[bad[0]]} has threshold {picked['num_threshold'][bad[0]]}"
        )
    feature = np.where(leaf, -1, picked["feature_idx"]).astype(np.int64)
    threshold = np.where(
        leaf, np.float32(0), le_threshold_as_lt(np.where(leaf, 0.0, picked["num_threshold"]))
    )
    return (
        feature,
        threshold,
        left,
        right,
        np.asarray(picked["value"], dtype=np.float64),
    )


def _raw_regression(estimator):
    def raw(X: np.ndarray) -> np.ndarray:
        return estimator._raw_predict(X)[:, 0]

    return raw


def _loss_name(estimator) -> str:
    loss = estimator.loss
    return loss if isinstance(loss, str) else type(loss).__name__
