"""Import LightGBM models (``Booster``, ``LGBMModel``, or a text model file).

Supported: numerical splits (``x <= t``, converted like scikit-learn's), every objective (the raw
score is what we model), multiclass with one tree per class per iteration, and random-forest mode
(``average_output``). Not supported, each refused with the tree and node named: categorical splits,
linear trees (leaves with coefficients), and ``zero_as_missing`` splits that send zero the
other way than its value would.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from veritas_dsl.model import lightgbm_text
from veritas_dsl.model.errors import ModelError
from veritas_dsl.model.forest import parent_first_order, reorder
from veritas_dsl.model.library import LibraryModel, Task, le_threshold_as_lt, leaf_table
from veritas_dsl.model.limits import model_bytes

if TYPE_CHECKING:
    from veritas_dsl.model.ensemble import Ensemble

# LightGBM's kZeroThreshold (1e-35 as a float32). Its predictor reads every input with
# |x| <= kZeroThreshold as exactly 0, and "Zero" missing_type splits send that region by default.
_ZERO_THRESHOLD = float(np.float32(1e-35))


def from_lightgbm(cls: type[Ensemble], model: object) -> Ensemble:
    """Import a LightGBM model as a ``cls``.

    Parameters
    ----------
    model : lightgbm.Booster, lightgbm.LGBMModel, str or os.PathLike
        A booster, a fitted scikit-learn wrapper, or the path of a text model file. As LightGBM's
        own ``predict`` does, the best iteration is used when the model records one.
    """
    try:
        import lightgbm
    except ImportError:
        raise ModelError(
            "LightGBM is not installed (pip install 'veritas-dsl[lightgbm]')"
        ) from None

    booster = None
    if isinstance(model, (str, os.PathLike)):
        path = Path(model)
        where = str(path)
        try:
            text = model_bytes(path, "lightgbm").decode("utf-8")
        except UnicodeDecodeError as error:
            raise ModelError(
                f"{path}: not a LightGBM text model (byte {error.start} is not UTF-8 text)"
            ) from None
    elif isinstance(model, lightgbm.LGBMModel):
        booster = model.booster_
        where = type(model).__name__
    elif isinstance(model, lightgbm.Booster):
        booster = model
        where = "Booster"
    else:
        raise ModelError(f"expected a LightGBM Booster, LGBMModel or model path, got {type(model)}")
    if booster is not None:
        text = booster.model_to_string()
    parsed = lightgbm_text.parse(text, where)
    ensemble = _ensemble(cls, parsed, where)
    if booster is None:
        # LightGBM reads only the checked model, rewritten: it crashes on corrupt text.
        try:
            booster = lightgbm.Booster(model_str=lightgbm_text.canonical_text(parsed))
        except Exception as error:  # LightGBMError, and worse, on odd input
            raise ModelError(f"{where}: LightGBM cannot load this model ({error})") from None
    scale = _scale(parsed)

    def raw_margin(X: np.ndarray) -> np.ndarray:
        return booster.predict(X, raw_score=True) * scale

    names = ensemble.feature_names
    library = LibraryModel("lightgbm", raw_margin, np.arange(len(names)))
    return replace(ensemble, library=library)


def _scale(model: lightgbm_text.Model) -> float:
    # Random-forest mode predicts the mean over iterations. LightGBM's raw_score is the plain
    # sum even then, so the library margin we compare against is scaled the same way.
    return model.per_iteration / len(model.trees) if model.average_output else 1.0


def _ensemble(cls: type[Ensemble], model: lightgbm_text.Model, where: str) -> Ensemble:
    """The trees laid out as ours: each tree's splits in LightGBM's order, then its leaves."""
    features, thresholds, lefts, rights, leaf_values, sizes = [], [], [], [], [], []
    offset = 0
    for t, tree in enumerate(model.trees):
        _check_zero_as_missing(tree, f"{where}: tree {t}")
        n_splits, n_leaves = len(tree.threshold), len(tree.leaf_value)
        no_children = np.full(n_leaves, -1)
        for children, out in ((tree.left_child, lefts), (tree.right_child, rights)):
            out += [offset + np.where(children >= 0, children, n_splits + ~children), no_children]
        features += [tree.split_feature, no_children]
        thresholds += [tree.threshold, np.zeros(n_leaves)]
        leaf_values += [np.full(n_splits, np.nan), tree.leaf_value]
        sizes.append(n_splits + n_leaves)
        offset += n_splits + n_leaves
    left, right = np.concatenate(lefts), np.concatenate(rights)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    try:
        order = parent_first_order(left, right, offsets)
    except ModelError as error:
        raise ModelError(f"{where}: {error}") from None
    left, right, offsets = reorder(order, left, right, offsets)
    feature = np.concatenate(features)[order]
    leaf_value = np.concatenate(leaf_values)[order]
    threshold = _zeroed_input_thresholds(np.concatenate(thresholds)[order])

    leaf = np.isfinite(leaf_value)
    value = leaf_table(len(leaf_value), model.per_iteration, where)
    output = np.repeat(np.arange(len(model.trees)) % model.per_iteration, np.diff(offsets))
    value[leaf, output[leaf]] = leaf_value[leaf] * _scale(model)

    task: Task = "regression"
    if model.objective == "binary":
        task = "binary"
    elif model.objective in ("multiclass", "multiclassova"):
        task = "multiclass"
    try:
        return cls(
            feature=feature,
            threshold=np.where(
                leaf, np.float32(0), le_threshold_as_lt(np.where(leaf, 0, threshold))
            ),
            left=left,
            right=right,
            value=value,
            tree_offsets=offsets,
            base_score=np.zeros(model.per_iteration),
            feature_names=model.feature_names,
            task=task,
            class_threshold=0.0,
            probability="logistic" if model.logistic else "",
            source=f"lightgbm {model.objective} ({where})",
        )
    except ModelError as error:
        raise ModelError(f"{where}: {error}") from None


def _check_zero_as_missing(tree: lightgbm_text.Tree, where: str) -> None:
    """Refuse a split that reads zero as missing and sends it the other way than its value.

    LightGBM reads ``|x| <= kZeroThreshold`` as 0; a "Zero" missing-type split sends that region
    the default way, which our ``x < t`` rule reproduces only when it is the way 0 goes anyway.
    """
    missing_zero = (tree.decision_type >> 2) & 3 == lightgbm_text.MISSING_ZERO
    zero_goes_left = (tree.decision_type & 2) != 0
    t = tree.threshold
    moves = missing_zero & (
        (zero_goes_left != (t >= _ZERO_THRESHOLD)) | (np.abs(t) < _ZERO_THRESHOLD)
    )
    if np.any(moves):
        raise ModelError(
            f"{where}, split {int(np.nonzero(moves)[0][0])} sends zero (as missing) the other way "
            "than its value would go; zero_as_missing splits like this are not supported"
        )


def _zeroed_input_thresholds(threshold: np.ndarray) -> np.ndarray:
    """Thresholds ``t'`` with ``x <= t'`` exactly when LightGBM, reading ``x`` as 0 for
    ``|x| <= kZeroThreshold``, sends ``x`` left on ``x <= t``.

    Outside ``[-kZeroThreshold, kZeroThreshold)`` nothing changes. For ``0 <= t < kZeroThreshold``
    the whole zero region goes left, so ``t' = kZeroThreshold``; for ``-kZeroThreshold <= t < 0``
    it goes right, so only ``x < -kZeroThreshold`` goes left.
    """
    t = threshold.copy()
    zero = _ZERO_THRESHOLD
    t[(t >= 0) & (t < zero)] = zero
    t[(t >= -zero) & (t < 0)] = float(np.nextafter(np.float32(-zero), np.float32(-np.inf)))
    return t
