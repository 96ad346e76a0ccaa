"""Import LightGBM models (``Booster``, ``LGBMModel``, or a text model file).

Supported: numerical splits (``x <= t``, converted like scikit-learn's), every objective (the raw
score is what we model), multiclass with one tree per class per iteration, and random-forest mode
(``average_output``). Not supported, each refused with the tree and node named: categorical splits,
linear trees (leaves with coefficients), and ``zero_as_missing`` splits that send zero the
other way than its value would.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from veritas_dsl.model.ensemble import Ensemble, LibraryModel, ModelError, Task, le_threshold_as_lt

# LightGBM's kZeroThreshold (1e-35 as a float32). Its predictor reads every input with
# |x| <= kZeroThreshold as exactly 0, and "Zero" missing_type splits send that region by default.
_ZERO_THRESHOLD = float(np.float32(1e-35))


def from_lightgbm(model: object) -> Ensemble:
    """Import a LightGBM model.

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

    if isinstance(model, (str, os.PathLike)):
        path = Path(model)
        if not path.is_file():
            raise ModelError(f"{path}: no such model file")
        try:
            booster = lightgbm.Booster(model_file=str(path))
        except lightgbm.basic.LightGBMError as error:
            raise ModelError(f"{path}: LightGBM cannot load this model ({error})") from None
        where = str(path)
    elif isinstance(model, lightgbm.LGBMModel):
        booster = model.booster_
        where = type(model).__name__
    elif isinstance(model, lightgbm.Booster):
        booster = model
        where = "Booster"
    else:
        raise ModelError(f"expected a LightGBM Booster, LGBMModel or model path, got {type(model)}")
    return _from_dump(booster.dump_model(), booster, where)


def _from_dump(dump: dict, booster: object, where: str) -> Ensemble:
    objective = str(dump.get("objective", "regression")).split()[0]
    per_iteration = int(dump.get("num_tree_per_iteration", 1))
    feature_names = tuple(str(n) for n in dump["feature_names"])
    infos = dump["tree_info"]
    if not infos:
        raise ModelError(f"{where}: the model has no trees")

    n_outputs = per_iteration
    scale = 1.0
    if dump.get("average_output"):
        # Random-forest mode predicts the mean over iterations. LightGBM's raw_score is the plain
        # sum even then, so the library margin we compare against is scaled the same way.
        scale = per_iteration / len(infos)

    columns: dict[str, list] = {"feature": [], "threshold": [], "left": [], "right": [], "leaf": []}
    sizes = []
    for t, info in enumerate(infos):
        before = len(columns["feature"])
        _flatten(info["tree_structure"], columns, t, where)
        sizes.append(len(columns["feature"]) - before)

    offsets = np.concatenate([[0], np.cumsum(sizes)])
    leaf_value = np.asarray(columns["leaf"], dtype=np.float64)
    leaf = np.isfinite(leaf_value)
    value = np.zeros((len(leaf_value), n_outputs))
    output = np.repeat(np.arange(len(infos)) % per_iteration, sizes)
    value[leaf, output[leaf]] = leaf_value[leaf] * scale
    threshold = _zeroed_input_thresholds(np.asarray(columns["threshold"], dtype=np.float64))

    task: Task = "regression"
    if objective == "binary":
        task = "binary"
    elif objective in ("multiclass", "multiclassova"):
        task = "multiclass"

    def raw_margin(X: np.ndarray) -> np.ndarray:
        return booster.predict(X, raw_score=True) * scale

    return Ensemble(
        feature=columns["feature"],
        threshold=np.where(leaf, np.float32(0), le_threshold_as_lt(np.where(leaf, 0, threshold))),
        left=columns["left"],
        right=columns["right"],
        value=value,
        tree_offsets=offsets,
        base_score=np.zeros(n_outputs),
        feature_names=feature_names,
        task=task,
        class_threshold=0.0,
        source=f"lightgbm {objective} ({where})",
        library=LibraryModel("lightgbm", raw_margin, np.arange(len(feature_names))),
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


def _flatten(root: dict, columns: dict[str, list], t: int, where: str) -> None:
    """Append one tree in preorder, so that children come after their parent."""
    stack: list[tuple[dict, int, str]] = [(root, -1, "")]
    while stack:
        node, parent, side = stack.pop()
        index = len(columns["feature"])
        if parent >= 0:
            columns[side][parent] = index
        if "leaf_value" in node:
            if node.get("leaf_coeff"):
                leaf = node.get("leaf_index", index)
                raise ModelError(
                    f"{where}: tree {t}, leaf {leaf} is linear (linear_tree); not supported"
                )
            for key, item in (("feature", -1), ("threshold", np.nan), ("left", -1), ("right", -1)):
                columns[key].append(item)
            # A linear tree's leaf without coefficients predicts its constant term.
            columns["leaf"].append(float(node.get("leaf_const", node["leaf_value"])))
            continue
        split = node.get("split_index", index)
        if node.get("decision_type") != "<=":
            raise ModelError(f"{where}: tree {t}, split {split} is categorical; not supported")
        threshold = float(node["threshold"])
        if node.get("missing_type") == "Zero":
            zero_goes_left = bool(node.get("default_left"))
            if zero_goes_left != (threshold >= _ZERO_THRESHOLD) or abs(threshold) < _ZERO_THRESHOLD:
                raise ModelError(
                    f"{where}: tree {t}, split {split} sends zero (as missing) the other way than "
                    "its value would go; zero_as_missing splits like this are not supported"
                )
        columns["feature"].append(int(node["split_feature"]))
        columns["threshold"].append(threshold)
        columns["left"].append(-1)
        columns["right"].append(-1)
        columns["leaf"].append(np.nan)
        # Right is pushed first so that the left subtree is laid out first.
        stack.append((node["right_child"], index, "right"))
        stack.append((node["left_child"], index, "left"))
