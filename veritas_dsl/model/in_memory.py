"""Models given as Python objects (``veritas_dsl.parse(text, models={"clf": model})``) instead
of files: which format an object is, importing it as a file of that format would be, and what it
adds to a spec's digest.

An object's format is told from the modules of its class and its bases, so that telling it
imports no library: ``xgboost`` (a ``Booster`` or an ``XGBModel``), ``lightgbm`` (a ``Booster``
or an ``LGBMModel``), ``sklearn`` (a fitted tree, forest or gradient-boosting estimator),
``catboost``, ``onnx`` (a ``ModelProto``), ``dare`` (a fitted ``DareForest``) and ``ensemble``
(an :class:`Ensemble`, which also agrees with the format of the library it was imported from).
A spec reads the model as it is when the spec is checked: later changes to the object change
nothing in the spec. Nothing is written to disk, except by CatBoost, whose only export is a file
(a temporary one).
"""

from __future__ import annotations

import copy
import hashlib
import json
from typing import TYPE_CHECKING

import numpy as np

from veritas_dsl.model.ensemble import Ensemble
from veritas_dsl.model.errors import ModelError

if TYPE_CHECKING:
    from veritas_dsl.unlearning.dare import DareForest

#: The format of an object, by the top-level package of its class (or of a base class).
_PACKAGES = {
    "xgboost": "xgboost",
    "lightgbm": "lightgbm",
    "sklearn": "sklearn",
    "catboost": "catboost",
    "onnx": "onnx",
}
#: The format of an Ensemble's library model (``LibraryModel.name``, or its first word); an
#: Ensemble of a DaRE forest is no forest (nothing can be derived from it): `ensemble` only.
_LIBRARIES = {
    "xgboost": "xgboost",
    "lightgbm": "lightgbm",
    "sklearn": "sklearn",
    "catboost": "catboost",
    "onnxruntime": "onnx",
}
#: Formats whose importer evaluates witnesses on the object it is given: they get a copy, so that
#: refitting the caller's model later does not change the spec's (XGBoost's copies itself).
_COPIED = ("lightgbm", "sklearn", "catboost")
#: What each format takes in memory, for messages.
TAKES = {
    "xgboost": "an XGBoost Booster or XGBModel",
    "lightgbm": "a LightGBM Booster or LGBMModel",
    "sklearn": "a fitted scikit-learn tree ensemble",
    "catboost": "a fitted CatBoost model",
    "onnx": "an ONNX ModelProto",
    "dare": "a fitted DareForest",
    "ensemble": "an Ensemble",
}


def formats_of(model: object) -> tuple[str, ...]:
    """The formats ``model`` may be declared as (none: it is no model we read)."""
    if isinstance(model, Ensemble):
        library = model.library.name.split()[0] if model.library is not None else ""
        return ("ensemble",) + ((_LIBRARIES[library],) if library in _LIBRARIES else ())
    for cls in type(model).__mro__:
        package = cls.__module__.partition(".")[0]
        if package == "veritas_dsl" and cls.__name__ == "DareForest":
            return ("dare",)
        if package in _PACKAGES:
            return (_PACKAGES[package],)
    return ()


def imported(model: object, format: str) -> Ensemble | DareForest:
    """``model`` as the declaration ``model m = FORMAT`` reads it: an :class:`Ensemble`, or for
    ``dare`` a copy of the forest (the caller's later changes to theirs change nothing here).
    A :class:`ModelError` says why not: the object is of another format, or its importer
    refuses it (an unsupported objective, a multi-output estimator, ...)."""
    formats = formats_of(model)
    if format not in formats:
        given = f"{type(model).__module__}.{type(model).__qualname__}"
        message = f"`{format}` takes {TAKES.get(format, 'a file only')}, not a {given}"
        if formats:
            message += f" (declare it `{formats[0]}`)"
        raise ModelError(message)
    if isinstance(model, Ensemble):
        return model
    if format == "dare":
        return model.copy()  # raises ModelError when not fitted
    if format in _COPIED:
        model = copy.deepcopy(model)
    importer = {
        "xgboost": Ensemble.from_xgboost,
        "lightgbm": Ensemble.from_lightgbm,
        "sklearn": Ensemble.from_sklearn,
        "catboost": Ensemble.from_catboost,
        "onnx": Ensemble.from_onnx,
    }[format]
    return importer(model)


def digest(model: Ensemble | DareForest) -> bytes:
    """SHA-256 of what a spec reads of an imported model: an Ensemble's arrays, names, task and
    leaf fractions; for a forest, its Ensemble, its parameters and remaining training rows (what
    the models derived from it are made of)."""
    hashed = hashlib.sha256()
    ensemble = model if isinstance(model, Ensemble) else model.to_ensemble()
    fractions = ensemble.fractions
    arrays = [
        ensemble.feature,
        ensemble.threshold,
        ensemble.left,
        ensemble.right,
        ensemble.value,
        ensemble.tree_offsets,
        ensemble.base_score,
    ]
    if fractions is not None:
        arrays += [fractions.numerator, fractions.denominator]
    header = [list(ensemble.feature_names), ensemble.task, ensemble.class_threshold]
    if not isinstance(model, Ensemble):
        X, y = model.training_rows()
        arrays += [X, y, model.remaining()]
        header.append(repr(sorted(model.params().items())))
    hashed.update(json.dumps(header).encode())
    for array in arrays:
        array = np.ascontiguousarray(array)
        hashed.update(f"\0{array.dtype.str}{array.shape}\0".encode())
        hashed.update(array.tobytes())
    return hashed.digest()
