"""Import XGBoost models (``Booster``, ``XGBClassifier``/``XGBRegressor``, JSON or UBJSON files).

The model is read from XGBoost's own UBJSON serialisation, so thresholds and leaf values arrive as
the exact float32 values XGBoost compares and adds. XGBoost's split rule (``x < t`` goes left) is
ours, so thresholds need no conversion.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path

import numpy as np

from veritas_dsl.model import ubjson
from veritas_dsl.model.ensemble import Ensemble, LibraryModel, ModelError, Task, logit

# How XGBoost turns the stored base score into a margin, per objective (it stores the base score in
# the space of the prediction: a probability for logistic objectives, a mean count for Poisson).
_LINK: dict[str, str] = {
    "binary:logistic": "logit",
    "reg:logistic": "logit",
    "count:poisson": "log",
    "reg:gamma": "log",
    "reg:tweedie": "log",
    "survival:cox": "log",
    "binary:logitraw": "identity",
    "binary:hinge": "identity",
    "multi:softprob": "identity",
    "multi:softmax": "identity",
    "reg:squarederror": "identity",
    "reg:squaredlogerror": "identity",
    "reg:absoluteerror": "identity",
    "reg:pseudohubererror": "identity",
    "reg:quantileerror": "identity",
    "rank:ndcg": "identity",
    "rank:pairwise": "identity",
    "rank:map": "identity",
}

_TASK: dict[str, Task] = {
    "binary:logistic": "binary",
    "binary:logitraw": "binary",
    "binary:hinge": "binary",
    "multi:softprob": "multiclass",
    "multi:softmax": "multiclass",
}

SUPPORTED_OBJECTIVES = tuple(sorted(_LINK))


def from_xgboost(model: object) -> Ensemble:
    """Import an XGBoost model.

    Parameters
    ----------
    model : xgboost.Booster, xgboost.XGBModel, str or os.PathLike
        A booster, a scikit-learn wrapper (its ``best_iteration`` is honoured, as its ``predict``
        does), or the path of a model file in XGBoost's JSON or UBJSON format.
    """
    import xgboost

    rounds = None
    if isinstance(model, (str, os.PathLike)):
        booster = _load_file(Path(model))
        where = str(model)
    elif isinstance(model, xgboost.XGBModel):
        if not (isinstance(model.missing, float) and math.isnan(model.missing)):
            raise ModelError(
                f"XGBoost model treats {model.missing!r} as missing; only NaN as missing is "
                "supported"
            )
        booster = model.get_booster()
        best = booster.attr("best_iteration")
        rounds = int(best) + 1 if best is not None else None
        where = type(model).__name__
    elif isinstance(model, xgboost.Booster):
        booster = model
        where = "Booster"
    else:
        raise ModelError(f"expected an XGBoost Booster, XGBModel or model path, got {type(model)}")
    document = ubjson.loads(booster.save_raw(raw_format="ubj"))
    return _from_document(document, booster.copy(), rounds, where)


def _load_file(path: Path) -> object:
    import xgboost

    if not path.is_file():
        raise ModelError(f"{path}: no such model file")
    try:
        return xgboost.Booster(model_file=str(path))
    except xgboost.core.XGBoostError as error:
        lines = str(error).strip().splitlines() or ["unknown error"]
        # Drop XGBoost's "[time] source/file.h:88: " prefix; users need the reason, not our build.
        reason = re.sub(r"^\[[^\]]*\]\s*\S+:\d+:\s*", "", lines[0])
        raise ModelError(f"{path}: XGBoost cannot load this model ({reason})") from None


def _from_document(document: object, booster: object, rounds: int | None, where: str) -> Ensemble:
    try:
        learner = document["learner"]
        objective = learner["objective"]["name"]
        params = learner["learner_model_param"]
        gbm = learner["gradient_booster"]
    except (KeyError, TypeError):
        raise ModelError(f"{where}: not an XGBoost model document") from None

    if gbm["name"] != "gbtree":
        raise ModelError(
            f"{where}: booster {gbm['name']!r} is not supported; only 'gbtree' (not 'dart' or "
            "'gblinear') describes a fixed sum of trees"
        )
    if objective not in _LINK:
        raise ModelError(
            f"{where}: objective {objective!r} is not supported; supported objectives are "
            + ", ".join(SUPPORTED_OBJECTIVES)
        )
    if int(params.get("num_target", 1)) > 1:
        raise ModelError(f"{where}: multi-target models are not supported")

    n_features = int(params["num_feature"])
    names = [str(name) for name in learner.get("feature_names", [])]
    feature_names = tuple(names) if names else tuple(f"f{i}" for i in range(n_features))
    n_classes = int(params.get("num_class", 0))
    n_outputs = max(n_classes, 1)

    model = gbm["model"]
    trees = model["trees"]
    tree_info = np.asarray(model["tree_info"], dtype=np.int64)
    if rounds is not None:
        indptr = np.asarray(model["iteration_indptr"], dtype=np.int64)
        n_kept = int(indptr[min(rounds, len(indptr) - 1)])
        trees, tree_info = trees[:n_kept], tree_info[:n_kept]
    if not trees:
        raise ModelError(f"{where}: the model has no trees")

    arrays = [_tree_arrays(tree, t, where) for t, tree in enumerate(trees)]
    sizes = [len(a[0]) for a in arrays]
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    shift = np.repeat(offsets[:-1], sizes)
    feature = np.concatenate([a[0] for a in arrays])
    threshold = np.concatenate([a[1] for a in arrays])
    left = np.concatenate([a[2] for a in arrays])
    right = np.concatenate([a[3] for a in arrays])
    leaf = left < 0
    left = np.where(leaf, -1, left + shift)
    right = np.where(leaf, -1, right + shift)
    value = np.zeros((len(feature), n_outputs))
    target = np.repeat(tree_info, sizes)
    value[leaf, target[leaf]] = threshold[leaf]
    feature = np.where(leaf, -1, feature)
    threshold = np.where(leaf, np.float32(0), threshold)

    base = _base_margin(params["base_score"], objective, n_outputs, where)
    library = _library_model(booster, len(feature_names), n_outputs, rounds)
    return Ensemble(
        feature=feature,
        threshold=threshold,
        left=left,
        right=right,
        value=value,
        tree_offsets=offsets,
        base_score=base,
        feature_names=feature_names,
        task=_TASK.get(objective, "regression"),
        class_threshold=0.0,
        source=f"xgboost {objective} ({where})",
        library=library,
    )


def _tree_arrays(tree: dict, t: int, where: str) -> tuple[np.ndarray, ...]:
    if int(tree["tree_param"].get("size_leaf_vector", 1)) > 1:
        raise ModelError(f"{where}: tree {t} has vector leaves (multi_output_tree)")
    split_type = np.asarray(tree.get("split_type", []))
    if np.any(split_type != 0):
        node = int(np.nonzero(split_type != 0)[0][0])
        raise ModelError(f"{where}: tree {t}, node {node} is a categorical split; not supported")
    return (
        np.asarray(tree["split_indices"], dtype=np.int32),
        np.asarray(tree["split_conditions"], dtype=np.float32),
        np.asarray(tree["left_children"], dtype=np.int64),
        np.asarray(tree["right_children"], dtype=np.int64),
    )


def _base_margin(text: object, objective: str, n_outputs: int, where: str) -> np.ndarray:
    """Parse XGBoost's base score (``"5E-1"`` or ``"[1E-1,2E-1]"``) and map it to margin space."""
    values = [float(np.float32(v)) for v in str(text).strip("[]").split(",") if v.strip()]
    if len(values) == 1:
        values = values * n_outputs
    if len(values) != n_outputs:
        raise ModelError(f"{where}: base score {text!r} does not have {n_outputs} entries")
    link = _LINK[objective]
    if link == "logit":
        return np.array([logit(v) for v in values])
    if link == "log":
        if min(values) <= 0:
            raise ModelError(f"{where}: base score {text!r} must be positive for {objective}")
        return np.log(values)
    return np.array(values)


def _library_model(booster: object, n_features: int, n_outputs: int, rounds: int | None):
    import xgboost

    iteration_range = (0, rounds or 0)

    def raw_margin(X: np.ndarray) -> np.ndarray:
        data = xgboost.DMatrix(X, feature_names=booster.feature_names)
        margin = booster.predict(data, output_margin=True, iteration_range=iteration_range)
        return margin.reshape(len(X), n_outputs) if n_outputs > 1 else margin.reshape(len(X))

    return LibraryModel("xgboost", raw_margin, np.arange(n_features))
