"""Import CatBoost models (``CatBoostClassifier``/``CatBoostRegressor``/``CatBoost`` objects, or
files written by ``save_model(path, format="json")``).

CatBoost reads each float feature as a float32 and binarises it on float32 borders: a split is
``x > border``. An oblivious tree of depth ``d`` applies one split per level, and the leaf is the
bit pattern of the ``d`` answers, the first split giving the lowest bit. We lay such a tree out as
a full binary tree (node ``n`` has children ``2n + 1`` and ``2n + 2``) whose left branches are
``x <= border``, i.e. ``x < s`` with ``s`` the float32 right after the border. Non-symmetric
trees (``grow_policy`` ``Depthwise``/``Lossguide``) are read from their nested form. Leaf values
are multiplied by the model's scale and the bias is the base score, so ``eval`` is
``predict(prediction_type="RawFormulaVal")``; multiclass leaves hold one value per class.

Inputs are never NaN here, so the ``nan_value_treatment`` of a feature never matters. Refused with
the feature or the tree and level named: categorical features and the CTRs built on them, text
and embedding features, and any split that is not on a float feature.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from veritas_dsl.model.errors import ModelError
from veritas_dsl.model.library import MAX_FEATURES, LibraryModel, Task, le_threshold_as_lt
from veritas_dsl.model.limits import model_bytes

if TYPE_CHECKING:
    from veritas_dsl.model.ensemble import Ensemble

_BINARY = ("Logloss", "CrossEntropy")
_MULTICLASS = ("MultiClass", "MultiClassOneVsAll")
_UNSUPPORTED_FEATURES = {
    "categorical_features": "categorical",
    "text_features": "text",
    "embedding_features": "embedding",
}


def from_catboost(cls: type[Ensemble], model: object) -> Ensemble:
    """Import a CatBoost model, or the path of its JSON file, as a ``cls``."""
    try:
        import catboost
    except ImportError:
        raise ModelError(
            "CatBoost is not installed (pip install 'veritas-dsl[catboost]')"
        ) from None

    if isinstance(model, (str, os.PathLike)):
        path = Path(model)
        where = str(path)
        document = _read(path)
        ensemble = _ensemble(cls, document, where)
        library = catboost.CatBoost()
        try:  # only a document we have checked reaches CatBoost
            library.load_model(str(path), format="json")
        except Exception as error:  # CatBoostError, and worse, on odd input
            raise ModelError(f"{where}: CatBoost cannot load this model ({error})") from None
    elif isinstance(model, catboost.CatBoost):
        where = type(model).__name__
        if not model.is_fitted():
            raise ModelError(f"{where} is not fitted")
        _check_feature_kinds(model, where)
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "model.json"
            try:
                model.save_model(str(path), format="json")
            except Exception as error:  # CatBoostError: a model JSON cannot express
                raise ModelError(f"{where}: CatBoost cannot export it as JSON ({error})") from None
            document = _read(path)
        ensemble = _ensemble(cls, document, where)
        library = model
    else:
        raise ModelError(
            f"expected a CatBoost model or the path of its JSON file, got {type(model)}"
        )

    def raw_margin(X: np.ndarray) -> np.ndarray:
        return np.asarray(library.predict(X, prediction_type="RawFormulaVal"), dtype=np.float64)

    names = ensemble.feature_names
    return replace(ensemble, library=LibraryModel("catboost", raw_margin, np.arange(len(names))))


def _check_feature_kinds(model, where: str) -> None:
    """Refuse categorical, text and embedding features of a model object by name (the JSON
    export fails on the last two, saying less)."""
    names = model.feature_names_ or []
    for kind, indices in (
        ("categorical", model.get_cat_feature_indices()),
        ("text", model.get_text_feature_indices()),
        ("embedding", model.get_embedding_feature_indices()),
    ):
        if len(indices):
            i = int(indices[0])
            name = names[i] if i < len(names) else str(i)
            raise ModelError(
                f"{where}: feature `{name}` (input column {i}) is a {kind} feature; only float "
                "features are supported"
            )


def _read(path: Path) -> dict:
    try:
        document = json.loads(model_bytes(path, "catboost").decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise ModelError(f"{path}: not a CatBoost JSON model ({error})") from None
    if not isinstance(document, dict) or "features_info" not in document:
        raise ModelError(f"{path}: not a CatBoost JSON model (it has no `features_info`)")
    return document


def _ensemble(cls: type[Ensemble], document: dict, where: str) -> Ensemble:
    try:
        return _build(cls, document, where)
    except ModelError as error:
        message = str(error)
        raise ModelError(message if message.startswith(where) else f"{where}: {message}") from None
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, OverflowError) as error:
        raise ModelError(f"{where}: malformed CatBoost JSON model ({error!r})") from None


def _build(cls: type[Ensemble], document: dict, where: str) -> Ensemble:
    info = document["features_info"]
    for key, kind in _UNSUPPORTED_FEATURES.items():
        if info.get(key):
            first = info[key][0]
            raise ModelError(
                f"feature `{first.get('feature_id') or first.get('flat_feature_index')}` (input "
                f"column {first.get('flat_feature_index')}) is a {kind} feature; only float "
                f"features are supported ({key} in features_info)"
            )
    if document.get("ctr_data") or info.get("ctrs"):
        raise ModelError("the model has CTRs (ctr_data); categorical features are not supported")
    floats = info.get("float_features", [])
    column = _float_features(floats)
    n_features = max((flat for flat, _, _ in column.values()), default=-1) + 1
    if not 0 < n_features <= MAX_FEATURES:
        raise ModelError(f"{n_features} input features, outside 1..{MAX_FEATURES:,}")
    names = [f"f{i}" for i in range(n_features)]
    for f in floats:
        if f.get("feature_id"):
            names[int(f["flat_feature_index"])] = str(f["feature_id"])

    scale, bias = document.get("scale_and_bias", [1.0, [0.0]])
    bias = np.atleast_1d(np.asarray(bias, dtype=np.float64))
    n_outputs = len(bias)
    if "oblivious_trees" in document:
        trees = [
            _oblivious(tree, column, n_outputs, f"tree {t}")
            for t, tree in enumerate(document["oblivious_trees"])
        ]
    elif "trees" in document:
        trees = [
            _nested(tree, column, n_outputs, f"tree {t}")
            for t, tree in enumerate(document["trees"])
        ]
    else:
        raise ModelError("the model has neither `oblivious_trees` nor `trees`")
    if not trees:
        raise ModelError("the model has no trees")

    sizes = [len(feature) for feature, *_ in trees]
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    loss = str(document["model_info"]["params"]["loss_function"]["type"])
    task: Task = "regression"
    if loss in _BINARY and n_outputs == 1:
        task = "binary"
    elif loss in _MULTICLASS:
        task = "multiclass"
    return cls(
        feature=np.concatenate([t[0] for t in trees]),
        threshold=np.concatenate([t[1] for t in trees]),
        left=np.concatenate([t[2] + offsets[i] * (t[2] >= 0) for i, t in enumerate(trees)]),
        right=np.concatenate([t[3] + offsets[i] * (t[3] >= 0) for i, t in enumerate(trees)]),
        value=np.concatenate([t[4] for t in trees]) * float(scale),
        tree_offsets=offsets,
        base_score=bias,
        feature_names=tuple(names),
        task=task,
        class_threshold=0.0,  # RawFormulaVal picks class 1 above 0
        probability="logistic" if task == "binary" else "",
        source=f"catboost {loss} ({where})",
    )


def _float_features(floats: list) -> dict[int, tuple[int, np.ndarray, int]]:
    """Float feature index -> (input column, its float32 borders, the split index of its first
    border). CatBoost trusts these to agree with each other and with the splits (a model whose
    two features read one column crashed its predict), so they must: features numbered 0, 1, ...
    in order, on rising columns, with rising finite borders."""
    out = {}
    offset, last = 0, -1
    for i, f in enumerate(floats):
        flat = int(f["flat_feature_index"])
        if int(f["feature_index"]) != i or flat <= last:
            raise ModelError(
                f"float feature {i} has feature_index {f['feature_index']} and flat_feature_index "
                f"{flat}; they must count up (0, 1, ... and rising columns)"
            )
        with np.errstate(over="ignore"):
            borders = np.asarray([float(b) for b in f.get("borders", [])]).astype(np.float32)
        if not np.all(np.isfinite(borders)) or np.any(np.diff(borders) <= 0):
            raise ModelError(f"float feature {i} has borders that are not finite and rising")
        out[i] = (flat, borders, offset)
        offset += len(borders)
        last = flat
    return out


def _split(split: dict, column: dict, where: str) -> tuple[int, np.float32]:
    """The input column and the float32 ``s`` of a split ``x > border`` (``x < s`` goes left)."""
    kind = split.get("split_type")
    if kind != "FloatFeature":
        raise ModelError(
            f"{where} splits on a {kind} (a categorical feature or a CTR); only float features "
            "are supported"
        )
    feature = int(split["float_feature_index"])
    if feature not in column:
        raise ModelError(f"{where} splits on float feature {feature}, which the model lacks")
    flat, borders, offset = column[feature]
    with np.errstate(over="ignore"):  # beyond float32 is inf, refused below
        border = np.float32(float(split["border"]))  # CatBoost reads borders as float32
    if not np.isfinite(border):
        raise ModelError(f"{where} has border {split['border']}")
    at = np.nonzero(borders == border)[0]
    if len(at) != 1 or int(split["split_index"]) != offset + int(at[0]):
        raise ModelError(
            f"{where}: border {split['border']} and split_index {split['split_index']} do not "
            f"match the borders of float feature {feature}"
        )
    return flat, le_threshold_as_lt(np.array([border], dtype=np.float64))[0]


def _oblivious(tree: dict, column: dict, n_outputs: int, where: str):
    splits = tree["splits"]
    depth = len(splits)
    if depth > 16:
        raise ModelError(f"{where} has depth {depth}; at most 16 is supported")
    leaves = np.asarray(tree["leaf_values"], dtype=np.float64)
    if leaves.shape != ((n_outputs << depth),):
        raise ModelError(
            f"{where} has {leaves.size} leaf values, not {n_outputs << depth} "
            f"({1 << depth} leaves of {n_outputs} output(s))"
        )
    per_level = [_split(s, column, f"{where}, level {j}") for j, s in enumerate(splits)]
    n_inner = (1 << depth) - 1
    level = np.floor(np.log2(np.arange(n_inner) + 1)).astype(np.int64)
    feature = np.concatenate([[per_level[j][0] for j in level], np.full(n_inner + 1, -1)])
    threshold = np.concatenate(
        [np.array([per_level[j][1] for j in level], dtype=np.float32), np.zeros(n_inner + 1)]
    )
    inner = np.arange(n_inner)
    left = np.concatenate([2 * inner + 1, np.full(n_inner + 1, -1)])
    right = np.concatenate([2 * inner + 2, np.full(n_inner + 1, -1)])
    # The leaf at position p of the last level took the path bits of p, first split highest;
    # CatBoost's leaf index has the first split's bit lowest: reverse the bits.
    position = np.arange(1 << depth)
    index = np.zeros_like(position)
    for j in range(depth):
        index |= ((position >> (depth - 1 - j)) & 1) << j
    value = np.zeros((n_inner + 1 + n_inner, n_outputs))
    value[n_inner:] = leaves.reshape(1 << depth, n_outputs)[index]
    return feature, threshold, left, right, value


def _nested(tree: dict, column: dict, n_outputs: int, where: str):
    """A non-symmetric tree (``{"split", "left", "right"}`` down to ``{"value"}``), parent first."""
    feature, threshold, left, right, values = [], [], [], [], []
    stack = [(tree, -1, 0)]
    while stack:
        node, parent, side = stack.pop()
        n = len(feature)
        if parent >= 0:
            (left if side == 0 else right)[parent] = n
        left.append(-1)
        right.append(-1)
        if "split" in node:
            f, s = _split(node["split"], column, f"{where}, node {n}")
            feature.append(f)
            threshold.append(s)
            values.append(np.zeros(n_outputs))
            stack.append((node["right"], n, 1))
            stack.append((node["left"], n, 0))
        else:
            value = np.atleast_1d(np.asarray(node["value"], dtype=np.float64))
            if value.shape != (n_outputs,):
                raise ModelError(f"{where}, node {n} has {value.size} values, not {n_outputs}")
            feature.append(-1)
            threshold.append(0.0)
            values.append(value)
        if len(feature) > 1 << 20:
            raise ModelError(f"{where} has more than {1 << 20} nodes")
    return (
        np.array(feature),
        np.array(threshold, dtype=np.float32),
        np.array(left),
        np.array(right),
        np.array(values),
    )
